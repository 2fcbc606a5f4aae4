#include "synapse/compiler/slicing.h"

#include <algorithm>
#include <set>

#include "arch/mme/mme_job.h"
#include "synapse/compiler/tensor_size.h"
#include "synapse/graph/dma_nodes.h"
#include "synapse/graph/mme_nodes.h"

namespace hpusim::synapse::compiler {

using graph::NodeDesc;
using graph::TensorDesc;
using graph::TensorId;

namespace {

enum class Overlap { kApart, kSame, kPartly };

Overlap ranges(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
  if (a + a_size <= b || b + b_size <= a) return Overlap::kApart;
  return a == b && a_size == b_size ? Overlap::kSame : Overlap::kPartly;
}

// Where two tensors of the consumer lie against each other.
Overlap overlap(const graph::Graph& g, const MemoryPlan& plan, TensorId x, TensorId y) {
  if (x == y) return Overlap::kSame;
  const TensorDesc& a = g.tensor(x);
  const TensorDesc& b = g.tensor(y);
  if (a.persistent != b.persistent) return Overlap::kApart;
  if (a.persistent) {
    if (!a.section || !b.section || a.section->id != b.section->id) return Overlap::kApart;
    return ranges(a.section->offset, tensor_bytes(a).value_or(0), b.section->offset, tensor_bytes(b).value_or(0));
  }
  const PlannedTensor* pa = plan.find(x);
  const PlannedTensor* pb = plan.find(y);
  if (pa == nullptr || pb == nullptr) return Overlap::kPartly;   // not planned: do not slice
  if (pa->in_sram != pb->in_sram) return Overlap::kApart;
  return ranges(pa->offset, pa->size, pb->offset, pb->size);
}

bool involved_in_view(const MemoryPlan& plan, TensorId t) {
  for (const PlannedTensor& p : plan.tensors)
    if ((p.tensor == t && p.view_of) || (p.view_of && *p.view_of == t)) return true;
  return false;
}

// A row broadcast to every row of `out_shape` (its dim 0, the other dims 1) or one element.
bool broadcast_row(const std::vector<uint32_t>& shape, const std::vector<uint32_t>& out_shape) {
  uint64_t elements = 1;
  for (uint32_t d : shape) elements *= d;
  if (elements == 1) return true;
  if (shape.empty() || shape[0] != out_shape[0]) return false;
  return std::all_of(shape.begin() + 1, shape.end(), [](uint32_t d) { return d == 1; });
}

}  // namespace

std::map<size_t, GemmSlice> find_gemm_slices(const graph::Graph& g, const std::vector<graph::NodeId>& order,
                                             const MemoryPlan& plan, const std::function<bool(size_t)>& per_element,
                                             const std::function<bool(const GemmSlice&)>& consumer_fits,
                                             const SliceOptions& options) {
  std::map<size_t, GemmSlice> slices;
  std::set<size_t> consumers;
  for (size_t step = 0; step < order.size(); ++step) {
    const NodeDesc& gemm = g.node(order[step]);
    if (!graph::is_mme_guid(gemm.guid) || gemm.outputs.size() != 1) continue;
    mme::MmeJob job;
    if (!graph::mme_job_for(g, order[step], &job).ok() || job.op != mme::MmeOp::Gemm || job.batch != 1) continue;
    const uint32_t unit = options.chunk_row_unit, fewest = std::max<uint32_t>(options.min_chunks, 2);
    if (unit == 0 || (job.m + unit - 1) / unit < fewest) continue;
    const TensorId out = gemm.outputs[0];
    const TensorDesc& out_desc = g.tensor(out);
    if (out_desc.shape.size() != 2 || involved_in_view(plan, out)) continue;

    std::vector<size_t> readers;
    for (size_t s = 0; s < order.size(); ++s) {
      const NodeDesc& node = g.node(order[s]);
      if (std::find(node.inputs.begin(), node.inputs.end(), out) != node.inputs.end()) readers.push_back(s);
    }
    if (readers.size() != 1 || readers[0] <= step || consumers.count(readers[0]) != 0) continue;
    const size_t reader = readers[0];
    const NodeDesc& consumer = g.node(order[reader]);
    if (graph::is_mme_guid(consumer.guid) || graph::is_dma_guid(consumer.guid) || !per_element(reader)) continue;

    GemmSlice slice;
    slice.gemm_step = step;
    slice.consumer_step = reader;
    slice.rows = job.m;
    bool fits = true;
    for (size_t k = 0; k < consumer.inputs.size() + consumer.outputs.size() && fits; ++k) {
      const bool input = k < consumer.inputs.size();
      const TensorId t = input ? consumer.inputs[k] : consumer.outputs[k - consumer.inputs.size()];
      const TensorDesc& desc = g.tensor(t);
      if (desc.shape == out_desc.shape) {
        slice.cut.push_back(true);
      } else if (input && broadcast_row(desc.shape, out_desc.shape)) {
        slice.cut.push_back(false);
      } else {
        fits = false;
      }
    }
    // A chunk must never write where another chunk still reads: outputs apart from every input or
    // exactly on a cut one.
    for (size_t o = 0; o < consumer.outputs.size() && fits; ++o) {
      for (size_t i = 0; i < consumer.inputs.size() && fits; ++i) {
        const Overlap lie = overlap(g, plan, consumer.inputs[i], consumer.outputs[o]);
        if (lie == Overlap::kPartly || (lie == Overlap::kSame && !slice.cut[i])) fits = false;
      }
    }
    if (!fits) continue;

    // The rows in super-tiles, as few of them a chunk as keep to max_chunks.
    const uint32_t units = (job.m + unit - 1) / unit, most = std::max(options.max_chunks, fewest);
    slice.chunk_rows = (units + most - 1) / most * unit;
    slice.chunks = (job.m + slice.chunk_rows - 1) / slice.chunk_rows;
    // As many chunks (passes over B), the rows shared out evenly in tiles of the largest power of
    // two dividing the super-tile rows: 1024 rows of 320-row super-tiles are 4 x 256, not
    // 320, 320, 320 and 64.
    const uint32_t granule = unit & (~unit + 1);
    slice.chunk_rows = ((job.m + slice.chunks - 1) / slice.chunks + granule - 1) / granule * granule;
    slice.chunks = (job.m + slice.chunk_rows - 1) / slice.chunk_rows;
    if (slice.chunks < fewest || !consumer_fits(slice)) continue;
    consumers.insert(reader);
    slices[step] = std::move(slice);
  }
  return slices;
}

}  // namespace hpusim::synapse::compiler
