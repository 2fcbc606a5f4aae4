// Fusion of elementwise work, where the kernel library allows it:
// - clusters (elementwise_clusters.h): a DAG of f32 elementwise nodes of one shape becomes one
//   kernel (KernelLibrary::instantiate_cluster) that keeps its intermediates in registers;
// - chains (KernelLibrary::can_fuse): a binary or unary elementwise node whose only output feeds
//   only a unary elementwise node of the same dtype becomes one launch with the follower applied
//   in registers (and so on down a chain).
// Intermediate tensors are never written, so they take no memory and no launch waits for them.
// The values are the same: each op rounds to the dtype as it does alone.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "synapse/graph/graph.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::compiler {

// The GUID of a cluster's node in the fused graph (its kernel is FusedGraph::clusters').
inline constexpr const char* kClusterGuid = "elementwise_cluster";

struct FusedGraph {
  graph::Graph graph;   // the same tensors (same ids); a chain or a cluster is one node
  // Per node of `graph` (by index): the unary GUIDs fused after its own GUID, in order.
  std::map<uint32_t, std::vector<std::string>> epilogues;
  // Per cluster node of `graph` (by index): its kernel over the node's inputs and outputs.
  std::map<uint32_t, tpc_kernels::ElementwiseCluster> clusters;
  // Persistent tensors the graph's nodes touch and the fused graph's do not (a cluster's output it
  // overwrites itself): still the recipe's, so a launch may name them.
  std::vector<graph::TensorId> untouched_persistent;
  size_t fused_nodes = 0;
  // The order to lower `graph` in: topological, and keeping the order the graph's topological
  // order gave nodes that touch the same persistent memory (memory_order.h).
  std::vector<graph::NodeId> order;   // original nodes folded into a chain head or a cluster, or dropped
};

// `graph` must be valid. Chain nodes are named "head+next+...", cluster nodes
// "first+...+last (N nodes)".
FusedGraph fuse_elementwise(const graph::Graph& graph,
                            unsigned vector_bits = tpc_kernels::KernelLibrary::kDefaultVectorBits);

}  // namespace hpusim::synapse::compiler
