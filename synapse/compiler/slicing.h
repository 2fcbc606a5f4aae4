// Slicing: a GEMM and the TPC node that consumes its output run as a pipeline of row chunks, as
// the real graph compiler slices a producer and its consumer. The GEMM's rows are cut into
// chunks that take turns on the MME engines; the consumer becomes one launch per chunk, over
// every TPC and the range of its index space that walks the chunk's rows (the lowering checks
// the kernel's access patterns allow it), that waits only for its own chunk. The TPCs then work on the first rows while the
// MME computes the next ones, and after the GEMM's last chunk only one chunk of the consumer is
// left (instead of all of it). Values do not change: each chunk computes the same elements as
// the whole node would.
//
// A pair qualifies when:
//   - the GEMM is one matrix product (batch 1) whose rows make at least `min_chunks` chunks:
//     as many chunks as it takes whole super-tiles (`chunk_row_unit` rows) a chunk to keep to
//     `max_chunks` (the passes the GEMM makes over B anyway), the rows shared out evenly among
//     them in tiles of the largest power of two dividing the super-tile rows, the last one
//     possibly short;
//   - its output is read by exactly one node, a TPC node of a per-element kernel
//     (KernelLibrary::per_element), a fused chain of them or an elementwise cluster; no copy view
//     involves it;
//   - every tensor of the consumer has the GEMM output's shape (then it is cut into the same
//     rows), or is an input broadcast along the rows (a bias row, one element), kept whole;
//   - each output of the consumer lies apart from each of its inputs or exactly on it (an
//     in-place update), so a chunk never writes where another chunk still reads;
//   - `consumer_fits` accepts it (the lowering checks the kernel is one launch whose index
//     space walks the rows linearly).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "synapse/compiler/memory_plan.h"
#include "synapse/graph/graph.h"

namespace hpusim::synapse::compiler {

struct SliceOptions {
  // The MME's super-tile rows (CompileTarget): it reads B once per super-tile of rows anyway, so
  // as many chunks as super-tiles cost no extra traffic. 0: no slicing.
  uint32_t chunk_row_unit = 256;
  // At least this many chunks (each engine needs two, or its consumer launches cannot start
  // before the GEMM ends) and at most max_chunks (each costs a launch).
  uint32_t min_chunks = 4;
  uint32_t max_chunks = 8;
};

struct GemmSlice {
  size_t gemm_step = 0, consumer_step = 0;   // positions in the order
  uint32_t rows = 0;                         // the GEMM's M (its output's dim 1)
  uint32_t chunk_rows = 0;                   // rows a chunk; the last one may have fewer
  uint32_t chunks = 0;
  // Per consumer tensor (inputs, then outputs): cut into the chunk's rows (else read whole).
  std::vector<bool> cut;

  uint32_t chunk_begin(uint32_t chunk) const { return chunk * chunk_rows; }
  uint32_t chunk_size(uint32_t chunk) const { return std::min(chunk_rows, rows - chunk_begin(chunk)); }
};

// The slices of `order` (positions of the valid `graph`, planned by `plan`), keyed by the GEMM's
// step. `per_element(step)`: the node at that step computes each element alone.
std::map<size_t, GemmSlice> find_gemm_slices(const graph::Graph& graph, const std::vector<graph::NodeId>& order,
                                             const MemoryPlan& plan, const std::function<bool(size_t)>& per_element,
                                             const std::function<bool(const GemmSlice&)>& consumer_fits,
                                             const SliceOptions& options = {});

}  // namespace hpusim::synapse::compiler
