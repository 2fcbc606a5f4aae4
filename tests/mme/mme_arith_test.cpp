// The MME's host-side pieces without SystemC: the vectorised arithmetic against the scalar
// reference (bit for bit) and a float64 reference (within the stated bound), bf16 rounding and
// NaNs, the descriptor encoding and validation, and the job plan's tiles, chunks and reads.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "hw/mme/mme_compute.h"
#include "arch/mme/mme_job.h"
#include "hw/mme/mme_plan.h"

namespace hpusim::testing {
namespace {

using namespace mme;

std::vector<float> random_matrix(std::mt19937& rng, size_t count, bool bf16) {
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(count);
  for (float& x : v) x = bf16 ? bf16_to_f32(f32_to_bf16(d(rng))) : d(rng);
  return v;
}

TEST(MmeArithmetic, VectorisedGemmIsBitIdenticalToTheReferenceOrder) {
  std::mt19937 rng(11);
  const std::vector<std::array<size_t, 3>> shapes = {
      {1, 1, 1}, {1, 33, 7}, {6, 32, 5}, {7, 65, 19}, {13, 100, 64}, {64, 64, 64}, {37, 129, 300}, {200, 31, 3}};
  for (const auto& [m, n, k] : shapes) {
    for (bool bf16 : {true, false}) {
      const auto a = random_matrix(rng, m * k, bf16), b = random_matrix(rng, k * n, bf16);
      std::vector<float> c(m * n, -1.0f), ref(m * n, -2.0f);
      gemm_f32(a.data(), k, b.data(), n, c.data(), n, m, n, k);
      gemm_f32_reference(a.data(), k, b.data(), n, ref.data(), n, m, n, k);
      for (size_t i = 0; i < c.size(); ++i) {
        ASSERT_EQ(f32_bits(c[i]), f32_bits(ref[i])) << m << "x" << n << "x" << k << " element " << i;
      }
      // Within the recursive-summation bound of a float64 result: |c - exact| <= gamma_K sum |a b|
      // with gamma_K = K u / (1 - K u), u = 2^-24 (plus one rounding of the product per term).
      const double u = std::ldexp(1.0, -24), gamma = (k + 1) * u / (1 - (k + 1) * u);
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (size_t kk = 0; kk < k; ++kk) {
            exact += double(a[i * k + kk]) * double(b[kk * n + j]);
            magnitude += std::fabs(double(a[i * k + kk]) * double(b[kk * n + j]));
          }
          ASSERT_LE(std::fabs(double(c[i * n + j]) - exact), gamma * magnitude) << i << "," << j;
        }
      }
    }
  }
}

// Every vector path, not only the one this host's gemm_f32 picks: the same bits as the reference
// (NaN for NaN), with subnormals, infinities and NaNs among the operands and leading dimensions wider
// than the rows.
class MmeGemmPath : public ::testing::TestWithParam<GemmPath> {};

TEST_P(MmeGemmPath, IsBitIdenticalToTheScalarReference) {
  const GemmPath path = GetParam();
  if (!gemm_path_supported(path)) GTEST_SKIP() << "this host cannot run the " << gemm_path_name(path) << " path";
  std::mt19937 rng(23);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), -1e-40f,
                            std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 3e38f};
  const std::vector<std::array<size_t, 3>> shapes = {{1, 1, 1},  {3, 5, 2},    {4, 16, 9},  {17, 33, 8},
                                                     {16, 64, 1}, {31, 47, 70}, {64, 80, 33}, {5, 200, 17}};
  for (const auto& [m, n, k] : shapes) {
    const size_t lda = k + 3, ldb = n + 5, ldc = n + 2;
    auto a = random_matrix(rng, m * lda, false), b = random_matrix(rng, k * ldb, false);
    for (size_t i = 0; i < a.size(); i += 13) a[i] = specials[(i / 13) % std::size(specials)];
    for (size_t i = 0; i < b.size(); i += 29) b[i] = specials[(i / 29 + 3) % std::size(specials)];
    std::vector<float> c(m * ldc, -1.0f), ref(m * ldc, -1.0f);
    gemm_f32_on(path, a.data(), lda, b.data(), ldb, c.data(), ldc, m, n, k);
    gemm_f32_reference(a.data(), lda, b.data(), ldb, ref.data(), ldc, m, n, k);
    for (size_t i = 0; i < c.size(); ++i) {
      // A NaN's sign and payload are not specified (the output conversion makes every NaN canonical).
      if (std::isnan(ref[i])) {
        ASSERT_TRUE(std::isnan(c[i])) << gemm_path_name(path) << " " << m << "x" << n << "x" << k << " element " << i;
        continue;
      }
      ASSERT_EQ(f32_bits(c[i]), f32_bits(ref[i])) << gemm_path_name(path) << " " << m << "x" << n << "x" << k
                                                  << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, MmeGemmPath, ::testing::Values(GemmPath::kSse, GemmPath::kAvx2, GemmPath::kAvx512),
                         [](const ::testing::TestParamInfo<GemmPath>& info) { return std::string(gemm_path_name(info.param)); });

TEST(MmeGemmPath, GemmF32UsesTheWidestPathTheHostRuns) {
  EXPECT_TRUE(gemm_path_supported(gemm_path_chosen()));
  if (gemm_path_supported(GemmPath::kAvx512)) EXPECT_EQ(gemm_path_chosen(), GemmPath::kAvx512);
  EXPECT_TRUE(gemm_path_supported(GemmPath::kSse));
}

TEST(MmeArithmetic, RoundsProductAndSumSeparately) {
  // x = 1 + 2^-12: x * x = 1 + 2^-11 + 2^-24 rounds (a tie, to even) to 1 + 2^-11, so -1 + x x
  // gives 2^-11; a fused multiply-add would give 2^-11 + 2^-24.
  const float x = 1.0f + std::ldexp(1.0f, -12);
  const float a[2] = {-1.0f, x}, b[2] = {1.0f, x};
  float c = 0, ref = 0;
  gemm_f32(a, 2, b, 1, &c, 1, 1, 1, 2);
  gemm_f32_reference(a, 2, b, 1, &ref, 1, 1, 1, 2);
  EXPECT_EQ(c, std::ldexp(1.0f, -11));
  EXPECT_EQ(f32_bits(c), f32_bits(ref));
  EXPECT_EQ(std::fmaf(x, x, -1.0f), std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
}

TEST(MmeArithmetic, Bf16RoundingAndCanonicalNans) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3F808000)), 0x3F80) << "a tie rounds to even (down)";
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3F818000)), 0x3F82) << "a tie rounds to even (up)";
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x7F7FFFFF)), 0x7F80) << "the largest f32 rounds to infinity";
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0xFFC12345)), 0x7FC0);
  EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
  const float values[3] = {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(), -0.0f};
  uint8_t out[12];
  convert_output(values, 3, MmeType::F32, out);
  uint32_t words[3];
  std::memcpy(words, out, 12);
  EXPECT_EQ(words[0], 0x7FC00000u);
  EXPECT_EQ(words[1], 0xFF800000u);
  EXPECT_EQ(words[2], 0x80000000u);
}

MmeJob gemm_job(uint32_t m, uint32_t n, uint32_t k) {
  MmeJob j;
  j.m = m, j.n = n, j.k = k;
  j.lda = k, j.ldb = n, j.ldo = n;
  j.a = 0x20000000, j.b = 0x24000000, j.o = 0x28000000;
  return j;
}

// A byte-addressed memory of random bytes, with one refused range.
struct FakeMemory {
  std::vector<uint8_t> bytes;
  uint64_t refused_from = ~uint64_t{0};
  MemoryReader reader() {
    return [this](uint64_t address, size_t size, void* dst) {
      if (address + size > bytes.size() || address + size > refused_from) return false;
      std::memcpy(dst, bytes.data() + address, size);
      return true;
    };
  }
};

TEST(MmeOperands, ASnapshotServesTheSameGatherAsMemory) {
  std::mt19937 rng(5);
  FakeMemory mem;
  mem.bytes.resize(1 << 20);
  for (auto& b : mem.bytes) b = static_cast<uint8_t>(rng() & 0x3F);   // finite bf16 / f32 values
  MmeJob gemm;
  gemm.m = 37, gemm.n = 20, gemm.k = 50, gemm.batch = 2;
  gemm.transpose_a = true, gemm.lda = 40, gemm.ldb = 24, gemm.ldo = 20;
  gemm.a = 0x100, gemm.b = 0x40000, gemm.batch_stride_a = 4096, gemm.batch_stride_b = 2048;
  MmeJob conv;
  conv.op = MmeOp::ConvBackwardWeight, conv.in = MmeType::F32;
  conv.conv = ConvShape{2, 6, 7, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1};
  conv.a = 0x1000, conv.b = 0x80000;
  for (const MmeJob& job : {gemm, conv}) {
    for (uint32_t index = 0; index < gemm_dims(job).batch; ++index) {
      std::vector<float> a1, b1, a2, b2;
      std::string error;
      ASSERT_TRUE(gather_operands(job, index, mem.reader(), a1, b1, error)) << error;
      OperandSnapshot snapshot;
      ASSERT_TRUE(snapshot_operands(job, index, mem.reader(), snapshot, error)) << error;
      ASSERT_TRUE(gather_operands(job, index, snapshot.reader(), a2, b2, error)) << error;
      ASSERT_EQ(a1.size(), a2.size());
      ASSERT_EQ(b1.size(), b2.size());
      for (size_t i = 0; i < a1.size(); ++i) ASSERT_EQ(f32_bits(a1[i]), f32_bits(a2[i])) << "A " << i;
      for (size_t i = 0; i < b1.size(); ++i) ASSERT_EQ(f32_bits(b1[i]), f32_bits(b2[i])) << "B " << i;
      // The snapshot holds exactly the regions read (and nothing else is served).
      uint64_t total = 0;
      for (const MemoryRegion& r : operand_reads(job, index)) total += r.bytes;
      EXPECT_EQ(snapshot.bytes.size(), total);
      uint8_t byte;
      EXPECT_FALSE(snapshot.reader()(job.a + 1, 1, &byte));
    }
  }
  mem.refused_from = 0x40000 + 100;   // B's rows are 48 bytes apart: the third row is refused
  OperandSnapshot snapshot;
  std::string error, direct;
  std::vector<float> a, b;
  EXPECT_FALSE(snapshot_operands(gemm, 0, mem.reader(), snapshot, error));
  EXPECT_EQ(error, "operand B read at 0x40060 refused");
  EXPECT_FALSE(gather_operands(gemm, 0, mem.reader(), a, b, direct));
  EXPECT_EQ(direct, error) << "the snapshot names the operand and address as the gather does";
}

TEST(MmeJob, DescriptorWordsRoundTrip) {
  MmeJob j = gemm_job(100, 200, 300);
  j.op = MmeOp::ConvBackwardData;
  j.in = MmeType::F32;
  j.out = MmeType::Bf16;
  j.transpose_a = true;
  j.geometry = 1;
  j.batch = 3;
  j.batch_stride_a = 0x123456789ull;
  j.batch_stride_o = 77;
  j.conv = ConvShape{2, 9, 11, 3, 5, 3, 2, 2, 1, 1, 0, 1, 2};
  j.so_address = 0x7FFC4A00000ull;
  j.so_message = 0x80000001u;
  std::vector<uint32_t> window(desc::kWindowEnd / 4, 0);
  for (const auto& [offset, value] : encode(j)) window[offset / 4] = value;
  const MmeJob d = decode(window.data());
  EXPECT_EQ(d.op, j.op);
  EXPECT_EQ(d.in, j.in);
  EXPECT_EQ(d.out, j.out);
  EXPECT_EQ(d.transpose_a, true);
  EXPECT_EQ(d.transpose_b, false);
  EXPECT_EQ(d.geometry, 1u);
  EXPECT_EQ(d.a, j.a);
  EXPECT_EQ(d.o, j.o);
  EXPECT_EQ(d.m, 100u);
  EXPECT_EQ(d.batch, 3u);
  EXPECT_EQ(d.batch_stride_a, j.batch_stride_a);
  EXPECT_EQ(d.batch_stride_o, 77u);
  EXPECT_EQ(d.conv.w, 11u);
  EXPECT_EQ(d.conv.stride_h, 2u);
  EXPECT_EQ(d.conv.stride_w, 1u);
  EXPECT_EQ(d.conv.dil_w, 2u);
  EXPECT_EQ(d.so_address, j.so_address);
  EXPECT_EQ(d.so_message, j.so_message);
}

TEST(MmeJob, ValidationNamesTheBadField) {
  EXPECT_EQ(validate(gemm_job(8, 8, 8), 2), "");
  const auto expect = [](const MmeJob& j, const std::string& text) {
    const std::string e = validate(j, 2);
    EXPECT_NE(e.find(text), std::string::npos) << "got: " << e;
  };
  expect(gemm_job(0, 8, 8), "GEMM dims must be positive");
  MmeJob j = gemm_job(8, 8, 8);
  j.lda = 7;
  expect(j, "lda 7 is below A's row length 8");
  j = gemm_job(8, 8, 8);
  j.transpose_b = true;
  j.ldb = 4;
  expect(j, "ldb 4 is below B's row length 8");
  j = gemm_job(8, 8, 8);
  j.geometry = 2;
  expect(j, "geometry 2 does not exist");
  j = gemm_job(8, 8, 8);
  j.in = static_cast<MmeType>(3);
  expect(j, "input type 3");
  j = gemm_job(8, 8, 8);
  j.batch = 0;
  expect(j, "batch must be at least 1");
  j = gemm_job(8, 8, 8);
  j.a = ~uint64_t{0} - 4;
  expect(j, "operand A runs past the address space");
  expect(gemm_job(1u << 16, 1u << 16, 1), "exceeds 2^28 elements");
  j = gemm_job(8, 8, 8);
  j.op = MmeOp::ConvForward;
  j.conv = ConvShape{1, 2, 2, 1, 1, 3, 3};
  expect(j, "the filter does not fit");
  j.conv.stride_h = 0;
  expect(j, "strides must be positive");
}

TEST(MmeGeometry, ParsesPeAndCoreForms) {
  const Geometry g = parse_geometry("2wx1h", 64, 64, 2);
  EXPECT_EQ(g.rows, 64u);
  EXPECT_EQ(g.cols, 128u);
  const Geometry h = parse_geometry("512x128", 128, 256, 2);
  EXPECT_EQ(h.rows, 512u);
  EXPECT_EQ(h.cols, 128u);
  EXPECT_THROW(parse_geometry("4wx1h", 64, 64, 2), std::invalid_argument);   // 4 cores' worth
  EXPECT_THROW(parse_geometry("wide", 64, 64, 2), std::invalid_argument);
  EXPECT_EQ(tile_cycles(4, 16, 10), 3u + 15 + 10 + 4);
}

TEST(MmePlan, SuperTilesChunksAndReadsCoverTheOperands) {
  PlanParams p;
  p.geometry = {64, 128};
  p.accumulators = 16;
  p.staging_bytes = 512 * 128;
  MmeJob j = gemm_job(1000, 700, 333);
  j.lda = 400;   // padded rows
  const JobPlan plan(j, p);
  // Of the arrangements whose rows and columns take at most half the 512-line staging buffer
  // (64 h + 128 w <= 256), 2 x 1 reads the fewest elements per tile step (128, against 192).
  EXPECT_EQ(plan.tiles_high(), 2u);
  EXPECT_EQ(plan.tiles_wide(), 1u);
  EXPECT_EQ(plan.line_k(), 64u);
  EXPECT_EQ(plan.super_rows() % 64, 0u);
  EXPECT_LE(plan.kc() * (plan.super_rows() + plan.super_cols()) * 2 * p.min_chunks_in_buffer, p.staging_bytes);
  // Every element of A and B is read once per super-tile column / row that needs it.
  uint64_t bytes = 0, steps = 0, released = 0;
  std::set<uint64_t> a_rows_seen;
  std::vector<mme::Run> runs;
  for (uint64_t i = 0; i < plan.chunks(); ++i) {
    const auto c = plan.chunk(i);
    plan.chunk_reads(c, runs);
    uint64_t chunk_bytes = 0;
    for (const mme::Run& r : runs) {
      chunk_bytes += r.bytes;
      EXPECT_LE(r.bytes, p.max_request_bytes);
      if (r.address < j.b) a_rows_seen.insert((r.address - j.a) / (j.lda * 2));
    }
    EXPECT_EQ(chunk_bytes, c.bytes);
    bytes += chunk_bytes;
    released += c.release;
    steps += c.tile_steps;
  }
  const uint64_t st_rows = (1000 + plan.super_rows() - 1) / plan.super_rows();
  const uint64_t st_cols = (700 + plan.super_cols() - 1) / plan.super_cols();
  EXPECT_EQ(bytes, (1000 * 333 * st_cols + 333 * 700 * st_rows) * 2);
  EXPECT_EQ(a_rows_seen.size(), 1000u);
  EXPECT_EQ(released, bytes) << "every byte read leaves the staging buffer once";
  // The array steps: every tile of the output (16 x 6 of 64 x 128) over all of K.
  EXPECT_EQ(steps, uint64_t{16} * 6 * 333);
  // The writes cover the output once, in rows of the super-tile.
  uint64_t written = 0;
  std::vector<JobPlan::Write> writes;
  for (uint64_t s = 0; s < plan.supertiles(); ++s) {
    plan.supertile_writes(s, writes);
    for (const auto& w : writes) written += w.run.bytes;
  }
  EXPECT_EQ(written, uint64_t{1000} * 700 * 4);
}

}  // namespace
}  // namespace hpusim::testing
