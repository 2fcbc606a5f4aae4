// The DMA GUIDs of the graph: "memcpy" copies its input's bytes to its output, which may have
// another shape (a reshape that materialises) but must have the same dtype and element count.
// The compiler lowers it to a linear DMA on an internal DMA engine.
#pragma once

#include <string>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::graph {

bool is_dma_guid(const std::string& guid);

// One input, one output, equal dtypes and element counts; messages as validate()'s
// ("node 'r': memcpy: output 0 'y' has 96 elements, input 0 'x' has 64").
Result dma_node_check(const Graph& graph, NodeId node);

}  // namespace hpusim::synapse::graph
