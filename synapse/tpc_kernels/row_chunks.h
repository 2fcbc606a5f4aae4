// How a reduction over rows with few outputs is split across cores (kernel_library.cpp,
// layernorm_bwd_gamma_beta_f32): the rows in chunks, a partial per chunk and output element, the
// partials summed in chunk order by a second launch. It depends on the shape only, so the values
// are the same on every preset; references that reproduce the kernels' bits use it too.
#pragma once

#include <cstdint>

namespace hpusim::synapse::tpc_kernels {

// Split when the outputs have fewer elements than this (fewer vectors than cores to spread) and
// there are at least kSplitRowsFrom rows (below, the second launch costs more than it saves).
inline constexpr uint64_t kSplitRowsBelowOutputs = 1024, kSplitRowsFrom = 512;
inline constexpr uint32_t kMinRowChunk = 16, kMaxRowChunk = 64;

// Rows per chunk: the largest divisor of `rows` in [kMinRowChunk, kMaxRowChunk] that makes at
// least two chunks, or 0 (no split).
constexpr uint32_t row_chunk_length(uint64_t rows) {
  for (uint32_t length = kMaxRowChunk; length >= kMinRowChunk; --length)
    if (rows % length == 0 && rows / length >= 2) return length;
  return 0;
}

// Whether a reduction of `rows` rows into `outputs` elements is split, and its chunk length.
constexpr uint32_t split_row_chunk(uint64_t rows, uint64_t outputs) {
  return outputs < kSplitRowsBelowOutputs && rows >= kSplitRowsFrom ? row_chunk_length(rows) : 0;
}

// A sum or mean over dim 0 into one element (a loss: every element of a tensor) splits a long
// row into chunks of dim0_chunk_length elements: a partial per chunk (as reduce_sum over that
// chunk: lane-wise sums, then the lanes' pairwise tree), then those partials reduced the same
// way, the mean dividing by the whole count. From kSplitDim0From elements on; the chunk is the
// largest multiple of 64 elements up to kMaxDim0Chunk dividing the row into two or more.
inline constexpr uint64_t kSplitDim0From = 65536;
inline constexpr uint32_t kMaxDim0Chunk = 8192;

constexpr uint32_t dim0_chunk_length(uint64_t elements) {
  if (elements < kSplitDim0From) return 0;
  for (uint32_t length = kMaxDim0Chunk; length >= 64; length -= 64)
    if (elements % length == 0 && elements / length >= 2) return length;
  return 0;
}

}  // namespace hpusim::synapse::tpc_kernels
