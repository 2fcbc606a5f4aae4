#include "hw/sram/cache_tags.h"

#include <stdexcept>

namespace hpusim::hw {

CacheTags::CacheTags(uint64_t sets, uint32_t ways) : sets_(sets), ways_(ways), set_bits_(0) {
  if (sets == 0 || (sets & (sets - 1)) != 0 || ways == 0) {
    throw std::invalid_argument("cache tags: sets must be a power of two and ways at least 1");
  }
  while ((uint64_t{1} << set_bits_) < sets) ++set_bits_;
  entries_.resize(sets * ways);
}

uint64_t CacheTags::set_of(uint64_t line) const {
  if (set_bits_ == 0) return 0;
  // The line's own low bits, XORed with a multiplicative hash of the bits above an aligned block of
  // 64 lines: within such a block the sets stay distinct (consecutive lines, different banks), and
  // lines a power-of-two stride apart (a matrix column) land in unrelated sets and banks.
  const uint64_t above = (line >> 6) * 0x9E3779B97F4A7C15ull;
  return (line ^ (above >> (64 - set_bits_))) & (sets_ - 1);
}

std::optional<uint32_t> CacheTags::find(uint64_t line) {
  Entry* set = &entries_[set_of(line) * ways_];
  for (uint32_t way = 0; way < ways_; ++way) {
    if (set[way].valid && set[way].line == line) {
      set[way].last_use = ++clock_;
      return way;
    }
  }
  return std::nullopt;
}

std::optional<CacheTags::Victim> CacheTags::install(uint64_t line) {
  Entry* set = &entries_[set_of(line) * ways_];
  std::optional<uint32_t> chosen;
  for (uint32_t way = 0; way < ways_; ++way) {
    const Entry& e = set[way];
    if (e.filling) continue;
    if (!e.valid) {
      chosen = way;
      break;
    }
    if (!chosen || e.last_use < set[*chosen].last_use) chosen = way;
  }
  if (!chosen) return std::nullopt;
  Entry& e = set[*chosen];
  Victim victim{*chosen, e.valid && e.dirty, e.line};
  e = Entry{line, ++clock_, true, false, false};
  return victim;
}

uint64_t CacheTags::valid_lines() const {
  uint64_t n = 0;
  for (const Entry& e : entries_) n += e.valid ? 1 : 0;
  return n;
}

void CacheTags::clear() {
  for (const Entry& e : entries_) {
    if (e.valid && e.filling) throw std::logic_error("cache tags: cleared while a line is being filled");
  }
  for (Entry& e : entries_) e = Entry{};
}

uint64_t CacheTags::dirty_lines() const {
  uint64_t n = 0;
  for (const Entry& e : entries_) n += e.valid && e.dirty ? 1 : 0;
  return n;
}

}  // namespace hpusim::hw
