#include "synapse/graph/validate.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <queue>

#include "synapse/graph/dma_nodes.h"
#include "synapse/graph/mme_nodes.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::graph {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

std::string node_label(const Graph& g, uint32_t n) { return "node '" + g.node(NodeId{n}).name + "'"; }
std::string tensor_label(const Graph& g, TensorId t) { return "tensor '" + g.tensor(t).name + "'"; }

// The writer of every tensor (kNone: none), or the first tensor with two writers.
struct Producers {
  std::vector<uint32_t> node;
  std::vector<uint32_t> slot;
  std::optional<Result> conflict;
};

Producers find_producers(const Graph& g) {
  Producers p;
  p.node.assign(g.tensor_count(), kNone);
  p.slot.assign(g.tensor_count(), 0);
  for (uint32_t n = 0; n < g.node_count() && !p.conflict; ++n) {
    const NodeDesc& node = g.node(NodeId{n});
    for (uint32_t i = 0; i < node.outputs.size(); ++i) {
      const uint32_t t = node.outputs[i].index;
      if (p.node[t] != kNone) {
        p.conflict = Result::error(Status::InvalidArgument,
                                   tensor_label(g, node.outputs[i]) + " is written by two nodes: " + node_label(g, p.node[t]) +
                                       " (output " + std::to_string(p.slot[t]) + ") and " + node_label(g, n) +
                                       " (output " + std::to_string(i) + ")");
        break;
      }
      p.node[t] = n;
      p.slot[t] = i;
    }
  }
  return p;
}

// Kahn's algorithm with the earliest-created ready node first. Returns the order (possibly
// partial: the nodes left out are on or behind a cycle).
std::vector<uint32_t> kahn(const Graph& g, const Producers& p) {
  const size_t count = g.node_count();
  std::vector<uint32_t> pending(count, 0);
  std::vector<std::vector<uint32_t>> readers(count);
  for (uint32_t n = 0; n < count; ++n) {
    for (TensorId t : g.node(NodeId{n}).inputs) {
      const uint32_t writer = p.node[t.index];
      if (writer == kNone) continue;
      ++pending[n];
      readers[writer].push_back(n);
    }
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<uint32_t>> ready;
  for (uint32_t n = 0; n < count; ++n)
    if (pending[n] == 0) ready.push(n);
  std::vector<uint32_t> order;
  order.reserve(count);
  while (!ready.empty()) {
    const uint32_t n = ready.top();
    ready.pop();
    order.push_back(n);
    for (uint32_t r : readers[n])
      if (--pending[r] == 0) ready.push(r);
  }
  return order;
}

// A cycle among the nodes Kahn's algorithm left out, as "node 'a' -> tensor 't' -> node 'b' ->
// ... -> node 'a'", starting from the cycle's earliest-created node.
std::string describe_cycle(const Graph& g, const Producers& p, const std::vector<uint32_t>& order) {
  std::vector<bool> left(g.node_count(), true);
  for (uint32_t n : order) left[n] = false;
  uint32_t start = 0;
  while (!left[start]) ++start;
  // Walk backwards: every left-out node reads a tensor written by a left-out node.
  std::vector<uint32_t> path = {start};
  std::vector<TensorId> via;   // via[i]: the tensor path[i] reads, written by path[i + 1]
  std::vector<int64_t> position(g.node_count(), -1);
  position[start] = 0;
  while (true) {
    const uint32_t n = path.back();
    TensorId tensor;
    uint32_t writer = kNone;
    for (TensorId t : g.node(NodeId{n}).inputs) {
      if (p.node[t.index] != kNone && left[p.node[t.index]]) {
        tensor = t;
        writer = p.node[t.index];
        break;
      }
    }
    via.push_back(tensor);
    if (position[writer] >= 0) {
      // The cycle: nodes[k] reads tensors[k], written by nodes[k + 1] (k + 1 wrapping to 0).
      // Printed forwards (nodes[k] writes tensors[k - 1], read by nodes[k - 1]) from the
      // earliest-created node.
      const auto first = static_cast<size_t>(position[writer]);
      const std::vector<uint32_t> nodes(path.begin() + first, path.end());
      const std::vector<TensorId> tensors(via.begin() + first, via.end());
      const size_t size = nodes.size();
      const auto lowest = static_cast<size_t>(std::min_element(nodes.begin(), nodes.end()) - nodes.begin());
      std::string s;
      for (size_t j = 0; j < size; ++j) {
        const size_t k = (lowest + size - j) % size;
        s += node_label(g, nodes[k]) + " -> " + tensor_label(g, tensors[(k + size - 1) % size]) + " -> ";
      }
      return s + node_label(g, nodes[lowest]);
    }
    position[writer] = static_cast<int64_t>(path.size());
    path.push_back(writer);
  }
}

// The kernel library's message starts with the GUID, then, when it is about one tensor,
// "input N (...)" or "output N (...)": that tensor of the node, if it names one.
std::optional<TensorId> tensor_in_message(const NodeDesc& node, const std::string& message) {
  std::string rest = message;
  if (rest.compare(0, node.guid.size() + 2, node.guid + ": ") == 0) rest = rest.substr(node.guid.size() + 2);
  bool input;
  size_t pos;
  if (rest.compare(0, 6, "input ") == 0) input = true, pos = 6;
  else if (rest.compare(0, 7, "output ") == 0) input = false, pos = 7;
  else return std::nullopt;
  size_t end = pos;
  while (end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[end]))) ++end;
  if (end == pos || end - pos > 3) return std::nullopt;
  const size_t index = std::stoul(rest.substr(pos, end - pos));
  const std::vector<TensorId>& ids = input ? node.inputs : node.outputs;
  if (index >= ids.size()) return std::nullopt;
  return ids[index];
}

Result validate_tpc_node(const Graph& g, const NodeDesc& node) {
  const std::string prefix = "node '" + node.name + "': ";
  if (!node.params.attributes.empty()) {
    return Result::error(Status::InvalidArgument, prefix + node.guid + " takes no attributes, got '" +
                                                      node.params.attributes.begin()->first + "'");
  }
  tpc_kernels::KernelParams params;
  for (TensorId t : node.inputs) params.inputs.push_back({g.tensor(t).dtype, g.tensor(t).shape, {}});
  for (TensorId t : node.outputs) params.outputs.push_back({g.tensor(t).dtype, g.tensor(t).shape, {}});
  params.scalars = node.params.scalars;
  const tpc_kernels::InstantiateResult r = tpc_kernels::KernelLibrary::instance().instantiate(node.guid, params);
  if (r.ok()) return Result::success();
  Status status = Status::InvalidArgument;
  if (r.status == tpc_kernels::GlueStatus::UnsupportedGuid) status = Status::Unsupported;
  if (r.status == tpc_kernels::GlueStatus::InternalError) status = Status::Fail;
  const std::optional<TensorId> tensor = tensor_in_message(node, r.message);
  // Count and parameter messages repeat the GUID ("relu_fwd_f32: relu_fwd_f32 takes ..."): once is enough.
  std::string message = r.message;
  if (message.compare(0, 2 * node.guid.size() + 3, node.guid + ": " + node.guid + " ") == 0)
    message = message.substr(node.guid.size() + 2);
  return Result::error(status, prefix + (tensor ? tensor_label(g, *tensor) + ": " : "") + message);
}

}  // namespace

std::optional<std::vector<NodeId>> topological_order(const Graph& graph) {
  const Producers p = find_producers(graph);
  if (p.conflict) return std::nullopt;
  const std::vector<uint32_t> order = kahn(graph, p);
  if (order.size() != graph.node_count()) return std::nullopt;
  std::vector<NodeId> ids;
  ids.reserve(order.size());
  for (uint32_t n : order) ids.push_back(NodeId{n});
  return ids;
}

Result validate_node(const Graph& graph, NodeId id) {
  const NodeDesc& node = graph.node(id);
  if (is_mme_guid(node.guid)) return mme_job_for(graph, id);
  if (is_dma_guid(node.guid)) return dma_node_check(graph, id);
  return validate_tpc_node(graph, node);
}

Result validate(const Graph& graph, std::vector<NodeId>* order_out) {
  const Producers p = find_producers(graph);
  if (p.conflict) return *p.conflict;
  const tpc_kernels::KernelLibrary& library = tpc_kernels::KernelLibrary::instance();
  for (uint32_t n = 0; n < graph.node_count(); ++n) {
    const NodeDesc& node = graph.node(NodeId{n});
    if (!is_mme_guid(node.guid) && !is_dma_guid(node.guid) && !library.has_guid(node.guid)) {
      std::string mme;
      for (const std::string& guid : mme_guids()) mme += (mme.empty() ? "" : ", ") + guid;
      return Result::error(Status::Unsupported, node_label(graph, n) + ": unknown GUID '" + node.guid +
                                                    "' (neither a TPC kernel of the library, nor memcpy, nor an MME GUID: " + mme + ")");
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (p.node[t.index] == kNone && !graph.tensor(t).persistent) {
        return Result::error(Status::InvalidArgument, node_label(graph, n) + ": input " + std::to_string(i) + ", " +
                                                          tensor_label(graph, t) +
                                                          ", is never written: no node produces it and it is not persistent");
      }
    }
  }
  const std::vector<uint32_t> order = kahn(graph, p);
  if (order.size() != graph.node_count()) {
    return Result::error(Status::InvalidArgument, "the graph has a cycle: " + describe_cycle(graph, p, order));
  }
  for (uint32_t n : order) {
    Result r = validate_node(graph, NodeId{n});
    if (!r.ok()) return r;
  }
  if (order_out) {
    order_out->clear();
    for (uint32_t n : order) order_out->push_back(NodeId{n});
  }
  return Result::success();
}

}  // namespace hpusim::synapse::graph
