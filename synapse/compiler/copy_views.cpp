#include "synapse/compiler/copy_views.h"

#include "synapse/compiler/tensor_size.h"
#include "synapse/graph/dma_nodes.h"

namespace hpusim::synapse::compiler {

std::vector<CopyView> find_copy_views(const graph::Graph& graph, const std::vector<graph::NodeId>& order) {
  std::vector<CopyView> views;
  for (uint32_t step = 0; step < order.size(); ++step) {
    const graph::NodeDesc& node = graph.node(order[step]);
    if (!graph::is_dma_guid(node.guid) || node.inputs.size() != 1 || node.outputs.size() != 1) continue;
    const graph::TensorDesc& source = graph.tensor(node.inputs[0]);
    const graph::TensorDesc& view = graph.tensor(node.outputs[0]);
    if (source.persistent || view.persistent || node.inputs[0] == node.outputs[0]) continue;
    if (tensor_bytes(source) != tensor_bytes(view) || !tensor_bytes(view)) continue;
    views.push_back({step, node.inputs[0], node.outputs[0]});
  }
  return views;
}

}  // namespace hpusim::synapse::compiler
