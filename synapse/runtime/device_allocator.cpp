#include "synapse/runtime/device_allocator.h"

#include <iterator>

namespace hpusim::synapse::runtime {

DeviceAllocator::DeviceAllocator(uint64_t base, uint64_t size) : base_(base), size_(size) {
  if (size > 0) free_[base] = size;
}

std::optional<uint64_t> DeviceAllocator::allocate(uint64_t bytes, uint64_t alignment) {
  if (bytes == 0 || alignment == 0 || (alignment & (alignment - 1)) != 0) return std::nullopt;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = it->first, length = it->second;
    const uint64_t aligned = (start + alignment - 1) & ~(alignment - 1);
    if (aligned < start || aligned - start > length || length - (aligned - start) < bytes) continue;
    const uint64_t end = aligned + bytes;
    free_.erase(it);
    if (aligned > start) free_[start] = aligned - start;
    if (start + length > end) free_[end] = start + length - end;
    live_[aligned] = bytes;
    used_ += bytes;
    return aligned;
  }
  return std::nullopt;
}

bool DeviceAllocator::free(uint64_t address) {
  const auto found = live_.find(address);
  if (found == live_.end()) return false;
  uint64_t start = address, length = found->second;
  used_ -= length;
  live_.erase(found);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && start + length == next->first) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = length;
  return true;
}

std::optional<uint64_t> DeviceAllocator::owner(uint64_t address, uint64_t bytes) const {
  auto it = live_.upper_bound(address);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (address - it->first + bytes > it->second) return std::nullopt;
  return it->first;
}

}  // namespace hpusim::synapse::runtime
