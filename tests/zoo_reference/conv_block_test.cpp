// The convolution block: gradients against finite differences, descent, determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "synapse/zoo_reference/conv_block.h"
#include "tests/zoo_reference/gradient_check.h"
#include "tests/zoo_reference/workload_test_util.h"

namespace hpusim::synapse::zoo_reference {
namespace {

using namespace test_support;

ConvBlockConfig tiny_config() {
  ConvBlockConfig cfg;
  cfg.batch = 2;
  cfg.height = 4;
  cfg.width = 6;
  cfg.in_channels = 3;
  cfg.out_channels = 5;
  return cfg;
}

std::vector<float> make_input(const ConvBlockConfig& cfg, uint32_t seed) {
  return random_input(cfg.batch * cfg.height * cfg.width * cfg.in_channels, -1.0f, 1.0f, seed);
}

TEST(ZooConvBlock, GradientsMatchFiniteDifferences) {
  const ConvBlockConfig cfg = tiny_config();
  const std::vector<float> x = make_input(cfg, 1);
  ConvBlock block(cfg);
  block.init(3);
  perturb(block.params, 0.3f, 4);   // gamma away from 1, beta away from 0
  block.compute_gradients(x.data());
  expect_gradients_match(
      block.params, block.grads,
      [&](const ConvBlockParams<double>& p) { return conv_block_forward(cfg, p, x.data()).loss; }, 8);
}

TEST(ZooConvBlock, OutputSizesAndPooling) {
  const ConvBlockConfig cfg = tiny_config();
  ConvBlock block(cfg);
  block.init(1);
  const std::vector<float> x = make_input(cfg, 2);
  const ConvBlockActivations<float> act = conv_block_forward(cfg, block.params, x.data());
  ASSERT_EQ(act.conv.size(), 2u * 4 * 6 * 5);   // padding 1 keeps height x width
  ASSERT_EQ(act.pooled.size(), 2u * 2 * 3 * 5);
  // Pooled element (n 1, i 1, j 2, k 4) is the mean of relu(normalized) over its 2x2 window.
  const auto relu_at = [&](size_t h, size_t w) {
    const float v = act.normalized[((1 * 4 + h) * 6 + w) * 5 + 4];
    return v > 0.0f ? v : 0.0f;
  };
  const float want = ((relu_at(2, 4) + relu_at(2, 5)) + (relu_at(3, 4) + relu_at(3, 5))) * 0.25f;
  EXPECT_EQ(act.pooled[((1 * 2 + 1) * 3 + 2) * 5 + 4], want);
  ConvBlockConfig odd = cfg;
  odd.width = 5;
  EXPECT_THROW(odd.conv(), std::invalid_argument);
}

TEST(ZooConvBlock, LossDecreasesOverFiveSteps) {
  const ConvBlockConfig cfg = tiny_config();
  const std::vector<float> x = make_input(cfg, 5);
  ConvBlock block(cfg);
  block.init(6);
  std::vector<float> losses;
  for (int i = 0; i < 6; ++i) losses.push_back(block.step(x.data()));
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << "step " << i;
}

TEST(ZooConvBlock, RunsAreBitIdentical) {
  ConvBlockConfig cfg = tiny_config();
  cfg.optimizer.momentum = 0.9f;
  const std::vector<float> x = make_input(cfg, 7);
  ConvBlock a(cfg), b(cfg), other(cfg);
  a.init(8);
  b.init(8);
  other.init(9);
  EXPECT_FALSE(same_bits(a.params, other.params));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.step(x.data()), b.step(x.data()));
  EXPECT_TRUE(same_bits(a.params, b.params));
  EXPECT_TRUE(same_bits(a.momentum_buffer, b.momentum_buffer));
}

// The default sizes (N 8, 16 x 16, C 16 -> K 32) run and move every parameter tensor.
TEST(ZooConvBlock, DefaultSizeStep) {
  ConvBlock block;
  block.init(1);
  const std::vector<float> x = make_input(block.config, 2);
  const ConvBlockParams<float> before = block.params;
  const float loss = block.step(x.data());
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(loss, 0.0f);
  const auto now = block.params.tensors();
  const auto then = before.tensors();
  for (size_t t = 0; t < now.size(); ++t) EXPECT_NE(*now[t], *then[t]) << ConvBlockParams<float>::kNames[t];
}

}  // namespace
}  // namespace hpusim::synapse::zoo_reference
