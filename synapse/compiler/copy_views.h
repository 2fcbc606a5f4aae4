// Copies that need no copying: a memcpy from one workspace tensor into another (a reshape the
// graph materialises) is planned as a view, its output placed on its source's bytes, and emits
// no DMA. Both tensors are written once (the graph's rule for non-persistent tensors), so the
// shared bytes hold the same values for every reader of either; the planner keeps the source
// live until the view's last reader. A copy into or out of a persistent tensor stays a copy.
#pragma once

#include <vector>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::compiler {

struct CopyView {
  uint32_t step = 0;        // the memcpy's index in the order
  graph::TensorId source;   // its input
  graph::TensorId view;     // its output, placed on the input's bytes
};

// The memcpy nodes of `order` that become views, in step order.
std::vector<CopyView> find_copy_views(const graph::Graph& graph, const std::vector<graph::NodeId>& order);

}  // namespace hpusim::synapse::compiler
