#include "synapse/compiler/elementwise_clusters.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>

#include "synapse/compiler/memory_order.h"
#include "synapse/compiler/tensor_size.h"
#include "synapse/graph/validate.h"

namespace hpusim::synapse::compiler {

using graph::NodeDesc;
using graph::NodeId;
using graph::TensorId;
namespace tk = tpc_kernels;

namespace {

std::array<uint32_t, graph::kMaxDims> padded(const std::vector<uint32_t>& shape) {
  std::array<uint32_t, graph::kMaxDims> p{1, 1, 1, 1, 1};
  for (size_t d = 0; d < shape.size() && d < graph::kMaxDims; ++d) p[d] = shape[d];
  return p;
}

uint64_t elements(const graph::TensorDesc& t) {
  uint64_t n = 1;
  for (uint32_t d : t.shape) n *= d;
  return n;
}

class Finder {
 public:
  Finder(const graph::Graph& g, unsigned vector_bits)
      : g_(g), library_(tk::KernelLibrary::instance(vector_bits)), producer_(g.tensor_count(), -1), readers_(g.tensor_count()) {
    for (uint32_t n = 0; n < g.node_count(); ++n) {
      for (TensorId t : g.node(NodeId{n}).inputs) readers_[t.index].push_back(n);
      for (TensorId t : g.node(NodeId{n}).outputs) producer_[t.index] = n;
    }
  }

  Clusters run() {
    const auto order = graph::topological_order(g_);
    Clusters out;
    out.cluster_of.assign(g_.node_count(), -1);
    out.dropped.assign(g_.node_count(), false);
    if (!order) return out;
    position_.assign(g_.node_count(), 0);
    for (size_t i = 0; i < order->size(); ++i) position_[(*order)[i].index] = static_cast<uint32_t>(i);
    memory_before_ = memory_predecessors(g_, *order);
    banned_.assign(g_.node_count(), false);
    // Clusters that would touch persistent memory unsafely ban the members at fault, and the
    // clusters are grown again without them (each round bans at least one node).
    for (bool again = true; again;) {
      again = false;
      raw_cluster_.assign(g_.node_count(), -1);
      deps_.assign(g_.node_count(), {});
      parent_.assign(g_.node_count(), 0);
      std::iota(parent_.begin(), parent_.end(), 0u);
      members_.assign(g_.node_count(), {});
      for (NodeId id : *order) grow(id.index);

      // The clusters that pay and are safe, by their founders' order.
      std::map<uint32_t, std::vector<uint32_t>> by_root;
      for (uint32_t n = 0; n < g_.node_count(); ++n)
        if (raw_cluster_[n] >= 0) by_root[find(static_cast<uint32_t>(raw_cluster_[n]))].push_back(n);
      out.clusters.clear();
      std::fill(out.cluster_of.begin(), out.cluster_of.end(), -1);
      for (auto& [root, nodes] : by_root) {
        std::sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) { return position_[a] < position_[b]; });
        Cluster c = build(nodes);
        if (!pays(c)) continue;
        const std::vector<uint32_t> offenders = memory_offenders(c);
        for (uint32_t n : offenders) banned_[n] = true;
        if (!offenders.empty()) {
          again = true;
          continue;
        }
        for (uint32_t n : c.members) out.cluster_of[n] = static_cast<int32_t>(out.clusters.size());
        out.clusters.push_back(std::move(c));
      }
    }
    // A fill goes away when only clusters read its tensor (they hold the value themselves).
    for (uint32_t n = 0; n < g_.node_count(); ++n) {
      if (!is_constant(n)) continue;
      const TensorId t = g_.node(NodeId{n}).outputs[0];
      if (g_.tensor(t).persistent || readers_[t.index].empty()) continue;
      bool all = true;
      for (uint32_t r : readers_[t.index]) all = all && out.cluster_of[r] >= 0;
      out.dropped[n] = all;
    }
    return out;
  }

 private:
  // A fill of f32: a constant to the clusters that read it.
  bool is_constant(uint32_t n) const {
    const NodeDesc& node = g_.node(NodeId{n});
    return node.inputs.empty() && node.outputs.size() == 1 && g_.tensor(node.outputs[0]).dtype == graph::DType::F32 &&
           library_.can_cluster(node.guid);
  }

  bool constant_tensor(TensorId t) const { return producer_[t.index] >= 0 && is_constant(static_cast<uint32_t>(producer_[t.index])); }

  // The nodes n must follow: the producers of its inputs and its memory predecessors.
  std::vector<uint32_t> predecessors(uint32_t n) const {
    std::vector<uint32_t> out = memory_before_[n];
    for (TensorId t : g_.node(NodeId{n}).inputs)
      if (producer_[t.index] >= 0) out.push_back(static_cast<uint32_t>(producer_[t.index]));
    return out;
  }

  // An f32 elementwise node whose inputs have its output's shape, are one element or constants, or
  // are a row too wide for the bias-row variant broadcast along dims >= 1.
  bool eligible(uint32_t n) const {
    const NodeDesc& node = g_.node(NodeId{n});
    if (banned_[n] || node.inputs.empty() || node.outputs.size() != 1 || !library_.can_cluster(node.guid)) return false;
    const graph::TensorDesc& out = g_.tensor(node.outputs[0]);
    if (out.dtype != graph::DType::F32) return false;
    const auto po = padded(out.shape);
    for (TensorId t : node.inputs) {
      const graph::TensorDesc& in = g_.tensor(t);
      if (in.dtype != graph::DType::F32) return false;
      if (constant_tensor(t) || elements(in) == 1) continue;
      const auto pi = padded(in.shape);
      if (pi == po) continue;
      // A broadcast along dims >= 1: a row the bias-row variant holds is the binary kernel's.
      for (unsigned d = 0; d < graph::kMaxDims; ++d)
        if (pi[d] != po[d] && (pi[d] != 1 || d == 0)) return false;
      if (pi[0] <= tk::KernelLibrary::kBiasRowVectors * library_.lanes_of(graph::DType::F32)) return false;
    }
    return true;
  }

  uint32_t find(uint32_t c) {
    while (parent_[c] != c) c = parent_[c] = parent_[parent_[c]];
    return c;
  }

  void grow(uint32_t n) {
    const NodeDesc& node = g_.node(NodeId{n});
    std::set<uint32_t> deps;
    for (uint32_t p : predecessors(n)) {
      deps.insert(deps_[p].begin(), deps_[p].end());
      if (raw_cluster_[p] >= 0) deps.insert(static_cast<uint32_t>(raw_cluster_[p]));
    }
    deps_[n] = std::move(deps);
    if (!eligible(n)) return;
    const auto shape = padded(g_.tensor(node.outputs[0]).shape);
    std::vector<uint32_t> candidates;
    for (TensorId t : node.inputs) {
      const int64_t p = producer_[t.index];
      if (p < 0 || raw_cluster_[p] < 0) continue;
      const uint32_t root = find(static_cast<uint32_t>(raw_cluster_[p]));
      if (padded(g_.tensor(g_.node(NodeId{root}).outputs[0]).shape) != shape) continue;
      if (std::find(candidates.begin(), candidates.end(), root) == candidates.end()) candidates.push_back(root);
    }
    std::vector<std::vector<uint32_t>> tries;
    if (candidates.size() > 1) tries.push_back(candidates);
    for (uint32_t c : candidates) tries.push_back({c});
    for (const auto& roots : tries) {
      if (!joinable(roots, n)) continue;
      const uint32_t root = roots[0];
      for (size_t i = 1; i < roots.size(); ++i) {
        parent_[roots[i]] = root;
        members_[root].insert(members_[root].end(), members_[roots[i]].begin(), members_[roots[i]].end());
        members_[roots[i]].clear();
      }
      members_[root].push_back(n);
      raw_cluster_[n] = static_cast<int32_t>(root);
      return;
    }
    raw_cluster_[n] = static_cast<int32_t>(n);
    members_[n] = {n};
  }

  // Whether the clusters `roots` and node n can be one: no path from them to n (or between them)
  // through a node outside, and the kernel within its limits.
  bool joinable(const std::vector<uint32_t>& roots, uint32_t n) {
    std::vector<uint32_t> nodes{n};
    for (uint32_t r : roots) nodes.insert(nodes.end(), members_[r].begin(), members_[r].end());
    if (nodes.size() > kMaxClusterNodes) return false;
    const std::set<uint32_t> inside(nodes.begin(), nodes.end());
    for (uint32_t m : nodes)
      for (uint32_t p : predecessors(m)) {
        if (inside.count(p) || is_constant(p)) continue;
        for (uint32_t d : deps_[p])
          if (std::find(roots.begin(), roots.end(), find(d)) != roots.end()) return false;
      }
    std::sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) { return position_[a] < position_[b]; });
    const Cluster c = build(nodes);
    if (c.inputs.size() + c.outputs.size() > tpc::kMaxTensors) return false;
    tk::KernelParams params;
    for (TensorId t : c.inputs) params.inputs.push_back({g_.tensor(t).dtype, g_.tensor(t).shape, {}});
    for (TensorId t : c.outputs) params.outputs.push_back({g_.tensor(t).dtype, g_.tensor(t).shape, {}});
    const auto registers = library_.cluster_registers(c.kernel, params);
    return registers && *registers <= tk::KernelLibrary::kClusterRegisters;
  }

  // Persistent tensors of one section at one offset, of one dtype and shape.
  bool same_memory(TensorId a, TensorId b) const {
    const graph::TensorDesc& x = g_.tensor(a);
    const graph::TensorDesc& y = g_.tensor(b);
    return x.persistent && y.persistent && x.section && y.section && x.section->id == y.section->id &&
           x.section->offset == y.section->offset && x.dtype == y.dtype && padded(x.shape) == padded(y.shape);
  }

  // The kernel of `nodes` (in topological order): inputs in the order first read, a fill op for
  // each constant before its first reader, the outputs the tensors needed outside.
  Cluster build(const std::vector<uint32_t>& nodes) const {
    Cluster c;
    c.members = nodes;
    const std::set<uint32_t> inside(nodes.begin(), nodes.end());
    auto produced_inside = [&](TensorId t) {
      return producer_[t.index] >= 0 && inside.count(static_cast<uint32_t>(producer_[t.index]));
    };
    // Inputs in the order first read; one load for tensors that are the same memory (the same
    // value: an input sharing memory with an output is read before the member writing it).
    std::map<uint32_t, uint32_t> value;   // tensor index -> value
    for (uint32_t m : nodes)
      for (TensorId t : g_.node(NodeId{m}).inputs) {
        if (produced_inside(t) || constant_tensor(t) || value.count(t.index)) continue;
        for (size_t k = 0; k < c.inputs.size() && !value.count(t.index); ++k)
          if (same_memory(c.inputs[k], t)) value[t.index] = static_cast<uint32_t>(k);
        if (value.count(t.index)) continue;
        value[t.index] = static_cast<uint32_t>(c.inputs.size());
        c.inputs.push_back(t);
      }
    auto next_value = [&]() { return static_cast<uint32_t>(c.inputs.size() + c.kernel.ops.size()); };
    for (uint32_t m : nodes) {
      const NodeDesc& node = g_.node(NodeId{m});
      tk::ClusterOp op{node.guid, {}, node.params.scalars};
      for (TensorId t : node.inputs) {
        if (!value.count(t.index)) {   // a constant, first read here
          const NodeDesc& fill = g_.node(NodeId{static_cast<uint32_t>(producer_[t.index])});
          value[t.index] = next_value();
          c.kernel.ops.push_back({fill.guid, {}, fill.params.scalars});
        }
        op.operands.push_back(value.at(t.index));
      }
      value[node.outputs[0].index] = next_value();
      c.kernel.ops.push_back(std::move(op));
      const TensorId out = node.outputs[0];
      bool needed = g_.tensor(out).persistent || readers_[out.index].empty();
      for (uint32_t r : readers_[out.index]) needed = needed || !inside.count(r);
      if (needed) {
        c.outputs.push_back(out);
        c.kernel.outputs.push_back(value.at(out.index));
      }
    }
    return c;
  }

  // One node pays only with a constant folded in; a plain chain is the chain fusion's.
  bool pays(const Cluster& c) const {
    const size_t constants = c.kernel.ops.size() - c.members.size();
    if (c.members.size() == 1) return constants > 0;
    if (constants > 0 || c.outputs.size() != 1) return true;
    for (size_t i = 1; i < c.members.size(); ++i) {
      const NodeDesc& prev = g_.node(NodeId{c.members[i - 1]});
      const NodeDesc& node = g_.node(NodeId{c.members[i]});
      if (node.inputs.size() != 1 || node.inputs[0] != prev.outputs[0] || !node.params.scalars.empty() ||
          !library_.can_fuse(g_.node(NodeId{c.members[0]}).guid, node.guid))
        return true;
    }
    return false;
  }

  // The members at fault when the cluster may not write and read its persistent memory as one
  // kernel (see the header); none when it may. An output the cluster itself overwrites later (the
  // same memory and shape: an in-place op followed by another on the same tensor) that nothing
  // outside reads is dropped from the outputs (not stored).
  std::vector<uint32_t> memory_offenders(Cluster& c) const {
    const std::set<uint32_t> inside(c.members.begin(), c.members.end());
    const auto shape = padded(g_.tensor(c.outputs[0]).shape);
    auto read_outside = [&](TensorId t) {
      for (uint32_t r : readers_[t.index])
        if (!inside.count(r)) return true;
      return false;
    };
    auto writer = [&](TensorId t) { return static_cast<uint32_t>(producer_[t.index]); };
    for (size_t j = 0; j < c.outputs.size();) {
      const TensorId o = c.outputs[j];
      bool overwritten = false;
      for (size_t later = j + 1; later < c.outputs.size() && g_.tensor(o).persistent; ++later) {
        if (!share_memory(g_, c.outputs[later], o)) continue;
        if (!same_memory(c.outputs[later], o) || read_outside(o)) return {writer(o)};
        overwritten = true;
      }
      if (overwritten) {
        c.outputs.erase(c.outputs.begin() + static_cast<std::ptrdiff_t>(j));
        c.kernel.outputs.erase(c.kernel.outputs.begin() + static_cast<std::ptrdiff_t>(j));
      } else {
        ++j;
      }
    }
    std::vector<uint32_t> offenders;
    std::vector<TensorId> written;   // persistent tensors the members write (stored or not)
    for (uint32_t m : c.members)
      if (g_.tensor(g_.node(NodeId{m}).outputs[0]).persistent) written.push_back(g_.node(NodeId{m}).outputs[0]);
    // An in-place update: the input read whole, at each element, before the member writing it.
    for (TensorId w : written)
      for (TensorId i : c.inputs) {
        if (!share_memory(g_, i, w)) continue;
        bool fine = same_memory(i, w) && padded(g_.tensor(i).shape) == shape;
        for (uint32_t r : readers_[i.index]) fine = fine && !(inside.count(r) && position_[r] > position_[writer(w)]);
        if (!fine) offenders.push_back(writer(w));
      }
    std::sort(offenders.begin(), offenders.end());
    offenders.erase(std::unique(offenders.begin(), offenders.end()), offenders.end());
    return offenders;
  }

  const graph::Graph& g_;
  const tk::KernelLibrary& library_;
  std::vector<int64_t> producer_;
  std::vector<std::vector<uint32_t>> readers_;
  std::vector<uint32_t> position_;
  std::vector<std::vector<uint32_t>> memory_before_;   // memory_order.h
  std::vector<bool> banned_;                  // nodes a cluster may not take (memory_offenders)
  std::vector<int32_t> raw_cluster_;          // the cluster a node founded or joined (resolve by find)
  std::vector<std::set<uint32_t>> deps_;      // clusters a node depends on (raw ids)
  std::vector<uint32_t> parent_;
  std::vector<std::vector<uint32_t>> members_;
};

}  // namespace

Clusters find_elementwise_clusters(const graph::Graph& graph, unsigned vector_bits) {
  return Finder(graph, vector_bits).run();
}

}  // namespace hpusim::synapse::compiler
