// The scheduler: an optimizer group split by when its entries can start (gradients produced, the
// old weight's readers done), each part before the next MME node, the last part keeping the
// state; the inputs of earlier parts held live until the last part.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "synapse/compiler/schedule.h"
#include "synapse/graph/validate.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using graph::Section;

struct Built {
  Graph graph;
  std::vector<NodeId> order;
  TensorId tensor(const std::string& name, bool persistent = false, std::optional<Section> section = std::nullopt,
                  std::vector<uint32_t> shape = {64, 64}) {
    TensorId id;
    EXPECT_TRUE(graph.add_tensor({name, DType::F32, std::move(shape), persistent, section}, &id).ok());
    return id;
  }
  void node(const std::string& name, const std::string& guid, std::vector<TensorId> in, std::vector<TensorId> out,
            std::vector<float> scalars = {}) {
    graph::NodeDesc d{name, guid, std::move(in), std::move(out), {}};
    d.params.scalars = std::move(scalars);
    EXPECT_TRUE(graph.add_node(d).ok());
  }
  // A parameter with its Adam state, each updated in place (outputs at the inputs' offsets).
  struct Param {
    TensorId w, m, v, w_out, m_out, v_out;
  };
  Param param(const std::string& name, uint32_t section) {
    Param p;
    p.w = tensor(name, true, Section{section, 0});
    p.m = tensor(name + "_m", true, Section{section, 1 << 16});
    p.v = tensor(name + "_v", true, Section{section, 2 << 16});
    p.w_out = tensor(name + "_new", true, Section{section, 0});
    p.m_out = tensor(name + "_m_new", true, Section{section, 1 << 16});
    p.v_out = tensor(name + "_v_new", true, Section{section, 2 << 16});
    return p;
  }
  std::vector<std::string> names(const ScheduledGraph& s) const {
    std::vector<std::string> out;
    for (NodeId n : s.order) out.push_back(s.graph.node(n).name);
    return out;
  }
};

const std::vector<float> kAdam{0.9f, 0.999f, 1e-8f, 0.0f, 1.0f};
// Small GEMMs that hide any update: the placement rules without the cost model.
const ScheduleOptions kAnyGemmHides{0, 0};

const graph::NodeDesc& by_name(const ScheduledGraph& s, const std::string& name) {
  for (uint32_t n = 0; n < s.graph.node_count(); ++n)
    if (s.graph.node(NodeId{n}).name == name) return s.graph.node(NodeId{n});
  throw std::runtime_error("no node " + name);
}

// Two layers' forward and backward, then one Adam group over both weights: w2's gradient (g2)
// is ready after grad2, w1's (g1) after grad1; fwd reads w2, bwd reads w1.
struct TwoLayers : Built {
  TensorId state, state_out, x, a, g2, g1p, g1;
  Param w1, w2;
  TwoLayers() {
    state = tensor("state", true, Section{9, 0}, {2});
    state_out = tensor("state_new", true, Section{9, 0}, {2});
    x = tensor("x", true);
    a = tensor("a");
    g2 = tensor("g2");
    g1p = tensor("g1p");
    g1 = tensor("g1");
    w1 = param("w1", 1);
    w2 = param("w2", 2);
    node("fwd", "gemm", {x, w2.w}, {a});
    node("grad2", "relu_fwd_f32", {a}, {g2});
    node("bwd", "gemm", {g2, w1.w}, {g1p});
    node("grad1", "relu_fwd_f32", {g1p}, {g1});
    node("adam", "fused_adam_f32", {state, w1.w, g1, w1.m, w1.v, w2.w, g2, w2.m, w2.v},
         {state_out, w1.w_out, w1.m_out, w1.v_out, w2.w_out, w2.m_out, w2.v_out}, kAdam);
    EXPECT_TRUE(graph::validate(graph, &order).ok());
  }
};

TEST(SynapseSchedule, AnOptimizerGroupSplitsByWhenItsGradientsAreReady) {
  TwoLayers b;
  const auto& [state, state_out, g2, g1, w1, w2] = std::tie(b.state, b.state_out, b.g2, b.g1, b.w1, b.w2);

  const ScheduledGraph s = schedule_nodes(b.graph, b.order, kAnyGemmHides);
  EXPECT_EQ(s.split_nodes, 1u);
  EXPECT_EQ(s.added_nodes, 1u);
  ASSERT_TRUE(graph::validate(s.graph).ok());
  // w2's update is ready once grad2 has run (fwd read the old w2 before): it goes before the next
  // MME node, bwd; w1's (its gradient comes last) keeps the name and the state.
  EXPECT_EQ(b.names(s), (std::vector<std::string>{"fwd", "grad2", "adam/part0", "bwd", "grad1", "adam"}));
  const graph::NodeDesc& part = by_name(s, "adam/part0");
  EXPECT_EQ(part.guid, "fused_adam_f32");
  EXPECT_EQ(part.params.scalars, kAdam);
  EXPECT_EQ(part.inputs, (std::vector<TensorId>{state, w2.w, g2, w2.m, w2.v}));
  EXPECT_EQ(part.outputs, (std::vector<TensorId>{w2.w_out, w2.m_out, w2.v_out})) << "no state output";
  const graph::NodeDesc& last = by_name(s, "adam");
  EXPECT_EQ(last.inputs, (std::vector<TensorId>{state, w1.w, g1, w1.m, w1.v}));
  EXPECT_EQ(last.outputs, (std::vector<TensorId>{state_out, w1.w_out, w1.m_out, w1.v_out}));
  // The early part's gradient stays live until the last part (step 5), and the plan says so.
  const auto held = std::find_if(s.holds.begin(), s.holds.end(), [&](const LiveUntil& h) { return h.tensor == g2; });
  ASSERT_NE(held, s.holds.end());
  EXPECT_EQ(held->step, 5u);
  MemoryPlan plan;
  ASSERT_TRUE(plan_memory(s.graph, s.order, &plan, kDefaultAlignment, 0, s.holds).ok());
  EXPECT_EQ(plan.find(g2)->last_step, 5u);
  MemoryPlan unheld;
  ASSERT_TRUE(plan_memory(s.graph, s.order, &unheld).ok());
  EXPECT_EQ(unheld.find(g2)->last_step, 3u) << "bwd reads it last";
}

TEST(SynapseSchedule, AnUpdateWaitsForTheLastReaderOfTheOldWeight) {
  // grad2 is ready at step 1, but bwd (step 2) still reads w2: w2's update follows bwd, before
  // the next GEMM (grad1).
  Built b;
  const TensorId state = b.tensor("state", true, Section{9, 0}, {2}), state_out = b.tensor("state_new", true, Section{9, 0}, {2});
  const TensorId x = b.tensor("x", true), a = b.tensor("a"), g2 = b.tensor("g2"), g1p = b.tensor("g1p"), g1 = b.tensor("g1");
  const Built::Param w1 = b.param("w1", 1), w2 = b.param("w2", 2);
  b.node("fwd", "gemm", {x, w1.w}, {a});
  b.node("grad2", "relu_fwd_f32", {a}, {g2});
  b.node("bwd", "gemm", {g2, w2.w}, {g1p});
  b.node("grad1", "gemm", {g1p, x}, {g1});
  b.node("adam", "fused_adam_f32", {state, w1.w, g1, w1.m, w1.v, w2.w, g2, w2.m, w2.v},
         {state_out, w1.w_out, w1.m_out, w1.v_out, w2.w_out, w2.m_out, w2.v_out}, kAdam);
  ASSERT_TRUE(graph::validate(b.graph, &b.order).ok());
  const ScheduledGraph s = schedule_nodes(b.graph, b.order, kAnyGemmHides);
  EXPECT_EQ(b.names(s), (std::vector<std::string>{"fwd", "grad2", "bwd", "adam/part0", "grad1", "adam"}));
}

TEST(SynapseSchedule, AnUpdateNoGemmCanHideStaysWithTheLastPart) {
  // The first test's graph with the default cost model: its 64x64x64 GEMMs (262144 MACs) hide
  // 8 KB of update at 32 MACs a byte, against w2's 112 KB and a launch: nothing moves.
  TwoLayers b;
  const ScheduledGraph s = schedule_nodes(b.graph, b.order);
  EXPECT_EQ(s.split_nodes, 0u);
  EXPECT_EQ(b.names(s), (std::vector<std::string>{"fwd", "grad2", "bwd", "grad1", "adam"}));
  EXPECT_EQ(by_name(s, "adam").inputs, b.graph.node(b.order.back()).inputs) << "the whole group, in its order";
  // With GEMMs 32 times the bytes (and free launches) it would move.
  EXPECT_EQ(schedule_nodes(b.graph, b.order, ScheduleOptions{1, 0}).split_nodes, 1u);
}

TEST(SynapseSchedule, GroupsReadyTogetherAndOtherNodesStayAsTheyAre) {
  Built b;
  const TensorId state = b.tensor("state", true, Section{9, 0}, {2}), state_out = b.tensor("state_new", true, Section{9, 0}, {2});
  const TensorId x = b.tensor("x", true), g = b.tensor("g"), g2 = b.tensor("g2");
  const Built::Param w1 = b.param("w1", 1), w2 = b.param("w2", 2);
  b.node("grad", "relu_fwd_f32", {x}, {g});
  b.node("grad2", "add_fwd_f32", {g, w2.w}, {g2});
  // w1's gradient exists once grad2 has run, and w2's old value is read until then: one group,
  // nothing to split.
  b.node("sgd", "fused_sgd_f32", {state, w1.w, g2, w2.w, g}, {state_out, w1.w_out, w2.w_out}, {0.0f, 0.0f, 0.0f, 0.0f});
  ASSERT_TRUE(graph::validate(b.graph, &b.order).ok());
  const ScheduledGraph s = schedule_nodes(b.graph, b.order);
  EXPECT_EQ(s.split_nodes, 0u);
  EXPECT_TRUE(s.holds.empty());
  EXPECT_EQ(b.names(s), (std::vector<std::string>{"grad", "grad2", "sgd"}));
  EXPECT_EQ(by_name(s, "sgd").outputs, (std::vector<TensorId>{state_out, w1.w_out, w2.w_out}));
}

}  // namespace
}  // namespace hpusim::synapse::compiler
