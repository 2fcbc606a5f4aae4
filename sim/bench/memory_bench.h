// `hpusim bench memory`: sequential, random and read/write-mixed traffic of several request
// sizes over HBM, SRAM and PCIe, through the fabric, as engines see them.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "card_preset.pb.h"

namespace hpusim::bench {

// One case chosen on the command line, run alone instead of the default list.
struct MemoryCase {
  std::string memory = "hbm";    // hbm, sram or pcie
  std::string pattern = "seq";   // seq or rand
  double write_fraction = 0.0;   // share of writes, 0..1
  uint32_t request_bytes = 64;
  uint64_t requests = 100000;
  uint32_t window = 512;         // requests outstanding (over all ports)
  uint32_t ports = 8;            // fabric master ports (fabric only)
  uint64_t seed = 1;
};

struct MemoryBenchOptions {
  preset::Card card;
  std::vector<std::string> memories = {"hbm", "sram", "pcie"};
  // "fabric": requests from master ports through the fabric, as engines see them; "controller":
  // straight into the HBM channel controllers (hbm only), the interface DRAM simulators model.
  std::string at = "fabric";
  bool has_case = false;         // run `single` alone
  MemoryCase single;
  // "dramsim3": the DRAMsim3 comparison (controller level, preset dramsim3-hbm2), each case
  // beside DRAMsim3's own result on the same request stream.
  std::string suite;
  double scale = 1.0;            // multiplies every case's request count
  std::string json_path;         // results as a JSON array of objects
  std::string stats_path;        // statistics, flat text (and JSON next to it as .json)
  std::string trace_path;        // Perfetto trace
  std::string chrome_trace_path; // Chrome JSON trace
};

struct MemoryCaseResult {
  std::string memory;
  std::string at;                 // fabric or controller
  std::string pattern;
  uint32_t request_bytes = 0;
  uint64_t requests = 0;
  uint32_t ports = 0;
  uint32_t window = 0;
  double gbps = 0;
  double peak_gbps = 0;
  double pct_peak = 0;
  double mean_latency_ns = 0;     // all requests
  double p99_latency_ns = 0;
  double read_latency_ns = 0;     // mean over reads (0: none)
  double write_latency_ns = 0;    // mean over writes (0: none); a posted write's is its acceptance
  double write_fraction = 0;
  uint64_t seed = 0;
  // Suite cases with a reference: the reference's bandwidth and mean read latency (cycles of the
  // memory clock), and hpusim's errors against them in percent.
  bool has_reference = false;
  double reference_gbps = 0;
  double reference_read_cycles = 0;
  double gbps_error_pct = 0;
  double read_latency_error_pct = 0;
  double tolerance_pct = 0;
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
