// hpusim's HBM controller on DRAMsim3's HBM2 configuration against DRAMsim3's own results for the
// same request streams (sim/bench/dramsim3_reference.h; set-up in hw/hbm/README.md).
#include <gtest/gtest.h>

#include <cmath>

#include "hw/card/memory_system.h"
#include "sim/bench/controller_traffic.h"
#include "sim/bench/dramsim3_reference.h"
#include "sim/preset/preset.h"

namespace hpusim::bench {
namespace {

class Dramsim3Comparison : public ::testing::TestWithParam<size_t> {};

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  const DramSim3Reference& r = dramsim3_references()[info.param];
  return std::string(r.name) + "_" + std::to_string(r.request_bytes);
}

INSTANTIATE_TEST_SUITE_P(Cases, Dramsim3Comparison,
                         ::testing::Range<size_t>(0, dramsim3_references().size()), case_name);

TEST_P(Dramsim3Comparison, BandwidthAndReadLatencyWithinTolerance) {
  const DramSim3Reference& ref = dramsim3_references()[GetParam()];
  const hbm::SubsystemConfig config = hw::hbm_config_from(preset::load_preset("dramsim3-hbm2"));
  ControllerTrafficSpec spec;
  spec.random = !ref.sequential;
  spec.write_permille = ref.write_permille;
  spec.request_bytes = ref.request_bytes;
  spec.count = ref.requests;
  spec.window = ref.window;
  spec.seed = ref.seed;
  const ControllerTrafficResult r = run_controller_traffic(config.organization, config.timing, config.controller, spec);

  ASSERT_EQ(r.reads + r.writes, ref.requests);
  EXPECT_EQ(r.read_latency_cycles.size() + r.write_latency_cycles.size(), ref.requests);
  const double gbps = double(r.bytes) / double(r.cycles);   // tCK = 1 ns
  const double error = 100.0 * (gbps - ref.gbps) / ref.gbps;
  EXPECT_LE(std::fabs(error), kDramSim3TolerancePct)
      << "hpusim " << gbps << " GB/s (" << r.cycles << " cycles), DRAMsim3 " << ref.gbps << " GB/s (" << ref.cycles
      << " cycles)";
  if (ref.read_mean_cycles > 0) {
    double sum = 0;
    for (uint64_t l : r.read_latency_cycles) sum += double(l);
    const double mean = sum / double(r.read_latency_cycles.size());
    EXPECT_LE(std::fabs(100.0 * (mean - ref.read_mean_cycles) / ref.read_mean_cycles), kDramSim3TolerancePct)
        << "mean read latency: hpusim " << mean << " cycles, DRAMsim3 " << ref.read_mean_cycles;
  }
  // Every write burst reached the DRAM (posted writes are answered early, not dropped).
  EXPECT_EQ(r.totals.write_bursts, r.writes * (ref.request_bytes / 64));
  EXPECT_EQ(r.totals.read_bursts, r.reads * (ref.request_bytes / 64));
}

// The stream itself: splitmix64 as published (first outputs for seed 0 from the reference
// implementation) and the first addresses both sides generate.
TEST(Dramsim3Stream, Splitmix64MatchesTheReferenceSequence) {
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(rng.next(), 0x06c45d188009454full);
}

}  // namespace
}  // namespace hpusim::bench
