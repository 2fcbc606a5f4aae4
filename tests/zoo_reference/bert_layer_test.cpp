// The BERT layer: gradients against finite differences, descent, determinism, attention shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "synapse/zoo_reference/bert_layer.h"
#include "tests/zoo_reference/gradient_check.h"
#include "tests/zoo_reference/workload_test_util.h"

namespace hpusim::synapse::zoo_reference {
namespace {

using namespace test_support;

BertLayerConfig tiny_config() {
  BertLayerConfig cfg;
  cfg.batch = 2;
  cfg.seq = 5;
  cfg.hidden = 16;
  cfg.heads = 4;
  cfg.ffn = 32;
  return cfg;
}

BertLayerConfig small_config() {
  BertLayerConfig cfg;
  cfg.batch = 2;
  cfg.seq = 16;
  cfg.hidden = 64;
  cfg.heads = 4;
  cfg.ffn = 128;
  return cfg;
}

std::vector<float> make_input(const BertLayerConfig& cfg, uint32_t seed) {
  return random_input(cfg.tokens() * cfg.hidden, -1.0f, 1.0f, seed);
}

TEST(ZooBertLayer, GradientsMatchFiniteDifferences) {
  const BertLayerConfig cfg = tiny_config();
  const std::vector<float> x = make_input(cfg, 1);
  BertLayer layer(cfg);
  layer.init(2);
  perturb(layer.params, 0.2f, 3);   // biases away from 0, gamma away from 1, larger weights
  layer.compute_gradients(x.data());
  expect_gradients_match(
      layer.params, layer.grads,
      [&](const BertLayerParams<double>& p) {
        return bert_layer_forward(cfg, p, x.data(), layer.loss_weights.data()).loss;
      },
      6, {"bk"});   // softmax ignores what bk adds: the same q . bk on every key of a row
}

TEST(ZooBertLayer, AttentionRowsAreDistributions) {
  const BertLayerConfig cfg = tiny_config();
  EXPECT_EQ(cfg.attention_scale(), 0.5f);
  EXPECT_EQ(BertLayerConfig{}.attention_scale(), 0.125f);
  BertLayer layer(cfg);
  layer.init(4);
  const std::vector<float> x = make_input(cfg, 5);
  const BertLayerActivations<float> act = bert_layer_forward(cfg, layer.params, x.data(), layer.loss_weights.data());
  ASSERT_EQ(act.probs.size(), cfg.batch * cfg.heads * cfg.seq * cfg.seq);
  for (size_t row = 0; row < act.probs.size() / cfg.seq; ++row) {
    double sum = 0;
    for (size_t j = 0; j < cfg.seq; ++j) sum += act.probs[row * cfg.seq + j];
    EXPECT_NEAR(sum, 1.0, 1e-6) << row;
  }
  // Each token of y is layer-normalised (gamma 1, beta 0 after init): mean 0, variance 1.
  for (size_t t = 0; t < cfg.tokens(); ++t) {
    double mean = 0, var = 0;
    for (size_t j = 0; j < cfg.hidden; ++j) mean += act.y[t * cfg.hidden + j];
    mean /= static_cast<double>(cfg.hidden);
    for (size_t j = 0; j < cfg.hidden; ++j) var += std::pow(act.y[t * cfg.hidden + j] - mean, 2);
    EXPECT_NEAR(mean, 0.0, 1e-5);
    EXPECT_NEAR(var / static_cast<double>(cfg.hidden), 1.0, 1e-4);
  }
}

TEST(ZooBertLayer, LossDecreasesOverFiveSteps) {
  const BertLayerConfig cfg = small_config();
  const std::vector<float> x = make_input(cfg, 6);
  BertLayer layer(cfg);
  layer.init(7);
  std::vector<float> losses;
  for (int i = 0; i < 6; ++i) losses.push_back(layer.step(x.data()));
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << "step " << i;
}

TEST(ZooBertLayer, RunsAreBitIdentical) {
  const BertLayerConfig cfg = small_config();
  const std::vector<float> x = make_input(cfg, 8);
  BertLayer a(cfg), b(cfg), other(cfg);
  a.init(9);
  b.init(9);
  other.init(10);
  EXPECT_FALSE(same_bits(a.params, other.params));
  EXPECT_NE(a.loss_weights, other.loss_weights);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(a.step(x.data()), b.step(x.data()));
  EXPECT_TRUE(same_bits(a.params, b.params));
  EXPECT_TRUE(same_bits(a.exp_avg, b.exp_avg));
  EXPECT_TRUE(same_bits(a.exp_avg_sq, b.exp_avg_sq));
}

}  // namespace
}  // namespace hpusim::synapse::zoo_reference
