#include "hw/qman/qman.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "arch/hex.h"

namespace hpusim::hw {
namespace {

using regs::QmReg;

uint64_t le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t le32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

constexpr uint32_t kBdBytes = 16;   // struct hl_bd { u64 ptr; u32 len; u32 ctl; }

}  // namespace

Qman::Qman(sc_core::sc_module_name name, const QmanConfig& config)
    : sc_module(name), config_(config), name_(regs::qman_name(config.id)), bus_("bus") {
  plain_registers_.assign(kBlockBytes / 4, 0);
  SC_HAS_PROCESS(Qman);
  for (unsigned s = 0; s < regs::kQmanStreams; ++s) {
    sc_core::sc_spawn_options options;
    sc_core::sc_spawn([this, s] { run_upper_cp(s); }, sc_core::sc_gen_unique_name("upper_cp"), &options);
  }
  SC_THREAD(run_lower_cp);
  SC_METHOD(apply_due_writes);
  sensitive << pending_writes_.event();
  dont_initialize();
  SC_METHOD(arbitration_decision);
  sensitive << arbitration_event_;
  dont_initialize();
}

void Qman::arbitration_decision() {
  decision_pending_ = false;
  grant_next();
}

std::string Qman::describe(unsigned cp) const { return name_ + " CP" + std::to_string(cp); }

void Qman::reset() {
  ++generation_;
  pending_writes_.clear();
  bus_.clear_posted_failures();
  for (Cp& cp : cps_) {
    cp.fence.fill(0);
    cp.msg_base.fill(0);
    cp.ldma_tsize_offset = cp.ldma_src_offset = cp.ldma_dst_offset = 0;
    cp.predicates = 1;
    cp.commits_unanswered = 0;
    cp.scalars.fill(0);
    cp.loops = {};
    cp.error_causes = 0;
    cp.stopped = false;
    cp.lower_fifo.clear();
    cp.wake.notify(sc_core::SC_ZERO_TIME);
  }
  for (Stream& s : streams_) s = Stream{};
  std::fill(plain_registers_.begin(), plain_registers_.end(), 0);
  glbl_cfg0_ = glbl_cfg1_ = glbl_err_cfg_ = glbl_err_wdata_ = 0;
  glbl_err_addr_ = 0;
  cq_ptr_lo_ = cq_ptr_hi_ = 0;
  arb_owner_ = -1;
  arb_waiting_.fill(false);
  wrr_next_ = 0;
  wrr_credit_ = 0;
  decision_pending_ = false;
  arbitration_event_.cancel();
}

// --- registers --------------------------------------------------------------------------------

bool Qman::read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) {
  pending_writes_.apply_due(at_ps);
  auto ref = regs::decode_qm_reg(static_cast<uint32_t>(offset));
  if (!ref) return false;
  const unsigned i = ref->index;
  switch (ref->reg) {
    case QmReg::GlblCfg0: value = glbl_cfg0_; return true;
    case QmReg::GlblCfg1: value = glbl_cfg1_; return true;
    case QmReg::GlblErrCfg: value = glbl_err_cfg_; return true;
    case QmReg::GlblErrAddrLo: value = static_cast<uint32_t>(glbl_err_addr_); return true;
    case QmReg::GlblErrAddrHi: value = static_cast<uint32_t>(glbl_err_addr_ >> 32); return true;
    case QmReg::GlblErrWdata: value = glbl_err_wdata_; return true;
    case QmReg::GlblSts1: value = cps_[i].error_causes; return true;
    case QmReg::GlblSts0: {
      uint32_t sts = 0;
      for (unsigned s = 0; s < regs::kQmanStreams; ++s) {
        if (streams_[s].pi == streams_[s].ci) sts |= 1u << (regs::qm::kGlblSts0PqfIdleShift + s);
      }
      for (unsigned c = 0; c < regs::kQmanCps; ++c) {
        if (!cps_[c].busy) sts |= 1u << (regs::qm::kGlblSts0CqfIdleShift + c);
        if (!cps_[c].busy) sts |= 1u << (regs::qm::kGlblSts0CpIdleShift + c);
        if (cps_[c].stopped) sts |= 1u << (regs::qm::kGlblSts0CpIsStopShift + c);
      }
      value = sts;
      return true;
    }
    case QmReg::PqBaseLo: value = static_cast<uint32_t>(streams_[i].pq_base); return true;
    case QmReg::PqBaseHi: value = static_cast<uint32_t>(streams_[i].pq_base >> 32); return true;
    case QmReg::PqSize: value = streams_[i].pq_size_log2; return true;
    case QmReg::PqPi: value = streams_[i].pi; return true;
    case QmReg::PqCi: value = streams_[i].ci; return true;
    case QmReg::CpFence0Cnt: case QmReg::CpFence1Cnt: case QmReg::CpFence2Cnt: case QmReg::CpFence3Cnt:
      value = cps_[i].fence[static_cast<unsigned>(ref->reg) - static_cast<unsigned>(QmReg::CpFence0Cnt)];
      return true;
    case QmReg::CpFence0Rdata: case QmReg::CpFence1Rdata: case QmReg::CpFence2Rdata: case QmReg::CpFence3Rdata:
      value = 0;
      return true;
    case QmReg::CpSts:
      value = cps_[i].stopped ? regs::qm::kCpStsSwStop : 0;
      return true;
    default:
      value = plain_registers_[offset / 4];
      return true;
  }
}

bool Qman::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  // Accepted now, takes effect when it arrives: a doorbell or fence increment must not be seen by
  // the CPs before its time.
  auto ref = regs::decode_qm_reg(static_cast<uint32_t>(offset));
  if (!ref || (ref->reg == QmReg::PqSize && value > 16)) return false;
  pending_writes_.submit(offset, value, at_ps);
  return true;
}

void Qman::apply_due_writes() { pending_writes_.on_event(); }

void Qman::apply_write(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  auto ref = regs::decode_qm_reg(static_cast<uint32_t>(offset));
  const unsigned i = ref->index;
  const sc_core::sc_time effective = delay_until(at_ps);
  switch (ref->reg) {
    case QmReg::GlblCfg0:
      glbl_cfg0_ = value;
      for (Cp& cp : cps_) cp.wake.notify(effective);
      return;
    case QmReg::GlblCfg1:
      glbl_cfg1_ = value;
      for (Cp& cp : cps_) cp.wake.notify(effective);
      return;
    case QmReg::GlblErrCfg: glbl_err_cfg_ = value; return;
    case QmReg::GlblErrAddrLo: glbl_err_addr_ = (glbl_err_addr_ & ~0xFFFFFFFFull) | value; return;
    case QmReg::GlblErrAddrHi: glbl_err_addr_ = (glbl_err_addr_ & 0xFFFFFFFFull) | (uint64_t{value} << 32); return;
    case QmReg::GlblErrWdata: glbl_err_wdata_ = value; return;
    case QmReg::GlblSts1: cps_[i].error_causes &= ~value; return;   // write 1 to clear
    case QmReg::PqBaseLo: streams_[i].pq_base = (streams_[i].pq_base & ~0xFFFFFFFFull) | value; return;
    case QmReg::PqBaseHi: streams_[i].pq_base = (streams_[i].pq_base & 0xFFFFFFFFull) | (uint64_t{value} << 32); return;
    case QmReg::PqSize:
      streams_[i].pq_size_log2 = value;
      return;
    case QmReg::PqPi:
      // The doorbell. The index runs over twice the queue length so full and empty differ.
      streams_[i].pi = value & (2 * queue_entries(streams_[i]) - 1);
      cps_[i].wake.notify(effective);
      return;
    case QmReg::PqCi:
      streams_[i].ci = value & (2 * queue_entries(streams_[i]) - 1);
      return;
    case QmReg::CpFence0Rdata: case QmReg::CpFence1Rdata: case QmReg::CpFence2Rdata: case QmReg::CpFence3Rdata: {
      // A write adds value[3:0] to the fence counter; a waiting FENCE re-checks when it lands.
      uint32_t& counter = cps_[i].fence[static_cast<unsigned>(ref->reg) - static_cast<unsigned>(QmReg::CpFence0Rdata)];
      counter = (counter + (value & regs::qm::kCpFenceRdataIncValMask)) & regs::qm::kCpFenceCntMask;
      cps_[i].wake.notify(effective);
      return;
    }
    case QmReg::CpMsgBase0AddrLo: case QmReg::CpMsgBase1AddrLo: case QmReg::CpMsgBase2AddrLo:
    case QmReg::CpMsgBase3AddrLo: {
      uint64_t& base = cps_[i].msg_base[(static_cast<unsigned>(ref->reg) - static_cast<unsigned>(QmReg::CpMsgBase0AddrLo)) / 2];
      base = (base & ~0xFFFFFFFFull) | value;
      return;
    }
    case QmReg::CpMsgBase0AddrHi: case QmReg::CpMsgBase1AddrHi: case QmReg::CpMsgBase2AddrHi:
    case QmReg::CpMsgBase3AddrHi: {
      uint64_t& base = cps_[i].msg_base[(static_cast<unsigned>(ref->reg) - static_cast<unsigned>(QmReg::CpMsgBase0AddrHi)) / 2];
      base = (base & 0xFFFFFFFFull) | (uint64_t{value} << 32);
      return;
    }
    case QmReg::CpLdmaTsizeOffset: cps_[i].ldma_tsize_offset = value; return;
    case QmReg::CpLdmaSrcBaseLoOffset: cps_[i].ldma_src_offset = value; return;
    case QmReg::CpLdmaDstBaseLoOffset: cps_[i].ldma_dst_offset = value; return;
    case QmReg::CqPtrLo:
      if (i == regs::kLowerCp) cq_ptr_lo_ = value;
      plain_registers_[offset / 4] = value;
      return;
    case QmReg::CqPtrHi:
      if (i == regs::kLowerCp) cq_ptr_hi_ = value;
      plain_registers_[offset / 4] = value;
      return;
    case QmReg::CqTsize:
      plain_registers_[offset / 4] = value;
      if (i == regs::kLowerCp) {
        // Writing the size commits a command buffer to the lower CP (what CP_DMA does through
        // the CP_LDMA offsets of an internal QMAN's upper CPs).
        Cp& lower = cps_[regs::kLowerCp];
        if (lower.lower_fifo.size() >= config_.lower_cp_fifo) {
          raise_error(regs::kLowerCp, QmanError::kFetch, "CQ_TSIZE_4 written while the lower CP queue is full");
          return;
        }
        lower.lower_fifo.push_back({(uint64_t{cq_ptr_hi_} << 32) | cq_ptr_lo_, value});
        lower.wake.notify(effective);
      }
      return;
    default:
      plain_registers_[offset / 4] = value;
      return;
  }
}

// --- command processors -----------------------------------------------------------------------

void Qman::cp_wait(unsigned cp) { sc_core::wait(cps_[cp].wake); }

void Qman::run_upper_cp(unsigned s) {
  Cp& cp = cps_[s];
  Stream& stream = streams_[s];
  while (true) {
    const bool enabled = ((glbl_cfg0_ >> (regs::qm::kGlblCfg0PqfEnShift + s)) & 1u) &&
                         ((glbl_cfg0_ >> (regs::qm::kGlblCfg0CpEnShift + s)) & 1u) &&
                         !((glbl_cfg1_ >> (regs::qm::kGlblCfg1CpStopShift + s)) & 1u);
    if (!enabled || cp.stopped || stream.pi == stream.ci) {
      cp_wait(s);
      continue;
    }
    cp.busy = true;
    const uint64_t generation = generation_;
    const uint32_t entries = queue_entries(stream);
    const uint64_t bd_address = stream.pq_base + uint64_t{stream.ci & (entries - 1)} * kBdBytes;
    uint8_t bd[kBdBytes];
    const bool fetched = bus_.read(bd_address, bd, kBdBytes, s) == tlm::TLM_OK_RESPONSE;
    if (generation != generation_) {
      cp.busy = false;
      continue;
    }
    if (!fetched) {
      raise_error(s, QmanError::kPqFetch, "cannot fetch the PQ entry at " + hex(bd_address));
      cp.busy = false;
      continue;
    }
    const CommandBuffer cb{le64(bd), le32(bd + 8)};
    const bool ok = execute(s, cb);
    cp.busy = false;
    if (!ok) continue;   // stopped: the entry stays unconsumed
    stream.ci = (stream.ci + 1) & (2 * entries - 1);
    ++stats_.command_buffers;
    if (observer_) observer_->command_buffer_done(name_, s, stream.ci, now_ps());
  }
}

void Qman::run_lower_cp() {
  Cp& cp = cps_[regs::kLowerCp];
  while (true) {
    const bool enabled = ((glbl_cfg0_ >> (regs::qm::kGlblCfg0CpEnShift + regs::kLowerCp)) & 1u) &&
                         !((glbl_cfg1_ >> (regs::qm::kGlblCfg1CpStopShift + regs::kLowerCp)) & 1u);
    if (!enabled || cp.stopped || cp.lower_fifo.empty()) {
      cp_wait(regs::kLowerCp);
      continue;
    }
    cp.busy = true;
    const CommandBuffer cb = cp.lower_fifo.front();
    cp.lower_fifo.pop_front();
    if (execute(regs::kLowerCp, cb)) ++stats_.command_buffers;
    cp.busy = false;
  }
}

bool Qman::execute(unsigned cp, const CommandBuffer& cb) {
  const uint64_t generation = generation_;
  if (cb.size > config_.max_cb_bytes) {
    raise_error(cp, QmanError::kFetch, "command buffer of " + std::to_string(cb.size) + " bytes at " +
                                           hex(cb.address) + " exceeds " + std::to_string(config_.max_cb_bytes));
    return false;
  }
  // The buffer streams in as fetch-granule reads with a prefetch window while the CP runs what
  // has arrived: a packet runs once all of its bytes are there.
  std::vector<uint8_t> bytes(cb.size);
  hw::BusMaster::ReadStream fetch(bus_, cb.address, bytes.data(), cb.size, config_.fetch_bytes, config_.fetch_window, cp);
  const auto fetch_failed = [&] {
    if (generation == generation_) {
      raise_error(cp, QmanError::kFetch, "cannot fetch the command buffer at " + hex(cb.address) + " (" +
                                             std::to_string(cb.size) + " bytes)");
    }
    return false;
  };
  cps_[cp].loops = {};   // REPEAT loops do not span command buffers
  size_t offset = 0;
  while (offset < bytes.size()) {
    // The header first, then as much as the packet says it needs (within the buffer).
    if (fetch.wait_for(static_cast<uint32_t>(std::min(bytes.size(), offset + qman::kHeaderSize))) != tlm::TLM_OK_RESPONSE) {
      return fetch_failed();
    }
    if (generation != generation_) return false;
    qman::DecodeResult decoded = qman::decode(bytes.data() + offset, fetch.arrived() - offset);
    if (decoded.error == qman::DecodeError::kTruncated && fetch.arrived() < bytes.size()) {
      if (fetch.wait_for(static_cast<uint32_t>(std::min(bytes.size(), offset + decoded.size))) != tlm::TLM_OK_RESPONSE) {
        return fetch_failed();
      }
      if (generation != generation_) return false;
      decoded = qman::decode(bytes.data() + offset, fetch.arrived() - offset);
    }
    if (!decoded.ok()) {
      raise_error(cp, QmanError::kUndefinedOpcode,
                  decoded.message + " at " + hex(cb.address + offset) + " (command buffer offset " + hex(offset) + ")");
      return false;
    }
    const Picoseconds start = now_ps();
    sc_core::wait(ps_to_time(Picoseconds{config_.packet_cycles} * config_.cycle_ps));
    if (generation != generation_) return false;   // reset while this buffer ran
    size_t next = offset + decoded.size;
    if (const auto* loop = std::get_if<qman::Repeat>(&decoded.packet)) {
      // REPEAT moves the CP inside this buffer, so it is handled here rather than in execute_packet.
      if (!wait_barriers(cp, loop->barriers) || !repeat(cp, *loop, cb.address, offset, bytes.size(), next)) return false;
    } else if (!run_packet(cp, decoded.packet)) {
      return false;
    }
    if (generation != generation_) return false;
    ++stats_.packets;
    if (observer_) observer_->packet_executed(name_, cp, decoded.packet, start, now_ps());
    offset = next;
  }
  return registers_answered(cp);
}

bool Qman::wait_barriers(unsigned cp_index, const qman::Barriers& barriers) {
  Cp& cp = cps_[cp_index];
  const uint64_t generation = generation_;
  // RB: every earlier register write of this CP has been answered. EB too: the engine sees the
  // writes that commit work to it only once they have arrived.
  if ((barriers.rb || barriers.eb) && !registers_answered(cp_index)) return false;
  if (barriers.mb) {
    // MB: the CP's earlier posted messages must be answered; a failure among them is reported here.
    const uint32_t failures = bus_.wait_posted(cp_index);
    if (generation != generation_) return false;
    if (failures != 0) {
      raise_error(cp_index, QmanError::kMessage, "an earlier message write failed");
      return false;
    }
  }
  if (barriers.eb && config_.engine != nullptr) {
    // EB: the engine has finished everything committed to it so far. A reset ends the wait (the CP
    // abandons its buffer).
    while (!config_.engine->engine_idle()) {
      sc_core::wait(config_.engine->engine_idle_event() | cp.wake);
      if (generation != generation_ || cp.stopped) return false;
    }
  }
  return generation == generation_;
}

bool Qman::run_packet(unsigned cp, const qman::Packet& packet) {
  const qman::Barriers barriers = std::visit([](const auto& p) { return p.barriers; }, packet);
  return wait_barriers(cp, barriers) && execute_packet(cp, packet);
}

bool Qman::repeat(unsigned cp_index, const qman::Repeat& p, uint64_t cb_address, size_t offset, size_t size,
                  size_t& next) {
  Cp& cp = cps_[cp_index];
  if (!predicate_true(cp, p.pred)) return true;
  Loop& loop = cp.loops[p.o ? 1 : 0];
  const size_t target = p.jmp_ptr;
  const auto refuse = [&](const std::string& why) {
    raise_error(cp_index, QmanError::kUndefinedOpcode,
                "REPEAT (sore=" + std::to_string(p.sore) + " o=" + std::to_string(p.o) + ") at " +
                    hex(cb_address + offset) + ": " + why);
    return false;
  };
  if (target % 8 != 0) return refuse("jump pointer " + hex(target) + " is not a multiple of 8");
  if (p.sore) {
    // Start of a loop: the count is scalar RF o; a count of 0 skips the body by jumping forward to
    // jmp_ptr (the offset just past the matching REPEAT sore = 0).
    if (target <= offset || target > size) {
      return refuse("jump pointer " + hex(target) + " must point forward inside the " + std::to_string(size) +
                    "-byte command buffer");
    }
    loop.left = cp.scalars[p.o ? 1 : 0];
    loop.armed = loop.left != 0;
    loop.start_offset = offset;
    if (!loop.armed) next = target;
    return true;
  }
  // End of the loop body: jump back to jmp_ptr while iterations remain.
  if (!loop.armed) return refuse("no loop of this level was started in this command buffer");
  if (target <= loop.start_offset || target >= offset) {
    return refuse("jump pointer " + hex(target) + " must point between the loop's start (" +
                  hex(loop.start_offset) + ") and this packet");
  }
  if (--loop.left > 0) {
    next = target;
  } else {
    loop.armed = false;
  }
  return true;
}

bool Qman::execute_scalars(unsigned cp_index, bool upper) {
  Cp& cp = cps_[cp_index];
  const uint64_t generation = generation_;
  // ETYPE 0 executes the packet at RF0 (an 8-byte packet uses the lower two RFs, a 16-byte one all
  // four); ETYPE 1 executes the 8-byte packet in the upper two RFs (RF2, RF3).
  uint8_t bytes[kScalarRfs * 4];
  std::memcpy(bytes, cp.scalars.data(), sizeof bytes);
  const size_t first = upper ? 8 : 0;
  const qman::DecodeResult decoded = qman::decode(bytes + first, sizeof bytes - first);
  const std::string which = upper ? "upper 2 scalar RFs" : "scalar RFs";
  if (!decoded.ok()) {
    raise_error(cp_index, QmanError::kUndefinedOpcode, "LOAD_AND_EXE: the " + which + " hold no packet: " + decoded.message);
    return false;
  }
  const bool allowed = std::visit(
      [](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        return !(std::is_same_v<T, qman::WregBulk> || std::is_same_v<T, qman::Repeat> ||
                 std::is_same_v<T, qman::LoadAndExe> || std::is_same_v<T, qman::LinDma>);
      },
      decoded.packet);
  if (!allowed) {
    raise_error(cp_index, QmanError::kUndefinedOpcode,
                "LOAD_AND_EXE: " + qman::describe(decoded.packet) + " cannot run from the " + which);
    return false;
  }
  const Picoseconds start = now_ps();
  sc_core::wait(ps_to_time(Picoseconds{config_.packet_cycles} * config_.cycle_ps));
  if (generation != generation_) return false;
  if (!run_packet(cp_index, decoded.packet)) return false;
  if (generation != generation_) return false;
  ++stats_.packets;
  if (observer_) observer_->packet_executed(name_, cp_index, decoded.packet, start, now_ps());
  return true;
}

bool Qman::send_message(unsigned cp, uint64_t address, uint32_t value) {
  bus_.post_write32(address, value, cp, cp);
  ++stats_.messages;
  return true;
}

bool Qman::write_engine_register(unsigned cp, uint64_t address, uint32_t value) {
  ++stats_.register_writes;
  bus_.post_write32(address, value, register_owner(cp), cp);
  return true;
}

bool Qman::await_engine_room(unsigned cp_index) {
  Cp& cp = cps_[cp_index];
  if (config_.engine == nullptr || config_.engine->engine_room() > cp.commits_unanswered) return true;
  if (!registers_answered(cp_index)) return false;
  const uint64_t generation = generation_;
  while (config_.engine->engine_room() == 0) {
    sc_core::wait(config_.engine->engine_room_event() | cp.wake);
    if (generation != generation_ || cp.stopped) return false;
  }
  return true;
}

bool Qman::registers_answered(unsigned cp) {
  const uint64_t generation = generation_;
  uint64_t address = 0;
  const uint32_t failures = bus_.wait_posted(register_owner(cp), &address);
  if (generation != generation_) return false;
  cps_[cp].commits_unanswered = 0;
  if (failures != 0) {
    raise_error(cp, QmanError::kRegisterWrite,
                "register write to " + hex(address) + " failed" +
                    (failures > 1 ? " (and " + std::to_string(failures - 1) + " more)" : std::string()));
    return false;
  }
  return true;
}

bool Qman::execute_packet(unsigned cp_index, const qman::Packet& packet) {
  Cp& cp = cps_[cp_index];
  return std::visit(
      [&](const auto& p) -> bool {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, qman::Nop>) {
          return true;
        } else if constexpr (std::is_same_v<T, qman::Stop>) {
          raise_error(cp_index, QmanError::kStop, "STOP packet");
          return false;
        } else if constexpr (std::is_same_v<T, qman::Wreg32>) {
          if (!predicate_true(cp, p.pred)) return true;
          if (config_.commit_register && p.reg_offset == *config_.commit_register) {
            if (!await_engine_room(cp_index)) return false;
            ++cp.commits_unanswered;
          }
          return write_engine_register(cp_index, config_.engine_block_address + p.reg_offset, p.value);
        } else if constexpr (std::is_same_v<T, qman::WregBulk>) {
          if (!predicate_true(cp, p.pred)) return true;
          for (size_t i = 0; i < p.values.size(); ++i) {
            const uint64_t address = config_.engine_block_address + p.reg_offset + 8 * i;
            if (!write_engine_register(cp_index, address, static_cast<uint32_t>(p.values[i]))) return false;
            if (!write_engine_register(cp_index, address + 4, static_cast<uint32_t>(p.values[i] >> 32))) return false;
          }
          return true;
        } else if constexpr (std::is_same_v<T, qman::MsgLong> || std::is_same_v<T, qman::MsgProt>) {
          if (!predicate_true(cp, p.pred)) return true;
          // op 1 writes the timestamp (nanoseconds of device time) instead of the value.
          const uint32_t value = p.op == 1 ? static_cast<uint32_t>(now_ps() / 1000) : p.value;
          return send_message(cp_index, p.addr, value);
        } else if constexpr (std::is_same_v<T, qman::MsgShort>) {
          const uint32_t value = p.op == 1 ? static_cast<uint32_t>(now_ps() / 1000) : p.value;
          return send_message(cp_index, cp.msg_base[p.base] + p.msg_addr_offset, value);
        } else if constexpr (std::is_same_v<T, qman::Fence>) {
          if (!predicate_true(cp, p.pred)) return true;
          ++stats_.fence_waits;
          const uint64_t generation = generation_;
          while (cp.fence[p.id] < p.target_val && !cp.stopped && generation == generation_) cp_wait(cp_index);
          if (cp.stopped || generation != generation_) return false;
          cp.fence[p.id] -= std::min<uint32_t>(cp.fence[p.id], p.dec_val);
          return true;
        } else if constexpr (std::is_same_v<T, qman::Wait>) {
          // A reset ends the wait early (the CP abandons its buffer).
          const uint64_t generation = generation_;
          const Picoseconds until = now_ps() + Picoseconds{p.num_cycles_to_wait} * config_.cycle_ps;
          while (now_ps() < until && generation == generation_) sc_core::wait(delay_until(until), cp.wake);
          if (generation != generation_) return false;
          cp.fence[p.id] = (cp.fence[p.id] + p.inc_val) & regs::qm::kCpFenceCntMask;
          return true;
        } else if constexpr (std::is_same_v<T, qman::LinDma>) {
          // Program the engine through the CP_LDMA offsets, then commit. The engine's commit queue
          // pushes back: once the earlier commits have arrived, the CP waits for a free slot.
          if (!await_engine_room(cp_index)) return false;
          ++cp.commits_unanswered;
          const uint64_t base = config_.ldma_block_address;
          uint32_t commit = 0;
          if (p.wr_comp_en) commit |= regs::dma_core::kCommitWrCompEn;
          if (p.transpose) commit |= regs::dma_core::kCommitTranspose;
          if (p.dtype) commit |= regs::dma_core::kCommitDtype;
          if (p.lin) commit |= regs::dma_core::kCommitLin;
          if (p.mem_set) commit |= regs::dma_core::kCommitMemSet;
          if (p.compress) commit |= regs::dma_core::kCommitCompress;
          if (p.decompress) commit |= regs::dma_core::kCommitDecompress;
          commit |= (uint32_t{p.context_id} << regs::dma_core::kCommitCtxIdShift) & regs::dma_core::kCommitCtxIdMask;
          return write_engine_register(cp_index, base + cp.ldma_src_offset, static_cast<uint32_t>(p.src_addr)) &&
                 write_engine_register(cp_index, base + cp.ldma_src_offset + 4, static_cast<uint32_t>(p.src_addr >> 32)) &&
                 write_engine_register(cp_index, base + cp.ldma_dst_offset, static_cast<uint32_t>(p.dst_addr)) &&
                 write_engine_register(cp_index, base + cp.ldma_dst_offset + 4, static_cast<uint32_t>(p.dst_addr >> 32)) &&
                 write_engine_register(cp_index, base + cp.ldma_tsize_offset, p.tsize) &&
                 write_engine_register(cp_index, base + regs::dma_core::kCommit, commit);
        } else if constexpr (std::is_same_v<T, qman::CpDma>) {
          if (!predicate_true(cp, p.pred)) return true;
          if (cp_index == regs::kLowerCp) {
            raise_error(cp_index, QmanError::kUndefinedOpcode, "CP_DMA on the lower CP");
            return false;
          }
          Cp& lower = cps_[regs::kLowerCp];
          const uint64_t generation = generation_;
          while (lower.lower_fifo.size() >= config_.lower_cp_fifo) {
            if (lower.stopped) {
              raise_error(cp_index, QmanError::kFetch, "CP_DMA: the lower CP is stopped and its queue is full");
              return false;
            }
            sc_core::wait(ps_to_time(Picoseconds{config_.packet_cycles} * config_.cycle_ps));
            if (generation != generation_) return false;   // reset: drop the stale buffer
          }
          lower.lower_fifo.push_back({p.src_addr, p.tsize});
          lower.wake.notify(sc_core::SC_ZERO_TIME);
          return true;
        } else if constexpr (std::is_same_v<T, qman::LoadAndExe>) {
          if (!predicate_true(cp, p.pred)) return true;
          if (p.load) {
            // dst = 1 ("scalar mode"): the four 32-bit scalar RFs, 16 bytes. dst = 0: the predicates
            // in Gaudi's (non-consecutive) map, 32 words of which bit 0 of word i is predicate i;
            // predicate 0 is not loaded (always true).
            const uint64_t generation = generation_;
            const uint32_t words = p.dst ? kScalarRfs : 32;
            std::array<uint32_t, 32> loaded{};
            const bool ok = bus_.read(p.src_addr, loaded.data(), 4 * words, cp_index) == tlm::TLM_OK_RESPONSE;
            if (generation != generation_) return false;
            if (!ok) {
              raise_error(cp_index, QmanError::kFetch,
                          std::string("LOAD_AND_EXE cannot read the ") + (p.dst ? "scalar RFs" : "predicates") +
                              " at " + hex(p.src_addr));
              return false;
            }
            if (p.dst) {
              std::copy_n(loaded.begin(), kScalarRfs, cp.scalars.begin());
            } else {
              uint32_t predicates = 1;
              for (unsigned i = 1; i < 32; ++i) predicates |= (loaded[i] & 1u) << i;
              cp.predicates = predicates;
            }
          }
          // exe runs the packet held in the scalar RFs, whatever dst says (hl-thunk's separate
          // "exe" packet has dst = 0, load = 0, exe = 1).
          return !p.exe || execute_scalars(cp_index, p.etype);
        } else if constexpr (std::is_same_v<T, qman::ArbPoint>) {
          if (!predicate_true(cp, p.pred)) return true;
          return arbitrate(cp_index, p);
        } else {
          // REPEAT is executed by execute() (it moves the CP inside its buffer); execute_scalars
          // refuses it.
          static_assert(std::is_same_v<T, qman::Repeat>);
          raise_error(cp_index, QmanError::kUndefinedOpcode, "REPEAT outside a command buffer");
          return false;
        }
      },
      packet);
}

bool Qman::arbitrate(unsigned stream, const qman::ArbPoint& point) {
  const uint32_t cfg = plain_registers_[regs::qm_reg_offset(QmReg::ArbCfg0) / 4];
  if (!(cfg & regs::qm::kArbCfg0En) || stream == regs::kLowerCp) return true;   // no arbitration: a NOP
  if ((cfg >> (regs::qm::kArbCfg0MaskShift + stream)) & 1u) return true;        // stream masked out
  if (point.rls) {
    if (arb_owner_ == static_cast<int>(stream)) {
      // The arbiter decides one arbitration window later, so a stream that releases and asks
      // again right away competes with the streams already waiting.
      arb_owner_ = -1;
      decision_pending_ = true;
      arbitration_event_.notify(ps_to_time(Picoseconds{config_.packet_cycles + 1} * config_.cycle_ps));
    }
    return true;
  }
  if (arb_owner_ == static_cast<int>(stream)) return true;
  arb_waiting_[stream] = true;
  arb_priority_[stream] = point.priority;
  if (!decision_pending_) grant_next();
  const uint64_t generation = generation_;
  while (arb_owner_ != static_cast<int>(stream) && generation == generation_) cp_wait(stream);
  return generation == generation_;
}

void Qman::grant_next() {
  if (arb_owner_ >= 0) return;
  const uint32_t cfg = plain_registers_[regs::qm_reg_offset(QmReg::ArbCfg0) / 4];
  int chosen = -1;
  if (cfg & regs::qm::kArbCfg0Type) {
    // Weighted round robin: the stream whose turn it is keeps it for ARB_WRR_WEIGHT grants.
    for (unsigned i = 0; i < regs::kQmanStreams && chosen < 0; ++i) {
      const unsigned s = (wrr_next_ + i) % regs::kQmanStreams;
      if (!arb_waiting_[s]) continue;
      if (s != wrr_next_ || wrr_credit_ == 0) {
        wrr_next_ = s;
        wrr_credit_ = std::max<uint32_t>(1, plain_registers_[regs::qm_reg_offset(QmReg::ArbWrrWeight, s) / 4]);
      }
      chosen = static_cast<int>(s);
    }
    if (chosen >= 0 && --wrr_credit_ == 0) wrr_next_ = (wrr_next_ + 1) % regs::kQmanStreams;
  } else {
    // Priority: the highest ARB_POINT priority value wins; ties go to the lower stream.
    for (unsigned s = 0; s < regs::kQmanStreams; ++s) {
      if (arb_waiting_[s] && (chosen < 0 || arb_priority_[s] > arb_priority_[chosen])) chosen = static_cast<int>(s);
    }
  }
  if (chosen < 0) return;
  arb_owner_ = chosen;
  arb_waiting_[chosen] = false;
  cps_[chosen].wake.notify(sc_core::SC_ZERO_TIME);
}

void Qman::raise_error(unsigned cp, QmanError cause, const std::string& message) {
  Cp& state = cps_[cp];
  state.error_causes |= static_cast<uint32_t>(cause);
  state.stopped = true;
  ++stats_.errors;
  if ((glbl_err_cfg_ >> (regs::qm::kGlblErrCfgCpMsgEnShift + cp)) & 1u) {
    // The error is a message to the configured address (the GIC, which firmware turns into an
    // event-queue entry).
    bus_.post_write32(glbl_err_addr_, glbl_err_wdata_, regs::kQmanCps, regs::kQmanCps);   // the error port, not a CP's
  }
  if (observer_) observer_->error(name_, cp, cause, describe(cp) + ": " + message, now_ps());
}

void Qman::register_stats(stats::Scope scope) {
  const auto count = [&](const char* name, const char* desc, uint64_t QmanStats::*field) {
    scope.formula(name, "count", desc, [this, field] { return double(stats_.*field); });
  };
  count("command_buffers", "command buffers fetched", &QmanStats::command_buffers);
  count("packets", "packets executed", &QmanStats::packets);
  count("messages", "messages sent", &QmanStats::messages);
  count("register_writes", "engine register writes", &QmanStats::register_writes);
  count("fence_waits", "fences that waited", &QmanStats::fence_waits);
  count("errors", "error events", &QmanStats::errors);
}

}  // namespace hpusim::hw
