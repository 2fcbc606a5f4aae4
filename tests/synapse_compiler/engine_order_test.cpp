// The engine order: a list schedule on estimated times that puts a backward's input gradient
// before its weight gradient, and keeps the order of nodes touching the same persistent memory.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "synapse/compiler/engine_order.h"
#include "synapse/graph/validate.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::TensorId;
using graph::Section;

struct Built {
  Graph graph;
  TensorId tensor(const std::string& name, bool persistent = false, std::optional<Section> section = std::nullopt,
                  std::vector<uint32_t> shape = {64, 64}) {
    TensorId id;
    EXPECT_TRUE(graph.add_tensor({name, DType::F32, std::move(shape), persistent, section}, &id).ok());
    return id;
  }
  void node(const std::string& name, const std::string& guid, std::vector<TensorId> in, std::vector<TensorId> out) {
    EXPECT_TRUE(graph.add_node({name, guid, std::move(in), std::move(out), {}}).ok());
  }
  std::vector<NodeId> order(const std::vector<std::string>& names) const {
    std::vector<NodeId> out;
    for (const std::string& n : names) out.push_back(*graph.find_node(n));
    return out;
  }
  std::vector<std::string> names(const std::vector<NodeId>& order) const {
    std::vector<std::string> out;
    for (NodeId n : order) out.push_back(graph.node(n).name);
    return out;
  }
};

TEST(SynapseEngineOrder, TheInputGradientGoesBeforeTheWeightGradient) {
  // One layer's backward as autograd lists it: the weight gradient first. The input gradient
  // feeds the rest of the backward (an activation's backward, the next layer's GEMM); the weight
  // gradient only its update.
  Built b;
  const TensorId x = b.tensor("x", true), w = b.tensor("w", true), dy = b.tensor("dy", true);
  const TensorId dw = b.tensor("dw"), dx = b.tensor("dx"), da = b.tensor("da");
  const TensorId w_new = b.tensor("w_new", true), out = b.tensor("out", true);
  b.node("wgrad", "gemm", {x, dy}, {dw});
  b.node("dgrad", "gemm", {dy, w}, {dx});
  b.node("act_bwd", "relu_fwd_f32", {dx}, {da});
  b.node("next_dgrad", "gemm", {da, w}, {out});
  b.node("update", "relu_fwd_f32", {dw}, {w_new});
  std::vector<NodeId> topological;
  ASSERT_TRUE(graph::validate(b.graph, &topological).ok());
  const std::vector<NodeId> given = b.order({"wgrad", "dgrad", "act_bwd", "next_dgrad", "update"});
  // Both GEMMs can start at once: the input gradient has the longer path. The activation's
  // backward then starts with the weight gradient (a tie of starts and paths: the given order),
  // and the update (its start tied with next_dgrad's, after act_bwd) has the longer path.
  EXPECT_EQ(b.names(engine_order(b.graph, given)),
            (std::vector<std::string>{"dgrad", "wgrad", "act_bwd", "update", "next_dgrad"}));
  // Any topological order of the graph gives the same schedule.
  EXPECT_EQ(b.names(engine_order(b.graph, topological)), b.names(engine_order(b.graph, given)));
}

TEST(SynapseEngineOrder, NodesTouchingTheSamePersistentMemoryKeepTheirOrder) {
  // `update` writes w's new value at w's place (one section) and could start at once on the TPC,
  // with the longer path; the GEMM reading the old w stays before it.
  Built b;
  const TensorId x = b.tensor("x", true), g = b.tensor("g", true), y = b.tensor("y", true);
  const TensorId w = b.tensor("w", true, Section{1, 0}), w_new = b.tensor("w_new", true, Section{1, 0});
  const TensorId t = b.tensor("t"), t2 = b.tensor("t2", true);
  b.node("read_w", "gemm", {x, w}, {y});
  b.node("update", "relu_fwd_f32", {g}, {w_new});
  b.node("after", "relu_fwd_f32", {w_new}, {t});
  b.node("after2", "relu_fwd_f32", {t}, {t2});
  const std::vector<NodeId> given = b.order({"read_w", "update", "after", "after2"});
  EXPECT_EQ(b.names(engine_order(b.graph, given)), (std::vector<std::string>{"read_w", "update", "after", "after2"}));

  // Without the shared section, nothing holds the update back.
  Built free;
  const TensorId fx = free.tensor("x", true), fg = free.tensor("g", true), fy = free.tensor("y", true);
  const TensorId fw = free.tensor("w", true), fw_new = free.tensor("w_new", true);
  const TensorId ft = free.tensor("t"), ft2 = free.tensor("t2", true);
  free.node("read_w", "gemm", {fx, fw}, {fy});
  free.node("update", "relu_fwd_f32", {fg}, {fw_new});
  free.node("after", "relu_fwd_f32", {fw_new}, {ft});
  free.node("after2", "relu_fwd_f32", {ft}, {ft2});
  EXPECT_EQ(free.names(engine_order(free.graph, free.order({"read_w", "update", "after", "after2"}))),
            (std::vector<std::string>{"update", "read_w", "after", "after2"}));
}

TEST(SynapseEngineOrder, AChainOfSmallLaunchesCountsWhatEachLaunchCosts) {
  // A loss computed by five small launches in a row (32 KB each) and one large node (1 MB), both
  // ready at once on the TPCs. By bytes alone the large node has the longer path and goes first,
  // and the chain, which takes five launches' time whatever its size, ends the step after it.
  Built b;
  const TensorId in = b.tensor("in", true);
  const TensorId big_in = b.tensor("big_in", true, std::nullopt, {256, 512});
  const TensorId big_out = b.tensor("big_out", true, std::nullopt, {256, 512});
  b.node("large", "relu_fwd_f32", {big_in}, {big_out});
  TensorId previous = in;
  for (int i = 1; i <= 5; ++i) {
    const TensorId next = b.tensor("t" + std::to_string(i), i == 5);
    b.node("small" + std::to_string(i), "relu_fwd_f32", {previous}, {next});
    previous = next;
  }
  const std::vector<NodeId> given = b.order({"large", "small1", "small2", "small3", "small4", "small5"});
  EngineOrderOptions bytes_only;
  bytes_only.launch_bytes = 0;
  EXPECT_EQ(b.names(engine_order(b.graph, given, bytes_only)),
            (std::vector<std::string>{"large", "small1", "small2", "small3", "small4", "small5"}));
  // With each launch's fixed cost (256 KB) the chain's path (5 x 288 KB) is the longer: it starts
  // first, and the large node runs while its first launch's result is awaited.
  EXPECT_EQ(EngineOrderOptions{}.launch_bytes, 256u * 1024u);
  EXPECT_EQ(b.names(engine_order(b.graph, given)),
            (std::vector<std::string>{"small1", "large", "small2", "small3", "small4", "small5"}));
}

}  // namespace
}  // namespace hpusim::synapse::compiler
