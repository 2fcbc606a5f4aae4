// Helpers the kernel library's glue files share (kernel_library.cpp, tensor_list.cpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels::glue {

// The tensor-list GUIDs (tensor_list.cpp).
inline constexpr const char* kTensorListGuids[] = {"fused_adam_f32", "fused_adamw_f32", "fused_sgd_f32",
                                                  "fused_clip_norm_f32"};

inline std::string shape_text(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The shape padded to 5 dims with 1s (a scalar is [1]).
inline std::array<uint32_t, kMaxDims> padded(const std::vector<uint32_t>& shape) {
  std::array<uint32_t, kMaxDims> p{1, 1, 1, 1, 1};
  for (size_t d = 0; d < shape.size() && d < kMaxDims; ++d) p[d] = shape[d];
  return p;
}

// Element strides of the tensor (given or dense), padded to 5 dims.
inline std::array<int64_t, kMaxDims> strides_of(const TensorParams& t) {
  std::array<int64_t, kMaxDims> s{};
  const auto p = padded(t.shape);
  int64_t dense = 1;
  for (unsigned d = 0; d < kMaxDims; ++d) {
    s[d] = d < t.strides.size() ? t.strides[d] : dense;
    dense *= p[d];
  }
  return s;
}

inline uint64_t elements(const TensorParams& t) {
  uint64_t n = 1;
  for (uint32_t d : t.shape) n *= d;
  return n;
}

// The tensor as one dim when its elements are dense (no strides given, or the dense ones), so an
// elementwise kernel streams it as one long row (prefetching runs ahead across what were rows);
// otherwise the tensor itself.
inline TensorParams flattened(const TensorParams& t) {
  const auto p = padded(t.shape);
  int64_t dense = 1;
  for (unsigned d = 0; d < kMaxDims; ++d) {
    if (d < t.strides.size() && p[d] > 1 && t.strides[d] != dense) return t;
    dense *= p[d];
  }
  if (dense > (int64_t{1} << 30)) return t;
  return TensorParams{t.dtype, {static_cast<uint32_t>(dense)}, {}};
}

// The dense descriptor of a tensor (its own rank, sizes, strides).
inline DescriptorTemplate descriptor_of(const TensorParams& t) {
  DescriptorTemplate d;
  d.dtype = t.dtype;
  d.dims = static_cast<uint8_t>(std::max<size_t>(t.shape.size(), 1));
  d.size = padded(t.shape);
  d.stride = strides_of(t);
  return d;
}

// Access pattern: dim 0 `dim0`, dims >= 1 one element per step (or the whole dim when whole).
// `d` viewed with a dim 0 of one element in front of its dims (at most kMaxDims - 1 of them): a
// vector read at (0, n, ...) reads element n alone, so a prefetch of it is exactly what one scalar
// load then takes (the prefetch buffer frees an entry at its first load).
inline DescriptorTemplate with_unit_dim0(DescriptorTemplate d) {
  for (unsigned k = kMaxDims - 1; k > 0; --k) {
    d.size[k] = d.size[k - 1];
    d.stride[k] = d.stride[k - 1];
  }
  d.size[0] = 1;
  d.stride[0] = 1;
  d.dims = static_cast<uint8_t>(std::min<unsigned>(d.dims + 1u, kMaxDims));
  return d;
}

inline TensorAccessPattern pattern_of(AccessPatternDim dim0, const std::array<uint32_t, kMaxDims>& size, bool whole) {
  TensorAccessPattern pat;
  pat[0] = dim0;
  for (unsigned d = 1; d < kMaxDims; ++d)
    pat[d] = whole ? AccessPatternDim{static_cast<uint8_t>(d), 0, 0, static_cast<int32_t>(size[d]) - 1}
                   : AccessPatternDim{static_cast<uint8_t>(d), 1, 0, 0};
  return pat;
}

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Dropout's scale of the kept elements, 1 / (1 - p) in double rounded to f32 (0 when p is 1: none
// is kept).
inline float dropout_scale(float p) {
  return p == 1.0f ? 0.0f : static_cast<float>(1.0 / (1.0 - static_cast<double>(p)));
}

// dropout_fwd's list-scheduled kernel text after the prelude (dropout_scheduled.cpp): tensors 0 X,
// [1 seed,] `y_tensor` Y and the mask after it; SRF S0 = dropout_keep_threshold(p), S1 = the scale,
// S2 = the key (without a seed tensor), S3..S6 the sizes of dims 0..3. LANES must be four f32
// vectors; `step_prefetches` are issued in the body (width_prelude's step lines).
std::string dropout_fwd_scheduled(bool bf16, bool seed_tensor, size_t y_tensor, const std::vector<std::string>& step_prefetches);
// embedding_fwd's kernel text after the prelude (embedding_rows.cpp): tensors 0 W [D, V], 1 the
// indices viewed as [1, N], 2 Y viewed as [D, N]; the index space {1, ceil(N / ((depth + 1) x
// rows))}; rows of `vectors` vectors in groups of `rows`, prefetched `depth` groups ahead, their
// indices `index_ahead` groups before that.
std::string embedding_fwd_pipelined(unsigned rows, unsigned vectors, unsigned depth, unsigned index_ahead);
// gather_fwd.s's ROW_SETUP (a row's first step's indices) and GATHER_STEP (the step's elements
// read at those indices, the next step's indices read, then the elements stored), for `elements`
// (at most 8) a step along dim 0 and the gather dim `gdim`.
std::string gather_step(unsigned elements, unsigned gdim);
// where_fwd's kernel text after the prelude (where_scheduled.cpp) when no input is broadcast
// along dim 0: LANES is one u8 vector of cond, `parts` vectors of the `raw` (u32 / u16) A, B and Y;
// cond prefetched `steps_ahead` steps ahead, A's and B's prefetches (`step_prefetches`) in the body.
std::string where_fwd_scheduled(const std::string& raw, unsigned parts, unsigned steps_ahead,
                                const std::vector<std::string>& step_prefetches);
// A kernel whose values are a function of the element's dense index, as its kernel file computes
// one f32 vector (generator_scheduled.cpp): `per_vector` in the kernel file's registers (macros of
// `definitions` expanded), `value` the register holding the result, `lane_ids` the lane ids' register,
// `shared` the registers every vector reads as they are; `step` runs once a step, first.
struct GeneratorBody {
  std::string definitions;
  std::vector<std::string> step, per_vector;
  std::string lane_ids = "V16", value;
  std::set<std::string> shared;
};
// Four f32 vectors a step (bf16: two, their halves narrowed in pairs) on registers of their own,
// list-scheduled, Y (tensor `y_tensor`) stored at I2, I4, I5, I6: `setup` before the nest (the
// vectors' lane ids, from `lane_ids` set by the caller), `row_setup` for ROW_SETUP (the vectors'
// coordinates), `body` the loop body. LANES must be four f32 vectors. nullopt: out of registers.
struct GeneratorCode {
  std::string setup, row_setup, body;
};
std::optional<GeneratorCode> generator_scheduled(const GeneratorBody& g, bool bf16, size_t y_tensor);
// ceil(p * 2^24): an element is kept when (h >> 8) >= it (u >= p of the generator).
uint32_t dropout_keep_threshold(float p);

// optim.s's bank macros (WD_GRAD, DECOUPLED_WD, LOAD_STATES, STORE_STATES, STORE_LAST) for
// `states` state tensors (inputs 2..) whose outputs follow the param's, output `out_base`; `wd` /
// `decay`: the registers holding weight decay / 1 - lr * wd, or empty (none).
std::string optim_bank_macros(size_t states, size_t out_base, const std::string& wd, const std::string& decay);

// layernorm_bwd's kernel text after the prelude for rows of `vectors` f32 vectors (bf16: the halves
// of the row's bf16 vectors): the short kernel's operations list-scheduled (layernorm_rows.cpp);
// dx is tensor `out`.
std::string layernorm_bwd_scheduled(unsigned vectors, bool affine, size_t out, bool bf16);

// layernorm_bwd_gb.s's ROW_BLOCK macro: four rows list-scheduled (layernorm_gamma_beta.cpp), with
// the LDW / EACH3 of `io_definitions` (io_f32.inc or io_bf16.inc). Empty when one is missing.
std::string layernorm_gamma_beta_block(const std::string& io_definitions);

// layernorm_bwd_gamma_beta's kernel text after the prelude (LANES = columns f32 vectors): a step
// owns `columns` f32 column vectors (at most kMaxGammaBetaColumns) and walks the rows once for all
// of them, prefetching `rows_ahead` rows ahead (layernorm_gamma_beta.cpp). `bf16`: grad and x are
// bf16, a vector of them two columns (widened in place), and the sums are rounded to bf16 on the
// way out unless `f32_sums` (a split's partials: every column's f32 sum stored as the f32
// kernel's). SRF: S3 the column steps each index-space dim-4 step holds (1; a row-chunk split sets
// them all there), S4..S7 the sizes of dims 1..4 (dim 4: the chunks a step walks). Empty when the
// arguments are out of range.
inline constexpr unsigned kMaxGammaBetaColumns = 4;
// The library's choice: BERT's 768 features are three steps, and 16 row chunks of them 48.
inline constexpr unsigned kGammaBetaColumns = 4;
std::string layernorm_gamma_beta_columns(unsigned columns, unsigned rows_ahead, bool bf16 = false, bool f32_sums = false);

// A permute that moves dim 0, 32-bit elements with `lanes` <= 64 or 16-bit ones with `lanes` <=
// 128 (`element_bits`): the kernel text after the prelude
// and `.equ LANES` (tile_transpose.cpp). The index space is Y's, dim 0 in vectors and dim
// inv[0] in tiles of `lanes`.
std::string tile_transpose_kernel(const std::array<unsigned, kMaxDims>& perm, unsigned lanes, unsigned element_bits);

// The vectors an optimizer step of optim_step.cpp covers (LANES = this many f32 vectors).
inline constexpr unsigned kOptimStepVectors = 4;

// An optimizer step (optim.s's macros) over kOptimStepVectors vectors, list-scheduled
// (optim_step.cpp): the kernel text after `definitions`, the source so far (the prelude with
// LANES and NIN, the bank macros, PRE_NEST and OPT_STEP), whose macros it expands. Empty when a
// macro the step calls is missing. (Moving nest.inc's PREFETCH_STEP into the scheduled step saved
// bundles but not time: BERT's step within 2 us either way on hl205 and hl225.)
std::string optim_step_kernel(const std::string& definitions);

}  // namespace hpusim::synapse::tpc_kernels::glue
