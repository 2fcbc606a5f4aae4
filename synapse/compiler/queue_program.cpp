#include "synapse/compiler/queue_program.h"

#include "arch/packets/sync_wait.h"
#include "synapse/recipe/recipe_file.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpusim::synapse::compiler {

namespace {
constexpr size_t kMsgLongAddressOffset = 8;   // MSG_LONG: value, ctl, address
}  // namespace

Relocation Relocation::sync_object(uint32_t index) {
  return Relocation{recipe::SECTION_SYNC_OBJECTS, 0, recipe::sync_object_address(index)};
}

uint32_t monitor_for_queue(regs::QueueId queue, uint32_t monitor_base, uint32_t monitor_end) {
  if (regs::queue_stream(queue) != 0) {
    throw std::invalid_argument("compiler: queue " + regs::queue_name(queue) + " is not stream 0 of its QMAN");
  }
  const uint32_t monitor = monitor_base + regs::to_index(regs::queue_qman(queue));
  if (monitor >= monitor_end) {
    throw std::invalid_argument("compiler: queue " + regs::queue_name(queue) + " needs monitor " +
                                std::to_string(monitor) + ", past the target's monitors (" +
                                std::to_string(monitor_base) + " .. " + std::to_string(monitor_end - 1) + ")");
  }
  return monitor;
}

QueueProgram::QueueProgram(regs::QueueId queue, bool external, uint32_t monitor)
    : queue_(queue), external_(external), monitor_(monitor) {}

void QueueProgram::add_patch(size_t offset, recipe::Field field, const Relocation& target) {
  recipe::Patch patch;
  patch.set_offset(static_cast<uint32_t>(offset));
  patch.set_field(field);
  patch.set_section(target.section);
  patch.set_index(target.index);
  patch.set_addend(target.addend);
  patches_.push_back(patch);
}

void QueueProgram::message_sob(uint32_t sob, uint32_t value, qman::Barriers barriers) {
  const Relocation target = Relocation::sync_object(sob);
  add_patch(builder_.size() + kMsgLongAddressOffset, recipe::FIELD_ADDR64, target);
  builder_.msg_long(target.placeholder(), value, barriers);
}

void QueueProgram::wait_for(uint32_t sob, uint16_t target) {
  // The monitor watches its SOB's sync group: launch ranges start on a group boundary, so the
  // mask stays and the group is patched. The arm is the wait's only message to the monitor's
  // arm register.
  const size_t start = builder_.size();
  qman::append_sob_wait(builder_, queue_, regs::SyncManager::E_N, monitor_, sob, target);
  const uint64_t arm = regs::cfg_address(regs::sm_mon_arm(regs::SyncManager::E_N, monitor_));
  for (size_t at = start; at < builder_.size();) {
    const qman::DecodeResult decoded = qman::decode(builder_.bytes().data() + at, builder_.size() - at);
    if (!decoded.ok()) throw std::logic_error("compiler: a sync wait does not decode: " + decoded.message);
    if (const auto* msg = std::get_if<qman::MsgLong>(&decoded.packet); msg != nullptr && msg->addr == arm) {
      add_patch(at, recipe::FIELD_LOW8, Relocation{recipe::SECTION_SYNC_GROUPS, 0, sob / 8});   // value[7:0]
    }
    at += decoded.size;
  }
}

void QueueProgram::set_sob(uint32_t sob, uint16_t value, bool engine_barrier) {
  message_sob(sob, qman::sob_write_value(value, false), qman::Barriers{engine_barrier, true, true});
}

void QueueProgram::clear_sob(uint32_t sob) {
  message_sob(sob, qman::sob_write_value(0, false), qman::Barriers{});
}

void QueueProgram::append(const std::vector<uint8_t>& fragment, const RegisterRelocations& relocations,
                          RegisterRange reused) {
  size_t at = 0;
  while (at < fragment.size()) {
    const qman::DecodeResult decoded = qman::decode(fragment.data() + at, fragment.size() - at);
    if (!decoded.ok()) throw std::logic_error("compiler: an engine fragment does not decode: " + decoded.message);
    const size_t here = builder_.size();
    if (const auto* wreg = std::get_if<qman::Wreg32>(&decoded.packet)) {
      Written now;
      now.value = wreg->value;
      const auto found = relocations.find(wreg->reg_offset);
      if (found != relocations.end()) {
        const RegisterRelocation& r = found->second;
        const uint64_t address = r.target.placeholder();
        const uint32_t expected = static_cast<uint32_t>(r.field == recipe::FIELD_HIGH32 ? address >> 32 : address);
        if (wreg->value != expected) {
          throw std::logic_error("compiler: register 0x" + std::to_string(wreg->reg_offset) +
                                 " does not hold the placeholder it should");
        }
        now = {wreg->value, true, r.target.section, r.target.index, r.target.addend, r.field};
      }
      if (wreg->reg_offset >= reused.first && wreg->reg_offset < reused.last) {
        const auto last = written_.find(wreg->reg_offset);
        if (wreg->pred != 0) {   // may not execute: what the register holds is unknown after it
          if (last != written_.end()) written_.erase(last);
        } else if (last != written_.end() && last->second == now) {
          at += decoded.size;
          continue;
        } else {
          written_[wreg->reg_offset] = now;
        }
      }
      if (now.relocated) add_patch(here, now.field, found->second.target);   // WREG_32: the value is the first dword
    } else if (std::holds_alternative<qman::WregBulk>(decoded.packet)) {
      written_.clear();   // not tracked: forget what the registers hold
    }
    builder_.raw(fragment.data() + at, decoded.size);
    at += decoded.size;
  }
}

void QueueProgram::dma_copy(const Relocation& source, const Relocation& destination, uint64_t bytes, uint32_t sob) {
  constexpr uint64_t kPiece = 1ull << 30;
  for (uint64_t done = 0; done < bytes; done += kPiece) {
    Relocation src = source, dst = destination;
    src.addend += done;
    dst.addend += done;
    const size_t at = builder_.size();
    builder_.lin_dma(src.placeholder(), dst.placeholder(), static_cast<uint32_t>(std::min(kPiece, bytes - done)));
    const qman::DecodeResult decoded = qman::decode(builder_.bytes().data() + at, builder_.size() - at);
    const auto* dma = decoded.ok() ? std::get_if<qman::LinDma>(&decoded.packet) : nullptr;
    if (!dma || dma->src_addr != src.placeholder() || dma->dst_addr != dst.placeholder()) {
      throw std::logic_error("compiler: LIN_DMA does not hold its addresses where the patches go");
    }
    for (const auto& [offset, target] : {std::pair<size_t, Relocation>{8, src}, {16, dst}}) {
      add_patch(at + offset, recipe::FIELD_ADDR64, target);   // LIN_DMA: tsize, ctl, src, dst
    }
  }
  message_sob(sob, qman::sob_write_value(1, true), qman::Barriers{true, true, true});
}

recipe::QueueJob QueueProgram::take() {
  recipe::QueueJob job;
  job.set_queue_id(static_cast<uint32_t>(queue_));
  job.set_external(external_);
  const std::vector<uint8_t> bytes = builder_.take();
  job.set_command_buffer(bytes.data(), bytes.size());
  for (recipe::Patch& p : patches_) *job.add_patches() = std::move(p);
  patches_.clear();
  written_.clear();   // the next job may run after another launch's on the same engine
  return job;
}

}  // namespace hpusim::synapse::compiler
