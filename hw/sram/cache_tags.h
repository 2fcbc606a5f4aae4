// The tag array of a set-associative cache of fixed-size lines: which lines are present, dirty or
// still being filled, and which one a miss evicts (least recently used, never a line in flight).
// Timing-free; the HBM cache decides what each outcome costs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace hpusim::hw {

class CacheTags {
 public:
  // `sets` must be a power of two. The set index is hashed, as hardware caches hash theirs, so that
  // power-of-two strides (matrix columns, tensor planes) spread over the sets and the SRAM's banks.
  CacheTags(uint64_t sets, uint32_t ways);

  // The way holding `line` (a line number: address / line bytes), if present; a hit refreshes it.
  std::optional<uint32_t> find(uint64_t line);
  // Installs `line` in its set, evicting the least recently used line not being filled. Returns the
  // way, or nothing when every way of the set is being filled (the caller then bypasses the cache).
  struct Victim {
    uint32_t way = 0;
    bool evicted_dirty = false;
    uint64_t evicted_line = 0;
  };
  std::optional<Victim> install(uint64_t line);

  uint64_t set_of(uint64_t line) const;
  // The line's place in the data array, for the bank it occupies: way-major, so the lines of
  // consecutive sets (consecutive addresses) sit in consecutive banks.
  uint64_t slot(uint64_t line, uint32_t way) const { return uint64_t{way} * sets_ + set_of(line); }

  void set_dirty(uint64_t line, uint32_t way) { entry(line, way).dirty = true; }
  void set_filling(uint64_t line, uint32_t way, bool filling) { entry(line, way).filling = filling; }
  bool filling(uint64_t line, uint32_t way) { return entry(line, way).filling; }

  uint64_t sets() const { return sets_; }
  uint32_t ways() const { return ways_; }
  uint64_t valid_lines() const;
  uint64_t dirty_lines() const;
  // Every line gone (dirty or not); refused (std::logic_error) while a line is being filled.
  void clear();

 private:
  struct Entry {
    uint64_t line = 0;
    uint64_t last_use = 0;
    bool valid = false;
    bool dirty = false;
    bool filling = false;
  };
  Entry& entry(uint64_t line, uint32_t way) { return entries_[set_of(line) * ways_ + way]; }

  uint64_t sets_;
  uint32_t ways_;
  unsigned set_bits_;
  uint64_t clock_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace hpusim::hw
