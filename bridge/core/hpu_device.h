// torch's view of the simulated card: the HPU allocator over Synapse device memory (with the
// statistics torch.hpu reports), the device guard and the HPU hooks, registered for
// c10::DeviceType::HPU when the library loads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <c10/core/Allocator.h>

namespace hpusim::bridge {

struct MemoryStats {
  uint64_t allocated_bytes = 0, peak_allocated_bytes = 0;
  uint64_t allocations = 0, frees = 0;   // since the last reset of the accumulated counters
  uint64_t live_allocations = 0;
  uint64_t largest_allocation = 0;
  uint64_t total_allocations = 0, total_frees = 0;   // since the process started
};

// The allocator of HPU tensors (c10::GetAllocator(HPU)).
c10::Allocator* hpu_allocator();
MemoryStats memory_stats();
void reset_peak_memory_stats();
void reset_accumulated_memory_stats();

}  // namespace hpusim::bridge
