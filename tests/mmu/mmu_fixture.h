// An HL-205 memory system with a probe master behind an Mmu, page tables in DRAM at 0x10000000.
// One per test process (SystemC elaborates once).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/card/memory_system.h"
#include "tests/mmu/store_page_table_memory.h"
#include "arch/regs/gaudi1_map.h"
#include "hw/mmu/mmu.h"
#include "sim/preset/preset.h"
#include "tests/memory/probe_master.h"

namespace hpusim::testing {

struct FaultRecord {
  std::string engine;
  uint32_t engine_id;
  uint64_t va;
  bool is_write;
  hw::Picoseconds at;
};

class RecordingMmuObserver : public hw::MmuObserver {
 public:
  void page_fault(const hw::MmuFault& f) override {
    faults.push_back({f.engine, f.engine_id, f.virtual_address, f.is_write, f.at});
  }
  std::vector<FaultRecord> faults;
};

inline hw::MmuConfig default_mmu_config() {
  hw::MmuConfig c;
  c.engine = "tpc0";
  c.engine_id = hpusim::regs::engine_id(hpusim::regs::tpc_qman(0));
  return c;
}

struct MmuBench {
  static constexpr uint64_t kTables = 0x10000000;
  static constexpr uint64_t kTablesSize = 16 << 20;

  explicit MmuBench(const hw::MmuConfig& config = default_mmu_config())
      : card(preset::load_preset("hl205")),
        system("card", card),
        probe("probe"),
        mmu("mmu", config),
        tables_memory(system.hbm().store()),
        tables(tables_memory, kTables, kTablesSize) {
    probe.socket.bind(mmu.target);
    system.bind_master(mmu.initiator, "tpc0");
    system.bind_master(mmu.walker.socket, "tpc0_mmu_walk");
    mmu.set_observer(&observer);
    mmu.set_hop0(0, tables.hop0_address(0));
    mmu.set_hop0(1, tables.hop0_address(1));
    mmu.set_enabled(true);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }

  // One access through the MMU; returns its latency and the finished access.
  hw::Picoseconds access(bool write, uint64_t address, uint32_t bytes, ProbeMaster::Access** out = nullptr,
                         unsigned char fill = 0) {
    ProbeMaster::Access& a = probe.issue(write, address, bytes, hw::now_ps(), fill);
    while (!a.done) sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_NS));
    if (a.done_ps > hw::now_ps()) sc_core::sc_start(hw::delay_until(a.done_ps));
    if (out != nullptr) *out = &a;
    return a.done_ps - a.issued_ps;
  }

  // Transactions that entered the fabric through the MMU's data port (walks excluded).
  uint64_t data_port_transactions() {
    for (const auto& s : system.fabric().master_stats()) {
      if (s.name == "tpc0") return s.transactions;
    }
    ADD_FAILURE() << "no tpc0 port";
    return 0;
  }

  uint64_t host_base() const { return card.memory_map().host_phys_base(); }

  preset::Card card;
  hw::MemorySystem system;
  ProbeMaster probe;
  hw::Mmu mmu;
  test::StorePageTableMemory tables_memory;
  driver::PageTableBuilder tables;
  RecordingMmuObserver observer;
};

}  // namespace hpusim::testing
