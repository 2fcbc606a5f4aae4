// The zoo's conv block, run through the Synapse API on a simulated hl205 for 5 steps, against the
// C++ reference on the same parameters and inputs. The reference follows the device's order of
// arithmetic operation by operation (the MME's conv and dedw k order, layernorm's lane sums, the
// pool's pair sums, the mean's lane order), so the stated tolerance is zero: losses and every
// updated parameter are equal bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "tests/support/zoo_testing.h"
#include "sim/zoo/conv_block_workload.h"
#include "synapse/zoo_reference/conv_block.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;
using ZooConvBlockOnDevice = testing::ZooDeviceTest;

constexpr uint32_t kSeed = 7;

void expect_five_steps_match(synDeviceId device, const ref::ConvBlockConfig& config) {
  auto workload = make_conv_block_workload(config);
  ASSERT_TRUE(workload);
  ref::ConvBlock reference(config);
  testing::expect_steps_match_reference(
      device, *workload, reference, kSeed, 5, [&](uint32_t step) { return conv_block_batch(kSeed, step, config); },
      [](ref::ConvBlock& r, const std::vector<float>& x) { return r.step(x.data()); },
      ref::ConvBlockParams<float>::kNames);
}

TEST_F(ZooConvBlockOnDevice, FiveStepsMatchTheReference) { expect_five_steps_match(device, {}); }

// Momentum and weight decay exercise the SGD buffer across steps; other sizes change the views.
TEST_F(ZooConvBlockOnDevice, FiveStepsWithMomentumMatchTheReference) {
  ref::ConvBlockConfig config;
  config.batch = 2;
  config.height = 6;
  config.width = 10;
  config.in_channels = 3;
  config.out_channels = 70;
  config.optimizer.momentum = 0.9f;
  config.optimizer.weight_decay = 0.01f;
  expect_five_steps_match(device, config);
}

TEST(ZooConvBlockWorkload, RejectsWhatOneGraphCannotMatch) {
  ref::ConvBlockConfig odd;
  odd.width = 15;
  EXPECT_THROW(make_conv_block_workload(odd), std::invalid_argument);
  ref::ConvBlockConfig damped;
  damped.optimizer.momentum = 0.9f;
  damped.optimizer.dampening = 0.5f;
  EXPECT_THROW(make_conv_block_workload(damped), std::invalid_argument);
}

TEST(ZooConvBlockWorkload, BatchesAreSeededAndInRange) {
  const ref::ConvBlockConfig config;
  const std::vector<float> a = conv_block_batch(kSeed, 0, config);
  ASSERT_EQ(a.size(), config.batch * config.height * config.width * config.in_channels);
  EXPECT_EQ(a, conv_block_batch(kSeed, 0, config));
  EXPECT_NE(a, conv_block_batch(kSeed, 1, config));
  for (float v : a) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
  }
}

}  // namespace
}  // namespace hpusim::zoo
