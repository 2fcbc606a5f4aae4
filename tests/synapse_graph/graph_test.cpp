// Status codes and the creation-time checks of tensors and nodes.
#include <gtest/gtest.h>

#include "synapse/graph/graph.h"
#include "synapse/graph/status.h"

namespace hpusim::synapse::graph {
namespace {

TEST(SynapseGraphStatus, NamesAndValuesAreTheApis) {
  EXPECT_EQ(status_name(Status::Success), "synSuccess");
  EXPECT_EQ(status_name(Status::InvalidArgument), "synInvalidArgument");
  EXPECT_EQ(status_name(Status::ObjectNotInitialized), "synObjectNotInitialized");
  EXPECT_EQ(status_name(Status::Unsupported), "synUnsupported");
  EXPECT_EQ(status_name(Status::NameIsAlreadyUsed), "synNameIsAlreadyUsed");
  EXPECT_EQ(status_name(Status::InvalidTensorDimensions), "synInvalidTensorDimensions");
  EXPECT_EQ(status_name(Status::Fail), "synFail");
  EXPECT_EQ(status_name(static_cast<Status>(200)), "synStatus(200)");
  EXPECT_EQ(static_cast<int>(Status::InvalidArgument), 1);
  EXPECT_EQ(static_cast<int>(Status::ObjectNotInitialized), 6);
  EXPECT_EQ(static_cast<int>(Status::Unsupported), 18);
  EXPECT_EQ(static_cast<int>(Status::NameIsAlreadyUsed), 21);
  EXPECT_EQ(static_cast<int>(Status::InvalidTensorDimensions), 25);
  EXPECT_EQ(static_cast<int>(Status::Fail), 26);
  for (int s = 0; s <= 26; ++s) EXPECT_EQ(status_name(static_cast<Status>(s)).rfind("syn", 0), 0u);
}

TEST(SynapseGraphCreate, TensorsAndNodesGetHandlesInCreationOrder) {
  Graph g;
  TensorId a, b, c;
  ASSERT_TRUE(g.add_tensor({"a", DType::BF16, {64, 4, 3, 2, 1}, true, Section{7, 4096}}, &a).ok());
  ASSERT_TRUE(g.add_tensor({"b", DType::I32, {}, false, std::nullopt}, &b).ok());   // 0-D: one element
  ASSERT_TRUE(g.add_tensor({"c", DType::BF16, {64, 4, 3, 2, 1}}, &c).ok());
  EXPECT_EQ(a.index, 0u);
  EXPECT_EQ(b.index, 1u);
  EXPECT_EQ(c.index, 2u);
  NodeId n;
  ASSERT_TRUE(g.add_node({"relu", "relu_fwd_bf16", {a}, {c}, {}}, &n).ok());
  EXPECT_EQ(n.index, 0u);
  EXPECT_EQ(g.tensor_count(), 3u);
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_EQ(g.tensor(a).section->id, 7u);
  EXPECT_EQ(g.tensor(a).section->offset, 4096u);
  EXPECT_EQ(g.node(n).guid, "relu_fwd_bf16");
  EXPECT_EQ(g.find_tensor("c"), c);
  EXPECT_EQ(g.find_node("relu"), n);
  EXPECT_FALSE(g.find_tensor("relu"));   // tensors and nodes have their own names
  EXPECT_FALSE(g.find_node("d"));
}

// The tensors a refused node brought along are dropped again: their names and indices are free.
TEST(SynapseGraphCreate, DroppedTensorsLeaveNoTrace) {
  Graph g;
  TensorId a, b, c;
  ASSERT_TRUE(g.add_tensor({"a", DType::F32, {8}}, &a).ok());
  ASSERT_TRUE(g.add_tensor({"b", DType::F32, {8}}, &b).ok());
  ASSERT_TRUE(g.add_tensor({"c", DType::F32, {8}}, &c).ok());
  g.drop_tensors_from(1);
  EXPECT_EQ(g.tensor_count(), 1u);
  EXPECT_EQ(g.find_tensor("a"), a);
  EXPECT_FALSE(g.find_tensor("b"));
  EXPECT_FALSE(g.find_tensor("c"));
  TensorId again;
  ASSERT_TRUE(g.add_tensor({"c", DType::F32, {8}}, &again).ok());
  EXPECT_EQ(again.index, 1u);
  g.drop_tensors_from(5);   // nothing past the end: nothing happens
  EXPECT_EQ(g.tensor_count(), 2u);
}

TEST(SynapseGraphCreate, TensorErrorsNameTheTensor) {
  Graph g;
  ASSERT_TRUE(g.add_tensor({"x", DType::F32, {4}}).ok());
  Result r = g.add_tensor({"", DType::F32, {4}});
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "a tensor needs a name");
  r = g.add_tensor({"x", DType::F32, {8}});
  EXPECT_EQ(r.status, Status::NameIsAlreadyUsed);
  EXPECT_EQ(r.message, "tensor 'x': the name is already used");
  r = g.add_tensor({"big", DType::F32, {1, 2, 3, 4, 5, 6}});
  EXPECT_EQ(r.status, Status::InvalidTensorDimensions);
  EXPECT_EQ(r.message, "tensor 'big': 6 dims, at most 5");
  r = g.add_tensor({"empty", DType::F32, {4, 0, 2}});
  EXPECT_EQ(r.status, Status::InvalidTensorDimensions);
  EXPECT_EQ(r.message, "tensor 'empty': dim 1 has size 0 (must be 1 .. 2^31-1)");
  r = g.add_tensor({"huge", DType::F32, {0x80000000u}});
  EXPECT_EQ(r.status, Status::InvalidTensorDimensions);
  EXPECT_EQ(r.message, "tensor 'huge': dim 0 has size 2147483648 (must be 1 .. 2^31-1)");
  EXPECT_EQ(g.tensor_count(), 1u);   // nothing added on an error
  EXPECT_FALSE(g.find_tensor("big"));
}

TEST(SynapseGraphCreate, NodeErrorsNameTheNode) {
  Graph g;
  TensorId x, y;
  ASSERT_TRUE(g.add_tensor({"x", DType::F32, {4}, true}, &x).ok());
  ASSERT_TRUE(g.add_tensor({"y", DType::F32, {4}}, &y).ok());
  ASSERT_TRUE(g.add_node({"n", "relu_fwd_f32", {x}, {y}, {}}).ok());

  Result r = g.add_node({"", "relu_fwd_f32", {x}, {y}, {}});
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "a node needs a name");
  r = g.add_node({"n", "relu_fwd_f32", {x}, {y}, {}});
  EXPECT_EQ(r.status, Status::NameIsAlreadyUsed);
  EXPECT_EQ(r.message, "node 'n': the name is already used");
  r = g.add_node({"m", "", {x}, {y}, {}});
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'm': no GUID");
  r = g.add_node({"m", "relu_fwd_f32", {x, TensorId{9}}, {y}, {}});
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'm': input 1 is handle 9, not a tensor of this graph (it has 2)");
  r = g.add_node({"m", "relu_fwd_f32", {x}, {TensorId{}}, {}});
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'm': output 0 is an unset handle, not a tensor of this graph (it has 2)");
  r = g.add_node({"m", "dropout_fwd_f32", {x}, {y, y}, {}});
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'm': tensor 'y' is output 0 and output 1");
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_FALSE(g.find_node("m"));
  // One tensor twice among the inputs is fine (x * x).
  EXPECT_TRUE(g.add_node({"sq", "mul_fwd_f32", {x, x}, {y}, {}}).ok());
}

}  // namespace
}  // namespace hpusim::synapse::graph
