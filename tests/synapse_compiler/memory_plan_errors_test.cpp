// The planner's errors: the alignment, orders that are not an order of the graph, and graphs
// the planner cannot place.
#include <gtest/gtest.h>

#include "tests/synapse_compiler/plan_fixtures.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using testing::build;
using testing::chain_spec;
using testing::GraphSpec;

Result plan_with(const Graph& g, const std::vector<NodeId>& order, uint64_t alignment = kDefaultAlignment) {
  MemoryPlan plan;
  plan.workspace_bytes = 12345;
  const Result r = plan_memory(g, order, &plan, alignment);
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(plan.workspace_bytes, 12345u);   // untouched on an error
  return r;
}

std::vector<NodeId> nodes(std::initializer_list<uint32_t> indices) {
  std::vector<NodeId> order;
  for (uint32_t i : indices) order.push_back(NodeId{i});
  return order;
}

TEST(SynapseMemoryPlanErrors, TheAlignmentMustBeAPowerOfTwo) {
  const Graph g = build(chain_spec());
  const std::vector<NodeId> order = nodes({0, 1, 2, 3, 4});
  EXPECT_EQ(plan_with(g, order, 0).message, "alignment 0 is not a power of two");
  EXPECT_EQ(plan_with(g, order, 96).message, "alignment 96 is not a power of two");
}

TEST(SynapseMemoryPlanErrors, TheOrderMustHoldEveryNodeOnce) {
  const Graph g = build(chain_spec());
  EXPECT_EQ(plan_with(g, nodes({0, 1, 9, 3, 4})).message,
            "order step 2: handle 9 is not a node of this graph (it has 5)");
  EXPECT_EQ(plan_with(g, nodes({0, 1, 2, 1, 4})).message, "order step 3: node 'n1' is already at step 1");
  EXPECT_EQ(plan_with(g, nodes({0, 1, 2, 4})).message, "the order has 4 of the graph's 5 nodes: node 'n3' is missing");
  EXPECT_EQ(plan_with(g, {}).message, "the order has 0 of the graph's 5 nodes: node 'n0' is missing");
}

TEST(SynapseMemoryPlanErrors, ANodeMustComeAfterTheWriterOfItsInputs) {
  const Graph g = build(chain_spec());
  EXPECT_EQ(plan_with(g, nodes({0, 2, 1, 3, 4})).message,
            "step 1: node 'n2' reads tensor 'b' (input 0) before node 'n1' writes it at step 2");
  GraphSpec self = chain_spec();
  self.node("n2").inputs.push_back("c");   // n2 reads its own output
  EXPECT_EQ(plan_with(build(self), nodes({0, 1, 2, 3, 4})).message,
            "step 2: node 'n2' reads tensor 'c' (input 1) before node 'n2' writes it at step 2");
}

TEST(SynapseMemoryPlanErrors, ANonPersistentInputMustBeWritten) {
  GraphSpec s = chain_spec();
  s.tensors.push_back({"ghost", DType::F32, {4}});
  s.node("n3").inputs.push_back("ghost");
  EXPECT_EQ(plan_with(build(s), nodes({0, 1, 2, 3, 4})).message,
            "step 3: node 'n3' reads tensor 'ghost' (input 1), which no node writes and which is not persistent");
}

TEST(SynapseMemoryPlanErrors, ATensorHasOneWriter) {
  GraphSpec s = chain_spec();
  s.node("n3").outputs.push_back("b");
  EXPECT_EQ(plan_with(build(s), nodes({0, 1, 2, 3, 4})).message,
            "tensor 'b' is written by two nodes: node 'n1' (step 1) and node 'n3' (step 3)");
}

TEST(SynapseMemoryPlanErrors, TheWorkspaceMustFit64Bits) {
  GraphSpec s = chain_spec();
  s.tensors.push_back({"huge", DType::F32, {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF}});
  s.node("n2").outputs.push_back("huge");
  EXPECT_EQ(plan_with(build(s), nodes({0, 1, 2, 3, 4})).message,
            "tensor 'huge': shape [2147483647, 2147483647, 2147483647] f32: the workspace would not fit 64 bits");
  GraphSpec sum = chain_spec();   // each fits, the two together do not
  sum.tensors.push_back({"half1", DType::U8, {0x7FFFFFFF, 0x7FFFFFFF, 2}});
  sum.tensors.push_back({"half2", DType::U8, {0x7FFFFFFF, 0x7FFFFFFF, 3}});
  sum.node("n1").outputs.push_back("half1");
  sum.node("n3").outputs.push_back("half2");
  EXPECT_EQ(plan_with(build(sum), nodes({0, 1, 2, 3, 4})).message,
            "tensor 'half2': shape [2147483647, 2147483647, 3] u8: the workspace would not fit 64 bits");
}

}  // namespace
}  // namespace hpusim::synapse::compiler
