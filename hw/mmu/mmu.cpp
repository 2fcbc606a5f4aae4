#include "hw/mmu/mmu.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "arch/hex.h"

namespace hpusim::hw {

// One request of the master, from acceptance to its response.
struct Mmu::Job {
  tlm::tlm_generic_payload* trans = nullptr;
  Picoseconds arrival = 0;
  uint32_t outstanding = 0;
  Picoseconds done = 0;
  tlm::tlm_response_status status = tlm::TLM_OK_RESPONSE;
};

// One per-page piece of a request, forwarded to the fabric.
struct Mmu::Part : tlm::tlm_generic_payload {
  Job* job = nullptr;
};

namespace {
}  // namespace

Mmu::Mmu(sc_core::sc_module_name name, const MmuConfig& config)
    : sc_module(name), target("target"), initiator("initiator"), walker("walker"), config_(config) {
  if (config_.tlb_entries == 0) throw std::invalid_argument(std::string(this->name()) + ": TLB needs an entry");
  if (config_.asids == 0) throw std::invalid_argument(std::string(this->name()) + ": at least one ASID");
  if (config_.va_end < config_.va_start) throw std::invalid_argument(std::string(this->name()) + ": empty VA range");
  hop0_.assign(config_.asids, std::nullopt);
  tlb_.assign(config_.tlb_entries, TlbEntry{});
  pte_cache_.assign(config_.pte_cache_lines, PteLine{});
  target.register_nb_transport_fw(this, &Mmu::forward);
  target.register_transport_dbg(this, &Mmu::debug);
  initiator.register_nb_transport_bw(this, &Mmu::backward);
  SC_HAS_PROCESS(Mmu);
  SC_THREAD(walker_thread);
}

Mmu::~Mmu() = default;

void Mmu::set_hop0(uint32_t asid, uint64_t table_pa) {
  if (asid >= config_.asids) throw std::out_of_range(std::string(name()) + ": ASID " + std::to_string(asid));
  if (table_pa % pte::kTableBytes) throw std::invalid_argument(std::string(name()) + ": hop0 " + hex(table_pa) + " not 4 KB aligned");
  hop0_[asid] = table_pa;
}

void Mmu::set_asid(uint32_t asid) {
  if (asid >= config_.asids) throw std::out_of_range(std::string(name()) + ": ASID " + std::to_string(asid));
  asid_ = asid;
}

void Mmu::pte_cache_clear() {
  for (PteLine& line : pte_cache_) line.valid = false;
}

void Mmu::invalidate_all() {
  for (TlbEntry& e : tlb_) e.valid = false;
  pte_cache_clear();
  ++epoch_;
  ++stats_.invalidations;
}

void Mmu::invalidate_range(uint64_t va, uint64_t size) {
  const uint64_t end = va + size < va ? ~uint64_t{0} : va + size;
  for (TlbEntry& e : tlb_) {
    if (!e.valid) continue;
    const uint64_t page = e.vpn << e.page_shift;
    const uint64_t page_end = page + (uint64_t{1} << e.page_shift);
    if (page < end && va < page_end) e.valid = false;
  }
  pte_cache_clear();
  ++epoch_;
  ++stats_.invalidations;
}

void Mmu::reset() {
  enabled_ = false;
  asid_ = 0;
  hop0_.assign(config_.asids, std::nullopt);
  for (TlbEntry& e : tlb_) e.valid = false;
  pte_cache_clear();
  ++epoch_;
}

uint32_t Mmu::tlb_valid_entries() const {
  return static_cast<uint32_t>(std::count_if(tlb_.begin(), tlb_.end(), [](const TlbEntry& e) { return e.valid; }));
}

uint32_t Mmu::pte_cache_valid_lines() const {
  return static_cast<uint32_t>(
      std::count_if(pte_cache_.begin(), pte_cache_.end(), [](const PteLine& l) { return l.valid; }));
}

void Mmu::refresh_props() {
  if (!props_source_) return;
  const uint32_t props = props_source_();
  bypass_ = (props & kPropsBypass) != 0;
  const uint32_t asid = props & kPropsAsidMask;
  if (asid < config_.asids) asid_ = asid;
}

bool Mmu::translated(uint64_t va) const {
  return enabled_ && !bypass_ && va >= config_.va_start && va < config_.va_end;
}

Mmu::TlbEntry* Mmu::tlb_find(uint32_t asid, uint64_t va) {
  for (TlbEntry& e : tlb_) {
    if (e.valid && e.asid == asid && (va >> e.page_shift) == e.vpn) return &e;
  }
  return nullptr;
}

void Mmu::tlb_insert(uint32_t asid, uint64_t va, uint32_t page_shift, uint64_t frame) {
  // An invalid entry if there is one (lowest index first), else the least recently used.
  TlbEntry* victim = &tlb_[0];
  for (TlbEntry& e : tlb_) {
    if (!e.valid) {
      victim = &e;
      break;
    }
    if (e.last_use < victim->last_use) victim = &e;
  }
  victim->valid = true;
  victim->asid = asid;
  victim->vpn = va >> page_shift;
  victim->page_shift = page_shift;
  victim->frame = frame;
  victim->last_use = ++use_clock_;
}

bool Mmu::fetch_pte(uint64_t pa, uint64_t& value) {
  if (pte_cache_.empty()) {
    ++stats_.pte_reads;
    return walker.read(pa, &value, sizeof value) == tlm::TLM_OK_RESPONSE;
  }
  const uint64_t line_address = pa & ~uint64_t{kPteLineBytes - 1};
  const uint32_t slot = static_cast<uint32_t>((pa - line_address) / pte::kSize);
  for (PteLine& line : pte_cache_) {
    if (line.valid && line.address == line_address) {
      ++stats_.pte_cache_hits;
      line.last_use = ++pte_use_clock_;
      value = line.ptes[slot];
      if (config_.lookup_cycles != 0) sc_core::wait(ps_to_time(Picoseconds{config_.lookup_cycles} * config_.period_ps));
      return true;
    }
  }
  ++stats_.pte_cache_misses;
  ++stats_.pte_reads;
  const uint64_t epoch = epoch_;
  std::array<uint64_t, kPtesPerLine> ptes{};
  if (walker.read(line_address, ptes.data(), kPteLineBytes) != tlm::TLM_OK_RESPONSE) return false;
  value = ptes[slot];
  // A line read overtaken by an invalidation may hold stale PTEs: used by this walk, not kept.
  if (epoch != epoch_) return true;
  // An invalid line if there is one (lowest index first), else the least recently used.
  PteLine* victim = &pte_cache_[0];
  for (PteLine& line : pte_cache_) {
    if (!line.valid) {
      victim = &line;
      break;
    }
    if (line.last_use < victim->last_use) victim = &line;
  }
  victim->valid = true;
  victim->address = line_address;
  victim->last_use = ++pte_use_clock_;
  victim->ptes = ptes;
  return true;
}

template <typename Read>
std::optional<std::pair<uint64_t, uint32_t>> Mmu::walk_with(uint32_t asid, uint64_t va, Read read) {
  if (!hop0_[asid] || (va >> pte::kVaBits)) return std::nullopt;
  uint64_t table = *hop0_[asid];
  for (uint32_t hop = 0; hop < pte::kHops; ++hop) {
    uint64_t value = 0;
    if (!read(table + pte::hop_index(va, hop) * pte::kSize, value)) return std::nullopt;
    if (!(value & pte::kPresent)) return std::nullopt;
    if (hop == 3 && (value & pte::kLast)) return std::make_pair(value & pte::kAddressMask & ~(pte::k2M - 1), 21u);
    if (hop == 4) return std::make_pair(value & pte::kAddressMask, 12u);
    table = value & pte::kAddressMask;
  }
  return std::nullopt;
}

Mmu::Lookup Mmu::resolve(const tlm::tlm_generic_payload& trans, std::vector<Segment>& out, bool may_walk,
                         bool count, uint64_t* fault_va) {
  out.clear();
  refresh_props();
  const uint64_t start = trans.get_address();
  const uint32_t length = trans.get_data_length();
  for (uint32_t offset = 0; offset < length;) {
    const uint64_t va = start + offset;
    const uint32_t remaining = length - offset;
    uint32_t piece = remaining;
    if (!translated(va)) {
      if (enabled_ && !bypass_ && !config_.passthrough_outside) {
        *fault_va = va;
        return Lookup::kFault;
      }
      // Physical up to the start of the translated range (or the end of the request).
      if (enabled_ && va < config_.va_start && config_.va_start - va < remaining) {
        piece = static_cast<uint32_t>(config_.va_start - va);
      }
      out.push_back({va, va, offset, piece});
      if (count) ++stats_.passthrough;
      offset += piece;
      continue;
    }
    uint64_t frame;
    uint32_t shift;
    if (TlbEntry* e = tlb_find(asid_, va)) {
      frame = e->frame;
      shift = e->page_shift;
      if (count) {
        ++stats_.translations;
        ++stats_.tlb_hits;
        e->last_use = ++use_clock_;
      }
    } else {
      if (!may_walk) return Lookup::kMiss;
      if (count) {
        ++stats_.translations;
        ++stats_.tlb_misses;
      }
      const uint64_t epoch = epoch_;
      const Picoseconds began = now_ps();
      ++stats_.walks;
      auto result = walk_with(asid_, va, [this](uint64_t pa, uint64_t& value) { return fetch_pte(pa, value); });
      stats_.walk_ps += now_ps() - began;
      if (!result) {
        *fault_va = va;
        return Lookup::kFault;
      }
      frame = result->first;
      shift = result->second;
      // A walk overtaken by an invalidation serves this request but is not cached.
      if (epoch == epoch_) tlb_insert(asid_, va, shift, frame);
    }
    const uint64_t page_mask = (uint64_t{1} << shift) - 1;
    const uint64_t to_page_end = page_mask + 1 - (va & page_mask);
    const uint64_t to_range_end = config_.va_end - va;
    piece = static_cast<uint32_t>(std::min<uint64_t>({remaining, to_page_end, to_range_end}));
    out.push_back({va, frame | (va & page_mask), offset, piece});
    offset += piece;
  }
  return Lookup::kResolved;
}

Mmu::Job* Mmu::acquire_job() {
  if (free_jobs_.empty()) {
    jobs_.push_back(std::make_unique<Job>());
    return jobs_.back().get();
  }
  Job* job = free_jobs_.back();
  free_jobs_.pop_back();
  return job;
}

Mmu::Part* Mmu::acquire_part() {
  if (free_parts_.empty()) {
    parts_.push_back(std::make_unique<Part>());
    parts_.back()->set_extension(new IssuerExtension);   // the payload owns it
    return parts_.back().get();
  }
  Part* part = free_parts_.back();
  free_parts_.pop_back();
  return part;
}

tlm::tlm_sync_enum Mmu::forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) throw std::logic_error(std::string(name()) + ": unexpected phase on the forward path");
  ++stats_.requests;
  Job* job = acquire_job();
  job->trans = &trans;
  job->arrival = now_ps() + delay.value();
  job->outstanding = 0;
  job->done = 0;
  job->status = tlm::TLM_OK_RESPONSE;
  if (trans.get_data_length() == 0) {
    respond(job, tlm::TLM_GENERIC_ERROR_RESPONSE, job->arrival + config_.period_ps);
    return tlm::TLM_ACCEPTED;
  }
  // In order: a request overtakes nothing that waits for the walker. Otherwise, when every page
  // hits the TLB (or passes), it goes at once.
  if (!walker_busy_ && queue_.empty()) {
    std::vector<Segment> segments;
    uint64_t fault_va = 0;
    if (resolve(trans, segments, false, false, &fault_va) != Lookup::kMiss) {
      const Lookup result = resolve(trans, segments, false, true, &fault_va);
      if (result == Lookup::kFault) {
        fail(job, fault_va, job->arrival);
      } else {
        dispatch(job, segments, job->arrival + config_.lookup_cycles * config_.period_ps);
      }
      return tlm::TLM_ACCEPTED;
    }
  }
  queue_.push_back(job);
  queue_event_.notify(sc_core::SC_ZERO_TIME);
  return tlm::TLM_ACCEPTED;
}

void Mmu::walker_thread() {
  // A member, not a local: SystemC discards a thread's stack without unwinding it, so a local would
  // leak whatever it holds when the simulation ends.
  std::vector<Segment>& segments = walker_segments_;
  while (true) {
    while (queue_.empty()) sc_core::wait(queue_event_);
    Job* job = queue_.front();
    if (job->arrival > now_ps()) {
      sc_core::wait(delay_until(job->arrival));
      continue;   // the queue may have changed meanwhile (a reset does not empty it, but be safe)
    }
    queue_.pop_front();
    walker_busy_ = true;
    uint64_t fault_va = 0;
    if (resolve(*job->trans, segments, true, true, &fault_va) == Lookup::kFault) {
      fail(job, fault_va, now_ps());
    } else {
      dispatch(job, segments, now_ps() + config_.lookup_cycles * config_.period_ps);
    }
    walker_busy_ = false;
  }
}

void Mmu::dispatch(Job* job, const std::vector<Segment>& segments, Picoseconds at) {
  tlm::tlm_generic_payload& trans = *job->trans;
  const bool split = segments.size() > 1;
  if (split) {
    ++stats_.split_requests;
    if (trans.get_byte_enable_ptr() != nullptr && trans.get_byte_enable_length() < trans.get_data_length()) {
      respond(job, tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE, at);
      return;
    }
    if (trans.get_streaming_width() < trans.get_data_length()) {
      respond(job, tlm::TLM_BURST_ERROR_RESPONSE, at);
      return;
    }
  }
  job->outstanding = static_cast<uint32_t>(segments.size());
  for (const Segment& s : segments) {
    Part* part = acquire_part();
    part->job = job;
    part->set_command(trans.get_command());
    part->set_address(s.pa);
    part->set_data_ptr(trans.get_data_ptr() + s.offset);
    part->set_data_length(s.length);
    if (split) {
      part->set_streaming_width(s.length);
      part->set_byte_enable_ptr(trans.get_byte_enable_ptr() ? trans.get_byte_enable_ptr() + s.offset : nullptr);
      part->set_byte_enable_length(trans.get_byte_enable_ptr() ? s.length : 0);
    } else {
      part->set_streaming_width(trans.get_streaming_width());
      part->set_byte_enable_ptr(trans.get_byte_enable_ptr());
      part->set_byte_enable_length(trans.get_byte_enable_length());
    }
    part->set_dmi_allowed(false);
    part->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    part->get_extension<IssuerExtension>()->issuer = issuer_of(trans);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = delay_until(at);
    // The response may come back from inside this call; `job` may be gone after the last part.
    initiator->nb_transport_fw(*part, phase, delay);
  }
}

tlm::tlm_sync_enum Mmu::backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_RESP) throw std::logic_error(std::string(name()) + ": unexpected phase on the backward path");
  Part& part = static_cast<Part&>(trans);
  Job* job = part.job;
  if (job == nullptr) throw std::logic_error(std::string(name()) + ": response for a request it never sent");
  if (job->status == tlm::TLM_OK_RESPONSE) job->status = part.get_response_status();
  job->done = std::max<Picoseconds>(job->done, now_ps() + delay.value());
  part.job = nullptr;
  free_parts_.push_back(&part);
  if (--job->outstanding == 0) respond(job, job->status, job->done);
  return tlm::TLM_COMPLETED;
}

void Mmu::fail(Job* job, uint64_t va, Picoseconds detected) {
  ++stats_.faults;
  if (observer_ != nullptr) {
    MmuFault fault;
    fault.engine = config_.engine;
    fault.engine_id = config_.engine_id;
    fault.virtual_address = va;
    fault.is_write = job->trans->is_write();
    fault.at = detected;
    observer_->page_fault(fault);
  }
  respond(job, tlm::TLM_ADDRESS_ERROR_RESPONSE, detected + config_.fault_cycles * config_.period_ps);
}

void Mmu::respond(Job* job, tlm::tlm_response_status status, Picoseconds at) {
  tlm::tlm_generic_payload& trans = *job->trans;
  job->trans = nullptr;
  free_jobs_.push_back(job);
  trans.set_response_status(status);
  tlm::tlm_phase phase = tlm::BEGIN_RESP;
  sc_core::sc_time delay = delay_until(at);
  target->nb_transport_bw(trans, phase, delay);
}

unsigned Mmu::debug(tlm::tlm_generic_payload& trans) {
  const uint64_t start = trans.get_address();
  const uint32_t length = trans.get_data_length();
  uint32_t done = 0;
  auto read_pte = [this](uint64_t pa, uint64_t& value) {
    tlm::tlm_generic_payload read;
    read.set_command(tlm::TLM_READ_COMMAND);
    read.set_address(pa);
    read.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
    read.set_data_length(sizeof value);
    read.set_streaming_width(sizeof value);
    return initiator->transport_dbg(read) == sizeof value;
  };
  while (done < length) {
    const uint64_t va = start + done;
    uint32_t piece = length - done;
    uint64_t pa = va;
    if (translated(va)) {
      auto result = walk_with(asid_, va, read_pte);
      if (!result) break;
      const uint64_t page_mask = (uint64_t{1} << result->second) - 1;
      pa = result->first | (va & page_mask);
      piece = static_cast<uint32_t>(std::min<uint64_t>(piece, page_mask + 1 - (va & page_mask)));
    } else if (enabled_ && !bypass_ && !config_.passthrough_outside) {
      break;
    } else if (enabled_ && va < config_.va_start && config_.va_start - va < piece) {
      piece = static_cast<uint32_t>(config_.va_start - va);
    }
    tlm::tlm_generic_payload sub;
    sub.set_command(trans.get_command());
    sub.set_address(pa);
    sub.set_data_ptr(trans.get_data_ptr() + done);
    sub.set_data_length(piece);
    sub.set_streaming_width(piece);
    const unsigned moved = initiator->transport_dbg(sub);
    done += std::min<uint32_t>(moved, piece);
    if (moved != piece) break;
  }
  trans.set_response_status(done == length ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE);
  return done;
}

void Mmu::register_stats(stats::Scope scope) {
  const auto add = [&](const char* name, const char* unit, const char* desc, uint64_t MmuStats::*field) {
    scope.formula(name, unit, desc, [this, field] { return double(stats_.*field); });
  };
  add("requests", "count", "requests from the engine", &MmuStats::requests);
  add("tlb_hits", "count", "TLB hits", &MmuStats::tlb_hits);
  add("tlb_misses", "count", "TLB misses", &MmuStats::tlb_misses);
  add("walks", "count", "page-table walks", &MmuStats::walks);
  add("pte_reads", "count", "PTE reads through the fabric", &MmuStats::pte_reads);
  add("walk_ps", "ps", "time walking", &MmuStats::walk_ps);
  add("faults", "count", "page faults", &MmuStats::faults);
  add("invalidations", "count", "cache invalidations", &MmuStats::invalidations);
}

}  // namespace hpusim::hw
