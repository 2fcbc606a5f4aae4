// The NIC tests' bench parts: a card's memory system with one NIC port on it, driven through the
// fabric as a QMAN would, what the ports report, and deterministic data.
#pragma once

#include <gtest/gtest.h>

#include <systemc>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arch/regs/gaudi1_map.h"
#include "hw/card/memory_system.h"
#include "hw/nic/nic_port.h"
#include "sim/preset/preset.h"
#include "tests/memory/probe_master.h"

namespace hpusim::testing {

using hw::NicPort;
using hw::Picoseconds;

// Where the tests attach the ports' register blocks in each card's CFG space.
inline constexpr uint64_t kNicBlock = 0x3F00000;

inline std::vector<uint8_t> pattern(uint64_t bytes, uint64_t seed) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  for (uint64_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<uint8_t>(x);
  }
  return out;
}

struct Recorder : hw::NicObserver {
  struct Done {
    uint32_t port;
    hw::NicOperation op;
    Picoseconds at;
  };
  void packet_sent(uint32_t port, uint64_t payload, Picoseconds start, Picoseconds end) override {
    packets.push_back({port, payload, start, end});
  }
  void operation_done(uint32_t port, const hw::NicOperation& op, Picoseconds at) override { done.push_back({port, op, at}); }
  void operation_failed(uint32_t port, const hw::NicOperation& op, const std::string& m, Picoseconds at) override {
    failed.push_back({port, op, at});
    messages.push_back(m);
  }
  struct Packet {
    uint32_t port;
    uint64_t payload;
    Picoseconds start, end;
  };
  std::vector<Packet> packets;
  std::vector<Done> done, failed;
  std::vector<std::string> messages;
};

// A card's memory system with one NIC port (and a spare one without a peer on card 0).
struct Side {
  Side(const char* name, const preset::Card& card, uint32_t port)
      : system(name, card), probe((std::string(name) + "_probe").c_str()) {
    hw::NicPortConfig config = hw::nic_port_config_from(card, port);
    config.name = std::string(name) + "_nic" + std::to_string(port);
    nic = std::make_unique<NicPort>(config);
    system.cfg().attach(config.name, regs::kCfgBase + kNicBlock, NicPort::size_bytes(), *nic);
    system.bind_master(nic->bus().socket, config.name);
    system.bind_master(probe.socket, std::string(name) + "_probe");
  }
  uint64_t dram(uint64_t offset) const { return system.card().memory_map().dram_user_base() + offset; }
  void poke(uint64_t address, const std::vector<uint8_t>& bytes) { system.hbm().store().write(address, bytes.data(), bytes.size()); }
  std::vector<uint8_t> peek(uint64_t address, uint64_t bytes) {
    std::vector<uint8_t> out(bytes);
    system.hbm().store().read(address, out.data(), bytes);
    return out;
  }
  void write(uint32_t offset, uint32_t value) { probe.run_word(true, regs::kCfgBase + kNicBlock + offset, value); }
  uint32_t read(uint32_t offset) { return probe.run_word(false, regs::kCfgBase + kNicBlock + offset).value(); }
  // One operation, with a completion message to `completion` (0: none).
  void post(hw::NicOp op, uint64_t address, uint32_t bytes, uint64_t completion = 0, uint32_t data = 1, uint32_t peer = 0) {
    write(NicPort::kPeer, peer);
    write(NicPort::kAddrLo, static_cast<uint32_t>(address));
    write(NicPort::kAddrHi, static_cast<uint32_t>(address >> 32));
    write(NicPort::kSize, bytes);
    write(NicPort::kCompAddrLo, static_cast<uint32_t>(completion));
    write(NicPort::kCompAddrHi, static_cast<uint32_t>(completion >> 32));
    write(NicPort::kCompWdata, data);
    write(NicPort::kCommit, (static_cast<uint32_t>(op) << NicPort::kCommitOpShift) | (completion ? NicPort::kCommitCompEn : 0));
  }
  hw::MemorySystem system;
  ProbeMaster probe;
  std::unique_ptr<NicPort> nic;
};

// Simulates in steps of 1 us until every port is idle or `limit_ps` has passed.
inline void run_until_idle(const std::vector<NicPort*>& ports, Picoseconds limit_ps) {
  const Picoseconds end = hw::now_ps() + limit_ps;
  const auto idle = [&] {
    for (const NicPort* p : ports)
      if (!p->engine_idle()) return false;
    return true;
  };
  while (hw::now_ps() < end && !idle()) sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
}

}  // namespace hpusim::testing
