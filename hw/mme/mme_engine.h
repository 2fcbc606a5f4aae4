// One MME master of a Gaudi-class card (a master core and its slave as one engine) as a SystemC
// module: its CTRL register block (the job descriptor, CMD, ARCH_STATUS), a fabric master port
// for operand reads and output writes, the cycle model of the systolic array over a job plan
// (mme_plan.h), the arithmetic (mme_compute.h, on a worker thread), the end-of-job sync-object
// message and the error interrupt. README.md documents the registers, timing and arithmetic.
#pragma once

#include <systemc>
#include <tlm>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "card_preset.pb.h"
#include "hw/cfg/cfg_space.h"
#include "hw/common/engine_status.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/ports.h"
#include "hw/dma/dma_port.h"
#include "arch/mme/mme_job.h"
#include "hw/mme/mme_plan.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct MmeEngineParams {
  std::string name = "mme0";        // sc_module name and fabric master name
  unsigned index = 0;               // MME number (0 or 2 on Gaudi 1: the masters)
  Picoseconds cycle_ps = 546;       // clocks.mme_mhz
  uint32_t core_rows = 64;          // one core's array
  uint32_t core_cols = 64;
  uint32_t cores_per_engine = 2;    // mme.cores / mme.masters
  std::vector<mme::Geometry> geometries;   // parsed mme.geometries (at least one)
  uint32_t accumulators = 16;
  uint64_t staging_bytes = 65536;   // mme.staging_buffer_lines x 128-byte lines
  uint32_t max_request_bytes = 4096;
  uint32_t read_ports = 1;          // fabric master ports for operand reads (requests go round robin)
  uint32_t write_ports = 1;         // and for output writes (and the end-of-job message)
  uint32_t max_posted_writes = 256;
  uint32_t launch_queue_depth = 4;  // CMD EXECUTEs latched behind the running job
  uint32_t f32_array_cycles_per_k = 1;   // mme.f32_array_cycles_per_k
};

// The parameters of master `index` (0-based among the masters) on `card`. Throws
// std::invalid_argument for a preset the model cannot build (a bad geometry string).
MmeEngineParams mme_engine_params_from(const preset::Card& card, unsigned index);

enum class MmeError : uint8_t { None = 0, BadDescriptor = 1, OperandRead = 2, OutputWrite = 3 };
const char* mme_error_name(MmeError error);

// Sums over every job an engine finished since construction: what profilers and --stats read.
struct MmeJobTotals {
  uint64_t jobs = 0;
  uint64_t macs = 0;
  uint64_t mac_cycles = 0;         // MACs x the array cycles each common-dim value took (a roofline's MME work)
  uint64_t array_cycles = 0;
  uint64_t busy_ps = 0;            // summed end_ps - start_ps
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t faulted = 0;
};

struct MmeJobStats {
  uint64_t job = 0;                // 1, 2, ... per engine
  mme::MmeOp op = mme::MmeOp::Gemm;
  mme::GemmDims dims;
  mme::MmeType in = mme::MmeType::Bf16;
  Picoseconds start_ps = 0, end_ps = 0;   // EXECUTE took effect .. idle again (after the message)
  uint64_t cycles = 0;             // MME cycles from start to the last output write answered
  uint64_t array_cycles = 0;       // the array busy: tile steps + the first fill + the last drain
  uint64_t operand_stall_cycles = 0;   // the array idle waiting for operands
  uint64_t chunks = 0;
  uint64_t chunk_fetch_cycles = 0;     // summed over chunks: first read sent to last answer
  uint64_t macs = 0;               // useful MACs (M N K batch)
  uint32_t array_cycles_per_k = 1; // array cycles per common-dim value (the input type's rate)
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t reads = 0, writes = 0;
  uint32_t supertile_rows = 0, supertile_cols = 0, kc = 0;
  double host_compute_seconds = 0;     // wall time of the arithmetic (worker thread)
  double host_gather_seconds = 0;      // wall time snapshotting the operand bytes (simulation thread)
  bool faulted = false;
  bool message_sent = false;
};

// Told of every job an engine finishes (traces).
struct MmeObserver {
  virtual ~MmeObserver() = default;
  virtual void job_finished(const std::string& engine, const MmeJobStats& job) = 0;
};

struct MmeFaultRecord {
  MmeError error = MmeError::None;
  std::string message;
  uint64_t job = 0;
  Picoseconds at = 0;
};

class MmeEngine : public sc_core::sc_module, public RegisterBlock, public EngineStatus, private DmaPort::Client {
 public:
  explicit MmeEngine(const MmeEngineParams& params);
  ~MmeEngine() override;

  // The fabric master ports: read_ports for operands, then write_ports for outputs; bind each
  // through an MMU of the engine. Port 0 also carries the engine's functional (debug) reads.
  size_t port_count() const { return ports_.size(); }
  DmaPort& port(size_t index) { return *ports_.at(index); }
  static constexpr uint64_t size_bytes() { return mme::desc::kBlockBytes; }

  bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
  bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;

  bool engine_idle() const override { return !running_ && queue_.empty(); }
  const sc_core::sc_event& engine_idle_event() const override { return idle_event_; }

  // The error interrupt (the card wires it to the device CPU's GIC).
  InterruptLine& interrupt() { return interrupt_; }
  // MMU props (mme::desc::kProps, where the driver writes the ASID).
  uint32_t mmu_props() const { return regs_[mme::desc::kProps / 4]; }

  const MmeEngineParams& params() const { return params_; }
  // The output rows of a super-tile of a large GEMM in geometry 0: the rows the engine computes
  // per pass over B (the card reports it, so the compiler cuts GEMMs at these boundaries).
  uint32_t super_tile_rows() const;
  // The last kJobHistory finished jobs (older ones are only in the totals), and the sums over all.
  static constexpr size_t kJobHistory = 1024;
  const std::deque<MmeJobStats>& jobs() const { return jobs_; }
  void set_observer(MmeObserver* observer) { observer_ = observer; }
  const MmeJobTotals& job_totals() const { return totals_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  // Job `number` (its `job` field, from 1) while it is in the history; nullptr after.
  const MmeJobStats* job(uint64_t number) const;
  const MmeFaultRecord& last_fault() const { return fault_; }
  uint64_t refused_executes() const { return refused_; }
  // The running job's k-chunks done and in all (0 and 0 when idle): progress for long runs.
  std::pair<uint64_t, uint64_t> job_progress() const { return {chunks_done_, running_ ? chunks_total_ : 0}; }

  // Modelled reset: registers cleared, queue dropped, a running job abandoned at its next
  // synchronisation point (no message, no interrupt).
  void reset();

 private:
  // An access's kind: what it is, and (from kPortShift up) the port that carries it.
  enum AccessKind : uint32_t { kOperand = 1, kOutput, kMessage };
  static constexpr unsigned kPortShift = 8;
  uint32_t port_bits(const DmaPort& port) const;
  class Arithmetic;

  MmeEngine(sc_core::sc_module_name name, const MmeEngineParams& params);
  void thread();
  void run_job(const std::vector<uint32_t>& window, uint64_t epoch);
  bool execute(const mme::MmeJob& job, uint64_t epoch);
  void fault(MmeError error, const std::string& message);
  void access_done(DmaPort::Access& access) override;

  Picoseconds at_cycle(uint64_t cycle) const { return start_ps_ + cycle * params_.cycle_ps; }
  uint64_t cycle_at(Picoseconds ps) const {
    return ps <= start_ps_ ? 0 : (ps - start_ps_ + params_.cycle_ps - 1) / params_.cycle_ps;
  }
  void sync_to(uint64_t cycle);
  bool wait_progress();   // false if reset() abandoned the job
  bool debug_read(uint64_t address, size_t bytes, void* data);
  DmaPort& read_port() { return *ports_[next_read_++ % params_.read_ports]; }
  DmaPort& write_port() { return *ports_[params_.read_ports + next_write_++ % params_.write_ports]; }

  MmeEngineParams params_;
  std::vector<std::unique_ptr<DmaPort>> ports_;
  uint64_t next_read_ = 0, next_write_ = 0;
  InterruptLine interrupt_{"error_interrupt"};
  std::vector<uint32_t> regs_;
  std::deque<std::vector<uint32_t>> queue_;   // latched descriptor windows
  bool running_ = false;
  uint64_t epoch_ = 0;
  sc_core::sc_event work_event_, idle_event_, progress_event_;

  // The running job.
  Picoseconds start_ps_ = 0;
  std::vector<uint32_t> chunk_pending_;   // reads unanswered per chunk slot (ring)
  std::vector<uint64_t> chunk_arrival_;   // cycle the last read of the chunk slot arrived
  std::vector<uint64_t> chunk_issue_;     // cycle its reads were sent
  uint32_t writes_in_flight_ = 0;
  uint64_t chunks_done_ = 0, chunks_total_ = 0;
  // The write-back queue: output rows waiting for room in the posted-write window.
  struct PendingWrite {
    uint64_t address;
    uint32_t bytes;
    const float* values;   // f32 results (the job's arithmetic, alive until the job ends)
  };
  std::deque<PendingWrite> write_queue_;
  mme::MmeType write_type_ = mme::MmeType::F32;
  uint64_t write_epoch_ = 0;
  void pump_writes();
  uint32_t in_flight_ = 0;
  bool access_failed_ = false;   // a timed access failed (its kind and message below)
  uint32_t failed_kind_ = 0;
  std::string access_error_;
  MmeJobStats stats_;
  MmeObserver* observer_ = nullptr;

  MmeFaultRecord fault_;
  std::deque<MmeJobStats> jobs_;
  MmeJobTotals totals_;
  uint64_t next_job_ = 1;
  uint64_t refused_ = 0;
};

}  // namespace hpusim::hw
