// MmuController: the MMU_UP / STLB register front end over two Mmus (DMA_0 and TPC_3) on an
// HL-205 memory system, driven through its RegisterBlock interface with explicit effective times,
// and once through the CFG space from a fabric master.
#include <gtest/gtest.h>

#include <vector>

#include "hw/card/memory_system.h"
#include "tests/mmu/store_page_table_memory.h"
#include "hw/mmu/mmu.h"
#include "hw/mmu/mmu_controller.h"
#include "sim/preset/preset.h"
#include "tests/memory/probe_master.h"
#include "tests/mmu/mmu_fixture.h"

namespace hpusim::testing {
namespace {

namespace pte = hpusim::pte;
namespace va = hpusim::gaudi1_va;
namespace r = hw::mmu_regs;
using hw::MmuController;
using hw::Picoseconds;

constexpr uint64_t kP = va::kPmmuStart + 0x10000;
constexpr uint64_t kD = va::kDmmuStart + pte::k2M;

// Absolute CFG offsets of the registers (the driver's mm* constants).
constexpr uint64_t kEnable = 0xC1100C;
constexpr uint64_t kSpiMask = 0xC1102C;
constexpr uint64_t kCapture = 0xC11034;
constexpr uint64_t kCaptureVa = 0xC11038;
constexpr uint64_t kBusy = 0xC12000;
constexpr uint64_t kAsid = 0xC12004;
constexpr uint64_t kHop0Lo = 0xC12008;
constexpr uint64_t kHop0Hi = 0xC1200C;
constexpr uint64_t kCacheInv = 0xC12010;
constexpr uint64_t kInvAllStart = 0xC12034;
constexpr uint64_t kInvPs = 0xC1203C;
constexpr uint64_t kInvCi = 0xC12040;
constexpr uint64_t kInvSet = 0xC12048;

constexpr uint32_t kDma0 = hpusim::regs::engine_id(hpusim::regs::dma_qman(0));
constexpr uint32_t kTpc3 = hpusim::regs::engine_id(hpusim::regs::tpc_qman(3));

hw::MmuConfig engine_config(const char* engine, uint32_t id) {
  hw::MmuConfig c;
  c.engine = engine;
  c.engine_id = id;
  return c;
}

struct ControllerBench : hw::InterruptTarget {
  // The page-fault interrupt, as a GIC would receive it.
  void raise_interrupt(uint32_t, Picoseconds at) override { interrupts.push_back(at); }

  static constexpr uint64_t kTables = 0x10000000;
  static constexpr uint64_t kTablesSize = 16 << 20;

  explicit ControllerBench(const hw::MmuControllerConfig& config = hw::MmuControllerConfig{})
      : card(preset::load_preset("hl205")),
        system("card", card),
        probe_a("probe_a"),
        probe_b("probe_b"),
        host("host"),
        mmu_a("dma0_mmu", engine_config("dma0", kDma0)),
        mmu_b("tpc3_mmu", engine_config("tpc3", kTpc3)),
        controller("mmu_controller", config),
        tables_memory(system.hbm().store()),
        tables(tables_memory, kTables, kTablesSize) {
    probe_a.socket.bind(mmu_a.target);
    probe_b.socket.bind(mmu_b.target);
    system.bind_master(mmu_a.initiator, "dma0");
    system.bind_master(mmu_a.walker.socket, "dma0_mmu_walk");
    system.bind_master(mmu_b.initiator, "tpc3");
    system.bind_master(mmu_b.walker.socket, "tpc3_mmu_walk");
    system.bind_master(host.socket, "host");
    system.cfg().attach("MMU", cfg_base() + MmuController::kCfgOffset, MmuController::kBlockBytes, controller);
    controller.add(mmu_a);
    controller.add(mmu_b);
    controller.interrupt().bind(*this, 0);
    controller.set_observer(&observer);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }

  uint64_t cfg_base() const { return card.memory_map().cfg_base(); }
  Picoseconds cycles(uint64_t n) const { return n * controller.config().period_ps; }

  // Register accesses through the RegisterBlock interface, at absolute CFG offsets.
  void write(uint64_t cfg_offset, uint32_t value, Picoseconds at) {
    EXPECT_TRUE(controller.write_register(cfg_offset - MmuController::kCfgOffset, value, at))
        << "write of 0x" << std::hex << cfg_offset;
  }
  uint32_t read(uint64_t cfg_offset, Picoseconds at) {
    uint32_t value = 0xDEADBEEF;
    EXPECT_TRUE(controller.read_register(cfg_offset - MmuController::kCfgOffset, value, at))
        << "read of 0x" << std::hex << cfg_offset;
    return value;
  }
  // Simulates up to `at`, including what happens at `at` (sc_start(t) stops before it).
  void run_until(Picoseconds at) {
    if (at > hw::now_ps()) sc_core::sc_start(hw::delay_until(at));
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }

  // The Gaudi 1 driver's hop0 update (gaudi_mmu_update_asid_hop0_addr), writes at `at`.
  void program_hop0(uint32_t asid, Picoseconds at) {
    const uint64_t pa = tables.hop0_address(asid);
    write(kHop0Lo, static_cast<uint32_t>(pa >> 12), at);
    write(kHop0Hi, static_cast<uint32_t>(pa >> 44), at);
    write(kBusy, 0x80000000u | asid, at);
  }

  Picoseconds access(ProbeMaster& probe, bool write, uint64_t address, uint32_t bytes,
                     ProbeMaster::Access** out = nullptr, unsigned char fill = 0) {
    ProbeMaster::Access& a = probe.issue(write, address, bytes, hw::now_ps(), fill);
    while (!a.done) sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_NS));
    run_until(a.done_ps);
    if (out != nullptr) *out = &a;
    return a.done_ps - a.issued_ps;
  }

  std::vector<unsigned char> host_bytes(uint64_t host_address, size_t n) {
    std::vector<unsigned char> v(n);
    system.host_memory().read(host_address, v.data(), n);
    return v;
  }
  uint64_t host_base() const { return card.memory_map().host_phys_base(); }

  preset::Card card;
  hw::MemorySystem system;
  ProbeMaster probe_a;
  ProbeMaster probe_b;
  ProbeMaster host;   // a fabric master reaching the CFG space, as the driver's MMIO does
  hw::Mmu mmu_a;
  hw::Mmu mmu_b;
  MmuController controller;
  test::StorePageTableMemory tables_memory;
  driver::PageTableBuilder tables;
  RecordingMmuObserver observer;
  std::vector<Picoseconds> interrupts;
};

TEST(MmuController, Hop0ProgrammingReachesEveryMmuAndBusyClearsAfterConfigCycles) {
  ControllerBench b;
  b.tables.map(0, kP, b.host_base() + 0x10000, pte::k4K, pte::k4K);
  b.tables.map(1, kP, b.host_base() + 0x20000, pte::k4K, pte::k4K);
  const Picoseconds t0 = hw::now_ps() + 1000;
  b.program_hop0(1, t0);
  // Not in effect before its time; bit 31 reads 1 for config_cycles from the write's time.
  EXPECT_EQ(b.read(kBusy, t0 - 1), 0u);
  EXPECT_EQ(b.read(kBusy, t0), 0x80000001u);
  EXPECT_EQ(b.read(kBusy, t0 + b.cycles(32) - 1), 0x80000001u);
  EXPECT_EQ(b.read(kBusy, t0 + b.cycles(32)), 1u);
  // The other driver flavour: MMU_ASID first, then MMU_BUSY = 0x80000000.
  const Picoseconds t1 = t0 + b.cycles(40);
  const uint64_t hop0 = b.tables.hop0_address(0);
  b.write(kAsid, 0, t1);
  b.write(kHop0Lo, static_cast<uint32_t>(hop0 >> 12), t1);
  b.write(kHop0Hi, static_cast<uint32_t>(hop0 >> 44), t1);
  b.write(kBusy, 0x80000000u, t1);
  EXPECT_EQ(b.read(kHop0Lo, t1), static_cast<uint32_t>(hop0 >> 12));
  EXPECT_EQ(b.read(kBusy, t1 + b.cycles(31)), 0x80000000u);
  b.run_until(t1 + b.cycles(32));
  EXPECT_EQ(b.read(kBusy, hw::now_ps()), 0u);
  EXPECT_EQ(b.controller.stats().hop0_updates, 2u);
  EXPECT_EQ(b.controller.stats().hop0_errors, 0u);

  // Both Mmus have both hop0s: each master uses its own ASID's tables.
  b.write(kEnable, 1, hw::now_ps());
  b.run_until(hw::now_ps() + 1);
  b.mmu_b.set_asid(1);
  ProbeMaster::Access* a = nullptr;
  b.access(b.probe_a, true, kP, 8, &a, 0xA0);
  EXPECT_EQ(a->status(), tlm::TLM_OK_RESPONSE);
  b.access(b.probe_b, true, kP, 8, &a, 0xB1);
  EXPECT_EQ(a->status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(b.host_bytes(0x10000, 8), std::vector<unsigned char>(8, 0xA0));
  EXPECT_EQ(b.host_bytes(0x20000, 8), std::vector<unsigned char>(8, 0xB1));
}

TEST(MmuController, AsidBeyondAnMmusAsidsLeavesItUnchanged) {
  ControllerBench b;
  b.program_hop0(0, hw::now_ps());
  b.write(kBusy, 0x80000000u | 5, hw::now_ps());   // the Mmus have 2 ASIDs
  b.run_until(hw::now_ps() + 1);
  EXPECT_EQ(b.controller.stats().hop0_updates, 2u);
  EXPECT_EQ(b.controller.stats().hop0_errors, 2u);   // one per Mmu
  EXPECT_EQ(b.read(kBusy, hw::now_ps()), 0x80000005u);
}

TEST(MmuController, EnableReachesEveryMmuAtItsTime) {
  ControllerBench b;
  const Picoseconds t = hw::now_ps() + 5000;
  b.write(kEnable, 1, t);
  EXPECT_EQ(b.read(kEnable, t - 1), 0u);
  b.run_until(t - 1);
  EXPECT_FALSE(b.mmu_a.enabled());
  EXPECT_FALSE(b.mmu_b.enabled());
  b.run_until(t);
  EXPECT_TRUE(b.mmu_a.enabled());
  EXPECT_TRUE(b.mmu_b.enabled());
  EXPECT_EQ(b.read(kEnable, t), 1u);
  b.write(kEnable, 0, t + 100);
  b.run_until(t + 100);
  EXPECT_FALSE(b.mmu_a.enabled());
  EXPECT_FALSE(b.mmu_b.enabled());
}

TEST(MmuController, InvalidationFlowEmptiesEveryMmuAndAdvancesTheConsumerIndex) {
  ControllerBench b;
  b.tables.map(0, kP, b.host_base() + 0x30000, 2 * pte::k4K, pte::k4K);
  b.program_hop0(0, hw::now_ps());
  b.write(kEnable, 1, hw::now_ps());
  b.run_until(hw::now_ps() + b.cycles(32));
  b.access(b.probe_a, false, kP, 8);
  b.access(b.probe_b, false, kP, 8);
  EXPECT_EQ(b.mmu_a.tlb_valid_entries(), 1u);
  EXPECT_EQ(b.mmu_b.pte_cache_valid_lines(), 5u);
  const uint64_t reads_before = b.mmu_a.stats().pte_reads;

  // gaudi_mmu_invalidate_cache: INV_PS = 3, CACHE_INV = pi (1 after init), INV_PS = 2, poll the
  // consumer index (or INV_PS) until done, INV_SET = 0.
  const Picoseconds t = hw::now_ps() + 1000;
  b.write(kInvPs, 3, t);
  b.write(kCacheInv, 1, t + 100);
  b.write(kInvPs, 2, t + 200);
  EXPECT_EQ(b.read(kInvCi, t + 100), 0u);
  EXPECT_EQ(b.read(kInvPs, t + 100), 3u);
  b.run_until(t + 100);
  EXPECT_EQ(b.mmu_a.tlb_valid_entries(), 0u);
  EXPECT_EQ(b.mmu_b.tlb_valid_entries(), 0u);
  EXPECT_EQ(b.mmu_a.pte_cache_valid_lines(), 0u);
  EXPECT_EQ(b.mmu_b.pte_cache_valid_lines(), 0u);
  EXPECT_EQ(b.read(kInvCi, t + 100 + b.cycles(64) - 1), 0u);
  EXPECT_EQ(b.read(kInvCi, t + 100 + b.cycles(64)), 1u);
  // INV_PS = 2 started its own invalidation: 0 once that one is done too.
  EXPECT_EQ(b.read(kInvPs, t + 200 + b.cycles(64) - 1), 2u);
  EXPECT_EQ(b.read(kInvPs, t + 200 + b.cycles(64)), 0u);
  b.write(kInvSet, 0, t + 200 + b.cycles(64));
  b.run_until(t + 200 + b.cycles(64));

  // The next walk reads the tables again.
  b.access(b.probe_a, false, kP + pte::k4K, 8);
  EXPECT_EQ(b.mmu_a.stats().pte_reads, reads_before + 5);

  // The producer index is 8 bits: 0x101 completes as 1, 0x100 as 0.
  const Picoseconds u = hw::now_ps() + 10;
  b.write(kCacheInv, 0x102, u);
  EXPECT_EQ(b.read(kInvCi, u + b.cycles(64)), 2u);
  b.write(kCacheInv, 0x100, u + b.cycles(70));
  EXPECT_EQ(b.read(kInvCi, u + b.cycles(134)), 0u);
  EXPECT_EQ(b.controller.stats().invalidations, 4u);
  EXPECT_EQ(b.mmu_b.stats().invalidations, 4u);
}

TEST(MmuController, InvalidateAllStartReadsOneUntilDone) {
  ControllerBench b;
  b.tables.map(0, kD, 0x40000000, pte::k2M, pte::k2M);
  b.program_hop0(0, hw::now_ps());
  b.write(kEnable, 1, hw::now_ps());
  b.run_until(hw::now_ps() + 1);
  b.access(b.probe_b, false, kD, 8);
  EXPECT_EQ(b.mmu_b.tlb_valid_entries(), 1u);
  const Picoseconds t = hw::now_ps() + 10;
  b.write(kInvAllStart, 1, t);
  EXPECT_EQ(b.read(kInvAllStart, t), 1u);
  EXPECT_EQ(b.mmu_b.tlb_valid_entries(), 0u);
  EXPECT_EQ(b.read(kInvAllStart, t + b.cycles(64) - 1), 1u);
  EXPECT_EQ(b.read(kInvAllStart, t + b.cycles(64)), 0u);
}

TEST(MmuController, FirstPageFaultIsCapturedWithEngineAndDirectionUntilCleared) {
  ControllerBench b;
  b.program_hop0(0, hw::now_ps());
  b.write(kEnable, 1, hw::now_ps());
  b.run_until(hw::now_ps() + 1);
  EXPECT_EQ(b.read(kCapture, hw::now_ps()), 0u);

  // A write by TPC_3 to an unmapped DMMU VA, then a read by DMA_0.
  const uint64_t first = kD + 0x345678;
  ProbeMaster::Access* a = nullptr;
  b.access(b.probe_b, true, first, 16, &a, 0x11);
  EXPECT_EQ(a->status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  b.access(b.probe_a, false, kP + 0x40, 8, &a);
  EXPECT_EQ(a->status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);

  const uint32_t capture = b.read(kCapture, hw::now_ps());
  EXPECT_EQ(capture & r::kCaptureEntryValid, r::kCaptureEntryValid);
  EXPECT_EQ(capture & r::kCaptureVa49_32Mask, static_cast<uint32_t>(first >> 32));
  EXPECT_EQ(capture & r::kCaptureWrite, r::kCaptureWrite);
  EXPECT_EQ((capture >> 24) & 0x7F, kTpc3);
  EXPECT_EQ(b.read(kCaptureVa, hw::now_ps()), static_cast<uint32_t>(first));
  const uint64_t captured = (uint64_t{capture & 0x3FFFF} << 32) | b.read(kCaptureVa, hw::now_ps());
  EXPECT_EQ(captured, first);

  // Every fault raised the interrupt at its detection time and reached the downstream observer.
  ASSERT_EQ(b.observer.faults.size(), 2u);
  EXPECT_EQ(b.observer.faults[0].engine, "tpc3");
  EXPECT_EQ(b.observer.faults[0].engine_id, kTpc3);
  EXPECT_TRUE(b.observer.faults[0].is_write);
  EXPECT_EQ(b.observer.faults[1].engine_id, kDma0);
  ASSERT_EQ(b.interrupts.size(), 2u);
  EXPECT_EQ(b.interrupts[0], b.observer.faults[0].at);
  EXPECT_EQ(b.interrupts[1], b.observer.faults[1].at);
  EXPECT_EQ(b.controller.stats().faults, 2u);
  EXPECT_EQ(b.controller.stats().captured_faults, 1u);

  // The driver clears the capture by writing 0; the next fault is captured.
  b.write(kCapture, 0, hw::now_ps());
  EXPECT_EQ(b.read(kCapture, hw::now_ps()), 0u);
  b.access(b.probe_a, false, kP + 0x40, 8, &a);
  const uint32_t second = b.read(kCapture, hw::now_ps());
  EXPECT_EQ(second, r::kCaptureEntryValid | static_cast<uint32_t>((kP + 0x40) >> 32) | (kDma0 << 24));
  EXPECT_EQ(b.read(kCaptureVa, hw::now_ps()), static_cast<uint32_t>(kP + 0x40));
  EXPECT_EQ(b.interrupts.size(), 3u);
  EXPECT_EQ(b.controller.stats().captured_faults, 2u);
}

TEST(MmuController, PlainRegistersReadBackAndMisalignedAccessesAreRefused) {
  ControllerBench b;
  const Picoseconds t = hw::now_ps();
  b.write(kSpiMask, 0xF, t);
  b.write(kInvSet, 0x5A, t);
  b.write(0xC11000 + 0x1FFC, 0x12345678, t);
  EXPECT_EQ(b.read(kSpiMask, t), 0xFu);
  EXPECT_EQ(b.read(kInvSet, t), 0x5Au);
  EXPECT_EQ(b.read(0xC11000 + 0x1FFC, t), 0x12345678u);
  uint32_t value = 0;
  EXPECT_FALSE(b.controller.write_register(0x2, 1, t));
  EXPECT_FALSE(b.controller.read_register(0x1001, value, t));
  EXPECT_FALSE(b.controller.read_register(MmuController::kBlockBytes, value, t));
  EXPECT_EQ(b.controller.stats().rejected_accesses, 3u);
}

TEST(MmuController, ResetRestoresRegistersEveryMmuAndDropsPendingWrites) {
  ControllerBench b;
  b.tables.map(0, kP, b.host_base() + 0x30000, pte::k4K, pte::k4K);
  b.program_hop0(0, hw::now_ps());
  b.write(kEnable, 1, hw::now_ps());
  b.write(kSpiMask, 0xF, hw::now_ps());
  b.run_until(hw::now_ps() + 1);
  b.access(b.probe_a, false, kP, 8);
  b.access(b.probe_b, false, kD, 8);   // unmapped: captured
  EXPECT_NE(b.read(kCapture, hw::now_ps()), 0u);
  const Picoseconds later = hw::now_ps() + b.cycles(100);
  b.write(kInvSet, 7, later);
  b.write(kCacheInv, 1, hw::now_ps());   // an invalidation in progress

  b.controller.reset();
  EXPECT_FALSE(b.mmu_a.enabled());
  EXPECT_FALSE(b.mmu_b.enabled());
  EXPECT_EQ(b.mmu_a.tlb_valid_entries(), 0u);
  EXPECT_EQ(b.mmu_a.pte_cache_valid_lines(), 0u);
  for (uint64_t reg : {kEnable, kSpiMask, kCapture, kCaptureVa, kBusy, kHop0Lo, kInvPs, kInvCi, kInvSet}) {
    EXPECT_EQ(b.read(reg, hw::now_ps()), 0u) << std::hex << reg;
  }
  b.run_until(later + b.cycles(100));
  EXPECT_EQ(b.read(kInvSet, hw::now_ps()), 0u);   // the queued write was dropped
  EXPECT_EQ(b.read(kInvCi, hw::now_ps()), 0u);    // and the invalidation's completion
  EXPECT_EQ(b.controller.stats().faults, 1u);     // stats are kept

  // After the reset the Mmus have no hop0: enabling and accessing faults until reprogrammed.
  b.write(kEnable, 1, hw::now_ps());
  b.run_until(hw::now_ps() + 1);
  ProbeMaster::Access* a = nullptr;
  b.access(b.probe_a, false, kP, 8, &a);
  EXPECT_EQ(a->status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  b.program_hop0(0, hw::now_ps());
  b.run_until(hw::now_ps() + 1);
  b.access(b.probe_a, false, kP, 8, &a);
  EXPECT_EQ(a->status(), tlm::TLM_OK_RESPONSE);
}

TEST(MmuController, DriverFlowThroughTheCfgSpace) {
  ControllerBench b;
  b.tables.map(0, kP, b.host_base() + 0x50000, pte::k4K, pte::k4K);
  const uint64_t base = b.cfg_base();
  const uint64_t hop0 = b.tables.hop0_address(0);
  b.host.write32(base + kHop0Lo, static_cast<uint32_t>(hop0 >> 12));
  b.host.write32(base + kHop0Hi, static_cast<uint32_t>(hop0 >> 44));
  b.host.write32(base + kBusy, 0x80000000u);
  unsigned polls = 0;
  while (b.host.read32(base + kBusy) & 0x80000000u) ASSERT_LT(++polls, 100u);
  b.host.write32(base + kEnable, 1);
  EXPECT_EQ(b.host.read32(base + kEnable), 1u);
  EXPECT_TRUE(b.mmu_a.enabled());
  EXPECT_TRUE(b.mmu_b.enabled());
  ProbeMaster::Access* a = nullptr;
  b.access(b.probe_b, true, kP + 8, 8, &a, 0x5C);
  EXPECT_EQ(a->status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(b.host_bytes(0x50008, 8), std::vector<unsigned char>(8, 0x5C));

  // Invalidation, polling the consumer index as the driver does.
  b.host.write32(base + kInvPs, 3);
  b.host.write32(base + kCacheInv, 1);
  b.host.write32(base + kInvPs, 2);
  polls = 0;
  while (b.host.read32(base + kInvCi) != 1) ASSERT_LT(++polls, 100u);
  polls = 0;
  while (b.host.read32(base + kInvPs) != 0) ASSERT_LT(++polls, 100u);
  b.host.write32(base + kInvSet, 0);
  EXPECT_EQ(b.mmu_b.tlb_valid_entries(), 0u);
  // A misaligned CFG access is answered with an error.
  uint32_t value = 0;
  EXPECT_NE(b.host.access(false, base + kBusy + 2, value), tlm::TLM_OK_RESPONSE);
}

}  // namespace
}  // namespace hpusim::testing
