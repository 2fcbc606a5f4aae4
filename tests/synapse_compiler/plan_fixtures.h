// Graphs for the memory planner's tests and the plans made of them. The planner reads only the
// structure (which node reads and writes which tensor), so most graphs use a made-up GUID and
// are ordered by topological_order rather than validated.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "synapse/compiler/memory_plan.h"
#include "synapse/graph/validate.h"
#include "tests/synapse_graph/graph_spec.h"

namespace hpusim::synapse::compiler::testing {

using graph::DType;
using graph::TensorDesc;
using graph::testing::build;
using graph::testing::GraphSpec;

struct Planned {
  Graph graph;
  std::vector<NodeId> order;
  MemoryPlan plan;
  Result result;
};

inline Planned plan_spec(const GraphSpec& spec, uint64_t alignment = kDefaultAlignment, uint64_t sram_capacity = 0) {
  Planned p{build(spec), {}, {}, {}};
  p.order = graph::topological_order(p.graph).value();
  p.result = plan_memory(p.graph, p.order, &p.plan, alignment, sram_capacity);
  return p;
}

inline const PlannedTensor& planned(const Planned& p, const std::string& name) {
  static const PlannedTensor missing;
  const PlannedTensor* t = p.plan.find(*p.graph.find_tensor(name));
  if (!t) ADD_FAILURE() << "tensor " << name << " is not planned";
  return t ? *t : missing;
}

inline std::vector<std::string> node_names(const Graph& g, const std::vector<NodeId>& nodes) {
  return graph::testing::names(g, nodes);
}

// x -> n0 -> a -> n1 -> b -> n2 -> c -> n3 -> d -> n4 -> y, every tensor f32 [64, 32] (8 KiB);
// x and y persistent.
inline GraphSpec chain_spec() {
  GraphSpec s;
  const std::vector<std::string> tensors = {"x", "a", "b", "c", "d", "y"};
  for (size_t i = 0; i < tensors.size(); ++i)
    s.tensors.push_back({tensors[i], DType::F32, {64, 32}, i == 0 || i + 1 == tensors.size()});
  for (size_t i = 0; i + 1 < tensors.size(); ++i)
    s.nodes.push_back({"n" + std::to_string(i), "op", {tensors[i]}, {tensors[i + 1]}, {}});
  return s;
}

}  // namespace hpusim::synapse::compiler::testing
