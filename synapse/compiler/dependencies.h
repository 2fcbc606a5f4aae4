// Which earlier nodes each node must wait for, given the order and the memory plan: the writers
// of what it reads (read after write), and every earlier node that reads or writes memory its
// outputs overlap (write after read / write: the planner reuses workspace memory). Waits that
// another wait already implies are dropped, so each node waits for a minimal set. Persistent
// tensors of one section overlap by their section offsets (an optimizer's updated weight at the
// weight's own offset is the weight), those without a section only themselves. A copy planned as
// a view (plan.view_steps) touches nothing: its readers read its source's bytes, so they wait for
// the source's writer, and nothing waits for it.
#pragma once

#include <cstdint>
#include <vector>

#include "synapse/compiler/memory_plan.h"

namespace hpusim::synapse::compiler {

// result[i]: the steps (indices into `order`) step i waits for, ascending, all < i.
std::vector<std::vector<uint32_t>> node_dependencies(const Graph& graph, const std::vector<NodeId>& order,
                                                     const MemoryPlan& plan);

}  // namespace hpusim::synapse::compiler
