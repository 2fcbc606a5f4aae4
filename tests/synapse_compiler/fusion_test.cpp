// Fusion (fusion.h, elementwise_clusters.h): which nodes become one kernel. An in-place optimizer
// step written as elementwise ops is one cluster node reading each tensor once; plain chains stay
// chains; a cluster never takes a path that leaves it and comes back, never mixes shapes, and is
// not formed where persistent memory it writes is touched by a node outside it.
#include <gtest/gtest.h>

#include <algorithm>

#include "synapse/compiler/fusion.h"
#include "synapse/graph/validate.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::TensorId;
using graph::NodeDesc;
using graph::Section;

struct Built {
  Graph graph;
  TensorId tensor(const std::string& name, std::vector<uint32_t> shape = {1000}, bool persistent = false,
                  std::optional<Section> section = std::nullopt) {
    TensorId id;
    EXPECT_TRUE(graph.add_tensor({name, DType::F32, std::move(shape), persistent, section}, &id).ok());
    return id;
  }
  TensorId state(const std::string& name, uint64_t offset) { return tensor(name, {1000}, true, Section{1, offset}); }
  void node(const std::string& name, const std::string& guid, std::vector<TensorId> in, std::vector<TensorId> out,
            std::vector<float> scalars = {}) {
    NodeDesc d{name, guid, std::move(in), std::move(out), {}};
    d.params.scalars = std::move(scalars);
    ASSERT_TRUE(graph.add_node(d).ok()) << name;
  }
  TensorId constant(const std::string& name, float value) {
    const TensorId t = tensor(name, {1});
    node("fill_" + name, "fill_f32", {}, {t}, {value});
    return t;
  }
  FusedGraph fuse() {
    EXPECT_TRUE(graph::validate(graph).ok());
    FusedGraph f = fuse_elementwise(graph);
    EXPECT_TRUE(graph::topological_order(f.graph).has_value());
    return f;
  }
};

std::vector<std::string> node_names(const FusedGraph& f) {
  std::vector<std::string> names;
  for (uint32_t n = 0; n < f.graph.node_count(); ++n) names.push_back(f.graph.node(NodeId{n}).name);
  return names;
}

// torch's single-tensor Adadelta as the bridge records it: every in-place op writes the state's
// memory again (square_avg.mul_(rho) then .addcmul_(...)), as persistent tensors at its offset.
void adadelta(Built& b) {
  const TensorId sa = b.state("sa", 0), g = b.state("g", 4096), ad = b.state("ad", 8192), p = b.state("p", 12288);
  const TensorId sa1 = b.state("sa1", 0), sa2 = b.state("sa2", 0), ad1 = b.state("ad1", 8192),
                 ad2 = b.state("ad2", 8192), p1 = b.state("p1", 12288);
  b.node("mul_sa", "mul_fwd_f32", {sa, b.constant("rho", 0.9f)}, {sa1});
  b.node("addcmul_sa", "addcmul_fwd_f32", {sa1, g, g}, {sa2}, {0.1f});
  const TensorId eps = b.constant("eps", 1e-6f);
  const TensorId t2 = b.tensor("t2"), std_ = b.tensor("std"), t3 = b.tensor("t3"), delta = b.tensor("delta"),
                 d2 = b.tensor("d2"), d3 = b.tensor("d3"), t5 = b.tensor("t5");
  b.node("add_std", "add_fwd_f32", {sa2, eps}, {t2});
  b.node("sqrt_std", "sqrt_fwd_f32", {t2}, {std_});
  b.node("add_delta", "add_fwd_f32", {ad, eps}, {t3});
  b.node("sqrt_delta", "sqrt_fwd_f32", {t3}, {delta});
  b.node("div", "div_fwd_f32", {delta, std_}, {d2});
  b.node("mul_grad", "mul_fwd_f32", {d2, g}, {d3});
  b.node("mul_ad", "mul_fwd_f32", {ad, b.constant("rho2", 0.9f)}, {ad1});
  b.node("addcmul_ad", "addcmul_fwd_f32", {ad1, d3, d3}, {ad2}, {0.1f});
  b.node("mul_lr", "mul_fwd_f32", {d3, b.constant("lr", -0.1f)}, {t5});
  b.node("add_p", "add_fwd_f32", {p, t5}, {p1});
}

TEST(CompilerFusion, AnInPlaceAdadeltaStepIsOneClusterReadingEachTensorOnce) {
  Built b;
  adadelta(b);
  const FusedGraph f = b.fuse();
  ASSERT_EQ(f.graph.node_count(), 1u) << ::testing::PrintToString(node_names(f));
  ASSERT_EQ(f.clusters.size(), 1u);
  const NodeDesc& node = f.graph.node(NodeId{0});
  EXPECT_EQ(node.guid, kClusterGuid);
  EXPECT_EQ(node.name, "mul_sa+...+add_p (12 nodes)");
  auto names = [&](const std::vector<TensorId>& ids) {
    std::vector<std::string> out;
    for (TensorId t : ids) out.push_back(b.graph.tensor(t).name);
    return out;
  };
  EXPECT_EQ(names(node.inputs), (std::vector<std::string>{"sa", "g", "ad", "p"}));
  // sa1 and ad1 are overwritten by sa2 and ad2 in the same memory: not stored, still the recipe's.
  EXPECT_EQ(names(node.outputs), (std::vector<std::string>{"sa2", "ad2", "p1"}));
  EXPECT_EQ(names(f.untouched_persistent), (std::vector<std::string>{"sa1", "ad1"}));
  // The 12 ops and a fill op per constant (rho and rho2 then share a register).
  const auto& kernel = f.clusters.at(0);
  EXPECT_EQ(kernel.ops.size(), 16u);
  EXPECT_EQ(f.fused_nodes, 11u + 4u);   // 11 members folded, 4 fills dropped
}

TEST(CompilerFusion, APlainChainStaysAChain) {
  Built b;
  const TensorId x = b.tensor("x", {1000}, true), bias = b.tensor("bias", {1000}, true), s = b.tensor("s"),
                 y = b.tensor("y", {1000}, true);
  b.node("add", "add_fwd_f32", {x, bias}, {s});
  b.node("relu", "relu_fwd_f32", {s}, {y});
  const FusedGraph f = b.fuse();
  EXPECT_TRUE(f.clusters.empty());
  EXPECT_EQ(node_names(f), std::vector<std::string>{"add+relu"});
  EXPECT_EQ(f.epilogues.at(0), std::vector<std::string>{"relu_fwd_f32"});
}

TEST(CompilerFusion, OneNodeIsAClusterOnlyWithAConstantFolded) {
  Built b;
  const TensorId x = b.tensor("x", {1000}, true), y = b.tensor("y", {1000}, true), z = b.tensor("z", {1000}, true);
  b.node("scale", "mul_fwd_f32", {x, b.constant("half", 0.5f)}, {y});
  b.node("neg", "neg_fwd_f32", {x}, {z});
  const FusedGraph f = b.fuse();
  EXPECT_EQ(node_names(f), (std::vector<std::string>{"scale+...+scale (1 nodes)", "neg"}));
  EXPECT_EQ(f.clusters.size(), 1u);
}

TEST(CompilerFusion, NoPathLeavesAClusterAndComesBack) {
  // a -> softmax (not elementwise) -> c, and a -> c directly: a and c cannot be one kernel.
  Built b;
  const TensorId x = b.tensor("x", {64, 8}, true), two = b.constant("two", 2.0f), a = b.tensor("a", {64, 8}),
                 s = b.tensor("s", {64, 8}), c = b.tensor("c", {64, 8}, true);
  b.node("a", "mul_fwd_f32", {x, two}, {a});
  b.node("softmax", "softmax_fwd_f32", {a}, {s});
  b.node("c", "add_fwd_f32", {a, s}, {c});
  const FusedGraph f = b.fuse();
  EXPECT_EQ(node_names(f), (std::vector<std::string>{"a+...+a (1 nodes)", "softmax", "c"}));
}

TEST(CompilerFusion, ShapesDoNotMix) {
  Built b;
  const TensorId x = b.tensor("x", {64, 8}, true), r = b.tensor("r", {64}, true), a = b.tensor("a", {64, 8}),
                 y = b.tensor("y", {64, 8}, true), z = b.tensor("z", {64}, true);
  b.node("a", "mul_fwd_f32", {x, b.constant("k", 3.0f)}, {a});
  b.node("y", "add_fwd_f32", {a, x}, {y});
  b.node("z", "sub_fwd_f32", {r, r}, {z});
  const FusedGraph f = b.fuse();
  EXPECT_EQ(node_names(f), (std::vector<std::string>{"a+...+y (2 nodes)", "z"}));
}

TEST(CompilerFusion, ANodeReadingTheUpdatedMemoryUnderAnotherTensorRunsAfterTheCluster) {
  // A node created after the update reads the weight's memory under another tensor: in the graph's
  // order it reads the updated weight, so it follows the cluster though no tensor links them.
  Built b;
  adadelta(b);
  const TensorId p_view = b.state("p_view", 12288), copy = b.tensor("copy", {1000}, true);
  b.node("copy", "relu_fwd_f32", {p_view}, {copy});
  const FusedGraph f = b.fuse();
  EXPECT_EQ(node_names(f), (std::vector<std::string>{"mul_sa+...+add_p (12 nodes)", "copy"}));
  ASSERT_EQ(f.order.size(), 2u);
  EXPECT_EQ(f.graph.node(f.order[0]).name, "mul_sa+...+add_p (12 nodes)");
}

// a = x * 2 writes P; `name` reads P under another tensor and writes Q; c = P + Q.
void read_through_an_alias(Built& b, const std::string& name, const std::string& guid) {
  const TensorId x = b.tensor("x", {1000}, true), p = b.state("P", 0), p_alias = b.state("P_alias", 0),
                 q = b.tensor("Q", {1000}, true), y = b.tensor("y", {1000}, true);
  b.node("a", "mul_fwd_f32", {x, b.constant("k", 2.0f)}, {p});
  b.node(name, guid, {p_alias}, {q});
  b.node("c", "add_fwd_f32", {p, q}, {y});
}

TEST(CompilerFusion, NoPathThroughMemoryLeavesAClusterAndComesBack) {
  // a writes P; outside, a softmax reads P under another tensor and writes Q; c reads a's P and Q.
  // a and c in one kernel would need the softmax inside it: they stay apart.
  Built b;
  read_through_an_alias(b, "softmax", "softmax_fwd_f32");
  const FusedGraph f = b.fuse();
  EXPECT_EQ(node_names(f), (std::vector<std::string>{"a+...+a (1 nodes)", "softmax", "c"}));
  std::vector<std::string> order;
  for (NodeId n : f.order) order.push_back(f.graph.node(n).name);
  EXPECT_EQ(order, (std::vector<std::string>{"a+...+a (1 nodes)", "softmax", "c"}));
}

TEST(CompilerFusion, AnInputReadAfterAMemberWroteItsMemoryKeepsTheWriterOut) {
  // relu reads P (under another tensor) after a wrote it: in one kernel it would load the old
  // value, so a stays out and relu + c run after it.
  Built b;
  read_through_an_alias(b, "relu", "relu_fwd_f32");
  const FusedGraph f = b.fuse();
  EXPECT_EQ(node_names(f), (std::vector<std::string>{"fill_k", "a", "relu+...+c (2 nodes)"}));
}

}  // namespace
}  // namespace hpusim::synapse::compiler
