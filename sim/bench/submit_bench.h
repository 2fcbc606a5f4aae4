// `hpusim bench submit`: command-submission round-trip latency and throughput through the driver
// ABI (NOP command submissions on an external queue), and DMA bandwidth host <-> device per
// transfer size (one LIN_DMA per CS on the PCI DMA queues, host memory mapped with the MEMORY
// ioctl), in simulated host time and in wall time.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace hpusim::bench {

struct SubmitBenchOptions {
  std::string preset = "hl205";
  std::vector<std::string> overrides;
  double scale = 1.0;
  std::string json_path;
  std::string trace_path;          // Perfetto trace of the whole run (driver ioctls and interrupts, card activity)
};

struct SubmitCaseResult {
  std::string name;
  uint64_t size_bytes = 0;        // command-buffer bytes (NOP cases) or bytes moved (DMA cases) per submission
  uint64_t submissions = 0;
  double sim_latency_ns = 0;      // host time from submit to completion seen, per submission
  double sim_per_s = 0;           // submissions per simulated second
  double wall_per_s = 0;          // submissions per wall second (the simulator's own speed)
  double sim_gb_per_s = 0;        // DMA cases: bytes moved per simulated second, submit to completion seen
};

std::vector<SubmitCaseResult> run_submit_bench(const SubmitBenchOptions& options, std::ostream& out);

}  // namespace hpusim::bench
