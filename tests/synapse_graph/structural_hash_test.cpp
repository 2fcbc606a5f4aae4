// The structural hash: equal for graphs that differ only in names, section numbers and creation
// order of dependent nodes; different for any change of structure, which persistent tensors share
// a section, or where in it they sit.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "synapse/graph/structural_hash.h"
#include "tests/synapse_graph/graph_spec.h"

namespace hpusim::synapse::graph {
namespace {

using testing::build;
using testing::GraphSpec;
using testing::mlp_spec;

uint64_t hash_of(const GraphSpec& spec) { return structural_hash(build(spec)); }

// The MLP with every tensor and node renamed and every section renumbered.
GraphSpec renamed_mlp() {
  GraphSpec spec = mlp_spec();
  for (TensorDesc& t : spec.tensors) {
    const std::string old_name = t.name;
    t.name = "layer/" + t.name + ":0";
    if (t.section) t.section = Section{t.section->id + 10, t.section->offset};
    for (testing::NodeSpec& n : spec.nodes) {
      std::replace(n.inputs.begin(), n.inputs.end(), old_name, t.name);
      std::replace(n.outputs.begin(), n.outputs.end(), old_name, t.name);
    }
  }
  for (testing::NodeSpec& n : spec.nodes) n.name = "op_" + n.name;
  spec.tensor("layer/h:0").section = Section{4, 0};   // a section on an intermediate, too
  return spec;
}

TEST(SynapseGraphHash, IsDeterministic) {
  EXPECT_EQ(hash_of(mlp_spec()), hash_of(mlp_spec()));
  const Graph g = build(mlp_spec());
  EXPECT_EQ(structural_hash(g), structural_hash(g));
  EXPECT_NE(structural_hash(g), structural_hash(Graph{}));
}

TEST(SynapseGraphHash, IgnoresNamesAndSectionNumbers) {
  EXPECT_EQ(hash_of(mlp_spec()), hash_of(renamed_mlp()));
}

TEST(SynapseGraphHash, WhereAPersistentTensorSitsInItsSectionCounts) {
  // The same nodes reading another place of a section (a framework's view at another offset, a
  // loop index) wait for other writers: another recipe.
  GraphSpec moved = mlp_spec();
  for (TensorDesc& t : moved.tensors) {
    if (t.persistent && t.section) {
      t.section->offset += 256;
      break;
    }
  }
  EXPECT_NE(hash_of(mlp_spec()), hash_of(moved));
  // Two persistent tensors in one section instead of two: they alias.
  GraphSpec shared = mlp_spec();
  std::optional<uint32_t> first;
  bool merged = false;
  for (TensorDesc& t : shared.tensors) {
    if (!t.persistent || !t.section) continue;
    if (!first) {
      first = t.section->id;
    } else if (t.section->id != *first) {
      t.section->id = *first;
      merged = true;
      break;
    }
  }
  ASSERT_TRUE(merged) << "the MLP spec has persistent tensors in two sections";
  EXPECT_NE(hash_of(mlp_spec()), hash_of(shared));
}

TEST(SynapseGraphHash, IgnoresCreationOrderWhereDataFixesTheOrder) {
  GraphSpec spec = mlp_spec();
  std::reverse(spec.nodes.begin(), spec.nodes.end());
  std::rotate(spec.tensors.begin(), spec.tensors.begin() + 4, spec.tensors.end());
  EXPECT_EQ(hash_of(mlp_spec()), hash_of(spec));
}

TEST(SynapseGraphHash, TieOrderOfIndependentNodesCounts) {
  // Two independent branches (relu, tanh) on one input: which is created first decides their
  // order and so the hash (documented).
  GraphSpec spec;
  spec.tensors = {{"x", DType::F32, {64}, true, std::nullopt},
                  {"a", DType::F32, {64}, true, std::nullopt},
                  {"b", DType::F32, {64}, true, std::nullopt}};
  spec.nodes = {{"r", "relu_fwd_f32", {"x"}, {"a"}, {}}, {"t", "tanh_fwd_f32", {"x"}, {"b"}, {}}};
  GraphSpec swapped = spec;
  std::swap(swapped.nodes[0], swapped.nodes[1]);
  EXPECT_NE(hash_of(spec), hash_of(swapped));
}

TEST(SynapseGraphHash, ChangesWithEveryStructuralChange) {
  const uint64_t base = hash_of(mlp_spec());
  std::vector<std::pair<std::string, GraphSpec>> variants;
  auto add = [&](const std::string& what, auto change) {
    GraphSpec s = mlp_spec();
    change(s);
    variants.emplace_back(what, s);
  };
  add("shape", [](GraphSpec& s) { s.tensor("h").shape = {128, 16}; });
  add("rank", [](GraphSpec& s) { s.tensor("b1").shape = {128, 1}; });
  add("dtype", [](GraphSpec& s) { s.tensor("probs").dtype = DType::BF16; });
  add("persistence", [](GraphSpec& s) { s.tensor("logits").persistent = true; });
  add("guid", [](GraphSpec& s) { s.node("relu1").guid = "tanh_fwd_f32"; });
  add("param", [](GraphSpec& s) { s.node("relu1").params.scalars = {0.5f}; });
  add("param value", [](GraphSpec& s) {
    s.node("relu1").params.scalars = {0.25f};
  });
  add("attribute", [](GraphSpec& s) { s.node("fc1").params.attributes = {{"transpose_a", 1}}; });
  add("attribute value", [](GraphSpec& s) { s.node("fc1").params.attributes = {{"transpose_a", 0}}; });
  add("attribute name", [](GraphSpec& s) { s.node("fc1").params.attributes = {{"transpose_b", 1}}; });
  add("edge", [](GraphSpec& s) { s.node("relu1").inputs = {"h"}; });   // skips the bias
  add("input order", [](GraphSpec& s) { s.node("bias1").inputs = {"b1", "h"}; });
  add("extra node", [](GraphSpec& s) {
    s.tensors.push_back({"e", DType::F32, {10, 32}, true, std::nullopt});
    s.nodes.push_back({"exp", "exp_fwd_f32", {"logits"}, {"e"}, {}});
  });
  add("loose tensor", [](GraphSpec& s) { s.tensors.push_back({"spare", DType::F32, {4}, false, std::nullopt}); });
  std::set<uint64_t> seen = {base};
  for (const auto& [what, spec] : variants) {
    const uint64_t h = hash_of(spec);
    EXPECT_NE(h, base) << what;
    EXPECT_TRUE(seen.insert(h).second) << what << " collides with another variant";
  }
  // -0.0 and +0.0 are different parameters (their bits are hashed).
  GraphSpec plus = mlp_spec(), minus = mlp_spec();
  plus.node("relu1").params.scalars = {0.0f};
  minus.node("relu1").params.scalars = {-0.0f};
  EXPECT_NE(hash_of(plus), hash_of(minus));
}

TEST(SynapseGraphHash, CoversInvalidGraphsToo) {
  // A cycle has no topological order: the hash walks creation order and still sees edges.
  GraphSpec spec = mlp_spec();
  spec.node("bias1").inputs = {"r", "b1"};
  GraphSpec other = spec;
  other.node("bias1").inputs = {"b1", "r"};
  EXPECT_NE(hash_of(spec), hash_of(other));
  EXPECT_NE(hash_of(spec), hash_of(mlp_spec()));
  EXPECT_EQ(hash_of(spec), hash_of(spec));
}

}  // namespace
}  // namespace hpusim::synapse::graph
