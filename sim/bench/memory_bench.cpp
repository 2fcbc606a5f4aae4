#include "sim/bench/memory_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "hw/card/memory_system.h"
#include "sim/bench/traffic_generator.h"
#include "sim/report/json_records.h"
#include "sim/stats/stats.h"
#include "traces/trace_writer.h"

namespace hpusim::bench {
namespace {

constexpr uint32_t kGeneratorPorts = 16;

struct CaseDef {
  std::string memory;
  std::string pattern;      // seq_read, rand_read, seq_write, rand_write, seq_mix70r, rand_mix70r, latency_*
  uint32_t request_bytes;
  uint64_t requests;
  uint32_t ports;
  uint32_t window;
};

Pattern pattern_of(const std::string& name) {
  return name.rfind("seq", 0) == 0 ? Pattern::kSequential : Pattern::kRandom;
}

double write_fraction_of(const std::string& name) {
  if (name.find("mix70r") != std::string::npos) return 0.3;
  if (name.find("write") != std::string::npos) return 1.0;
  return 0.0;
}

uint64_t scaled(uint64_t requests, double scale) {
  return std::max<uint64_t>(16, static_cast<uint64_t>(double(requests) * scale));
}

std::vector<CaseDef> default_cases(const std::vector<std::string>& memories, double scale) {
  std::vector<CaseDef> cases;
  auto wanted = [&](const std::string& m) { return std::find(memories.begin(), memories.end(), m) != memories.end(); };
  if (wanted("hbm")) {
    cases.push_back({"hbm", "latency_read", 64, scaled(2000, scale), 1, 1});
    for (uint32_t bytes : {64u, 128u, 256u, 1024u}) {
      cases.push_back({"hbm", "seq_read", bytes, scaled(400000ull * 64 / bytes + 20000, scale), 8, 512});
    }
    for (uint32_t bytes : {64u, 256u}) cases.push_back({"hbm", "seq_write", bytes, scaled(200000, scale), 8, 512});
    for (uint32_t bytes : {64u, 256u}) cases.push_back({"hbm", "rand_read", bytes, scaled(200000, scale), 8, 512});
    cases.push_back({"hbm", "rand_write", 64, scaled(200000, scale), 8, 512});
    cases.push_back({"hbm", "seq_mix70r", 64, scaled(200000, scale), 8, 512});
    cases.push_back({"hbm", "rand_mix70r", 256, scaled(100000, scale), 8, 512});
  }
  if (wanted("sram")) {
    cases.push_back({"sram", "latency_read", 64, scaled(2000, scale), 1, 1});
    for (uint32_t bytes : {64u, 256u, 1024u}) {
      cases.push_back({"sram", "seq_read", bytes, scaled(200000, scale), 16, 64});
    }
    cases.push_back({"sram", "seq_write", 256, scaled(200000, scale), 16, 64});
    cases.push_back({"sram", "rand_read", 256, scaled(200000, scale), 16, 64});
    cases.push_back({"sram", "rand_mix70r", 256, scaled(200000, scale), 16, 64});
  }
  if (wanted("pcie")) {
    cases.push_back({"pcie", "latency_read", 64, scaled(1000, scale), 1, 1});
    cases.push_back({"pcie", "latency_write", 64, scaled(1000, scale), 1, 1});
    for (uint32_t bytes : {64u, 256u, 4096u}) {
      cases.push_back({"pcie", "seq_read", bytes, scaled(50000, scale), 2, 64});
      cases.push_back({"pcie", "seq_write", bytes, scaled(50000, scale), 2, 64});
    }
  }
  return cases;
}

double percentile_ns(std::vector<uint64_t>& samples, double p) {
  if (samples.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * double(samples.size())));
  rank = std::clamp<size_t>(rank, 1, samples.size()) - 1;
  std::nth_element(samples.begin(), samples.begin() + rank, samples.end());
  return double(samples[rank]) / 1000.0;
}

void print_header(std::ostream& out, const preset::Card& card) {
  out << "hpusim bench memory — preset " << card.name() << " (HBM " << card.hbm().timing().name() << ", PCIe Gen"
      << card.pcie().generation() << " x" << card.pcie().lanes() << ")\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-5s %-14s %6s %9s %9s %7s %10s %10s %10s %10s\n", "mem", "pattern", "bytes",
                "requests", "GB/s", "%peak", "mean ns", "p99 ns", "Mreq/s", "Mcyc/s");
  out << line << std::string(96, '-') << "\n";
}

void print_row(std::ostream& out, const MemoryCaseResult& r) {
  char line[256];
  std::snprintf(line, sizeof line, "%-5s %-14s %6u %9llu %9.2f %6.1f%% %10.1f %10.1f %10.3f %10.2f\n",
                r.memory.c_str(), r.pattern.c_str(), r.request_bytes, static_cast<unsigned long long>(r.requests),
                r.gbps, r.pct_peak, r.mean_latency_ns, r.p99_latency_ns, r.sim_requests_per_s / 1e6,
                r.sim_cycles_per_s / 1e6);
  out << line << std::flush;
}

// Peer figures for scale: DRAMsim3 and Ramulator 2 timed on a quiet 2-core machine of this class
// (HBM2, 64 B and 32 B requests); they tick every cycle. Not measured in this run.
struct PeerSpeed {
  const char* pattern;
  double dramsim3;
  double ramulator2;
};
constexpr PeerSpeed kPeerSpeeds[] = {{"seq_read", 0.37e6, 0.28e6}, {"rand_read", 0.09e6, 0.13e6}};

void print_speed_summary(std::ostream& out, const std::vector<MemoryCaseResult>& results) {
  for (const PeerSpeed& peer : kPeerSpeeds) {
    for (const MemoryCaseResult& r : results) {
      if (r.memory != "hbm" || r.pattern != peer.pattern || r.request_bytes != 64) continue;
      char line[256];
      std::snprintf(line, sizeof line,
                    "speed: HBM %s 64 B: %.2f M simulated requests per wall second, %.1fx the reference "
                    "figure of DRAMsim3 (%.2f M at 64 B; Ramulator 2: %.2f M at 32 B)\n",
                    peer.pattern, r.sim_requests_per_s / 1e6, r.sim_requests_per_s / peer.dramsim3,
                    peer.dramsim3 / 1e6, peer.ramulator2 / 1e6);
      out << line;
    }
  }
}

}  // namespace

std::vector<MemoryCaseResult> run_memory_bench(const MemoryBenchOptions& options, std::ostream& out) {
  for (const std::string& m : options.memories) {
    if (m != "hbm" && m != "sram" && m != "pcie") {
      throw std::invalid_argument("unknown memory '" + m + "' (expected hbm, sram or pcie)");
    }
  }
  if (!(options.scale > 0)) throw std::invalid_argument("--scale must be greater than 0");

  // Fail on an unwritable output before spending the run, not after.
  for (const std::string* path : {&options.json_path, &options.stats_path, &options.trace_path,
                                  &options.chrome_trace_path}) {
    if (!path->empty() && !std::ofstream(*path, std::ios::app)) {
      throw std::runtime_error("cannot write output file '" + *path + "'");
    }
  }

  const preset::Card& card = options.card;
  hw::MemorySystem system("card", card);
  TrafficGenerator generator("bench", kGeneratorPorts);
  for (uint32_t p = 0; p < kGeneratorPorts; ++p) system.bind_master(generator.port(p), "bench" + std::to_string(p));

  const bool tracing = !options.trace_path.empty() || !options.chrome_trace_path.empty();
  traces::TraceWriter trace(tracing);
  const auto process = trace.process_track(1, "hpusim bench memory (" + card.name() + ")");
  const auto cases_track = trace.named_track(process, "cases");
  std::vector<traces::TrackId> port_tracks;
  for (uint32_t p = 0; p < kGeneratorPorts; ++p) port_tracks.push_back(trace.named_track(process, "bench port " + std::to_string(p)));
  const auto hbm_counter = trace.counter_track(process, "hbm bandwidth", "GB/s");
  const auto sram_counter = trace.counter_track(process, "sram bandwidth", "GB/s");
  const auto pcie_counter = trace.counter_track(process, "pcie bandwidth", "GB/s");

  const double hbm_peak = system.hbm().peak_bytes_per_second();
  const double sram_peak = system.sram().peak_bytes_per_second();
  const double pcie_peak = system.pcie().raw_bytes_per_second();
  const uint64_t hbm_tck = card.hbm().timing().tck_ps();
  const uint64_t sram_period = hw::period_ps_from_mhz(card.sram().clock_mhz());
  const uint64_t fabric_period = hw::period_ps_from_mhz(card.fabric().clock_mhz());

  print_header(out, card);
  std::vector<MemoryCaseResult> results;
  const std::vector<CaseDef> cases = default_cases(options.memories, options.scale);
  uint64_t seed = 1;
  for (const CaseDef& c : cases) {
    TrafficSpec spec;
    spec.pattern = pattern_of(c.pattern);
    spec.write_fraction = write_fraction_of(c.pattern);
    spec.request_bytes = c.request_bytes;
    spec.requests = c.requests;
    spec.ports = c.ports;
    spec.window = c.window;
    spec.seed = seed++;
    double peak = 0;
    uint64_t period = fabric_period;
    traces::TrackId counter = pcie_counter;
    if (c.memory == "hbm") {
      spec.region_base = card.memory_map().dram_user_base();
      spec.region_bytes = 256ull << 20;
      peak = hbm_peak;
      period = hbm_tck;
      counter = hbm_counter;
    } else if (c.memory == "sram") {
      spec.region_base = card.memory_map().sram_base() + 4096;
      spec.region_bytes = std::min<uint64_t>(card.sram().size_bytes() - 4096, 16ull << 20);
      peak = sram_peak;
      period = sram_period;
      counter = sram_counter;
    } else {
      spec.region_base = card.memory_map().host_phys_base() + (1ull << 32);
      spec.region_bytes = 64ull << 20;
      peak = pcie_peak;
    }

    auto wall_start = std::chrono::steady_clock::now();
    TrafficResult r = generator.run(spec);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

    MemoryCaseResult row;
    row.memory = c.memory;
    row.pattern = c.pattern;
    row.request_bytes = c.request_bytes;
    row.requests = r.requests;
    row.ports = c.ports;
    row.window = c.window;
    row.errors = r.errors;
    row.sim_time_ps = r.end_ps - r.start_ps;
    row.sim_cycles = row.sim_time_ps / period;
    row.gbps = row.sim_time_ps ? double(r.bytes) / (double(row.sim_time_ps) / 1000.0) : 0.0;
    row.peak_gbps = peak / 1e9;
    row.pct_peak = 100.0 * row.gbps / row.peak_gbps;
    double sum = 0;
    for (uint64_t l : r.latencies_ps) sum += double(l);
    row.mean_latency_ns = r.latencies_ps.empty() ? 0 : sum / double(r.latencies_ps.size()) / 1000.0;
    row.p99_latency_ns = percentile_ns(r.latencies_ps, 99.0);
    row.wall_seconds = wall;
    row.sim_requests_per_s = wall > 0 ? double(r.requests) / wall : 0;
    row.sim_cycles_per_s = wall > 0 ? double(row.sim_cycles) / wall : 0;
    if (r.errors) throw std::runtime_error(c.memory + " " + c.pattern + ": " + std::to_string(r.errors) + " requests failed");
    print_row(out, row);

    if (trace.enabled()) {
      const uint64_t start_ns = r.start_ps / 1000, end_ns = r.end_ps / 1000;
      const auto flow = trace.new_flow_id();
      trace.complete_slice(cases_track, start_ns, std::max(end_ns, start_ns + 1),
                           c.memory + " " + c.pattern + " " + std::to_string(c.request_bytes) + "B",
                           {{"requests", row.requests}, {"gbps", row.gbps}, {"pct_peak", row.pct_peak}}, {flow});
      bool first = true;
      for (const auto& s : r.first_requests) {
        std::vector<traces::FlowId> flows;
        if (first) flows.push_back(flow);
        trace.complete_slice(port_tracks[s.port], s.issued_ps / 1000, std::max(s.done_ps / 1000, s.issued_ps / 1000 + 1),
                             s.write ? "write" : "read", {{"address", s.address}}, flows);
        first = false;
      }
      trace.counter(counter, start_ns, row.gbps);
      trace.counter(counter, std::max(end_ns, start_ns + 1), 0.0);
    }
    results.push_back(row);
  }

  print_speed_summary(out, results);

  if (!options.stats_path.empty()) {
    stats::Registry registry;
    system.register_stats(registry.scope(""));
    for (const MemoryCaseResult& r : results) {
      auto scope = registry.scope("bench." + r.memory + "." + r.pattern + "_" + std::to_string(r.request_bytes));
      scope.counter("sim_time_ps", "ps", "simulated time of the case").add(r.sim_time_ps);
      scope.counter("requests", "count", "requests completed").add(r.requests);
      scope.scalar("gbps", "GB/s", "achieved bandwidth").set(r.gbps);
      scope.scalar("pct_peak", "%", "achieved bandwidth as a share of the theoretical peak").set(r.pct_peak);
      scope.scalar("mean_latency_ns", "ns", "mean request latency").set(r.mean_latency_ns);
      scope.scalar("p99_latency_ns", "ns", "99th percentile request latency").set(r.p99_latency_ns);
    }
    registry.write_text_file(options.stats_path);
    registry.write_json_file(options.stats_path + ".json");
  }
  if (!options.trace_path.empty()) trace.write_perfetto(options.trace_path);
  if (!options.chrome_trace_path.empty()) trace.write_chrome_json(options.chrome_trace_path);
  if (!options.json_path.empty()) write_memory_bench_json(results, card.name(), options.json_path);
  return results;
}

void write_memory_bench_json(const std::vector<MemoryCaseResult>& results, const std::string& preset,
                             const std::string& path) {
  std::vector<report::JsonRecord> records;
  for (const MemoryCaseResult& r : results) {
    report::JsonRecord record;
    record.add("preset", preset)
        .add("memory", r.memory)
        .add("pattern", r.pattern)
        .add("request_bytes", uint64_t{r.request_bytes})
        .add("requests", r.requests)
        .add("ports", uint64_t{r.ports})
        .add("window", uint64_t{r.window})
        .add("gbps", r.gbps)
        .add("peak_gbps", r.peak_gbps)
        .add("pct_peak", r.pct_peak)
        .add("mean_latency_ns", r.mean_latency_ns)
        .add("p99_latency_ns", r.p99_latency_ns)
        .add("sim_time_ps", r.sim_time_ps)
        .add("sim_cycles", r.sim_cycles)
        .add("wall_seconds", r.wall_seconds)
        .add("sim_requests_per_s", r.sim_requests_per_s)
        .add("sim_cycles_per_s", r.sim_cycles_per_s);
    records.push_back(std::move(record));
  }
  report::write_json_records(records, path);
}

}  // namespace hpusim::bench
