// First-fit allocator of a device address range (the DRAM user range): what synDeviceMalloc
// hands out. Deterministic: the lowest free address that fits, aligned.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace hpusim::synapse::runtime {

class DeviceAllocator {
 public:
  DeviceAllocator(uint64_t base, uint64_t size);

  // nullopt when no free block fits (or bytes is 0); alignment must be a power of two.
  std::optional<uint64_t> allocate(uint64_t bytes, uint64_t alignment = 256);
  // false when `address` is not the start of a live allocation.
  bool free(uint64_t address);
  // The allocation containing [address, address + bytes), if any: its start.
  std::optional<uint64_t> owner(uint64_t address, uint64_t bytes = 1) const;

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t used_bytes() const { return used_; }
  uint64_t free_bytes() const { return size_ - used_; }
  size_t allocations() const { return live_.size(); }

 private:
  uint64_t base_, size_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;   // start -> size, coalesced
  std::map<uint64_t, uint64_t> live_;   // start -> size (the whole block, alignment included)
};

}  // namespace hpusim::synapse::runtime
