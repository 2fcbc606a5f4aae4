#include "hw/dma/dma_core.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "arch/hex.h"
#include "arch/regs/gaudi1_map.h"

namespace hpusim::hw {

namespace dc = regs::dma_core;

namespace {

// Protection bits of the block's page (the driver's PB registers), kept as plain storage.
constexpr uint32_t kProtectionFirst = 0xF80;

uint64_t join(uint32_t hi, uint32_t lo) { return (uint64_t{hi} << 32) | lo; }

}  // namespace

DmaCoreConfig dma_core_config_from(const preset::Card& card, uint32_t channel) {
  const uint32_t channels = card.dma().pci_channels() + card.dma().internal_channels();
  if (channel >= channels) {
    throw std::invalid_argument("DMA channel " + std::to_string(channel) + " does not exist on " + card.name());
  }
  DmaCoreConfig c;
  c.name = "dma" + std::to_string(channel);
  c.channel = channel;
  c.external = channel < card.dma().pci_channels();
  c.cycle_ps = period_ps_from_mhz(card.clocks().dma_mhz());
  const auto& d = card.dma();
  c.max_burst_bytes = d.max_burst_bytes();
  c.outstanding = c.external ? d.pci_outstanding() : d.outstanding();
  c.posted_writes = c.external ? d.pci_outstanding() : d.posted_writes();
  c.setup_cycles = d.setup_cycles();
  c.queue_depth = d.queue_depth();
  return c;
}

// ---------------------------------------------------------------------------------------------
// Construction and registers
// ---------------------------------------------------------------------------------------------

DmaCore::DmaCore(const DmaCoreConfig& config) : DmaCore(sc_core::sc_module_name(config.name.c_str()), config) {}

DmaCore::DmaCore(sc_core::sc_module_name name, const DmaCoreConfig& config)
    : sc_module(name), config_(config), bus_("bus"), regs_(size_bytes() / 4, 0) {
  const std::string who = "DMA core '" + config_.name + "': ";
  if (config_.name.empty()) throw std::invalid_argument("DMA core needs a name");
  if (config_.max_burst_bytes == 0 || (config_.max_burst_bytes & (config_.max_burst_bytes - 1)) != 0 ||
      config_.max_burst_bytes > (1u << 20)) {
    throw std::invalid_argument(who + "max_burst_bytes must be a power of two in [1, 1 MiB]");
  }
  if (config_.outstanding == 0) throw std::invalid_argument(who + "outstanding must be at least 1");
  if (config_.posted_writes == 0) throw std::invalid_argument(who + "posted_writes must be at least 1");
  if (config_.cycle_ps == 0) throw std::invalid_argument(who + "cycle_ps must be positive");
  if (config_.queue_depth == 0) throw std::invalid_argument(who + "queue_depth must be at least 1");
  bus_.set_client(this);
  SC_HAS_PROCESS(DmaCore);
  SC_METHOD(apply_due);
  sensitive << pending_.event();
  dont_initialize();
  SC_THREAD(engine);
}

bool DmaCore::known_register(uint32_t offset) {
  if (offset % 4 != 0 || offset >= size_bytes()) return false;
  if (offset >= kProtectionFirst) return true;
  switch (offset) {
    case dc::kCfg0: case dc::kCfg1: case dc::kLbwMaxOutstand:
    case dc::kSrcBaseLo: case dc::kSrcBaseHi: case dc::kDstBaseLo: case dc::kDstBaseHi:
    case dc::kSrcTsize0: case dc::kDstTsize0: case dc::kCommit:
    case dc::kWrCompWdata: case dc::kWrCompAddrLo: case dc::kWrCompAddrHi: case dc::kWrCompAwuser:
    case dc::kTeNumrows: case dc::kProt: case dc::kSecureProps: case dc::kNonSecureProps:
    case dc::kRdMaxOutstand: case dc::kRdMaxSize: case dc::kRdArcache: case dc::kRdAruser: case dc::kRdInflights:
    case dc::kWrMaxOutstand: case dc::kWrMaxAwid: case dc::kWrAwcache: case dc::kWrAwuser: case dc::kWrInflights:
    case dc::kRdRateLimCfg0: case dc::kRdRateLimCfg1: case dc::kWrRateLimCfg0: case dc::kWrRateLimCfg1:
    case dc::kErrCfg: case dc::kErrCause: case dc::kErrmsgAddrLo: case dc::kErrmsgAddrHi: case dc::kErrmsgWdata:
    case dc::kSts0: case dc::kSts1: case dc::kReduceCfg:
      return true;
  }
  for (unsigned d = 1; d < dc::kNumDims; ++d) {
    if (offset == dc::src_tsize(d) || offset == dc::src_stride(d) || offset == dc::dst_tsize(d) ||
        offset == dc::dst_stride(d)) {
      return true;
    }
  }
  return false;
}

bool DmaCore::read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) {
  if (offset >= size_bytes() || !known_register(static_cast<uint32_t>(offset))) return false;
  apply_until(at_ps);
  switch (offset) {
    case dc::kSts0: value = status0(); break;
    case dc::kSts1: value = (!can_start() && !running_) ? dc::kSts1IsHalt : 0; break;
    case dc::kRdInflights: value = reads_in_flight_; break;
    case dc::kWrInflights: value = writes_in_flight_; break;
    default: value = regs_[offset / 4];
  }
  return true;
}

bool DmaCore::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (offset >= size_bytes() || !known_register(static_cast<uint32_t>(offset))) return false;
  pending_.submit(static_cast<uint32_t>(offset), value, std::max(at_ps, now_ps()));
  return true;
}

void DmaCore::apply_due() { pending_.on_event(); }

void DmaCore::apply(uint32_t offset, uint32_t value, Picoseconds at) {
  switch (offset) {
    case dc::kSts0: case dc::kSts1: case dc::kRdInflights: case dc::kWrInflights:
      return;   // read-only: writes are ignored
    case dc::kErrCause:
      regs_[offset / 4] &= ~value;   // write 1 to clear
      return;
    case dc::kCommit:
      regs_[offset / 4] = value;
      commit(value, at);
      return;
    case dc::kCfg1:
      // HALT stops the engine from starting transfers while it is set; FLUSH (acted on at each
      // write that has it) drops the queued transfers and clears a STOP_ON_ERR halt.
      regs_[offset / 4] = value;
      if (value & dc::kCfg1Flush) flush();
      if (can_start()) work_event_.notify(sc_core::SC_ZERO_TIME);
      notify_if_engine_idle();
      return;
    default:
      regs_[offset / 4] = value;
  }
}

void DmaCore::commit(uint32_t value, Picoseconds at) {
  ++stats_.commits;
  if ((regs_[dc::kCfg0 / 4] & dc::kCfg0En) == 0) {
    ++stats_.ignored_commits;
    if (observer_ != nullptr) observer_->commit_ignored(config_.channel, value, at);
    return;
  }
  DmaTransfer t;
  t.commit = value;
  t.memset = (value & dc::kCommitMemSet) != 0;
  t.linear = (value & dc::kCommitLin) != 0;
  t.reduce_cfg = regs_[dc::kReduceCfg / 4];
  t.reduce = (t.reduce_cfg & dc::kReduceEn) != 0;
  t.reduce_op = static_cast<reduction::ReduceOp>((t.reduce_cfg & dc::kReduceOpMask) >> dc::kReduceOpShift);
  t.reduce_type = static_cast<reduction::ReduceType>((t.reduce_cfg & dc::kReduceTypeMask) >> dc::kReduceTypeShift);
  const auto reg = [this](uint32_t offset) { return regs_[offset / 4]; };
  t.source = join(reg(dc::kSrcBaseHi), reg(dc::kSrcBaseLo));
  t.destination = join(reg(dc::kDstBaseHi) & dc::kDstBaseHiValMask, reg(dc::kDstBaseLo));
  t.write_completion = (value & dc::kCommitWrCompEn) != 0;
  t.completion_address = join(reg(dc::kWrCompAddrHi), reg(dc::kWrCompAddrLo));
  t.completion_data = reg(dc::kWrCompWdata);
  for (unsigned d = 0; d < dc::kNumDims; ++d) {
    t.src_size[d] = reg(dc::src_tsize(d));
    t.dst_size[d] = reg(dc::dst_tsize(d));
    if (d > 0) {
      t.src_stride[d] = reg(dc::src_stride(d));
      t.dst_stride[d] = reg(dc::dst_stride(d));
    }
  }
  if (t.linear) {
    t.bytes = t.dst_size[0];
  } else {
    uint64_t total = t.dst_size[0];
    for (unsigned d = 1; d < dc::kNumDims && total != 0; ++d) {
      const uint64_t n = std::max<uint32_t>(t.dst_size[d], 1);
      total = total > (uint64_t{1} << 48) / n ? (uint64_t{1} << 48) + 1 : total * n;
    }
    t.bytes = total;
  }
  t.committed_ps = at;
  if (queue_.size() >= config_.queue_depth) {
    ++stats_.overflows;
    ++stats_.errors;
    regs_[dc::kErrCause / 4] |= dc::kErrCauseDescOvf;
    const std::string message = "COMMIT dropped: " + std::to_string(config_.queue_depth) + " transfers already queued";
    if (observer_ != nullptr) observer_->transfer_failed(config_.channel, t.destination, message, at);
    send_error_message();
    halt_on_error(at);
    return;
  }
  t.id = next_id_++;
  if (!busy_flag_) {
    busy_flag_ = true;
    busy_since_ = at;
  }
  queue_.push_back(t);
  work_event_.notify(sc_core::SC_ZERO_TIME);
}

bool DmaCore::can_start() const {
  return !error_halted_ && (regs_[dc::kCfg1 / 4] & dc::kCfg1Halt) == 0;
}

void DmaCore::halt_on_error(Picoseconds at) {
  if ((regs_[dc::kErrCfg / 4] & dc::kErrCfgStopOnErr) == 0 || error_halted_) return;
  error_halted_ = true;
  ++stats_.halts;
  if (observer_ != nullptr) observer_->halted(config_.channel, at);
}

void DmaCore::flush() {
  stats_.aborted_transfers += queue_.size();
  queue_.clear();
  error_halted_ = false;
  go_idle_if_done();
}

void DmaCore::notify_if_engine_idle() {
  if (!running_ && queue_.empty() && can_start()) engine_idle_event_.notify(sc_core::SC_ZERO_TIME);
}

bool DmaCore::halted() {
  apply_until(now_ps());
  return !can_start();
}

bool DmaCore::engine_idle() const {
  // Register writes that took effect by now (a COMMIT the asking CP has just written) count: apply
  // them first. This changes no state a reader at this time could see differently.
  const_cast<DmaCore*>(this)->apply_until(now_ps());
  return !running_ && queue_.empty() && can_start();
}

uint32_t DmaCore::status0() const {
  uint32_t v = std::min<uint32_t>(reads_in_flight_, dc::kSts0RdReqCntMask) |
               (std::min<uint32_t>(writes_in_flight_, dc::kSts0RdReqCntMask) << dc::kSts0WrReqCntShift);
  if (running_ || !queue_.empty()) v |= dc::kSts0Busy;
  return v;
}

bool DmaCore::busy() {
  apply_until(now_ps());
  return running_ || !queue_.empty();
}

uint32_t DmaCore::queued() {
  apply_until(now_ps());
  return static_cast<uint32_t>(queue_.size());
}

uint32_t DmaCore::non_secure_props() const { return regs_[regs::dma_core::kNonSecureProps / 4]; }

uint32_t DmaCore::err_cause() {
  apply_until(now_ps());
  return regs_[dc::kErrCause / 4];
}

DmaCoreStats DmaCore::stats() const {
  DmaCoreStats s = stats_;
  const Picoseconds now = now_ps();
  if (busy_flag_ && now > busy_since_) s.busy_ps += now - busy_since_;
  return s;
}

void DmaCore::go_idle_if_done() {
  if (running_ || !queue_.empty() || !busy_flag_) return;
  const Picoseconds now = now_ps();
  if (now > busy_since_) stats_.busy_ps += now - busy_since_;
  busy_flag_ = false;
  idle_event_.notify(sc_core::SC_ZERO_TIME);
}

void DmaCore::reset() {
  // Writes that took effect before now are applied first; later ones still apply afterwards.
  apply_until(now_ps());
  std::fill(regs_.begin(), regs_.end(), 0u);
  stats_.aborted_transfers += queue_.size() + (running_ ? 1 : 0);
  queue_.clear();
  running_ = false;
  ++epoch_;
  reads_in_flight_ = 0;
  writes_in_flight_ = 0;
  for (DmaPort::Access* access : parked_) bus_.release(*access);
  parked_.clear();
  for (DmaPort::Access* access : reduce_arrived_) bus_.release(*access);
  reduce_arrived_.clear();
  error_halted_ = false;
  go_idle_if_done();
  notify_if_engine_idle();
  reset_event_.notify(sc_core::SC_ZERO_TIME);
  progress_event_.notify(sc_core::SC_ZERO_TIME);
}

// ---------------------------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------------------------

void DmaCore::Cursor::advance(uint64_t bytes) {
  index[0] += bytes;
  if (index[0] < size[0]) return;
  index[0] = 0;
  for (unsigned d = 1; d < 5; ++d) {
    ++index[d];
    offset += stride[d];
    if (index[d] < size[d]) return;
    offset -= stride[d] * size[d];
    index[d] = 0;
  }
}

bool DmaCore::validate(const DmaTransfer& t, std::string& message) const {
  if (t.commit & (dc::kCommitTranspose | dc::kCommitCompress | dc::kCommitDecompress)) {
    message = "COMMIT " + hex(t.commit) + " asks for transpose or (de)compression, which is not modelled";
    return false;
  }
  if (t.bytes > (uint64_t{1} << 48)) {
    message = "strided transfer larger than 2^48 bytes";
    return false;
  }
  if (t.reduce) {
    const uint32_t op = (t.reduce_cfg & dc::kReduceOpMask) >> dc::kReduceOpShift;
    const uint32_t type = (t.reduce_cfg & dc::kReduceTypeMask) >> dc::kReduceTypeShift;
    if (t.memset || !reduction::valid_op(op) || !reduction::valid_type(type)) {
      message = "REDUCE_CFG " + hex(t.reduce_cfg) + (t.memset ? " with a memset" : " names no reduction (op 0..2, type 0..1)");
      return false;
    }
    // Whole elements only: every row and stride, both bases.
    const uint64_t e = reduction::element_bytes(t.reduce_type);
    bool whole = t.source % e == 0 && t.destination % e == 0 && t.bytes % e == 0;
    if (!t.linear) {
      whole = whole && t.src_size[0] % e == 0 && t.dst_size[0] % e == 0;
      for (unsigned d = 1; d < dc::kNumDims; ++d) whole = whole && t.src_stride[d] % e == 0 && t.dst_stride[d] % e == 0;
    }
    if (!whole) {
      message = std::string("a ") + reduction::name(t.reduce_type) + " reduction needs addresses, sizes and strides in whole " +
                std::to_string(e) + "-byte elements";
      return false;
    }
  }
  if (!t.linear && !t.memset) {
    uint64_t total = t.src_size[0];
    for (unsigned d = 1; d < dc::kNumDims && total != 0; ++d) {
      const uint64_t n = std::max<uint32_t>(t.src_size[d], 1);
      total = total > (uint64_t{1} << 48) / n ? (uint64_t{1} << 48) + 1 : total * n;
    }
    if (total != t.bytes) {
      message = "strided source box holds " + std::to_string(total) + " bytes, destination box " +
                std::to_string(t.bytes);
      return false;
    }
  }
  return true;
}

void DmaCore::note_failure(uint32_t cause, uint64_t address, const std::string& message) {
  regs_[dc::kErrCause / 4] |= cause;
  if (failed_) return;
  failed_ = true;
  fail_address_ = address;
  fail_message_ = message;
}

void DmaCore::send_error_message() {
  if ((regs_[dc::kErrCfg / 4] & dc::kErrCfgErrMsgEn) == 0) return;
  const uint64_t address = join(regs_[dc::kErrmsgAddrHi / 4], regs_[dc::kErrmsgAddrLo / 4]);
  DmaPort::Access& access = bus_.acquire(true, address, 4);
  const uint32_t data = regs_[dc::kErrmsgWdata / 4];
  std::memcpy(access.buffer.data(), &data, 4);
  access.kind = kErrorMessage;
  access.tag2 = epoch_;
  ++stats_.error_messages;
  bus_.issue(access);
}

bool DmaCore::wait_or_reset(uint64_t epoch, const sc_core::sc_time& delay) {
  if (delay != sc_core::SC_ZERO_TIME) wait(delay, reset_event_);
  return epoch == epoch_;
}

bool DmaCore::wait_progress(uint64_t epoch) {
  wait(progress_event_);
  return epoch == epoch_;
}

void DmaCore::engine() {
  for (;;) {
    // A halted engine keeps its queue; a reset, FLUSH or clearing CFG_1.HALT notifies work_event_.
    while (queue_.empty() || !can_start()) wait(work_event_);
    DmaTransfer t = queue_.front();
    queue_.pop_front();
    running_ = true;
    const uint64_t epoch = epoch_;
    started_event_.notify(sc_core::SC_ZERO_TIME);
    // A COMMIT applied early (by a read that looked ahead) still starts at its own time.
    if (t.committed_ps > now_ps() && !wait_or_reset(epoch, delay_until(t.committed_ps))) continue;
    run(t, epoch);
    if (epoch != epoch_) continue;   // abandoned by reset(): reset() did the bookkeeping
    running_ = false;
    go_idle_if_done();
    notify_if_engine_idle();
  }
}

void DmaCore::run(const DmaTransfer& t, uint64_t epoch) {
  if (observer_ != nullptr) observer_->transfer_started(config_.channel, t, now_ps());
  failed_ = false;
  fail_address_ = 0;
  fail_message_.clear();
  if (!wait_or_reset(epoch, ps_to_time(config_.setup_cycles * config_.cycle_ps))) return;

  reduce_op_ = t.reduce_op;
  reduce_type_ = t.reduce_type;
  std::string message;
  if (!validate(t, message)) {
    note_failure(kDmaErrCauseBadCommit, t.destination, message);
  } else {
    Cursor src, dst;
    src.base = t.source;
    dst.base = t.destination;
    if (t.linear) {
      src.size[0] = dst.size[0] = t.bytes;
      for (unsigned d = 1; d < 5; ++d) src.size[d] = dst.size[d] = 1;
    } else {
      for (unsigned d = 0; d < 5; ++d) {
        src.size[d] = d == 0 ? t.src_size[0] : std::max<uint32_t>(t.src_size[d], 1);
        dst.size[d] = d == 0 ? t.dst_size[0] : std::max<uint32_t>(t.dst_size[d], 1);
        src.stride[d] = t.src_stride[d];
        dst.stride[d] = t.dst_stride[d];
      }
    }
    const uint64_t burst = config_.max_burst_bytes;
    const sc_core::sc_time cycle = ps_to_time(config_.cycle_ps);
    uint64_t left = t.bytes;
    bool first = true;
    // Memset: the byte at address A is byte A % 8 of the 64-bit value (little-endian words).
    unsigned char fill[8];
    for (unsigned i = 0; i < 8; ++i) fill[i] = static_cast<unsigned char>(t.source >> (8 * i));
    while (left > 0 && !failed_) {
      if (!first && !wait_or_reset(epoch, cycle)) return;   // one request per cycle
      first = false;
      if (t.memset) {
        while (writes_in_flight_ >= config_.posted_writes) {
          if (!wait_progress(epoch)) return;
        }
        if (failed_) break;
        const uint64_t address = dst.address();
        const uint64_t chunk = std::min({burst - address % burst, dst.row_left(), left});
        DmaPort::Access& access = bus_.acquire(true, address, static_cast<uint32_t>(chunk));
        for (uint64_t i = 0; i < chunk; ++i) access.buffer[i] = fill[(address + i) & 7];
        access.kind = kFillWrite;
        access.tag2 = epoch;
        ++writes_in_flight_;
        bus_.issue(access);
        dst.advance(chunk);
        left -= chunk;
      } else {
        while (reads_in_flight_ + parked_.size() >= config_.outstanding) {
          if (!wait_progress(epoch)) return;
        }
        if (failed_) break;
        const uint64_t address = src.address();
        const uint64_t chunk = std::min({burst - address % burst, src.row_left(), dst.row_left(), left});
        if (t.reduce) {
          // Both operands are read; the write of op(destination, source) follows the later one.
          // Two requests: two cycles.
          DmaPort::Access& source = bus_.acquire(false, address, static_cast<uint32_t>(chunk));
          DmaPort::Access& destination = bus_.acquire(false, dst.address(), static_cast<uint32_t>(chunk));
          source.kind = kReduceSourceRead;
          destination.kind = kReduceDestinationRead;
          source.tag = reinterpret_cast<uint64_t>(&destination);
          destination.tag = reinterpret_cast<uint64_t>(&source);
          source.tag2 = destination.tag2 = epoch;
          reads_in_flight_ += 2;
          bus_.issue(source);
          if (!wait_or_reset(epoch, cycle)) return;
          bus_.issue(destination);
        } else {
          DmaPort::Access& access = bus_.acquire(false, address, static_cast<uint32_t>(chunk));
          access.kind = kDataRead;
          access.tag = dst.address();
          access.tag2 = epoch;
          ++reads_in_flight_;
          bus_.issue(access);
        }
        src.advance(chunk);
        dst.advance(chunk);
        left -= chunk;
      }
    }
  }
  // Drain: every request of this transfer answered.
  while (reads_in_flight_ > 0 || writes_in_flight_ > 0 || !parked_.empty()) {
    if (!wait_progress(epoch)) return;
  }
  if (!failed_ && t.write_completion) {
    DmaPort::Access& access = bus_.acquire(true, t.completion_address, 4);
    std::memcpy(access.buffer.data(), &t.completion_data, 4);
    access.kind = kCompletionWrite;
    access.tag2 = epoch;
    ++writes_in_flight_;
    bus_.issue(access);
    while (writes_in_flight_ > 0) {
      if (!wait_progress(epoch)) return;
    }
  }
  const Picoseconds now = now_ps();
  if (failed_) {
    ++stats_.failed_transfers;
    ++stats_.errors;
    if (observer_ != nullptr) observer_->transfer_failed(config_.channel, fail_address_, fail_message_, now);
    send_error_message();
    halt_on_error(now);   // STOP_ON_ERR: no further transfer starts (this one sent no completion)
  } else {
    ++stats_.transfers;
    if (observer_ != nullptr) observer_->transfer_done(config_.channel, t, now);
  }
}

void DmaCore::issue_write(DmaPort::Access& access) {
  ++writes_in_flight_;
  bus_.issue(access);
}

void DmaCore::write_or_park(DmaPort::Access& access) {
  if (writes_in_flight_ < config_.posted_writes) {
    issue_write(access);
  } else {
    parked_.push_back(&access);
  }
}

bool DmaCore::read_returned(DmaPort::Access& access) {
  --reads_in_flight_;
  ++stats_.read_bursts;
  stats_.read_latency_ps += access.done_ps - access.issued_ps;
  if (access.ok()) return true;
  const uint64_t address = access.get_address();
  note_failure(dc::kErrCauseHbwRdErr, address, "read of " + std::to_string(access.get_data_length()) + " bytes at " +
                                                   hex(address) + " failed");
  return false;
}

void DmaCore::reduce_read_done(DmaPort::Access& access) {
  read_returned(access);
  auto* partner = reinterpret_cast<DmaPort::Access*>(access.tag);
  const auto waiting = reduce_arrived_.find(partner);
  if (waiting == reduce_arrived_.end()) {
    reduce_arrived_.insert(&access);   // the partner is still in flight
    return;
  }
  reduce_arrived_.erase(waiting);
  if (failed_) {
    bus_.release(access);
    bus_.release(*partner);
    return;
  }
  DmaPort::Access& destination = access.kind == kReduceDestinationRead ? access : *partner;
  DmaPort::Access& source = access.kind == kReduceDestinationRead ? *partner : access;
  reduction::reduce_into(destination.get_data_ptr(), source.get_data_ptr(), destination.get_data_length(), reduce_op_,
                         reduce_type_);
  bus_.release(source);
  DmaPort::retarget(destination, true, destination.get_address());
  destination.kind = kDataWrite;
  write_or_park(destination);
}

void DmaCore::access_done(DmaPort::Access& access) {
  if (access.tag2 != epoch_ || access.kind == kErrorMessage) {
    bus_.release(access);   // a request of a transfer reset() abandoned, or an error message
    return;
  }
  const uint64_t address = access.get_address();
  switch (access.kind) {
    case kDataRead:
      if (!read_returned(access)) {
        bus_.release(access);
      } else if (failed_) {
        bus_.release(access);   // the transfer stopped: no more writes
      } else {
        DmaPort::retarget(access, true, access.tag);
        access.kind = kDataWrite;
        write_or_park(access);
      }
      break;
    case kReduceSourceRead:
    case kReduceDestinationRead:
      reduce_read_done(access);
      break;
    case kDataWrite:
    case kFillWrite:
      --writes_in_flight_;
      ++stats_.write_bursts;
      stats_.write_latency_ps += access.done_ps - access.issued_ps;
      if (access.ok()) {
        stats_.bytes += access.get_data_length();
      } else {
        note_failure(dc::kErrCauseHbwWrErr, address, "write of " + std::to_string(access.get_data_length()) +
                                                         " bytes at " + hex(address) + " failed");
      }
      bus_.release(access);
      break;
    case kCompletionWrite:
      --writes_in_flight_;
      if (access.ok()) {
        ++stats_.completion_messages;
      } else {
        note_failure(dc::kErrCauseLbwWrErr, address, "completion message to " + hex(address) + " failed");
      }
      bus_.release(access);
      break;
    default:
      bus_.release(access);
  }
  if (failed_) {
    for (DmaPort::Access* parked : parked_) bus_.release(*parked);
    parked_.clear();
  }
  while (!parked_.empty() && writes_in_flight_ < config_.posted_writes) {
    DmaPort::Access* next = parked_.front();
    parked_.pop_front();
    issue_write(*next);
  }
  progress_event_.notify(sc_core::SC_ZERO_TIME);
}

void DmaCore::register_stats(stats::Scope scope) {
  const auto add = [&](const char* name, const char* unit, const char* desc, uint64_t DmaCoreStats::*field) {
    scope.formula(name, unit, desc, [this, field] { return double(stats().*field); });
  };
  add("commits", "count", "COMMIT writes that took effect", &DmaCoreStats::commits);
  add("transfers", "count", "transfers completed", &DmaCoreStats::transfers);
  add("failed_transfers", "count", "transfers that failed", &DmaCoreStats::failed_transfers);
  add("bytes", "bytes", "data bytes written", &DmaCoreStats::bytes);
  add("read_bursts", "count", "read bursts", &DmaCoreStats::read_bursts);
  add("write_bursts", "count", "write bursts", &DmaCoreStats::write_bursts);
  add("errors", "count", "error events", &DmaCoreStats::errors);
  add("busy_ps", "ps", "time busy", &DmaCoreStats::busy_ps);
}

}  // namespace hpusim::hw
