// `hpusim bench submit`: command-submission round-trip latency and throughput through the driver
// ABI (NOP command submissions on an external queue), in simulated host time and in wall time.
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
};

struct SubmitCaseResult {
  std::string name;
  uint64_t size_bytes = 0;        // command-buffer bytes per submission
  uint64_t submissions = 0;
  double sim_latency_ns = 0;      // host time from submit to completion seen, per submission
  double sim_per_s = 0;           // submissions per simulated second
  double wall_per_s = 0;          // submissions per wall second (the simulator's own speed)
};

std::vector<SubmitCaseResult> run_submit_bench(const SubmitBenchOptions& options, std::ostream& out);

}  // namespace hpusim::bench
