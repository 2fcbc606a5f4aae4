// TPC kernels through the driver API only, the way the runtime launches them
// (gaudi-driver-and-command-submission.md §4.3), in one CS:
//   - an external DMA_0 job brings the kernel binary and the inputs from mapped host memory into
//     DRAM, then adds 1 to the "down" SOB once its DMA engine is idle (EB-barriered MSG_LONG);
//   - one internal chunk per TPC (TPC_n_0), its CB in mapped host memory: a monitor + FENCE on
//     the "down" SOB, then the launch helper's commands (descriptor WREG_32s, TPC_CMD,
//     TPC_EXECUTE; the kernel's end message adds 1 to the "done" SOB);
//   - an external DMA_1 job: a monitor + FENCE until "done" reaches the number of TPCs with work,
//     then the output back to mapped host memory.
// The kernel comes from the Synapse TPC kernel library (add_fwd_f32) as its program file image.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "arch/tpc/asm/assembler.h"
#include "arch/tpc/asm/program.h"
#include "arch/tpc/tpc_launch.h"
#include "synapse/tpc_kernels/kernel_library.h"
#include "tests/driver/driver_fixture.h"

namespace hpusim::driver {
namespace {

namespace tk = hpusim::synapse::tpc_kernels;

// The tensor shape: dim 0 is not a multiple of 64 (the last vector of each row is partly padding);
// dim 1 has at least 8 index-space steps, so all 8 TPCs get a slice.
const std::vector<uint32_t> kShape = {150, 13, 4};
constexpr size_t kCount = 150 * 13 * 4;
constexpr size_t kBytes = kCount * 4;
constexpr unsigned kTpcs = 8;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Finite f32 values over a wide range of magnitudes and both signs, with zeros and denormals.
std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (rng() % 16) {
      case 0: v[i] = 0.0f; break;
      case 1: v[i] = -0.0f; break;
      case 2: v[i] = 1e-39f * mantissa(rng); break;   // denormal
      default: v[i] = std::ldexp(mantissa(rng), exponent(rng)); break;
    }
  }
  return v;
}

class DriverTpcTest : public DriverTest {
 protected:
  unsigned tpcs_ = kTpcs;   // the TPCs a launch is split over

  // add_fwd_f32 on kShape from the kernel library.
  static tk::Instantiation add_kernel() {
    tk::KernelParams p;
    p.inputs = {{tpc::DType::F32, kShape, {}}, {tpc::DType::F32, kShape, {}}};
    p.outputs = {{tpc::DType::F32, kShape, {}}};
    auto r = tk::KernelLibrary::instance().instantiate("add_fwd_f32", p);
    EXPECT_TRUE(r.ok()) << tk::glue_status_name(r.status) << ": " << r.message;
    return *r.inst;
  }
  static std::vector<uint8_t> kernel_image(const tk::Instantiation& inst) { return tpc::program_to_binary(*inst.program); }

  struct Launch {
    std::vector<uint8_t> image;   // the program file image (header + bundles)
    std::vector<float> a, b;      // inputs
    uint64_t c_device = 0;        // where the kernel writes C (0: the DRAM buffer)
    unsigned run = 0;             // selects fresh SOBs and monitors
    uint64_t wait_timeout_us = 10000000;
  };
  struct Result {
    int wait_rc = 0;
    uint32_t status = 99;
    size_t tpcs = 0;              // TPCs with work (command buffers built)
    std::vector<float> c;
  };

  // One CS: DMA-down (DMA_0_0), one internal chunk per TPC, DMA-up (DMA_1_0). See the top.
  Result launch(const tk::Instantiation& inst, const Launch& in) {
    Result out;
    const uint64_t dram = dev->dram_user_base();
    const uint64_t kernel = dram + 0x10000;   // 8 KB aligned; the file header goes just before it
    const uint64_t a_dev = dram + 0x100000, b_dev = dram + 0x200000, c_dev = dram + 0x300000;
    const uint64_t c_kernel = in.c_device != 0 ? in.c_device : c_dev;
    const unsigned sob_down = 256 + 16 * in.run, sob_done = sob_down + 1, mon = 100 + 16 * in.run;

    std::vector<float> c_host(kCount + 16, -7.0f);   // sentinel past the end
    const uint64_t image_va = map(in.image.data(), in.image.size());
    const uint64_t a_va = map(in.a.data(), kBytes), b_va = map(in.b.data(), kBytes);
    const uint64_t c_va = map(c_host.data(), kBytes);

    tpc::TpcLaunchSpec spec;
    spec.kernel_address = kernel;
    spec.tensors = {inst.inputs[0].make(a_dev), inst.inputs[1].make(b_dev), inst.outputs[0].make(c_kernel)};
    spec.srf = inst.srf;
    spec.index_space = inst.ispace_geometry;   // dim 0 in vectors: granule 1
    spec.granule = {1, 1, 1, 1, 1};
    spec.tpcs = tpcs_;
    spec.sob_address = sob_address(sob_done);
    const auto tpc_cbs = tpc::build_tpc_command_buffers(spec);
    out.tpcs = tpc_cbs.size();

    std::vector<hl_cs_chunk> chunks;
    // DMA-up first, then the TPCs, DMA-down last: every consumer is queued before its producer.
    CommandBufferBuilder up;
    wait_for(up, regs::QmanId::DMA1, 0, sob_done, mon + tpcs_, static_cast<uint16_t>(tpc_cbs.size()));
    up.lin_dma(c_dev, c_va, kBytes);
    chunks.push_back(ext(QueueId::DMA_1_0, cb_with(up.bytes()), static_cast<uint32_t>(up.size())));

    std::vector<std::vector<uint8_t>> tpc_bytes;
    std::vector<uint64_t> tpc_vas;
    for (const auto& t : tpc_cbs) {
      CommandBufferBuilder cb;
      wait_for(cb, regs::tpc_qman(t.tpc), 0, sob_down, mon + t.tpc, 1);
      cb.raw(t.bytes.data(), t.bytes.size());
      tpc_bytes.push_back(cb.take());
    }
    for (size_t i = 0; i < tpc_cbs.size(); ++i) {   // (after the vector stopped growing)
      tpc_vas.push_back(map(tpc_bytes[i].data(), tpc_bytes[i].size()));
      const auto queue = regs::make_queue(regs::QueueKind::Tpc, tpc_cbs[i].tpc, 0);
      chunks.push_back(internal(queue, tpc_vas.back(), static_cast<uint32_t>(tpc_bytes[i].size())));
    }

    CommandBufferBuilder down;
    down.lin_dma(image_va, kernel - tpc::kProgramHeaderBytes, static_cast<uint32_t>(in.image.size()))
        .lin_dma(a_va, a_dev, kBytes)
        .lin_dma(b_va, b_dev, kBytes)
        .msg_long(sob_address(sob_down), qman::sob_write_value(1, true), qman::Barriers{true, true, true});
    chunks.push_back(ext(QueueId::DMA_0_0, cb_with(down.bytes()), static_cast<uint32_t>(down.size())));

    uint64_t seq = 0;
    EXPECT_EQ(dev->submit(chunks, &seq), 0);
    out.wait_rc = dev->wait(seq, in.wait_timeout_us, &out.status);
    out.c = c_host;
    for (uint64_t va : tpc_vas) EXPECT_EQ(dev->unmap_host(va), 0);
    for (uint64_t va : {image_va, a_va, b_va, c_va}) EXPECT_EQ(dev->unmap_host(va), 0);
    return out;
  }

  // Checks C = A + B bit for bit and the sentinel past the end.
  static void expect_sum(const Launch& in, const Result& r) {
    ASSERT_EQ(r.c.size(), kCount + 16);
    size_t wrong = 0;
    for (size_t i = 0; i < kCount; ++i) {
      const float expect = in.a[i] + in.b[i];
      if (bits(r.c[i]) != bits(expect) && wrong++ < 5) {
        ADD_FAILURE() << "element " << i << ": got " << r.c[i] << " (0x" << std::hex << bits(r.c[i]) << "), expected "
                      << expect << " (0x" << bits(expect) << ")" << std::dec;
      }
    }
    EXPECT_EQ(wrong, 0u) << "elements that differ";
    for (size_t i = kCount; i < r.c.size(); ++i) ASSERT_EQ(r.c[i], -7.0f) << "written past the output at " << i;
  }

  static Launch good_launch(const tk::Instantiation& inst, unsigned run, uint32_t seed) {
    Launch in;
    in.image = kernel_image(inst);
    in.a = random_floats(kCount, seed);
    in.b = random_floats(kCount, seed + 1000);
    in.run = run;
    return in;
  }

  // A host VA that was mapped and is unmapped again. It is mapped at a hinted VA far above where
  // the launch's own buffers go (the lowest free blocks), so no later MAP in the test reuses it
  // (a reused VA would let the TPCs write into whatever host pages back it then).
  uint64_t stale_va() {
    stale_storage_.assign(kBytes, 0);
    uint64_t va = 0;
    EXPECT_EQ(dev->map_host(stale_storage_.data(), kBytes, &va, 0x1000080000000ull, HL_MEM_FORCE_HINT), 0);
    EXPECT_EQ(dev->unmap_host(va), 0);
    return va;
  }
  std::vector<uint8_t> stale_storage_;
};

TEST_F(DriverTpcTest, AddKernelOnEightTpcsInOneCsWithDmaDownAndUp) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const auto inst = add_kernel();
  // kShape's 7800 dense f32 run as one row: 61 steps of two 64-lane vectors, the last one partial.
  ASSERT_EQ(inst.ispace_geometry[0], 61);
  for (unsigned run = 0; run < 2; ++run) {   // the second run on fresh data, over the first's output
    SCOPED_TRACE("run " + std::to_string(run));
    const Launch in = good_launch(inst, run, 10 + run);
    const Result r = launch(inst, in);
    ASSERT_EQ(r.tpcs, kTpcs);
    ASSERT_EQ(r.wait_rc, 0);
    ASSERT_EQ(r.status, HL_WAIT_CS_STATUS_COMPLETED);
    expect_sum(in, r);
  }
  EXPECT_EQ(log_lines_with("KRN_ERR"), 0u) << log_text();
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

// A kernel whose second bundle is illegal (opcode 200, a Store-slot opcode, in the Load slot):
// every TPC faults, sends no end message, and raises TPCn_KRN_ERR; the driver logs it and clears
// TPC_INTR_CAUSE; the DMA-up job never passes its fence, so the CS times out (TDR), the device is
// reset, and the next correct launch works.
TEST_F(DriverTpcTest, IllegalInstructionIsAKernelErrorAndTheCsTimesOut) {
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const auto inst = add_kernel();

  Launch bad = good_launch(inst, 0, 20);
  tpc::AssembleOptions asm_options;
  const auto nops = tpc::assemble("nop\nnop\nhalt\n", "<nops>", asm_options);
  ASSERT_TRUE(nops.ok()) << nops.error_text();
  bad.image = tpc::program_to_binary(nops.program);
  bad.image[tpc::kProgramHeaderBytes + 32] = 200;   // bundle 1, Load slot opcode
  std::string error;
  ASSERT_FALSE(tpc::program_from_binary(bad.image, &error).has_value()) << "the image should not decode";
  bad.wait_timeout_us = 1000000;
  const Result r = launch(inst, bad);
  EXPECT_EQ(r.tpcs, kTpcs);
  EXPECT_EQ(r.wait_rc, -ETIMEDOUT);
  EXPECT_EQ(r.status, HL_WAIT_CS_STATUS_TIMEDOUT);
  for (unsigned t = 0; t < kTpcs; ++t) {
    const std::string line = "TPC" + std::to_string(t) + " kernel error (TPC" + std::to_string(t) +
                             "_KRN_ERR): TPC_INTR_CAUSE 0x2";   // bit 1: illegal instruction
    EXPECT_EQ(log_lines_with(line), 1u) << line << "\n" << log_text();
  }
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);

  const Launch good = good_launch(inst, 1, 21);
  const Result ok = launch(inst, good);
  ASSERT_EQ(ok.wait_rc, 0);
  ASSERT_EQ(ok.status, HL_WAIT_CS_STATUS_COMPLETED);
  expect_sum(good, ok);
  EXPECT_EQ(log_lines_with("KRN_ERR"), kTpcs) << "no new kernel error";
  EXPECT_EQ(dev->close(), 0);
}

// On a card past Gaudi 1's engine map (hl325: 64 TPCs) the same launch runs on TPCs the map
// extends (TPC8 and up, their QMANs and CFG blocks in the debug half of the CFG window), and a
// kernel error there reaches the driver through the extension's TPCn_KRN_ERR event.
TEST_F(DriverTpcTest, KernelsRunAndFaultOnTheTpcsPastGaudi1s) {
  platform::PlatformOptions platform;
  platform.preset = "hl325";
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options, platform);
  tpcs_ = 64;
  ASSERT_EQ(dev->open(), 0);
  const auto inst = add_kernel();
  const Launch in = good_launch(inst, 0, 30);
  const Result r = launch(inst, in);
  ASSERT_EQ(r.tpcs, 61u);   // kShape as one run: 61 steps, TPC0..60
  ASSERT_EQ(r.wait_rc, 0);
  ASSERT_EQ(r.status, HL_WAIT_CS_STATUS_COMPLETED);
  expect_sum(in, r);

  Launch bad = good_launch(inst, 1, 31);
  const auto nops = tpc::assemble("nop\nnop\nhalt\n", "<nops>", tpc::AssembleOptions{});
  ASSERT_TRUE(nops.ok()) << nops.error_text();
  bad.image = tpc::program_to_binary(nops.program);
  bad.image[tpc::kProgramHeaderBytes + 32] = 200;   // bundle 1, Load slot opcode: illegal
  bad.wait_timeout_us = 1000000;
  EXPECT_EQ(launch(inst, bad).wait_rc, -ETIMEDOUT);
  for (unsigned t = 0; t < 61; ++t) {
    const std::string line = "TPC" + std::to_string(t) + " kernel error (TPC" + std::to_string(t) + "_KRN_ERR)";
    EXPECT_EQ(log_lines_with(line), 1u) << line << "\n" << log_text();
  }
  EXPECT_EQ(dev->close(), 0);
}

// The output tensor at a host VA that is no longer mapped: every TPC's first store faults with a
// global-access error (TPC_INTR_CAUSE bit 3), the driver logs TPCn_KRN_ERR, the CS times out, and
// the next correct launch works.
TEST_F(DriverTpcTest, OutputAtAnUnmappedAddressIsAKernelErrorAndTheCsTimesOut) {
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const auto inst = add_kernel();

  Launch bad = good_launch(inst, 0, 30);
  bad.c_device = stale_va();
  bad.wait_timeout_us = 1000000;
  const Result r = launch(inst, bad);
  EXPECT_EQ(r.tpcs, kTpcs);
  EXPECT_EQ(r.wait_rc, -ETIMEDOUT);
  EXPECT_EQ(r.status, HL_WAIT_CS_STATUS_TIMEDOUT);
  for (unsigned t = 0; t < kTpcs; ++t) {
    const std::string line = "TPC" + std::to_string(t) + " kernel error (TPC" + std::to_string(t) +
                             "_KRN_ERR): TPC_INTR_CAUSE 0x8";   // bit 3: global access
    EXPECT_EQ(log_lines_with(line), 1u) << line << "\n" << log_text();
  }
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);

  const Launch good = good_launch(inst, 1, 31);
  const Result ok = launch(inst, good);
  ASSERT_EQ(ok.wait_rc, 0);
  ASSERT_EQ(ok.status, HL_WAIT_CS_STATUS_COMPLETED);
  expect_sum(good, ok);
  EXPECT_EQ(dev->close(), 0);
}

// A TPC access to an unmapped VA is reported by the MMU like any engine's: an MMU_PAGE_FAULT event
// naming the VA and the TPC (engine id TPC_n = 12 + n). The capture register keeps the first fault
// until the driver clears it, so with eight TPCs faulting at once at least one is named.
TEST_F(DriverTpcTest, TpcAccessToAnUnmappedAddressIsAnMmuPageFault) {
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const auto inst = add_kernel();
  Launch bad = good_launch(inst, 0, 40);
  const uint64_t stale = stale_va();
  bad.c_device = stale;
  bad.wait_timeout_us = 1000000;
  EXPECT_EQ(launch(inst, bad).wait_rc, -ETIMEDOUT);
  EXPECT_EQ(log_lines_with("KRN_ERR"), kTpcs);   // the kernels did fault
  EXPECT_GE(dev->page_faults(), 1u);
  EXPECT_GE(log_lines_with("MMU page fault on va"), 1u) << log_text();
  const auto fault = info<hl_page_fault_info>(HL_INFO_PAGE_FAULT_EVENT);
  EXPECT_GE(fault.addr, stale & ~(kPage - 1));
  EXPECT_LT(fault.addr, stale + kBytes);
  EXPECT_GE(fault.engine_id, 12u);               // GAUDI_ENGINE_ID_TPC_0
  EXPECT_LT(fault.engine_id, 12u + kTpcs);
  EXPECT_EQ(dev->close(), 0);
}

}  // namespace
}  // namespace hpusim::driver
