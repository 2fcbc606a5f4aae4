// Elementwise clusters: groups of f32 elementwise nodes of one output shape that become one TPC
// kernel (KernelLibrary::instantiate_cluster), as the real graph compiler's TPC fuser merges
// elementwise subgraphs. Where a chain of ops becomes one launch (fusion.h), a cluster takes any
// DAG: several inputs and outputs, values read by several ops, constants from fill nodes. An
// optimizer step written as elementwise ops (torch's Adadelta: 13 ops per parameter) becomes one
// launch per parameter that reads each tensor once and writes each result once. A member's inputs
// have its output's shape, or one element, or are constants, or are a row broadcast along dims
// >= 1 too wide for the binary kernel's bias-row variant (which loads a row of at most
// KernelLibrary::kBiasRowVectors vectors once per core; wider rows are read again for every row by
// either kernel, so a cluster costs nothing more there: BERT's 3072-wide bias add and its gelu).
//
// A cluster is grown in topological order: a node joins the clusters of its producers (merging
// them) when no path leaves the cluster and comes back through a node outside it (paths follow
// tensors and the memory order, memory_order.h), the kernel keeps within 16 tensors and its value
// registers, and the cluster within kMaxClusterNodes. Fill nodes are constants: every cluster
// reading one holds the value in a register, and the fill node goes away when nothing else reads
// its tensor. Kept only where it pays: a cluster of one node must have absorbed a constant, and a
// plain chain is left to the chain fusion (which has the bias-row and dim-0 broadcast variants).
// In one kernel every input is loaded before any output is stored, so an input that shares
// memory with an output must be that output's memory exactly (an in-place update) and be read
// before the member writing it; a member breaking that is left out and the clusters grown again.
// An output the cluster overwrites itself (an in-place op followed by another on the same
// tensor) and nothing outside reads is not stored.
#pragma once

#include <cstdint>
#include <vector>

#include "synapse/graph/graph.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::compiler {

inline constexpr size_t kMaxClusterNodes = 48;

struct Cluster {
  std::vector<uint32_t> members;                // node indices, in topological order
  std::vector<graph::TensorId> inputs;          // what the kernel reads (not the constants)
  std::vector<graph::TensorId> outputs;         // persistent or read by a node outside
  tpc_kernels::ElementwiseCluster kernel;       // values: `inputs`, then per op its result
};

struct Clusters {
  std::vector<Cluster> clusters;
  std::vector<int32_t> cluster_of;   // per node: its cluster, or -1
  std::vector<bool> dropped;         // per node: a fill whose tensor only clusters read
};

// `graph` must be valid; `vector_bits`: the TPC's vector width (which rows the bias-row variant
// holds).
Clusters find_elementwise_clusters(const graph::Graph& graph,
                                   unsigned vector_bits = tpc_kernels::KernelLibrary::kDefaultVectorBits);

}  // namespace hpusim::synapse::compiler
