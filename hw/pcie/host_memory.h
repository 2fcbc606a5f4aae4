// The host's physical memory as the device sees it through the PCIe host window.
//
// Host bus address P (device address host_window_base + P) is served either by a sparse
// BackingStore (the default: memory the driver allocates for its own use — queues, patched CBs)
// or, inside a pinned range, by real process memory: pin(P, pointer, bytes) makes
// [P, P + bytes) alias the caller's buffer, so device reads see what the process wrote and
// device writes land in the process's buffer. That is how a user buffer mapped with
// HL_MEM_USERPTR is reached (the driver pins its pages and maps them in the device MMU).
//
// Accesses may span pinned and unpinned parts; they are split at every range boundary.
//
// Thread safety: none, like BackingStore. Use it only from the simulation thread. A pinned
// buffer is read and written by the simulation thread while pinned; the process must not touch
// it concurrently (the co-simulation hands control back and forth, so host code running between
// simulator calls is fine).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "hw/backing_store/backing_store.h"

namespace hpusim::hw {

class HostMemory {
 public:
  // Granule of pinning: phys, memory and bytes of pin() are multiples of it (host pages).
  static constexpr uint64_t kPinAlignment = 4096;

  // Host bus addresses [0, size), backed by a BackingStore named `name` with `page_bytes` pages.
  // Invalid parameters throw std::invalid_argument (from the store).
  HostMemory(std::string name, uint64_t size, uint32_t page_bytes = mem::BackingStore::kDefaultPageBytes);

  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  HostMemory(HostMemory&&) = delete;
  HostMemory& operator=(HostMemory&&) = delete;

  // The BackingStore API, split over pinned ranges. An access not fully inside [0, size)
  // throws mem::AccessError before touching anything; a zero-length access is a no-op.
  void read(uint64_t addr, void* dst, uint64_t len) const;
  void write(uint64_t addr, const void* src, uint64_t len);
  // memset. On unpinned parts it behaves as BackingStore::fill (filling whole store pages with
  // 0 releases them); on pinned parts it sets the caller's memory.
  void fill(uint64_t addr, uint8_t value, uint64_t len);
  bool contains(uint64_t addr, uint64_t len) const { return store_.contains(addr, len); }

  // Makes [phys, phys + bytes) alias `memory` (which must stay valid until unpin). phys, memory
  // and bytes must be multiples of kPinAlignment, memory non-null and bytes non-zero; the range
  // must lie in [0, size) and must not overlap another pinned range. Otherwise
  // std::invalid_argument names the problem and nothing changes. Whatever the store held under
  // the range is discarded: after unpin() the range reads as zero until written again.
  void pin(uint64_t phys, uint8_t* memory, uint64_t bytes);
  // Removes the pinned range that starts at phys (std::invalid_argument if none does). The
  // caller's memory is no longer touched.
  void unpin(uint64_t phys);
  // True when host bus address phys lies inside a pinned range.
  bool pinned(uint64_t phys) const;
  // Total bytes of all pinned ranges, and their number.
  uint64_t pinned_bytes() const { return pinned_bytes_; }
  uint64_t pinned_ranges() const { return pins_.size(); }

  // The store's figures (pinned memory belongs to the process and is not counted).
  const std::string& name() const { return store_.name(); }
  uint64_t size() const { return store_.size(); }
  uint32_t page_bytes() const { return store_.page_bytes(); }
  uint64_t page_count() const { return store_.page_count(); }
  uint64_t pages_touched() const { return store_.pages_touched(); }
  uint64_t resident_bytes() const { return store_.resident_bytes(); }

 private:
  struct Pin {
    uint8_t* memory;
    uint64_t bytes;
  };
  void check(uint64_t addr, uint64_t len, const char* op) const;
  // Calls on_pinned(pointer, offset_in_access, n) or on_store(address, offset_in_access, n) for
  // each consecutive piece of [addr, addr + len), in address order. The range must be checked.
  template <typename OnPinned, typename OnStore>
  void split(uint64_t addr, uint64_t len, OnPinned&& on_pinned, OnStore&& on_store) const;

  mem::BackingStore store_;
  std::map<uint64_t, Pin> pins_;   // by first host bus address; ranges never overlap
  uint64_t pinned_bytes_ = 0;
};

}  // namespace hpusim::hw
