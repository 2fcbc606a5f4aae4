// The zoo's BERT encoder layer, run through the Synapse API on a simulated hl205 for 5 steps at a
// small size, against the C++ reference on the same parameters, loss weights and inputs. The
// graph computes every operation the reference does, in its order (GEMM k order, bias adds after
// the GEMMs, dim-0 lane sums, the scale as a multiplication, Adam's operations one by one), and
// the heads' permutes and reshapes only move values, so the stated tolerance is zero: the losses
// and every updated parameter are equal bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "tests/support/zoo_testing.h"
#include "sim/zoo/bert_layer_workload.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;
using ZooBertLayerOnDevice = testing::ZooDeviceTest;

constexpr uint32_t kSeed = 7;

ref::BertLayerConfig small_config() {
  ref::BertLayerConfig c;
  c.batch = 2;
  c.seq = 16;
  c.hidden = 64;
  c.heads = 4;
  c.ffn = 128;
  return c;
}

// `steps` steps of the workload and the reference from the same seed: the losses, then every
// updated parameter, bit for bit.
void expect_steps_match(synDeviceId device, const ref::BertLayerConfig& config, uint32_t steps) {
  auto workload = make_bert_layer_workload(config);
  ASSERT_TRUE(workload);
  EXPECT_EQ(workload->name(), "bert-layer");
  ref::BertLayer reference(config);
  testing::expect_steps_match_reference(
      device, *workload, reference, kSeed, steps, [&](uint32_t step) { return bert_layer_batch(kSeed, step, config); },
      [](ref::BertLayer& r, const std::vector<float>& x) { return r.step(x.data()); },
      ref::BertLayerParams<float>::kNames);
}

TEST_F(ZooBertLayerOnDevice, FiveStepsMatchTheReference) { expect_steps_match(device, small_config(), 5); }

// Sizes that are not multiples of the 64 f32 lanes (rows with padding lanes in softmax, layernorm
// and the reductions), an odd batch, head_dim 32 (attention scale 1/sqrt(32), not a power of 2)
// and Adam's weight decay.
TEST_F(ZooBertLayerOnDevice, OddSizesAndWeightDecayMatchTheReference) {
  ref::BertLayerConfig config;
  config.batch = 3;
  config.seq = 20;
  config.hidden = 96;
  config.heads = 3;
  config.ffn = 200;
  config.optimizer.weight_decay = 0.01f;
  expect_steps_match(device, config, 3);
}

TEST(ZooBertLayerWorkload, HiddenMustSplitIntoHeads) {
  ref::BertLayerConfig config = small_config();
  config.heads = 5;
  EXPECT_THROW(make_bert_layer_workload(config), std::invalid_argument);
}

TEST(ZooBertLayerWorkload, BatchesAreSeededAndInRange) {
  const ref::BertLayerConfig config = small_config();
  const std::vector<float> a = bert_layer_batch(kSeed, 0, config), b = bert_layer_batch(kSeed, 0, config);
  const std::vector<float> c = bert_layer_batch(kSeed, 1, config);
  ASSERT_EQ(a.size(), config.tokens() * config.hidden);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
}

}  // namespace
}  // namespace hpusim::zoo
