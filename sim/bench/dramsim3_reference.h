// DRAMsim3's results on its own HBM2 configuration (configs/HBM2_8Gb_x128.ini), each case driven
// by the request stream of sim/bench/controller_traffic.h. Measured once with DRAMsim3 built from
// its public source (commit 29817593, -O2); the set-up is in hw/hbm/README.md. hpusim runs the
// same cases on the preset dramsim3-hbm2 (`hpusim bench memory --suite dramsim3`).
#pragma once

#include <cstdint>
#include <vector>

namespace hpusim::bench {

struct DramSim3Reference {
  const char* name;
  bool sequential;
  uint32_t write_permille;
  uint32_t request_bytes;
  uint64_t requests;
  uint32_t window;
  uint64_t seed;
  uint64_t cycles;             // last completion + 1, tCK = 1 ns
  double gbps;                 // bytes / cycles
  double read_mean_cycles;     // generation to completion; 0 when there are no reads
};

// Differences above this fail the comparison (and the test that runs it).
inline constexpr double kDramSim3TolerancePct = 1.0;

const std::vector<DramSim3Reference>& dramsim3_references();

}  // namespace hpusim::bench
