#include "sim/analyze/step_analysis.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "sim/analyze/formatting.h"
#include "sim/analyze/intervals.h"

namespace hpusim::analyze {
namespace {

using traces::SliceInfo;
using traces::TrackInfo;
using traces::TrackKind;
using traces::TraceModel;

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string format_ms(uint64_t ns) { return milliseconds(ns) + " ms"; }

std::string arg_text(const SliceInfo& s, const std::string& name) {
  for (const traces::Arg& a : s.args) {
    if (a.name != name) continue;
    if (const auto* text = std::get_if<std::string>(&a.value)) return *text;
  }
  return "";
}

std::string op_name(std::string name) {
  if (starts_with(name, "aten::")) name = name.substr(6);
  return name;
}

// Where each track belongs: its process's name, and what an engine track is.
struct TrackRoles {
  std::map<traces::TrackId, std::string> process_name;
  std::map<traces::TrackId, std::pair<std::string, std::string>> engine;   // track -> (kind, instance)
  std::vector<traces::TrackId> launch_tracks;
  std::vector<traces::TrackId> queue_tracks;   // QMAN streams: their command buffers
  // The driver's interrupt deliveries (a CS's MSI to its completion): not host work of their own
  // (the handler's cost is inside the ioctl that took the interrupt).
  std::vector<traces::TrackId> interrupt_tracks;

  explicit TrackRoles(const TraceModel& trace) {
    static const std::regex engine_name(R"(^(TPC|MME)(\d+)$|^(DMA)(\d+) core$)");
    static const std::regex queue_name(R"( (stream \d+|lower CP)$)");
    for (const TrackInfo& t : trace.tracks) {
      const TrackInfo* p = &t;
      while (p->kind != TrackKind::kProcess && p->parent != traces::kNoTrack && trace.track(p->parent) != nullptr) {
        p = trace.track(p->parent);
      }
      process_name[t.uuid] = p->kind == TrackKind::kProcess ? p->name : "";
      if (driver(t.uuid) && t.name == "interrupts") interrupt_tracks.push_back(t.uuid);
      if (!device(t.uuid) || t.kind == TrackKind::kCounter) continue;
      std::smatch m;
      if (std::regex_match(t.name, m, engine_name)) {
        const std::string kind = m[1].matched ? m[1].str() : m[3].str();
        engine[t.uuid] = {kind, kind + (m[2].matched ? m[2].str() : m[4].str())};
      } else if (t.name == "launches" || starts_with(t.name, "launches ")) {
        launch_tracks.push_back(t.uuid);
      } else if (std::regex_search(t.name, queue_name)) {
        queue_tracks.push_back(t.uuid);
      }
    }
  }
  bool device(traces::TrackId track) const {
    const auto it = process_name.find(track);
    return it != process_name.end() && starts_with(it->second, "device");
  }
  // hpusim's host layers ("host: framework", "host: synapse", "host: driver"): in a profiler's
  // merged trace the profiler's own rows are on its wall clock, not the modeled one.
  bool hpusim_host(traces::TrackId track) const {
    const auto it = process_name.find(track);
    return it != process_name.end() && starts_with(it->second, "host:");
  }
  bool driver(traces::TrackId track) const {
    const auto it = process_name.find(track);
    return it != process_name.end() && starts_with(it->second, "host: driver");
  }
};

bool is_step(const std::string& name) {
  static const std::regex step(R"(^(step \d+|ProfilerStep#\d+)$)");
  return std::regex_match(name, step);
}
bool is_own_step(const std::string& name) { return starts_with(name, "step "); }

bool is_wait(const SliceInfo& s, const TrackRoles& roles) {
  return starts_with(s.name, "wait: ") || (s.name == "WAIT_CS" && roles.driver(s.track));
}

// What kind of host work a slice is, for the top host costs ("" for waits and steps' own time).
std::string host_kind(const SliceInfo& s, const TrackRoles& roles) {
  const std::string& n = s.name;
  if (roles.driver(s.track)) return "driver " + n;
  if (starts_with(n, "record ")) return "op record";
  if (starts_with(n, "cpu fallback ")) return "cpu fallback";
  if (n == "mark_step" || starts_with(n, "flush: ")) return "flush (graph walk)";
  if (n == "graph replay" || n == "hpu graph replay" || n == "compiled graph call") return "hpu graph replay";
  if (starts_with(n, "compile")) return "compile";
  if (n == "recipe cache hit") return "graph hash and recipe cache lookup";
  if (starts_with(n, "launch ")) return "launch";
  if (is_step(n)) return "other host work";
  return n;
}

// Host work by kind inside [from, to): every host slice's time not covered by a slice nested in
// it (across the host tracks: they all run on the host's clock), waits excluded.
void add_host_costs(const std::vector<const SliceInfo*>& host, const TrackRoles& roles, uint64_t from, uint64_t to,
                    std::map<std::string, uint64_t>& out) {
  std::vector<const SliceInfo*> in;
  for (const SliceInfo* s : host) {
    if (s->closed && s->end_ns > from && s->start_ns < to) in.push_back(s);
  }
  std::stable_sort(in.begin(), in.end(), [](const SliceInfo* a, const SliceInfo* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  std::vector<const SliceInfo*> open;
  uint64_t t = from;
  const auto charge = [&](const SliceInfo* s, uint64_t until) {
    if (until > t) {
      const std::string kind = is_wait(*s, roles) ? "" : host_kind(*s, roles);
      if (!kind.empty()) out[kind] += until - t;
      t = until;
    }
  };
  const auto advance = [&](uint64_t until) {
    while (!open.empty()) {
      const SliceInfo* top = open.back();
      const uint64_t end = std::min(top->end_ns, to);
      if (end <= until) {
        charge(top, end);
        open.pop_back();
      } else {
        charge(top, until);
        return;
      }
    }
    t = std::max(t, until);
  };
  for (const SliceInfo* s : in) {
    advance(std::max(s->start_ns, from));
    open.push_back(s);
  }
  advance(to);
}

// "node #3: adam_f32(0.001,0.9,3) -> adam_f32(0.001,0.9,4)" between two "nodes and constants".
std::string difference(const std::string& before, const std::string& after) {
  std::istringstream a(before), b(after);
  std::vector<std::string> x, y;
  for (std::string w; a >> w;) x.push_back(w);
  for (std::string w; b >> w;) y.push_back(w);
  if (x.size() != y.size()) {
    return "its nodes changed (" + std::to_string(x.size()) + " -> " + std::to_string(y.size()) + " nodes)";
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i]) continue;
    const size_t paren = x[i].find('(');
    const bool same_op = paren != std::string::npos && y[i].compare(0, paren + 1, x[i], 0, paren + 1) == 0;
    return std::string(same_op ? "a constant of node #" : "node #") + std::to_string(i) + " changed: " + x[i] +
           " -> " + y[i];
  }
  return "the same nodes and constants: its tensor shapes or layout changed";
}

template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void decide(StepMetrics& m) {
  const double step = static_cast<double>(std::max<uint64_t>(m.duration_ns(), 1));
  if (m.idle_for_host_ns >= 0.3 * step && m.host_busy_ns >= m.device_busy_ns) {
    m.verdict = "host-bound";
  } else if (m.device_busy_ns >= 0.6 * step || m.host_wait_ns >= 0.5 * step) {
    m.verdict = "device-bound";
  } else {
    m.verdict = "balanced";
  }
}

}  // namespace

Report analyze(const TraceModel& trace, const std::string& source) {
  const TrackRoles roles(trace);
  Report report;
  report.source = source;

  std::vector<const SliceInfo*> host, steps;
  bool own_host = false;   // the trace has hpusim's host tracks: read those only
  for (const TrackInfo& t : trace.tracks) own_host = own_host || roles.hpusim_host(t.uuid);
  std::map<std::string, std::vector<Interval>> engine_busy;   // instance -> intervals
  std::map<std::string, std::string> engine_kind;
  for (const auto& [track, engine] : roles.engine) {   // idle engines count too
    engine_busy[engine.second];
    engine_kind[engine.second] = engine.first;
  }
  std::vector<Interval> device_busy, launches, waits;
  uint64_t first = UINT64_MAX, last = 0;
  for (const SliceInfo& s : trace.slices) {
    if (!s.closed) continue;
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
    if (roles.device(s.track)) {
      const auto e = roles.engine.find(s.track);
      if (e != roles.engine.end()) {
        engine_busy[e->second.second].push_back({s.start_ns, s.end_ns});
        engine_kind[e->second.second] = e->second.first;
        device_busy.push_back({s.start_ns, s.end_ns});
      } else if (std::find(roles.queue_tracks.begin(), roles.queue_tracks.end(), s.track) != roles.queue_tracks.end()) {
        device_busy.push_back({s.start_ns, s.end_ns});
      } else if (std::find(roles.launch_tracks.begin(), roles.launch_tracks.end(), s.track) != roles.launch_tracks.end()) {
        launches.push_back({s.start_ns, s.end_ns});
      }
      continue;
    }
    if (own_host && !roles.hpusim_host(s.track)) continue;
    if (std::find(roles.interrupt_tracks.begin(), roles.interrupt_tracks.end(), s.track) != roles.interrupt_tracks.end())
      continue;
    host.push_back(&s);
    if (is_step(s.name)) steps.push_back(&s);
    if (is_wait(s, roles)) waits.push_back({s.start_ns, s.end_ns});
  }
  if (first == UINT64_MAX) throw std::runtime_error(source + ": the trace has no slices to analyse");
  // The device is busy while a QMAN works through a command buffer or an engine works. A trace
  // without the card's tracks (a profiler's) has only the launches, whose ends are when the host
  // learnt of their completion.
  if (device_busy.empty()) device_busy = launches;
  device_busy = merged(std::move(device_busy));
  waits = merged(std::move(waits));
  for (auto& [instance, busy] : engine_busy) busy = merged(std::move(busy));

  // hpusim's "step N" spans when there are any (a profiler's ProfilerStep#N are on its own clock).
  if (std::any_of(steps.begin(), steps.end(), [](const SliceInfo* s) { return is_own_step(s->name); })) {
    steps.erase(std::remove_if(steps.begin(), steps.end(), [](const SliceInfo* s) { return !is_own_step(s->name); }),
                steps.end());
  }
  std::stable_sort(steps.begin(), steps.end(), [](const SliceInfo* a, const SliceInfo* b) { return a->start_ns < b->start_ns; });
  if (steps.empty()) {
    StepMetrics whole;
    whole.name = "whole trace";
    whole.start_ns = first;
    whole.end_ns = last;
    report.steps.push_back(whole);
  } else {
    for (const SliceInfo* s : steps) {
      StepMetrics m;
      m.name = s->name;
      m.start_ns = s->start_ns;
      m.end_ns = s->end_ns;
      report.steps.push_back(m);
    }
  }

  // Compiles in order, for the recompile analysis: (step index, slice).
  std::vector<std::pair<size_t, const SliceInfo*>> compiles;
  for (size_t i = 0; i < report.steps.size(); ++i) {
    StepMetrics& m = report.steps[i];
    const uint64_t from = m.start_ns, to = m.end_ns;
    m.host_wait_ns = covered(waits, from, to);
    m.host_busy_ns = m.duration_ns() - m.host_wait_ns;
    m.device_busy_ns = covered(device_busy, from, to);
    m.device_idle_ns = m.duration_ns() - m.device_busy_ns;
    m.idle_for_host_ns = uncovered_by_either(device_busy, waits, from, to);
    std::map<std::string, std::pair<double, unsigned>> by_kind;
    for (const auto& [instance, busy] : engine_busy) {
      auto& k = by_kind[engine_kind[instance]];
      k.first += m.duration_ns() ? static_cast<double>(covered(busy, from, to)) / static_cast<double>(m.duration_ns()) : 0;
      ++k.second;
    }
    for (const auto& [kind, sum] : by_kind) m.engine_class_use[kind] = sum.first / sum.second;
    for (const SliceInfo* s : host) {
      if (s->start_ns < from || s->start_ns >= to) continue;
      if (s->name == "compile") {
        ++m.compiles;
        compiles.emplace_back(i, s);
      } else if (s->name == "recipe cache hit") {
        ++m.cache_hits;
      } else if (starts_with(s->name, "cpu fallback ")) {
        ++m.fallbacks[op_name(s->name.substr(13))];
        ++report.fallbacks[op_name(s->name.substr(13))];
      } else if (s->name == "wait: copy to host") {
        ++m.syncs;
      } else if (starts_with(s->name, "record ")) {
        ++m.ops;
      } else if (s->name == "mark_step") {
        ++m.mark_steps;
      }
    }
    decide(m);
  }

  // Warm-up: the leading steps that compile (the first at least, at most half of them), when
  // there are several steps.
  unsigned warmup = 0;
  while (warmup < report.steps.size() / 2 && (warmup == 0 || report.steps[warmup].compiles > 0)) ++warmup;
  report.first_steady = warmup;
  std::vector<StepMetrics> steady(report.steps.begin() + report.first_steady, report.steps.end());
  StepMetrics& med = report.steady;
  med.name = "steady steps (median)";
  const auto pick = [&](auto field) {
    std::vector<uint64_t> v;
    for (const StepMetrics& m : steady) v.push_back(m.*field);
    return median(v);
  };
  med.start_ns = 0;
  med.end_ns = [&] {
    std::vector<uint64_t> v;
    for (const StepMetrics& m : steady) v.push_back(m.duration_ns());
    return median(v);
  }();
  med.host_busy_ns = pick(&StepMetrics::host_busy_ns);
  med.host_wait_ns = pick(&StepMetrics::host_wait_ns);
  med.device_busy_ns = pick(&StepMetrics::device_busy_ns);
  med.device_idle_ns = pick(&StepMetrics::device_idle_ns);
  med.idle_for_host_ns = pick(&StepMetrics::idle_for_host_ns);
  const auto pick_count = [&](unsigned StepMetrics::*field) {
    std::vector<unsigned> v;
    for (const StepMetrics& m : steady) v.push_back(m.*field);
    return median(v);
  };
  med.compiles = pick_count(&StepMetrics::compiles);
  med.cache_hits = pick_count(&StepMetrics::cache_hits);
  med.syncs = pick_count(&StepMetrics::syncs);
  med.ops = pick_count(&StepMetrics::ops);
  med.mark_steps = pick_count(&StepMetrics::mark_steps);
  for (const StepMetrics& m : steady) {
    for (const auto& [op, n] : m.fallbacks) med.fallbacks[op] += n;
  }
  for (auto& [op, n] : med.fallbacks) n = (n + static_cast<unsigned>(steady.size()) - 1) / static_cast<unsigned>(steady.size());
  {
    std::map<std::string, std::vector<double>> use;
    for (const StepMetrics& m : steady)
      for (const auto& [kind, u] : m.engine_class_use) use[kind].push_back(u);
    for (auto& [kind, v] : use) med.engine_class_use[kind] = median(v);
  }
  decide(med);
  report.verdict = med.verdict;

  uint64_t steady_ns = 0;
  for (const StepMetrics& m : steady) steady_ns += m.duration_ns();
  for (const auto& [instance, busy] : engine_busy) {
    uint64_t b = 0;
    for (const StepMetrics& m : steady) b += covered(busy, m.start_ns, m.end_ns);
    report.engines.push_back({instance, engine_kind[instance], steady_ns ? static_cast<double>(b) / steady_ns : 0});
  }
  std::stable_sort(report.engines.begin(), report.engines.end(), [](const EngineUse& a, const EngineUse& b) {
    if (a.engine != b.engine) return a.engine < b.engine;
    if (a.instance.size() != b.instance.size()) return a.instance.size() < b.instance.size();
    return a.instance < b.instance;
  });

  std::map<std::string, uint64_t> costs;
  for (const StepMetrics& m : steady) add_host_costs(host, roles, m.start_ns, m.end_ns, costs);
  for (const auto& [kind, ns] : costs) report.top_host.emplace_back(kind, ns / std::max<size_t>(steady.size(), 1));
  std::stable_sort(report.top_host.begin(), report.top_host.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  // Recompiles: graphs compiled again in the steady steps, with what changed since the previous
  // compile of the same nodes (a constant) or of the same graph name (nodes or shapes).
  std::map<std::string, Recompile> again;
  std::vector<std::string> order;
  for (size_t c = 0; c < compiles.size(); ++c) {
    const auto& [step, slice] = compiles[c];
    if (step < report.first_steady) continue;
    const std::string graph = arg_text(*slice, "graph");
    const std::string nodes = arg_text(*slice, "nodes and constants");
    const auto ops_of = [](const std::string& text) {
      std::string out;
      std::istringstream in(text);
      for (std::string w; in >> w;) out += w.substr(0, w.find('(')) + ' ';
      return out;
    };
    std::string change = "first compiled here (a new graph: new ops or shapes)";
    for (size_t p = c; p-- > 0;) {
      const SliceInfo* before = compiles[p].second;
      const std::string prior = arg_text(*before, "nodes and constants");
      if (ops_of(prior) == ops_of(nodes)) {
        change = difference(prior, nodes);
        break;
      }
    }
    const std::string key = graph.empty() ? "(unnamed)" : graph;
    if (!again.count(key)) order.push_back(key);
    Recompile& r = again[key];
    r.graph = key;
    ++r.compiles;
    r.change = change;
  }
  for (const std::string& key : order) report.recompiles.push_back(again[key]);

  // Guidance.
  const double step = static_cast<double>(std::max<uint64_t>(med.duration_ns(), 1));
  auto& g = report.guidance;
  if (report.verdict == "host-bound") {
    g.push_back("The host is the bottleneck: the device idles " + percent(med.idle_for_host_ns / step) +
                " of a step waiting for the host (" + format_ms(med.host_busy_ns) + " of host work against " +
                format_ms(med.device_busy_ns) + " of device work). Cut per-op host work with HPU graphs "
                "(wrap_in_hpu_graph for inference; make_graphed_callables, ModuleCacher or capture and replay "
                "for training) or torch.compile(backend=\"hpu_backend\").");
  }
  if (med.device_busy_ns < 0.5 * step && report.verdict != "device-bound") {
    g.push_back("The device is busy only " + percent(med.device_busy_ns / step) +
                " of a step: raise the batch size so each step gives it more work.");
  }
  if (med.syncs > 0) {
    g.push_back(std::to_string(med.syncs) + " host synchronisation" + (med.syncs == 1 ? "" : "s") +
                " per step read values back (.item(), print, .cpu(), a data-dependent branch): each waits for the "
                "device to finish everything queued (" + format_ms(med.host_wait_ns) +
                " of waiting per step). Remove them from the loop or read values every N steps.");
  }
  if (!report.fallbacks.empty()) {
    std::string ops;
    for (const auto& [op, n] : report.fallbacks) ops += (ops.empty() ? "" : ", ") + op + " (" + std::to_string(n) + "x)";
    g.push_back("CPU fallbacks: " + ops + ". Each copies its operands to the host and back and ends the lazy "
                "graph there; use ops the HPU supports or move this work out of the step.");
  }
  for (const Recompile& r : report.recompiles) {
    g.push_back("Graph '" + r.graph + "' is compiled again in steady steps (" + std::to_string(r.compiles) +
                " compile" + (r.compiles == 1 ? "" : "s") + "): " + r.change +
                ". Pass values that change every step as tensors (not Python numbers) and keep shapes static "
                "(pad the last batch, or drop it).");
  }
  if (report.verdict != "device-bound" && med.mark_steps == 1 && med.ops > 20 && med.idle_for_host_ns > 0.3 * step) {
    g.push_back("One mark_step per step: the device starts only once the whole step is recorded (" +
                std::to_string(med.ops) + " ops). Add htcore.mark_step() after loss.backward() so the device "
                "runs the backward while the host records the optimizer step.");
  }
  if (g.empty()) {
    g.push_back(report.verdict == "device-bound"
                    ? "The device is the bottleneck: speed up the model's kernels (bf16 autocast, fused ops such as "
                      "FusedSDPA and the hpex fused optimizers) rather than the host."
                    : "Host and device are balanced: nothing stands out.");
  }
  return report;
}

}  // namespace hpusim::analyze
