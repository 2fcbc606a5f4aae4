// The MME GUIDs of the graph: their tensors, shape rules and attributes, and the MME job a node
// lowers to (mme::MmeJob, without addresses). Shapes are dim 0 innermost, as every shape of the
// graph, so a row-major R x C matrix is the shape [C, R]:
//
//   gemm                 A [K, M] (transpose_a: [M, K]), B [N, K] (transpose_b: [K, N]) -> O [N, M]
//   batch_gemm           the same with 1..3 batch dims after the matrix dims, equal in A, B, O
//   spatial_convolution  x [C, W, H, N], w [K, C, S, R] -> y [K, Q, P, N]    (NHWC, RSCK, NPQK)
//   dedx                 dy [K, Q, P, N], w [K, C, S, R] -> dx [C, W, H, N]
//   dedw                 dy [K, Q, P, N], x [C, W, H, N] -> dw [K, C, S, R]
//
// Attributes (NodeParams::attributes; absent ones take the default): gemm / batch_gemm
// transpose_a, transpose_b (0 or 1, default 0); the convolutions stride_h, stride_w (1 .. 65535,
// default 1), pad_h, pad_w (0 .. 65535, default 0), dil_h, dil_w (1 .. 65535, default 1). Inputs
// are bf16 or f32 (both the same), the output bf16 or f32. No scalar parameters.
#pragma once

#include <string>
#include <vector>

#include "arch/mme/mme_job.h"
#include "synapse/graph/graph.h"

namespace hpusim::synapse::graph {

// "gemm", "batch_gemm", "spatial_convolution", "dedx", "dedw".
const std::vector<std::string>& mme_guids();
bool is_mme_guid(const std::string& guid);

// Checks an MME node (counts, attributes, dtypes, ranks, shapes, then mme::validate on the job for
// an engine with one geometry) and fills *job. Errors are synInvalidArgument, their messages as
// validate()'s: "node 'fc1': tensor 'w1': gemm: input 1 (B): K is 128 ..." (README.md).
Result mme_job_for(const Graph& graph, NodeId node, mme::MmeJob* job = nullptr);

}  // namespace hpusim::synapse::graph
