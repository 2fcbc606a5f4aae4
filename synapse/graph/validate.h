// Whole-graph validation and the topological order the compiler walks (README.md lists every
// check and its message).
#pragma once

#include <optional>
#include <vector>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::graph {

// The nodes in dependency order (a node after every node that writes a tensor it reads), ties
// broken by creation order: of the nodes whose inputs are all ready, the earliest created goes
// first. nullopt when there is none: a tensor written by two nodes, or a cycle.
std::optional<std::vector<NodeId>> topological_order(const Graph& graph);

// Checks the graph, in this order, and reports the first problem:
//   1. a tensor written by two nodes (synInvalidArgument);
//   2. per node, in creation order: a GUID that is neither a TPC kernel nor an MME GUID
//      (synUnsupported); an input that no node writes and that is not persistent
//      (synInvalidArgument);
//   3. a cycle (synInvalidArgument), named node -> tensor -> node ... from its earliest node;
//   4. per node, in topological order: validate_node.
// On success *order (if given) receives topological_order(graph).
Result validate(const Graph& graph, std::vector<NodeId>* order = nullptr);

// The node's own check: TPC GUIDs through the kernel library's instantiate (its message
// prefixed with the node and, when it names one of the node's tensors, the tensor); MME GUIDs
// through mme_job_for.
Result validate_node(const Graph& graph, NodeId node);

}  // namespace hpusim::synapse::graph
