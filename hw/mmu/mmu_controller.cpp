#include "hw/mmu/mmu_controller.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpusim::hw {

using namespace mmu_regs;

MmuController::MmuController(sc_core::sc_module_name name, const MmuControllerConfig& config)
    : sc_module(name), config_(config) {
  if (config_.period_ps == 0) throw std::invalid_argument(std::string(this->name()) + ": zero clock period");
  registers_.assign(kBlockBytes / 4, 0);
  pending_.reserve(64);
  SC_HAS_PROCESS(MmuController);
  SC_METHOD(apply_due);
  sensitive << pending_.event();
  dont_initialize();
}

MmuController::~MmuController() = default;

void MmuController::add(Mmu& mmu) {
  if (std::find(mmus_.begin(), mmus_.end(), &mmu) != mmus_.end()) {
    throw std::invalid_argument(std::string(name()) + ": " + mmu.name() + " added twice");
  }
  mmus_.push_back(&mmu);
  mmu.set_observer(this);
}

bool MmuController::read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) {
  if (offset % 4 != 0 || offset >= kBlockBytes) {
    ++stats_.rejected_accesses;
    return false;
  }
  apply_until(at_ps);
  ++stats_.register_reads;
  value = reg(offset);
  if (offset == kMmuBusy) value = (value & ~kBusyBit) | (at_ps < busy_until_ ? kBusyBit : 0);
  return true;
}

bool MmuController::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (offset % 4 != 0 || offset >= kBlockBytes) {
    ++stats_.rejected_accesses;
    return false;
  }
  ++stats_.register_writes;
  Pending p{};
  p.kind = Kind::kWrite;
  p.offset = static_cast<uint32_t>(offset);
  p.value = value;
  push(at_ps, p);
  return true;
}

void MmuController::page_fault(const MmuFault& fault) {
  ++stats_.faults;
  Pending p{};
  p.kind = Kind::kCapture;
  p.va = fault.virtual_address;
  p.engine_id = fault.engine_id;
  p.is_write = fault.is_write;
  push(fault.at, p);
  interrupt_line_.raise(fault.at);
  if (observer_ != nullptr) observer_->page_fault(fault);
}

void MmuController::apply_due() { pending_.on_event(); }

void MmuController::apply(const Pending& p, Picoseconds at) {
  switch (p.kind) {
    case Kind::kWrite:
      apply_write(p.offset, p.value, at);
      return;
    case Kind::kCapture:
      if ((reg(kPageErrorCapture) & kCaptureEntryValid) != 0) return;   // the first fault stays
      reg(kPageErrorCapture) = kCaptureEntryValid | (static_cast<uint32_t>(p.va >> 32) & kCaptureVa49_32Mask) |
                               (p.is_write ? kCaptureWrite : 0) |
                               ((p.engine_id & kCaptureEngineMask) << kCaptureEngineShift);
      reg(kPageErrorCaptureVa) = static_cast<uint32_t>(p.va);
      ++stats_.captured_faults;
      return;
    case Kind::kInvalidationDone:
      if (p.set_ci) reg(kStlbInvConsumerIndex) = p.value;
      if (invalidations_in_flight_ > 0 && --invalidations_in_flight_ == 0) {
        reg(kStlbInvPs) = 0;
        reg(kStlbInvAllStart) = 0;
      }
      return;
  }
}

void MmuController::apply_write(uint32_t offset, uint32_t value, Picoseconds at) {
  reg(offset) = value;
  switch (offset) {
    case kMmuEnable:
      for (Mmu* mmu : mmus_) mmu->set_enabled((value & 1) != 0);
      return;
    case kMmuBusy: {
      if ((value & kBusyBit) == 0) return;
      const uint32_t asid = (value | reg(kMmuAsid)) & kAsidMask;
      const uint64_t pa = (uint64_t{reg(kHop0Pa43_12)} << 12) | (uint64_t{reg(kHop0Pa49_44) & kHop0Pa49_44Mask} << 44);
      ++stats_.hop0_updates;
      for (Mmu* mmu : mmus_) {
        if (asid < mmu->config().asids) mmu->set_hop0(asid, pa);
        else ++stats_.hop0_errors;
      }
      busy_until_ = std::max(busy_until_, at + Picoseconds{config_.config_cycles} * config_.period_ps);
      return;
    }
    case kStlbCacheInv:
      start_invalidation(at, true, value & 0xFF);
      return;
    case kStlbInvPs:
      if (value == kInvPsGo) start_invalidation(at, false, 0);
      return;
    case kStlbInvAllStart:
      if ((value & 1) != 0) start_invalidation(at, false, 0);
      return;
    default:
      return;
  }
}

void MmuController::start_invalidation(Picoseconds at, bool set_ci, uint32_t ci) {
  ++stats_.invalidations;
  for (Mmu* mmu : mmus_) mmu->invalidate_all();
  ++invalidations_in_flight_;
  Pending done{};
  done.kind = Kind::kInvalidationDone;
  done.value = ci;
  done.set_ci = set_ci;
  push(at + Picoseconds{config_.invalidate_cycles} * config_.period_ps, done);
}

void MmuController::reset() {
  apply_until(now_ps());
  pending_.clear();
  std::fill(registers_.begin(), registers_.end(), 0u);
  busy_until_ = 0;
  invalidations_in_flight_ = 0;
  for (Mmu* mmu : mmus_) mmu->reset();
}

}  // namespace hpusim::hw
