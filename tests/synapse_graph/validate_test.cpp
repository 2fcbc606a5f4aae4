// Whole-graph validation: a valid MLP and its topological order, then every error with its
// message naming the node and the tensor.
#include <gtest/gtest.h>

#include <algorithm>

#include "synapse/graph/validate.h"
#include "synapse/tpc_kernels/kernel_library.h"
#include "tests/synapse_graph/graph_spec.h"

namespace hpusim::synapse::graph {
namespace {

using testing::build;
using testing::GraphSpec;
using testing::mlp_spec;
using testing::names;

Result validate_spec(const GraphSpec& spec) { return validate(build(spec)); }

TEST(SynapseGraphValidate, TheMlpUsesRealKernelLibraryGuids) {
  const std::vector<std::string> guids = tpc_kernels::KernelLibrary::instance().guids();
  for (const char* guid : {"add_fwd_f32", "relu_fwd_f32", "softmax_fwd_f32"})
    EXPECT_TRUE(std::binary_search(guids.begin(), guids.end(), guid)) << guid;
  for (const char* guid : {"gemm", "batch_gemm", "spatial_convolution", "dedx", "dedw"})
    EXPECT_FALSE(std::binary_search(guids.begin(), guids.end(), guid)) << guid;
}

TEST(SynapseGraphValidate, MlpIsValidAndOrdered) {
  const Graph g = build(mlp_spec());
  std::vector<NodeId> order;
  const Result r = validate(g, &order);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(names(g, order), (std::vector<std::string>{"fc1", "bias1", "relu1", "fc2", "softmax"}));
  EXPECT_EQ(topological_order(g), order);
}

TEST(SynapseGraphValidate, OrderFollowsDataNotCreation) {
  GraphSpec spec = mlp_spec();
  std::reverse(spec.nodes.begin(), spec.nodes.end());   // softmax created first
  std::reverse(spec.tensors.begin(), spec.tensors.end());
  const Graph g = build(spec);
  std::vector<NodeId> order;
  ASSERT_TRUE(validate(g, &order).ok());
  EXPECT_EQ(names(g, order), (std::vector<std::string>{"fc1", "bias1", "relu1", "fc2", "softmax"}));
}

TEST(SynapseGraphValidate, TiesGoToTheEarliestCreatedNode) {
  // x -> a (relu), x -> b (tanh), c = ta + tb; d = exp(x) created first but independent.
  GraphSpec spec;
  spec.tensors = {{"x", DType::F32, {64, 2}, true, std::nullopt},
                  {"ta", DType::F32, {64, 2}, false, std::nullopt},
                  {"tb", DType::F32, {64, 2}, false, std::nullopt},
                  {"out", DType::F32, {64, 2}, true, std::nullopt},
                  {"e", DType::F32, {64, 2}, true, std::nullopt}};
  spec.nodes = {{"c", "add_fwd_f32", {"ta", "tb"}, {"out"}, {}},
                {"b", "tanh_fwd_f32", {"x"}, {"tb"}, {}},
                {"d", "exp_fwd_f32", {"x"}, {"e"}, {}},
                {"a", "relu_fwd_f32", {"x"}, {"ta"}, {}}};
  const Graph g = build(spec);
  std::vector<NodeId> order;
  ASSERT_TRUE(validate(g, &order).ok());
  // Ready at first: b (1), d (2), a (3); c (0) only after a and b.
  EXPECT_EQ(names(g, order), (std::vector<std::string>{"b", "d", "a", "c"}));
}

TEST(SynapseGraphValidate, EmptyGraphAndUnreadTensorsAreValid) {
  Graph g;
  std::vector<NodeId> order{NodeId{3}};
  EXPECT_TRUE(validate(g, &order).ok());
  EXPECT_TRUE(order.empty());
  GraphSpec spec = mlp_spec();
  spec.tensors.push_back({"unused", DType::I8, {3}, false, std::nullopt});
  EXPECT_TRUE(validate_spec(spec).ok());
}

TEST(SynapseGraphValidate, ShapeMismatchNamesNodeAndTensor) {
  GraphSpec spec = mlp_spec();
  spec.tensor("b1").shape = {64};
  const Result r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message,
            "node 'bias1': tensor 'b1': add_fwd_f32: input 1 (B): dim 0 has size 64, which does not broadcast to the "
            "output's 128 (shapes [64] and [128, 32]; a dim must be equal or 1)");
}

TEST(SynapseGraphValidate, OutputShapeMismatchNamesTheOutput) {
  GraphSpec spec = mlp_spec();
  spec.tensor("r").shape = {128, 16};
  spec.tensor("r").persistent = true;   // fc2 would fail too, later in the order
  const Result r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message,
            "node 'relu1': tensor 'r': relu_fwd_f32: output 0 (Y): shape [128, 16] differs from input 0 (X)'s [128, 32] "
            "(no broadcasting in this kernel)");
}

TEST(SynapseGraphValidate, WrongDtypeNamesNodeAndTensor) {
  GraphSpec spec = mlp_spec();
  spec.tensor("b1").dtype = DType::BF16;
  const Result r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'bias1': tensor 'b1': add_fwd_f32: input 1 (B): dtype bf16, but add_fwd_f32 takes f32");
}

TEST(SynapseGraphValidate, KernelCountAndParamErrorsNameTheNode) {
  GraphSpec spec = mlp_spec();
  spec.node("relu1").inputs = {"hb", "b1"};
  Result r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'relu1': relu_fwd_f32 takes 1 input (X), got 2");

  spec = mlp_spec();
  spec.node("relu1").params.scalars = {0.5f};
  r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'relu1': relu_fwd_f32 takes 0 scalar parameters, got 1");

  spec = mlp_spec();
  spec.node("relu1").params.attributes = {{"transpose_a", 1}};
  r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'relu1': relu_fwd_f32 takes no attributes, got 'transpose_a'");
}

TEST(SynapseGraphValidate, UnknownGuidNamesTheNode) {
  GraphSpec spec = mlp_spec();
  spec.node("relu1").guid = "relu_fwd_f64";
  const Result r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::Unsupported);
  EXPECT_EQ(r.message,
            "node 'relu1': unknown GUID 'relu_fwd_f64' (neither a TPC kernel of the library, nor memcpy, nor an MME GUID: gemm, "
            "batch_gemm, spatial_convolution, dedx, dedw)");
}

TEST(SynapseGraphValidate, DanglingInputNamesNodeAndTensor) {
  GraphSpec spec = mlp_spec();
  spec.tensor("w2").persistent = false;
  const Result r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message,
            "node 'fc2': input 1, tensor 'w2', is never written: no node produces it and it is not persistent");
}

TEST(SynapseGraphValidate, TwoProducersNameBothNodesAndTheTensor) {
  GraphSpec spec = mlp_spec();
  spec.nodes.push_back({"relu2", "relu_fwd_f32", {"h"}, {"r"}, {}});
  const Result r = validate_spec(spec);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "tensor 'r' is written by two nodes: node 'relu1' (output 0) and node 'relu2' (output 0)");
  EXPECT_FALSE(topological_order(build(spec)));
}

TEST(SynapseGraphValidate, CycleIsNamedNodeByNode) {
  GraphSpec spec = mlp_spec();
  spec.node("bias1").inputs = {"r", "b1"};   // bias1 -> hb -> relu1 -> r -> bias1; h unread
  const Graph g = build(spec);
  const Result r = validate(g);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "the graph has a cycle: node 'bias1' -> tensor 'hb' -> node 'relu1' -> tensor 'r' -> node 'bias1'");
  EXPECT_FALSE(topological_order(g));

  // A longer cycle, entered from a node behind it: it starts at its earliest node.
  spec = mlp_spec();
  spec.node("fc1").inputs = {"probs", "w1"};
  spec.tensor("probs").shape = {256, 32};
  const Result r2 = validate_spec(spec);
  EXPECT_EQ(r2.message,
            "the graph has a cycle: node 'fc1' -> tensor 'h' -> node 'bias1' -> tensor 'hb' -> node 'relu1' -> "
            "tensor 'r' -> node 'fc2' -> tensor 'logits' -> node 'softmax' -> tensor 'probs' -> node 'fc1'");

  // A node reading its own output.
  spec = mlp_spec();
  spec.node("relu1").inputs = {"r"};
  const Result r3 = validate_spec(spec);
  EXPECT_EQ(r3.message, "the graph has a cycle: node 'relu1' -> tensor 'r' -> node 'relu1'");
}

TEST(SynapseGraphValidate, CycleBehindOtherNodesIsFound) {
  // p (exp) reads the cycle's output; the cycle is a <-> b over ta / tb.
  GraphSpec spec;
  spec.tensors = {{"x", DType::F32, {64}, true, std::nullopt},
                  {"ta", DType::F32, {64}, false, std::nullopt},
                  {"tb", DType::F32, {64}, false, std::nullopt},
                  {"out", DType::F32, {64}, true, std::nullopt}};
  spec.nodes = {{"p", "exp_fwd_f32", {"ta"}, {"out"}, {}},
                {"b", "relu_fwd_f32", {"ta"}, {"tb"}, {}},
                {"a", "add_fwd_f32", {"x", "tb"}, {"ta"}, {}}};
  const Result r = validate_spec(spec);
  EXPECT_EQ(r.message, "the graph has a cycle: node 'b' -> tensor 'tb' -> node 'a' -> tensor 'ta' -> node 'b'");
}

TEST(SynapseGraphValidate, ChecksRunInTheDocumentedOrder) {
  // Two producers beat an unknown GUID, which beats a cycle, which beats a node's shapes.
  GraphSpec spec = mlp_spec();
  spec.node("bias1").inputs = {"r", "b1"};
  spec.tensor("b1").shape = {3};
  EXPECT_EQ(validate_spec(spec).message.rfind("the graph has a cycle", 0), 0u);
  spec.node("softmax").guid = "nope";
  EXPECT_EQ(validate_spec(spec).message.rfind("node 'softmax': unknown GUID", 0), 0u);
  spec.nodes.push_back({"again", "relu_fwd_f32", {"h"}, {"hb"}, {}});
  EXPECT_EQ(validate_spec(spec).message.rfind("tensor 'hb' is written by two nodes", 0), 0u);
  // Per-node checks go in topological order: softmax (created first) fails after fc2.
  spec = mlp_spec();
  std::reverse(spec.nodes.begin(), spec.nodes.end());
  spec.tensor("probs").dtype = DType::BF16;
  spec.tensor("w2").shape = {10, 64};
  EXPECT_EQ(validate_spec(spec).message.rfind("node 'fc2':", 0), 0u);
}

}  // namespace
}  // namespace hpusim::synapse::graph
