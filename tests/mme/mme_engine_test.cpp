// The MME engine on a whole card, jobs submitted through MME0's QMAN: GEMMs (bf16 and f32,
// transposed operands, batches, odd sizes) and the three convolutions against C++ references
// bit for bit, the end-of-job message, cycle counts against the plan's formulas, and bad
// descriptors and refused operands as error events after which the next job works.
#include <gtest/gtest.h>

#include <cmath>

#include "arch/cpucp/cpucp.h"
#include "tests/mme/mme_card_fixture.h"

namespace hpusim::testing {
namespace {

using namespace mme;

constexpr uint64_t kA = 0x20000000, kB = 0x24000000, kO = 0x28000000;

// O = A B per batch, with the operands as stored (transposes, leading dims, batch strides).
std::vector<float> reference_gemm(const MmeJob& j, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out;
  for (uint32_t t = 0; t < j.batch; ++t) {
    std::vector<float> am(uint64_t{j.m} * j.k), bm(uint64_t{j.k} * j.n), c(uint64_t{j.m} * j.n);
    for (uint32_t i = 0; i < j.m; ++i)
      for (uint32_t kk = 0; kk < j.k; ++kk)
        am[i * j.k + kk] = a[t * j.batch_stride_a + (j.transpose_a ? kk * j.lda + i : i * j.lda + kk)];
    for (uint32_t kk = 0; kk < j.k; ++kk)
      for (uint32_t n = 0; n < j.n; ++n)
        bm[kk * j.n + n] = b[t * j.batch_stride_b + (j.transpose_b ? n * j.ldb + kk : kk * j.ldb + n)];
    gemm_f32_reference(am.data(), j.k, bm.data(), j.n, c.data(), j.n, j.m, j.n, j.k);
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

struct GemmCase {
  uint32_t m, n, k, batch;
  MmeType in, out;
  bool ta, tb;
  uint32_t geometry;
};

class MmeEngineGemm : public MmeCardTest {
 protected:
  void check(const GemmCase& g) {
    std::mt19937 rng(g.m * 131 + g.n * 7 + g.k);
    MmeJob j;
    j.m = g.m, j.n = g.n, j.k = g.k, j.batch = g.batch;
    j.in = g.in, j.out = g.out, j.transpose_a = g.ta, j.transpose_b = g.tb, j.geometry = g.geometry;
    j.lda = (g.ta ? g.m : g.k) + 3;   // padded rows
    j.ldb = (g.tb ? g.k : g.n) + 1;
    j.ldo = g.n + 5;
    j.batch_stride_a = uint64_t{j.lda} * (g.ta ? g.k : g.m);
    j.batch_stride_b = uint64_t{j.ldb} * (g.tb ? g.n : g.k);
    j.batch_stride_o = uint64_t{j.ldo} * g.m + 7;
    j.a = kA, j.b = kB, j.o = kO;
    std::vector<float> av, bv;
    const auto abytes = random_operand(rng, j.batch_stride_a * g.batch, g.in, &av);
    const auto bbytes = random_operand(rng, j.batch_stride_b * g.batch, g.in, &bv);
    dram_write(kA, abytes.data(), abytes.size());
    dram_write(kB, bbytes.data(), bbytes.size());
    const uint32_t eo = type_bytes(g.out);
    std::vector<uint8_t> sentinel((j.batch_stride_o * g.batch + 64) * eo, 0xEE);
    dram_write(kO, sentinel.data(), sentinel.size());
    ASSERT_TRUE(run(j)) << "no end-of-job message";
    const auto ref = reference_gemm(j, av, bv);
    std::vector<uint8_t> got(sentinel.size());
    dram_read(kO, got.data(), got.size());
    std::vector<uint8_t> want(ref.size() * eo);
    convert_output(ref.data(), ref.size(), g.out, want.data());
    for (uint32_t t = 0; t < g.batch; ++t)
      for (uint32_t i = 0; i < g.m; ++i) {
        const uint64_t row = (t * j.batch_stride_o + uint64_t{i} * j.ldo) * eo;
        ASSERT_EQ(0, std::memcmp(got.data() + row, want.data() + (uint64_t{t} * g.m + i) * g.n * eo, g.n * eo))
            << "batch " << t << " row " << i;
        // The row padding is untouched.
        if (i + 1 < g.m) {
          ASSERT_EQ(got[row + g.n * eo], 0xEE);
        }
      }
    const auto stats = jobs();
    ASSERT_FALSE(stats.empty());
    const auto& s = stats.back();
    EXPECT_FALSE(s.faulted);
    EXPECT_TRUE(s.message_sent);
    EXPECT_EQ(s.macs, uint64_t{g.m} * g.n * g.k * g.batch);
    EXPECT_EQ(s.write_bytes, uint64_t{g.m} * g.n * g.batch * eo);
    EXPECT_TRUE(interrupts.empty());
  }
};

// The engine's request size, write window and launch queue come from the preset.
TEST(MmeEngineParams, ComeFromThePreset) {
  const preset::Card card = preset::load_preset(
      "hl205", {"mme.max_request_bytes=512", "mme.max_posted_writes=9", "mme.launch_queue_depth=3",
                "mme.f32_array_cycles_per_k=4"});
  const hw::MmeEngineParams p = hw::mme_engine_params_from(card, 0);
  EXPECT_EQ(p.max_request_bytes, 512u);
  EXPECT_EQ(p.max_posted_writes, 9u);
  EXPECT_EQ(p.launch_queue_depth, 3u);
  EXPECT_EQ(p.f32_array_cycles_per_k, 4u);
  EXPECT_EQ(hw::mme_engine_params_from(preset::load_preset("hl225", {}), 0).f32_array_cycles_per_k, 1u);
}

TEST_F(MmeEngineGemm, Bf16SquareAndOddSizes) {
  build();
  check({64, 128, 64, 1, MmeType::Bf16, MmeType::F32, false, false, 0});
  check({77, 201, 130, 1, MmeType::Bf16, MmeType::Bf16, false, false, 1});
  check({1, 1, 1, 1, MmeType::Bf16, MmeType::F32, false, false, 0});
}

TEST_F(MmeEngineGemm, F32TransposedAndBatched) {
  build();
  check({50, 70, 90, 3, MmeType::F32, MmeType::F32, true, false, 0});
  check({33, 65, 17, 2, MmeType::Bf16, MmeType::F32, false, true, 1});
  check({130, 20, 300, 1, MmeType::F32, MmeType::Bf16, true, true, 0});
}

// Direct convolution references in the implicit GEMM's k order (README.md, "Convolutions").
struct Conv {
  ConvShape s;
  std::vector<float> x, w, y;   // NHWC, RSCK, NPQK
};

float x_at(const Conv& c, int64_t n, int64_t h, int64_t w, int64_t ch) {
  if (h < 0 || w < 0 || h >= c.s.h || w >= c.s.w) return 0.0f;
  return c.x[((n * c.s.h + h) * c.s.w + w) * c.s.c + ch];
}

class MmeEngineConv : public MmeCardTest {
 protected:
  void check(const ConvShape& s, MmeOp op) {
    std::mt19937 rng(s.h * 17 + s.c + static_cast<unsigned>(op));
    Conv c{s, {}, {}, {}};
    const int64_t P = s.out_h(), Q = s.out_w();
    const uint64_t nx = uint64_t{s.n} * s.h * s.w * s.c, nw = uint64_t{s.r} * s.s * s.c * s.k,
                   ny = uint64_t{s.n} * P * Q * s.k;
    std::vector<float> av, bv;
    MmeJob j;
    j.op = op;
    j.conv = s;
    j.in = MmeType::Bf16;
    j.out = MmeType::F32;
    j.a = kA, j.b = kB, j.o = kO;
    const uint64_t na = op == MmeOp::ConvBackwardData ? ny : nx, nb = op == MmeOp::ConvBackwardWeight ? ny : nw;
    const auto abytes = random_operand(rng, na, j.in, &av), bbytes = random_operand(rng, nb, j.in, &bv);
    dram_write(kA, abytes.data(), abytes.size());
    dram_write(kB, bbytes.data(), bbytes.size());
    ASSERT_TRUE(run(j));
    std::vector<float> want;
    if (op == MmeOp::ConvForward) {
      c.x = av, c.w = bv;
      for (uint32_t n = 0; n < s.n; ++n)
        for (int64_t p = 0; p < P; ++p)
          for (int64_t q = 0; q < Q; ++q)
            for (uint32_t k = 0; k < s.k; ++k) {
              float acc = 0.0f;
              for (uint32_t r = 0; r < s.r; ++r)
                for (uint32_t t = 0; t < s.s; ++t)
                  for (uint32_t ch = 0; ch < s.c; ++ch) {
                    const float prod = x_at(c, n, p * s.stride_h - s.pad_h + r * s.dil_h, q * s.stride_w - s.pad_w + t * s.dil_w, ch) *
                                       c.w[((uint64_t{r} * s.s + t) * s.c + ch) * s.k + k];
                    acc = acc + prod;
                  }
              want.push_back(acc);
            }
    } else if (op == MmeOp::ConvBackwardData) {
      c.w = bv;
      for (uint32_t n = 0; n < s.n; ++n)
        for (int64_t h = 0; h < s.h; ++h)
          for (int64_t w = 0; w < s.w; ++w)
            for (uint32_t ch = 0; ch < s.c; ++ch) {
              float acc = 0.0f;
              for (uint32_t r = 0; r < s.r; ++r)
                for (uint32_t t = 0; t < s.s; ++t)
                  for (uint32_t k = 0; k < s.k; ++k) {
                    const int64_t ph = h + s.pad_h - int64_t{r} * s.dil_h, qw = w + s.pad_w - int64_t{t} * s.dil_w;
                    float dy = 0.0f;
                    if (ph >= 0 && qw >= 0 && ph % s.stride_h == 0 && qw % s.stride_w == 0 && ph / s.stride_h < P &&
                        qw / s.stride_w < Q)
                      dy = av[((n * P + ph / s.stride_h) * Q + qw / s.stride_w) * s.k + k];
                    const float prod = dy * c.w[((uint64_t{r} * s.s + t) * s.c + ch) * s.k + k];
                    acc = acc + prod;
                  }
              want.push_back(acc);
            }
    } else {
      c.x = av;
      for (uint32_t r = 0; r < s.r; ++r)
        for (uint32_t t = 0; t < s.s; ++t)
          for (uint32_t ch = 0; ch < s.c; ++ch)
            for (uint32_t k = 0; k < s.k; ++k) {
              float acc = 0.0f;
              for (uint32_t n = 0; n < s.n; ++n)
                for (int64_t p = 0; p < P; ++p)
                  for (int64_t q = 0; q < Q; ++q) {
                    const float prod = x_at(c, n, p * s.stride_h - s.pad_h + r * s.dil_h, q * s.stride_w - s.pad_w + t * s.dil_w, ch) *
                                       bv[((n * P + p) * Q + q) * s.k + k];
                    acc = acc + prod;
                  }
              want.push_back(acc);
            }
    }
    std::vector<float> got(want.size());
    dram_read(kO, got.data(), got.size() * 4);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(f32_bits(got[i]), f32_bits(want[i])) << op_name(op) << " element " << i;
    EXPECT_FALSE(jobs().back().faulted);
  }
};

TEST_F(MmeEngineConv, ForwardBackwardDataAndBackwardWeight) {
  build();
  const ConvShape plain{2, 9, 8, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1};
  const ConvShape strided{1, 11, 10, 3, 4, 3, 2, 2, 3, 1, 0, 1, 2};   // stride 2x3, pad, dilation
  for (const ConvShape& s : {plain, strided}) {
    check(s, MmeOp::ConvForward);
    check(s, MmeOp::ConvBackwardData);
    check(s, MmeOp::ConvBackwardWeight);
  }
}

TEST_F(MmeEngineGemm, CyclesFollowThePlan) {
  build();
  // One tile of the 64 x 128 geometry over K = 256: operands fetched, then the tile's cycles.
  MmeJob j;
  j.m = 64, j.n = 128, j.k = 256, j.lda = 256, j.ldb = 128, j.ldo = 128;
  j.a = kA, j.b = kB, j.o = kO;
  ASSERT_TRUE(run(j));
  const auto one = jobs().back();
  EXPECT_EQ(one.array_cycles, tile_cycles(64, 128, 256));
  EXPECT_GE(one.cycles, one.array_cycles + one.operand_stall_cycles);
  EXPECT_GT(one.operand_stall_cycles, 50u) << "the first operands come from HBM";
  // A large bf16 GEMM is compute bound: the array is busy for the tile steps of every tile.
  MmeJob big = j;
  big.m = 1024, big.n = 1024, big.k = 1024, big.lda = 1024, big.ldb = 1024, big.ldo = 1024;
  ASSERT_TRUE(run(big, 100000));
  const auto s = jobs().back();
  const uint64_t steps = (1024 / 64) * (1024 / 128) * uint64_t{1024};
  EXPECT_EQ(s.array_cycles, steps + tile_cycles(64, 128, 0));
  EXPECT_LT(s.cycles, steps * 11 / 10) << "more than 10% over the compute bound";
  std::cout << "1024^3 bf16 on hl205 MME0: " << s.cycles << " cycles, " << steps << " tile steps, operand stalls "
            << s.operand_stall_cycles << ", super-tile " << s.supertile_rows << "x" << s.supertile_cols << ", kc " << s.kc
            << "\n";
}

// mme.f32_array_cycles_per_k: an f32 job's tile steps take that many array cycles per common-dim
// value (a bf16 job's one); the values are the same, and the roofline's work counts the cycles.
TEST_F(MmeEngineGemm, F32JobsTakeThePresetsArrayCyclesPerCommonDimValue) {
  build({"mme.f32_array_cycles_per_k=4"});
  MmeJob j;
  j.m = 64, j.n = 128, j.k = 256, j.lda = 256, j.ldb = 128, j.ldo = 128;
  j.a = kA, j.b = kB, j.o = kO;
  j.in = MmeType::F32, j.out = MmeType::F32;
  ASSERT_TRUE(run(j));
  const auto f32 = jobs().back();
  EXPECT_EQ(f32.array_cycles, 4 * uint64_t{256} + tile_cycles(64, 128, 0));
  EXPECT_EQ(f32.array_cycles_per_k, 4u);
  j.in = MmeType::Bf16;
  ASSERT_TRUE(run(j));
  const auto bf16 = jobs().back();
  EXPECT_EQ(bf16.array_cycles, tile_cycles(64, 128, 256));
  EXPECT_EQ(bf16.array_cycles_per_k, 1u);
  uint64_t macs = 0, mac_cycles = 0;
  sim->on_sim_thread([&] {
    macs = card->mme_engine(0)->job_totals().macs;
    mac_cycles = card->mme_engine(0)->job_totals().mac_cycles;
  });
  EXPECT_EQ(macs, 2 * uint64_t{64} * 128 * 256);
  EXPECT_EQ(mac_cycles, (4 + 1) * uint64_t{64} * 128 * 256);
  // The values do not depend on the rate: an f32 GEMM checked against the reference.
  check({96, 40, 70, 1, MmeType::F32, MmeType::F32, false, false, 0});
}

TEST_F(MmeEngineGemm, BadDescriptorsAndRefusedOperandsAreErrorEventsAndTheNextJobWorks) {
  build();
  MmeJob bad;
  bad.m = 8, bad.n = 8, bad.k = 8, bad.lda = 4, bad.ldb = 8, bad.ldo = 8;   // lda < K
  bad.a = kA, bad.b = kB, bad.o = kO;
  bad.so_address = sob_address();
  bad.so_message = qman::sob_write_value(1, true);
  // The launch helper refuses it; a hand-built buffer carries it to the engine.
  EXPECT_THROW(build_mme_command_buffer(bad, geometries()), std::invalid_argument);
  qman::CommandBufferBuilder b;
  for (const auto& [offset, value] : encode(bad)) b.wreg32(static_cast<uint16_t>(offset), value);
  b.wreg32(static_cast<uint16_t>(desc::kCmd), desc::kCmdExecute);
  submit_raw(b.take(), 50);
  for (const auto& e : recorder.errors) ADD_FAILURE() << "QMAN error: " << e.second;
  ASSERT_EQ(jobs().size(), 1u);
  EXPECT_TRUE(jobs()[0].faulted);
  EXPECT_EQ(last_fault().error, hw::MmeError::BadDescriptor);
  EXPECT_NE(last_fault().message.find("lda 4 is below A's row length 8"), std::string::npos) << last_fault().message;
  EXPECT_EQ(sob_value(), 0u) << "no message from a failed job";
  ASSERT_EQ(interrupts.size(), 1u);
  const uint32_t status = sim->mmio_read32(cfg(regs::mme_ctrl_base(0) + desc::kArchStatus));
  EXPECT_EQ(status, desc::kStatusIdle | desc::kStatusFaulted);
  EXPECT_EQ(sim->mmio_read32(cfg(regs::mme_ctrl_base(0) + desc::kIntrCause)), 1u << 1);

  // An operand nothing serves.
  MmeJob far = bad;
  far.lda = 8;
  far.a = 0x1000000000ull;   // beyond DRAM, below SRAM
  submit_raw(build_mme_command_buffer(far, geometries()), 50);
  ASSERT_EQ(jobs().size(), 2u);
  EXPECT_EQ(last_fault().error, hw::MmeError::OperandRead);
  EXPECT_NE(last_fault().message.find("operand A read at 0x1000000000 refused"), std::string::npos) << last_fault().message;
  EXPECT_EQ(interrupts.size(), 2u);

  // An output nothing serves: the operands are read, the writes fail.
  std::vector<uint8_t> zeros(1024, 0);
  dram_write(kA, zeros.data(), zeros.size());
  dram_write(kB, zeros.data(), zeros.size());
  MmeJob nowhere = far;
  nowhere.a = kA;
  nowhere.o = 0x1000000000ull;
  submit_raw(build_mme_command_buffer(nowhere, geometries()), 50);
  ASSERT_EQ(jobs().size(), 3u);
  EXPECT_EQ(last_fault().error, hw::MmeError::OutputWrite);
  EXPECT_NE(last_fault().message.find("output write"), std::string::npos) << last_fault().message;
  EXPECT_EQ(interrupts.size(), 3u);
  EXPECT_EQ(sob_value(), 0u);

  // The next good job runs and signals.
  MmeJob good = far;
  good.a = kA;
  ASSERT_TRUE(run(good));
  EXPECT_FALSE(jobs().back().faulted);
  EXPECT_EQ(sim->mmio_read32(cfg(regs::mme_ctrl_base(0) + desc::kArchStatus)), desc::kStatusIdle);
}

}  // namespace
}  // namespace hpusim::testing
