// Reductions split across the cores with a second pass (row_chunks.h): phase 0 reduces chunks of
// the rows into the node's scratch, phase 1 reduces those partials into the outputs, so a
// reduction with few outputs (a loss, dgamma / dbeta, a bias gradient) uses every core instead of
// one or a few.
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_library.h"
#include "synapse/tpc_kernels/row_chunks.h"

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

TensorParams f32(std::vector<uint32_t> shape) { return TensorParams{DType::F32, std::move(shape), {}}; }

// A sum or mean into tensor 1 from tensor 0 in two phases: `partials` (phase 0: tensor 0's chunks
// into the scratch, tensor 2) and `total` (phase 1: the partials into the output; a mean's divisor
// becomes `count`, every element it covers, when non-zero).
InstantiateResult two_phases(const std::string& guid, const InstantiateResult& partials, const InstantiateResult& total,
                             uint32_t count, uint64_t scratch_bytes, const std::string& chunks) {
  if (!partials.ok()) return partials;
  if (!total.ok()) return total;
  const uint32_t scratch = 2;
  InstantiateResult result;
  KernelPart first;
  first.inst = *partials.inst;
  first.inst.guid = guid;
  first.inst.variant += ": " + chunks;
  first.tensors = {0, scratch};
  result.parts.push_back(std::move(first));
  KernelPart second;
  second.inst = *total.inst;
  if (count != 0) second.inst.srf[1] = f32_bits(static_cast<float>(count));
  second.inst.variant += ": the chunks' partials";
  second.tensors = {scratch, 1};
  second.phase = 1;
  result.parts.push_back(std::move(second));
  result.scratch_bytes = {scratch_bytes};
  return result;
}

}  // namespace

std::optional<InstantiateResult> KernelLibrary::instantiate_split_dim0_reduction(const std::string& guid,
                                                                                 const KernelParams& p) {
  const bool mean = guid == "reduce_mean_fwd_f32";
  if ((!mean && guid != "reduce_sum_fwd_f32") || p.inputs.size() != 1 || p.outputs.size() != 1 ||
      p.scalars != std::vector<float>{0.0f})
    return std::nullopt;
  const TensorParams& x = p.inputs[0];
  const auto px = padded(x.shape);
  const uint32_t length = dim0_chunk_length(px[0]);
  if (length == 0 || elements(x) != px[0] || elements(p.outputs[0]) != 1 || !x.strides.empty() ||
      !p.outputs[0].strides.empty() || x.dtype != DType::F32 || p.outputs[0].dtype != DType::F32)
    return std::nullopt;
  const uint32_t chunks = px[0] / length;
  // Phase 0: the row as [length, chunks], a sum per chunk into the scratch [1, chunks]; phase 1:
  // the partials reduced the same way into the output; a mean divides by every element.
  return two_phases(guid, instantiate_impl("reduce_sum_fwd_f32", {{f32({length, chunks})}, {f32({1, chunks})}, {0.0f}}, {}),
                    instantiate_impl(guid, {{f32({chunks})}, {f32({1})}, {0.0f}}, {}), mean ? px[0] : 0,
                    uint64_t{chunks} * 4, "the row's chunks");
}

std::optional<InstantiateResult> KernelLibrary::instantiate_split_outer_reduction(const std::string& guid,
                                                                                   const KernelParams& p) {
  const bool mean = guid == "reduce_mean_fwd_f32";
  if ((!mean && guid != "reduce_sum_fwd_f32") || p.inputs.size() != 1 || p.outputs.size() != 1 ||
      p.scalars != std::vector<float>{1.0f})
    return std::nullopt;
  const TensorParams& x = p.inputs[0];
  const auto px = padded(x.shape);
  const uint32_t n = px[0], rows = px[1];
  if (elements(x) != uint64_t{n} * rows || elements(p.outputs[0]) != n || !x.strides.empty() ||
      !p.outputs[0].strides.empty() || x.dtype != DType::F32 || p.outputs[0].dtype != DType::F32)
    return std::nullopt;
  const uint32_t length = split_row_chunk(rows, n);
  if (length == 0) return std::nullopt;
  const uint32_t chunks = rows / length;
  // Phase 0: the rows as [n, length, chunks], a sum per chunk into the scratch [n, 1, chunks];
  // phase 1: the partials summed in chunk order into the output; a mean divides by every row.
  return two_phases(guid,
                    instantiate_impl("reduce_sum_fwd_f32", {{f32({n, length, chunks})}, {f32({n, 1, chunks})}, {1.0f}}, {}),
                    instantiate_impl(guid, {{f32({n, chunks})}, {f32({n, 1})}, {1.0f}}, {}), mean ? rows : 0,
                    uint64_t{n} * chunks * 4, "the rows' chunks");
}

std::optional<InstantiateResult> KernelLibrary::instantiate_split_gamma_beta(const std::string& guid,
                                                                             const KernelParams& p) {
  const bool bf16 = guid == "layernorm_bwd_gamma_beta_bf16";
  if ((!bf16 && guid != "layernorm_bwd_gamma_beta_f32") || p.inputs.size() != 4 || p.outputs.size() != 2)
    return std::nullopt;
  const DType io = bf16 ? DType::BF16 : DType::F32;
  // Only the shapes the single launch takes (dense, stats one element per row); anything else
  // gets its error from there.
  const auto px = padded(p.inputs[0].shape);
  uint64_t rows = 1;
  for (unsigned d = 1; d < kMaxDims; ++d) rows *= px[d];
  const uint32_t length = split_row_chunk(rows, px[0]);
  if (length == 0) return std::nullopt;
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const TensorParams& t : *list)
      if (!t.strides.empty()) return std::nullopt;
  for (size_t k = 0; k < 4; ++k)
    if (p.inputs[k].dtype != (k < 2 ? io : DType::F32)) return std::nullopt;
  for (const TensorParams& t : p.outputs)
    if (t.dtype != io) return std::nullopt;
  if (p.inputs[1].shape != p.inputs[0].shape || padded(p.inputs[2].shape) != padded(p.inputs[3].shape) ||
      padded(p.inputs[2].shape)[0] != 1 || elements(p.inputs[2]) != rows || elements(p.outputs[0]) != px[0] ||
      elements(p.outputs[1]) != px[0])
    return std::nullopt;
  const uint32_t chunks = static_cast<uint32_t>(rows / length);
  const TensorParams stats = f32({1, length, 1, 1, chunks});

  // Phase 0: the rows as [N0, length, 1, 1, chunks], the partials (in scratch, f32, bf16's
  // unrounded) [N0, 1, 1, 1, chunks]; a step is one vector of one chunk.
  KernelParams chunked;
  chunked.inputs = {TensorParams{io, {px[0], length, 1, 1, chunks}, {}}, TensorParams{io, {px[0], length, 1, 1, chunks}, {}},
                    stats, stats};
  chunked.outputs = {TensorParams{io, {px[0]}, {}}, TensorParams{io, {px[0]}, {}}};
  InstantiateResult partial = instantiate_impl(guid, chunked, {}, false, bf16);
  if (!partial.ok()) return partial;
  KernelPart sums;
  sums.inst = *partial.inst;
  for (DescriptorTemplate& d : sums.inst.outputs) {   // a row of partials per chunk
    d.dims = kMaxDims;
    d.size = {px[0], 1, 1, 1, chunks};
    d.stride = {1, px[0], px[0], px[0], px[0]};
  }
  sums.inst.srf[7] = 1;   // the step walks its own chunk
  const int32_t column_steps = sums.inst.ispace_geometry[0];
  if (sums.inst.srf[3] != 0) {
    // The scheduled f32 kernel (layernorm_gamma_beta.cpp) takes a step per (chunk, column step)
    // on dim 4, so the launch spreads them all over the cores (it splits one dim); a step's
    // columns are then no linear function of the index: the patterns cover every column.
    sums.inst.srf[3] = static_cast<uint32_t>(column_steps);
    sums.inst.ispace_geometry[0] = 1;
    sums.inst.ispace_geometry[4] = static_cast<int32_t>(chunks) * column_steps;
    for (auto* patterns : {&sums.inst.input_patterns, &sums.inst.output_patterns})
      for (TensorAccessPattern& pat : *patterns) {
        if (pat[0].a != 0) pat[0] = AccessPatternDim{0, 0, 0, static_cast<int32_t>(px[0]) - 1};
        pat[4] = AccessPatternDim{4, 0, 0, static_cast<int32_t>(chunks) - 1};
      }
  } else {
    sums.inst.ispace_geometry[4] = static_cast<int32_t>(chunks);
    for (auto* patterns : {&sums.inst.input_patterns, &sums.inst.output_patterns})
      for (TensorAccessPattern& pat : *patterns) pat[4] = AccessPatternDim{4, 1, 0, 0};
  }
  sums.inst.variant += " row chunks";
  const uint32_t scratch = static_cast<uint32_t>(p.inputs.size() + p.outputs.size());
  sums.tensors = {0, 1, 2, 3, scratch, scratch + 1};

  InstantiateResult result;
  result.parts.push_back(std::move(sums));
  // Phase 1: each output the sum of its chunks' partials, in chunk order (reduce over dim 1); bf16's
  // into f32 scratch, then (phase 2) rounded once into the output.
  const uint32_t first_output = static_cast<uint32_t>(p.inputs.size());
  for (uint32_t k = 0; k < 2; ++k) {
    KernelParams total{{f32({px[0], chunks})}, {f32({px[0], 1})}, {1.0f}};
    InstantiateResult r = instantiate_impl("reduce_sum_fwd_f32", total, {});
    if (!r.ok()) return r;
    KernelPart part;
    part.inst = *r.inst;
    part.inst.guid = guid;
    part.inst.variant = "layernorm bwd gamma beta: the chunks' partials summed";
    part.tensors = {scratch + k, bf16 ? scratch + 2 + k : first_output + k};
    part.phase = 1;
    result.parts.push_back(std::move(part));
  }
  result.scratch_bytes = {uint64_t{px[0]} * chunks * 4, uint64_t{px[0]} * chunks * 4};
  if (bf16) {
    for (uint32_t k = 0; k < 2; ++k) {
      InstantiateResult r = instantiate_impl("cast_f32_to_bf16", {{f32({px[0]})}, {TensorParams{io, {px[0]}, {}}}, {}}, {});
      if (!r.ok()) return r;
      KernelPart part;
      part.inst = *r.inst;
      part.inst.guid = guid;
      part.inst.variant = "layernorm bwd gamma beta: the sums rounded to bf16";
      part.tensors = {scratch + 2 + k, first_output + k};
      part.phase = 2;
      result.parts.push_back(std::move(part));
    }
    result.scratch_bytes.push_back(uint64_t{px[0]} * 4);
    result.scratch_bytes.push_back(uint64_t{px[0]} * 4);
  }
  return result;
}

}  // namespace hpusim::synapse::tpc_kernels
