#include "driver/vm_support.h"

#include <vector>

namespace hpusim::driver {

void ShadowPageTables::write64(uint64_t pa, uint64_t value) {
  if (value == 0) {
    entries_.erase(pa);
  } else {
    entries_[pa] = value;
  }
  dirty_.insert(pa & ~(kLineBytes - 1));
}

uint64_t ShadowPageTables::read64(uint64_t pa) {
  auto it = entries_.find(pa);
  return it == entries_.end() ? 0 : it->second;
}

void ShadowPageTables::zero(uint64_t pa, uint64_t bytes) {
  for (uint64_t off = 0; off < bytes; off += pte::kSize) entries_.erase(pa + off);
  for (uint64_t line = pa & ~(kLineBytes - 1); line < pa + bytes; line += kLineBytes) dirty_.insert(line);
}

void ShadowPageTables::mark_all_dirty() {
  for (const auto& [pa, value] : entries_) dirty_.insert(pa & ~(kLineBytes - 1));
}

void ShadowPageTables::flush(const BlockWriter& write) {
  std::vector<uint8_t> block;
  uint64_t block_start = 0;
  auto emit = [&] {
    if (!block.empty()) write(block_start, block.data(), block.size());
    block.clear();
  };
  for (uint64_t line : dirty_) {
    if (block.empty() || block_start + block.size() != line) {
      emit();
      block_start = line;
    }
    for (uint64_t off = 0; off < kLineBytes; off += pte::kSize) {
      const uint64_t value = read64(line + off);
      for (unsigned b = 0; b < 8; ++b) block.push_back(static_cast<uint8_t>(value >> (8 * b)));
    }
  }
  emit();
  dirty_.clear();
}

RangeAllocator::RangeAllocator(uint64_t start, uint64_t end) : start_(start), end_(end) {}

bool RangeAllocator::fits(uint64_t start, uint64_t size) const {
  if (start < start_ || start > end_ || size > end_ - start) return false;
  // The allocation at or before `start` must end by it; the next one must begin after the range.
  auto next = allocated_.lower_bound(start);
  if (next != allocated_.end() && next->first < start + size) return false;
  if (next != allocated_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > start) return false;
  }
  return true;
}

std::optional<uint64_t> RangeAllocator::allocate(uint64_t size, uint64_t alignment, uint64_t hint, bool force_hint) {
  if (size == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return std::nullopt;
  auto align_up = [alignment](uint64_t v) { return (v + alignment - 1) & ~(alignment - 1); };
  std::optional<uint64_t> chosen;
  if (hint != 0 && hint % alignment == 0 && fits(hint, size)) {
    chosen = hint;
  } else if (force_hint) {
    return std::nullopt;
  } else {
    uint64_t candidate = align_up(start_);
    for (const auto& [begin, length] : allocated_) {
      if (candidate + size <= begin && candidate + size > candidate) break;
      candidate = std::max(candidate, align_up(begin + length));
    }
    if (fits(candidate, size)) chosen = candidate;
  }
  if (chosen) {
    allocated_.emplace(*chosen, size);
    allocated_bytes_ += size;
  }
  return chosen;
}

bool RangeAllocator::release(uint64_t start) {
  auto it = allocated_.find(start);
  if (it == allocated_.end()) return false;
  allocated_bytes_ -= it->second;
  allocated_.erase(it);
  return true;
}

}  // namespace hpusim::driver
