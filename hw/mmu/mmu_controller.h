// The MMU's register front end: the Gaudi 1 MMU_UP and STLB register blocks (CFG offsets 0xC11000
// and 0xC12000), as one RegisterBlock of 0x2000 bytes the card attaches at CFG offset 0xC11000. It
// fans out to every Mmu added to it (one per engine master; they share the page tables, each has
// its own TLB and PTE cache):
//
//  * MMU_ENABLE bit 0 enables translation in every Mmu.
//  * Hop0 programming: MMU_HOP0_PA43_12 / MMU_HOP0_PA49_44, then MMU_BUSY with bit 31 set (and the
//    ASID in bits [9:0], OR'ed with MMU_ASID) sets that ASID's hop0 in every Mmu. MMU_BUSY bit 31
//    reads 1 for config_cycles after the write takes effect.
//  * Invalidation: STLB_CACHE_INV (producer index), STLB_INV_PS = 2 and STLB_INV_ALL_START = 1 each
//    invalidate every Mmu's TLB and PTE cache; invalidate_cycles later STLB_INV_CONSUMER_INDEX
//    reads the producer index, STLB_INV_PS and STLB_INV_ALL_START read 0.
//  * Page faults of every Mmu: the first is captured in MMU_UP_PAGE_ERROR_CAPTURE(_VA) until the
//    driver writes 0 there; every fault calls the interrupt line and the downstream observer.
//  * Every other offset of the block is plain storage.
//
// Timing follows the CFG-space convention (see hw/syncmgr): writes are queued and applied at their
// effective time by an SC_METHOD; a read first applies everything due by its own time. A fault is
// captured at the time the Mmu detected it.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <vector>

#include "hw/cfg/cfg_space.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/ports.h"
#include "hw/common/timed_writes.h"
#include "hw/mmu/mmu.h"
#include "arch/regs/gaudi1_map.h"

namespace hpusim::hw {

// Register offsets relative to the controller's block (CFG offset 0xC11000); the absolute CFG
// offset of each is in its comment (the driver's mm* constant).
namespace mmu_regs {
// Offsets inside the block, from the register map (arch/regs: regs::mmu, absolute CFG offsets).
namespace abs = regs::mmu;
constexpr uint64_t kMmuEnable = abs::kMmuUpEnable - abs::kMmuUpBase;
constexpr uint64_t kSpiMask = abs::kMmuUpSpiMask - abs::kMmuUpBase;             // storage
constexpr uint64_t kPageErrorCapture = abs::kPageErrorCapture - abs::kMmuUpBase;
constexpr uint64_t kPageErrorCaptureVa = abs::kPageErrorCaptureVa - abs::kMmuUpBase;
constexpr uint64_t kMmuBusy = abs::kBusy - abs::kMmuUpBase;
constexpr uint64_t kMmuAsid = abs::kAsid - abs::kMmuUpBase;
constexpr uint64_t kHop0Pa43_12 = abs::kHop0Pa4312 - abs::kMmuUpBase;
constexpr uint64_t kHop0Pa49_44 = abs::kHop0Pa4944 - abs::kMmuUpBase;
constexpr uint64_t kStlbCacheInv = abs::kStlbCacheInv - abs::kMmuUpBase;
constexpr uint64_t kStlbInvAllStart = abs::kStlbInvAllStart - abs::kMmuUpBase;
constexpr uint64_t kStlbInvPs = abs::kStlbInvPs - abs::kMmuUpBase;
constexpr uint64_t kStlbInvConsumerIndex = abs::kStlbInvConsumerIndex - abs::kMmuUpBase;
constexpr uint64_t kStlbInvSet = abs::kStlbInvSet - abs::kMmuUpBase;             // storage

constexpr uint32_t kBusyBit = abs::kBusyBit;             // MMU_BUSY[31]
constexpr uint32_t kAsidMask = 0x3FF;                    // MMU_BUSY[9:0], MMU_ASID[9:0]
constexpr uint32_t kHop0Pa49_44Mask = 0x3F;
constexpr uint32_t kCaptureVa49_32Mask = abs::kCaptureVa4932Mask;   // PAGE_ERROR_CAPTURE[17:0]
constexpr uint32_t kCaptureEntryValid = abs::kCaptureEntryValid;   // PAGE_ERROR_CAPTURE[18]
// hpusim extensions of PAGE_ERROR_CAPTURE (the Gaudi 1 register has no initiator field):
constexpr uint32_t kCaptureWrite = abs::kCaptureWrite;   // the faulting access was a write
constexpr uint32_t kCaptureEngineShift = abs::kCaptureEngineShift;   // [30:24] enum gaudi_engine_id
constexpr uint32_t kCaptureEngineMask = abs::kCaptureEngineMask >> abs::kCaptureEngineShift;
constexpr uint32_t kInvPsGo = 2;                         // STLB_INV_PS value that starts an invalidation
}  // namespace mmu_regs

struct MmuControllerConfig {
  Picoseconds period_ps = 909;       // MMU clock
  uint32_t config_cycles = 32;       // MMU_BUSY[31] after a hop0 update
  uint32_t invalidate_cycles = 64;   // from an invalidation's start to its completion
};

struct MmuControllerStats {
  uint64_t register_reads = 0;
  uint64_t register_writes = 0;       // accepted (applied or still queued)
  uint64_t rejected_accesses = 0;     // misaligned or outside the block
  uint64_t hop0_updates = 0;          // MMU_BUSY writes with bit 31 set
  uint64_t hop0_errors = 0;           // of those, ASID beyond an Mmu's ASIDs (that Mmu unchanged)
  uint64_t invalidations = 0;         // invalidations started (each reaches every Mmu)
  uint64_t faults = 0;                // page faults reported by the Mmus
  uint64_t captured_faults = 0;       // of those, captured in PAGE_ERROR_CAPTURE
};

class MmuController : public sc_core::sc_module, public RegisterBlock, public MmuObserver {
 public:
  static constexpr uint64_t kCfgOffset = regs::mmu::kMmuUpBase;   // MMU_UP; STLB follows at 0xC12000
  static constexpr uint64_t kBlockBytes = 0x2000;

  MmuController(sc_core::sc_module_name name, const MmuControllerConfig& config = MmuControllerConfig{});
  ~MmuController() override;

  // Registers an Mmu: register writes reach it from now on, and the controller becomes its page
  // fault observer. Add every Mmu before the driver programs the MMU (the current register state
  // is not replayed into it).
  void add(Mmu& mmu);
  const std::vector<Mmu*>& mmus() const { return mmus_; }

  // Called on every page fault with the time the fault was detected (the card wires it to the
  // device CPU's GIC).
  // The page-fault interrupt (the card binds it to the device CPU's GIC).
  InterruptLine& interrupt() { return interrupt_line_; }
  // Receives every page fault the controller sees (the card's trace), after the capture logic.
  void set_observer(MmuObserver* observer) { observer_ = observer; }

  // RegisterBlock. Offsets are relative to kCfgOffset; 4-byte aligned offsets inside kBlockBytes
  // are accepted, anything else returns false.
  bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
  bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;

  // MmuObserver: the added Mmus report here.
  void page_fault(const MmuFault& fault) override;

  // Hard reset at the current simulation time: every register back to 0, queued writes and
  // captures dropped, invalidations and hop0 updates in progress finished, every added Mmu reset.
  // Stats are kept.
  void reset();

  const MmuControllerConfig& config() const { return config_; }
  const MmuControllerStats& stats() const { return stats_; }

 private:
  enum class Kind : uint8_t { kWrite, kCapture, kInvalidationDone };
  struct Pending {
    Kind kind;
    uint32_t offset;   // kWrite
    uint32_t value;    // kWrite: the value; kInvalidationDone: the consumer index
    uint64_t va;       // kCapture
    uint32_t engine_id;
    bool is_write;
    bool set_ci;       // kInvalidationDone: sets STLB_INV_CONSUMER_INDEX to `value`
  };

  void push(Picoseconds at, const Pending& pending) { pending_.submit(at, pending); }
  void apply_due();                  // SC_METHOD
  void apply_until(Picoseconds at) { pending_.apply_due(at); }
  void apply(const Pending& pending, Picoseconds at);
  void apply_write(uint32_t offset, uint32_t value, Picoseconds at);
  void start_invalidation(Picoseconds at, bool set_ci, uint32_t ci);
  uint32_t& reg(uint64_t offset) { return registers_[offset / 4]; }

  MmuControllerConfig config_;
  std::vector<Mmu*> mmus_;
  std::vector<uint32_t> registers_;  // storage for every register; some are overridden on read
  Picoseconds busy_until_ = 0;       // MMU_BUSY[31] reads 1 before this time
  uint32_t invalidations_in_flight_ = 0;   // STLB_INV_PS / STLB_INV_ALL_START clear when it drops to 0
  // Every write, capture and completion queues; one made while another applies only queues.
  TimedWrites<Pending> pending_{[this](const Pending& p, Picoseconds at) { apply(p, at); },
                                {/*apply_if_due_and_idle=*/false, /*notify_earliest=*/false,
                                 /*queue_while_applying=*/true}};
  InterruptLine interrupt_line_{"page_fault"};
  MmuObserver* observer_ = nullptr;
  MmuControllerStats stats_;
};

}  // namespace hpusim::hw
