#include "synapse/compiler/dependencies.h"

#include <algorithm>

#include "synapse/compiler/tensor_size.h"

namespace hpusim::synapse::compiler {
namespace {

// A span of memory a step touches: a byte range of the workspace, of a section (persistent
// tensors of one section share memory by their offsets), or a persistent tensor of its own.
struct Touch {
  enum Space : uint8_t { kWorkspace, kSram, kSection, kTensor } space = kWorkspace;
  uint32_t id = 0;   // the section id, or the tensor index
  uint64_t begin = 0, end = 0;
  bool write = false;
};

bool overlap(const Touch& a, const Touch& b) {
  if (a.space != b.space || a.id != b.id) return false;
  if (a.space == Touch::kTensor) return true;
  return a.begin < b.end && b.begin < a.end;
}

}  // namespace

std::vector<std::vector<uint32_t>> node_dependencies(const Graph& graph, const std::vector<NodeId>& order,
                                                     const MemoryPlan& plan) {
  const size_t steps = order.size();
  std::vector<std::vector<Touch>> touches(steps);
  for (size_t i = 0; i < steps; ++i) {
    if (plan.is_view_step(static_cast<uint32_t>(i))) continue;   // its readers wait for its source's writer
    const graph::NodeDesc& node = graph.node(order[i]);
    const auto add = [&](TensorId t, bool write) {
      Touch touch;
      touch.write = write;
      const graph::TensorDesc& desc = graph.tensor(t);
      if (desc.persistent && desc.section) {
        touch.space = Touch::kSection;
        touch.id = desc.section->id;
        touch.begin = desc.section->offset;
        touch.end = touch.begin + std::max<uint64_t>(tensor_bytes(desc).value_or(1), 1);
      } else if (desc.persistent) {
        touch.space = Touch::kTensor;
        touch.id = t.index;
      } else if (const PlannedTensor* p = plan.find(t)) {
        touch.space = p->in_sram ? Touch::kSram : Touch::kWorkspace;
        touch.begin = p->offset;
        touch.end = p->offset + p->size;
      } else {
        return;   // takes no memory
      }
      touches[i].push_back(touch);
    };
    for (TensorId t : node.inputs) add(t, false);
    for (TensorId t : node.outputs) add(t, true);
  }

  // reach[i][j]: step i already waits, directly or not, for step j.
  std::vector<std::vector<bool>> reach(steps, std::vector<bool>(steps, false));
  std::vector<std::vector<uint32_t>> result(steps);
  for (size_t i = 0; i < steps; ++i) {
    std::vector<uint32_t> direct;
    for (size_t j = 0; j < i; ++j) {
      bool needed = false;
      for (const Touch& mine : touches[i]) {
        for (const Touch& theirs : touches[j]) {
          // Two reads never conflict; anything involving a write does.
          if ((mine.write || theirs.write) && overlap(mine, theirs)) needed = true;
        }
      }
      if (needed) direct.push_back(static_cast<uint32_t>(j));
    }
    // Keep only the waits no later wait implies (the latest steps first).
    std::sort(direct.rbegin(), direct.rend());
    for (uint32_t j : direct) {
      if (reach[i][j]) continue;
      result[i].push_back(j);
      reach[i][j] = true;
      for (size_t k = 0; k < j; ++k) {
        if (reach[j][k]) reach[i][k] = true;
      }
    }
    std::sort(result[i].begin(), result[i].end());
  }
  return result;
}

}  // namespace hpusim::synapse::compiler
