#include "synapse/compiler/fusion.h"

#include <functional>
#include <optional>
#include <queue>
#include <stdexcept>

#include "synapse/compiler/elementwise_clusters.h"
#include "synapse/compiler/memory_order.h"
#include "synapse/graph/validate.h"

namespace hpusim::synapse::compiler {

using graph::NodeDesc;
using graph::NodeId;
using graph::TensorId;

namespace {

// next[n]: the node fused after n in a chain (-1: none); nodes of `taken` take no part.
std::vector<int64_t> chain_links(const graph::Graph& g, const std::vector<bool>& taken) {
  const auto& library = tpc_kernels::KernelLibrary::instance();
  std::vector<std::vector<uint32_t>> readers(g.tensor_count());
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    for (TensorId t : g.node(NodeId{n}).inputs) readers[t.index].push_back(n);
  }
  std::vector<int64_t> next(g.node_count(), -1);
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    const NodeDesc& producer = g.node(NodeId{n});
    if (taken[n] || producer.outputs.size() != 1 || !producer.params.scalars.empty()) continue;
    const TensorId t = producer.outputs[0];
    if (g.tensor(t).persistent || readers[t.index].size() != 1) continue;
    const uint32_t f = readers[t.index][0];
    const NodeDesc& follower = g.node(NodeId{f});
    if (taken[f] || follower.inputs.size() != 1 || follower.outputs.size() != 1 || !follower.params.scalars.empty()) continue;
    if (g.tensor(follower.outputs[0]).shape != g.tensor(t).shape) continue;
    if (!library.can_fuse(producer.guid, follower.guid)) continue;
    next[n] = f;
  }
  return next;
}

// The fused graph's order: Kahn's algorithm over its tensors' edges and the memory order's
// (memory_order.h, mapped through `fused_of`: an original node's fused node, -1 for a dropped
// one), the earliest-created ready node first. nullopt: a cycle.
std::optional<std::vector<NodeId>> fused_order(const graph::Graph& g, const graph::Graph& fused,
                                               const std::vector<int64_t>& fused_of) {
  const auto original = graph::topological_order(g);
  if (!original) return std::nullopt;
  const std::vector<std::vector<uint32_t>> memory = memory_predecessors(g, *original);
  std::vector<int64_t> producer(fused.tensor_count(), -1);
  for (uint32_t n = 0; n < fused.node_count(); ++n)
    for (TensorId t : fused.node(NodeId{n}).outputs) producer[t.index] = n;
  std::vector<std::vector<uint32_t>> after(fused.node_count());
  std::vector<uint32_t> pending(fused.node_count(), 0);
  auto edge = [&](int64_t from, int64_t to) {
    if (from < 0 || to < 0 || from == to) return;
    after[static_cast<size_t>(from)].push_back(static_cast<uint32_t>(to));
    ++pending[static_cast<size_t>(to)];
  };
  for (uint32_t n = 0; n < fused.node_count(); ++n)
    for (TensorId t : fused.node(NodeId{n}).inputs) edge(producer[t.index], n);
  for (uint32_t n = 0; n < g.node_count(); ++n)
    for (uint32_t p : memory[n]) edge(fused_of[p], fused_of[n]);
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> ready;
  for (uint32_t n = 0; n < fused.node_count(); ++n)
    if (pending[n] == 0) ready.push(n);
  std::vector<NodeId> order;
  while (!ready.empty()) {
    const uint32_t n = ready.top();
    ready.pop();
    order.push_back(NodeId{n});
    for (uint32_t r : after[n])
      if (--pending[r] == 0) ready.push(r);
  }
  if (order.size() != fused.node_count()) return std::nullopt;
  return order;
}

FusedGraph fuse(const graph::Graph& g, const Clusters& clusters, bool chains) {
  std::vector<bool> taken(g.node_count(), !chains);
  for (uint32_t n = 0; n < g.node_count(); ++n) taken[n] = taken[n] || clusters.cluster_of[n] >= 0 || clusters.dropped[n];
  const std::vector<int64_t> next = chain_links(g, taken);
  std::vector<bool> absorbed(g.node_count(), false);
  for (int64_t f : next)
    if (f >= 0) absorbed[static_cast<size_t>(f)] = true;

  FusedGraph out;
  for (uint32_t t = 0; t < g.tensor_count(); ++t) {
    const graph::Result r = out.graph.add_tensor(g.tensor(TensorId{t}));
    if (!r.ok()) throw std::logic_error("fusion: " + r.message);
  }
  std::vector<int64_t> emitted(clusters.clusters.size(), -1), fused_of(g.node_count(), -1);
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    if (absorbed[n] || clusters.dropped[n]) {
      out.fused_nodes += clusters.dropped[n] ? 1 : 0;
      continue;
    }
    NodeId id;
    const int32_t c = clusters.cluster_of[n];
    if (c >= 0) {   // a cluster's node where its first-created member was
      if (emitted[c] >= 0) {
        fused_of[n] = emitted[c];
        continue;
      }
      const Cluster& cluster = clusters.clusters[c];
      NodeDesc node;
      node.guid = kClusterGuid;
      node.name = g.node(NodeId{cluster.members.front()}).name + "+...+" + g.node(NodeId{cluster.members.back()}).name +
                  " (" + std::to_string(cluster.members.size()) + " nodes)";
      node.inputs = cluster.inputs;
      node.outputs = cluster.outputs;
      const graph::Result r = out.graph.add_node(node, &id);
      if (!r.ok()) throw std::logic_error("fusion: " + r.message);
      emitted[c] = fused_of[n] = id.index;
      out.clusters[id.index] = cluster.kernel;
      out.fused_nodes += cluster.members.size() - 1;
      continue;
    }
    NodeDesc node = g.node(NodeId{n});
    std::vector<std::string> epilogue;
    for (int64_t f = next[n]; f >= 0; f = next[static_cast<size_t>(f)]) {
      const NodeDesc& follower = g.node(NodeId{static_cast<uint32_t>(f)});
      node.name += "+" + follower.name;
      node.outputs = follower.outputs;
      epilogue.push_back(follower.guid);
      ++out.fused_nodes;
    }
    const graph::Result r = out.graph.add_node(node, &id);
    if (!r.ok()) throw std::logic_error("fusion: " + r.message);
    if (!epilogue.empty()) out.epilogues[id.index] = std::move(epilogue);
    for (int64_t f = n; f >= 0; f = next[static_cast<size_t>(f)]) fused_of[static_cast<size_t>(f)] = id.index;
  }
  auto touched_by = [](const graph::Graph& graph) {
    std::vector<bool> touched(graph.tensor_count(), false);
    for (uint32_t n = 0; n < graph.node_count(); ++n) {
      for (TensorId t : graph.node(NodeId{n}).inputs) touched[t.index] = true;
      for (TensorId t : graph.node(NodeId{n}).outputs) touched[t.index] = true;
    }
    return touched;
  };
  const std::vector<bool> touched = touched_by(g), still = touched_by(out.graph);
  for (uint32_t t = 0; t < g.tensor_count(); ++t)
    if (touched[t] && !still[t] && g.tensor(TensorId{t}).persistent) out.untouched_persistent.push_back(TensorId{t});
  if (auto order = fused_order(g, out.graph, fused_of)) out.order = std::move(*order);
  return out;
}

}  // namespace

FusedGraph fuse_elementwise(const graph::Graph& g, unsigned vector_bits) {
  FusedGraph fused = fuse(g, find_elementwise_clusters(g, vector_bits), true);
  if (!fused.order.empty() || g.node_count() == 0) return fused;
  // A cycle through the memory order (find_elementwise_clusters keeps paths out; chains do not
  // look): the chains alone, or nothing fused.
  Clusters none;
  none.cluster_of.assign(g.node_count(), -1);
  none.dropped.assign(g.node_count(), false);
  fused = fuse(g, none, true);
  return fused.order.empty() ? fuse(g, none, false) : fused;
}

}  // namespace hpusim::synapse::compiler
