// Graphs for the tests, described by names so that a test can change one thing and build.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::graph::testing {

struct NodeSpec {
  std::string name;
  std::string guid;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  NodeParams params;
};

struct GraphSpec {
  std::vector<TensorDesc> tensors;
  std::vector<NodeSpec> nodes;

  TensorDesc& tensor(const std::string& name) {
    for (TensorDesc& t : tensors)
      if (t.name == name) return t;
    ADD_FAILURE() << "no tensor " << name;
    return tensors.front();
  }
  NodeSpec& node(const std::string& name) {
    for (NodeSpec& n : nodes)
      if (n.name == name) return n;
    ADD_FAILURE() << "no node " << name;
    return nodes.front();
  }
};

// Every tensor and node must be accepted (a test of creation errors calls add_* itself).
inline Graph build(const GraphSpec& spec) {
  Graph g;
  for (const TensorDesc& t : spec.tensors) {
    const Result r = g.add_tensor(t);
    EXPECT_TRUE(r.ok()) << r.message;
  }
  for (const NodeSpec& n : spec.nodes) {
    NodeDesc desc{n.name, n.guid, {}, {}, n.params};
    for (const std::string& t : n.inputs) desc.inputs.push_back(*g.find_tensor(t));
    for (const std::string& t : n.outputs) desc.outputs.push_back(*g.find_tensor(t));
    const Result r = g.add_node(desc);
    EXPECT_TRUE(r.ok()) << r.message;
  }
  return g;
}

// A two-layer perceptron in f32, batch M = 32: fc1 (gemm) -> bias1 (add_fwd_f32, broadcast
// over the batch) -> relu1 -> fc2 (gemm) -> softmax (over the 10 classes, dim 0).
// Shapes dim 0 innermost: x [K, M], weights [N, K], activations [N, M].
inline GraphSpec mlp_spec() {
  GraphSpec s;
  s.tensors = {
      {"x", DType::F32, {256, 32}, true, Section{1, 0}},
      {"w1", DType::F32, {128, 256}, true, Section{2, 0}},
      {"b1", DType::F32, {128}, true, Section{2, 131072}},
      {"h", DType::F32, {128, 32}, false, std::nullopt},
      {"hb", DType::F32, {128, 32}, false, std::nullopt},
      {"r", DType::F32, {128, 32}, false, std::nullopt},
      {"w2", DType::F32, {10, 128}, true, Section{2, 131584}},
      {"logits", DType::F32, {10, 32}, false, std::nullopt},
      {"probs", DType::F32, {10, 32}, true, Section{3, 0}},
  };
  s.nodes = {
      {"fc1", "gemm", {"x", "w1"}, {"h"}, {}},
      {"bias1", "add_fwd_f32", {"h", "b1"}, {"hb"}, {}},
      {"relu1", "relu_fwd_f32", {"hb"}, {"r"}, {}},
      {"fc2", "gemm", {"r", "w2"}, {"logits"}, {}},
      {"softmax", "softmax_fwd_f32", {"logits"}, {"probs"}, {}},
  };
  return s;
}

// The names of the nodes in an order.
inline std::vector<std::string> names(const Graph& g, const std::vector<NodeId>& order) {
  std::vector<std::string> v;
  for (NodeId id : order) v.push_back(g.node(id).name);
  return v;
}

}  // namespace hpusim::synapse::graph::testing
