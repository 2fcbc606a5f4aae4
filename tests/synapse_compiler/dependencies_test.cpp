// The waits between nodes: writers before readers, readers before a later writer of the same
// memory (workspace reuse, in-place updates through a section), and no wait another implies.
#include <gtest/gtest.h>

#include "synapse/compiler/dependencies.h"
#include "synapse/graph/validate.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using graph::Section;

struct Built {
  Graph graph;
  std::vector<NodeId> order;
  MemoryPlan plan;
  std::vector<std::vector<uint32_t>> waits;
  void finish() {
    ASSERT_TRUE(graph::validate(graph, &order).ok());
    ASSERT_TRUE(plan_memory(graph, order, &plan).ok());
    waits = node_dependencies(graph, order, plan);
  }
  TensorId tensor(const std::string& name, std::vector<uint32_t> shape, bool persistent = false,
                  std::optional<Section> section = std::nullopt) {
    TensorId id;
    EXPECT_TRUE(graph.add_tensor({name, DType::F32, std::move(shape), persistent, section}, &id).ok());
    return id;
  }
  void node(const std::string& name, const std::string& guid, std::vector<TensorId> in, std::vector<TensorId> out) {
    EXPECT_TRUE(graph.add_node({name, guid, std::move(in), std::move(out), {}}).ok());
  }
};

TEST(SynapseDependencies, AChainWaitsForItsProducerOnly) {
  Built b;
  const TensorId x = b.tensor("x", {64}, true), a = b.tensor("a", {64}), c = b.tensor("c", {64}),
                 y = b.tensor("y", {64}, true);
  b.node("n0", "relu_fwd_f32", {x}, {a});
  b.node("n1", "neg_fwd_f32", {a}, {c});
  b.node("n2", "abs_fwd_f32", {c}, {y});
  b.finish();
  EXPECT_EQ(b.waits, (std::vector<std::vector<uint32_t>>{{}, {0}, {1}}));
}

TEST(SynapseDependencies, ReusedWorkspaceWaitsForTheOldReadersAndImpliedWaitsAreDropped) {
  // n0: x -> a; n1: a -> b; n2: b -> c (c reuses a's memory: n2 must follow n1, which it does
  // through b); n3: a-independent x -> d (d may reuse b's memory after n2 read it).
  Built b;
  const TensorId x = b.tensor("x", {64}, true), a = b.tensor("a", {64}), bb = b.tensor("b", {64}),
                 c = b.tensor("c", {64}), y = b.tensor("y", {64}, true);
  b.node("n0", "relu_fwd_f32", {x}, {a});
  b.node("n1", "neg_fwd_f32", {a}, {bb});
  b.node("n2", "abs_fwd_f32", {bb}, {c});
  b.node("n3", "add_fwd_f32", {c, x}, {y});
  b.finish();
  ASSERT_EQ(b.plan.find(c)->offset, b.plan.find(a)->offset) << "the planner reuses a's memory for c";
  // n2 waits for n1 only (n1 already follows n0, the last reader of a's memory besides n1).
  EXPECT_EQ(b.waits[2], (std::vector<uint32_t>{1}));
  EXPECT_EQ(b.waits[3], (std::vector<uint32_t>{2}));
}

TEST(SynapseDependencies, AnInPlaceUpdateThroughASectionWaitsForEveryReaderOfTheOldValue) {
  // w is read by n0 and n1; n2 writes w_new at w's place in the same section, depending only
  // on n0's output: it must also wait for n1, which reads w.
  Built b;
  const TensorId x = b.tensor("x", {64}, true), w = b.tensor("w", {64}, true, Section{1, 0}),
                 w_new = b.tensor("w_new", {64}, true, Section{1, 0}), g = b.tensor("g", {64}),
                 y = b.tensor("y", {64}, true);
  b.node("n0", "mul_fwd_f32", {x, w}, {g});
  b.node("n1", "add_fwd_f32", {x, w}, {y});
  b.node("n2", "sub_fwd_f32", {w, g}, {w_new});
  b.finish();
  EXPECT_EQ(b.waits[2], (std::vector<uint32_t>{0, 1}));

  // Without the shared section nothing ties n2 to n1.
  Built apart;
  const TensorId x2 = apart.tensor("x", {64}, true), w2 = apart.tensor("w", {64}, true),
                 w2_new = apart.tensor("w_new", {64}, true), g2 = apart.tensor("g", {64}),
                 y2 = apart.tensor("y", {64}, true);
  apart.node("n0", "mul_fwd_f32", {x2, w2}, {g2});
  apart.node("n1", "add_fwd_f32", {x2, w2}, {y2});
  apart.node("n2", "sub_fwd_f32", {w2, g2}, {w2_new});
  apart.finish();
  EXPECT_EQ(apart.waits[2], (std::vector<uint32_t>{0}));
}

}  // namespace
}  // namespace hpusim::synapse::compiler
