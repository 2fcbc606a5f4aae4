// Golden cycle counts of a fixed set of MME jobs on MME0 of each preset (tests/golden/mme_jobs.txt
// for hl205, mme_jobs_<preset>.txt for the others):
// GEMMs of several shapes, types and layouts, a batched GEMM and the three convolutions. A
// change to the engine's timing, the plan or the memory system shows up here; rewrite with
// HPUSIM_UPDATE_GOLDEN=1 and review the diff. All jobs run in one test (one card, one file).
#include <gtest/gtest.h>

#include <random>

#include "tests/mme/mme_card_fixture.h"
#include "tests/support/golden.h"

namespace hpusim::testing {
namespace {

using namespace mme;

constexpr uint64_t kA = 0x20000000, kB = 0x24000000, kO = 0x28000000;

class MmeGoldenTest : public MmeCardTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void record(GoldenFile& golden, const std::string& name, const MmeJob& job) {
    std::mt19937 rng(7);
    const GemmDims d = gemm_dims(job);
    const auto a = random_operand(rng, d.m * d.k * d.batch + 4096, job.in);
    const auto b = random_operand(rng, d.k * d.n * d.batch + 4096, job.in);
    dram_write(kA, a.data(), a.size());
    dram_write(kB, b.data(), b.size());
    ASSERT_TRUE(run(job, 200000)) << name;
    const hw::MmeJobStats s = jobs().back();
    golden.check(name + ".cycles", s.cycles);
    golden.check(name + ".array_cycles", s.array_cycles);
    golden.check(name + ".operand_stall_cycles", s.operand_stall_cycles);
    golden.check(name + ".read_bytes", s.read_bytes);
  }
};

MmeJob gemm(uint32_t m, uint32_t n, uint32_t k, MmeType in, bool ta) {
  MmeJob j;
  j.m = m, j.n = n, j.k = k, j.in = in, j.transpose_a = ta;
  j.lda = ta ? m : k, j.ldb = n, j.ldo = n;
  j.a = kA, j.b = kB, j.o = kO;
  return j;
}

MmeJob conv(MmeOp op) {
  MmeJob j;
  j.op = op;
  j.conv = ConvShape{4, 14, 14, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1};
  j.a = kA, j.b = kB, j.o = kO;
  return j;
}

TEST_P(MmeGoldenTest, JobsMatchGoldenCycleCounts) {
  const std::string preset = GetParam();
  build({}, preset);
  GoldenFile golden(preset == "hl205" ? "mme_jobs.txt" : "mme_jobs_" + preset + ".txt");
  record(golden, "gemm_64x128x64_bf16", gemm(64, 128, 64, MmeType::Bf16, false));
  record(golden, "gemm_256x256x256_bf16_at", gemm(256, 256, 256, MmeType::Bf16, true));
  record(golden, "gemm_512x512x512_bf16", gemm(512, 512, 512, MmeType::Bf16, false));
  record(golden, "gemm_300x200x100_f32", gemm(300, 200, 100, MmeType::F32, false));
  MmeJob tall = gemm(1024, 64, 256, MmeType::Bf16, true);
  tall.geometry = 1;
  record(golden, "gemm_1024x64x256_bf16_geometry1", tall);
  MmeJob batched = gemm(128, 128, 128, MmeType::Bf16, false);
  batched.batch = 8;
  batched.batch_stride_a = 128 * 128, batched.batch_stride_b = 128 * 128, batched.batch_stride_o = 128 * 128;
  record(golden, "gemm_8x128x128x128_bf16", batched);
  record(golden, "conv_fwd_4x14x14x32_k64_3x3", conv(MmeOp::ConvForward));
  record(golden, "conv_dgrad_4x14x14x32_k64_3x3", conv(MmeOp::ConvBackwardData));
  record(golden, "conv_wgrad_4x14x14x32_k64_3x3", conv(MmeOp::ConvBackwardWeight));
}

INSTANTIATE_TEST_SUITE_P(Presets, MmeGoldenTest, ::testing::Values("hl205", "hl225", "hl325"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace hpusim::testing
