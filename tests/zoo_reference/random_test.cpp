// The dropout generator (hand-computed values of the README's algorithm, and the dropout_fwd
// kernel itself) and the initialisation source.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "synapse/zoo_reference/ops.h"
#include "synapse/zoo_reference/random.h"
#include "tests/zoo_reference/device_kernels.h"

namespace hpusim::synapse::zoo_reference {
namespace {

using namespace test_support;

// Values worked out separately (Python, from the algorithm in synapse/tpc_kernels/README.md).
TEST(ZooRandom, Mix32KnownValues) {
  EXPECT_EQ(mix32(0u), 0u);
  EXPECT_EQ(mix32(1u), 0x688990c0u);
  EXPECT_EQ(mix32(0x12345678u), 0xf5e71c96u);
  EXPECT_EQ(dropout_key(0), 0x01fce552u);
  EXPECT_EQ(dropout_key(1), 0xa4f7896cu);
  EXPECT_EQ(dropout_key(12345), 0x6f6344e1u);
}

TEST(ZooRandom, DropoutDrawsAndMaskKnownValues) {
  const uint32_t draws_seed1[6] = {9320271, 10653808, 15208083, 1928481, 6374847, 2542109};
  for (uint32_t i = 0; i < 6; ++i)
    EXPECT_EQ(dropout_uniform(dropout_key(1), i), static_cast<float>(draws_seed1[i]) / 16777216.0f) << i;
  EXPECT_EQ(dropout_mask(6, 0.5f, 0), (std::vector<float>{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(dropout_mask(6, 0.5f, 1), (std::vector<float>{1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(dropout_mask(6, 0.5f, 12345), (std::vector<float>{1, 1, 1, 0, 0, 1}));
  // Draw 1928481 / 2^24 = 0.1149...: kept at p = 0.11, dropped at p = 0.12.
  EXPECT_EQ(dropout_mask(4, 0.11f, 1)[3], 1.0f);
  EXPECT_EQ(dropout_mask(4, 0.12f, 1)[3], 0.0f);
  EXPECT_EQ(dropout_mask(3, 0.0f, 1), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(dropout_mask(3, 1.0f, 1), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(dropout_scale(0.5f), 2.0f);
  EXPECT_EQ(dropout_scale(1.0f), 0.0f);
  EXPECT_THROW(dropout_mask(3, 0.5f, (1u << 24) + 1), std::invalid_argument);
}

TEST(ZooRandom, DropoutMatchesTheKernel) {
  const std::vector<uint32_t> shape = {70, 3, 2};   // dim 0 not a multiple of 64: partial vectors
  std::vector<float> x(70 * 3 * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i % 17) - 2.0f;
  for (const float p : {0.5f, 0.3f})
    for (const uint32_t seed : {0u, 7u, 1u << 24}) {
      const auto out = run_device("dropout_fwd_f32", {f32_tensor(shape, x)}, {f32_output(shape), f32_output(shape)},
                                  {p, static_cast<float>(seed)});
      ASSERT_EQ(out.size(), 2u);
      const std::vector<float> mask = dropout_mask(x.size(), p, seed);
      std::vector<float> y(x.size());
      dropout(x.data(), mask.data(), dropout_scale(p), y.data(), y.size());
      expect_same_bits(mask, values_of(out[1]), "dropout mask");
      expect_same_bits(y, values_of(out[0]), "dropout y");
    }
}

TEST(ZooRandom, KeptFractionIsOneMinusP) {
  const std::vector<float> mask = dropout_mask(100000, 0.3f, 42);
  double kept = 0;
  for (float m : mask) kept += m;
  EXPECT_NEAR(kept / static_cast<double>(mask.size()), 0.7, 0.01);
}

// std::mt19937's first outputs are fixed: 3499211612 for its default seed 5489, 2357136044 for 0.
TEST(ZooRandom, UniformSourceKnownValues) {
  UniformSource a(5489), b(0);
  EXPECT_EQ(a.next(1.0f), 2.0f * (13668795.0f / 16777216.0f) - 1.0f);
  EXPECT_EQ(b.next(2.0f), (2.0f * (9207562.0f / 16777216.0f) - 1.0f) * 2.0f);
  UniformSource c(3);
  for (int i = 0; i < 1000; ++i) {
    const float v = c.next(0.5f);
    ASSERT_GE(v, -0.5f);
    ASSERT_LT(v, 0.5f);
  }
}

}  // namespace
}  // namespace hpusim::synapse::zoo_reference
