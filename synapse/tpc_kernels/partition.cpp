// Splitting an instantiation's index space among cores (the rule is in kernel_library.h).
#include <algorithm>

#include "synapse/tpc_kernels/kernel_library.h"

#include "arch/tpc/tpc_launch.h"

namespace hpusim::synapse::tpc_kernels {

std::vector<CoreSlice> partition_index_space(const std::array<int32_t, kMaxDims>& geometry, unsigned cores) {
  std::vector<CoreSlice> slices;
  if (cores == 0) return slices;
  for (int32_t g : geometry)
    if (g <= 0) return slices;
  // The launch builder's rule (arch/tpc/tpc_launch.h), the one the compiler's launches use.
  tpc::TpcLaunchSpec spec;
  spec.tpcs = cores;
  std::copy(geometry.begin(), geometry.end(), spec.index_space.begin());
  spec.granule.fill(1);
  for (const tpc::IndexRange& range : tpc::partition_index_space(spec)) {
    CoreSlice slice;
    std::copy(range.offset.begin(), range.offset.end(), slice.offset.begin());
    std::copy(range.size.begin(), range.size.end(), slice.size.begin());
    slices.push_back(slice);
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
