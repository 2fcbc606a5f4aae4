// The SystemC MME engine against the verilated PE-array tile (hw/mme/rtl): on a card whose MME
// cores are 4 x 8 PEs (so the engine's geometries, 4 x 16 and 8 x 8, are the RTL's arrays),
// single-tile jobs over a sweep of tile shapes, K and operand mixes give bit-identical outputs,
// and the engine charges the array exactly the cycles the RTL takes for the tile.
#include <gtest/gtest.h>

#include <random>

#include "hw/mme/rtl/rtl_tile.h"
#include "tests/mme/mme_card_fixture.h"
#include "tests/mme_rtl/test_operands.h"

namespace hpusim::testing {
namespace {

using namespace mme;
using rtl::test::OperandKind;

constexpr uint64_t kA = 0x20000000, kB = 0x24000000, kO = 0x28000000;

class MmeRtlCrossCheck : public MmeCardTest {
 protected:
  // One job of m x n x k on geometry `g` with f32 operand bit patterns `a` (m x k) and `b` (k x n).
  void check(uint32_t g, uint32_t m, uint32_t n, uint32_t k, const std::vector<uint32_t>& a,
             const std::vector<uint32_t>& b, rtl::TileRunner& runner) {
    const Geometry geometry = sim->on_sim_thread([&] { return card->mme_engine(0)->params().geometries[g]; });
    dram_write(kA, a.data(), a.size() * 4);
    dram_write(kB, b.data(), b.size() * 4);
    MmeJob j;
    j.in = MmeType::F32, j.out = MmeType::F32, j.geometry = g;
    j.m = m, j.n = n, j.k = k, j.lda = k, j.ldb = n, j.ldo = n;
    j.a = kA, j.b = kB, j.o = kO;
    ASSERT_TRUE(run(j)) << m << "x" << n << "x" << k;
    std::vector<uint32_t> got(uint64_t{m} * n);
    dram_read(kO, got.data(), got.size() * 4);

    // The RTL runs the engine's whole tile; rows and columns past the job are zeros.
    std::vector<uint32_t> ta(uint64_t{geometry.rows} * k, 0), tb(uint64_t{k} * geometry.cols, 0);
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t kk = 0; kk < k; ++kk) ta[uint64_t{i} * k + kk] = a[uint64_t{i} * k + kk];
    for (uint32_t kk = 0; kk < k; ++kk)
      for (uint32_t c = 0; c < n; ++c) tb[uint64_t{kk} * geometry.cols + c] = b[uint64_t{kk} * n + c];
    const rtl::TileRun tile = runner.run(geometry.rows, geometry.cols, k, ta, tb);
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t c = 0; c < n; ++c)
        ASSERT_EQ(got[uint64_t{i} * n + c], tile.c[uint64_t{i} * geometry.cols + c])
            << "geometry " << g << ", " << m << "x" << n << "x" << k << ", element (" << i << ", " << c << ")";
    const hw::MmeJobStats s = jobs().back();
    EXPECT_EQ(s.array_cycles, tile.cycles) << "geometry " << g << ", " << m << "x" << n << "x" << k;
    EXPECT_EQ(tile.cycles, tile_cycles(geometry.rows, geometry.cols, k));
  }
};

TEST_F(MmeRtlCrossCheck, SingleTileJobsMatchTheRtlBitForBitAndCycleForCycle) {
  build({"mme.array_rows=4", "mme.array_cols=8"});
  rtl::TileRunner runner;
  std::mt19937 rng(2024);
  const std::vector<rtl::test::OperandMix> mixes = {
      {{OperandKind::Bf16, 1.0}},
      {{OperandKind::Moderate, 1.0}},
      {{OperandKind::Moderate, 0.8}, {OperandKind::Edge, 0.1}, {OperandKind::Tiny, 0.05}, {OperandKind::Huge, 0.05}},
      {{OperandKind::SparseMantissa, 0.7}, {OperandKind::Tiny, 0.3}},
  };
  struct Shape {
    uint32_t g, m, n;
  };
  const std::vector<Shape> shapes = {{0, 4, 16}, {0, 1, 1}, {0, 3, 11}, {0, 4, 1}, {1, 8, 8}, {1, 7, 2}, {1, 1, 8}, {1, 5, 5}};
  unsigned runs = 0;
  for (const Shape& s : shapes) {
    for (uint32_t k : {1u, 2u, 17u, 64u, 300u}) {
      const auto& mix = mixes[runs % mixes.size()];
      const auto a = rtl::test::random_operands(rng, uint64_t{s.m} * k, mix);
      const auto b = rtl::test::random_operands(rng, uint64_t{k} * s.n, mix);
      check(s.g, s.m, s.n, k, a, b, runner);
      if (HasFatalFailure()) return;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 40u);
}

}  // namespace
}  // namespace hpusim::testing
