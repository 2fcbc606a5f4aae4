#include "hw/tpc/prefetch_buffer.h"

namespace hpusim::hw {

void TpcPrefetchBuffer::clear() {
  for (Entry& e : entries_) e = Entry{};
  dropped_ = evicted_ = 0;
}

bool TpcPrefetchBuffer::covers(uint64_t address, uint32_t bytes) const {
  for (const Entry& e : entries_) {
    if (usable(e) && e.address <= address && address + bytes <= e.address + e.bytes) return true;
  }
  return false;
}

std::optional<uint32_t> TpcPrefetchBuffer::allocate(uint64_t address, uint32_t bytes, uint64_t now) {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.in_use) continue;
    e = Entry{};
    e.in_use = true;
    e.address = address;
    e.bytes = bytes;
    return static_cast<uint32_t>(i);
  }
  // Full: an entry whose data arrived stale_cycles_ ago or more and that no load has taken makes
  // room (a read the kernel will not use, such as rows past this core's share), the oldest first.
  // Younger entries stay: a stream that prefetches ahead uses its oldest entries next.
  Entry* oldest = nullptr;
  for (Entry& e : entries_)
    if (usable(e) && e.arrival != kPending && e.arrival + stale_cycles_ <= now &&
        (oldest == nullptr || e.arrival < oldest->arrival))
      oldest = &e;
  if (oldest != nullptr) {
    ++evicted_;
    *oldest = Entry{};
    oldest->in_use = true;
    oldest->address = address;
    oldest->bytes = bytes;
    return static_cast<uint32_t>(oldest - entries_.data());
  }
  ++dropped_;
  return std::nullopt;
}

TpcPrefetchBuffer::Take TpcPrefetchBuffer::take(uint64_t address, uint32_t bytes, int waiter, uint64_t& arrival) {
  for (Entry& e : entries_) {
    if (!usable(e) || e.address > address || address + bytes > e.address + e.bytes) continue;
    if (e.arrival != kPending) {
      arrival = e.arrival;
      e = Entry{};
      return Take::Arrived;
    }
    e.taken = true;
    e.waiter = waiter;
    return Take::Pending;
  }
  return Take::Miss;
}

int TpcPrefetchBuffer::arrived(uint32_t id, uint64_t cycle) {
  Entry& e = entries_[id];
  const int waiter = e.waiter;
  if (e.taken || e.stale) {
    e = Entry{};
  } else {
    e.arrival = cycle;
  }
  return waiter;
}

void TpcPrefetchBuffer::invalidate(uint64_t address, uint32_t bytes) {
  for (Entry& e : entries_) {
    if (!usable(e) || address >= e.address + e.bytes || e.address >= address + bytes) continue;
    if (e.arrival == kPending) {
      e.stale = true;
    } else {
      e = Entry{};
    }
  }
}

}  // namespace hpusim::hw
