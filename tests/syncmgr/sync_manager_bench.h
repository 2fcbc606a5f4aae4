// A card memory system with sync managers attached to its CFG space, a register master that
// drives 32-bit accesses through the fabric, and a fence-like register block the monitors can
// write to. One bench per test process (SystemC elaborates once).
#pragma once

#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "hw/card/memory_system.h"
#include "hw/syncmgr/sync_manager.h"
#include "sim/preset/preset.h"
#include "tests/memory/probe_master.h"

namespace hpusim::testing {

using RegisterMaster = ProbeMaster;

// A QMAN-fence-like register block: each write to a register adds its value to that counter.
struct FenceBlock : hw::RegisterBlock {
  struct Write {
    uint64_t offset;
    uint32_t value;
    hw::Picoseconds at;
  };
  bool read_register(uint64_t offset, uint32_t& value, hw::Picoseconds) override {
    if (offset >= sizeof(counters)) return false;
    value = counters[offset / 4];
    return true;
  }
  bool write_register(uint64_t offset, uint32_t value, hw::Picoseconds at_ps) override {
    if (offset >= sizeof(counters)) return false;
    counters[offset / 4] += value;
    writes.push_back({offset, value, at_ps});
    return true;
  }
  uint32_t counters[64] = {};
  std::vector<Write> writes;
};

// Records what the sync managers report.
struct Recorder : hw::SyncManagerObserver {
  struct Update {
    std::string block;
    uint32_t sob;
    uint32_t value;
    hw::Picoseconds at;
  };
  struct Fire {
    std::string block;
    uint32_t monitor;
    uint64_t address;
    uint32_t data;
    hw::Picoseconds at;
  };
  struct Done {
    uint32_t monitor;
    bool ok;
    hw::Picoseconds at;
  };
  void sob_updated(const std::string& block, uint32_t sob, uint32_t value, hw::Picoseconds at) override {
    updates.push_back({block, sob, value, at});
  }
  void monitor_fired(const std::string& block, uint32_t monitor, uint64_t address, uint32_t data,
                     hw::Picoseconds at) override {
    fires.push_back({block, monitor, address, data, at});
  }
  void payload_done(const std::string&, uint32_t monitor, uint64_t, bool ok, hw::Picoseconds at) override {
    dones.push_back({monitor, ok, at});
  }
  std::vector<Update> updates;
  std::vector<Fire> fires;
  std::vector<Done> dones;
};

// mon_arm encoding.
inline uint32_t arm_word(uint32_t sid, uint8_t mask, bool equal, uint32_t target) {
  return (sid & 0xFF) | (uint32_t{mask} << 8) | (uint32_t{equal} << 16) | ((target & 0x7FFF) << 17);
}
// The mask that watches one SOB of its group (hl_gen_sob_mask for a single SOB).
inline uint8_t only(uint32_t sob) { return static_cast<uint8_t>(~(1u << (sob & 7))); }
constexpr uint32_t kAdd = 0x80000000u;

struct SmBench {
  static constexpr uint64_t kSmOffset = 0x400000;   // CFG offsets chosen for these tests
  static constexpr uint64_t kSmStride = 0x10000;
  static constexpr uint64_t kFenceOffset = 0x500000;

  explicit SmBench(unsigned count = 1, hw::Picoseconds payload_latency_ps = 3000, hw::SyncManagerConfig base = {})
      : card(preset::load_preset("hl205", {"hbm.refresh_enabled=false"})), system("card", card), master("master") {
    static const char* const kNames[4] = {"sm_e_n", "sm_e_s", "sm_w_n", "sm_w_s"};
    for (unsigned i = 0; i < count; ++i) {
      hw::SyncManagerConfig c = base;
      c.name = kNames[i];
      c.payload_latency_ps = payload_latency_ps;
      sms.push_back(std::make_unique<hw::SyncManager>(c));
      hw::SyncManager& sm = *sms.back();
      system.cfg().attach(c.name, sm_base(i), sm.size_bytes(), sm);
      system.bind_master(sm.payload_socket, c.name);
      sm.set_observer(&recorder);
    }
    system.cfg().attach("fence", fence_base(), sizeof(fence.counters), fence);
    system.bind_master(master.socket, "master");
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }

  hw::SyncManager& sm(unsigned i = 0) { return *sms.at(i); }
  uint64_t sm_base(unsigned i = 0) const { return card.memory_map().cfg_base() + kSmOffset + i * kSmStride; }
  uint64_t fence_base() const { return card.memory_map().cfg_base() + kFenceOffset; }
  uint64_t sram(uint64_t offset) const { return card.memory_map().sram_base() + offset; }

  // Register addresses of block i, from its layout.
  const hw::SyncManagerLayout& layout(unsigned i) { return sm(i).config().layout; }
  uint64_t sob(uint32_t n, unsigned i = 0) { return sm_base(i) + layout(i).sob_obj + 4 * n; }
  uint64_t pay_addrl(uint32_t m, unsigned i = 0) { return sm_base(i) + layout(i).mon_pay_addrl + 4 * m; }
  uint64_t pay_addrh(uint32_t m, unsigned i = 0) { return sm_base(i) + layout(i).mon_pay_addrh + 4 * m; }
  uint64_t pay_data(uint32_t m, unsigned i = 0) { return sm_base(i) + layout(i).mon_pay_data + 4 * m; }
  uint64_t mon_arm(uint32_t m, unsigned i = 0) { return sm_base(i) + layout(i).mon_arm + 4 * m; }
  uint64_t mon_status(uint32_t m, unsigned i = 0) { return sm_base(i) + layout(i).mon_status + 4 * m; }

  // Programs a monitor's payload: write `data` to `address`.
  void program(uint32_t m, uint64_t address, uint32_t data, unsigned i = 0) {
    master.write32(pay_addrl(m, i), static_cast<uint32_t>(address));
    master.write32(pay_addrh(m, i), static_cast<uint32_t>(address >> 32));
    master.write32(pay_data(m, i), data);
  }
  uint32_t sram_word(uint64_t offset) {
    uint32_t v = 0;
    system.sram().store().read(sram(offset), &v, 4);
    return v;
  }
  // Lets every payload write in flight complete.
  void drain() { sc_core::sc_start(sc_core::sc_time(2, sc_core::SC_US)); }

  // Fabric path of a 4-byte write from a master to the CFG space / SRAM (unloaded).
  hw::Picoseconds port_time(uint32_t bytes_per_cycle, uint64_t bytes) const {
    return hw::BandwidthServer(bytes_per_cycle, hw::period_ps_from_mhz(card.fabric().clock_mhz())).duration_ps(bytes);
  }
  hw::Picoseconds path_to_cfg_ps() {
    const auto& f = card.fabric();
    return std::max(port_time(f.master_port_bytes_per_cycle(), 4), port_time(f.cfg_port_bytes_per_cycle(), 4)) +
           system.fabric().latency_ps();
  }
  hw::Picoseconds path_to_sram_ps() {
    const auto& f = card.fabric();
    return std::max(port_time(f.master_port_bytes_per_cycle(), 4), port_time(f.sram_port_bytes_per_cycle(), 4)) +
           system.fabric().latency_ps();
  }

  preset::Card card;
  hw::MemorySystem system;
  RegisterMaster master;
  std::vector<std::unique_ptr<hw::SyncManager>> sms;
  FenceBlock fence;
  Recorder recorder;
};

}  // namespace hpusim::testing
