// One TPC of a Gaudi-1 class card as a SystemC module: its CFG register block (descriptor sets,
// TPC_CMD, TPC_EXECUTE, STATUS...), an instruction cache filled through the core's fabric port,
// the functional executor (tpc::TpcExecutor) and a cycle model around it (one bundle per TPC
// cycle, a register scoreboard with the preset latencies, taken-branch penalty, global loads and
// stores as timed fabric accesses), the end-of-kernel sync-object message and the kernel-error
// interrupt. README.md (section "The TPC core") documents the registers, the timing and what is
// not modelled.
#pragma once

#include <systemc>
#include <tlm>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "card_preset.pb.h"
#include "hw/cfg/cfg_space.h"
#include "hw/common/engine_status.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/ports.h"
#include "hw/dma/dma_port.h"
#include "arch/regs/gaudi1_map.h"
#include "arch/tpc/tpc_registers.h"
#include "hw/tpc/executor.h"
#include "hw/tpc/prefetch_buffer.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct TpcCoreParams {
  std::string name = "tpc0";        // sc_module name and fabric master name
  unsigned index = 0;               // TPC number (informational; events, names)
  tpc::TpcCoreConfig exec;          // vector width, SLM, VLM
  Picoseconds cycle_ps = 556;       // clocks.tpc_mhz
  uint32_t spu_latency = 1;         // result latency per LatencyClass, in cycles
  uint32_t vpu_latency = 4;
  uint32_t special_latency = 8;
  uint32_t local_latency = 4;
  uint32_t branch_penalty = 2;      // extra cycles after a taken jmp
  uint32_t icache_bytes = 16384;    // fully associative, LRU
  uint32_t icache_line_bytes = 64;  // a multiple of 32 (one bundle), a power of two
  uint32_t icache_fill_lines = 4;   // lines one miss reads (the missed one and the next, within its 4 KB page)
  uint32_t quantum_cycles = 1000;   // local time runs at most this far ahead of SystemC time
  uint32_t max_outstanding = 64;    // global loads in flight; the core stalls beyond
  uint32_t max_posted_writes = 256; // global stores sent and unanswered (posted, as the DMA's are)
  uint32_t prefetch_entries = 64;   // prefetch buffer entries (one prefetch each); 0: prefetch does nothing
  uint32_t prefetch_hit_latency = 4; // a load served by the prefetch buffer: cycles after issue or arrival
  uint32_t prefetch_stale_cycles = 8192;  // a full buffer evicts entries unused this long after arriving
  // Hook for the cost of narrow accesses: a global read narrower than this is sent to the fabric
  // as a read of this many bytes, aligned down to a multiple of it (the memories then charge the
  // wider access). 0 = every access is charged its own size. Writes are never widened (they carry
  // the data; a wider write would need byte enables).
  uint32_t min_access_bytes = 0;
  uint32_t launch_queue_depth = 4;  // TPC_EXECUTEs latched behind the running kernel
  uint32_t sm_base_high_reset = 0;  // reset value of SM_BASE_ADDRESS_HIGH (the card: CFG base >> 32)
};

// The parameters of TPC `index` on `card` (preset `tpc` section and clocks.tpc_mhz).
TpcCoreParams tpc_core_params_from(const preset::Card& card, unsigned index);

// What a kernel did, for tests and traces.
struct TpcKernelStats {
  uint64_t kernel = 0;             // 1, 2, ... per core
  uint64_t kernel_address = 0;     // the program's first bundle (the descriptor's kernel base)
  Picoseconds start_ps = 0;        // the TPC_EXECUTE took effect (the kernel's cycle 0)
  Picoseconds end_ps = 0;          // idle again (after the completion message, if any)
  uint64_t cycles = 0;             // from cycle 0 to the cycle after the halt bundle issued
  uint64_t bundles = 0;            // bundles executed
  uint64_t stall_cycles = 0;       // cycles a bundle waited at issue (scoreboard, full windows)
  uint64_t window_stall_cycles = 0;  // of those, waiting for room in the load or store window
  uint64_t fetch_stall_cycles = 0; // cycles waiting for instruction-cache fills
  uint64_t icache_misses = 0;
  uint64_t loads = 0, stores = 0;  // global accesses
  uint64_t load_bytes = 0, store_bytes = 0;
  uint64_t prefetches = 0;         // prefetch reads sent (a prefetch of a range already buffered sends none)
  uint64_t prefetch_hits = 0;      // loads served by the prefetch buffer
  uint64_t prefetch_dropped = 0;   // prefetches dropped because every buffer entry waited for its read
  uint64_t prefetch_evicted = 0;   // arrived, never-used prefetches a later one replaced
  bool faulted = false;
  bool message_sent = false;       // the sync-object message was answered OK
};

// Told of every kernel a core finishes (traces).
struct TpcObserver {
  virtual ~TpcObserver() = default;
  virtual void kernel_finished(const std::string& core, const TpcKernelStats& kernel) = 0;
};

// Sums over every kernel a core finished since construction: what profilers and --stats read.
struct TpcKernelTotals {
  uint64_t kernels = 0;
  uint64_t bundles = 0;
  uint64_t cycles = 0;
  uint64_t busy_ps = 0;            // summed end_ps - start_ps
  uint64_t load_bytes = 0, store_bytes = 0;
  uint64_t faulted = 0;
};

struct TpcFaultRecord {
  tpc::FaultKind kind = tpc::FaultKind::None;
  uint32_t pc = 0;
  std::string message;
  uint64_t kernel = 0;
  Picoseconds at = 0;
};

class TpcCore : public sc_core::sc_module, public RegisterBlock, public EngineStatus, private DmaPort::Client {
 public:
  // Throws std::invalid_argument for a bad configuration.
  explicit TpcCore(const TpcCoreParams& params);
  ~TpcCore() override;

  // The fabric master (bind through the core's MMU): core.bus().socket.
  DmaPort& bus() { return bus_; }
  static constexpr uint64_t size_bytes() { return 0x1000; }

  // RegisterBlock over the TPC CFG block (offsets of regs::tpc_cfg).
  bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
  bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;

  // EngineStatus: idle = no kernel running or latched behind it.
  bool engine_idle() const override { return !running_ && queue_.empty(); }
  const sc_core::sc_event& engine_idle_event() const override { return idle_event_; }

  // The kernel-error interrupt line (the card wires it to the device CPU's GIC: TPCn_KRN_ERR).
  // The kernel-error interrupt (TPCn_KRN_ERR; the card binds it to the device CPU's GIC).
  InterruptLine& interrupt() { return interrupt_; }

  // MMU props of this engine: ARUSER_LO (the driver writes the ASID there; [9:0] ASID, bit 10
  // MMU bypass).
  uint32_t mmu_props() const { return regs_[regs::tpc_cfg::kAruserLo / 4]; }

  const TpcCoreParams& params() const { return params_; }
  const tpc::TpcExecutor& executor() const { return *executor_; }
  // The last fault (kind None when no kernel has faulted since construction or reset()).
  const TpcFaultRecord& last_fault() const { return fault_; }
  // The last kKernelHistory finished kernels (older ones are only in the totals), and the sums
  // over all of them.
  static constexpr size_t kKernelHistory = 1024;
  const std::deque<TpcKernelStats>& kernels() const { return kernels_; }
  void set_observer(TpcObserver* observer) { observer_ = observer; }
  const TpcKernelTotals& kernel_totals() const { return totals_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  // Kernel `number` (its `kernel` field, from 1) while it is in the history; nullptr after.
  const TpcKernelStats* kernel(uint64_t number) const;
  uint64_t refused_executes() const { return refused_; }
  uint64_t faults() const { return faults_; }
  void invalidate_icache();

  // Decodes the descriptor set starting at block offset `set` (regs::tpc_cfg::kKernelDesc or
  // kQmDesc) into a launch context. Unknown / malformed fields: a tensor whose last_dim is above 4
  // gets dims 0 and `error` names it.
  tpc::LaunchContext decode_descriptor(uint32_t set, std::string* error = nullptr) const;

  // Modelled reset: registers to reset values, the queue dropped, a running kernel abandoned at
  // its next synchronisation point (no message, no interrupt), the icache emptied.
  void reset();

 private:
  struct Launch {
    std::vector<uint32_t> desc;    // the latched QM set (kDescSize bytes)
    Picoseconds at = 0;
    uint32_t sm_base_high = 0;
    uint64_t icache_prefetch_base = 0;    // what a TPC_CMD ICACHE_PREFETCH before it asked for
    uint32_t icache_prefetch_bytes = 0;   // (0: none)
  };
  // What the icache knows of one bundle of a line. kChecked: decoded and it passed
  // TpcExecutor::bundle_well_formed() (executed with execute_checked()); kDecoded: decoded, but
  // a slot is ill formed (execute() faults on it); kBad: it does not decode.
  enum BundleState : uint8_t { kUndecoded, kDecoded, kChecked, kBad };
  struct Line {
    uint64_t tag = ~uint64_t{0};
    uint64_t used = 0;
    bool valid = false;
    std::vector<uint8_t> bytes;
    std::vector<uint8_t> state;    // per bundle: a BundleState
    std::vector<tpc::Bundle> bundles;
    std::vector<std::string> errors;
  };
  // kProbe: the timed copy of an access whose functional check failed, sent so the MMU and the
  // fabric see (and report) it like any other engine's bad access; its answer is ignored.
  // kIcacheFill: a read of TPC_CMD's ICACHE_PREFETCH (lines for the cache, no waiter).
  enum AccessKind : uint32_t { kFetch = 1, kLoad, kStore, kMessage, kProbe, kPrefetch, kIcacheFill };
  class Memory;

  TpcCore(sc_core::sc_module_name name, const TpcCoreParams& params);

  void thread();                   // SC_THREAD: runs kernels
  void run_kernel(const Launch& launch, uint64_t epoch);
  void access_done(DmaPort::Access& access) override;

  // Local time helpers.
  Picoseconds at_cycle(uint64_t cycle) const { return start_ps_ + cycle * params_.cycle_ps; }
  uint64_t cycle_at(Picoseconds ps) const {
    return ps <= start_ps_ ? 0 : (ps - start_ps_ + params_.cycle_ps - 1) / params_.cycle_ps;
  }
  void sync_to(uint64_t cycle);    // wait until SystemC time reaches cycle `cycle`
  bool wait_progress();            // false if reset() abandoned the kernel

  // The bundle at `address` (nullptr on an error); `checked`: it passed bundle_well_formed().
  const tpc::Bundle* fetch(uint64_t address, uint64_t& cycle, std::string& error, bool& fetch_failed, bool& checked);
  Line* find_line(uint64_t tag);
  Line* fill_line(uint64_t tag, const uint8_t* bytes);
  // Sends the reads of an ICACHE_PREFETCH: `bytes` from `base` in fills of icache_fill_lines
  // lines (within a 4 KB page), all at once, skipping lines the cache holds.
  void start_icache_prefetch(uint64_t base, uint32_t bytes);
  static constexpr uint64_t kFillPageBytes = 4096;
  uint32_t latency_of(tpc::LatencyClass c) const;
  // The fabric read a global load or prefetch sends: widened to min_access_bytes.
  void widen(uint64_t& address, uint64_t& length) const;
  // The scoreboard entry of a register: V0..V39, S0..S35, I0..I7, SP0..SP15, VP0..VP7.
  static unsigned reg_slot(const tpc::RegRef& r) {
    static constexpr uint8_t kBase[] = {0, 0, 40, 76, 84, 100};   // indexed by RegFile
    return r.file == tpc::RegFile::None ? 0 : kBase[static_cast<uint8_t>(r.file)] + r.index;
  }

  TpcCoreParams params_;
  DmaPort bus_;
  std::unique_ptr<tpc::TpcExecutor> executor_;
  std::unique_ptr<Memory> memory_;
  InterruptLine interrupt_{"error_interrupt"};

  std::vector<uint32_t> regs_;     // one word per 4-byte offset
  std::deque<Launch> queue_;
  bool running_ = false;
  uint64_t epoch_ = 0;
  sc_core::sc_event work_event_, idle_event_, progress_event_;

  // Instruction cache.
  std::vector<Line> lines_;
  std::unordered_map<uint64_t, unsigned> line_index_;
  uint64_t use_counter_ = 0;
  uint64_t icache_generation_ = 0;
  Line* last_line_ = nullptr;      // the line of the last fetch (nullptr after an invalidate)
  std::unordered_map<uint64_t, uint64_t> lines_coming_;   // tag -> generation: an ICACHE_PREFETCH read on its way
  uint64_t icache_prefetch_base_ = 0;    // a TPC_CMD ICACHE_PREFETCH the next TPC_EXECUTE takes
  uint32_t icache_prefetch_bytes_ = 0;

  // The running kernel.
  Picoseconds start_ps_ = 0;
  static constexpr unsigned kRegSlots = 40 + 36 + 8 + 16 + 8;
  static constexpr uint64_t kPending = ~uint64_t{0};
  std::array<uint64_t, kRegSlots> ready_{};
  std::array<uint64_t, 2> prefetch_ready_{};   // per global access of a bundle: a load the buffer served
  uint32_t in_flight_ = 0;         // loads + stores of the running kernel
  uint32_t stores_in_flight_ = 0;  // of those, stores (their own, posted window)
  uint32_t fetches_in_flight_ = 0;
  uint32_t prefetches_in_flight_ = 0;   // of in_flight_, prefetches (their own window: the buffer)
  TpcPrefetchBuffer prefetch_;
  bool late_error_ = false;        // a timed access failed after its functional check passed
  std::string late_message_;
  DmaPort::Access* fetch_done_ = nullptr;
  TpcKernelStats stats_;
  TpcObserver* observer_ = nullptr;

  TpcFaultRecord fault_;
  std::deque<TpcKernelStats> kernels_;
  TpcKernelTotals totals_;
  uint64_t next_kernel_ = 1;
  uint64_t refused_ = 0;
  uint64_t faults_ = 0;
};

}  // namespace hpusim::hw
