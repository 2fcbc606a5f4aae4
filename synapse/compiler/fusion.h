// Fusion of elementwise chains, where the kernel library allows it (KernelLibrary::can_fuse): a
// binary or unary elementwise node whose only output feeds only a unary elementwise node of the
// same dtype becomes one launch with the follower applied in registers (and so on down a chain).
// The intermediate tensor is never written, so it takes no memory and no launch waits for it.
// The values are the same: each op rounds to the dtype as it does alone.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::compiler {

struct FusedGraph {
  graph::Graph graph;   // the same tensors (same ids); a chain is one node
  // Per node of `graph` (by index): the unary GUIDs fused after its own GUID, in order.
  std::map<uint32_t, std::vector<std::string>> epilogues;
  size_t fused_nodes = 0;   // original nodes folded into a chain head
};

// `graph` must be valid. Chain nodes are named "head+next+...".
FusedGraph fuse_elementwise_chains(const graph::Graph& graph);

}  // namespace hpusim::synapse::compiler
