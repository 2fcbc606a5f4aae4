// A card memory system with DMA cores attached at their real CFG addresses, the E_N sync manager
// at its real address (for write-completion messages), and a register probe that drives 32-bit
// register accesses through the fabric like a QMAN or the firmware would. One bench per test
// process (SystemC elaborates once).
#pragma once

#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/card/memory_system.h"
#include "hw/dma/dma_core.h"
#include "arch/regs/gaudi1_map.h"
#include "hw/syncmgr/sync_manager.h"
#include "sim/bench/traffic_generator.h"
#include "sim/preset/preset.h"
#include "tests/memory/probe_master.h"

namespace hpusim::testing {

using RegisterProbe = ProbeMaster;

// What the DMA cores report.
struct DmaRecorder : hw::DmaObserver {
  struct Event {
    uint32_t channel;
    hw::DmaTransfer transfer;
    hw::Picoseconds at;
  };
  struct Failure {
    uint32_t channel;
    uint64_t address;
    std::string message;
    hw::Picoseconds at;
  };
  void transfer_started(uint32_t channel, const hw::DmaTransfer& t, hw::Picoseconds at) override {
    started.push_back({channel, t, at});
  }
  void transfer_done(uint32_t channel, const hw::DmaTransfer& t, hw::Picoseconds at) override {
    done.push_back({channel, t, at});
  }
  void transfer_failed(uint32_t channel, uint64_t address, const std::string& message, hw::Picoseconds at) override {
    failed.push_back({channel, address, message, at});
  }
  void commit_ignored(uint32_t channel, uint32_t, hw::Picoseconds) override { ignored.push_back(channel); }
  void halted(uint32_t channel, hw::Picoseconds at) override { halts.push_back({channel, at}); }
  std::vector<Event> started, done;
  std::vector<Failure> failed;
  std::vector<uint32_t> ignored;
  std::vector<std::pair<uint32_t, hw::Picoseconds>> halts;
};

// Records SOB updates; an optional hook runs at each one (e.g. to look at memory at that moment).
struct SobRecorder : hw::SyncManagerObserver {
  struct Update {
    uint32_t sob;
    uint32_t value;
    hw::Picoseconds at;
  };
  void sob_updated(const std::string&, uint32_t sob, uint32_t value, hw::Picoseconds at) override {
    updates.push_back({sob, value, at});
    if (hook) hook(sob, value, at);
  }
  std::vector<Update> updates;
  std::function<void(uint32_t, uint32_t, hw::Picoseconds)> hook;
};

// Deterministic bytes for data checks.
inline std::vector<uint8_t> pattern_bytes(uint64_t bytes, uint64_t seed) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  for (uint64_t i = 0; i < bytes; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out.data() + i, &x, std::min<uint64_t>(8, bytes - i));
  }
  return out;
}

struct DmaBench {
  using SM = regs::SyncManager;
  static constexpr SM kSm = SM::E_N;

  // One DmaCore per config, attached at regs::kCfgBase + regs::dma_core_base(config.channel).
  // `generator_ports` > 0 adds a bench traffic generator with that many fabric master ports.
  explicit DmaBench(const std::vector<hw::DmaCoreConfig>& configs, const std::vector<std::string>& overrides = {},
                    uint32_t generator_ports = 0)
      : card(preset::load_preset("hl205", overrides)), system("card", card), probe("probe"), sm(sm_config()) {
    if (generator_ports > 0) {
      generator = std::make_unique<bench::TrafficGenerator>("generator", generator_ports);
      for (uint32_t p = 0; p < generator_ports; ++p) system.bind_master(generator->port(p), "gen" + std::to_string(p));
    }
    for (const hw::DmaCoreConfig& c : configs) {
      cores.push_back(std::make_unique<hw::DmaCore>(c));
      hw::DmaCore& core = *cores.back();
      system.cfg().attach(c.name, regs::kCfgBase + regs::dma_core_base(c.channel), core.size_bytes(), core);
      system.bind_master(core.bus().socket, c.name);
      core.set_observer(&recorder);
    }
    system.cfg().attach("sm_e_n", regs::kCfgBase + regs::sm_objs_base(kSm), sm.size_bytes(), sm);
    system.bind_master(sm.payload_socket, "sm_e_n");
    sm.set_observer(&sobs);
    system.bind_master(probe.socket, "probe");
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }

  // Channels from the preset (dma_core_config_from), with optional tweaks.
  static std::vector<hw::DmaCoreConfig> channels(const std::vector<uint32_t>& list) {
    const preset::Card c = preset::load_preset("hl205");
    std::vector<hw::DmaCoreConfig> out;
    for (uint32_t ch : list) out.push_back(hw::dma_core_config_from(c, ch));
    return out;
  }

  static hw::SyncManagerConfig sm_config() {
    hw::SyncManagerConfig c;
    c.name = "sm_e_n";
    c.layout.sob_obj = regs::sm::kObjsSobObj0;
    c.layout.mon_pay_addrl = regs::sm::kObjsMonPayAddrL0;
    c.layout.mon_pay_addrh = regs::sm::kObjsMonPayAddrH0;
    c.layout.mon_pay_data = regs::sm::kObjsMonPayData0;
    c.layout.mon_arm = regs::sm::kObjsMonArm0;
    c.layout.mon_status = regs::sm::kObjsMonStatus0;
    c.layout.block_bytes = regs::sm::kObjsSize;
    return c;
  }

  hw::DmaCore& core(size_t i = 0) { return *cores.at(i); }
  uint32_t channel(size_t i) { return core(i).config().channel; }
  uint64_t reg(size_t i, uint32_t offset) { return regs::kCfgBase + regs::dma_core_base(channel(i)) + offset; }
  uint64_t sob_address(uint32_t sob) const { return regs::kCfgBase + regs::sm_sob(kSm, sob); }

  uint64_t host(uint64_t bus_address) const { return system_host_base() + bus_address; }
  uint64_t system_host_base() const { return card.memory_map().host_phys_base(); }
  uint64_t sram(uint64_t offset) const { return card.memory_map().sram_base() + offset; }
  uint64_t dram(uint64_t offset) const { return card.memory_map().dram_user_base() + offset; }

  // Device-address view of the backing stores (host memory is its own type, not a BackingStore).
  bool is_host(uint64_t device_address) const { return device_address >= system_host_base(); }
  mem::BackingStore& store_of(uint64_t device_address) {
    if (device_address >= card.memory_map().sram_base()) return system.sram().store();
    return system.hbm().store();
  }
  void poke(uint64_t device_address, const std::vector<uint8_t>& bytes) {
    if (is_host(device_address)) {
      system.host_memory().write(device_address - system_host_base(), bytes.data(), bytes.size());
    } else {
      store_of(device_address).write(device_address, bytes.data(), bytes.size());
    }
  }
  std::vector<uint8_t> peek(uint64_t device_address, uint64_t bytes) {
    std::vector<uint8_t> out(bytes);
    if (is_host(device_address)) {
      system.host_memory().read(device_address - system_host_base(), out.data(), bytes);
    } else {
      store_of(device_address).read(device_address, out.data(), bytes);
    }
    return out;
  }

  void enable(size_t i) { probe.write32(reg(i, regs::dma_core::kCfg0), regs::dma_core::kCfg0En); }

  // The register writes of a LIN_DMA packet (src, dst, size, commit), plus WR_COMP address/data.
  void program(size_t i, uint64_t src, uint64_t dst, uint32_t bytes, uint32_t commit) {
    namespace dc = regs::dma_core;
    probe.write32(reg(i, dc::kSrcBaseLo), static_cast<uint32_t>(src));
    probe.write32(reg(i, dc::kSrcBaseHi), static_cast<uint32_t>(src >> 32));
    probe.write32(reg(i, dc::kDstBaseLo), static_cast<uint32_t>(dst));
    probe.write32(reg(i, dc::kDstBaseHi), static_cast<uint32_t>(dst >> 32));
    probe.write32(reg(i, dc::kDstTsize0), bytes);
    probe.write32(reg(i, dc::kCommit), commit);
  }
  void completion_to(size_t i, uint64_t address, uint32_t data) {
    namespace dc = regs::dma_core;
    probe.write32(reg(i, dc::kWrCompAddrLo), static_cast<uint32_t>(address));
    probe.write32(reg(i, dc::kWrCompAddrHi), static_cast<uint32_t>(address >> 32));
    probe.write32(reg(i, dc::kWrCompWdata), data);
  }
  void copy(size_t i, uint64_t src, uint64_t dst, uint32_t bytes, uint32_t extra = 0) {
    program(i, src, dst, bytes, regs::dma_core::kCommitLin | extra);
  }

  // Simulates until core i has nothing running or queued (fails the test after `limit`).
  void run_until_idle(size_t i, sc_core::sc_time limit = sc_core::sc_time(1, sc_core::SC_SEC)) {
    const hw::Picoseconds end = hw::now_ps() + limit.value();
    while (core(i).busy() && hw::now_ps() < end) sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
    ASSERT_FALSE(core(i).busy()) << "DMA core " << i << " still busy";
  }
  void settle() { sc_core::sc_start(sc_core::sc_time(2, sc_core::SC_US)); }

  // Bytes per nanosecond (GB/s) of the last transfer core i finished.
  double last_gbps() const {
    const auto& d = recorder.done.back();
    for (auto it = recorder.started.rbegin(); it != recorder.started.rend(); ++it) {
      if (it->channel == d.channel && it->transfer.id == d.transfer.id) {
        return double(d.transfer.bytes) / (double(d.at - it->at) / 1000.0);
      }
    }
    ADD_FAILURE() << "no start for the last transfer";
    return 0;
  }

  preset::Card card;
  hw::MemorySystem system;
  RegisterProbe probe;
  hw::SyncManager sm;
  std::vector<std::unique_ptr<hw::DmaCore>> cores;
  std::unique_ptr<bench::TrafficGenerator> generator;
  DmaRecorder recorder;
  SobRecorder sobs;
};

}  // namespace hpusim::testing
