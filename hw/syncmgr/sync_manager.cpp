#include "hw/syncmgr/sync_manager.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "arch/hex.h"

namespace hpusim::hw {
namespace {

constexpr uint32_t kSobValueMask = 0x7FFF;      // val[14:0]
constexpr uint32_t kSobAddBit = 1u << 31;       // inc: 1 = ADD, 0 = SET
constexpr uint32_t kSobsPerGroup = 8;
constexpr uint32_t kMaxGroups = 256;            // sid is 8 bits
constexpr uint32_t kStatusValidBit = 1u << 0;
constexpr unsigned kStatusPendingShift = 1;     // pending[8:1]

// Tags a payload transaction with its slot, so a response finds its slot without a search.
struct SlotTag : tlm::tlm_extension<SlotTag> {
  uint32_t slot = 0;
  tlm_extension_base* clone() const override { return new SlotTag(*this); }
  void copy_from(const tlm_extension_base& other) override { slot = static_cast<const SlotTag&>(other).slot; }
};

}  // namespace

struct SyncManager::PayloadSlot {
  tlm::tlm_generic_payload trans;
  uint32_t data = 0;
  uint32_t monitor = 0;
  uint64_t address = 0;
};

SyncManager::SyncManager(const SyncManagerConfig& config)
    : SyncManager(sc_core::sc_module_name(config.name.c_str()), config) {}

SyncManager::SyncManager(sc_core::sc_module_name name, const SyncManagerConfig& config)
    : sc_module(name), payload_socket("payload_socket"), config_(config) {
  if (config_.name.empty()) throw std::invalid_argument("sync manager: empty block name");
  const std::string who = "sync manager " + config_.name + ": ";
  if (config_.sobs == 0 || config_.sobs % kSobsPerGroup != 0 || config_.sobs / kSobsPerGroup > kMaxGroups) {
    throw std::invalid_argument(who + "sobs must be a positive multiple of 8 and at most 2048, got " +
                                std::to_string(config_.sobs));
  }
  if (config_.monitors == 0) throw std::invalid_argument(who + "needs at least one monitor");
  groups_ = config_.sobs / kSobsPerGroup;

  const SyncManagerLayout& l = config_.layout;
  const uint64_t sob_bytes = uint64_t{config_.sobs} * 4;
  const uint64_t mon_bytes = uint64_t{config_.monitors} * 4;
  arrays_[0] = {l.sob_obj, l.sob_obj + sob_bytes, Reg::kSob};
  arrays_[1] = {l.mon_pay_addrl, l.mon_pay_addrl + mon_bytes, Reg::kPayAddrL};
  arrays_[2] = {l.mon_pay_addrh, l.mon_pay_addrh + mon_bytes, Reg::kPayAddrH};
  arrays_[3] = {l.mon_pay_data, l.mon_pay_data + mon_bytes, Reg::kPayData};
  arrays_[4] = {l.mon_arm, l.mon_arm + mon_bytes, Reg::kArm};
  arrays_[5] = {l.mon_status, l.mon_status + mon_bytes, Reg::kStatus};
  static const char* const kNames[6] = {"sob_obj", "mon_pay_addrl", "mon_pay_addrh", "mon_pay_data", "mon_arm",
                                        "mon_status"};
  uint64_t end = 0;
  for (int i = 0; i < 6; ++i) {
    if (arrays_[i].begin % 4 != 0) {
      throw std::invalid_argument(who + kNames[i] + " offset " + hex(arrays_[i].begin) + " is not 4-byte aligned");
    }
    for (int j = 0; j < i; ++j) {
      if (arrays_[i].begin < arrays_[j].end && arrays_[j].begin < arrays_[i].end) {
        throw std::invalid_argument(who + kNames[i] + " overlaps " + kNames[j]);
      }
    }
    end = std::max(end, arrays_[i].end);
  }
  if (l.block_bytes != 0 && l.block_bytes < end) {
    throw std::invalid_argument(who + "block_bytes " + hex(l.block_bytes) + " is smaller than the register arrays (" +
                                hex(end) + ")");
  }
  size_bytes_ = l.block_bytes != 0 ? l.block_bytes : end;
  // Decode the most frequently written array (SOBs) first, then monitors in programming order.
  std::stable_sort(std::begin(arrays_) + 1, std::end(arrays_),
                   [](const Array& a, const Array& b) { return a.begin < b.begin; });

  sobs_.assign(config_.sobs, 0);
  monitors_.assign(config_.monitors, Monitor{});
  group_head_.assign(groups_, -1);
  group_tail_.assign(groups_, -1);
  pending_.reserve(1024);
  slots_.reserve(64);
  free_slots_.reserve(64);

  payload_socket.register_nb_transport_bw(this, &SyncManager::payload_response);
  SC_HAS_PROCESS(SyncManager);
  SC_METHOD(apply_due);
  sensitive << pending_.event();
  dont_initialize();
}

SyncManager::~SyncManager() = default;

bool SyncManager::decode(uint64_t offset, Reg& reg, uint32_t& index) const {
  if (offset % 4 != 0) return false;
  for (const Array& a : arrays_) {
    if (offset >= a.begin && offset < a.end) {
      reg = a.reg;
      index = static_cast<uint32_t>((offset - a.begin) / 4);
      return true;
    }
  }
  return false;
}

bool SyncManager::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  Reg reg;
  uint32_t index;
  if (!decode(offset, reg, index) || (reg == Reg::kArm && (value & 0xFF) >= groups_)) {
    ++stats_.rejected_accesses;
    return false;
  }
  pending_.submit(at_ps, PendingWrite{index, value, reg});
  return true;
}

bool SyncManager::read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) {
  Reg reg;
  uint32_t index;
  if (!decode(offset, reg, index)) {
    ++stats_.rejected_accesses;
    return false;
  }
  apply_until(at_ps);
  ++stats_.register_reads;
  switch (reg) {
    case Reg::kSob: value = sobs_[index]; break;
    case Reg::kPayAddrL: value = monitors_[index].pay_addrl; break;
    case Reg::kPayAddrH: value = monitors_[index].pay_addrh; break;
    case Reg::kPayData: value = monitors_[index].pay_data; break;
    case Reg::kArm: value = monitors_[index].arm; break;
    case Reg::kStatus: value = status_word(index); break;
  }
  return true;
}

void SyncManager::apply_due() { pending_.on_event(); }

void SyncManager::apply(const PendingWrite& w, Picoseconds at) {
  switch (w.reg) {
    case Reg::kSob: write_sob(w.index, w.value, at); break;
    case Reg::kPayAddrL: monitors_[w.index].pay_addrl = w.value; break;
    case Reg::kPayAddrH: monitors_[w.index].pay_addrh = w.value; break;
    case Reg::kPayData: monitors_[w.index].pay_data = w.value; break;
    case Reg::kArm: arm(w.index, w.value, at); break;
    case Reg::kStatus:
      // Clearing valid (what the driver does when it scrubs a context) disarms; a monitor is only
      // armed through mon_arm.
      if ((w.value & kStatusValidBit) == 0) disarm(w.index);
      break;
  }
}

void SyncManager::write_sob(uint32_t sob, uint32_t value, Picoseconds at) {
  uint32_t& s = sobs_[sob];
  s = (value & kSobAddBit) ? (s + (value & kSobValueMask)) & kSobValueMask : value & kSobValueMask;
  ++stats_.sob_writes;
  if (observer_ != nullptr) observer_->sob_updated(config_.name, sob, s, at);
  const uint32_t group = sob / kSobsPerGroup;
  const uint8_t bit = static_cast<uint8_t>(1u << (sob % kSobsPerGroup));
  for (int32_t m = group_head_[group]; m >= 0;) {
    const int32_t next = monitors_[m].next;  // fire() unlinks m
    const Monitor& mon = monitors_[m];
    // Only a watched SOB can turn a monitor's condition from false to true.
    if ((mon.watched & bit) != 0 && unmet(mon) == 0) fire(static_cast<uint32_t>(m), at);
    m = next;
  }
}

uint8_t SyncManager::unmet(const Monitor& mon) const {
  const uint32_t* group = &sobs_[mon.group * kSobsPerGroup];
  uint8_t failing = 0;
  for (uint32_t i = 0; i < kSobsPerGroup; ++i) {
    if ((mon.watched & (1u << i)) == 0) continue;
    const bool ok = mon.equal ? group[i] == mon.target : group[i] >= mon.target;
    if (!ok) failing |= static_cast<uint8_t>(1u << i);
  }
  return failing;
}

void SyncManager::arm(uint32_t monitor, uint32_t value, Picoseconds at) {
  Monitor& mon = monitors_[monitor];
  if (mon.armed) unlink(monitor);
  mon.arm = value;
  mon.group = value & 0xFF;
  mon.watched = static_cast<uint8_t>(~(value >> 8) & 0xFF);
  mon.equal = ((value >> 16) & 1) != 0;
  mon.target = (value >> 17) & kSobValueMask;
  ++stats_.monitor_arms;
  // Evaluated at once; with every SOB masked the condition holds vacuously and it fires now.
  if (unmet(mon) == 0) {
    mon.armed = false;
    issue_payload(monitor, at);
  } else {
    mon.armed = true;
    link(monitor);
  }
}

void SyncManager::disarm(uint32_t monitor) {
  Monitor& mon = monitors_[monitor];
  if (!mon.armed) return;
  unlink(monitor);
  mon.armed = false;
}

void SyncManager::link(uint32_t monitor) {
  Monitor& mon = monitors_[monitor];
  const int32_t self = static_cast<int32_t>(monitor);
  mon.next = -1;
  mon.prev = group_tail_[mon.group];
  if (mon.prev >= 0) monitors_[mon.prev].next = self;
  else group_head_[mon.group] = self;
  group_tail_[mon.group] = self;
}

void SyncManager::unlink(uint32_t monitor) {
  Monitor& mon = monitors_[monitor];
  if (mon.prev >= 0) monitors_[mon.prev].next = mon.next;
  else group_head_[mon.group] = mon.next;
  if (mon.next >= 0) monitors_[mon.next].prev = mon.prev;
  else group_tail_[mon.group] = mon.prev;
  mon.prev = mon.next = -1;
}

void SyncManager::fire(uint32_t monitor, Picoseconds at) {
  unlink(monitor);
  monitors_[monitor].armed = false;
  issue_payload(monitor, at);
}

void SyncManager::issue_payload(uint32_t monitor, Picoseconds at) {
  const Monitor& mon = monitors_[monitor];
  const uint64_t address = (uint64_t{mon.pay_addrh} << 32) | mon.pay_addrl;
  ++stats_.monitor_fires;
  if (observer_ != nullptr) observer_->monitor_fired(config_.name, monitor, address, mon.pay_data, at);

  if (free_slots_.empty()) {
    auto slot = std::make_unique<PayloadSlot>();
    auto* tag = new SlotTag;
    tag->slot = static_cast<uint32_t>(slots_.size());
    slot->trans.set_extension(tag);
    free_slots_.push_back(tag->slot);
    slots_.push_back(std::move(slot));
  }
  const uint32_t index = free_slots_.back();
  free_slots_.pop_back();
  PayloadSlot& slot = *slots_[index];
  slot.data = mon.pay_data;
  slot.monitor = monitor;
  slot.address = address;
  tlm::tlm_generic_payload& t = slot.trans;
  t.set_command(tlm::TLM_WRITE_COMMAND);
  t.set_address(address);
  t.set_data_ptr(reinterpret_cast<unsigned char*>(&slot.data));
  t.set_data_length(4);
  t.set_streaming_width(4);
  t.set_byte_enable_ptr(nullptr);
  t.set_dmi_allowed(false);
  t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  ++in_flight_;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = delay_until(at + config_.payload_latency_ps);
  // The response may come back from inside this call; the slot is not touched after it.
  payload_socket->nb_transport_fw(t, phase, delay);
}

tlm::tlm_sync_enum SyncManager::payload_response(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                                 sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_RESP) throw std::logic_error("sync manager " + config_.name + ": unexpected phase");
  SlotTag* tag = nullptr;
  trans.get_extension(tag);
  if (tag == nullptr || tag->slot >= slots_.size() || &slots_[tag->slot]->trans != &trans) {
    throw std::logic_error("sync manager " + config_.name + ": response for a write it never issued");
  }
  const uint32_t monitor = slots_[tag->slot]->monitor;
  const uint64_t address = slots_[tag->slot]->address;
  const bool ok = trans.get_response_status() == tlm::TLM_OK_RESPONSE;
  ++stats_.payload_responses;
  if (!ok) ++stats_.payload_errors;
  --in_flight_;
  free_slots_.push_back(tag->slot);
  if (observer_ != nullptr) observer_->payload_done(config_.name, monitor, address, ok, now_ps() + delay.value());
  return tlm::TLM_COMPLETED;
}

uint32_t SyncManager::status_word(uint32_t monitor) const {
  const Monitor& mon = monitors_[monitor];
  if (!mon.armed) return 0;
  return kStatusValidBit | (uint32_t{unmet(mon)} << kStatusPendingShift);
}

uint32_t SyncManager::sob_value(uint32_t sob) {
  if (sob >= sobs_.size()) throw std::out_of_range("sync manager " + config_.name + ": no SOB " + std::to_string(sob));
  apply_until(now_ps());
  return sobs_[sob];
}

bool SyncManager::monitor_armed(uint32_t monitor) {
  if (monitor >= monitors_.size()) {
    throw std::out_of_range("sync manager " + config_.name + ": no monitor " + std::to_string(monitor));
  }
  apply_until(now_ps());
  return monitors_[monitor].armed;
}

void SyncManager::reset() {
  // Writes that took effect before the reset happened (and may have fired monitors); then clear.
  apply_until(now_ps());
  std::fill(sobs_.begin(), sobs_.end(), 0u);
  std::fill(monitors_.begin(), monitors_.end(), Monitor{});
  std::fill(group_head_.begin(), group_head_.end(), -1);
  std::fill(group_tail_.begin(), group_tail_.end(), -1);
}

void SyncManager::register_stats(stats::Scope scope) {
  const auto count = [&](const char* name, const char* desc, uint64_t SyncManagerStats::*field) {
    scope.formula(name, "count", desc, [this, field] { return double(stats_.*field); });
  };
  count("sob_writes", "SET/ADD writes to sync objects", &SyncManagerStats::sob_writes);
  count("monitor_arms", "monitors armed", &SyncManagerStats::monitor_arms);
  count("monitor_fires", "monitor payloads written", &SyncManagerStats::monitor_fires);
  count("payload_errors", "payload writes answered with an error", &SyncManagerStats::payload_errors);
}

}  // namespace hpusim::hw
