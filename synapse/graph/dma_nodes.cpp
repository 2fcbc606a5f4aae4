#include "synapse/graph/dma_nodes.h"

namespace hpusim::synapse::graph {
namespace {

uint64_t elements(const TensorDesc& t) {
  uint64_t n = 1;
  for (uint32_t d : t.shape) n *= d;
  return n;
}

}  // namespace

bool is_dma_guid(const std::string& guid) { return guid == "memcpy"; }

Result dma_node_check(const Graph& graph, NodeId id) {
  const NodeDesc& node = graph.node(id);
  const std::string who = "node '" + node.name + "': " + node.guid + ": ";
  if (node.inputs.size() != 1 || node.outputs.size() != 1) {
    return Result::error(Status::InvalidArgument, who + "takes one input and one output, not " +
                                                      std::to_string(node.inputs.size()) + " and " +
                                                      std::to_string(node.outputs.size()));
  }
  if (!node.params.scalars.empty() || !node.params.attributes.empty()) {
    return Result::error(Status::InvalidArgument, who + "takes no parameters");
  }
  const TensorDesc& in = graph.tensor(node.inputs[0]);
  const TensorDesc& out = graph.tensor(node.outputs[0]);
  if (in.dtype != out.dtype) {
    return Result::error(Status::InvalidArgument, who + "output 0 '" + out.name + "' is " + tpc::dtype_name(out.dtype) +
                                                      ", input 0 '" + in.name + "' is " + tpc::dtype_name(in.dtype));
  }
  if (elements(in) != elements(out)) {
    return Result::error(Status::InvalidArgument, who + "output 0 '" + out.name + "' has " +
                                                      std::to_string(elements(out)) + " elements, input 0 '" +
                                                      in.name + "' has " + std::to_string(elements(in)));
  }
  return Result::success();
}

}  // namespace hpusim::synapse::graph
