// One Gaudi-1 DMA core (the engine behind a DMA channel's QMAN): a register block in the CFG space
// at regs::dma_core_base(channel) and a fabric master that moves data in bursts.
//
// A transfer is programmed with register writes (SRC_BASE_LO/HI, DST_BASE_LO/HI, DST_TSIZE_0 and,
// for strided transfers, SRC/DST_TSIZE_1..4 and SRC/DST_STRIDE_1..4) and started by writing
// COMMIT: LIN = linear copy, MEM_SET = fill with the 64-bit value in SRC_BASE_HI:LO, WR_COMP_EN =
// write WR_COMP_WDATA to WR_COMP_ADDR_HI:LO once every data write has completed. The QMAN's
// LIN_DMA packet performs exactly these writes. See README.md for the register semantics, the
// timing model and the error behaviour.
#pragma once

#include <systemc>
#include <tlm>

#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "arch/reduction/reduction.h"
#include "card_preset.pb.h"
#include "hw/cfg/cfg_space.h"
#include "hw/common/engine_status.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/timed_writes.h"
#include "hw/dma/dma_port.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

// ERR_CAUSE bit the register map does not name (bits 0..3 are HBW_RD_ERR, HBW_WR_ERR, LBW_WR_ERR and
// DESC_OVF): a COMMIT the model cannot execute (transpose, (de)compression, or a strided transfer
// whose source and destination boxes hold different byte counts). Local to this model.
inline constexpr uint32_t kDmaErrCauseBadCommit = 1u << 4;

struct DmaCoreConfig {
  std::string name;                 // sc_module name, observer and error messages ("dma0")
  uint32_t channel = 0;             // DMA channel 0..7 (informational: the owner attaches the block)
  bool external = false;            // a PCI (host <-> device) channel (informational)
  uint32_t max_burst_bytes = 256;   // largest read/write; a power of two; bursts never cross a
                                    // multiple of it in the source (copy) or destination (memset)
  uint32_t outstanding = 32;        // copy bursts in flight: a burst holds a slot from its read
                                    // request until its data has been sent on as a write
  uint32_t posted_writes = 2048;    // writes sent and not yet answered, at most (a posted write
                                    // holds no data in the engine, only a response count); also
                                    // the memset window
  Picoseconds cycle_ps = 909;       // DMA clock period: one request issued per cycle at most
  uint32_t setup_cycles = 16;       // from a transfer's start to its first request
  uint32_t queue_depth = 8;         // committed transfers waiting behind the running one
};

// The parameters of DMA channel `channel` on `card`: clocks.dma_mhz for the cycle, the channel kind
// from dma.pci_channels, and the burst size, windows, setup time and queue depth from the preset's
// dma section (a PCI channel uses dma.pci_outstanding for both its reads and its posted writes).
DmaCoreConfig dma_core_config_from(const preset::Card& card, uint32_t channel);

// A transfer as the engine latched it at COMMIT.
struct DmaTransfer {
  uint64_t id = 0;                  // per core, 1, 2, ... in commit order
  uint32_t commit = 0;              // the COMMIT word
  bool memset = false;
  bool linear = true;
  bool reduce = false;              // REDUCE_CFG.EN: destination = op(destination, source)
  reduction::ReduceOp reduce_op = reduction::ReduceOp::Sum;
  reduction::ReduceType reduce_type = reduction::ReduceType::F32;
  uint32_t reduce_cfg = 0;          // REDUCE_CFG as latched (validated when the transfer runs)
  uint64_t source = 0;              // source address, or the 64-bit fill value for memset
  uint64_t destination = 0;
  uint64_t bytes = 0;               // total bytes written
  bool write_completion = false;
  uint64_t completion_address = 0;
  uint32_t completion_data = 0;
  uint32_t src_size[5] = {};        // strided: dimension sizes (bytes in dimension 0, counts above)
  uint32_t dst_size[5] = {};
  uint32_t src_stride[5] = {};      // strided: byte strides of dimensions 1..4 ([0] unused)
  uint32_t dst_stride[5] = {};
  Picoseconds committed_ps = 0;     // when COMMIT took effect
};

// Hooks so the card can trace the engine and turn failures into event-queue entries.
struct DmaObserver {
  virtual ~DmaObserver() = default;
  // The engine began executing `transfer` (after any earlier ones) at `at`.
  virtual void transfer_started(uint32_t channel, const DmaTransfer& transfer, Picoseconds at) {
    (void)channel, (void)transfer, (void)at;
  }
  // Every data write completed and, if requested, the completion message was answered OK, at `at`.
  virtual void transfer_done(uint32_t channel, const DmaTransfer& transfer, Picoseconds at) {
    (void)channel, (void)transfer, (void)at;
  }
  // A transfer (or a COMMIT) failed: `address` is the first failing address, `message` says why.
  // No completion message is sent for it. ERR_CAUSE holds the matching bit.
  virtual void transfer_failed(uint32_t channel, uint64_t address, const std::string& message, Picoseconds at) {
    (void)channel, (void)address, (void)message, (void)at;
  }
  // A COMMIT was ignored because CFG_0.EN was 0.
  virtual void commit_ignored(uint32_t channel, uint32_t commit, Picoseconds at) {
    (void)channel, (void)commit, (void)at;
  }
  // An error with ERR_CFG.STOP_ON_ERR set halted the engine at `at` (after transfer_failed).
  virtual void halted(uint32_t channel, Picoseconds at) { (void)channel, (void)at; }
};

struct DmaCoreStats {
  uint64_t commits = 0;             // COMMIT writes that took effect (accepted or not)
  uint64_t ignored_commits = 0;     // CFG_0.EN was 0
  uint64_t overflows = 0;           // commit queue full: dropped, ERR_CAUSE.DESC_OVF
  uint64_t transfers = 0;           // completed without error
  uint64_t failed_transfers = 0;
  uint64_t aborted_transfers = 0;   // dropped by reset() or by a CFG_1.FLUSH
  uint64_t bytes = 0;               // data bytes written successfully
  uint64_t read_bursts = 0;
  uint64_t write_bursts = 0;
  uint64_t read_latency_ps = 0;     // sums over data bursts, issue to response
  uint64_t write_latency_ps = 0;
  uint64_t completion_messages = 0; // completion writes answered OK
  uint64_t error_messages = 0;      // ERRMSG writes issued
  uint64_t errors = 0;              // error events: failed transfers and overflows
  uint64_t halts = 0;               // errors that halted the engine (ERR_CFG.STOP_ON_ERR)
  uint64_t busy_ps = 0;             // time STS0.BUSY was set (up to the current time)
};

class DmaCore : public sc_core::sc_module, public RegisterBlock, public EngineStatus, private DmaPort::Client {
 public:
  // Throws std::invalid_argument for a bad configuration.
  explicit DmaCore(const DmaCoreConfig& config);

  // The fabric master: system.bind_master(core.bus().socket, name).
  DmaPort& bus() { return bus_; }

  // RegisterBlock: the DMA core registers of regs::dma_core (see README); false elsewhere.
  bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
  bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;
  // Bytes to claim in the CFG space (one 4 KB page): cfg.attach(name, base, core.size_bytes(), core).
  static constexpr uint64_t size_bytes() { return 0x1000; }

  void set_observer(DmaObserver* observer) { observer_ = observer; }
  const DmaCoreConfig& config() const { return config_; }
  DmaCoreStats stats() const;
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);

  // Untimed inspection at the current simulation time (register writes due by now applied first).
  bool busy();                      // STS0.BUSY: a transfer running or queued
  uint32_t queued();                // committed transfers waiting (not the running one)
  uint32_t err_cause();
  // NON_SECURE_PROPS as it stands (writes already applied): the ASID and MMU-bypass bit the
  // engine's MMU uses. No side effects, so a translation stage may read it per access.
  uint32_t non_secure_props() const;
  // Room for more COMMITs; `queue_space_event()` is notified whenever a transfer starts.
  uint32_t queue_space() { return config_.queue_depth - queued(); }
  const sc_core::sc_event& queue_space_event() const { return started_event_; }
  // Notified when the engine has nothing running or queued.
  const sc_core::sc_event& idle_event() const { return idle_event_; }
  // Halted: by an error with ERR_CFG.STOP_ON_ERR set (until reset() or a CFG_1.FLUSH write), or by
  // software through CFG_1.HALT (while it is set). A halted engine starts no transfer; STS1.IS_HALT.
  bool halted();
  bool error_halted() const { return error_halted_; }

  // EngineStatus (the QMAN's engine barrier): idle = nothing running or queued and not halted, at
  // the current time (register writes due by now applied first). The event fires when the engine
  // becomes idle (also after reset() or a flush clears a halt).
  bool engine_idle() const override;
  const sc_core::sc_event& engine_idle_event() const override { return engine_idle_event_; }
  uint32_t engine_room() const override { return const_cast<DmaCore*>(this)->queue_space(); }
  const sc_core::sc_event& engine_room_event() const override { return started_event_; }

  // Modelled hard reset at the current simulation time: registers to their reset values (CFG_0.EN
  // = 0), queued transfers dropped, the running one abandoned (its requests already in the fabric
  // complete and are discarded; no completion message, no observer call), a halt cleared.
  // Statistics are kept.
  void reset();

 private:
  // A walk over a strided box: bytes of dimension 0 contiguous, then the outer dimensions.
  struct Cursor {
    uint64_t base = 0;
    uint64_t size[5] = {};
    uint64_t stride[5] = {};
    uint64_t index[5] = {};
    uint64_t offset = 0;            // of index[1..4] from base
    uint64_t address() const { return base + offset + index[0]; }
    uint64_t row_left() const { return size[0] - index[0]; }
    void advance(uint64_t bytes);
  };
  enum AccessKind : uint32_t {
    kDataRead = 1, kDataWrite, kFillWrite, kCompletionWrite, kErrorMessage,
    kReduceSourceRead, kReduceDestinationRead   // a reducing copy's pair of reads (tag: the partner)
  };

  DmaCore(sc_core::sc_module_name name, const DmaCoreConfig& config);

  static bool known_register(uint32_t offset);
  void apply_due();                 // SC_METHOD
  void apply_until(Picoseconds at) { pending_.apply_due(at); }
  void apply(uint32_t offset, uint32_t value, Picoseconds at);
  void commit(uint32_t value, Picoseconds at);
  uint32_t status0() const;
  void go_idle_if_done();
  bool can_start() const;           // not halted (by an error or by CFG_1.HALT)
  void halt_on_error(Picoseconds at);   // with ERR_CFG.STOP_ON_ERR: halt until reset or FLUSH
  void flush();                     // CFG_1.FLUSH: drop the queued transfers, clear an error halt
  void notify_if_engine_idle();

  void engine();                    // SC_THREAD
  void run(const DmaTransfer& transfer, uint64_t epoch);
  bool validate(const DmaTransfer& transfer, std::string& message) const;
  // Waits; false if reset() happened meanwhile (the transfer is abandoned).
  bool wait_or_reset(uint64_t epoch, const sc_core::sc_time& delay);
  bool wait_progress(uint64_t epoch);
  void note_failure(uint32_t cause, uint64_t address, const std::string& message);
  void send_error_message();
  void access_done(DmaPort::Access& access) override;
  void issue_write(DmaPort::Access& access);
  // A data read's response: counted, and a failure noted; true if it brought data.
  bool read_returned(DmaPort::Access& access);
  // A reducing copy's read arrived: once its partner has too, the reduced bytes are written.
  void reduce_read_done(DmaPort::Access& access);
  // Sends read data on as a write now, or parks it until the posted-write window has room.
  void write_or_park(DmaPort::Access& access);

  DmaCoreConfig config_;
  DmaPort bus_;
  DmaObserver* observer_ = nullptr;

  std::vector<uint32_t> regs_;      // one word per 4-byte offset of the page
  // Every write queues (a due one applies at the next delta cycle, or at a read or query first).
  TimedWrites<> pending_{[this](const RegisterWrite& w, Picoseconds at) {
                           apply(static_cast<uint32_t>(w.offset), w.value, at);
                         },
                         {/*apply_if_due_and_idle=*/false, /*notify_earliest=*/true,
                          /*queue_while_applying=*/false}};

  std::deque<DmaTransfer> queue_;
  uint64_t next_id_ = 1;
  bool running_ = false;
  uint64_t epoch_ = 0;              // bumped by reset(): requests of older epochs are discarded
  sc_core::sc_event work_event_;    // a transfer was queued
  sc_core::sc_event reset_event_;
  sc_core::sc_event progress_event_;// a request completed
  sc_core::sc_event started_event_;
  sc_core::sc_event idle_event_;
  sc_core::sc_event engine_idle_event_;
  bool error_halted_ = false;       // STOP_ON_ERR: an error halted the engine

  // The running transfer's requests.
  uint32_t reads_in_flight_ = 0;
  uint32_t writes_in_flight_ = 0;
  std::deque<DmaPort::Access*> parked_;   // read data waiting for a write slot
  std::set<DmaPort::Access*> reduce_arrived_;   // reducing reads whose partner is still in flight
  reduction::ReduceOp reduce_op_ = reduction::ReduceOp::Sum;   // the running transfer's
  reduction::ReduceType reduce_type_ = reduction::ReduceType::F32;
  bool failed_ = false;
  uint64_t fail_address_ = 0;
  std::string fail_message_;

  bool busy_flag_ = false;
  Picoseconds busy_since_ = 0;
  DmaCoreStats stats_;
};

}  // namespace hpusim::hw
