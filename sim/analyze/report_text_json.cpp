#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/analyze/formatting.h"
#include "sim/analyze/report_writers.h"

namespace hpusim::analyze {
namespace {

std::string ms(uint64_t ns) { return milliseconds(ns); }
std::string pct(double fraction) { return percent(fraction, 1); }

nlohmann::ordered_json step_json(const StepMetrics& m) {
  nlohmann::ordered_json j;
  j["name"] = m.name;
  j["start_ns"] = m.start_ns;
  j["duration_ns"] = m.duration_ns();
  j["host_busy_ns"] = m.host_busy_ns;
  j["host_wait_ns"] = m.host_wait_ns;
  j["device_busy_ns"] = m.device_busy_ns;
  j["device_idle_ns"] = m.device_idle_ns;
  j["device_idle_for_host_ns"] = m.idle_for_host_ns;
  j["engine_utilisation"] = m.engine_class_use;
  j["compiles"] = m.compiles;
  j["cache_hits"] = m.cache_hits;
  j["syncs"] = m.syncs;
  j["ops"] = m.ops;
  j["mark_steps"] = m.mark_steps;
  j["fallbacks"] = m.fallbacks;
  j["verdict"] = m.verdict;
  return j;
}

}  // namespace

void write_text(const Report& r, std::ostream& out) {
  out << "hpusim analyze " << r.source << ": " << r.steps.size() << (r.steps.size() == 1 ? " step" : " steps")
      << (r.first_steady == 1 ? " (the first is warm-up)" : "")
      << (r.first_steady > 1 ? " (the first " + std::to_string(r.first_steady) + " are warm-up)" : "") << "\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %9s %9s %9s %9s %9s %9s %8s %6s %6s  %s\n", "step", "step ms", "host ms",
                "wait ms", "device ms", "idle ms", "idle-host", "compiles", "syncs", "ops", "verdict");
  out << line;
  const auto row = [&](const StepMetrics& m) {
    std::snprintf(line, sizeof line, "%-24s %9s %9s %9s %9s %9s %9s %8u %6u %6u  %s\n", m.name.c_str(),
                  ms(m.duration_ns()).c_str(), ms(m.host_busy_ns).c_str(), ms(m.host_wait_ns).c_str(),
                  ms(m.device_busy_ns).c_str(), ms(m.device_idle_ns).c_str(), ms(m.idle_for_host_ns).c_str(),
                  m.compiles, m.syncs, m.ops, m.verdict.c_str());
    out << line;
  };
  for (const StepMetrics& m : r.steps) row(m);
  row(r.steady);
  if (!r.engines.empty()) {
    out << "\nengine utilisation (steady steps):";
    for (const auto& [kind, use] : r.steady.engine_class_use) out << "  " << kind << " " << pct(use);
    out << "\n ";
    for (const EngineUse& e : r.engines) out << " " << e.instance << " " << pct(e.busy_fraction);
    out << "\n";
  }
  if (!r.top_host.empty()) {
    out << "\ntop host costs per steady step:\n";
    size_t shown = 0;
    for (const auto& [kind, ns] : r.top_host) {
      if (shown++ == 8) break;
      std::snprintf(line, sizeof line, "  %-40s %9s ms\n", kind.c_str(), ms(ns).c_str());
      out << line;
    }
  }
  out << "\nverdict: " << r.verdict << "\n";
  for (const std::string& g : r.guidance) out << "  - " << g << "\n";
}

void write_json(const Report& r, std::ostream& out) {
  nlohmann::ordered_json j;
  j["source"] = r.source;
  j["verdict"] = r.verdict;
  j["guidance"] = r.guidance;
  j["first_steady_step"] = r.first_steady;
  j["steady"] = step_json(r.steady);
  j["steps"] = nlohmann::ordered_json::array();
  for (const StepMetrics& m : r.steps) j["steps"].push_back(step_json(m));
  j["engines"] = nlohmann::ordered_json::array();
  for (const EngineUse& e : r.engines) {
    j["engines"].push_back({{"instance", e.instance}, {"engine", e.engine}, {"utilisation", e.busy_fraction}});
  }
  j["top_host_costs_ns_per_step"] = nlohmann::ordered_json::array();
  for (const auto& [kind, ns] : r.top_host) j["top_host_costs_ns_per_step"].push_back({{"kind", kind}, {"ns", ns}});
  j["fallbacks"] = r.fallbacks;
  j["recompiles"] = nlohmann::ordered_json::array();
  for (const Recompile& c : r.recompiles) {
    j["recompiles"].push_back({{"graph", c.graph}, {"compiles", c.compiles}, {"change", c.change}});
  }
  out << j.dump(1) << "\n";
}

}  // namespace hpusim::analyze
