#include "hw/mme/mme_engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/hex.h"
#include "hw/mme/mme_compute.h"

namespace hpusim::hw {
namespace {

constexpr uint64_t kStagingLineBytes = 128;   // the MME's staging-buffer line (c_cl_size)
constexpr uint32_t kChunkSlots = 64;          // chunks in flight at most (a ring of slots)

}  // namespace

const char* mme_error_name(MmeError error) {
  switch (error) {
    case MmeError::None: return "none";
    case MmeError::BadDescriptor: return "bad descriptor";
    case MmeError::OperandRead: return "operand read";
    case MmeError::OutputWrite: return "output write";
  }
  return "?";
}

MmeEngineParams mme_engine_params_from(const preset::Card& card, unsigned index) {
  const auto& m = card.mme();
  if (m.masters() == 0 || index >= m.masters()) {
    throw std::invalid_argument("MME master " + std::to_string(index) + " does not exist on " + card.name());
  }
  if (m.cores() % m.masters() != 0) throw std::invalid_argument("mme.cores must be a multiple of mme.masters");
  MmeEngineParams p;
  p.index = index;
  p.name = "mme" + std::to_string(index);
  p.cycle_ps = period_ps_from_mhz(card.clocks().mme_mhz());
  p.core_rows = m.array_rows();
  p.core_cols = m.array_cols();
  p.cores_per_engine = m.cores() / m.masters();
  for (const std::string& g : m.geometries()) {
    p.geometries.push_back(mme::parse_geometry(g, p.core_rows, p.core_cols, p.cores_per_engine));
  }
  if (p.geometries.empty()) throw std::invalid_argument("mme.geometries is empty");
  p.accumulators = m.accumulators();
  // mme.staging_buffer_lines is taken per core (assumed): the engine stages for its master and slave.
  p.staging_bytes = uint64_t{m.staging_buffer_lines()} * kStagingLineBytes * p.cores_per_engine;
  p.read_ports = m.read_ports();
  p.write_ports = m.write_ports();
  p.max_request_bytes = m.max_request_bytes();
  p.max_posted_writes = m.max_posted_writes();
  p.launch_queue_depth = m.launch_queue_depth();
  p.f32_array_cycles_per_k = m.f32_array_cycles_per_k();
  return p;
}

// ---------------------------------------------------------------------------------------------
// The arithmetic of one job on a worker thread, super-tile by super-tile in the plan's order,
// so output writes can start while later super-tiles are still being computed. The simulation
// thread only snapshots the operand bytes; the worker converts, transposes or lowers them and
// allocates the results, off the simulation thread's critical path.
// ---------------------------------------------------------------------------------------------

class MmeEngine::Arithmetic {
 public:
  Arithmetic(const mme::MmeJob& job, const mme::JobPlan& plan, std::vector<mme::OperandSnapshot> operands)
      : job_(job), plan_(plan), operands_(std::move(operands)), a_(operands_.size()), b_(operands_.size()),
        c_(operands_.size()) {
    worker_ = std::thread([this] { run(); });
  }
  ~Arithmetic() {
    stop_ = true;
    worker_.join();
  }

  // Blocks (wall time only) until super-tile `index` is computed. Throws std::logic_error if the
  // snapshot could not be unpacked (it holds exactly what gather_operands reads, so a bug).
  void wait_for(uint64_t index) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return done_ > index || !error_.empty(); });
    if (!error_.empty()) throw std::logic_error("MME arithmetic: " + error_);
  }
  const float* result(uint32_t batch) const { return c_[batch].data(); }
  double seconds() const { return seconds_; }

 private:
  void run() {
    // Below the simulation thread: on a machine with few cores the cycle model, which the
    // arithmetic runs ahead of, should not wait for it (values are the same either way).
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    const auto start = std::chrono::steady_clock::now();
    const mme::GemmDims& d = plan_.dims();
    for (uint64_t s = 0; s < plan_.supertiles() && !stop_; ++s) {
      const auto t = plan_.supertile(s);
      if (c_[t.batch].empty()) {
        std::string error;
        if (!mme::gather_operands(job_, t.batch, operands_[t.batch].reader(), a_[t.batch], b_[t.batch], error)) {
          std::lock_guard<std::mutex> lock(mutex_);
          error_ = error;
          ready_.notify_all();
          return;
        }
        operands_[t.batch] = {};
        c_[t.batch].resize(d.m * d.n);
      }
      mme::gemm_f32(a_[t.batch].data() + t.row0 * d.k, d.k, b_[t.batch].data() + t.col0, d.n,
                    c_[t.batch].data() + t.row0 * d.n + t.col0, d.n, t.rows, t.cols, d.k);
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = s + 1;
      ready_.notify_all();
    }
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  const mme::MmeJob job_;
  const mme::JobPlan& plan_;
  std::vector<mme::OperandSnapshot> operands_;
  std::vector<std::vector<float>> a_, b_, c_;
  std::string error_;
  std::mutex mutex_;
  std::condition_variable ready_;
  uint64_t done_ = 0;
  std::atomic<bool> stop_{false};
  double seconds_ = 0;
  std::thread worker_;
};

// ---------------------------------------------------------------------------------------------
// Registers
// ---------------------------------------------------------------------------------------------

MmeEngine::MmeEngine(const MmeEngineParams& params) : MmeEngine(sc_core::sc_module_name(params.name.c_str()), params) {}

MmeEngine::MmeEngine(sc_core::sc_module_name name, const MmeEngineParams& params)
    : sc_module(name), params_(params), regs_(size_bytes() / 4, 0) {
  const std::string who = "MME engine '" + params_.name + "': ";
  if (params_.cycle_ps == 0) throw std::invalid_argument(who + "cycle_ps must be positive");
  if (params_.geometries.empty()) throw std::invalid_argument(who + "needs at least one geometry");
  if (params_.geometries.size() > 4) throw std::invalid_argument(who + "at most 4 geometries (a 2-bit field)");
  if (params_.max_request_bytes < 4 || params_.max_posted_writes == 0) {
    throw std::invalid_argument(who + "max_request_bytes must be >= 4 and max_posted_writes >= 1");
  }
  if (params_.read_ports == 0 || params_.write_ports == 0) throw std::invalid_argument(who + "needs read and write ports");
  chunk_pending_.assign(kChunkSlots, 0);
  chunk_arrival_.assign(kChunkSlots, 0);
  chunk_issue_.assign(kChunkSlots, 0);
  for (uint32_t i = 0; i < params_.read_ports + params_.write_ports; ++i) {
    const bool read = i < params_.read_ports;
    const std::string port = (read ? "rd" : "wr") + std::to_string(read ? i : i - params_.read_ports);
    ports_.push_back(std::make_unique<DmaPort>(port.c_str()));
    ports_.back()->set_client(this);
  }
  SC_HAS_PROCESS(MmeEngine);
  SC_THREAD(thread);
}

MmeEngine::~MmeEngine() = default;

bool MmeEngine::read_register(uint64_t offset, uint32_t& value, Picoseconds) {
  if (offset >= size_bytes() || offset % 4 != 0) return false;
  if (offset == mme::desc::kArchStatus) {
    value = (engine_idle() ? mme::desc::kStatusIdle : 0) | (regs_[0] & mme::desc::kStatusFaulted);
    return true;
  }
  value = offset == mme::desc::kCmd ? 0 : regs_[offset / 4];
  return true;
}

bool MmeEngine::write_register(uint64_t offset, uint32_t value, Picoseconds) {
  if (offset >= size_bytes() || offset % 4 != 0) return false;
  switch (offset) {
    case mme::desc::kArchStatus:
      return true;   // read-only
    case mme::desc::kIntrCause:
      regs_[offset / 4] &= ~value;
      return true;
    case mme::desc::kCmd: {
      if ((value & mme::desc::kCmdExecute) == 0) return true;
      if (queue_.size() >= params_.launch_queue_depth) {
        ++refused_;
        return false;
      }
      queue_.emplace_back(regs_.begin(), regs_.begin() + mme::desc::kWindowEnd / 4);
      regs_[0] &= ~mme::desc::kStatusFaulted;
      work_event_.notify(sc_core::SC_ZERO_TIME);
      return true;
    }
    default:
      regs_[offset / 4] = value;
      return true;
  }
}

void MmeEngine::reset() {
  std::fill(regs_.begin(), regs_.end(), 0u);
  queue_.clear();
  ++epoch_;
  running_ = false;
  in_flight_ = 0;
  writes_in_flight_ = 0;
  write_queue_.clear();
  std::fill(chunk_pending_.begin(), chunk_pending_.end(), 0u);
  fault_ = {};
  idle_event_.notify(sc_core::SC_ZERO_TIME);
  progress_event_.notify(sc_core::SC_ZERO_TIME);
}

// ---------------------------------------------------------------------------------------------
// Jobs
// ---------------------------------------------------------------------------------------------

void MmeEngine::sync_to(uint64_t cycle) {
  const Picoseconds at = at_cycle(cycle);
  if (at > now_ps()) wait(delay_until(at));
}

bool MmeEngine::wait_progress() {
  const uint64_t epoch = epoch_;
  wait(progress_event_);
  return epoch == epoch_;
}

bool MmeEngine::debug_read(uint64_t address, size_t bytes, void* data) {
  auto* p = static_cast<unsigned char*>(data);
  while (bytes > 0) {
    const uint32_t piece = static_cast<uint32_t>(std::min<size_t>(bytes, size_t{1} << 30));
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_address(address);
    t.set_data_ptr(p);
    t.set_data_length(piece);
    t.set_streaming_width(piece);
    t.set_byte_enable_ptr(nullptr);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    if (ports_[0]->socket->transport_dbg(t) != piece) return false;
    address += piece;
    p += piece;
    bytes -= piece;
  }
  return true;
}

void MmeEngine::thread() {
  for (;;) {
    while (queue_.empty()) wait(work_event_);
    std::vector<uint32_t> window = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    const uint64_t epoch = epoch_;
    run_job(window, epoch);
    if (epoch != epoch_) continue;   // abandoned by reset()
    running_ = false;
    if (queue_.empty()) idle_event_.notify(sc_core::SC_ZERO_TIME);
  }
}

void MmeEngine::fault(MmeError error, const std::string& message) {
  stats_.faulted = true;
  fault_.error = error;
  fault_.message = message;
  fault_.job = stats_.job;
  fault_.at = now_ps();
  regs_[0] |= mme::desc::kStatusFaulted;
  regs_[mme::desc::kIntrCause / 4] |= 1u << static_cast<unsigned>(error);
  interrupt_.raise(now_ps());
}

void MmeEngine::run_job(const std::vector<uint32_t>& window, uint64_t epoch) {
  stats_ = MmeJobStats{};
  stats_.job = next_job_++;
  start_ps_ = now_ps();
  stats_.start_ps = start_ps_;
  in_flight_ = 0;
  writes_in_flight_ = 0;
  access_failed_ = false;
  access_error_.clear();

  const mme::MmeJob job = mme::decode(window.data());
  const std::string error = mme::validate(job, static_cast<uint32_t>(params_.geometries.size()));
  if (!error.empty()) {
    fault(MmeError::BadDescriptor, params_.name + ": bad descriptor: " + error);
  } else if (execute(job, epoch) && job.so_address != 0) {
    DmaPort& port = write_port();
    DmaPort::Access& access = port.acquire(true, job.so_address, 4);
    std::memcpy(access.buffer.data(), &job.so_message, 4);
    access.kind = kMessage | port_bits(port);
    access.tag2 = epoch;
    ++in_flight_;
    port.issue(access);
    while (in_flight_ > 0) {
      if (!wait_progress()) return;
    }
    if (access_failed_) fault(MmeError::OutputWrite, params_.name + ": " + access_error_);
    else stats_.message_sent = true;
  }
  if (epoch != epoch_) return;
  stats_.end_ps = now_ps();
  ++totals_.jobs;
  totals_.macs += stats_.macs;
  totals_.mac_cycles += stats_.macs * stats_.array_cycles_per_k;
  totals_.array_cycles += stats_.array_cycles;
  totals_.busy_ps += stats_.end_ps - stats_.start_ps;
  totals_.read_bytes += stats_.read_bytes;
  totals_.write_bytes += stats_.write_bytes;
  totals_.faulted += stats_.faulted ? 1 : 0;
  jobs_.push_back(stats_);
  if (jobs_.size() > kJobHistory) jobs_.pop_front();
  if (observer_ != nullptr) observer_->job_finished(params_.name, stats_);
}

const MmeJobStats* MmeEngine::job(uint64_t number) const {
  // Numbers grow, with gaps where a reset cut a run short.
  const auto it = std::lower_bound(jobs_.begin(), jobs_.end(), number,
                                   [](const MmeJobStats& s, uint64_t n) { return s.job < n; });
  return it != jobs_.end() && it->job == number ? &*it : nullptr;
}

uint32_t MmeEngine::super_tile_rows() const {
  mme::MmeJob large;
  large.op = mme::MmeOp::Gemm;
  large.m = large.n = 1u << 16;
  large.k = 1024;
  large.lda = large.k;
  large.ldb = large.ldo = large.n;
  mme::PlanParams pp;
  pp.geometry = params_.geometries.at(0);
  pp.accumulators = params_.accumulators;
  pp.staging_bytes = params_.staging_bytes;
  pp.max_request_bytes = params_.max_request_bytes;
  return static_cast<uint32_t>(mme::JobPlan(large, pp).super_rows());
}

bool MmeEngine::execute(const mme::MmeJob& job, uint64_t epoch) {
  mme::PlanParams pp;
  pp.geometry = params_.geometries[job.geometry];
  pp.accumulators = params_.accumulators;
  pp.staging_bytes = params_.staging_bytes;
  pp.max_request_bytes = params_.max_request_bytes;
  pp.array_cycles_per_k = job.in == mme::MmeType::F32 ? params_.f32_array_cycles_per_k : 1;
  const mme::JobPlan plan(job, pp);
  const mme::GemmDims d = plan.dims();
  stats_.op = job.op;
  stats_.dims = d;
  stats_.in = job.in;
  stats_.macs = d.m * d.n * d.k * d.batch;
  stats_.array_cycles_per_k = pp.array_cycles_per_k;
  stats_.supertile_rows = static_cast<uint32_t>(plan.super_rows());
  stats_.supertile_cols = static_cast<uint32_t>(plan.super_cols());
  stats_.kc = static_cast<uint32_t>(plan.kc());

  // The values: operand bytes read now (through the engine's port and MMU), computed on a worker
  // while the cycle model below moves the same bytes through the fabric.
  std::vector<mme::OperandSnapshot> operands(d.batch);
  const mme::MemoryReader reader = [this](uint64_t address, size_t bytes, void* dst) {
    return debug_read(address, bytes, dst);
  };
  const auto gather_start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < d.batch; ++i) {
    std::string error;
    if (!mme::snapshot_operands(job, i, reader, operands[i], error)) {
      fault(MmeError::OperandRead, params_.name + ": " + error);
      return false;
    }
  }
  stats_.host_gather_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - gather_start).count();
  Arithmetic arithmetic(job, plan, std::move(operands));

  const uint64_t chunks = plan.chunks();
  chunks_total_ = chunks;
  chunks_done_ = 0;
  uint64_t next_fetch = 0, staged = 0, compute_end = 0;
  std::vector<mme::Run> runs;
  std::vector<mme::JobPlan::Write> writes;

  const auto issue_fetches = [&](uint64_t processed) {
    while (next_fetch < chunks && next_fetch < processed + kChunkSlots) {
      const mme::JobPlan::Chunk c = plan.chunk(next_fetch);
      if (staged > 0 && staged + c.bytes > params_.staging_bytes) break;
      const uint32_t slot = static_cast<uint32_t>(next_fetch % kChunkSlots);
      plan.chunk_reads(c, runs);
      chunk_pending_[slot] = static_cast<uint32_t>(runs.size());
      chunk_arrival_[slot] = cycle_at(now_ps());
      chunk_issue_[slot] = chunk_arrival_[slot];
      for (const mme::Run& run : runs) {
        DmaPort& port = read_port();
        DmaPort::Access& access = port.acquire(false, run.address, run.bytes);
        access.kind = kOperand | port_bits(port);
        access.tag = slot;
        access.tag2 = epoch;
        ++in_flight_;
        ++stats_.reads;
        stats_.read_bytes += run.bytes;
        port.issue(access);
      }
      staged += c.bytes;
      ++next_fetch;
    }
  };
  // The output of super-tile `s` goes to the write-back queue once the previous super-tile's
  // writes have all been sent (the write-back buffer holds one super-tile); the array does not
  // wait for the writes themselves.
  const auto write_supertile = [&](uint64_t s) -> bool {
    while (!write_queue_.empty()) {
      if (!wait_progress()) return false;
    }
    arithmetic.wait_for(s);
    const auto t = plan.supertile(s);
    const float* c = arithmetic.result(t.batch);
    plan.supertile_writes(s, writes);
    for (const mme::JobPlan::Write& w : writes) {
      write_queue_.push_back({w.run.address, w.run.bytes, c + (t.row0 + w.row) * d.n + t.col0 + w.col});
    }
    write_type_ = job.out;
    write_epoch_ = epoch;
    pump_writes();
    return true;
  };

  issue_fetches(0);
  for (uint64_t i = 0; i < chunks; ++i) {
    const uint32_t slot = static_cast<uint32_t>(i % kChunkSlots);
    while (chunk_pending_[slot] > 0) {
      if (!wait_progress()) return false;
    }
    if (access_failed_) break;
    const mme::JobPlan::Chunk c = plan.chunk(i);
    stats_.chunk_fetch_cycles += chunk_arrival_[slot] - chunk_issue_[slot];
    ++stats_.chunks;
    const uint64_t start = std::max(compute_end, chunk_arrival_[slot]);
    stats_.operand_stall_cycles += start - compute_end;
    compute_end = start + c.tile_steps;
    stats_.array_cycles += c.tile_steps;
    sync_to(compute_end);   // the chunk's operands leave the staging buffer
    if (epoch != epoch_) return false;
    staged -= c.release;
    chunks_done_ = i + 1;
    if (c.last_of_supertile) {
      if (i + 1 == chunks) {
        compute_end += plan.fill_cycles() + plan.drain_cycles();
        sync_to(compute_end);
        if (epoch != epoch_) return false;
      }
      if (!write_supertile(c.supertile)) return false;
    }
    issue_fetches(i + 1);
  }
  stats_.array_cycles += plan.fill_cycles() + plan.drain_cycles();
  while (in_flight_ > 0 || !write_queue_.empty()) {
    if (!wait_progress()) return false;
  }
  stats_.cycles = cycle_at(now_ps());
  stats_.host_compute_seconds = arithmetic.seconds();
  if (access_failed_) {
    fault(failed_kind_ == kOperand ? MmeError::OperandRead : MmeError::OutputWrite, params_.name + ": " + access_error_);
    return false;
  }
  return true;
}

uint32_t MmeEngine::port_bits(const DmaPort& port) const {
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (ports_[i].get() == &port) return static_cast<uint32_t>(i) << kPortShift;
  }
  throw std::logic_error("MME engine: a port that is not its own");
}

void MmeEngine::pump_writes() {
  const uint32_t eout = mme::type_bytes(write_type_);
  while (!write_queue_.empty() && writes_in_flight_ < params_.max_posted_writes) {
    const PendingWrite w = write_queue_.front();
    write_queue_.pop_front();
    DmaPort& port = write_port();
    DmaPort::Access& access = port.acquire(true, w.address, w.bytes);
    mme::convert_output(w.values, w.bytes / eout, write_type_, access.buffer.data());
    access.kind = kOutput | port_bits(port);
    access.tag2 = write_epoch_;
    ++in_flight_;
    ++writes_in_flight_;
    ++stats_.writes;
    stats_.write_bytes += w.bytes;
    port.issue(access);
  }
}

void MmeEngine::access_done(DmaPort::Access& access) {
  DmaPort& port = *ports_[access.kind >> kPortShift];
  const uint32_t kind = access.kind & ((1u << kPortShift) - 1);
  if (access.tag2 != epoch_) {
    port.release(access);
    return;
  }
  --in_flight_;
  if (!access.ok() && !access_failed_) {
    access_failed_ = true;
    failed_kind_ = kind;
    access_error_ = std::string(kind == kOperand ? "operand read" : kind == kOutput ? "output write" : "completion message") +
                    " of " + std::to_string(access.get_data_length()) + " bytes at " + hex(access.get_address()) + " failed";
  }
  if (kind == kOperand) {
    const auto slot = static_cast<uint32_t>(access.tag);
    --chunk_pending_[slot];
    chunk_arrival_[slot] = std::max(chunk_arrival_[slot], cycle_at(access.done_ps));
  } else if (kind == kOutput) {
    --writes_in_flight_;
  }
  port.release(access);
  if (kind == kOutput) pump_writes();
  progress_event_.notify(sc_core::SC_ZERO_TIME);
}

void MmeEngine::register_stats(stats::Scope scope) {
  const auto add = [&](const char* name, const char* unit, const char* desc, uint64_t MmeJobTotals::*field) {
    scope.formula(name, unit, desc, [this, field] { return double(totals_.*field); });
  };
  add("jobs", "count", "jobs run", &MmeJobTotals::jobs);
  add("macs", "count", "useful multiply-accumulates", &MmeJobTotals::macs);
  add("array_cycles", "cycles", "cycles the array was busy", &MmeJobTotals::array_cycles);
  add("busy_ps", "ps", "time running jobs", &MmeJobTotals::busy_ps);
  add("read_bytes", "bytes", "operand bytes read", &MmeJobTotals::read_bytes);
  add("write_bytes", "bytes", "output bytes written", &MmeJobTotals::write_bytes);
  add("faults", "count", "jobs that faulted", &MmeJobTotals::faulted);
}

}  // namespace hpusim::hw
