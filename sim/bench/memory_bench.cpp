#include "sim/bench/memory_bench.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "hw/card/memory_system.h"
#include "sim/bench/controller_traffic.h"
#include "sim/bench/dramsim3_reference.h"
#include "sim/bench/traffic_generator.h"
#include "sim/report/json_records.h"
#include "sim/stats/stats.h"
#include "traces/trace_writer.h"
#include "sim/preset/preset.h"

namespace hpusim::bench {
namespace {

constexpr uint32_t kGeneratorPorts = 16;
constexpr const char* kDramSim3TimingName = "DRAMsim3-HBM2_8Gb_x128";

struct CaseDef {
  std::string memory;
  std::string pattern;      // seq_read, rand_read, seq_write, rand_write, seq_mix70r, rand_mix70r, latency_*
  uint32_t request_bytes;
  uint64_t requests;
  uint32_t ports;
  uint32_t window;          // per port at the fabric; in all at the controller
  std::string at = "fabric";
  bool sequential = false;
  double write_fraction = 0;
  uint64_t seed = 0;        // 0: the case's position in the list
  const DramSim3Reference* reference = nullptr;
};

bool sequential_of(const std::string& name) {
  return name.rfind("seq", 0) == 0 || name == "latency_row_hit";
}

double write_fraction_of(const std::string& name) {
  if (name.find("mix70r") != std::string::npos) return 0.3;
  if (name.find("mix50r") != std::string::npos) return 0.5;
  if (name.find("write") != std::string::npos) return 1.0;
  return 0.0;
}

uint64_t scaled(uint64_t requests, double scale) {
  return std::max<uint64_t>(16, static_cast<uint64_t>(double(requests) * scale));
}

CaseDef named_case(std::string memory, std::string pattern, uint32_t bytes, uint64_t requests, uint32_t ports,
                   uint32_t window) {
  CaseDef c{std::move(memory), std::move(pattern), bytes, requests, ports, window};
  c.sequential = sequential_of(c.pattern);
  c.write_fraction = write_fraction_of(c.pattern);
  return c;
}

std::vector<CaseDef> default_cases(const std::vector<std::string>& memories, double scale) {
  std::vector<CaseDef> cases;
  auto wanted = [&](const std::string& m) { return std::find(memories.begin(), memories.end(), m) != memories.end(); };
  auto add = [&](const char* memory, const char* pattern, uint32_t bytes, uint64_t requests, uint32_t ports,
                 uint32_t window) { cases.push_back(named_case(memory, pattern, bytes, scaled(requests, scale), ports, window)); };
  if (wanted("hbm")) {
    add("hbm", "latency_read", 64, 2000, 1, 1);
    add("hbm", "latency_row_hit", 64, 2000, 1, 1);
    for (uint32_t bytes : {64u, 128u, 256u, 1024u}) add("hbm", "seq_read", bytes, 400000ull * 64 / bytes + 20000, 8, 512);
    for (uint32_t bytes : {64u, 256u}) add("hbm", "seq_write", bytes, 200000, 8, 512);
    for (uint32_t bytes : {64u, 256u}) add("hbm", "rand_read", bytes, 200000, 8, 512);
    add("hbm", "rand_write", 64, 200000, 8, 512);
    add("hbm", "seq_mix70r", 64, 200000, 8, 512);
    add("hbm", "rand_mix70r", 256, 100000, 8, 512);
  }
  if (wanted("sram")) {
    add("sram", "latency_read", 64, 2000, 1, 1);
    for (uint32_t bytes : {64u, 256u, 1024u}) add("sram", "seq_read", bytes, 200000, 16, 64);
    add("sram", "seq_write", 256, 200000, 16, 64);
    add("sram", "rand_read", 256, 200000, 16, 64);
    add("sram", "rand_mix70r", 256, 200000, 16, 64);
  }
  if (wanted("pcie")) {
    add("pcie", "latency_read", 64, 1000, 1, 1);
    add("pcie", "latency_write", 64, 1000, 1, 1);
    for (uint32_t bytes : {64u, 256u, 4096u}) {
      add("pcie", "seq_read", bytes, 50000, 2, 64);
      add("pcie", "seq_write", bytes, 50000, 2, 64);
    }
  }
  return cases;
}

std::vector<CaseDef> dramsim3_cases(double scale) {
  std::vector<CaseDef> cases;
  for (const DramSim3Reference& r : dramsim3_references()) {
    CaseDef c = named_case("hbm", r.name, r.request_bytes, scaled(r.requests, scale), 1, r.window);
    c.at = "controller";
    c.sequential = r.sequential;
    c.write_fraction = r.write_permille / 1000.0;
    c.seed = r.seed;
    c.reference = &r;
    cases.push_back(c);
  }
  return cases;
}

CaseDef chosen_case(const MemoryCase& m, const std::string& at) {
  if (m.pattern != "seq" && m.pattern != "rand") {
    throw std::invalid_argument("unknown pattern '" + m.pattern + "' (expected seq or rand)");
  }
  if (!(m.write_fraction >= 0 && m.write_fraction <= 1)) {
    throw std::invalid_argument("the write fraction must be between 0 and 1");
  }
  if (m.request_bytes == 0 || m.requests == 0 || m.window == 0 || m.ports == 0) {
    throw std::invalid_argument("request size, count, window and ports must all be at least 1");
  }
  if (m.ports > kGeneratorPorts) {
    throw std::invalid_argument("at most " + std::to_string(kGeneratorPorts) + " ports");
  }
  const uint32_t permille = static_cast<uint32_t>(std::lround(m.write_fraction * 1000));
  std::string name = m.pattern + (permille == 0 ? "_read" : permille == 1000 ? "_write"
                                                 : "_mix" + std::to_string((1000 - permille) / 10) + "r");
  CaseDef c{m.memory, name, m.request_bytes, m.requests, m.ports, m.window};
  if (at == "fabric") {
    // The option counts all ports; each port keeps window / ports (so a window of 1 is one port).
    c.ports = std::min(m.ports, m.window);
    c.window = m.window / c.ports;
  }
  c.at = at;
  c.sequential = m.pattern == "seq";
  c.write_fraction = m.write_fraction;
  c.seed = m.seed;
  return c;
}

double mean_ns(const std::vector<uint64_t>& samples_ps) {
  if (samples_ps.empty()) return 0;
  double sum = 0;
  for (uint64_t l : samples_ps) sum += double(l);
  return sum / double(samples_ps.size()) / 1000.0;
}

double percentile_ns(std::vector<uint64_t>& samples, double p) {
  if (samples.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * double(samples.size())));
  rank = std::clamp<size_t>(rank, 1, samples.size()) - 1;
  std::nth_element(samples.begin(), samples.begin() + rank, samples.end());
  return double(samples[rank]) / 1000.0;
}

void print_header(std::ostream& out, const preset::Card& card, bool references) {
  out << "hpusim bench memory — preset " << card.name() << " (HBM " << card.hbm().timing().name() << ", PCIe Gen"
      << card.pcie().generation() << " x" << card.pcie().lanes() << ")\n";
  if (card.sram().hbm_cache_bytes() > 0) {
    out << "hbm cases at the fabric go through the SRAM's " << (card.sram().hbm_cache_bytes() >> 20)
        << " MB HBM cache (sram.hbm_cache_bytes; --set sram.hbm_cache_bytes=0 measures the HBM alone)\n";
  }
  char line[320];
  std::snprintf(line, sizeof line, "%-5s %-4s %-15s %6s %8s %9s %6s %9s %9s %9s %8s", "mem", "at", "pattern",
                "bytes", "requests", "GB/s", "%peak", "rd ns", "wr ns", "p99 ns", "Mreq/s");
  out << line;
  if (references) {
    std::snprintf(line, sizeof line, " %9s %7s %9s %7s %s", "ref GB/s", "err %", "ref rd", "err %", "verdict");
    out << line;
  }
  out << "\n" << std::string(references ? 150 : 102, '-') << "\n";
}

void print_row(std::ostream& out, const MemoryCaseResult& r) {
  char line[320];
  std::snprintf(line, sizeof line, "%-5s %-4s %-15s %6u %8llu %9.2f %5.1f%% %9.1f %9.1f %9.1f %8.3f",
                r.memory.c_str(), r.at == "controller" ? "ctrl" : "fab", r.pattern.c_str(), r.request_bytes,
                static_cast<unsigned long long>(r.requests), r.gbps, r.pct_peak, r.read_latency_ns,
                r.write_latency_ns, r.p99_latency_ns, r.sim_requests_per_s / 1e6);
  out << line;
  if (r.has_reference) {
    const bool latency_ok = r.reference_read_cycles == 0 || std::fabs(r.read_latency_error_pct) <= r.tolerance_pct;
    const bool pass = std::fabs(r.gbps_error_pct) <= r.tolerance_pct && latency_ok;
    std::snprintf(line, sizeof line, " %9.3f %+7.2f %9.2f %+7.2f %s", r.reference_gbps, r.gbps_error_pct,
                  r.reference_read_cycles, r.read_latency_error_pct, pass ? "pass" : "FAIL");
    out << line;
  }
  out << "\n" << std::flush;
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

  std::vector<CaseDef> cases;
  if (options.suite == "dramsim3") {
    if (card.hbm().timing().name() != kDramSim3TimingName) {
      throw std::invalid_argument("the dramsim3 suite needs DRAMsim3's memory: run it with --preset dramsim3-hbm2 (this "
                                  "preset's HBM timing is " + card.hbm().timing().name() + ")");
    }
    cases = dramsim3_cases(options.scale);
  } else if (!options.suite.empty()) {
    throw std::invalid_argument("unknown suite '" + options.suite + "' (expected dramsim3)");
  } else if (options.has_case) {
    cases.push_back(chosen_case(options.single, options.at));
  } else {
    cases = default_cases(options.memories, options.scale);
  }
  if (options.at != "fabric" && options.at != "controller") {
    throw std::invalid_argument("unknown --at '" + options.at + "' (expected fabric or controller)");
  }
  for (const CaseDef& c : cases) {
    if (c.at == "controller" && c.memory != "hbm") {
      throw std::invalid_argument("--at controller measures the HBM controllers; " + c.memory + " has none");
    }
  }

  print_header(out, card, options.suite == "dramsim3");
  std::vector<MemoryCaseResult> results;
  const hbm::SubsystemConfig hbm_config = hw::hbm_config_from(card);
  uint64_t position = 1;
  for (const CaseDef& c : cases) {
    const uint64_t seed = c.seed ? c.seed : position;
    ++position;
    MemoryCaseResult row;
    row.memory = c.memory;
    row.at = c.at;
    row.pattern = c.pattern;
    row.request_bytes = c.request_bytes;
    row.ports = c.at == "controller" ? 0 : c.ports;
    row.window = c.window;
    row.write_fraction = c.write_fraction;
    row.seed = seed;
    std::vector<uint64_t> read_ps, write_ps;
    hw::Picoseconds start_ps = 0, end_ps = 0;
    uint64_t bytes = 0;
    std::vector<TrafficResult::Sample> samples;
    double peak = 0;
    uint64_t period = fabric_period;
    traces::TrackId counter = pcie_counter;
    double wall = 0;

    if (c.at == "controller") {
      ControllerTrafficSpec spec;
      spec.random = !c.sequential;
      spec.write_permille = static_cast<uint32_t>(std::lround(c.write_fraction * 1000));
      spec.request_bytes = c.request_bytes;
      spec.count = c.requests;
      spec.window = c.window;
      spec.seed = seed;
      const auto wall_start = std::chrono::steady_clock::now();
      const ControllerTrafficResult r =
          run_controller_traffic(hbm_config.organization, hbm_config.timing, hbm_config.controller, spec);
      wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      for (uint64_t l : r.read_latency_cycles) read_ps.push_back(l * hbm_tck);
      for (uint64_t l : r.write_latency_cycles) write_ps.push_back(l * hbm_tck);
      end_ps = r.cycles * hbm_tck;
      bytes = r.bytes;
      row.requests = r.reads + r.writes;
      peak = hbm_peak;
      period = hbm_tck;
      counter = hbm_counter;
    } else {
      TrafficSpec spec;
      spec.pattern = c.sequential ? Pattern::kSequential : Pattern::kRandom;
      spec.write_fraction = c.write_fraction;
      spec.request_bytes = c.request_bytes;
      spec.requests = c.requests;
      spec.ports = c.ports;
      spec.window = c.window;
      spec.seed = seed;
      if (c.memory == "hbm") {
        spec.region_base = card.memory_map().dram_user_base();
        spec.region_bytes = 256ull << 20;
        peak = hbm_peak;
        period = hbm_tck;
        counter = hbm_counter;
      } else if (c.memory == "sram") {
        spec.region_base = card.memory_map().sram_base() + 4096;
        spec.region_bytes = std::min<uint64_t>(preset::sram_scratchpad_bytes(card) - 4096, 16ull << 20);
        peak = sram_peak;
        period = sram_period;
        counter = sram_counter;
      } else {
        spec.region_base = card.memory_map().host_phys_base() + (1ull << 32);
        spec.region_bytes = 64ull << 20;
        peak = pcie_peak;
      }
      const auto wall_start = std::chrono::steady_clock::now();
      TrafficResult r = generator.run(spec);
      wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      if (r.errors) {
        throw std::runtime_error(c.memory + " " + c.pattern + ": " + std::to_string(r.errors) + " requests failed");
      }
      read_ps = std::move(r.read_latencies_ps);
      write_ps = std::move(r.write_latencies_ps);
      start_ps = r.start_ps;
      end_ps = r.end_ps;
      bytes = r.bytes;
      samples = std::move(r.first_requests);
      row.requests = r.requests;
    }

    row.sim_time_ps = end_ps - start_ps;
    row.sim_cycles = row.sim_time_ps / period;
    row.gbps = row.sim_time_ps ? double(bytes) / (double(row.sim_time_ps) / 1000.0) : 0.0;
    row.peak_gbps = peak / 1e9;
    row.pct_peak = 100.0 * row.gbps / row.peak_gbps;
    row.read_latency_ns = mean_ns(read_ps);
    row.write_latency_ns = mean_ns(write_ps);
    std::vector<uint64_t> all = read_ps;
    all.insert(all.end(), write_ps.begin(), write_ps.end());
    row.mean_latency_ns = mean_ns(all);
    row.p99_latency_ns = percentile_ns(all, 99.0);
    row.wall_seconds = wall;
    row.sim_requests_per_s = wall > 0 ? double(row.requests) / wall : 0;
    row.sim_cycles_per_s = wall > 0 ? double(row.sim_cycles) / wall : 0;
    if (c.reference != nullptr) {
      const DramSim3Reference& ref = *c.reference;
      row.has_reference = true;
      row.tolerance_pct = kDramSim3TolerancePct;
      row.reference_gbps = ref.gbps;
      row.reference_read_cycles = ref.read_mean_cycles;
      row.gbps_error_pct = 100.0 * (row.gbps - ref.gbps) / ref.gbps;
      const double read_cycles = row.read_latency_ns * 1000.0 / double(hbm_tck);
      row.read_latency_error_pct =
          ref.read_mean_cycles > 0 ? 100.0 * (read_cycles - ref.read_mean_cycles) / ref.read_mean_cycles : 0.0;
    }
    print_row(out, row);

    if (trace.enabled() && c.at == "fabric") {
      const uint64_t start_ns = start_ps / 1000, end_ns = end_ps / 1000;
      const auto flow = trace.new_flow_id();
      trace.complete_slice(cases_track, start_ns, std::max(end_ns, start_ns + 1),
                           c.memory + " " + c.pattern + " " + std::to_string(c.request_bytes) + "B",
                           {{"requests", row.requests}, {"gbps", row.gbps}, {"pct_peak", row.pct_peak}}, {flow});
      bool first = true;
      for (const auto& s : samples) {
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

  if (!options.has_case) print_speed_summary(out, results);   // a chosen case's window may be anything

  if (!options.stats_path.empty()) {
    stats::Registry registry;
    system.register_stats(registry.scope(""));
    for (const MemoryCaseResult& r : results) {
      auto scope = registry.scope("bench." + r.memory + "." + (r.at == "controller" ? "controller." : "") + r.pattern +
                                  "_" + std::to_string(r.request_bytes));
      scope.counter("sim_time_ps", "ps", "simulated time of the case").add(r.sim_time_ps);
      scope.counter("requests", "count", "requests completed").add(r.requests);
      scope.scalar("gbps", "GB/s", "achieved bandwidth").set(r.gbps);
      scope.scalar("pct_peak", "%", "achieved bandwidth as a share of the theoretical peak").set(r.pct_peak);
      scope.scalar("mean_latency_ns", "ns", "mean request latency").set(r.mean_latency_ns);
      scope.scalar("p99_latency_ns", "ns", "99th percentile request latency").set(r.p99_latency_ns);
      scope.scalar("read_latency_ns", "ns", "mean read latency").set(r.read_latency_ns);
      scope.scalar("write_latency_ns", "ns", "mean write latency (a posted write: until accepted)").set(r.write_latency_ns);
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
        .add("at", r.at)
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
        .add("read_latency_ns", r.read_latency_ns)
        .add("write_latency_ns", r.write_latency_ns)
        .add("write_fraction", r.write_fraction)
        .add("seed", r.seed)
        .add("sim_time_ps", r.sim_time_ps)
        .add("sim_cycles", r.sim_cycles)
        .add("wall_seconds", r.wall_seconds)
        .add("sim_requests_per_s", r.sim_requests_per_s)
        .add("sim_cycles_per_s", r.sim_cycles_per_s);
    if (r.has_reference) {
      record.add("reference", std::string("DRAMsim3"))
          .add("reference_gbps", r.reference_gbps)
          .add("gbps_error_pct", r.gbps_error_pct)
          .add("reference_read_cycles", r.reference_read_cycles)
          .add("read_latency_error_pct", r.read_latency_error_pct)
          .add("tolerance_pct", r.tolerance_pct);
    }
    records.push_back(std::move(record));
  }
  report::write_json_records(records, path);
}

}  // namespace hpusim::bench
