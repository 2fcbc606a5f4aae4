#include "synapse/compiler/fusion.h"

#include <stdexcept>

#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::compiler {

using graph::NodeDesc;
using graph::NodeId;
using graph::TensorId;

FusedGraph fuse_elementwise_chains(const graph::Graph& g) {
  const auto& library = tpc_kernels::KernelLibrary::instance();
  // Readers and writer of every tensor.
  std::vector<std::vector<uint32_t>> readers(g.tensor_count());
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    for (TensorId t : g.node(NodeId{n}).inputs) readers[t.index].push_back(n);
  }
  // next[n]: the node fused after n, if any.
  std::vector<int64_t> next(g.node_count(), -1);
  std::vector<bool> absorbed(g.node_count(), false);
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    const NodeDesc& producer = g.node(NodeId{n});
    if (producer.outputs.size() != 1 || !producer.params.scalars.empty()) continue;
    const TensorId t = producer.outputs[0];
    if (g.tensor(t).persistent || readers[t.index].size() != 1) continue;
    const uint32_t f = readers[t.index][0];
    const NodeDesc& follower = g.node(NodeId{f});
    if (follower.inputs.size() != 1 || follower.outputs.size() != 1 || !follower.params.scalars.empty()) continue;
    if (g.tensor(follower.outputs[0]).shape != g.tensor(t).shape) continue;
    if (!library.can_fuse(producer.guid, follower.guid)) continue;
    next[n] = f;
    absorbed[f] = true;
  }

  FusedGraph out;
  for (uint32_t t = 0; t < g.tensor_count(); ++t) {
    const graph::Result r = out.graph.add_tensor(g.tensor(TensorId{t}));
    if (!r.ok()) throw std::logic_error("fusion: " + r.message);
  }
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    if (absorbed[n]) continue;
    NodeDesc node = g.node(NodeId{n});
    std::vector<std::string> epilogue;
    for (int64_t f = next[n]; f >= 0; f = next[static_cast<size_t>(f)]) {
      const NodeDesc& follower = g.node(NodeId{static_cast<uint32_t>(f)});
      node.name += "+" + follower.name;
      node.outputs = follower.outputs;
      epilogue.push_back(follower.guid);
      ++out.fused_nodes;
    }
    NodeId id;
    const graph::Result r = out.graph.add_node(node, &id);
    if (!r.ok()) throw std::logic_error("fusion: " + r.message);
    if (!epilogue.empty()) out.epilogues[id.index] = std::move(epilogue);
  }
  return out;
}

}  // namespace hpusim::synapse::compiler
