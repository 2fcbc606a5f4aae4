// The TPC core on a whole card: kernels assembled, placed in DRAM and launched through the TPC
// QMANs with command buffers from the launch helper; results against C++ references, the
// end-of-kernel sync-object message, faults, cycle counts and the instruction cache.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "arch/cpucp/cpucp.h"
#include "arch/regs/gaudi1_map.h"
#include "arch/tpc/asm/assembler.h"
#include "hw/tpc/tpc_core.h"
#include "arch/tpc/tpc_launch.h"
#include "tests/qman/qman_fixture.h"

namespace hpusim::testing {
namespace {

using regs::QmanId;

constexpr uint64_t kKernel = 0x20000000;     // DRAM: programs
constexpr uint64_t kKernel2 = 0x20010000;
constexpr uint64_t kData = 0x20100000;       // DRAM: tensors
constexpr uint64_t kUnmapped = 0x1000000000;  // beyond DRAM, below SRAM: no target
constexpr unsigned kSob = 300;

class TpcCardTest : public CardTest, public hw::InterruptTarget {
 protected:
  // The cores' error interrupts, as a GIC would receive them (line = TPC number).
  void raise_interrupt(uint32_t line, hw::Picoseconds at) override { interrupts.push_back({line, at}); }
  void SetUp() override {
    CardTest::SetUp();
    sim->on_sim_thread([&] {
      for (unsigned n = 0; n < 8; ++n) {
        hw::TpcCore* core = card->tpc_core(n);
        if (core == nullptr) continue;
        core->interrupt().bind(*this, n);
      }
    });
  }

  tpc::Program assemble(const std::string& text) {
    tpc::AssembleOptions options;
    options.include_dirs.push_back(std::string(HPUSIM_SOURCE_DIR) + "/tests/tpc/kernels");
    auto result = tpc::assemble(text, "<test>", options);
    EXPECT_TRUE(result.ok()) << result.error_text();
    return result.program;
  }
  tpc::Program assemble_kernel_file(const std::string& name) {
    auto result = tpc::assemble_file(std::string(HPUSIM_SOURCE_DIR) + "/tests/tpc/kernels/" + name);
    EXPECT_TRUE(result.ok()) << result.error_text();
    return result.program;
  }
  void place(const tpc::Program& program, uint64_t address) {
    std::vector<uint8_t> bytes;
    for (const tpc::Bundle& b : program.bundles) {
      const auto e = tpc::encode(b);
      bytes.insert(bytes.end(), e.begin(), e.end());
    }
    dram_write(address, bytes.data(), bytes.size());
  }
  uint64_t sob_address(unsigned sob = kSob) const { return cfg(regs::sm_sob(regs::SyncManager::E_N, sob)); }
  uint32_t sob_value(unsigned sob = kSob) { return sim->mmio_read32(sob_address(sob)); }

  // Submits every TPC's command buffer on stream 0 of its QMAN; returns how many TPCs run.
  size_t launch(const tpc::TpcLaunchSpec& spec) {
    const auto cbs = tpc::build_tpc_command_buffers(spec);
    for (const auto& cb : cbs) {
      const QmanId q = regs::tpc_qman(cb.tpc);
      if (opened_.insert(cb.tpc).second) open_stream(q, 0);
      submit(q, 0, cb.bytes);
    }
    return cbs.size();
  }
  // Runs the device until the SOB reaches `value` (or `limit_us` of device time pass).
  bool wait_sob(uint32_t value, uint64_t limit_us = 5000, unsigned sob = kSob) {
    for (uint64_t t = 0; t < limit_us; t += 5) {
      if (sob_value(sob) >= value) return true;
      sim->charge_ns(5000);
    }
    return sob_value(sob) >= value;
  }
  // Runs until TPC `n` has finished `kernels` kernels.
  bool wait_kernels(unsigned n, size_t kernels, uint64_t limit_us = 5000) {
    for (uint64_t t = 0; t < limit_us; t += 5) {
      if (kernels_run(n) >= kernels) return true;
      sim->charge_ns(5000);
      sim->sync_device();
    }
    return kernel_stats(n).size() >= kernels;
  }
  uint64_t kernels_run(unsigned n) {
    return sim->on_sim_thread([&] { return card->tpc_core(n)->kernel_totals().kernels; });
  }
  std::vector<hw::TpcKernelStats> kernel_stats(unsigned n) {
    return sim->on_sim_thread([&] {
      const auto& kernels = card->tpc_core(n)->kernels();
      return std::vector<hw::TpcKernelStats>(kernels.begin(), kernels.end());
    });
  }
  hw::TpcFaultRecord last_fault(unsigned n) {
    return sim->on_sim_thread([&] { return card->tpc_core(n)->last_fault(); });
  }
  uint32_t tpc_read(unsigned n, uint32_t offset) { return sim->mmio_read32(cfg(regs::tpc_cfg_base(n) + offset)); }

  static tpc::TensorDescriptor tensor(uint64_t base, std::vector<uint32_t> sizes, std::vector<int64_t> strides = {}) {
    tpc::TensorDescriptor d;
    d.base = base;
    d.dtype = tpc::DType::F32;
    d.dims = static_cast<uint8_t>(sizes.size());
    int64_t stride = 1;
    for (unsigned k = 0; k < tpc::kDims; ++k) {
      d.size[k] = k < sizes.size() ? sizes[k] : 1;
      d.stride[k] = k < strides.size() ? strides[k] : stride;
      stride = d.stride[k] * d.size[k];
    }
    return d;
  }

  struct Interrupt {
    unsigned tpc;
    hw::Picoseconds at;
  };
  std::vector<Interrupt> interrupts;

 private:
  std::set<unsigned> opened_;
};

// C[i] = A[i] * S0 + B[i] over this core's slice of dim 0 (one f32 vector per step).
const char* kAxpy = R"(
        ispace_offset I0
        ispace_size I1
        iget_dim S20, I0 dim=0
        iget_dim S21, I1 dim=0
        add.i32 S21, S21, S20
        imov I2, 0
        loop S20, S21, end step=64
        imov_dim I2, S20 dim=0
        ld_tnsr V1, I2, 0
        ld_tnsr V2, I2, 1
        mul.f32 V3, V1, S0
        add.f32 V4, V3, V2
end:    st_tnsr I2, 2, V4
        halt
)";

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>(i % 1000) - 0.25f * static_cast<float>(i % 7);
  return v;
}

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST_F(TpcCardTest, AxpyKernelOnOneTpcThroughItsQman) {
  const size_t n = 1000;   // not a multiple of 64: the last vector is partly padding
  place(assemble(kAxpy), kKernel);
  const auto a = ramp(n, 0.5f, 1.0f), b = ramp(n, -0.125f, 3.0f);
  dram_write(kData, a.data(), n * 4);
  dram_write(kData + 0x10000, b.data(), n * 4);
  std::vector<float> sentinel(n + 64, -7.0f);
  dram_write(kData + 0x20000, sentinel.data(), sentinel.size() * 4);

  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.tensors = {tensor(kData, {n}), tensor(kData + 0x10000, {n}), tensor(kData + 0x20000, {n})};
  spec.srf[0] = f32_bits(1.5f);
  spec.index_space = {static_cast<int32_t>(n), 1, 1, 1, 1};
  spec.granule = {64, 1, 1, 1, 1};
  spec.tpcs = 1;
  spec.sob_address = sob_address();
  ASSERT_EQ(launch(spec), 1u);
  ASSERT_TRUE(wait_sob(1));

  std::vector<float> c(n + 64);
  dram_read(kData + 0x20000, c.data(), c.size() * 4);
  for (size_t i = 0; i < n; ++i) {
    const float expect = a[i] * 1.5f + b[i];   // mul then add, each rounded (no FMA)
    ASSERT_EQ(f32_bits(c[i]), f32_bits(expect)) << i;
  }
  for (size_t i = n; i < n + 64; ++i) ASSERT_EQ(c[i], -7.0f) << "written past the tensor at " << i;
  EXPECT_EQ(sob_value(), 1u);
  const auto stats = kernel_stats(0);
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_FALSE(stats[0].faulted);
  EXPECT_TRUE(stats[0].message_sent);
  EXPECT_EQ(stats[0].loads, 2u * 16);
  EXPECT_EQ(stats[0].stores, 16u);
  EXPECT_EQ(tpc_read(0, regs::tpc_cfg::kStatus) & regs::tpc_status::kIdleMask, regs::tpc_status::kIdleMask);
  // The QM set was latched into the KERNEL set.
  EXPECT_EQ(tpc_read(0, regs::tpc_cfg::kKernelKernelBaseAddressLow), static_cast<uint32_t>(kKernel));
  EXPECT_EQ(tpc_read(0, regs::tpc_cfg::kernel_srf(0)), f32_bits(1.5f));
  EXPECT_TRUE(interrupts.empty());
  EXPECT_TRUE(recorder.errors.empty());
}

TEST_F(TpcCardTest, EltwiseAdd3dOverAllEightTpcs) {
  // 3-D f32 tensors of 200 x 11 x 3; C has padded rows (stride 256) and planes.
  const uint32_t w = 200, h = 11, d = 3;
  const size_t count = size_t{w} * h * d;
  place(assemble_kernel_file("eltwise_add.s"), kKernel);
  const auto a = ramp(count, 0.75f, -2.0f), b = ramp(count, 0.0625f, 5.5f);
  const uint64_t ta = kData, tb = kData + 0x100000, tcc = kData + 0x200000;
  dram_write(ta, a.data(), count * 4);
  dram_write(tb, b.data(), count * 4);
  const int64_t c_row = 256, c_plane = 256 * 12;
  std::vector<float> sentinel(size_t(c_plane) * d, -1.0f);
  dram_write(tcc, sentinel.data(), sentinel.size() * 4);

  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.tensors = {tensor(ta, {w, h, d}), tensor(tb, {w, h, d}), tensor(tcc, {w, h, d}, {1, c_row, c_plane})};
  spec.index_space = {static_cast<int32_t>(w), static_cast<int32_t>(h), static_cast<int32_t>(d), 1, 1};
  spec.granule = {64, 1, 1, 1, 1};
  spec.tpcs = 8;
  spec.sob_address = sob_address();
  ASSERT_EQ(launch(spec), 8u);
  ASSERT_TRUE(wait_sob(8));

  std::vector<float> c(sentinel.size());
  dram_read(tcc, c.data(), c.size() * 4);
  for (uint32_t z = 0; z < d; ++z) {
    for (uint32_t y = 0; y < 12; ++y) {
      for (uint32_t x = 0; x < 256; ++x) {
        const float got = c[size_t(z) * c_plane + size_t(y) * c_row + x];
        if (x < w && y < h) {
          const size_t i = (size_t(z) * h + y) * w + x;
          ASSERT_EQ(f32_bits(got), f32_bits(a[i] + b[i])) << x << "," << y << "," << z;
        } else {
          ASSERT_EQ(got, -1.0f) << "outside the tensor at " << x << "," << y << "," << z;
        }
      }
    }
  }
  for (unsigned n = 0; n < 8; ++n) {
    const auto stats = kernel_stats(n);
    ASSERT_EQ(stats.size(), 1u) << n;
    EXPECT_GT(stats[0].stores, 0u) << n;
  }
  EXPECT_EQ(sob_value(), 8u);
  EXPECT_TRUE(recorder.errors.empty());
}

TEST_F(TpcCardTest, FaultsRaiseTheInterruptSendNoMessageAndTheNextLaunchWorks) {
  const size_t n = 128;
  // 1. An illegal instruction: opcode 200 (a Store-slot opcode) in the Load slot of bundle 1.
  std::vector<uint8_t> bad(64, 0);
  bad[32] = 200;
  dram_write(kKernel2, bad.data(), bad.size());
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel2;
  spec.tensors = {tensor(kData, {n}), tensor(kData + 0x10000, {n}), tensor(kData + 0x20000, {n})};
  spec.index_space = {static_cast<int32_t>(n), 1, 1, 1, 1};
  spec.granule = {64, 1, 1, 1, 1};
  spec.sob_address = sob_address();
  launch(spec);
  ASSERT_TRUE(wait_kernels(0, 1));
  auto fault = last_fault(0);
  EXPECT_EQ(fault.kind, tpc::FaultKind::IllegalInstruction);
  EXPECT_EQ(fault.pc, 1u);
  EXPECT_NE(fault.message.find("Load slot"), std::string::npos) << fault.message;
  ASSERT_EQ(interrupts.size(), 1u);
  EXPECT_EQ(interrupts[0].tpc, 0u);
  EXPECT_NE(tpc_read(0, regs::tpc_cfg::kStatus) & regs::tpc_status::kFaulted, 0u);
  EXPECT_EQ(tpc_read(0, regs::tpc_cfg::kTpcIntrCause),
            1u << static_cast<unsigned>(tpc::FaultKind::IllegalInstruction));
  sim->charge_ns(5000);
  EXPECT_EQ(sob_value(), 0u) << "a faulting kernel sends no completion message";

  // 2. A bad address: tensor A points where no memory is.
  place(assemble(kAxpy), kKernel);
  spec.kernel_address = kKernel;
  spec.tensors[0].base = kUnmapped;
  launch(spec);
  ASSERT_TRUE(wait_kernels(0, 2));
  fault = last_fault(0);
  EXPECT_EQ(fault.kind, tpc::FaultKind::GlobalAccess);
  EXPECT_EQ(fault.pc, 8u);   // the first ld_tnsr
  ASSERT_EQ(interrupts.size(), 2u);
  sim->charge_ns(5000);
  EXPECT_EQ(sob_value(), 0u);

  // 3. The next launch works (and clears the fault status bit).
  std::vector<float> a(n, 2.0f), b(n, 0.5f);
  dram_write(kData, a.data(), n * 4);
  dram_write(kData + 0x10000, b.data(), n * 4);
  spec.tensors[0].base = kData;
  spec.srf[0] = f32_bits(3.0f);
  launch(spec);
  ASSERT_TRUE(wait_sob(1));
  std::vector<float> c(n);
  dram_read(kData + 0x20000, c.data(), n * 4);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], 6.5f) << i;
  EXPECT_EQ(tpc_read(0, regs::tpc_cfg::kStatus) & regs::tpc_status::kFaulted, 0u);
  EXPECT_EQ(interrupts.size(), 2u);
  const auto stats = kernel_stats(0);
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_TRUE(stats[0].faulted);
  EXPECT_TRUE(stats[1].faulted);
  EXPECT_FALSE(stats[2].faulted);
}

TEST_F(TpcCardTest, SeveralPartitionsPerTpcSignalTheSobOncePerTpc) {
  const size_t n = 1000;
  place(assemble(kAxpy), kKernel);
  const auto a = ramp(n, 0.5f, 1.0f), b = ramp(n, -0.125f, 3.0f);
  dram_write(kData, a.data(), n * 4);
  dram_write(kData + 0x10000, b.data(), n * 4);
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.tensors = {tensor(kData, {n}), tensor(kData + 0x10000, {n}), tensor(kData + 0x20000, {n})};
  spec.srf[0] = f32_bits(-2.0f);
  spec.index_space = {static_cast<int32_t>(n), 1, 1, 1, 1};
  spec.granule = {64, 1, 1, 1, 1};
  spec.tpcs = 2;
  spec.partitions_per_tpc = 3;
  spec.sob_address = sob_address();
  ASSERT_EQ(launch(spec), 2u);
  ASSERT_TRUE(wait_sob(2));
  ASSERT_TRUE(wait_kernels(0, 3));
  ASSERT_TRUE(wait_kernels(1, 3));
  std::vector<float> c(n);
  dram_read(kData + 0x20000, c.data(), n * 4);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(f32_bits(c[i]), f32_bits(a[i] * -2.0f + b[i])) << i;
  sim->charge_ns(5000);
  EXPECT_EQ(sob_value(), 2u);
  for (unsigned t = 0; t < 2; ++t) {
    const auto stats = kernel_stats(t);
    ASSERT_EQ(stats.size(), 3u);
    for (const auto& k : stats) EXPECT_TRUE(k.message_sent);   // ADD 0, ADD 0, ADD 1
  }
  EXPECT_TRUE(recorder.errors.empty());
}

// A core keeps the last kKernelHistory kernels and sums over all of them: a long run does not
// grow its memory, and the totals still count every kernel.
TEST_F(TpcCardTest, KernelHistoryIsBoundedAndTheTotalsCountEveryKernel) {
  const size_t n = 64 * 1100;
  place(assemble(kAxpy), kKernel);
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.tensors = {tensor(kData, {n}), tensor(kData + 0x100000, {n}), tensor(kData + 0x200000, {n})};
  spec.index_space = {static_cast<int32_t>(n), 1, 1, 1, 1};
  spec.granule = {64, 1, 1, 1, 1};
  spec.tpcs = 1;
  spec.partitions_per_tpc = 1100;   // 1100 kernels of one vector step each
  spec.sob_address = sob_address();
  ASSERT_EQ(launch(spec), 1u);
  ASSERT_TRUE(wait_kernels(0, 1100, 100000));
  const auto history = kernel_stats(0);
  EXPECT_EQ(history.size(), hw::TpcCore::kKernelHistory);
  EXPECT_EQ(history.back().kernel, 1100u);
  const hw::TpcKernelTotals totals = sim->on_sim_thread([&] { return card->tpc_core(0)->kernel_totals(); });
  EXPECT_EQ(totals.kernels, 1100u);
  uint64_t bundles_kept = 0;
  for (const auto& k : history) bundles_kept += k.bundles;
  EXPECT_EQ(totals.bundles, bundles_kept / history.size() * 1100);   // every kernel runs the same bundles
  EXPECT_EQ(sim->on_sim_thread([&] { return card->tpc_core(0)->kernel(1) == nullptr; }), true);
  EXPECT_EQ(sim->on_sim_thread([&] { return card->tpc_core(0)->kernel(1100)->kernel; }), 1100u);
}

TEST(TpcLaunch, PartitionsTheOutermostLargeEnoughDimension) {
  tpc::TpcLaunchSpec spec;
  spec.index_space = {200, 11, 3, 1, 1};
  spec.granule = {64, 1, 1, 1, 1};
  spec.tpcs = 8;
  auto parts = tpc::partition_index_space(spec);
  ASSERT_EQ(parts.size(), 8u);
  int32_t next = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    EXPECT_EQ(parts[p].offset[1], next);
    EXPECT_EQ(parts[p].size[1], p < 3 ? 2 : 1);   // 11 = 3 x 2 + 5 x 1
    EXPECT_EQ(parts[p].size[0], 200);
    EXPECT_EQ(parts[p].size[2], 3);
    next += parts[p].size[1];
  }
  // Dim 0 in granules: 200 / 64 -> 4 granules, the last one partial.
  spec.index_space = {200, 1, 1, 1, 1};
  spec.tpcs = 3;
  parts = tpc::partition_index_space(spec);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].offset[0], 0);
  EXPECT_EQ(parts[0].size[0], 128);
  EXPECT_EQ(parts[1].offset[0], 128);
  EXPECT_EQ(parts[1].size[0], 64);
  EXPECT_EQ(parts[2].offset[0], 192);
  EXPECT_EQ(parts[2].size[0], 8);
  // Too small for the TPCs: one granule each, fewer partitions.
  spec.tpcs = 8;
  EXPECT_EQ(tpc::partition_index_space(spec).size(), 4u);
  EXPECT_EQ(tpc::build_tpc_command_buffers(spec).size(), 4u);
  spec.tpcs = 0;
  EXPECT_THROW(tpc::partition_index_space(spec), std::invalid_argument);
}

TEST(TpcLaunch, DescriptorWordsHoldTheFields) {
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = 0x123456780ull;
  tpc::TensorDescriptor d;
  d.base = 0x7FF0001000ull;
  d.dtype = tpc::DType::BF16;
  d.dims = 3;
  d.size = {100, 7, 2, 1, 1};
  d.stride = {1, 128, 1024, 2048, 2048};
  d.padding = 0x3F80;
  spec.tensors = {d};
  spec.srf[5] = 77;
  spec.sob_address = 0x7FFC4A2000ull;
  tpc::IndexRange r;
  r.offset = {0, 3, 0, 0, 0};
  r.size = {100, 2, 2, 1, 1};
  const auto w = tpc::tpc_descriptor_words(spec, r, 0x80000001u);
  namespace tc = regs::tpc_cfg;
  EXPECT_EQ(w[tc::kTensorConfig / 4], regs::tpc_tensor_config::make(tpc::DType::BF16, 3));
  EXPECT_EQ(w[tc::kTensorConfig / 4], 0x20701u);   // dtype 1, dims 0..2 valid, last_dim 2
  EXPECT_EQ(w[tc::kDescSyncObjectMessage / 4], 0x80000001u);
  EXPECT_EQ(w[tc::kDescSyncObjectAddr / 4], 0xFC4A2000u);
  EXPECT_EQ(w[tc::kDescKernelBaseAddressHigh / 4], 1u);
  EXPECT_EQ(w[tc::desc_tid_base_dim(1) / 4], 3u);
  EXPECT_EQ(w[tc::desc_srf(5) / 4], 77u);
}

TEST(TpcEvents, KernelErrorsAreHardwareErrorSpis) {
  namespace ev = fw_if::event;
  for (unsigned n = 0; n < 8; ++n) {
    EXPECT_EQ(ev::tpc_krn_err(n), 301u + 6 * n);
    EXPECT_EQ(ev::tpc_of_krn_err(ev::tpc_krn_err(n)), static_cast<int>(n));
    const auto meaning = fw_if::decode_spi(ev::spi_of(ev::tpc_krn_err(n)));
    EXPECT_EQ(meaning.kind, fw_if::SpiKind::kHwError);
    EXPECT_EQ(meaning.event_type, ev::tpc_krn_err(n));
    EXPECT_EQ(meaning.engine_id, static_cast<int>(12 + n));
    EXPECT_EQ(ev::name(ev::tpc_krn_err(n)), "TPC" + std::to_string(n) + "_KRN_ERR");
  }
  EXPECT_EQ(ev::tpc_of_krn_err(302), -1);
}

// N macs in a loop body of four independent accumulators (dependency distance 4 = vpu_latency),
// or one accumulator (each mac waits for the previous one).
std::string mac_loop(unsigned body, uint32_t iterations) {
  std::string s = "        ld_smov S1, 0\n        mov S2, " + std::to_string(iterations) +
                  "\n        loop S1, S2, end\n";
  for (unsigned i = 0; i < body; ++i) {
    s += (i + 1 == body ? "end:    " : "        ") + std::string("mac.f32 V") + std::to_string(4 + i) + ", V1, V2\n";
  }
  return s + "        halt\n";
}

TEST_F(TpcCardTest, CycleCountsFollowTheScoreboard) {
  const auto vpu = preset.tpc().vpu_latency();
  ASSERT_EQ(vpu, 4u);
  const uint32_t n = 4000;   // macs
  place(assemble(mac_loop(4, n / 4)), kKernel);
  place(assemble(mac_loop(1, n)), kKernel2);
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.sob_address = sob_address();
  launch(spec);
  ASSERT_TRUE(wait_sob(1));
  spec.kernel_address = kKernel2;
  launch(spec);
  ASSERT_TRUE(wait_sob(2));
  const auto stats = kernel_stats(0);
  ASSERT_EQ(stats.size(), 2u);
  // Independent: 3 prologue bundles + n macs + halt, one per cycle, plus the instruction fetches.
  const uint64_t compute0 = stats[0].cycles - stats[0].fetch_stall_cycles;
  EXPECT_EQ(stats[0].bundles, n + 4);
  // At most the loop iterator's ld_smov (local_latency) can stall, unless a fill hides it.
  EXPECT_LE(stats[0].stall_cycles, preset.tpc().local_latency());
  EXPECT_GE(compute0, n + 4);
  EXPECT_LE(compute0, n + 4 + 4);
  // Dependent chain: every mac after the first waits vpu_latency cycles for its accumulator.
  const uint64_t compute1 = stats[1].cycles - stats[1].fetch_stall_cycles;
  EXPECT_EQ(stats[1].bundles, n + 4);
  EXPECT_GE(compute1, uint64_t{vpu} * (n - 1) + 4);
  EXPECT_LE(compute1, uint64_t{vpu} * n + 4 + 4);
  std::cout << "independent macs: " << stats[0].cycles << " cycles (" << stats[0].fetch_stall_cycles
            << " fetch stall), dependent chain: " << stats[1].cycles << " cycles (" << stats[1].stall_cycles
            << " scoreboard stall)\n";
}

TEST_F(TpcCardTest, ColdInstructionCacheCostsMemoryLatency) {
  place(assemble(mac_loop(4, 100)), kKernel);
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.sob_address = sob_address();
  launch(spec);
  ASSERT_TRUE(wait_sob(1));
  spec.invalidate_caches = false;   // the second launch finds the program cached
  launch(spec);
  ASSERT_TRUE(wait_sob(2));
  spec.invalidate_caches = true;    // the third is cold again
  launch(spec);
  ASSERT_TRUE(wait_sob(3));
  const auto stats = kernel_stats(0);
  ASSERT_EQ(stats.size(), 3u);
  // 8 bundles = 256 bytes; one miss reads icache_fill_lines lines.
  const uint32_t fill_bytes = preset.tpc().icache_line_bytes() * preset.tpc().icache_fill_lines();
  EXPECT_EQ(stats[0].icache_misses, (256u + fill_bytes - 1) / fill_bytes);
  EXPECT_EQ(stats[1].icache_misses, 0u);
  EXPECT_EQ(stats[2].icache_misses, stats[0].icache_misses);
  EXPECT_GT(stats[0].fetch_stall_cycles, 50u) << "a DRAM read costs tens of cycles at least";
  EXPECT_EQ(stats[1].fetch_stall_cycles, 0u);
  // The cold run pays the fills; a fill may hide a scoreboard stall of the warm run (the loop
  // waits local_latency for the ld_smov of its iterator), so at most that much less.
  EXPECT_LE(stats[0].cycles, stats[1].cycles + stats[0].fetch_stall_cycles);
  EXPECT_GE(stats[0].cycles + preset.tpc().local_latency(), stats[1].cycles + stats[0].fetch_stall_cycles);
  EXPECT_GT(stats[0].cycles, stats[1].cycles + 50);
  EXPECT_GT(stats[2].cycles, stats[1].cycles + 50);
}

// TPC_CMD's ICACHE_PREFETCH (what the compiler asks for before each kernel): the code streams in
// from ICACHE_BASE as the kernel starts, so a long straight-line kernel pays about one memory
// latency instead of one per fill; a warm kernel waits for nothing, and the lines it finds cached
// are kept while the window is read.
TEST_F(TpcCardTest, AnIcachePrefetchStreamsTheKernelInInsteadOfMissingPerFill) {
  std::string straight = "        mov.f32 V1, 1.0\n";
  for (int i = 0; i < 254; ++i) straight += "        add.f32 V" + std::to_string(2 + i % 30) + ", V1, V1\n";
  straight += "        halt\n";   // 256 bundles: 8 KB
  place(assemble(straight), kKernel);
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.sob_address = sob_address();
  launch(spec);   // cold, no prefetch: a miss per fill
  ASSERT_TRUE(wait_sob(1));
  spec.icache_prefetch = true;   // cold, with the prefetch
  launch(spec);
  ASSERT_TRUE(wait_sob(2));
  spec.invalidate_caches = false;   // warm, with the prefetch
  launch(spec);
  ASSERT_TRUE(wait_sob(3));
  const auto stats = kernel_stats(0);
  ASSERT_EQ(stats.size(), 3u);
  const uint32_t fill_bytes = preset.tpc().icache_line_bytes() * preset.tpc().icache_fill_lines();
  EXPECT_EQ(stats[0].icache_misses, 8192u / fill_bytes);
  EXPECT_EQ(stats[1].icache_misses, 0u) << "every line was on its way";
  EXPECT_EQ(stats[2].icache_misses, 0u);
  EXPECT_EQ(stats[2].fetch_stall_cycles, 0u);
  const uint64_t per_miss = stats[0].fetch_stall_cycles / stats[0].icache_misses;
  EXPECT_GT(per_miss, 50u) << "a DRAM read costs tens of cycles at least";
  EXPECT_LT(stats[1].fetch_stall_cycles, 3 * per_miss) << "about one latency, not " << stats[0].icache_misses;
  EXPECT_EQ(stats[1].bundles, stats[0].bundles);
  EXPECT_EQ(stats[2].cycles + stats[1].fetch_stall_cycles, stats[1].cycles);
}

// One vector of tensor 0 is read by LOAD after a 2000-iteration wait loop, then stored to
// tensor 1; FIRST runs before the wait (a prefetch, or a store that overwrites the vector).
std::string prefetch_probe(const std::string& first, const std::string& load) {
  return "        imov I0, 0\n        ld_smov S1, 0\n        mov S2, 2000\n        " + first +
         "\n        loop S1, S2, wait\nwait:   nop\n        " + load +
         "\n        st_tnsr I0, 1, V0\n        halt\n";
}

TEST_F(TpcCardTest, PrefetchedLoadsAreServedByThePrefetchBuffer) {
  ASSERT_EQ(preset.tpc().prefetch_hit_latency(), preset.tpc().local_latency())
      << "this test compares a buffered load with a VLM load";
  const std::vector<std::pair<std::string, std::string>> kernels = {
      {"prefetch I0, 0", "ld_tnsr V0, I0, 0"},         // 0: the load finds the prefetched read
      {"nop", "ld_tnsr V0, I0, 0"},                    // 1: the load goes to memory
      {"nop", "ld_vlm.f32 V0, 0"},                     // 2: a local load (as fast as a hit)
      {"prefetch I0, 0; st_tnsr I0, 0, V1", "ld_tnsr V0, I0, 0"},   // 3: a store drops the entry
  };
  std::vector<float> a(64), fresh(64, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 1.0f + static_cast<float>(i);
  std::vector<hw::TpcKernelStats> stats;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const uint64_t address = kKernel + k * 0x1000;
    place(assemble(prefetch_probe(kernels[k].first, kernels[k].second)), address);
    dram_write(kData, a.data(), a.size() * 4);
    tpc::TpcLaunchSpec spec;
    spec.kernel_address = address;
    spec.tensors = {tensor(kData, {64}), tensor(kData + 0x1000, {64})};
    spec.sob_address = sob_address();
    launch(spec);
    ASSERT_TRUE(wait_sob(static_cast<uint32_t>(k + 1))) << k;
    stats = kernel_stats(0);
    ASSERT_EQ(stats.size(), k + 1);
    ASSERT_FALSE(stats[k].faulted) << k;
    if (k < 2) {   // the stored vector is what the load read
      std::vector<float> out(64);
      dram_read(kData + 0x1000, out.data(), out.size() * 4);
      EXPECT_EQ(out, a) << k;
    }
  }
  const auto busy = [&](size_t k) { return stats[k].cycles - stats[k].fetch_stall_cycles; };
  EXPECT_EQ(stats[0].prefetches, 1u);
  EXPECT_EQ(stats[0].prefetch_hits, 1u);
  EXPECT_EQ(stats[0].loads, 1u);
  EXPECT_EQ(stats[1].prefetch_hits, 0u);
  // The prefetch arrived during the wait, so the load costs what a local load costs, and the
  // memory latency the second kernel pays is hidden.
  EXPECT_EQ(busy(0), busy(2));
  EXPECT_GT(busy(1), busy(0) + 50);
  std::cout << "load after a wait: " << busy(0) << " cycles prefetched, " << busy(1) << " from memory, " << busy(2)
            << " from VLM\n";
  // After the store the load reads memory again, and it sees the stored values (V1 = 0).
  EXPECT_EQ(stats[3].prefetches, 1u);
  EXPECT_EQ(stats[3].prefetch_hits, 0u);
  std::vector<float> out(64);
  dram_read(kData + 0x1000, out.data(), out.size() * 4);
  EXPECT_EQ(out, fresh);
}

TEST_F(TpcCardTest, ReportsSimulatedBundlesPerWallSecond) {
  const uint32_t n = 4'000'000;
  place(assemble(mac_loop(4, n / 4)), kKernel);
  tpc::TpcLaunchSpec spec;
  spec.kernel_address = kKernel;
  spec.sob_address = sob_address();
  const auto start = std::chrono::steady_clock::now();
  launch(spec);
  ASSERT_TRUE(wait_sob(1, 10000));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto stats = kernel_stats(0);
  ASSERT_EQ(stats.size(), 1u);
  std::cout << "TPC core, f32 mac loop (2048-bit vectors): " << stats[0].bundles << " bundles in " << seconds
            << " s wall = " << stats[0].bundles / seconds / 1e6 << " M simulated bundles/s\n";
}

// The core's queue, window and quantum come from the preset, every one of them.
TEST(TpcCoreParams, ComeFromThePreset) {
  const preset::Card card = preset::load_preset(
      "hl205", {"tpc.launch_queue_depth=2", "tpc.max_posted_writes=17", "tpc.quantum_cycles=333"});
  const hw::TpcCoreParams p = hw::tpc_core_params_from(card, 3);
  EXPECT_EQ(p.launch_queue_depth, 2u);
  EXPECT_EQ(p.max_posted_writes, 17u);
  EXPECT_EQ(p.quantum_cycles, 333u);
  EXPECT_EQ(p.index, 3u);
}

}  // namespace
}  // namespace hpusim::testing
