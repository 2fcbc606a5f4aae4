// The order persistent memory imposes on a graph's nodes. The graph links nodes by tensors; a node
// may also touch persistent memory another node touches under another tensor (an in-place update
// written to the weight's own offset, a copy into a view read later). The compiler keeps such
// pairs in the order the topological order gives them, so fusion, which regroups nodes, must keep
// them too: these are the edges it adds to the tensors' when it checks paths and orders the fused
// graph.
#pragma once

#include <cstdint>
#include <vector>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::compiler {

// Per node: the nodes before it in `order` that touch persistent memory it touches (sections'
// byte ranges overlapping, share_memory), one of the two writing it. Ascending, no duplicates.
std::vector<std::vector<uint32_t>> memory_predecessors(const graph::Graph& graph,
                                                       const std::vector<graph::NodeId>& order);

}  // namespace hpusim::synapse::compiler
