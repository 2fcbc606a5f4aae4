#include "hw/tpc/tpc_core.h"

#include <optional>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "arch/hex.h"
#include "arch/regs/gaudi1_map.h"

namespace hpusim::hw {

namespace tc = regs::tpc_cfg;

namespace {

uint64_t join(uint32_t hi, uint32_t lo) { return (uint64_t{hi} << 32) | lo; }

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Ops that may reach global memory (the core synchronises with SystemC before executing them).
bool may_access_global(const tpc::Bundle& b) {
  const tpc::Op load = b[tpc::Slot::Load].op;
  const tpc::Op store = b[tpc::Slot::Store].op;
  return load == tpc::Op::LdTnsr || load == tpc::Op::LdTnsrS || load == tpc::Op::Prefetch || store == tpc::Op::StTnsr ||
         store == tpc::Op::StTnsrS;
}

// Decodes one descriptor set (kDescSize bytes as words) into a launch context.
tpc::LaunchContext decode_set(const uint32_t* w, std::string* error) {
  tpc::LaunchContext ctx;
  const auto word = [w](uint32_t offset) { return w[offset / 4]; };
  for (unsigned t = 0; t < tc::kNumTensors; ++t) {
    const uint32_t base = t * tc::kTensorStride;
    tpc::TensorDescriptor& d = ctx.tensors[t];
    const uint32_t config = word(base + tc::kTensorConfig);
    const uint32_t mask = (config >> regs::tpc_tensor_config::kValidDimMaskShift) & regs::tpc_tensor_config::kValidDimMaskMask;
    const uint32_t last = (config >> regs::tpc_tensor_config::kLastDimShift) & regs::tpc_tensor_config::kLastDimMask;
    d.base = join(word(base + tc::kTensorBaseAddrHigh), word(base + tc::kTensorBaseAddrLow));
    d.dtype = static_cast<tpc::DType>(config & regs::tpc_tensor_config::kDataTypeMask);
    d.padding = word(base + tc::kTensorPaddingValue);
    for (unsigned k = 0; k < tc::kNumDims; ++k) {
      d.size[k] = word(base + tc::tensor_dim_size(k));
      d.stride[k] = static_cast<int64_t>(word(base + tc::tensor_dim_stride(k)));
    }
    if (mask == 0) {
      d.dims = 0;   // not set by the launch
    } else if (last >= tc::kNumDims) {
      d.dims = 0;
      if (error != nullptr && error->empty()) {
        *error = "tensor " + std::to_string(t) + ": last_dim " + std::to_string(last) + " is beyond dimension 4";
      }
    } else {
      d.dims = static_cast<uint8_t>(last + 1);
    }
  }
  for (unsigned k = 0; k < tc::kNumDims; ++k) {
    ctx.ispace_offset[k] = static_cast<int32_t>(word(tc::desc_tid_base_dim(k)));
    ctx.ispace_size[k] = static_cast<int32_t>(word(tc::desc_tid_size_dim(k)));
  }
  for (unsigned i = 0; i < tc::kNumSrfs; ++i) ctx.srf[i] = word(tc::desc_srf(i));
  return ctx;
}

}  // namespace

TpcCoreParams tpc_core_params_from(const preset::Card& card, unsigned index) {
  const auto& t = card.tpc();
  if (index >= t.count()) {
    throw std::invalid_argument("TPC " + std::to_string(index) + " does not exist on " + card.name());
  }
  TpcCoreParams p;
  p.name = "tpc" + std::to_string(index);
  p.index = index;
  p.exec.vector_bits = t.vector_bits();
  p.exec.slm_bytes = t.slm_bytes();
  p.exec.vlm_bytes = t.vlm_bytes();
  p.cycle_ps = period_ps_from_mhz(card.clocks().tpc_mhz());
  p.spu_latency = t.spu_latency();
  p.vpu_latency = t.vpu_latency();
  p.special_latency = t.special_latency();
  p.local_latency = t.local_latency();
  p.branch_penalty = t.branch_penalty();
  p.icache_bytes = t.icache_bytes();
  p.icache_line_bytes = t.icache_line_bytes();
  p.icache_fill_lines = t.icache_fill_lines();
  p.max_outstanding = t.max_outstanding_loads();
  p.prefetch_entries = t.prefetch_entries();
  p.prefetch_hit_latency = t.prefetch_hit_latency();
  p.prefetch_stale_cycles = t.prefetch_stale_cycles();
  p.launch_queue_depth = t.launch_queue_depth();
  p.max_posted_writes = t.max_posted_writes();
  p.quantum_cycles = t.quantum_cycles();
  p.sm_base_high_reset = static_cast<uint32_t>(regs::cfg_address(0) >> 32);
  return p;
}

// ---------------------------------------------------------------------------------------------
// Global memory as the executor sees it: functional data through the debug transport of the
// core's own port (so through its MMU), captured stores for the timed path.
// ---------------------------------------------------------------------------------------------

class TpcCore::Memory : public tpc::GlobalMemory {
 public:
  explicit Memory(TpcCore& core) : core_(core) {}

  bool access(uint64_t address, uint32_t bytes, void* data, bool is_write) override {
    // A store is checked with a debug read of its span (so a refused store faults precisely,
    // before any register changes) and its data travels in the timed write.
    void* target = data;
    if (is_write) {
      scratch_.resize(bytes);
      target = scratch_.data();
    }
    if (!debug(address, bytes, target)) {
      failed_ = Failed{address, bytes, is_write};
      return false;
    }
    if (is_write) {
      release_store();
      store_ = &core_.bus_.acquire(true, address, bytes);
      std::memcpy(store_->buffer.data(), data, bytes);
    }
    return true;
  }

  // The global access whose functional check failed in the last execute(), if any (taken once).
  struct Failed {
    uint64_t address;
    uint32_t bytes;
    bool is_write;
  };
  std::optional<Failed> take_failed() {
    std::optional<Failed> f = failed_;
    failed_.reset();
    return f;
  }

  DmaPort::Access* take_store() {
    DmaPort::Access* s = store_;
    store_ = nullptr;
    return s;
  }
  void release_store() {
    if (store_ != nullptr) core_.bus_.release(*store_);
    store_ = nullptr;
  }

 private:
  bool debug(uint64_t address, uint32_t bytes, void* data) {
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_address(address);
    t.set_data_ptr(static_cast<unsigned char*>(data));
    t.set_data_length(bytes);
    t.set_streaming_width(bytes);
    t.set_byte_enable_ptr(nullptr);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    return core_.bus_.socket->transport_dbg(t) == bytes;
  }

  TpcCore& core_;
  std::vector<uint8_t> scratch_;
  DmaPort::Access* store_ = nullptr;
  std::optional<Failed> failed_;
};

// ---------------------------------------------------------------------------------------------
// Construction and registers
// ---------------------------------------------------------------------------------------------

TpcCore::TpcCore(const TpcCoreParams& params) : TpcCore(sc_core::sc_module_name(params.name.c_str()), params) {}

TpcCore::TpcCore(sc_core::sc_module_name name, const TpcCoreParams& params)
    : sc_module(name), params_(params), bus_("bus"), prefetch_(params.prefetch_entries, params.prefetch_stale_cycles), regs_(size_bytes() / 4, 0) {
  const std::string who = "TPC core '" + params_.name + "': ";
  if (params_.cycle_ps == 0) throw std::invalid_argument(who + "cycle_ps must be positive");
  if (params_.icache_line_bytes < tpc::kBundleBytes || !is_power_of_two(params_.icache_line_bytes)) {
    throw std::invalid_argument(who + "icache_line_bytes must be a power of two of at least 32");
  }
  if (params_.icache_bytes < params_.icache_line_bytes || params_.icache_bytes % params_.icache_line_bytes != 0) {
    throw std::invalid_argument(who + "icache_bytes must be a positive multiple of icache_line_bytes");
  }
  if (params_.max_outstanding == 0) throw std::invalid_argument(who + "max_outstanding must be at least 1");
  if (params_.quantum_cycles == 0) throw std::invalid_argument(who + "quantum_cycles must be at least 1");
  if (params_.min_access_bytes != 0 && !is_power_of_two(params_.min_access_bytes)) {
    throw std::invalid_argument(who + "min_access_bytes must be 0 or a power of two");
  }
  executor_ = std::make_unique<tpc::TpcExecutor>(params_.exec);   // validates exec
  memory_ = std::make_unique<Memory>(*this);
  executor_->set_global_memory(memory_.get());
  if (params_.icache_fill_lines == 0) throw std::invalid_argument(who + "icache_fill_lines must be at least 1");
  lines_.resize(params_.icache_bytes / params_.icache_line_bytes);
  regs_[tc::kSmBaseAddressHigh / 4] = params_.sm_base_high_reset;
  bus_.set_client(this);
  SC_HAS_PROCESS(TpcCore);
  SC_THREAD(thread);
}

TpcCore::~TpcCore() = default;

bool TpcCore::read_register(uint64_t offset, uint32_t& value, Picoseconds) {
  if (offset >= size_bytes() || offset % 4 != 0) return false;
  switch (offset) {
    case tc::kStatus:
      value = (engine_idle() ? regs::tpc_status::kIdleMask : 0) | (regs_[offset / 4] & regs::tpc_status::kFaulted);
      break;
    case tc::kTpcExecute:
      value = 0;
      break;
    default:
      value = regs_[offset / 4];
  }
  return true;
}

bool TpcCore::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (offset >= size_bytes() || offset % 4 != 0) return false;
  switch (offset) {
    case tc::kStatus:
      return true;   // read-only
    case tc::kTpcIntrCause:
      regs_[offset / 4] &= ~value;   // write 1 to clear
      return true;
    case tc::kTpcCmd:
      regs_[offset / 4] = value;
      if (value & regs::tpc_cmd::kIcacheInvalidate) invalidate_icache();
      if (value & (regs::tpc_cmd::kIcachePrefetch64K | regs::tpc_cmd::kIcachePrefetch32K)) {
        // The next kernel starts with the cache filling from ICACHE_BASE: the window the bit
        // names, at most what the cache holds (a larger window would evict its own start).
        const uint32_t window = (value & regs::tpc_cmd::kIcachePrefetch64K) ? 65536 : 32768;
        icache_prefetch_base_ = join(regs_[tc::kIcacheBaseAddressHigh / 4], regs_[tc::kIcacheBaseAddressLow / 4]);
        icache_prefetch_bytes_ = std::min(window, params_.icache_bytes);
      }
      return true;
    case tc::kTpcExecute: {
      if ((value & 1) == 0) return true;
      if (queue_.size() >= params_.launch_queue_depth) {
        ++refused_;   // the error response makes the writer (a QMAN) report it
        return false;
      }
      // Latch the QM descriptor set into the KERNEL set: later QM writes prepare the next launch.
      Launch launch;
      launch.desc.assign(regs_.begin() + tc::kQmDesc / 4, regs_.begin() + (tc::kQmDesc + tc::kDescSize) / 4);
      std::copy(launch.desc.begin(), launch.desc.end(), regs_.begin() + tc::kKernelDesc / 4);
      launch.at = std::max(at_ps, now_ps());
      launch.sm_base_high = regs_[tc::kSmBaseAddressHigh / 4];
      launch.icache_prefetch_base = icache_prefetch_base_;
      launch.icache_prefetch_bytes = icache_prefetch_bytes_;
      icache_prefetch_bytes_ = 0;
      regs_[tc::kStatus / 4] &= ~regs::tpc_status::kFaulted;
      queue_.push_back(std::move(launch));
      work_event_.notify(sc_core::SC_ZERO_TIME);
      return true;
    }
    default:
      regs_[offset / 4] = value;
      return true;
  }
}

tpc::LaunchContext TpcCore::decode_descriptor(uint32_t set, std::string* error) const {
  if (set + tc::kDescSize > size_bytes() || set % 4 != 0) throw std::out_of_range("descriptor set offset");
  return decode_set(regs_.data() + set / 4, error);
}

void TpcCore::invalidate_icache() {
  for (Line& line : lines_) line.valid = false;
  line_index_.clear();
  lines_coming_.clear();
  last_line_ = nullptr;
  ++icache_generation_;
}

void TpcCore::reset() {
  std::fill(regs_.begin(), regs_.end(), 0u);
  regs_[tc::kSmBaseAddressHigh / 4] = params_.sm_base_high_reset;
  queue_.clear();
  ++epoch_;
  running_ = false;
  in_flight_ = 0;
  stores_in_flight_ = 0;
  fetches_in_flight_ = 0;
  prefetches_in_flight_ = 0;
  prefetch_.clear();
  fetch_done_ = nullptr;
  icache_prefetch_bytes_ = 0;
  memory_->release_store();
  invalidate_icache();
  fault_ = {};
  idle_event_.notify(sc_core::SC_ZERO_TIME);
  progress_event_.notify(sc_core::SC_ZERO_TIME);
}

// ---------------------------------------------------------------------------------------------
// The core
// ---------------------------------------------------------------------------------------------

void TpcCore::widen(uint64_t& address, uint64_t& length) const {
  const uint64_t m = params_.min_access_bytes;
  if (m != 0 && length < m) {
    const uint64_t end = address + length;
    address = address / m * m;
    length = (end + m - 1) / m * m - address;
  }
}

uint32_t TpcCore::latency_of(tpc::LatencyClass c) const {
  switch (c) {
    case tpc::LatencyClass::Spu: return params_.spu_latency;
    case tpc::LatencyClass::Vpu: return params_.vpu_latency;
    case tpc::LatencyClass::Special: return params_.special_latency;
    case tpc::LatencyClass::Local: return params_.local_latency;
    case tpc::LatencyClass::GlobalLoad:
    case tpc::LatencyClass::None: break;
  }
  return 1;
}

void TpcCore::sync_to(uint64_t cycle) {
  const Picoseconds at = at_cycle(cycle);
  if (at > now_ps()) wait(delay_until(at));
}

bool TpcCore::wait_progress() {
  const uint64_t epoch = epoch_;
  wait(progress_event_);
  return epoch == epoch_;
}

TpcCore::Line* TpcCore::find_line(uint64_t tag) {
  if (last_line_ != nullptr && last_line_->tag == tag) return last_line_;   // straight-line code, loops
  auto it = line_index_.find(tag);
  return it == line_index_.end() ? nullptr : &lines_[it->second];
}

TpcCore::Line* TpcCore::fill_line(uint64_t tag, const uint8_t* bytes) {
  // A free line, else the least recently used one.
  unsigned index = 0;
  if (line_index_.size() < lines_.size()) {
    while (lines_[index].valid) ++index;
  } else {
    for (unsigned i = 1; i < lines_.size(); ++i) {
      if (lines_[i].used < lines_[index].used) index = i;
    }
    line_index_.erase(lines_[index].tag);
  }
  const uint64_t line_bytes = params_.icache_line_bytes;
  Line& line = lines_[index];
  line.valid = true;
  line.tag = tag;
  line.used = ++use_counter_;
  line.bytes.assign(bytes, bytes + line_bytes);
  const size_t per_line = line_bytes / tpc::kBundleBytes;
  line.state.assign(per_line, 0);
  line.bundles.resize(per_line);
  line.errors.resize(per_line);
  line_index_[tag] = index;
  return &line;
}

void TpcCore::start_icache_prefetch(uint64_t base, uint32_t bytes) {
  const uint64_t line_bytes = params_.icache_line_bytes;
  const uint64_t first = base / line_bytes, end = (base + bytes + line_bytes - 1) / line_bytes;
  for (uint64_t tag = first; tag < end;) {
    const uint64_t to_page_end = (kFillPageBytes - (tag * line_bytes) % kFillPageBytes) / line_bytes;
    const uint64_t lines = std::min<uint64_t>({params_.icache_fill_lines, to_page_end, end - tag});
    bool wanted = false;
    for (uint64_t i = 0; i < lines; ++i) {
      // Lines the cache holds become the most recent, so the fills replace lines outside the window.
      if (Line* held = find_line(tag + i)) held->used = ++use_counter_;
      else wanted = wanted || lines_coming_.count(tag + i) == 0;
    }
    if (wanted) {
      DmaPort::Access& access = bus_.acquire(false, tag * line_bytes, static_cast<uint32_t>(lines * line_bytes));
      access.kind = kIcacheFill;
      access.tag = icache_generation_;
      access.tag2 = epoch_;
      for (uint64_t i = 0; i < lines; ++i) lines_coming_.emplace(tag + i, icache_generation_);
      bus_.issue(access);
    }
    tag += lines;
  }
}

const tpc::Bundle* TpcCore::fetch(uint64_t address, uint64_t& cycle, std::string& error, bool& fetch_failed,
                                  bool& checked) {
  const uint64_t line_bytes = params_.icache_line_bytes;
  const uint64_t tag = address / line_bytes;
  Line* line = find_line(tag);
  if (line == nullptr && lines_coming_.count(tag) != 0) {
    // An ICACHE_PREFETCH read brings it: wait for that (if it fails, the miss below reads it).
    sync_to(cycle);
    while (lines_coming_.count(tag) != 0) {
      if (!wait_progress()) return nullptr;
    }
    line = find_line(tag);
    const uint64_t arrived = std::max(cycle, cycle_at(now_ps()));
    stats_.fetch_stall_cycles += arrived - cycle;
    cycle = arrived;
  }
  if (line == nullptr) {
    ++stats_.icache_misses;
    sync_to(cycle);
    // One read brings the missed line and up to icache_fill_lines - 1 lines after it (not past
    // its 4 KB page, so a prefetch never reaches a page the kernel does not own). If that read
    // fails, the missed line alone is read again: only its own failure is a fetch fault.
    const uint64_t to_page_end = (kFillPageBytes - (tag * line_bytes) % kFillPageBytes) / line_bytes;
    uint64_t lines = std::min<uint64_t>({params_.icache_fill_lines, to_page_end, lines_.size()});
    DmaPort::Access* done = nullptr;
    while (done == nullptr) {
      const uint64_t epoch = epoch_;
      DmaPort::Access& access = bus_.acquire(false, tag * line_bytes, static_cast<uint32_t>(lines * line_bytes));
      access.kind = kFetch;
      access.tag2 = epoch;
      fetch_done_ = nullptr;
      ++fetches_in_flight_;
      bus_.issue(access);
      while (fetch_done_ == nullptr) {
        if (!wait_progress()) return nullptr;
      }
      done = fetch_done_;
      fetch_done_ = nullptr;
      if (!done->ok() && lines > 1) {
        bus_.release(*done);
        done = nullptr;
        lines = 1;
      }
    }
    const uint64_t arrived = std::max(cycle, cycle_at(now_ps()));
    stats_.fetch_stall_cycles += arrived - cycle;
    cycle = arrived;
    if (!done->ok()) {
      fetch_failed = true;
      error = "instruction fetch of " + std::to_string(line_bytes) + " bytes at " + hex(tag * line_bytes) + " failed";
      bus_.release(*done);
      return nullptr;
    }
    // The prefetched lines first, the missed one last (so it is the most recently used).
    for (uint64_t i = lines; i-- > 0;) {
      if (i > 0 && find_line(tag + i) != nullptr) continue;
      line = fill_line(tag + i, done->buffer.data() + i * line_bytes);
    }
    bus_.release(*done);
  }
  last_line_ = line;
  line->used = ++use_counter_;
  const size_t slot = (address % line_bytes) / tpc::kBundleBytes;
  if (line->state[slot] == kUndecoded) {
    std::string why;
    auto bundle = tpc::decode(line->bytes.data() + slot * tpc::kBundleBytes, &why);
    if (bundle) {
      line->bundles[slot] = *bundle;
      line->state[slot] = tpc::TpcExecutor::bundle_well_formed(*bundle) ? kChecked : kDecoded;
    } else {
      line->errors[slot] = why;
      line->state[slot] = kBad;
    }
  }
  if (line->state[slot] == kBad) {
    error = "bundle at " + hex(address) + " does not decode: " + line->errors[slot];
    return nullptr;
  }
  checked = line->state[slot] == kChecked;
  return &line->bundles[slot];
}

void TpcCore::thread() {
  for (;;) {
    while (queue_.empty()) wait(work_event_);
    Launch launch = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    const uint64_t epoch = epoch_;
    if (launch.at > now_ps()) wait(delay_until(launch.at));
    if (epoch != epoch_) continue;
    run_kernel(launch, epoch);
    if (epoch != epoch_) continue;   // abandoned by reset()
    running_ = false;
    if (queue_.empty()) idle_event_.notify(sc_core::SC_ZERO_TIME);
  }
}

void TpcCore::run_kernel(const Launch& launch, uint64_t epoch) {
  stats_ = TpcKernelStats{};
  stats_.kernel = next_kernel_++;
  start_ps_ = now_ps();
  stats_.start_ps = start_ps_;
  ready_.fill(0);
  in_flight_ = 0;
  stores_in_flight_ = 0;
  prefetches_in_flight_ = 0;
  prefetch_.clear();
  late_error_ = false;
  late_message_.clear();

  const uint32_t* w = launch.desc.data();
  std::string setup_error;
  const tpc::LaunchContext ctx = decode_set(w, &setup_error);
  const uint64_t kernel_base =
      join(w[tc::kDescKernelBaseAddressHigh / 4], w[tc::kDescKernelBaseAddressLow / 4]);
  stats_.kernel_address = kernel_base;
  const uint32_t so_message = w[tc::kDescSyncObjectMessage / 4];
  const uint64_t so_address = join(launch.sm_base_high, w[tc::kDescSyncObjectAddr / 4]);
  if (setup_error.empty() && kernel_base % tpc::kBundleBytes != 0) {
    setup_error = "kernel base address " + hex(kernel_base) + " is not aligned to a bundle (32 bytes)";
  }

  if (launch.icache_prefetch_bytes > 0) start_icache_prefetch(launch.icache_prefetch_base, launch.icache_prefetch_bytes);
  tpc::TpcCoreState& st = executor_->state();
  executor_->launch(ctx);
  uint64_t cyc = 0;
  if (!setup_error.empty()) executor_->raise_fault(tpc::FaultKind::FetchError, setup_error);

  const Picoseconds quantum_ps = Picoseconds{params_.quantum_cycles} * params_.cycle_ps;
  tpc::ExecInfo info;
  std::string fetch_error;
  while (st.status == tpc::CoreStatus::Running) {
    if (at_cycle(cyc) > now_ps() + quantum_ps) {
      sync_to(cyc);
      if (epoch != epoch_) return;
    }
    bool fetch_failed = false;
    bool checked = false;
    const tpc::Bundle* bundle =
        fetch(kernel_base + uint64_t{st.pc} * tpc::kBundleBytes, cyc, fetch_error, fetch_failed, checked);
    if (epoch != epoch_) return;
    if (bundle == nullptr) {
      executor_->raise_fault(fetch_failed ? tpc::FaultKind::FetchError : tpc::FaultKind::IllegalInstruction,
                             fetch_error);
      break;
    }
    const bool global = may_access_global(*bundle);
    if (global) {
      // A full window stalls the bundle; then SystemC catches up with the core so the functional
      // data is read, and the timed request enters the fabric, at this bundle's time.
      bool waited = false;
      while (in_flight_ - stores_in_flight_ - prefetches_in_flight_ >= params_.max_outstanding ||
             stores_in_flight_ >= params_.max_posted_writes) {
        waited = true;
        if (!wait_progress()) return;
      }
      const uint64_t now_cycle = cycle_at(now_ps());
      if (waited && now_cycle > cyc) {
        stats_.window_stall_cycles += now_cycle - cyc;
        stats_.stall_cycles += now_cycle - cyc;
      }
      cyc = std::max(cyc, now_cycle);
      sync_to(cyc);
    }
    if (checked) executor_->execute_checked(*bundle, info);
    else executor_->execute(*bundle, info);
    if (info.faulted) {
      memory_->release_store();
      if (auto failed = memory_->take_failed()) {
        // The bad access still goes out, so the MMU reports a page fault (or the fabric a RAZWI)
        // naming this TPC, as for any engine; the kernel waits for its answer before it ends.
        DmaPort::Access& probe = bus_.acquire(failed->is_write, failed->address, failed->bytes);
        if (failed->is_write) std::fill(probe.buffer.begin(), probe.buffer.end(), 0);
        probe.kind = kProbe;
        probe.tag2 = epoch;
        ++in_flight_;
        bus_.issue(probe);
      }
      break;
    }
    ++stats_.bundles;

    // Scoreboard: every register read or written must be ready.
    uint64_t issue = cyc;
    for (unsigned s = 0; s < tpc::kSlots; ++s) {
      const tpc::SlotExec& slot = info.slot[s];
      for (unsigned r = 0; r <= slot.num_reads; ++r) {
        const tpc::RegRef& ref = r < slot.num_reads ? slot.reads[r] : slot.write;
        if (ref.file == tpc::RegFile::None) continue;
        const unsigned idx = reg_slot(ref);
        while (ready_[idx] == kPending) {
          if (!wait_progress()) return;
        }
        issue = std::max(issue, ready_[idx]);
      }
    }
    stats_.stall_cycles += issue - cyc;

    prefetch_ready_.fill(kPending);
    if (info.num_global > 0) {
      sync_to(issue);
      for (unsigned g = 0; g < info.num_global; ++g) {
        const tpc::GlobalAccess& ga = info.global[g];
        DmaPort::Access* access;
        if (ga.prefetch) {
          uint64_t address = ga.address;
          uint64_t length = ga.bytes;
          widen(address, length);
          if (prefetch_.covers(address, static_cast<uint32_t>(length))) continue;
          const std::optional<uint32_t> entry = prefetch_.allocate(address, static_cast<uint32_t>(length), issue);
          if (!entry) continue;
          access = &bus_.acquire(false, address, static_cast<uint32_t>(length));
          access->kind = kPrefetch;
          access->tag = *entry;
          ++prefetches_in_flight_;
          ++stats_.prefetches;
        } else if (ga.is_write) {
          access = memory_->take_store();
          if (access == nullptr) continue;
          prefetch_.invalidate(ga.address, ga.bytes);
          access->kind = kStore;
          ++stores_in_flight_;
          ++stats_.stores;
          stats_.store_bytes += ga.bytes;
        } else {
          uint64_t address = ga.address;
          uint64_t length = ga.bytes;
          widen(address, length);
          ++stats_.loads;
          stats_.load_bytes += ga.bytes;
          const unsigned dst = reg_slot(ga.dst);
          uint64_t arrival = 0;
          const auto taken = prefetch_.capacity() == 0
                                 ? TpcPrefetchBuffer::Take::Miss
                                 : prefetch_.take(address, static_cast<uint32_t>(length), static_cast<int>(dst), arrival);
          if (taken != TpcPrefetchBuffer::Take::Miss) {
            ++stats_.prefetch_hits;
            prefetch_ready_[g] = taken == TpcPrefetchBuffer::Take::Arrived
                                     ? std::max(arrival, issue) + params_.prefetch_hit_latency
                                     : kPending;
            continue;
          }
          access = &bus_.acquire(false, address, static_cast<uint32_t>(length));
          access->kind = kLoad;
          access->tag = dst;
        }
        access->tag2 = epoch;
        ++in_flight_;
        bus_.issue(*access);
      }
    }
    memory_->release_store();

    // Results: ready after the class latency; a global load's register when its response arrives.
    for (unsigned s = 0; s < tpc::kSlots; ++s) {
      const tpc::SlotExec& slot = info.slot[s];
      if (slot.write.file == tpc::RegFile::None) continue;
      ready_[reg_slot(slot.write)] =
          slot.latency == tpc::LatencyClass::GlobalLoad ? kPending : issue + latency_of(slot.latency);
    }
    for (unsigned g = 0; g < info.num_global; ++g) {
      const tpc::GlobalAccess& ga = info.global[g];
      if (!ga.is_write && !ga.prefetch) ready_[reg_slot(ga.dst)] = prefetch_ready_[g];
    }
    cyc = issue + 1 + (info.branch_taken ? params_.branch_penalty : 0);
  }

  // The kernel ends when every access it issued has been answered.
  while (in_flight_ > 0) {
    if (!wait_progress()) return;
  }
  stats_.cycles = cyc;
  sync_to(cyc);
  if (epoch != epoch_) return;
  // A timed access that failed after its functional check passed (late_error_) is a fault too.
  bool faulted = st.status == tpc::CoreStatus::Faulted || late_error_;
  if (!faulted && so_address != join(launch.sm_base_high, 0)) {
    DmaPort::Access& access = bus_.acquire(true, so_address, 4);
    std::memcpy(access.buffer.data(), &so_message, 4);
    access.kind = kMessage;
    access.tag2 = epoch;
    ++in_flight_;
    bus_.issue(access);
    while (in_flight_ > 0) {
      if (!wait_progress()) return;
    }
    if (late_error_) {
      faulted = true;
    } else {
      stats_.message_sent = true;
    }
  }
  if (faulted) {
    stats_.faulted = true;
    ++faults_;
    fault_.kernel = stats_.kernel;
    fault_.at = now_ps();
    if (st.status == tpc::CoreStatus::Faulted) {
      fault_.kind = st.fault.kind;
      fault_.pc = st.fault.pc;
      fault_.message = st.fault.message;
    } else {
      fault_.kind = tpc::FaultKind::GlobalAccess;
      fault_.pc = st.pc;
      fault_.message = late_message_;
    }
    regs_[tc::kStatus / 4] |= regs::tpc_status::kFaulted;
    regs_[tc::kTpcIntrCause / 4] |= 1u << static_cast<unsigned>(fault_.kind);
    interrupt_.raise(now_ps());
  }
  stats_.end_ps = now_ps();
  stats_.prefetch_dropped = prefetch_.dropped();
  stats_.prefetch_evicted = prefetch_.evicted();
  ++totals_.kernels;
  totals_.bundles += stats_.bundles;
  totals_.cycles += stats_.cycles;
  totals_.busy_ps += stats_.end_ps - stats_.start_ps;
  totals_.load_bytes += stats_.load_bytes;
  totals_.store_bytes += stats_.store_bytes;
  totals_.faulted += stats_.faulted ? 1 : 0;
  kernels_.push_back(stats_);
  if (kernels_.size() > kKernelHistory) kernels_.pop_front();
  if (observer_ != nullptr) observer_->kernel_finished(params_.name, stats_);
}

const TpcKernelStats* TpcCore::kernel(uint64_t number) const {
  // Numbers grow, with gaps where a reset cut a run short.
  const auto it = std::lower_bound(kernels_.begin(), kernels_.end(), number,
                                   [](const TpcKernelStats& s, uint64_t n) { return s.kernel < n; });
  return it != kernels_.end() && it->kernel == number ? &*it : nullptr;
}

void TpcCore::access_done(DmaPort::Access& access) {
  if (access.tag2 != epoch_) {
    bus_.release(access);   // a request of a kernel reset() abandoned
    return;
  }
  const std::string what = access.is_write() ? "write" : "read";
  switch (access.kind) {
    case kFetch:
      --fetches_in_flight_;
      fetch_done_ = &access;   // the thread takes it
      break;
    case kIcacheFill: {
      // Lines for the cache unless it was invalidated since; a failed read fills nothing (the
      // fetch that needs a line then reads it itself, and faults then).
      const uint64_t line_bytes = params_.icache_line_bytes;
      const uint64_t first = access.get_address() / line_bytes, lines = access.get_data_length() / line_bytes;
      for (uint64_t i = 0; i < lines; ++i) {
        const auto coming = lines_coming_.find(first + i);
        if (coming == lines_coming_.end() || coming->second != access.tag) continue;
        lines_coming_.erase(coming);
        if (access.ok() && access.tag == icache_generation_ && find_line(first + i) == nullptr)
          fill_line(first + i, access.buffer.data() + i * line_bytes);
      }
      bus_.release(access);
      break;
    }
    case kLoad:
    case kStore:
    case kMessage:
    case kPrefetch:
      --in_flight_;
      if (access.kind == kStore) --stores_in_flight_;
      if (access.kind == kLoad) ready_[access.tag] = cycle_at(access.done_ps);
      if (access.kind == kPrefetch) {
        // A hint: a failed prefetch is not the kernel's error (the load that needs the data
        // reads it itself, and faults then).
        --prefetches_in_flight_;
        const uint64_t arrival = cycle_at(access.done_ps);
        const int waiter = prefetch_.arrived(access.tag, arrival);
        if (waiter != TpcPrefetchBuffer::kNoWaiter) ready_[waiter] = arrival + params_.prefetch_hit_latency;
        bus_.release(access);
        break;
      }
      if (!access.ok() && !late_error_) {
        late_error_ = true;
        late_message_ = (access.kind == kMessage ? "completion message " : "global ") + what + " of " +
                        std::to_string(access.get_data_length()) + " bytes at " + hex(access.get_address()) +
                        " failed";
      }
      bus_.release(access);
      break;
    case kProbe:
      --in_flight_;   // its failure is the fault the kernel already has
      bus_.release(access);
      break;
    default:
      bus_.release(access);
  }
  progress_event_.notify(sc_core::SC_ZERO_TIME);
}

void TpcCore::register_stats(stats::Scope scope) {
  const auto add = [&](const char* name, const char* unit, const char* desc, uint64_t TpcKernelTotals::*field) {
    scope.formula(name, unit, desc, [this, field] { return double(totals_.*field); });
  };
  add("kernels", "count", "kernels run", &TpcKernelTotals::kernels);
  add("bundles", "count", "bundles executed", &TpcKernelTotals::bundles);
  add("cycles", "cycles", "cycles running kernels", &TpcKernelTotals::cycles);
  add("busy_ps", "ps", "time running kernels", &TpcKernelTotals::busy_ps);
  add("load_bytes", "bytes", "global bytes loaded", &TpcKernelTotals::load_bytes);
  add("store_bytes", "bytes", "global bytes stored", &TpcKernelTotals::store_bytes);
  add("faults", "count", "kernels that faulted", &TpcKernelTotals::faulted);
}

}  // namespace hpusim::hw
