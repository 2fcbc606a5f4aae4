// Placement by liveness: reuse along a chain, branches and late readers kept apart, no reuse
// that would add a wait, persistent tensors left to the runtime, alignment.
#include <gtest/gtest.h>

#include "synapse/compiler/dependencies.h"
#include "synapse/compiler/plan_check.h"
#include "tests/synapse_compiler/plan_fixtures.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using testing::build;
using testing::chain_spec;
using testing::GraphSpec;
using testing::node_names;
using testing::plan_spec;
using testing::planned;
using testing::Planned;

constexpr uint64_t kTile = 64 * 32 * 4;   // one f32 [64, 32] tensor

TEST(SynapseMemoryPlan, AChainPingPongsBetweenTwoBuffers) {
  const Planned p = plan_spec(chain_spec());
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_EQ(planned(p, "a").offset, 0u);
  EXPECT_EQ(planned(p, "b").offset, kTile);
  EXPECT_EQ(planned(p, "c").offset, 0u);   // a is dead once n1 has read it
  EXPECT_EQ(planned(p, "d").offset, kTile);
  EXPECT_EQ(planned(p, "b").size, kTile);
  EXPECT_EQ(planned(p, "b").first_step, 1u);
  EXPECT_EQ(planned(p, "b").last_step, 2u);
  EXPECT_EQ(p.plan.workspace_bytes, 2 * kTile);
  EXPECT_EQ(p.plan.bytes_without_reuse, 4 * kTile);
  EXPECT_EQ(p.plan.tensors.size(), 4u);
  EXPECT_TRUE(check_plan(p.graph, p.plan).ok());
}

TEST(SynapseMemoryPlan, IntermediatesGoToSramWhileItHasRoomThenToTheWorkspace) {
  // Room for one tile: a chain ping-pongs between two buffers, so one of each live pair spills.
  Planned p = plan_spec(chain_spec(), kDefaultAlignment, kTile);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_TRUE(planned(p, "a").in_sram);
  EXPECT_FALSE(planned(p, "b").in_sram) << "a is still live in the only SRAM tile";
  EXPECT_TRUE(planned(p, "c").in_sram) << "a is dead once n1 has read it";
  EXPECT_FALSE(planned(p, "d").in_sram);
  EXPECT_EQ(planned(p, "a").offset, 0u);
  EXPECT_EQ(planned(p, "b").offset, 0u) << "offsets are per arena";
  EXPECT_EQ(p.plan.sram_bytes, kTile);
  EXPECT_EQ(p.plan.workspace_bytes, kTile);
  EXPECT_TRUE(check_plan(p.graph, p.plan).ok());

  // Enough SRAM for everything: no workspace at all.
  p = plan_spec(chain_spec(), kDefaultAlignment, 4 * kTile);
  ASSERT_TRUE(p.result.ok());
  EXPECT_EQ(p.plan.workspace_bytes, 0u);
  EXPECT_EQ(p.plan.sram_bytes, 2 * kTile);

  // The checker catches an SRAM tensor past the capacity, and overlaps within the SRAM arena.
  MemoryPlan bad = p.plan;
  bad.sram_capacity = kTile;
  EXPECT_FALSE(check_plan(p.graph, bad).ok());
  bad = p.plan;
  for (PlannedTensor& t : bad.tensors) t.offset = 0;
  const Result r = check_plan(p.graph, bad);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("overlap"), std::string::npos) << r.message;
}

TEST(SynapseMemoryPlan, SramGoesToTheShortestLivedTensorsFirst) {
  // n4 reads a as well as d: a lives through the whole chain. Taken by first step it would hold
  // the only SRAM tile from step 0 to 4; the tensors living one step each get it instead.
  GraphSpec s = chain_spec();
  s.nodes.back().inputs.push_back("a");
  const Planned p = plan_spec(s, kDefaultAlignment, kTile);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_FALSE(planned(p, "a").in_sram);
  EXPECT_TRUE(planned(p, "b").in_sram);
  EXPECT_FALSE(planned(p, "c").in_sram) << "b is live at n2";
  EXPECT_TRUE(planned(p, "d").in_sram) << "n3 waits for n2, b's last reader";
  EXPECT_EQ(planned(p, "d").offset, 0u);
  EXPECT_EQ(p.plan.sram_bytes, kTile);
  EXPECT_EQ(p.plan.workspace_bytes, 2 * kTile);
  EXPECT_TRUE(check_plan(p.graph, p.plan).ok());
}

TEST(SynapseMemoryPlan, ADiamondKeepsBothBranchesLive) {
  // x -> n0 -> a; a -> n1 -> b; a -> n2 -> c; (b, c) -> n3 -> d; d -> n4 -> y.
  GraphSpec s;
  for (const char* t : {"x", "a", "b", "c", "d", "y"})
    s.tensors.push_back({t, DType::F32, {64, 32}, t[0] == 'x' || t[0] == 'y'});
  s.nodes = {{"n0", "op", {"x"}, {"a"}, {}}, {"n1", "op", {"a"}, {"b"}, {}}, {"n2", "op", {"a"}, {"c"}, {}},
             {"n3", "op", {"b", "c"}, {"d"}, {}}, {"n4", "op", {"d"}, {"y"}, {}}};
  const Planned p = plan_spec(s);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_EQ(planned(p, "a").last_step, 2u);
  EXPECT_EQ(planned(p, "b").last_step, 3u);
  EXPECT_EQ(planned(p, "a").offset, 0u);
  EXPECT_EQ(planned(p, "b").offset, kTile);
  EXPECT_EQ(planned(p, "c").offset, 2 * kTile);   // a and b are both still live at n2
  EXPECT_EQ(planned(p, "d").offset, 0u);          // b and c live at n3, a is not
  EXPECT_EQ(p.plan.workspace_bytes, 3 * kTile);
}

TEST(SynapseMemoryPlan, ATensorReadLateStaysLiveUntilThen) {
  GraphSpec s = chain_spec();
  s.nodes.back().inputs.push_back("a");   // n4 reads a as well as d
  const Planned p = plan_spec(s);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_EQ(planned(p, "a").first_step, 0u);
  EXPECT_EQ(planned(p, "a").last_step, 4u);
  EXPECT_EQ(planned(p, "a").offset, 0u);
  EXPECT_EQ(planned(p, "b").offset, kTile);
  EXPECT_EQ(planned(p, "c").offset, 2 * kTile);
  EXPECT_EQ(planned(p, "d").offset, kTile);
  EXPECT_EQ(p.plan.workspace_bytes, 3 * kTile);
}

// x -> n0 -> a -> n1 -> y; x -> n2 -> c; (c, y) -> n3 -> d -> n4 -> z, in that order (x, y, z
// persistent). n2 does not depend on n1, the last reader of a.
Planned independent_branch_plan(uint64_t sram_capacity) {
  GraphSpec s;
  for (const char* t : {"x", "a", "y", "c", "d", "z"})
    s.tensors.push_back({t, DType::F32, {64, 32}, t[0] == 'x' || t[0] == 'y' || t[0] == 'z'});
  s.nodes = {{"n0", "op", {"x"}, {"a"}, {}}, {"n1", "op", {"a"}, {"y"}, {}}, {"n2", "op", {"x"}, {"c"}, {}},
             {"n3", "op", {"c", "y"}, {"d"}, {}}, {"n4", "op", {"d"}, {"z"}, {}}};
  Planned p{build(s), {}, {}, {}};
  for (const char* n : {"n0", "n1", "n2", "n3", "n4"}) p.order.push_back(*p.graph.find_node(n));
  p.result = plan_memory(p.graph, p.order, &p.plan, kDefaultAlignment, sram_capacity);
  return p;
}

TEST(SynapseMemoryPlan, BytesGoOnlyToAWriterThatAlreadyWaitsForEveryReader) {
  const Planned p = independent_branch_plan(0);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_EQ(planned(p, "a").last_step, 1u);
  EXPECT_EQ(planned(p, "c").first_step, 2u);
  EXPECT_EQ(planned(p, "a").offset, 0u);
  EXPECT_EQ(planned(p, "c").offset, kTile) << "a is dead at n2, but n2 need not wait for n1, which reads a";
  EXPECT_EQ(planned(p, "d").offset, 0u) << "n3 reads y, so it waits for n1 (and n0) already";
  EXPECT_EQ(p.plan.workspace_bytes, 2 * kTile);
  EXPECT_TRUE(check_plan(p.graph, p.plan).ok());

  // So the plan adds no wait: n2 waits for nothing, n3 for what it reads.
  const std::vector<std::vector<uint32_t>> waits = node_dependencies(p.graph, p.order, p.plan);
  EXPECT_EQ(waits[2], std::vector<uint32_t>{});
  EXPECT_EQ(waits[3], (std::vector<uint32_t>{1, 2}));
}

TEST(SynapseMemoryPlan, SramReusesDeadBytesEvenAtTheCostOfAWaitBeforeSpilling) {
  // One SRAM tile: c does not fit beside a's bytes without waiting for n1, and SRAM beats a wait.
  const Planned p = independent_branch_plan(kTile);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_TRUE(planned(p, "a").in_sram);
  EXPECT_TRUE(planned(p, "c").in_sram);
  EXPECT_EQ(planned(p, "c").offset, 0u);
  EXPECT_FALSE(planned(p, "d").in_sram) << "c is live at n3";
  EXPECT_EQ(node_dependencies(p.graph, p.order, p.plan)[2], std::vector<uint32_t>{1});

  // Two tiles: room without the wait.
  const Planned roomy = independent_branch_plan(2 * kTile);
  ASSERT_TRUE(roomy.result.ok());
  EXPECT_EQ(planned(roomy, "c").offset, kTile);
  EXPECT_TRUE(planned(roomy, "d").in_sram);
  EXPECT_EQ(planned(roomy, "d").offset, 0u);
  EXPECT_EQ(roomy.plan.workspace_bytes, 0u);
  EXPECT_EQ(node_dependencies(roomy.graph, roomy.order, roomy.plan)[2], std::vector<uint32_t>{});
}

TEST(SynapseMemoryPlan, ATensorNoNodeReadsLivesOnlyAtItsProducersStep) {
  GraphSpec s = chain_spec();
  s.tensors.push_back({"side", DType::F32, {64, 32}});
  s.tensors.push_back({"unused", DType::F32, {64, 32}});   // no node touches it
  s.node("n1").outputs.push_back("side");
  const Planned p = plan_spec(s);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_EQ(planned(p, "side").first_step, 1u);
  EXPECT_EQ(planned(p, "side").last_step, 1u);
  EXPECT_EQ(planned(p, "side").offset, 2 * kTile);   // after a and b, which n1 reads and writes
  EXPECT_EQ(planned(p, "d").offset, kTile);
  EXPECT_EQ(p.plan.find(*p.graph.find_tensor("unused")), nullptr);
  EXPECT_EQ(p.plan.workspace_bytes, 3 * kTile);
  EXPECT_EQ(p.plan.bytes_without_reuse, 5 * kTile);
}

TEST(SynapseMemoryPlan, ACopyBetweenWorkspaceTensorsIsAViewOfItsSource) {
  // x -> n0 -> a -> n1 (memcpy) -> b -> n2 (memcpy) -> c -> n3 -> d -> n4 -> y: b and c are
  // planned on a's bytes, a lives until c's reader (n3), and n3 waits for n0 (the copies wait
  // for nothing and nothing waits for them).
  GraphSpec s = chain_spec();
  s.node("n1").guid = "memcpy";
  s.node("n2").guid = "memcpy";
  s.tensors[2].shape = {32, 64};   // a reshape: same bytes, another shape
  Planned p{build(s), {}, {}, {}};
  p.order = graph::topological_order(p.graph).value();
  const std::vector<CopyView> views = find_copy_views(p.graph, p.order);
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].step, 1u);
  p.result = plan_memory(p.graph, p.order, &p.plan, kDefaultAlignment, 0, {}, views);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_EQ(planned(p, "a").last_step, 3u);
  EXPECT_EQ(planned(p, "b").offset, 0u);
  EXPECT_EQ(planned(p, "c").offset, 0u);
  EXPECT_EQ(*planned(p, "c").view_of, *p.graph.find_tensor("a")) << "a view of a view is on the root";
  EXPECT_EQ(planned(p, "d").offset, kTile);   // a is still live at n3
  EXPECT_EQ(p.plan.workspace_bytes, 2 * kTile);
  EXPECT_EQ(p.plan.bytes_without_reuse, 2 * kTile);
  EXPECT_EQ(p.plan.view_steps, (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(check_plan(p.graph, p.plan).ok());

  const auto waits = node_dependencies(p.graph, p.order, p.plan);
  EXPECT_TRUE(waits[1].empty());
  EXPECT_TRUE(waits[2].empty());
  EXPECT_EQ(waits[3], (std::vector<uint32_t>{0}));
  EXPECT_EQ(waits[4], (std::vector<uint32_t>{3}));

  // A view that names another source than its copy reads is refused.
  std::vector<CopyView> wrong = views;
  wrong[0].source = *p.graph.find_tensor("d");
  MemoryPlan untouched;
  const Result refused = plan_memory(p.graph, p.order, &untouched, kDefaultAlignment, 0, {}, wrong);
  EXPECT_EQ(refused.message, "a copy view at step 1 does not match the order's copy there");

  // The checker: a view off its root's bytes, or live past its root.
  MemoryPlan bad = p.plan;
  for (PlannedTensor& t : bad.tensors)
    if (t.view_of) t.offset = kTile;
  Result r = check_plan(p.graph, bad);
  EXPECT_EQ(r.message, "tensor 'b' at bytes [8192, 16384) is not on its root tensor 'a' at bytes [0, 8192)");
  bad = p.plan;
  for (PlannedTensor& t : bad.tensors)
    if (t.tensor == *p.graph.find_tensor("a")) t.last_step = 2;
  r = check_plan(p.graph, bad);
  EXPECT_EQ(r.message, "tensor 'c' is live from step 2 to 3, outside its root tensor 'a''s steps 0 to 2");

  // A copy out of or into a persistent tensor stays a copy: x -> n0 (memcpy) -> a -> n1 (memcpy) -> y.
  GraphSpec persistent;
  for (const char* t : {"x", "a", "y"}) persistent.tensors.push_back({t, DType::F32, {64, 32}, t[0] != 'a'});
  persistent.nodes = {{"n0", "memcpy", {"x"}, {"a"}, {}}, {"n1", "memcpy", {"a"}, {"y"}, {}}};
  const Graph g = build(persistent);
  EXPECT_TRUE(find_copy_views(g, graph::topological_order(g).value()).empty());
}

TEST(SynapseMemoryPlan, PersistentTensorsArePatchPointsAndTakeNoWorkspace) {
  // The MLP, validated with its real GUIDs: fc1, bias1, relu1, fc2, softmax.
  const Graph g = build(graph::testing::mlp_spec());
  std::vector<NodeId> order;
  ASSERT_TRUE(graph::validate(g, &order).ok());
  MemoryPlan plan;
  ASSERT_TRUE(plan_memory(g, order, &plan).ok());
  std::vector<std::string> planned_names, patched_names;
  for (const PlannedTensor& t : plan.tensors) planned_names.push_back(g.tensor(t.tensor).name);
  for (const PatchPoint& p : plan.patch_points) patched_names.push_back(g.tensor(p.tensor).name);
  EXPECT_EQ(planned_names, (std::vector<std::string>{"h", "hb", "r", "logits"}));
  EXPECT_EQ(patched_names, (std::vector<std::string>{"x", "w1", "b1", "w2", "probs"}));
  const PatchPoint* x = plan.find_patch_point(*g.find_tensor("x"));
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(node_names(g, x->readers), (std::vector<std::string>{"fc1"}));
  EXPECT_TRUE(x->writers.empty());
  const PatchPoint* probs = plan.find_patch_point(*g.find_tensor("probs"));
  ASSERT_NE(probs, nullptr);
  EXPECT_TRUE(probs->readers.empty());
  EXPECT_EQ(node_names(g, probs->writers), (std::vector<std::string>{"softmax"}));
  EXPECT_EQ(plan.find(*g.find_tensor("x")), nullptr);
  // h, hb, r are 16 KiB each; logits 1280 bytes. h and r share, hb and logits share.
  EXPECT_EQ(plan.workspace_bytes, 2 * 16384u);
  EXPECT_EQ(plan.bytes_without_reuse, 3 * 16384u + 1280u);
}

TEST(SynapseMemoryPlan, AGraphOfPersistentTensorsNeedsNoWorkspace) {
  GraphSpec s;
  s.tensors = {{"in", DType::BF16, {8}, true}, {"out", DType::BF16, {8}, true}};
  s.nodes = {{"n", "op", {"in", "in"}, {"out"}, {}}};
  const Planned p = plan_spec(s);
  ASSERT_TRUE(p.result.ok()) << p.result.message;
  EXPECT_TRUE(p.plan.tensors.empty());
  EXPECT_EQ(p.plan.workspace_bytes, 0u);
  EXPECT_EQ(p.plan.bytes_without_reuse, 0u);
  ASSERT_EQ(p.plan.patch_points.size(), 2u);
  EXPECT_EQ(node_names(p.graph, p.plan.patch_points[0].readers), (std::vector<std::string>{"n"}));   // once
}

TEST(SynapseMemoryPlan, SizesAreRoundedUpToTheAlignment) {
  GraphSpec s;
  s.tensors = {{"in", DType::U8, {1}, true}, {"a", DType::BF16, {3}}, {"b", DType::I8, {5, 1, 1}},
               {"c", DType::F32, {}}, {"out", DType::U8, {1}, true}};
  s.nodes = {{"n0", "op", {"in"}, {"a"}, {}}, {"n1", "op", {"a"}, {"b"}, {}}, {"n2", "op", {"a", "b"}, {"c"}, {}},
             {"n3", "op", {"c"}, {"out"}, {}}};
  struct Case {
    uint64_t alignment, a, b, c, workspace;
  };
  // a: 6 bytes, b: 5 bytes, c: 4 bytes (0 dims: one element).
  for (const Case& k : {Case{128, 128, 128, 128, 384}, Case{4096, 4096, 4096, 4096, 3 * 4096},
                        Case{1, 6, 5, 4, 15}, Case{4, 8, 8, 4, 20}}) {
    const Planned p = plan_spec(s, k.alignment);
    ASSERT_TRUE(p.result.ok()) << p.result.message;
    EXPECT_EQ(p.plan.alignment, k.alignment);
    EXPECT_EQ(planned(p, "a").size, k.a) << k.alignment;
    EXPECT_EQ(planned(p, "b").size, k.b) << k.alignment;
    EXPECT_EQ(planned(p, "c").size, k.c) << k.alignment;
    EXPECT_EQ(planned(p, "b").offset, k.a) << k.alignment;
    EXPECT_EQ(planned(p, "c").offset, k.a + k.b) << k.alignment;   // a and b are read at n2
    EXPECT_EQ(p.plan.workspace_bytes, k.workspace) << k.alignment;
  }
}

}  // namespace
}  // namespace hpusim::synapse::compiler
