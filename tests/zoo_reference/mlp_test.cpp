// The MNIST MLP: gradients against finite differences, descent, determinism, the dropout mask.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "synapse/zoo_reference/mlp.h"
#include "synapse/zoo_reference/ops.h"
#include "synapse/zoo_reference/random.h"
#include "tests/zoo_reference/gradient_check.h"
#include "tests/zoo_reference/workload_test_util.h"

namespace hpusim::synapse::zoo_reference {
namespace {

using namespace test_support;

MlpConfig tiny_config() {
  MlpConfig cfg;
  cfg.batch = 6;
  cfg.inputs = 12;
  cfg.hidden = 8;
  cfg.classes = 5;
  return cfg;
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> target;
};

Batch make_batch(const MlpConfig& cfg, uint32_t seed) {
  Batch b{random_input(cfg.batch * cfg.inputs, 0.0f, 1.0f, seed), std::vector<int32_t>(cfg.batch)};
  for (size_t i = 0; i < cfg.batch; ++i) b.target[i] = static_cast<int32_t>((i * 3 + seed) % cfg.classes);
  return b;
}

TEST(ZooMlp, GradientsMatchFiniteDifferences) {
  const MlpConfig cfg = tiny_config();
  const Batch batch = make_batch(cfg, 1);
  constexpr uint32_t kDropoutSeed = 3;
  Mlp mlp(cfg);
  mlp.init(7);
  mlp.compute_gradients(batch.x.data(), batch.target.data(), kDropoutSeed);
  test_support::expect_gradients_match(
      mlp.params, mlp.grads,
      [&](const MlpParams<double>& p) {
        return mlp_forward(cfg, p, batch.x.data(), batch.target.data(), kDropoutSeed).loss;
      },
      8);
}

TEST(ZooMlp, DropoutUsesTheKernelMaskInDenseOrder) {
  const MlpConfig cfg = tiny_config();
  const Batch batch = make_batch(cfg, 2);
  Mlp mlp(cfg);
  mlp.init(1);
  const MlpActivations<float> act = mlp_forward(cfg, mlp.params, batch.x.data(), batch.target.data(), 11);
  EXPECT_EQ(act.mask, dropout_mask(cfg.batch * cfg.hidden, 0.5f, 11));
  size_t kept = 0;
  for (size_t i = 0; i < act.mask.size(); ++i) {
    const float relu_out = act.z1[i] > 0.0f ? act.z1[i] : 0.0f;
    EXPECT_EQ(act.dropped[i], act.mask[i] * relu_out * 2.0f) << i;
    kept += act.mask[i] != 0.0f;
  }
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, act.mask.size());
}

TEST(ZooMlp, LossDecreasesOverFiveSteps) {
  const MlpConfig cfg = tiny_config();
  const Batch batch = make_batch(cfg, 3);
  Mlp mlp(cfg);
  mlp.init(5);
  std::vector<float> losses;
  for (int i = 0; i < 6; ++i) losses.push_back(mlp.step(batch.x.data(), batch.target.data(), 9));
  for (size_t i = 1; i < losses.size(); ++i) EXPECT_LT(losses[i], losses[i - 1]) << "step " << i;
}

TEST(ZooMlp, RunsAreBitIdentical) {
  const MlpConfig cfg = tiny_config();
  const Batch batch = make_batch(cfg, 4);
  Mlp a(cfg), b(cfg), other(cfg);
  a.init(21);
  b.init(21);
  other.init(22);
  EXPECT_FALSE(same_bits(a.params, other.params));
  for (uint32_t s = 0; s < 3; ++s) {
    EXPECT_EQ(a.step(batch.x.data(), batch.target.data(), s), b.step(batch.x.data(), batch.target.data(), s));
  }
  EXPECT_TRUE(same_bits(a.params, b.params));
  EXPECT_TRUE(same_bits(a.square_avg, b.square_avg));
  EXPECT_TRUE(same_bits(a.acc_delta, b.acc_delta));
  Mlp c(cfg);   // the same steps with other dropout seeds: other parameters
  c.init(21);
  for (uint32_t s = 0; s < 3; ++s) c.step(batch.x.data(), batch.target.data(), s + 10);
  EXPECT_FALSE(same_bits(a.params, c.params));
}

// The PyTorch example's sizes: at initialisation the loss is close to log(10).
TEST(ZooMlp, DefaultSizeStep) {
  Mlp mlp;
  ASSERT_EQ(mlp.config.batch, 200u);
  mlp.init(1);
  const Batch batch = make_batch(mlp.config, 5);
  const MlpParams<float> before = mlp.params;
  const float loss = mlp.step(batch.x.data(), batch.target.data(), 1);
  EXPECT_NEAR(loss, std::log(10.0f), 0.2f);
  EXPECT_FALSE(same_bits(before, mlp.params));
  for (const std::vector<float>* t : mlp.params.tensors())
    for (float v : *t) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace hpusim::synapse::zoo_reference
