#include "synapse/compiler/memory_order.h"

#include <algorithm>
#include <map>

#include "synapse/compiler/tensor_size.h"

namespace hpusim::synapse::compiler {

using graph::NodeDesc;
using graph::NodeId;
using graph::TensorId;

std::vector<std::vector<uint32_t>> memory_predecessors(const graph::Graph& g, const std::vector<NodeId>& order) {
  struct Touch {
    uint32_t node;
    TensorId tensor;
    bool writes;
  };
  // The touches of persistent memory with a section, per section, in the order.
  std::map<uint32_t, std::vector<Touch>> by_section;
  for (NodeId id : order) {
    const NodeDesc& node = g.node(id);
    for (const auto* list : {&node.inputs, &node.outputs})
      for (TensorId t : *list) {
        const graph::TensorDesc& desc = g.tensor(t);
        if (desc.persistent && desc.section) by_section[desc.section->id].push_back({id.index, t, list == &node.outputs});
      }
  }
  std::vector<std::vector<uint32_t>> before(g.node_count());
  for (const auto& [section, touches] : by_section)
    for (size_t j = 0; j < touches.size(); ++j)
      for (size_t i = 0; i < j; ++i) {
        const Touch& a = touches[i];
        const Touch& b = touches[j];
        if (a.node != b.node && (a.writes || b.writes) && share_memory(g, a.tensor, b.tensor))
          before[b.node].push_back(a.node);
      }
  for (auto& list : before) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return before;
}

}  // namespace hpusim::synapse::compiler
