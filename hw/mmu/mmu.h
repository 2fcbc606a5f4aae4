// The MMU of one bus master: a translation stage between the master and the fabric that walks
// the device page tables (hw/mmu/page_table.h) through the fabric, so a walk costs real memory
// latency, and caches translations in a TLB and page-table lines in a PTE cache.
//
//  * `target` (memory protocol, towards the master) and `initiator` (towards the fabric) carry the
//    master's traffic; `walker.socket` is a second fabric master for page-table reads. Bind all
//    three before simulation starts: master.socket -> mmu.target; fabric.bind_master(mmu.initiator)
//    and fabric.bind_master(mmu.walker.socket).
//  * Translated range: [config.va_start, config.va_end) (Gaudi 1 VA_HOST_SPACE by default). Any
//    other address is physical (DRAM, SRAM, CFG, the host window) and passes through unchanged,
//    or faults when config.passthrough_outside is false. While disabled, everything passes.
//  * Requests are served in arrival order. A TLB hit (or pass-through) forwards the request after
//    lookup_cycles; a miss walks hop0..hop4 (5 PTEs for 4 KB pages, 4 for 2 MB), one PTE at a
//    time, and the request waits. Each PTE is looked up in the PTE cache (64-byte lines, 8 PTEs
//    each): a hit costs lookup_cycles, a miss reads the whole line through the fabric. A request
//    crossing page boundaries is split into one sub-request per page; the master gets one
//    response when all parts are back, at the latest part's time, with the first error status.
//    Every page of a request is translated before any part is forwarded, so a fault in any page
//    writes nothing.
//  * A fault (no present PTE, or a PTE read that failed) answers TLM_ADDRESS_ERROR_RESPONSE after
//    fault_cycles, forwards nothing, and calls MmuObserver::page_fault with the engine's name and
//    id and the first faulting VA; the model keeps running.
//  * Control (setters; hw/mmu/mmu_controller.h is the register front end that calls them):
//    enable, per-ASID hop0 addresses, the master's ASID, invalidate_all / invalidate_range, reset.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/common/bus_master.h"
#include "hw/common/mem_protocol.h"
#include "arch/mmu/page_table_format.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct MmuConfig {
  std::string engine = "engine";                   // named in page-fault reports
  uint32_t engine_id = 0;                          // the master's engine id (regs::engine_id), in fault reports
  Picoseconds period_ps = 909;                     // MMU clock
  uint32_t tlb_entries = 32;                       // fully associative, true LRU
  uint32_t pte_cache_lines = 64;                   // 64-byte lines of PTEs, fully associative, true LRU; 0: none
  uint32_t lookup_cycles = 1;                      // every translated or passed access
  uint32_t fault_cycles = 2;                       // from fault detection to the error response
  uint32_t asids = gaudi1_va::kMaxAsid;
  uint64_t va_start = gaudi1_va::kHostSpaceStart;  // translated range [va_start, va_end)
  uint64_t va_end = gaudi1_va::kHostSpaceEnd;
  bool passthrough_outside = true;                 // addresses outside the range are physical
};

struct MmuStats {
  uint64_t requests = 0;        // accepted from the master
  uint64_t translations = 0;    // page lookups in the translated range
  uint64_t passthrough = 0;     // requests forwarded untranslated
  uint64_t tlb_hits = 0;
  uint64_t tlb_misses = 0;
  uint64_t walks = 0;
  uint64_t pte_reads = 0;         // PTE reads through the fabric (a whole line each with the PTE cache)
  uint64_t pte_cache_hits = 0;    // PTE lookups served by the PTE cache (0 while it is disabled)
  uint64_t pte_cache_misses = 0;  // PTE lookups that read their line through the fabric
  uint64_t walk_ps = 0;         // time spent walking
  uint64_t faults = 0;
  uint64_t split_requests = 0;  // requests that crossed a page boundary
  uint64_t invalidations = 0;
};

// One page fault as an Mmu reports it.
struct MmuFault {
  std::string engine;             // MmuConfig::engine
  uint32_t engine_id = 0;         // MmuConfig::engine_id (enum gaudi_engine_id)
  uint64_t virtual_address = 0;   // the first faulting VA of the request
  bool is_write = false;
  Picoseconds at = 0;             // when the fault was detected
};

class MmuObserver {
 public:
  virtual ~MmuObserver() = default;
  virtual void page_fault(const MmuFault& fault) = 0;
};

class Mmu : public sc_core::sc_module {
 public:
  Mmu(sc_core::sc_module_name name, const MmuConfig& config);
  ~Mmu() override;

  tlm_utils::simple_target_socket<Mmu> target;
  tlm_utils::simple_initiator_socket<Mmu> initiator;
  BusMaster walker;

  // Control. Changing tables needs an invalidation afterwards, as on the real MMU.
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }
  void set_hop0(uint32_t asid, uint64_t table_pa);
  void set_asid(uint32_t asid);
  uint32_t asid() const { return asid_; }
  // Where the master's ASID comes from on real parts: the engine's protection / AXUSER register
  // (e.g. a DMA core's NON_SECURE_PROPS: ASID [9:0], MMU bypass bit 10). When set, it is read at
  // every lookup: the MMU bypass bit makes every address physical; an ASID beyond `asids` is
  // ignored (the previous one stays). Without a source, set_asid() decides.
  static constexpr uint32_t kPropsAsidMask = 0x3FF;
  static constexpr uint32_t kPropsBypass = 1u << 10;
  void set_props_source(std::function<uint32_t()> source) { props_source_ = std::move(source); }
  // Both empty the TLB (invalidate_range: every cached page overlapping the range) and the whole
  // PTE cache (line addresses are physical, so a VA range cannot select lines).
  void invalidate_all();
  void invalidate_range(uint64_t va, uint64_t size);
  // Hardware reset: disabled, hop0 addresses and ASID cleared, TLB and PTE cache empty. Stats are
  // kept.
  // Requests already forwarded complete; requests still waiting for the walker are translated
  // with the state after the reset (so they pass through untranslated until re-enabled).
  void reset();

  void set_observer(MmuObserver* observer) { observer_ = observer; }
  const MmuStats& stats() const { return stats_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  const MmuConfig& config() const { return config_; }
  uint32_t tlb_valid_entries() const;
  uint32_t pte_cache_valid_lines() const;

  static constexpr uint32_t kPteLineBytes = 64;
  static constexpr uint32_t kPtesPerLine = kPteLineBytes / pte::kSize;

 private:
  struct Job;
  struct Part;
  struct Segment {
    uint64_t va;
    uint64_t pa;
    uint32_t offset;   // into the master's data
    uint32_t length;
  };
  struct TlbEntry {
    bool valid = false;
    uint32_t asid = 0;
    uint64_t vpn = 0;          // va >> page_shift
    uint32_t page_shift = 0;
    uint64_t frame = 0;        // physical page base
    uint64_t last_use = 0;
  };
  struct PteLine {
    bool valid = false;
    uint64_t address = 0;      // 64-byte aligned physical address
    uint64_t last_use = 0;
    std::array<uint64_t, kPtesPerLine> ptes{};
  };
  enum class Lookup { kResolved, kMiss, kFault };

  tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  unsigned debug(tlm::tlm_generic_payload& trans);
  void walker_thread();

  bool translated(uint64_t va) const;
  void refresh_props();
  // Cuts the request into pieces that each lie in one page (or one pass-through run) and finds
  // their physical addresses. Without may_walk a TLB miss ends it with kMiss; count updates the
  // TLB's LRU state and the stats. kFault sets *fault_va.
  Lookup resolve(const tlm::tlm_generic_payload& trans, std::vector<Segment>& out, bool may_walk, bool count,
                 uint64_t* fault_va);
  TlbEntry* tlb_find(uint32_t asid, uint64_t va);
  void tlb_insert(uint32_t asid, uint64_t va, uint32_t page_shift, uint64_t frame);
  // A timed PTE read of the walker (SC_THREAD only), through the PTE cache when there is one.
  bool fetch_pte(uint64_t pa, uint64_t& value);
  void pte_cache_clear();
  // A walk of the tables of `asid` with `read` fetching PTEs; returns (page frame, page shift)
  // or nullopt on a fault.
  template <typename Read>
  std::optional<std::pair<uint64_t, uint32_t>> walk_with(uint32_t asid, uint64_t va, Read read);
  Job* acquire_job();
  Part* acquire_part();
  void dispatch(Job* job, const std::vector<Segment>& segments, Picoseconds at);
  void fail(Job* job, uint64_t va, Picoseconds detected);
  void respond(Job* job, tlm::tlm_response_status status, Picoseconds at);

  MmuConfig config_;
  bool enabled_ = false;
  bool bypass_ = false;                  // the engine's props say MMU bypass
  std::function<uint32_t()> props_source_;
  uint32_t asid_ = 0;
  std::vector<std::optional<uint64_t>> hop0_;
  std::vector<TlbEntry> tlb_;
  uint64_t use_clock_ = 0;
  std::vector<PteLine> pte_cache_;
  uint64_t pte_use_clock_ = 0;
  uint64_t epoch_ = 0;                   // bumped by every invalidation
  std::deque<Job*> queue_;               // waiting for the walker, in arrival order
  bool walker_busy_ = false;
  std::vector<Segment> walker_segments_;   // the walker thread's segments of the job it resolves
  sc_core::sc_event queue_event_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::vector<Part*> free_parts_;
  std::vector<std::unique_ptr<Job>> jobs_;
  std::vector<Job*> free_jobs_;
  MmuObserver* observer_ = nullptr;
  MmuStats stats_;
};

}  // namespace hpusim::hw
