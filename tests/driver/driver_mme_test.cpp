// MME jobs through the driver API only, the way a runtime launches them, in one CS:
//   - an external DMA_0 job brings A and B from mapped host memory into DRAM, then adds 1 to the
//     "down" SOB once its DMA engine is idle;
//   - an internal MME_1_0 job (queue group 1 is MME0's QMAN), its CB in mapped host memory: a
//     monitor + FENCE on "down", then the launch helper's commands (descriptor WREG_32s, CMD
//     EXECUTE; the job's end message adds 1 to the "done" SOB);
//   - an external DMA_1 job: a monitor + FENCE on "done", then O back to mapped host memory.
// And a bad descriptor: the MME's error event, logged and cleared by the driver, no message, so
// the CS times out; after the reset the next job works.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "hw/mme/mme_compute.h"
#include "arch/mme/mme_launch.h"
#include "tests/driver/driver_fixture.h"

namespace hpusim::driver {
namespace {

constexpr uint32_t kM = 96, kN = 160, kK = 200;   // not multiples of the 64 x 128 tile

class DriverMmeTest : public DriverTest {
 protected:
  struct Result {
    int wait_rc = 0;
    uint32_t status = 99;
    std::vector<float> o;
  };

  // C = A B (bf16 in, f32 out) on MME0 in one CS; `corrupt` makes the descriptor's lda too small.
  Result gemm(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, unsigned run, bool corrupt = false) {
    const uint64_t dram = dev->dram_user_base();
    const uint64_t a_dev = dram + 0x100000, b_dev = dram + 0x200000, o_dev = dram + 0x300000;
    const unsigned sob_down = 400 + 8 * run, sob_done = sob_down + 1, mon = 200 + 8 * run;
    Result out;
    out.o.assign(uint64_t{kM} * kN + 16, -7.0f);
    const uint64_t a_va = map(a.data(), a.size() * 2), b_va = map(b.data(), b.size() * 2);
    const uint64_t o_va = map(out.o.data(), uint64_t{kM} * kN * 4);

    mme::MmeJob job;
    job.m = kM, job.n = kN, job.k = kK, job.lda = kK, job.ldb = kN, job.ldo = kN;
    job.a = a_dev, job.b = b_dev, job.o = o_dev;
    job.so_address = sob_address(sob_done);
    job.so_message = qman::sob_write_value(1, true);
    CommandBufferBuilder mme;
    wait_for(mme, regs::QmanId::MME0, 0, sob_down, mon, 1);
    if (corrupt) {
      job.lda = kK / 2;
      for (const auto& [offset, value] : mme::encode(job)) mme.wreg32(static_cast<uint16_t>(offset), value);
      mme.wreg32(static_cast<uint16_t>(mme::desc::kCmd), mme::desc::kCmdExecute);
    } else {
      const auto cb = mme::build_mme_command_buffer(job, 2);
      mme.raw(cb.data(), cb.size());
    }
    const std::vector<uint8_t> mme_bytes = mme.take();
    const uint64_t mme_va = map(mme_bytes.data(), mme_bytes.size());

    std::vector<hl_cs_chunk> chunks;
    CommandBufferBuilder up;
    wait_for(up, regs::QmanId::DMA1, 0, sob_done, mon + 1, 1);
    up.lin_dma(o_dev, o_va, kM * kN * 4);
    chunks.push_back(ext(QueueId::DMA_1_0, cb_with(up.bytes()), static_cast<uint32_t>(up.size())));
    chunks.push_back(internal(QueueId::MME_1_0, mme_va, static_cast<uint32_t>(mme_bytes.size())));
    CommandBufferBuilder down;
    down.lin_dma(a_va, a_dev, static_cast<uint32_t>(a.size() * 2))
        .lin_dma(b_va, b_dev, static_cast<uint32_t>(b.size() * 2))
        .msg_long(sob_address(sob_down), qman::sob_write_value(1, true), qman::Barriers{true, true, true});
    chunks.push_back(ext(QueueId::DMA_0_0, cb_with(down.bytes()), static_cast<uint32_t>(down.size())));

    uint64_t seq = 0;
    EXPECT_EQ(dev->submit(chunks, &seq), 0);
    out.wait_rc = dev->wait(seq, 2000000, &out.status);
    for (uint64_t va : {a_va, b_va, o_va, mme_va}) EXPECT_EQ(dev->unmap_host(va), 0);
    return out;
  }

  static std::vector<uint16_t> random_bf16(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = mme::f32_to_bf16(d(rng));
    return v;
  }

  static void expect_product(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, const Result& r) {
    std::vector<float> af(a.size()), bf(b.size()), ref(uint64_t{kM} * kN);
    for (size_t i = 0; i < a.size(); ++i) af[i] = mme::bf16_to_f32(a[i]);
    for (size_t i = 0; i < b.size(); ++i) bf[i] = mme::bf16_to_f32(b[i]);
    mme::gemm_f32_reference(af.data(), kK, bf.data(), kN, ref.data(), kN, kM, kN, kK);
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(mme::f32_bits(r.o[i]), mme::f32_bits(ref[i])) << "element " << i;
    }
    for (size_t i = ref.size(); i < r.o.size(); ++i) ASSERT_EQ(r.o[i], -7.0f) << "written past the output";
  }
};

TEST_F(DriverMmeTest, GemmThroughTheMmeQueueInOneCsWithDmaDownAndUp) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const auto a = random_bf16(uint64_t{kM} * kK, 1), b = random_bf16(uint64_t{kK} * kN, 2);
  const Result r = gemm(a, b, 0);
  ASSERT_EQ(r.wait_rc, 0);
  ASSERT_EQ(r.status, HL_WAIT_CS_STATUS_COMPLETED);
  expect_product(a, b, r);
  EXPECT_EQ(log_lines_with("MME0"), 0u) << log_text();
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverMmeTest, BadDescriptorIsAnErrorEventTheCsTimesOutAndTheNextJobWorks) {
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const auto a = random_bf16(uint64_t{kM} * kK, 3), b = random_bf16(uint64_t{kK} * kN, 4);
  const Result bad = gemm(a, b, 0, true);
  EXPECT_EQ(bad.wait_rc, -ETIMEDOUT);
  EXPECT_EQ(log_lines_with("MME0 job error (MME0_ERR): INTR_CAUSE 0x2"), 1u) << log_text();
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  const Result good = gemm(a, b, 1);
  ASSERT_EQ(good.wait_rc, 0);
  ASSERT_EQ(good.status, HL_WAIT_CS_STATUS_COMPLETED);
  expect_product(a, b, good);
  EXPECT_EQ(dev->close(), 0);
}

}  // namespace
}  // namespace hpusim::driver
