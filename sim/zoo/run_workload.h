// `hpusim run`: a zoo workload for N steps on one simulated card, printing per step the device
// time, the host time (modeled), the engines' utilisation and the compile and cache counters,
// and writing them as JSON, the trace and the statistics.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace hpusim::zoo {

struct RunOptions {
  std::string workload;
  uint32_t steps = 5;
  uint32_t seed = 7;
  std::string preset = "hl205";
  std::vector<std::string> overrides;   // "path=value"
  std::string json_path;                // per-step objects
  std::string trace_path;               // the timeline (".json": Chrome JSON, else Perfetto)
  std::string stats_path;               // statistics: sorted text, and FILE.json
  uint64_t start_phase_ns = 0;          // host time waited after the set-up, before the first step
};

struct StepRecord {
  uint32_t step = 0;
  float loss = 0;
  uint64_t device_ns = 0;   // the step's launch: its doorbells to its completion MSI
  uint64_t step_ns = 0;     // the whole step in host time (compile, copies, launch, loss read back)
  uint64_t host_ns = 0;     // step_ns - device_ns: host work the device did not hide
  uint64_t compiles = 0, cache_hits = 0, cache_misses = 0;   // during this step
  double mme_utilisation = 0, tpc_utilisation = 0;           // over the launch
  // The launch's roofline (engine_utilisation.h): each resource's time at its peak for the work
  // it did, and the longest of them.
  double mme_roof_ns = 0, tpc_roof_ns = 0, hbm_roof_ns = 0, roofline_ns = 0;
  std::string roofline_limit;
  // When the engines ran during the launch: at least one MME, at least one TPC, both at once;
  // from the first kernel or job to start to the last to end.
  double mme_active_ns = 0, tpc_active_ns = 0, overlap_ns = 0, engines_span_ns = 0;
  bool overlap_complete = true;
};

// What the whole run cost, from the API's counters.
struct RunTotals {
  uint64_t compiles = 0, cache_hits = 0, cache_misses = 0, corrupt_recipes = 0;
  uint64_t compile_ns = 0;          // measured wall time compiling
  uint64_t compiled_nodes = 0;
  uint64_t launches = 0, patches = 0;
  uint64_t launch_host_ns = 0;      // modeled host time inside synLaunch
  uint64_t launch_prepare_ns = 0;   // measured wall time preparing the launches (no driver submit)
};

// Runs the workload; progress and the table go to `out`. Throws std::runtime_error (an unknown
// workload, a bad preset, an API failure) with a message naming the problem.
std::vector<StepRecord> run_workload(const RunOptions& options, std::ostream& out, RunTotals* totals = nullptr);

class Workload;
// The same with a workload of the caller's (another configuration than the named one's default);
// options.workload only labels the output.
std::vector<StepRecord> run_workload(const RunOptions& options, std::unique_ptr<Workload> workload, std::ostream& out,
                                     RunTotals* totals = nullptr);

std::string steps_to_json(const RunOptions& options, const std::vector<StepRecord>& steps);

}  // namespace hpusim::zoo
