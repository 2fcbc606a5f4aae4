// Splitting an instantiation's index space among cores (the rule is in kernel_library.h).
#include <algorithm>

#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels {

std::vector<CoreSlice> partition_index_space(const std::array<int32_t, kMaxDims>& geometry, unsigned cores) {
  std::vector<CoreSlice> slices;
  if (cores == 0) return slices;
  for (int32_t g : geometry)
    if (g <= 0) return slices;
  int split = -1;
  for (int d = kMaxDims - 1; d >= 0 && split < 0; --d)
    if (static_cast<int64_t>(geometry[d]) >= static_cast<int64_t>(cores)) split = d;
  if (split < 0) {
    split = kMaxDims - 1;
    for (int d = kMaxDims - 2; d >= 0; --d)
      if (geometry[d] > geometry[split]) split = d;
  }
  const int32_t total = geometry[split];
  const int32_t n = static_cast<int32_t>(std::min<int64_t>(cores, total));
  int32_t start = 0;
  for (int32_t c = 0; c < n; ++c) {
    CoreSlice s;
    s.size = geometry;
    const int32_t len = total / n + (c < total % n ? 1 : 0);
    s.offset[split] = start;
    s.size[split] = len;
    start += len;
    slices.push_back(s);
  }
  return slices;
}

std::pair<int64_t, int64_t> touched_range(const AccessPatternDim& pattern, const CoreSlice& slice) {
  const int64_t first = slice.offset[pattern.ispace_dim];
  const int64_t last = first + slice.size[pattern.ispace_dim] - 1;
  if (pattern.a == 0) return {pattern.start_b, pattern.end_b};
  const int64_t x = pattern.a * first, y = pattern.a * last;
  return {std::min(x, y) + pattern.start_b, std::max(x, y) + pattern.end_b};
}

}  // namespace hpusim::synapse::tpc_kernels
