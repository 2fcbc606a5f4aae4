// `hpusim bench compile`: what the Synapse layers cost the host, per zoo workload. Each workload
// runs a few steps in a child `hpusim run` process (SystemC elaborates once per process): the
// first step compiles its graph, the later ones hit the recipe cache. Measured: the compile's
// wall time per node and the wall time a launch spends preparing its submission (checks,
// patching, command buffers; the driver's submit runs the simulated device and is not in it).
// Modeled: the launch's host cost from the preset's cost table, and the step, device and host
// times of the first step and of the steady (last) step.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace hpusim::bench {

struct CompileBenchOptions {
  std::vector<std::string> workloads = {"mlp", "conv-block", "bert-layer"};
  std::string preset = "hl205";
  std::vector<std::string> overrides;
  uint32_t steps = 2;
  std::string json_path;
  std::string scratch_dir = "/tmp";   // the children's result files
  unsigned phases = 1;   // runs of each workload, started 37 ns apart; the row is the median one (1..64)
};

struct CompileBenchResult {
  std::string workload;
  uint64_t nodes = 0;                 // of the step graph
  double compile_us_per_node = 0;     // measured
  double launch_prepare_us = 0;       // measured, per launch
  double launch_modeled_us = 0;       // modeled, per launch
  uint64_t patches_per_launch = 0;
  uint64_t first_step_ns = 0;         // modeled: with the compile
  uint64_t step_ns = 0, device_ns = 0, host_ns = 0;   // modeled: the last step
  // The last step's launch: engine busy shares and its roofline (sim/zoo/engine_utilisation.h).
  double mme_busy = 0, tpc_busy = 0;
  double mme_roof_ns = 0, tpc_roof_ns = 0, hbm_roof_ns = 0, roofline_ns = 0;
  std::string roofline_limit;
  double overlap = 0;   // share of the launch in which an MME and a TPC both ran
  double engines_span_ns = 0;   // from the first kernel or MME job to start to the last to end
  double wall_seconds = 0;             // all its runs
  unsigned phases = 1;                 // runs: the row is the median one by the last step's device time
  uint64_t device_ns_min = 0, device_ns_max = 0;
};

// `run_child(args)` runs `hpusim args...` and returns its exit status.
using ChildRunner = std::function<int(const std::vector<std::string>&)>;

std::vector<CompileBenchResult> run_compile_bench(const CompileBenchOptions& options, const ChildRunner& run_child,
                                                  std::ostream& out);

}  // namespace hpusim::bench
