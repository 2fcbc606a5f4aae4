#include "sim/bench/compile_bench.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <stdexcept>

#include "sim/bench/start_phase.h"

namespace hpusim::bench {
namespace {

namespace pt = boost::property_tree;

struct ChildResult {
  pt::ptree totals;
  std::vector<pt::ptree> steps;
};

ChildResult run_once(const CompileBenchOptions& options, const std::string& workload, uint64_t phase_ns,
                     const ChildRunner& run_child) {
  const std::string stem = options.scratch_dir + "/hpusim_bench_compile_" + std::to_string(getpid()) + "_" + workload;
  std::vector<std::string> args = {"run",    workload, "--quiet", "--steps", std::to_string(options.steps),
                                   "--preset", options.preset, "--json", stem + ".json", "--totals",
                                   stem + ".totals.json"};
  if (phase_ns != 0) args.insert(args.end(), {"--start-phase-ns", std::to_string(phase_ns)});
  for (const std::string& o : options.overrides) args.insert(args.end(), {"--set", o});
  std::cerr << "bench compile: " << workload << " on " << options.preset << ", " << options.steps << " steps"
            << (options.phases > 1 ? ", started " + std::to_string(phase_ns) + " ns later" : "") << "\n";
  if (const int status = run_child(args); status != 0) {
    throw std::runtime_error("bench compile: 'hpusim run " + workload + "' failed (exit status " +
                             std::to_string(status) + ")");
  }
  ChildResult r;
  pt::read_json(stem + ".totals.json", r.totals);
  pt::ptree steps;
  pt::read_json(stem + ".json", steps);
  for (const auto& [key, step] : steps) r.steps.push_back(step);
  std::remove((stem + ".json").c_str());
  std::remove((stem + ".totals.json").c_str());
  return r;
}

double per(uint64_t total, uint64_t count, double scale) { return count ? static_cast<double>(total) / scale / count : 0; }

}  // namespace

std::vector<CompileBenchResult> run_compile_bench(const CompileBenchOptions& options, const ChildRunner& run_child,
                                                  std::ostream& out) {
  if (options.steps < 2) throw std::runtime_error("bench compile needs at least 2 steps (a compile and a cache hit)");
  if (options.phases < 1 || options.phases > kMaxPhases) throw std::runtime_error("--phases must be 1 to 64");
  std::vector<CompileBenchResult> results;
  for (const std::string& name : options.workloads) {
    const auto start = std::chrono::steady_clock::now();
    // Each run k k x kPhaseStepNs later (start_phase.h); the row is the median by the last step's
    // device time.
    std::vector<ChildResult> runs;
    for (unsigned p = 0; p < options.phases; ++p) runs.push_back(run_once(options, name, p * kPhaseStepNs, run_child));
    const auto device_of = [](const ChildResult& c) { return c.steps.back().get<uint64_t>("device_ns"); };
    std::sort(runs.begin(), runs.end(),
              [&](const ChildResult& a, const ChildResult& b) { return device_of(a) < device_of(b); });
    const ChildResult& run = runs[(runs.size() - 1) / 2];
    CompileBenchResult r;
    r.workload = name;
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.phases = options.phases;
    r.device_ns_min = device_of(runs.front());
    r.device_ns_max = device_of(runs.back());
    const auto& t = run.totals;
    const uint64_t compiles = t.get<uint64_t>("compiles"), nodes = t.get<uint64_t>("compiled_nodes");
    const uint64_t launches = t.get<uint64_t>("launches");
    r.nodes = compiles ? nodes / compiles : 0;
    r.compile_us_per_node = per(t.get<uint64_t>("compile_ns"), nodes, 1e3);
    r.launch_prepare_us = per(t.get<uint64_t>("launch_prepare_ns"), launches, 1e3);
    r.launch_modeled_us = per(t.get<uint64_t>("launch_host_ns"), launches, 1e3);
    r.patches_per_launch = launches ? t.get<uint64_t>("patches") / launches : 0;
    r.first_step_ns = run.steps.front().get<uint64_t>("step_ns");
    r.step_ns = run.steps.back().get<uint64_t>("step_ns");
    r.device_ns = run.steps.back().get<uint64_t>("device_ns");
    r.host_ns = run.steps.back().get<uint64_t>("host_ns");
    const auto& last = run.steps.back();
    r.mme_busy = last.get<double>("utilisation.mme");
    r.tpc_busy = last.get<double>("utilisation.tpc");
    r.mme_roof_ns = last.get<double>("roofline.mme_ns");
    r.tpc_roof_ns = last.get<double>("roofline.tpc_ns");
    r.hbm_roof_ns = last.get<double>("roofline.hbm_ns");
    r.roofline_ns = last.get<double>("roofline.bound_ns");
    r.roofline_limit = last.get<std::string>("roofline.limit");
    r.overlap = r.device_ns ? last.get<double>("engines_active.both_ns") / double(r.device_ns) : 0.0;
    r.engines_span_ns = last.get<double>("engines_active.span_ns");
    results.push_back(r);
  }

  out << "hpusim bench compile on " << options.preset << " (" << options.steps
      << " steps each; compile and launch preparation measured, launch cost and step times modeled)\n";
  if (options.phases > 1) {
    out << "each row: the median (by the last step's device time) of " << options.phases << " runs, each started "
        << kPhaseStepNs << " ns after the one before; spread: (longest - shortest) / the median's device time\n";
  }
  out << std::left << std::setw(12) << "workload" << std::right << std::setw(7) << "nodes" << std::setw(14)
      << "compile us/n" << std::setw(12) << "prepare us" << std::setw(12) << "modeled us" << std::setw(9) << "patches"
      << std::setw(13) << "1st step us" << std::setw(11) << "step us" << std::setw(11) << "device us" << std::setw(9)
      << "host us" << std::setw(8) << "wall s" << (options.phases > 1 ? "   spread" : "") << "\n";
  out << std::fixed << std::setprecision(1);
  for (const CompileBenchResult& r : results) {
    out << std::left << std::setw(12) << r.workload << std::right << std::setw(7) << r.nodes << std::setw(14)
        << r.compile_us_per_node << std::setw(12) << r.launch_prepare_us << std::setw(12) << r.launch_modeled_us
        << std::setw(9) << r.patches_per_launch << std::setw(13) << r.first_step_ns / 1e3 << std::setw(11)
        << r.step_ns / 1e3 << std::setw(11) << r.device_ns / 1e3 << std::setw(9) << r.host_ns / 1e3 << std::setw(8)
        << r.wall_seconds;
    if (r.phases > 1) {
      out << std::setw(8) << (r.device_ns ? 100.0 * double(r.device_ns_max - r.device_ns_min) / double(r.device_ns) : 0.0)
          << "%";
    }
    out << "\n";
  }
  out << "\ndevice time of the last step against its roofline (each resource's time at its peak for the "
         "work it did);\nengines: from the first kernel or GEMM to start to the last to end (no submission, no "
         "completion)\n";
  out << std::left << std::setw(12) << "workload" << std::right << std::setw(11) << "device us" << std::setw(8)
      << "MME %" << std::setw(8) << "TPC %" << std::setw(11) << "overlap %" << std::setw(10) << "MME us" << std::setw(10) << "TPC us" << std::setw(10)
      << "HBM us" << std::setw(10) << "bound us" << std::setw(7) << "limit" << std::setw(11) << "x roofline"
      << std::setw(12) << "engines us" << std::setw(11) << "x engines" << "\n";
  for (const CompileBenchResult& r : results) {
    out << std::left << std::setw(12) << r.workload << std::right << std::setw(11) << r.device_ns / 1e3
        << std::setw(8) << 100 * r.mme_busy << std::setw(8) << 100 * r.tpc_busy << std::setw(11) << 100 * r.overlap
        << std::setw(10)
        << r.mme_roof_ns / 1e3 << std::setw(10) << r.tpc_roof_ns / 1e3 << std::setw(10) << r.hbm_roof_ns / 1e3
        << std::setw(10) << r.roofline_ns / 1e3 << std::setw(7) << r.roofline_limit << std::setw(11)
        << std::setprecision(2) << (r.roofline_ns > 0 ? r.device_ns / r.roofline_ns : 0.0) << std::setprecision(1)
        << std::setw(12) << r.engines_span_ns / 1e3 << std::setw(11) << std::setprecision(2)
        << (r.roofline_ns > 0 ? r.engines_span_ns / r.roofline_ns : 0.0) << std::setprecision(1) << "\n";
  }
  out << std::defaultfloat;
  if (!options.json_path.empty()) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const CompileBenchResult& r : results) {
      all.push_back({{"workload", r.workload},
                     {"preset", options.preset},
                     {"nodes", r.nodes},
                     {"compile_us_per_node", r.compile_us_per_node},
                     {"launch_prepare_us", r.launch_prepare_us},
                     {"launch_modeled_us", r.launch_modeled_us},
                     {"patches_per_launch", r.patches_per_launch},
                     {"first_step_ns", r.first_step_ns},
                     {"step_ns", r.step_ns},
                     {"device_ns", r.device_ns},
                     {"host_ns", r.host_ns},
                     {"mme_busy", r.mme_busy},
                     {"tpc_busy", r.tpc_busy},
                     {"mme_roof_ns", r.mme_roof_ns},
                     {"tpc_roof_ns", r.tpc_roof_ns},
                     {"hbm_roof_ns", r.hbm_roof_ns},
                     {"roofline_ns", r.roofline_ns},
                     {"roofline_limit", r.roofline_limit},
                     {"overlap", r.overlap},
                     {"x_roofline", r.roofline_ns > 0 ? double(r.device_ns) / r.roofline_ns : 0.0},
                     {"engines_span_ns", r.engines_span_ns},
                     {"x_roofline_engines", r.roofline_ns > 0 ? r.engines_span_ns / r.roofline_ns : 0.0},
                     {"phases", r.phases},
                     {"device_ns_min", r.device_ns_min},
                     {"device_ns_max", r.device_ns_max}});
    }
    std::ofstream json(options.json_path);
    json << all.dump(2) << "\n";
    if (!json) throw std::runtime_error("could not write '" + options.json_path + "'");
  }
  return results;
}

}  // namespace hpusim::bench
