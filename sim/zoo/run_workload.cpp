#include "sim/zoo/run_workload.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "sim/platform/platform.h"
#include "sim/zoo/api_graph.h"
#include "sim/zoo/engine_utilisation.h"
#include "sim/zoo/workload.h"
#include "hw/card/card.h"
#include "hw/mme/mme_engine.h"
#include "hw/tpc/tpc_core.h"
#include "sim/stats/stats.h"

namespace hpusim::zoo {
namespace {

hpusim_CompileCounters counters() {
  hpusim_CompileCounters c{};
  check(hpusim_compileCounters(&c), "hpusim_compileCounters");
  return c;
}

uint64_t host_ns() {
  uint64_t ns = 0;
  check(hpusim_hostTimeNs(&ns), "hpusim_hostTimeNs");
  return ns;
}

std::string joined(const std::vector<std::string>& items, char sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : std::string(1, sep)) + i;
  return s;
}

// The card's memory-system and engine statistics and the compile counters, at the end of the run.
void write_stats(const std::string& path, stats::Registry& registry, const hpusim_CompileCounters& compile) {
  auto c = registry.scope("synapse");
  c.formula("compiles", "count", "graphs compiled", [compile] { return double(compile.compiles); });
  c.formula("cache_hits", "count", "recipe cache hits", [compile] { return double(compile.cacheHits); });
  c.formula("cache_misses", "count", "recipe cache misses", [compile] { return double(compile.cacheMisses); });
  c.formula("corrupt_recipes", "count", "cached recipes that failed their checks",
            [compile] { return double(compile.corruptRecipes); });
  registry.write_text_file(path);
  registry.write_json_file(path + ".json");
}

// synInitialize .. synDestroy around the run, also when it throws.
struct ApiSession {
  ApiSession() { check(synInitialize(), "synInitialize"); }
  ~ApiSession() { synDestroy(); }
};

}  // namespace

std::vector<StepRecord> run_workload(const RunOptions& options, std::ostream& out, RunTotals* totals) {
  std::unique_ptr<Workload> workload = make_workload(options.workload);
  if (!workload) {
    throw std::runtime_error("unknown workload '" + options.workload + "' (available: " +
                             joined(workload_names(), ',') + ")");
  }
  return run_workload(options, std::move(workload), out, totals);
}

std::vector<StepRecord> run_workload(const RunOptions& options, std::unique_ptr<Workload> workload, std::ostream& out,
                                     RunTotals* totals) {
  ApiSession session;
  if (!options.trace_path.empty()) check(hpusim_traceToFile(options.trace_path.c_str()), "hpusim_traceToFile");
  synDeviceId device = 0;
  check(hpusim_deviceAcquireWithPreset(&device, options.preset.c_str(), joined(options.overrides, ';').c_str()),
        "hpusim_deviceAcquireWithPreset");
  // The acquire brought the platform up (platform::boot); its card's statistics are the profile.
  platform::Platform* box = platform::Platform::current();
  if (box == nullptr) throw std::runtime_error("hpusim run: the acquire left no platform to read statistics from");
  hw::Card& card = box->card();
  out << "hpusim run " << options.workload << " on " << options.preset << ": " << options.steps << " steps\n";
  workload->setup(device, options.seed);
  // A later start shifts every step against the card's clocks (bench compile --phases).
  if (options.start_phase_ns != 0) box->cosim().charge_ns(options.start_phase_ns);

  out << std::left << std::setw(6) << "step" << std::right << std::setw(12) << "loss" << std::setw(14) << "device us"
      << std::setw(12) << "host us" << std::setw(12) << "step us" << std::setw(8) << "MME %" << std::setw(8) << "TPC %"
      << std::setw(10) << "compiles" << std::setw(8) << "hits" << std::setw(8) << "misses" << "  bound\n";
  std::vector<StepRecord> records;
  for (uint32_t i = 0; i < options.steps; ++i) {
    StepRecord r;
    r.step = i;
    const hpusim_CompileCounters before = counters();
    const EngineBusy busy_before = box->cosim().on_sim_thread([&] { return engine_busy(card); });
    const uint64_t start = host_ns();
    r.loss = workload->step(i);
    r.step_ns = host_ns() - start;
    check(hpusim_traceSpan(device, ("step " + std::to_string(i)).c_str(), start), "hpusim_traceSpan");
    const hpusim_CompileCounters after = counters();
    r.compiles = after.compiles - before.compiles;
    r.cache_hits = after.cacheHits - before.cacheHits;
    r.cache_misses = after.cacheMisses - before.cacheMisses;
    uint64_t submitted = 0, completed = 0;
    check(hpusim_lastLaunchWindowNs(&submitted, &completed), "hpusim_lastLaunchWindowNs");
    r.device_ns = completed - submitted;
    r.host_ns = r.step_ns > r.device_ns ? r.step_ns - r.device_ns : 0;
    const EngineBusy busy_after = box->cosim().on_sim_thread([&] { return engine_busy(card); });
    const Utilisation u = engine_utilisation(busy_before, busy_after, (completed - submitted) * 1000);
    r.mme_utilisation = u.mme;
    r.tpc_utilisation = u.tpc;
    const Roofline roof = roofline(busy_before, busy_after);
    r.mme_roof_ns = roof.mme_ns;
    r.tpc_roof_ns = roof.tpc_ns;
    r.hbm_roof_ns = roof.hbm_ns;
    r.roofline_ns = roof.bound_ns;
    r.roofline_limit = roof.limit;
    const Overlap overlap = box->cosim().on_sim_thread([&] { return engine_overlap(card, busy_before); });
    r.mme_active_ns = overlap.mme_ns;
    r.tpc_active_ns = overlap.tpc_ns;
    r.overlap_ns = overlap.both_ns;
    r.engines_span_ns = overlap.span_ns;
    r.overlap_complete = overlap.complete;
    out << std::left << std::setw(6) << i << std::right << std::setw(12) << std::setprecision(6) << r.loss
        << std::setw(14) << std::fixed << std::setprecision(1) << r.device_ns / 1e3 << std::setw(12)
        << r.host_ns / 1e3 << std::setw(12) << r.step_ns / 1e3 << std::setw(8) << 100 * r.mme_utilisation
        << std::setw(8) << 100 * r.tpc_utilisation << std::defaultfloat << std::setw(10) << r.compiles
        << std::setw(8) << r.cache_hits << std::setw(8) << r.cache_misses << "  "
        << (r.host_ns > r.device_ns ? "host" : "device") << "\n";
    records.push_back(r);
  }
  const hpusim_CompileCounters total = counters();
  out << "compile and cache: " << total.compiles << " compiles (" << std::fixed << std::setprecision(1)
      << total.compileNanoseconds / 1e6 << " ms measured), " << total.cacheHits << " hits, " << total.cacheMisses
      << " misses, " << total.corruptRecipes << " corrupt recipes\n"
      << std::defaultfloat;
  if (!options.stats_path.empty()) {
    box->cosim().on_sim_thread([&] { write_stats(options.stats_path, box->stats(), total); });
  }
  if (totals) {
    hpusim_LaunchCounters launches{};
    check(hpusim_launchCounters(&launches), "hpusim_launchCounters");
    *totals = RunTotals{total.compiles,       total.cacheHits,    total.cacheMisses,
                        total.corruptRecipes, total.compileNanoseconds, total.compiledNodes,
                        launches.launches,    launches.patches,   launches.hostNanoseconds,
                        launches.prepareNanoseconds};
  }
  if (!options.json_path.empty()) {
    std::ofstream json(options.json_path);
    json << steps_to_json(options, records);
    if (!json) throw std::runtime_error("could not write '" + options.json_path + "'");
  }
  workload.reset();   // its device buffers and streams go before the session does
  // The release writes the trace: a failure to write it is the run's error, not lost in teardown.
  check(synDeviceRelease(device), "synDeviceRelease");
  return records;
}

std::string steps_to_json(const RunOptions& options, const std::vector<StepRecord>& steps) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const StepRecord& r : steps) {
    nlohmann::ordered_json step;
    step["workload"] = options.workload;
    step["preset"] = options.preset;
    step["step"] = r.step;
    step["loss"] = r.loss;
    step["device_ns"] = r.device_ns;
    step["host_ns"] = r.host_ns;
    step["step_ns"] = r.step_ns;
    step["compiles"] = r.compiles;
    step["cache_hits"] = r.cache_hits;
    step["cache_misses"] = r.cache_misses;
    step["utilisation"] = {{"mme", r.mme_utilisation}, {"tpc", r.tpc_utilisation}};
    step["roofline"] = {{"mme_ns", r.mme_roof_ns},
                        {"tpc_ns", r.tpc_roof_ns},
                        {"hbm_ns", r.hbm_roof_ns},
                        {"bound_ns", r.roofline_ns},
                        {"limit", r.roofline_limit}};
    step["engines_active"] = {{"mme_ns", r.mme_active_ns},
                              {"tpc_ns", r.tpc_active_ns},
                              {"both_ns", r.overlap_ns},
                              {"span_ns", r.engines_span_ns},
                              {"complete", r.overlap_complete}};
    all.push_back(std::move(step));
  }
  return all.dump(2) + "\n";
}

}  // namespace hpusim::zoo
