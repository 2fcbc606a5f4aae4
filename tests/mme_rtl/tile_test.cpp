// The verilated MME tile against the C++ reference loop, bit for bit, over tile shapes, K and
// operand mixes; and its measured cycles against tile_cycles().
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>

#include "hw/mme/rtl/rtl_tile.h"
#include "tests/mme_rtl/reference_fp32.h"
#include "tests/mme_rtl/test_operands.h"

namespace hpusim::mme::rtl::test {
namespace {

struct Shape {
  uint32_t rows;
  uint32_t cols;
};

// Single PEs, single rows and columns, odd sizes, and both full arrays.
constexpr Shape kShapes[] = {{1, 1}, {1, 8}, {8, 1}, {3, 5}, {7, 2}, {5, 8}, {8, 8},
                             {4, 1}, {1, 16}, {2, 13}, {3, 11}, {4, 16}};
constexpr uint32_t kDepths[] = {1, 2, 17, 64, 300};

std::string hex(uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08X", v);
  return text;
}

std::string describe(const Shape& shape, uint32_t k) {
  return std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + " k=" + std::to_string(k);
}

// Runs the tile and the reference on a and b; expects equal results and the formula's cycles.
void expect_tile_matches(TileRunner& runner, const Shape& shape, uint32_t k,
                         const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  const TileRun run = runner.run(shape.rows, shape.cols, k, a, b);
  const std::vector<uint32_t> expected = reference_matmul(shape.rows, shape.cols, k, a, b);
  EXPECT_EQ(run.cycles, tile_cycles(shape.rows, shape.cols, k)) << describe(shape, k);
  ASSERT_EQ(run.c.size(), expected.size()) << describe(shape, k);
  int reported = 0;
  for (size_t n = 0; n < expected.size() && reported < 3; ++n) {
    if (run.c[n] == expected[n]) continue;
    ADD_FAILURE() << describe(shape, k) << " c[" << n / shape.cols << "][" << n % shape.cols
                  << "]: rtl " << hex(run.c[n]) << ", reference " << hex(expected[n]);
    ++reported;
  }
}

// Every shape with every depth, back to back on one runner: each tile also checks that the
// previous one leaves nothing behind in the array.
void expect_sweep_matches(const OperandMix& mix, uint32_t seed) {
  std::mt19937 rng(seed);
  TileRunner runner;
  for (const Shape& shape : kShapes) {
    for (uint32_t k : kDepths) {
      const auto a = random_operands(rng, uint64_t{shape.rows} * k, mix);
      const auto b = random_operands(rng, uint64_t{k} * shape.cols, mix);
      expect_tile_matches(runner, shape, k, a, b);
    }
  }
}

TEST(MmeRtlTile, CycleFormula) {
  static_assert(tile_cycles(1, 1, 1) == 2);               // one MAC, one drain cycle
  static_assert(tile_cycles(8, 8, 64) == 7 + 7 + 64 + 8);  // fill, MACs, drain
  static_assert(tile_cycles(4, 16, 300) == 3 + 15 + 300 + 4);
  EXPECT_EQ(tile_cycles(3, 5, 17), 2u + 4u + 17u + 3u);
}

TEST(MmeRtlTile, SmallIntegersGiveExactProducts) {
  // A = [[1, 2], [3, 4], [5, 6]], B = [[1, 0, -1], [2, 1, 0.5]]: every sum is exact.
  const std::vector<uint32_t> a = {0x3F800000u, 0x40000000u, 0x40400000u,
                                   0x40800000u, 0x40A00000u, 0x40C00000u};
  const std::vector<uint32_t> b = {0x3F800000u, 0x00000000u, 0xBF800000u,
                                   0x40000000u, 0x3F800000u, 0x3F000000u};
  const TileRun run = run_tile(3, 3, 2, a, b);
  const std::vector<uint32_t> expected = {0x40A00000u, 0x40000000u, 0x00000000u,    // 5, 2, 0
                                          0x41300000u, 0x40800000u, 0xBF800000u,    // 11, 4, -1
                                          0x41880000u, 0x40C00000u, 0xC0000000u};   // 17, 6, -2
  EXPECT_EQ(run.c, expected);
  EXPECT_EQ(run.cycles, tile_cycles(3, 3, 2));
}

TEST(MmeRtlTile, Bf16OperandsMatchReference) {
  expect_sweep_matches({{OperandKind::Bf16, 1}}, 101);
}

TEST(MmeRtlTile, Fp32OperandsMatchReference) {
  expect_sweep_matches({{OperandKind::Moderate, 1}}, 102);
}

TEST(MmeRtlTile, OperandsWithSpecialValuesMatchReference) {
  // Rare enough that most outputs stay finite even at k = 300.
  expect_sweep_matches({{OperandKind::Moderate, 200}, {OperandKind::Bf16, 100},
                        {OperandKind::Edge, 1}}, 103);
}

TEST(MmeRtlTile, SubnormalProductsMatchReference) {
  expect_sweep_matches({{OperandKind::Tiny, 1}}, 104);
}

TEST(MmeRtlTile, RoundingTiesAndOverflowMatchReference) {
  expect_sweep_matches({{OperandKind::SparseMantissa, 8}, {OperandKind::Huge, 1}}, 105);
}

TEST(MmeRtlTile, CancellingProductPairsSumToPositiveZero) {
  // Column 2t+1 of A negates column 2t and row 2t+1 of B repeats row 2t, so every pair of MACs
  // adds p and then -p: each output is exactly +0, also where the products are signed zeros.
  std::mt19937 rng(106);
  const Shape shape{7, 2};
  const uint32_t k = 64;
  std::vector<uint32_t> a = random_operands(rng, uint64_t{shape.rows} * k,
                                            {{OperandKind::Moderate, 4}, {OperandKind::Bf16, 4}});
  std::vector<uint32_t> b = random_operands(rng, uint64_t{k} * shape.cols,
                                            {{OperandKind::Moderate, 8}, {OperandKind::Edge, 1}});
  for (uint32_t i = 0; i < shape.rows; ++i) {
    a[i * k] = 0x80000000u;  // a -0 product first: (+0) + (-0) must stay +0
    for (uint32_t kk = 0; kk < k; kk += 2) a[i * k + kk + 1] = a[i * k + kk] ^ 0x80000000u;
  }
  for (uint32_t kk = 0; kk < k; kk += 2) {
    for (uint32_t j = 0; j < shape.cols; ++j) {
      // No infinities or products that overflow: inf - inf would make a NaN.
      if (((b[kk * shape.cols + j] >> 23) & 0xFFu) > 127 + 64) b[kk * shape.cols + j] = 0x3F800000u;
      b[(kk + 1) * shape.cols + j] = b[kk * shape.cols + j];
    }
  }
  const TileRun run = run_tile(shape.rows, shape.cols, k, a, b);
  EXPECT_EQ(run.c, std::vector<uint32_t>(uint64_t{shape.rows} * shape.cols, 0u));
  EXPECT_EQ(run.c, reference_matmul(shape.rows, shape.cols, k, a, b));
}

TEST(MmeRtlTile, EveryArrayThatHoldsATileGivesTheSameResultAndCycles) {
  std::mt19937 rng(107);
  const uint32_t rows = 3, cols = 5, k = 17;
  const auto a = random_operands(rng, rows * k, {{OperandKind::Moderate, 1}});
  const auto b = random_operands(rng, k * cols, {{OperandKind::Moderate, 1}});
  const TileRun on_square = run_tile_on(kTileArrays[0], rows, cols, k, a, b);
  const TileRun on_wide = run_tile_on(kTileArrays[1], rows, cols, k, a, b);
  EXPECT_EQ(on_square.c, on_wide.c);
  EXPECT_EQ(on_square.cycles, on_wide.cycles);
  EXPECT_EQ(on_square.c, reference_matmul(rows, cols, k, a, b));
}

TEST(MmeRtlTile, ShapesKAndSizesOutsideTheArraysAreRejected) {
  const std::vector<uint32_t> one = {0x3F800000u};
  EXPECT_TRUE(tile_fits(kMaxTileRows, 8));
  EXPECT_TRUE(tile_fits(4, kMaxTileCols));
  EXPECT_FALSE(tile_fits(kMaxTileRows, kMaxTileCols));
  EXPECT_FALSE(tile_fits(kMaxTileRows + 1, 1));
  EXPECT_THROW(run_tile(kMaxTileRows, kMaxTileCols, 1, std::vector<uint32_t>(kMaxTileRows),
                        std::vector<uint32_t>(kMaxTileCols)),
               std::invalid_argument);
  EXPECT_THROW(run_tile(0, 1, 1, {}, one), std::invalid_argument);
  EXPECT_THROW(run_tile(1, 1, 0, {}, {}), std::invalid_argument);
  EXPECT_THROW(run_tile(1, 1, kMaxTileK + 1, std::vector<uint32_t>(kMaxTileK + 1),
                        std::vector<uint32_t>(kMaxTileK + 1)),
               std::invalid_argument);
  EXPECT_THROW(run_tile(1, 1, 2, one, one), std::invalid_argument);
  EXPECT_THROW(run_tile_on(kTileArrays[1], 8, 8, 1, std::vector<uint32_t>(8), std::vector<uint32_t>(8)),
               std::invalid_argument);
}

TEST(MmeRtlTile, LongestKRuns) {
  std::mt19937 rng(108);
  const Shape shape{2, 3};
  const auto a = random_operands(rng, uint64_t{shape.rows} * kMaxTileK, {{OperandKind::Bf16, 1}});
  const auto b = random_operands(rng, uint64_t{kMaxTileK} * shape.cols, {{OperandKind::Bf16, 1}});
  TileRunner runner;
  expect_tile_matches(runner, shape, kMaxTileK, a, b);
}

}  // namespace
}  // namespace hpusim::mme::rtl::test
