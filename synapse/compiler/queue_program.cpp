#include "synapse/compiler/queue_program.h"

#include "arch/packets/sync_wait.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpusim::synapse::compiler {

uint64_t sob_address(uint32_t sob) { return regs::cfg_address(regs::sm_sob(regs::SyncManager::E_N, sob)); }

QueueProgram::QueueProgram(regs::QueueId queue, bool external, uint32_t monitor)
    : queue_(queue), external_(external), monitor_(monitor) {}

void QueueProgram::wait_for(uint32_t sob, uint16_t target) {
  qman::append_sob_wait(builder_, queue_, regs::SyncManager::E_N, monitor_, sob, target);
}

void QueueProgram::set_sob(uint32_t sob, uint16_t value, bool engine_barrier) {
  builder_.msg_long(sob_address(sob), qman::sob_write_value(value, false), qman::Barriers{engine_barrier, true, true});
}

void QueueProgram::append(const std::vector<uint8_t>& fragment, const RegisterRelocations& relocations) {
  const size_t base = builder_.size();
  size_t at = 0;
  while (at < fragment.size()) {
    const qman::DecodeResult decoded = qman::decode(fragment.data() + at, fragment.size() - at);
    if (!decoded.ok()) throw std::logic_error("compiler: an engine fragment does not decode: " + decoded.message);
    if (const auto* wreg = std::get_if<qman::Wreg32>(&decoded.packet)) {
      const auto found = relocations.find(wreg->reg_offset);
      if (found != relocations.end()) {
        const RegisterRelocation& r = found->second;
        const uint64_t address = r.target.placeholder();
        const uint32_t expected = static_cast<uint32_t>(r.field == recipe::FIELD_HIGH32 ? address >> 32 : address);
        if (wreg->value != expected) {
          throw std::logic_error("compiler: register 0x" + std::to_string(wreg->reg_offset) +
                                 " does not hold the placeholder it should");
        }
        recipe::Patch patch;
        patch.set_offset(static_cast<uint32_t>(base + at));   // WREG_32: the value is the first dword
        patch.set_field(r.field);
        patch.set_section(r.target.section);
        patch.set_index(r.target.index);
        patch.set_addend(r.target.addend);
        patches_.push_back(patch);
      }
    }
    at += decoded.size;
  }
  builder_.raw(fragment.data(), fragment.size());
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
      recipe::Patch patch;
      patch.set_offset(static_cast<uint32_t>(at + offset));   // LIN_DMA: tsize, ctl, src, dst
      patch.set_field(recipe::FIELD_ADDR64);
      patch.set_section(target.section);
      patch.set_index(target.index);
      patch.set_addend(target.addend);
      patches_.push_back(patch);
    }
  }
  builder_.msg_long(sob_address(sob), qman::sob_write_value(1, true), qman::Barriers{true, true, true});
}

recipe::QueueJob QueueProgram::take() {
  recipe::QueueJob job;
  job.set_queue_id(static_cast<uint32_t>(queue_));
  job.set_external(external_);
  const std::vector<uint8_t> bytes = builder_.take();
  job.set_command_buffer(bytes.data(), bytes.size());
  for (recipe::Patch& p : patches_) *job.add_patches() = std::move(p);
  patches_.clear();
  return job;
}

}  // namespace hpusim::synapse::compiler
