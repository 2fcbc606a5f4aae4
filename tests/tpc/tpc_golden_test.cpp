// Golden cycle counts of a fixed set of small TPC launches on each preset (tests/golden/
// tpc_kernels.txt for hl205, tpc_kernels_<preset>.txt for the others): the
// bench kernels of `hpusim bench tpc` (sim/bench/tpc_kernels) and a dependent mac chain, launched
// on a card through the TPC QMANs. Any change to the TPC core's timing, its instruction cache, the
// QMAN launch path, the fabric or HBM shows up here. Rewrite with HPUSIM_UPDATE_GOLDEN=1 and review
// the diff. All launches run in one test (one card, one golden file).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "arch/regs/gaudi1_map.h"
#include "arch/tpc/asm/assembler.h"
#include "hw/tpc/tpc_core.h"
#include "arch/tpc/tpc_launch.h"
#include "sim/bench/tpc_bench.h"
#include "tests/qman/qman_fixture.h"
#include "tests/support/golden.h"

namespace hpusim::testing {
namespace {

constexpr uint64_t kProgramA = 0x20000000;
constexpr uint64_t kProgramB = 0x20010000;
constexpr uint64_t kProgramC = 0x20020000;
constexpr uint64_t kTensors = 0x20400000;
constexpr uint64_t kTensorStride = 0x140000;   // 1.25 MB: the tensors sit in different HBM banks
constexpr unsigned kSob = 320;

float value_a(size_t i) { return static_cast<float>(i % 977) * 0.5f - 31.0f; }
float value_b(size_t i) { return static_cast<float>(i % 613) * 0.25f + 2.0f; }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

class TpcGoldenTest : public CardTest, public ::testing::WithParamInterface<const char*> {
 protected:
  std::string preset_name() const override { return GetParam(); }
  void place(const tpc::Program& program, uint64_t address) {
    std::vector<uint8_t> bytes;
    for (const tpc::Bundle& b : program.bundles) {
      const auto e = tpc::encode(b);
      bytes.insert(bytes.end(), e.begin(), e.end());
    }
    sim->on_sim_thread([&] { card->memory().hbm().store().write(address, bytes.data(), bytes.size()); });
  }
  void write_floats(uint64_t address, const std::vector<float>& values) {
    sim->on_sim_thread([&] { card->memory().hbm().store().write(address, values.data(), values.size() * 4); });
  }
  std::vector<float> read_floats(uint64_t address, size_t count) {
    std::vector<float> values(count);
    sim->on_sim_thread([&] { card->memory().hbm().store().read(address, values.data(), count * 4); });
    return values;
  }
  static uint64_t tensor_address(unsigned t) { return kTensors + t * kTensorStride; }
  static tpc::TensorDescriptor tensor(unsigned t, uint32_t elements) {
    tpc::TensorDescriptor d;
    d.base = tensor_address(t);
    d.dtype = tpc::DType::F32;
    d.dims = 1;
    d.size = {elements, 1, 1, 1, 1};
    d.stride = {1, elements, elements, elements, elements};
    return d;
  }
  tpc::TpcLaunchSpec spec_1d(uint64_t program, unsigned tensors, uint32_t elements, int32_t granule, unsigned tpcs) {
    tpc::TpcLaunchSpec spec;
    spec.kernel_address = program;
    for (unsigned t = 0; t < tensors; ++t) spec.tensors.push_back(tensor(t, elements));
    spec.index_space = {static_cast<int32_t>(elements), 1, 1, 1, 1};
    spec.granule = {granule, 1, 1, 1, 1};
    spec.tpcs = tpcs;
    spec.sob_address = cfg(regs::sm_sob(regs::SyncManager::E_N, kSob));
    return spec;
  }

  // Launches, runs until every TPC with work has finished one more kernel; returns their stats.
  std::vector<hw::TpcKernelStats> run(const tpc::TpcLaunchSpec& spec) {
    const auto buffers = tpc::build_tpc_command_buffers(spec);
    std::vector<size_t> before;
    for (const auto& cb : buffers) before.push_back(stats(cb.tpc).size());
    for (const auto& cb : buffers) {
      const regs::QmanId q = regs::tpc_qman(cb.tpc);
      if (opened_.insert(cb.tpc).second) open_stream(q, 0);
      submit(q, 0, cb.bytes);
    }
    std::vector<hw::TpcKernelStats> done;
    for (size_t k = 0; k < buffers.size(); ++k) {
      for (int step = 0; step < 4000 && stats(buffers[k].tpc).size() <= before[k]; ++step) {
        sim->charge_ns(1000);
        sim->sync_device();
      }
      const auto all = stats(buffers[k].tpc);
      EXPECT_GT(all.size(), before[k]) << "TPC " << buffers[k].tpc << " did not finish";
      if (all.size() <= before[k]) return {};
      EXPECT_FALSE(all[before[k]].faulted) << "TPC " << buffers[k].tpc;
      done.push_back(all[before[k]]);
    }
    return done;
  }
  std::vector<hw::TpcKernelStats> stats(unsigned tpc) {
    return sim->on_sim_thread([&] {
      const auto& kernels = card->tpc_core(tpc)->kernels();
      return std::vector<hw::TpcKernelStats>(kernels.begin(), kernels.end());
    });
  }
  // Records cycles, bundles, stalls, fetch stalls and icache misses of one kernel.
  void check(GoldenFile& golden, const std::string& name, const hw::TpcKernelStats& k) {
    golden.check(name + ".cycles", k.cycles);
    golden.check(name + ".bundles", k.bundles);
    golden.check(name + ".stall_cycles", k.stall_cycles);
    golden.check(name + ".fetch_stall_cycles", k.fetch_stall_cycles);
    golden.check(name + ".icache_misses", k.icache_misses);
  }

 private:
  std::set<unsigned> opened_;
};

// A mac chain on one accumulator: each mac waits vpu_latency for the previous one.
std::string dependent_macs(uint32_t macs) {
  return "        ld_smov S1, 0\n        mov S2, " + std::to_string(macs) +
         "\n        loop S1, S2, end\nend:    mac.f32 V4, V1, V2\n        halt\n";
}

TEST_P(TpcGoldenTest, KernelLaunchesMatchGoldenCycleCounts) {
  const std::string preset = GetParam();
  GoldenFile golden(preset == "hl205" ? "tpc_kernels.txt" : "tpc_kernels_" + preset + ".txt");
  const size_t n = 32768;
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = value_a(i);
    b[i] = value_b(i);
  }
  write_floats(tensor_address(0), a);
  write_floats(tensor_address(1), b);

  // 1. STREAM ADD, 1-D 4096 f32 on one TPC, cold instruction cache.
  place(bench::assemble_tpc_bench_kernel("stream_add"), kProgramA);
  auto k = run(spec_1d(kProgramA, 3, 4096, 1024, 1));
  ASSERT_EQ(k.size(), 1u);
  check(golden, "add_4096_f32_1tpc", k[0]);
  const auto c = read_floats(tensor_address(2), 4096);
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(bits(c[i]), bits(a[i] + b[i])) << i;

  // 2. The same program again, warm (no invalidate): only the fetch stalls go.
  auto spec = spec_1d(kProgramA, 3, 4096, 1024, 1);
  spec.invalidate_caches = false;
  k = run(spec);
  ASSERT_EQ(k.size(), 1u);
  check(golden, "add_4096_f32_1tpc_warm", k[0]);
  EXPECT_EQ(k[0].icache_misses, 0u);

  // 3. STREAM ADD, 32768 f32 over all 8 TPCs: the span from the first start to the last end.
  k = run(spec_1d(kProgramA, 3, 32768, 1024, 8));
  ASSERT_EQ(k.size(), 8u);
  hw::Picoseconds first = k[0].start_ps, last = k[0].end_ps;
  uint64_t bundles = 0;
  for (const auto& s : k) {
    first = std::min(first, s.start_ps);
    last = std::max(last, s.end_ps);
    bundles += s.bundles;
  }
  golden.check("add_32768_f32_8tpc.span_ps", last - first);
  golden.check("add_32768_f32_8tpc.bundles", bundles);
  golden.check("add_32768_f32_8tpc.tpc0_cycles", k[0].cycles);
  golden.check("add_32768_f32_8tpc.tpc7_cycles", k[7].cycles);

  // 4. The bench's mac chain (f32, K = 16 macs per element, 2048 elements on one TPC).
  place(bench::assemble_tpc_bench_kernel("mac_chain"), kProgramB);
  spec = spec_1d(kProgramB, 2, 2048, 1024, 1);
  spec.srf[0] = bits(1.0f / 256);
  spec.srf[1] = 16;
  k = run(spec);
  ASSERT_EQ(k.size(), 1u);
  check(golden, "mac_chain_2048_f32_k16_1tpc", k[0]);

  // 5. A dependent chain of 256 macs (each waits vpu_latency for the one before).
  tpc::AssembleResult chain = tpc::assemble(dependent_macs(256), "<dependent_macs>");
  ASSERT_TRUE(chain.ok()) << chain.error_text();
  place(chain.program, kProgramC);
  spec = tpc::TpcLaunchSpec{};
  spec.kernel_address = kProgramC;
  spec.sob_address = cfg(regs::sm_sob(regs::SyncManager::E_N, kSob));
  k = run(spec);
  ASSERT_EQ(k.size(), 1u);
  check(golden, "dependent_mac_chain_256", k[0]);

  // 6. Dependent 256-byte loads, one at a time (the global-load round trip), 64 of them.
  place(bench::assemble_tpc_bench_kernel("load_latency"), kProgramC);
  k = run(spec_1d(kProgramC, 2, 4096, 64, 1));
  ASSERT_EQ(k.size(), 1u);
  check(golden, "load_latency_64_loads", k[0]);

  EXPECT_TRUE(recorder.errors.empty());
}

INSTANTIATE_TEST_SUITE_P(Presets, TpcGoldenTest, ::testing::Values("hl205", "hl225", "hl325"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace hpusim::testing
