// Builds a card memory system from a preset with a probe master and a traffic generator bound
// to the fabric. One per test process (SystemC elaborates once).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "hw/card/memory_system.h"
#include "sim/bench/traffic_generator.h"
#include "sim/preset/preset.h"
#include "tests/memory/probe_master.h"

namespace hpusim::testing {

struct MemoryBench {
  explicit MemoryBench(const std::vector<std::string>& overrides = {}, const std::string& preset = "hl205")
      : card(preset::load_preset(preset, overrides)),
        system("card", card),
        probe("probe"),
        generator("generator", 16) {
    system.bind_master(probe.socket, "probe");
    for (uint32_t p = 0; p < generator.port_count(); ++p) {
      system.bind_master(generator.port(p), "gen" + std::to_string(p));
    }
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // finish elaboration: sockets complete their binding
  }

  hw::Picoseconds fabric_latency() { return system.fabric().latency_ps(); }
  // Time `bytes` occupy one master port of the fabric.
  hw::Picoseconds master_port_time(uint64_t bytes) const {
    return hw::BandwidthServer(card.fabric().master_port_bytes_per_cycle(),
                               hw::period_ps_from_mhz(card.fabric().clock_mhz()))
        .duration_ps(bytes);
  }
  hw::Picoseconds port_time(uint32_t bytes_per_cycle, uint64_t bytes) const {
    return hw::BandwidthServer(bytes_per_cycle, hw::period_ps_from_mhz(card.fabric().clock_mhz())).duration_ps(bytes);
  }

  preset::Card card;
  hw::MemorySystem system;
  ProbeMaster probe;
  bench::TrafficGenerator generator;
};

inline double gbps(const bench::TrafficResult& r) {
  return double(r.bytes) / (double(r.end_ps - r.start_ps) / 1000.0);
}

inline double mean_ns(const bench::TrafficResult& r) {
  double sum = 0;
  for (uint64_t l : r.read_latencies_ps) sum += double(l);
  for (uint64_t l : r.write_latencies_ps) sum += double(l);
  return sum / double(r.read_latencies_ps.size() + r.write_latencies_ps.size()) / 1000.0;
}

}  // namespace hpusim::testing
