// `hpusim bench memory`: sequential, random and read/write-mixed traffic of several request
// sizes over HBM, SRAM and PCIe, through the fabric, as engines see them.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "card_preset.pb.h"

namespace hpusim::bench {

struct MemoryBenchOptions {
  preset::Card card;
  std::vector<std::string> memories = {"hbm", "sram", "pcie"};
  double scale = 1.0;            // multiplies every case's request count
  std::string json_path;         // results as a JSON array of objects
  std::string stats_path;        // statistics, flat text (and JSON next to it as .json)
  std::string trace_path;        // Perfetto trace
  std::string chrome_trace_path; // Chrome JSON trace
};

struct MemoryCaseResult {
  std::string memory;
  std::string pattern;
  uint32_t request_bytes = 0;
  uint64_t requests = 0;
  uint32_t ports = 0;
  uint32_t window = 0;
  double gbps = 0;
  double peak_gbps = 0;
  double pct_peak = 0;
  double mean_latency_ns = 0;
  double p99_latency_ns = 0;
  uint64_t sim_time_ps = 0;
  uint64_t sim_cycles = 0;        // in the memory's own clock
  double wall_seconds = 0;
  double sim_requests_per_s = 0;
  double sim_cycles_per_s = 0;
  uint64_t errors = 0;
};

// Runs the benchmark; prints the table (row by row, as cases finish) to `out`. Must be called at
// most once per process (SystemC elaborates once).
std::vector<MemoryCaseResult> run_memory_bench(const MemoryBenchOptions& options, std::ostream& out);

void write_memory_bench_json(const std::vector<MemoryCaseResult>& results, const std::string& preset,
                             const std::string& path);

}  // namespace hpusim::bench
