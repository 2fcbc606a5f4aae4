// A Gaudi 1 queue manager (QMAN): four streams, each a primary queue (PQ) of buffer descriptors in
// host memory feeding an upper command processor (CP), plus the shared lower CP fed by CP_DMA.
// Each CP fetches its command buffer over the fabric and executes the Gaudi packet set; messages
// (MSG_LONG / MSG_SHORT / MSG_PROT) and register writes to the engine's CFG block are posted
// writes, FENCE waits on the CP's fence counters (incremented by writes to CP_FENCEn_RDATA, usually
// from a sync-manager monitor). Before a packet runs, its barriers hold: EB waits until the engine
// is idle, MB until the CP's earlier messages are answered, RB (and EB) until its earlier register
// writes are. REPEAT loops and LOAD_AND_EXE (predicates or scalar RFs) are modelled as
// README.md describes. STOP, an undefined opcode or a failed access raise a QMAN error:
// GLBL_STS1 records the cause, the error message GLBL_ERR_WDATA is written to GLBL_ERR_ADDR when
// enabled, and that CP stops until the QMAN is reset. The registers sit at the real Gaudi 1 CFG
// offsets (arch/regs/gaudi1_map.h).
#pragma once

#include <systemc>

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/cfg/cfg_space.h"
#include "hw/common/bus_master.h"
#include "hw/common/engine_status.h"
#include "hw/common/timed_writes.h"
#include "arch/packets/packets.h"
#include "arch/regs/gaudi1_map.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct QmanConfig {
  regs::QmanId id = regs::QmanId::DMA0;
  uint64_t block_address = 0;          // device address of the QMAN register block
  uint64_t engine_block_address = 0;   // device address of the engine's CFG block (WREG_32 target)
  uint64_t ldma_block_address = 0;     // base the CP_LDMA_*_OFFSET registers are relative to
  Picoseconds cycle_ps = 909;          // CP clock
  uint32_t packet_cycles = 4;          // CP cycles to decode and dispatch one packet
  uint32_t fetch_bytes = 128;          // command-buffer fetch granule
  uint32_t fetch_window = 8;           // fetch reads in flight
  uint32_t lower_cp_fifo = 8;          // CP_DMA descriptors the lower CP can hold
  uint32_t max_cb_bytes = 2u << 20;    // larger buffer sizes are a fetch error (the driver's CB limit)
  EngineStatus* engine = nullptr;      // the engine behind this QMAN for EB; nullptr = always idle
  // The offset in the engine block of a register whose writes commit operations to the engine's
  // queue (the NIC ports' COMMIT), if any: a WREG_32 to it waits for room in that queue, as a
  // LIN_DMA's commit does.
  std::optional<uint32_t> commit_register;
};

// Why a CP stopped; the bit values are those of GLBL_STS1.
enum class QmanError : uint32_t {
  kFetch = regs::qm::kGlblSts1CpRdErr,
  kUndefinedOpcode = regs::qm::kGlblSts1CpUndefCmdErr,
  kStop = regs::qm::kGlblSts1CpStopOp,
  kMessage = regs::qm::kGlblSts1CpMsgWrErr,
  kRegisterWrite = regs::qm::kGlblSts1CpWregErr,
  kPqFetch = regs::qm::kGlblSts1PqfRdErr,
};

class QmanObserver {
 public:
  virtual ~QmanObserver() = default;
  virtual void packet_executed(const std::string& /*qman*/, unsigned /*cp*/, const qman::Packet& /*packet*/,
                               Picoseconds /*start*/, Picoseconds /*end*/) {}
  virtual void command_buffer_done(const std::string& /*qman*/, unsigned /*stream*/, uint32_t /*pq_ci*/,
                                   Picoseconds /*at*/) {}
  virtual void error(const std::string& /*qman*/, unsigned /*cp*/, QmanError /*cause*/,
                     const std::string& /*message*/, Picoseconds /*at*/) {}
};

struct QmanStats {
  uint64_t command_buffers = 0;
  uint64_t packets = 0;
  uint64_t messages = 0;
  uint64_t register_writes = 0;
  uint64_t fence_waits = 0;
  uint64_t errors = 0;
};

class Qman : public sc_core::sc_module, public RegisterBlock {
 public:
  Qman(sc_core::sc_module_name name, const QmanConfig& config);

  BusMaster& bus() { return bus_; }
  static constexpr uint64_t kBlockBytes = 0x1000;

  bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
  bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;

  void set_observer(QmanObserver* observer) { observer_ = observer; }
  const QmanStats& stats() const { return stats_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  const std::string& qman_name() const { return name_; }
  // GLBL_NON_SECURE_PROPS_<cp> as it stands (writes already applied): the ASID and MMU-bypass bit
  // of the CP's accesses. No side effects. The card's MMU for this QMAN uses CP 0's.
  uint32_t non_secure_props(unsigned cp) const {
    return plain_registers_[regs::qm_reg_offset(regs::QmReg::GlblNonSecureProps, cp) / 4];
  }
  bool cp_stopped(unsigned cp) const { return cps_[cp].stopped; }
  uint32_t fence_counter(unsigned cp, unsigned fence) const { return cps_[cp].fence[fence]; }
  // The scalar register files of CP `cp` (LOAD_AND_EXE with dst = 1 loads them; REPEAT counts).
  static constexpr unsigned kScalarRfs = 4;
  uint32_t scalar_rf(unsigned cp, unsigned rf) const { return cps_[cp].scalars.at(rf); }
  // A modelled hard reset: every CP idle and running, queues empty, registers at reset values.
  void reset();

 private:
  struct CommandBuffer {
    uint64_t address = 0;
    uint32_t size = 0;
  };
  // A REPEAT loop level (o = 0 inner, o = 1 outer): armed by REPEAT sore = 1, counted down by
  // REPEAT sore = 0. Reset at the start of each command buffer.
  struct Loop {
    bool armed = false;
    uint32_t left = 0;          // iterations still to run, the current one included
    size_t start_offset = 0;    // command-buffer offset of the REPEAT that armed it
  };
  struct Cp {
    std::array<uint32_t, regs::kFencesPerCp> fence{};
    std::array<uint32_t, kScalarRfs> scalars{};   // scalar RFs 0..3 (LOAD_AND_EXE dst = 1)
    std::array<Loop, 2> loops{};
    std::array<uint64_t, regs::kCpMsgBases> msg_base{};
    uint32_t ldma_tsize_offset = 0, ldma_src_offset = 0, ldma_dst_offset = 0;
    uint32_t predicates = 1;             // predicate 0 is always true
    uint32_t commits_unanswered = 0;     // LIN_DMA commits posted since the writes were last answered
    uint32_t error_causes = 0;           // GLBL_STS1_<cp>
    bool stopped = false;
    bool busy = false;
    sc_core::sc_event wake;              // new work, fence increment, restart
    std::deque<CommandBuffer> lower_fifo;   // lower CP only: CBs pushed by CP_DMA
  };
  struct Stream {
    uint64_t pq_base = 0;
    uint32_t pq_size_log2 = 0;
    uint32_t pi = 0, ci = 0;
  };

  void apply_write(uint64_t offset, uint32_t value, Picoseconds at_ps);
  void apply_due_writes();   // SC_METHOD
  void run_upper_cp(unsigned stream);
  void run_lower_cp();
  // Executes one command buffer on CP `cp`; false when the CP stopped on an error.
  bool execute(unsigned cp, const CommandBuffer& cb);
  // Waits for the packet's barriers, then executes it; false when the CP stopped (or was reset).
  bool run_packet(unsigned cp, const qman::Packet& packet);
  bool wait_barriers(unsigned cp, const qman::Barriers& barriers);
  bool execute_packet(unsigned cp, const qman::Packet& packet);
  // REPEAT: sets `next` (the offset of the packet to run next) when it jumps.
  bool repeat(unsigned cp, const qman::Repeat& packet, uint64_t cb_address, size_t offset, size_t size,
              size_t& next);
  // LOAD_AND_EXE scalar mode, exe: decodes the scalar RFs (all / lower 2, or upper 2) as a packet and runs it.
  bool execute_scalars(unsigned cp, bool upper);
  bool predicate_true(const Cp& cp, uint8_t pred) const { return pred == 0 || (cp.predicates >> pred) & 1u; }
  bool send_message(unsigned cp, uint64_t address, uint32_t value);
  // Engine register writes are posted in order (owner register_owner(cp)); RB, EB and the end of a
  // command buffer wait for their answers, and a failed one is the CP's register-write error.
  bool write_engine_register(unsigned cp, uint64_t address, uint32_t value);
  bool registers_answered(unsigned cp);
  // Before a commit to the engine: once the commits already posted have arrived, waits for a free
  // slot in the engine's queue. False if a reset or a stop ended the wait.
  bool await_engine_room(unsigned cp);
  static unsigned register_owner(unsigned cp) { return regs::kQmanCps + 1 + cp; }
  void raise_error(unsigned cp, QmanError cause, const std::string& message);
  // Stream arbitration (ARB_POINT with ARB_CFG_0.EN): grants the critical section to a waiter.
  bool arbitrate(unsigned stream, const qman::ArbPoint& point);
  void grant_next();
  void arbitration_decision();
  void cp_wait(unsigned cp);
  uint32_t queue_entries(const Stream& s) const { return 1u << s.pq_size_log2; }
  std::string describe(unsigned cp) const;

  QmanConfig config_;
  std::string name_;
  BusMaster bus_;
  std::array<Cp, regs::kQmanCps> cps_;
  std::array<Stream, regs::kQmanStreams> streams_;
  std::vector<uint32_t> plain_registers_;   // registers stored as written
  uint32_t glbl_cfg0_ = 0, glbl_cfg1_ = 0, glbl_err_cfg_ = 0, glbl_err_wdata_ = 0;
  uint64_t glbl_err_addr_ = 0;
  uint32_t cq_ptr_lo_ = 0, cq_ptr_hi_ = 0;
  QmanObserver* observer_ = nullptr;
  QmanStats stats_;
  uint64_t generation_ = 0;   // bumped by reset(): work begun before it is abandoned
  int arb_owner_ = -1;        // stream holding the arbitration grant
  std::array<bool, regs::kQmanStreams> arb_waiting_{};
  std::array<uint8_t, regs::kQmanStreams> arb_priority_{};
  unsigned wrr_next_ = 0;     // WRR: stream whose turn it is
  uint32_t wrr_credit_ = 0;   // WRR: grants left for the stream at wrr_next_
  bool decision_pending_ = false;
  // Accepted, not yet arrived; a due write with nothing queued applies at once.
  TimedWrites<> pending_writes_{[this](const RegisterWrite& w, Picoseconds at) { apply_write(w.offset, w.value, at); },
                                {/*apply_if_due_and_idle=*/true, /*notify_earliest=*/true,
                                 /*queue_while_applying=*/false}};
  sc_core::sc_event arbitration_event_;   // the arbiter decides one arbitration window after a release
};

}  // namespace hpusim::hw
