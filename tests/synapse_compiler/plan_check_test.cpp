// The plan checker: it accepts the planner's plans and rejects each broken rule by name.
#include <gtest/gtest.h>

#include <functional>

#include "synapse/compiler/plan_check.h"
#include "tests/synapse_compiler/plan_fixtures.h"

namespace hpusim::synapse::compiler {
namespace {

using testing::chain_spec;
using testing::plan_spec;
using testing::Planned;

// The chain's plan (a, b, c, d at 0, 8192, 0, 8192) with one change.
Result check_broken(const std::function<void(MemoryPlan&)>& change) {
  Planned p = plan_spec(chain_spec());
  EXPECT_TRUE(p.result.ok()) << p.result.message;
  change(p.plan);
  const Result r = check_plan(p.graph, p.plan);
  EXPECT_EQ(r.status, Status::Fail);
  return r;
}

TEST(SynapseMemoryPlanCheck, AcceptsSharingBetweenTensorsLiveAtDifferentSteps) {
  const Planned p = plan_spec(chain_spec());
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_TRUE(check_plan(p.graph, p.plan).ok());
  MemoryPlan spread = p.plan;   // no reuse at all is a valid plan too
  for (size_t i = 0; i < spread.tensors.size(); ++i) spread.tensors[i].offset = i * 8192;
  spread.workspace_bytes = 4 * 8192;
  EXPECT_TRUE(check_plan(p.graph, spread).ok());
}

TEST(SynapseMemoryPlanCheck, RejectsOverlapBetweenLiveTensors) {
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[2].offset = 4096; }).message,   // c into b
            "tensor 'b' at bytes [8192, 16384) and tensor 'c' at bytes [4096, 12288) overlap while both are live at "
            "step 2");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[1].offset = 0; }).message,   // b onto a
            "tensor 'a' at bytes [0, 8192) and tensor 'b' at bytes [0, 8192) overlap while both are live at step 1");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[0].last_step = 2; }).message,   // a read by n2
            "tensor 'a' at bytes [0, 8192) and tensor 'c' at bytes [0, 8192) overlap while both are live at step 2");
}

TEST(SynapseMemoryPlanCheck, RejectsMisalignment) {
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[3].offset = 8192 + 64; }).message,
            "tensor 'd': offset 8256 is not a multiple of the alignment 128");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.alignment = 96; }).message, "alignment 96 is not a power of two");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[0].size = 4096; }).message,
            "tensor 'a': size 4096, expected its 8192 bytes aligned to 128");
}

TEST(SynapseMemoryPlanCheck, RejectsTensorsOutOfBounds) {
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.workspace_bytes = 8192; }).message,
            "tensor 'b': bytes [8192, 16384) end past the workspace (8192 bytes)");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[0].offset = 16384; }).message,
            "tensor 'a': bytes [16384, 24576) end past the workspace (16384 bytes)");
}

TEST(SynapseMemoryPlanCheck, RejectsTensorsThatAreNotThePlans) {
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[0].tensor = TensorId{0}; }).message,
            "tensor 'x' is persistent: the runtime places it, not the plan");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[2].tensor = TensorId{1}; }).message,
            "tensor 'a' is planned twice");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[2].tensor = TensorId{9}; }).message,
            "handle 9 is not a tensor of this graph (it has 6)");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.tensors[1].first_step = 3; }).message,
            "tensor 'b': live from step 3 to step 2");
  EXPECT_EQ(check_broken([](MemoryPlan& plan) { plan.bytes_without_reuse = 8192; }).message,
            "bytes_without_reuse is 8192, but the sizes add up to 32768");
}

}  // namespace
}  // namespace hpusim::synapse::compiler
