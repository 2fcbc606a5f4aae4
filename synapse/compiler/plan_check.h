// The memory plan's invariants, checked on their own: the tests check the planner's plans with
// it, and the planner checks itself.
#pragma once

#include "synapse/compiler/memory_plan.h"

namespace hpusim::synapse::compiler {

// synFail with the first broken rule, or success. The rules: the alignment is a power of two;
// every planned tensor is a non-persistent tensor of the graph, planned once, with a live range
// that does not run backwards, a size equal to its bytes rounded up to the alignment, an aligned
// offset and an end within workspace_bytes; bytes_without_reuse is the sum of the sizes; two
// tensors live at a common step do not overlap in memory.
Result check_plan(const Graph& graph, const MemoryPlan& plan);

}  // namespace hpusim::synapse::compiler
