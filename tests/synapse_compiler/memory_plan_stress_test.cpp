// Plans that do not depend on creation order, and randomized graphs whose every plan passes the
// checker.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "synapse/compiler/plan_check.h"
#include "synapse/compiler/tensor_size.h"
#include "tests/synapse_compiler/plan_fixtures.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using testing::build;
using testing::GraphSpec;

// A plan told by names: (tensor, offset, size, first step, last step) in placement order, then
// the patch points as "tensor: readers / writers".
std::vector<std::string> by_names(const Graph& g, const MemoryPlan& plan) {
  std::vector<std::string> lines;
  for (const PlannedTensor& t : plan.tensors)
    lines.push_back(g.tensor(t.tensor).name + " " + std::to_string(t.offset) + " " + std::to_string(t.size) + " " +
                    std::to_string(t.first_step) + ".." + std::to_string(t.last_step));
  for (const PatchPoint& p : plan.patch_points) {
    std::string line = g.tensor(p.tensor).name + ":";
    for (NodeId n : p.readers) line += " " + g.node(n).name;
    line += " /";
    for (NodeId n : p.writers) line += " " + g.node(n).name;
    lines.push_back(line);
  }
  lines.push_back("workspace " + std::to_string(plan.workspace_bytes));
  return lines;
}

// The order `names` spells, in graph g.
std::vector<NodeId> order_of(const Graph& g, const std::vector<std::string>& names) {
  std::vector<NodeId> order;
  for (const std::string& n : names) order.push_back(*g.find_node(n));
  return order;
}

// A random DAG: a few persistent inputs, then nodes reading 1 to 3 earlier tensors and writing 1
// or 2 new ones (some persistent), random dtypes and shapes. Listed in data order; the caller
// shuffles the creation order.
GraphSpec random_dag(std::mt19937& rng) {
  auto pick = [&](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng); };
  GraphSpec s;
  auto add_tensor = [&](bool persistent) {
    std::vector<uint32_t> shape(pick(0, 4));
    for (uint32_t& d : shape) d = pick(1, 40);
    s.tensors.push_back({"t" + std::to_string(s.tensors.size()), static_cast<DType>(pick(0, 7)), shape, persistent});
    return s.tensors.back().name;
  };
  const uint32_t inputs = pick(1, 3);
  for (uint32_t i = 0; i < inputs; ++i) add_tensor(true);
  const uint32_t node_count = pick(1, 24);
  for (uint32_t n = 0; n < node_count; ++n) {
    graph::testing::NodeSpec node{"n" + std::to_string(n), "op", {}, {}, {}};
    const uint32_t reads = pick(1, 3);
    for (uint32_t i = 0; i < reads; ++i) node.inputs.push_back(s.tensors[pick(0, s.tensors.size() - 1)].name);
    const uint32_t writes = pick(1, 2);
    for (uint32_t i = 0; i < writes; ++i) node.outputs.push_back(add_tensor(pick(0, 6) == 0));
    s.nodes.push_back(node);
  }
  return s;
}

TEST(SynapseMemoryPlanStress, ThePlanDependsOnTheOrderNotOnCreationOrder) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    const GraphSpec spec = random_dag(rng);
    const Graph first = build(spec);
    std::vector<std::string> names;
    const std::vector<NodeId> order = graph::topological_order(first).value();
    for (NodeId n : order) names.push_back(first.node(n).name);
    MemoryPlan expected;
    ASSERT_TRUE(plan_memory(first, order_of(first, names), &expected).ok());
    for (int shuffle = 0; shuffle < 3; ++shuffle) {
      GraphSpec shuffled = spec;
      std::shuffle(shuffled.tensors.begin(), shuffled.tensors.end(), rng);
      std::shuffle(shuffled.nodes.begin(), shuffled.nodes.end(), rng);
      const Graph g = build(shuffled);
      MemoryPlan plan;
      ASSERT_TRUE(plan_memory(g, order_of(g, names), &plan).ok());
      EXPECT_EQ(by_names(g, plan), by_names(first, expected)) << "round " << round;
    }
  }
}

// The bytes live at the busiest step: no plan can do with less.
uint64_t peak_live_bytes(const MemoryPlan& plan, size_t steps) {
  uint64_t peak = 0;
  for (uint32_t s = 0; s < steps; ++s) {
    uint64_t live = 0;
    for (const PlannedTensor& t : plan.tensors)
      if (t.first_step <= s && s <= t.last_step) live += t.size;
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(SynapseMemoryPlanStress, RandomGraphsGetValidPlans) {
  std::mt19937 rng(2024);
  const uint64_t alignments[] = {1, 2, 64, 128, 4096};
  for (int round = 0; round < 300; ++round) {
    GraphSpec spec = random_dag(rng);
    std::shuffle(spec.tensors.begin(), spec.tensors.end(), rng);
    std::shuffle(spec.nodes.begin(), spec.nodes.end(), rng);
    const Graph g = build(spec);
    const std::vector<NodeId> order = graph::topological_order(g).value();
    const uint64_t alignment = alignments[std::uniform_int_distribution<size_t>(0, 4)(rng)];
    MemoryPlan plan;
    const Result r = plan_memory(g, order, &plan, alignment);
    ASSERT_TRUE(r.ok()) << "round " << round << ": " << r.message;
    const Result check = check_plan(g, plan);
    ASSERT_TRUE(check.ok()) << "round " << round << ": " << check.message;
    EXPECT_LE(plan.workspace_bytes, plan.bytes_without_reuse) << "round " << round;
    EXPECT_GE(plan.workspace_bytes, peak_live_bytes(plan, order.size())) << "round " << round;
    size_t touched_persistent = 0, touched_workspace = 0;
    for (uint32_t t = 0; t < g.tensor_count(); ++t) {
      bool touched = false;
      for (NodeId n : order)
        for (const std::vector<TensorId>* io : {&g.node(n).inputs, &g.node(n).outputs})
          touched = touched || std::count(io->begin(), io->end(), TensorId{t}) > 0;
      if (!touched) continue;
      ++(g.tensor(TensorId{t}).persistent ? touched_persistent : touched_workspace);
      EXPECT_EQ(g.tensor(TensorId{t}).persistent, plan.find(TensorId{t}) == nullptr) << "round " << round;
    }
    EXPECT_EQ(plan.patch_points.size(), touched_persistent) << "round " << round;
    EXPECT_EQ(plan.tensors.size(), touched_workspace) << "round " << round;
  }
}

}  // namespace
}  // namespace hpusim::synapse::compiler
