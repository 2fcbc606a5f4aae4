// Building blocks of the driver's memory management (driver/device_memory.cpp):
//
//  * ShadowPageTables: the device page tables as the driver keeps them (hl_mmu_v1's shadow hops):
//    every PTE the builder writes goes to a host-side shadow, reads never touch the device, and
//    flush() writes the changed 64-byte lines to device DRAM in as few block writes as possible.
//  * RangeAllocator: first-fit allocation of aligned ranges in an address window, with hints
//    (device virtual addresses, host physical pages for pinned user memory).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "driver/page_tables.h"

namespace hpusim::driver {

class ShadowPageTables : public PageTableMemory {
 public:
  static constexpr uint64_t kLineBytes = 64;

  void write64(uint64_t pa, uint64_t value) override;
  uint64_t read64(uint64_t pa) override;
  void zero(uint64_t pa, uint64_t bytes) override;

  // Writes every changed line to the device, coalescing adjacent lines, then forgets them.
  using BlockWriter = std::function<void(uint64_t device_address, const void* data, uint64_t bytes)>;
  void flush(const BlockWriter& write);
  // Marks every non-zero line changed (after something may have overwritten device memory).
  void mark_all_dirty();
  uint64_t dirty_lines() const { return dirty_.size(); }

 private:
  std::unordered_map<uint64_t, uint64_t> entries_;   // pa -> PTE, non-zero entries only
  std::set<uint64_t> dirty_;                        // line addresses, ordered for coalescing
};

class RangeAllocator {
 public:
  RangeAllocator(uint64_t start, uint64_t end);   // the window [start, end)

  // A range of `size` bytes aligned to `alignment` (a power of two). With a hint, the hint is
  // used when it is aligned and the range there is free; otherwise the lowest fit. nullopt when
  // nothing fits (or, with `force_hint`, when the hint cannot be honoured).
  std::optional<uint64_t> allocate(uint64_t size, uint64_t alignment, uint64_t hint = 0, bool force_hint = false);
  // Returns a range obtained from allocate(); false if no allocation starts at `start`.
  bool release(uint64_t start);
  uint64_t allocated_bytes() const { return allocated_bytes_; }

 private:
  bool fits(uint64_t start, uint64_t size) const;

  uint64_t start_, end_;
  std::map<uint64_t, uint64_t> allocated_;   // start -> size
  uint64_t allocated_bytes_ = 0;
};

}  // namespace hpusim::driver
