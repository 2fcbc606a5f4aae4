// The HBM subsystem through the card's fabric, against the formulas its timing set implies.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/memory/memory_fixture.h"

namespace hpusim::testing {
namespace {

using bench::Pattern;
using bench::TrafficSpec;

struct HbmLatency {
  MemoryBench& b;
  uint64_t tck() const { return b.card.hbm().timing().tck_ps(); }
  // Expected latency of a one-burst read that enters the fabric at `issued`, given the number of
  // cycles the HBM needs from arrival to the last data beat.
  hw::Picoseconds expected(hw::Picoseconds issued, uint64_t hbm_cycles) {
    const hw::Picoseconds at_hbm = issued + b.fabric_latency();
    const uint64_t arrival_cycle = (at_hbm + tck() - 1) / tck();
    const hw::Picoseconds data_done = (arrival_cycle + hbm_cycles) * tck();
    return data_done + b.master_port_time(32) + b.fabric_latency() - issued;
  }
};

uint64_t device_address(MemoryBench& b, const hbm::DramAddress& a) {
  return b.card.memory_map().dram_base() + b.system.hbm().mapper().offset_of(a);
}

TEST(Hbm, UnloadedReadLatencyEqualsThePresetFormula) {
  MemoryBench b({"hbm.refresh_enabled=false"});
  const auto& t = b.card.hbm().timing();
  HbmLatency latency{b};
  hbm::DramAddress a = b.system.hbm().mapper().map(0x40000000);

  // Closed bank: ACT, tRCDRD, RD, CL, burst.
  hw::Picoseconds issued = hw::now_ps();
  EXPECT_EQ(b.probe.access_and_wait(false, device_address(b, a), 32), latency.expected(issued, t.n_rcdrd() + t.n_cl() + t.n_bl()));
  EXPECT_EQ(b.system.hbm().unloaded_read_latency_ps(), hw::Picoseconds{t.n_rcdrd() + t.n_cl() + t.n_bl()} * t.tck_ps());

  // Row hit: the row is still open.
  hbm::DramAddress same_row = a;
  same_row.column += 1;
  issued = hw::now_ps();
  EXPECT_EQ(b.probe.access_and_wait(false, device_address(b, same_row), 32), latency.expected(issued, t.n_cl() + t.n_bl()));

  // Row conflict: precharge the open row, activate the new one, read.
  hbm::DramAddress other_row = a;
  other_row.row += 1;
  issued = hw::now_ps();
  EXPECT_EQ(b.probe.access_and_wait(false, device_address(b, other_row), 32),
            latency.expected(issued, t.n_rp() + t.n_rcdrd() + t.n_cl() + t.n_bl()));
}

// Streaming reads through the fabric: every channel's data bus stays busy. Per-bank refresh
// (the presets' mode) hides refresh behind the other banks; all-bank refresh costs nRFC/nREFI.
void expect_streaming_utilisation(const std::vector<std::string>& overrides, const std::string& preset,
                                  double min_utilisation) {
  MemoryBench b(overrides, preset);
  TrafficSpec spec;
  spec.pattern = Pattern::kSequential;
  spec.request_bytes = 256;
  spec.requests = 200000;
  spec.ports = 16;
  spec.window = 512;
  spec.region_base = b.card.memory_map().dram_user_base();
  spec.region_bytes = 256ull << 20;
  std::vector<uint64_t> busy_before;
  auto& hbm = b.system.hbm();
  for (uint32_t ch = 0; ch < hbm.channels(); ++ch) busy_before.push_back(hbm.controller(ch).busy_data_cycles());
  auto r = b.generator.run(spec);
  const double elapsed_cycles = double(r.end_ps - r.start_ps) / b.card.hbm().timing().tck_ps();
  for (uint32_t ch = 0; ch < hbm.channels(); ++ch) {
    double busy = double(hbm.controller(ch).busy_data_cycles() - busy_before[ch]);
    double utilisation = busy / (elapsed_cycles * b.card.hbm().pseudo_channels());
    EXPECT_GE(utilisation, min_utilisation) << "channel " << ch;
    EXPECT_LE(utilisation, 1.0) << "channel " << ch;
  }
  const double peak = hbm.peak_bytes_per_second() / 1e9;
  EXPECT_GE(gbps(r), min_utilisation * peak);
  EXPECT_LE(gbps(r), peak);
}

TEST(Hbm, StreamingReadsKeepEveryChannelAbove90PercentOfPeak) {
  expect_streaming_utilisation({}, "hl205", 0.95);
}

TEST(Hbm, StreamingReadsWithAllBankRefreshStayAbove90Percent) {
  expect_streaming_utilisation({"hbm.refresh_mode=all_bank"}, "hl205", 0.90);
}

TEST(Hbm, StreamingReadsOnHbm2eKeepEveryChannelAbove90PercentOfPeak) {
  expect_streaming_utilisation({}, "hl225", 0.95);
}

TEST(Hbm, RandomReadsPayTheRowMissCost) {
  MemoryBench b({"hbm.refresh_enabled=false"});
  const auto& t = b.card.hbm().timing();
  TrafficSpec spec;
  spec.request_bytes = 32;
  spec.requests = 4000;
  spec.ports = 1;
  spec.window = 1;
  spec.region_base = b.card.memory_map().dram_user_base();
  spec.region_bytes = 256ull << 20;
  spec.pattern = Pattern::kSequential;
  auto sequential = b.generator.run(spec);
  uint64_t activates_before = 0;
  for (uint32_t ch = 0; ch < b.system.hbm().channels(); ++ch) activates_before += b.system.hbm().controller(ch).activates();
  spec.pattern = Pattern::kRandom;
  spec.seed = 7;
  auto random = b.generator.run(spec);
  uint64_t activates = 0;
  for (uint32_t ch = 0; ch < b.system.hbm().channels(); ++ch) activates += b.system.hbm().controller(ch).activates();
  activates -= activates_before;

  // Nearly every random read opens a row; the sequential stream mostly hits open rows.
  EXPECT_GE(double(activates), 0.95 * double(spec.requests));
  const double miss_cost_ns = double(t.n_rp() + t.n_rcdrd()) * t.tck_ps() / 1000.0;
  const double difference = mean_ns(random) - mean_ns(sequential);
  EXPECT_GT(difference, 0.75 * miss_cost_ns);
  EXPECT_LT(difference, 1.10 * miss_cost_ns);
}

TEST(Hbm, DataWrittenIsDataRead) {
  MemoryBench b;
  const uint64_t address = b.card.memory_map().dram_user_base() + 0x12340;
  ProbeMaster::Access& w = b.probe.issue(true, address, 64, hw::now_ps() + 1000, 0x5A);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));
  ASSERT_TRUE(w.done);
  ProbeMaster::Access* r = nullptr;
  b.probe.access_and_wait(false, address, 64, &r);
  for (unsigned char c : r->data) ASSERT_EQ(c, 0x5A);
}

uint64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

// A 96 GB card touched over 1 GB costs about 1 GB of host memory.
TEST(Hbm, SparseContentsKeepA96GBCardSmall) {
  MemoryBench b({}, "hl225");
  EXPECT_EQ(b.system.dram_size(), 96ull << 30);
  TrafficSpec spec;
  spec.request_bytes = 4096;
  spec.write_fraction = 1.0;
  spec.requests = (1ull << 30) / 4096;
  spec.ports = 8;
  spec.window = 64;
  spec.region_base = b.card.memory_map().dram_user_base();
  spec.region_bytes = 1ull << 30;
  b.generator.run(spec);
  EXPECT_EQ(b.system.hbm().store().resident_bytes(), 1ull << 30);
  EXPECT_LT(resident_kib(), 2ull << 20);
}

}  // namespace
}  // namespace hpusim::testing
