#include "synapse/compiler/engine_order.h"

#include <algorithm>

#include "arch/mme/mme_job.h"
#include "synapse/compiler/memory_order.h"
#include "synapse/compiler/tensor_size.h"
#include "synapse/graph/dma_nodes.h"
#include "synapse/graph/mme_nodes.h"

namespace hpusim::synapse::compiler {

using graph::NodeDesc;
using graph::NodeId;
using graph::TensorId;

uint64_t mme_macs(const graph::Graph& g, NodeId node) {
  mme::MmeJob job;
  if (!graph::mme_job_for(g, node, &job).ok()) return 0;
  const mme::GemmDims d = mme::gemm_dims(job);
  return d.m * d.n * d.k * d.batch;
}

namespace {

enum Engine : uint8_t { kMme, kTpc, kDma, kEngines };

Engine engine_of(const NodeDesc& node) {
  if (graph::is_mme_guid(node.guid)) return kMme;
  if (graph::is_dma_guid(node.guid)) return kDma;
  return kTpc;
}

uint64_t estimated_cost(const graph::Graph& g, NodeId id, const EngineOrderOptions& options) {
  const NodeDesc& node = g.node(id);
  if (engine_of(node) == kMme)
    return options.launch_bytes + 1 + mme_macs(g, id) / std::max<uint64_t>(options.macs_per_byte, 1);
  uint64_t bytes = options.launch_bytes + 1;
  for (const auto* list : {&node.inputs, &node.outputs})
    for (TensorId t : *list) bytes += tensor_bytes(g.tensor(t)).value_or(0);
  return bytes;
}

// Per node (by position in `order`): the positions of the nodes it must follow. A tensor's
// touches in order: a read follows the last write; a write follows the last write and every read
// since. Persistent memory shared under other tensors adds memory_predecessors.
std::vector<std::vector<uint32_t>> predecessors(const graph::Graph& g, const std::vector<NodeId>& order) {
  std::vector<uint32_t> position(g.node_count());
  for (uint32_t i = 0; i < order.size(); ++i) position[order[i].index] = i;
  std::vector<std::vector<uint32_t>> before(order.size());
  struct Touches {
    int64_t last_write = -1;
    std::vector<uint32_t> reads_since;
  };
  std::vector<Touches> by_tensor(g.tensor_count());
  for (uint32_t i = 0; i < order.size(); ++i) {
    const NodeDesc& node = g.node(order[i]);
    for (TensorId t : node.inputs) {
      Touches& touches = by_tensor[t.index];
      if (touches.last_write >= 0) before[i].push_back(static_cast<uint32_t>(touches.last_write));
      touches.reads_since.push_back(i);
    }
    for (TensorId t : node.outputs) {
      Touches& touches = by_tensor[t.index];
      if (touches.last_write >= 0) before[i].push_back(static_cast<uint32_t>(touches.last_write));
      for (uint32_t r : touches.reads_since)
        if (r != i) before[i].push_back(r);
      touches.reads_since.clear();
      touches.last_write = i;
    }
  }
  const std::vector<std::vector<uint32_t>> memory = memory_predecessors(g, order);
  for (uint32_t n = 0; n < memory.size(); ++n)
    for (uint32_t m : memory[n]) before[position[n]].push_back(position[m]);
  for (auto& list : before) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return before;
}

}  // namespace

std::vector<NodeId> engine_order(const graph::Graph& g, const std::vector<NodeId>& order,
                                 const EngineOrderOptions& options) {
  const size_t n = order.size();
  const std::vector<std::vector<uint32_t>> before = predecessors(g, order);
  std::vector<std::vector<uint32_t>> after(n);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t p : before[i]) after[p].push_back(i);
  std::vector<uint64_t> cost(n), path(n);   // path: the longest estimated path from the node to the end
  std::vector<Engine> engine(n);
  for (size_t i = 0; i < n; ++i) {
    cost[i] = estimated_cost(g, order[i], options);
    engine[i] = engine_of(g.node(order[i]));
  }
  for (size_t i = n; i-- > 0;) {
    uint64_t longest = 0;
    for (uint32_t s : after[i]) longest = std::max(longest, path[s]);
    path[i] = cost[i] + longest;
  }

  std::vector<uint32_t> waiting(n);   // predecessors not yet scheduled
  std::vector<uint64_t> inputs_done(n, 0);
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i) {
    waiting[i] = static_cast<uint32_t>(before[i].size());
    if (waiting[i] == 0) ready.push_back(i);
  }
  uint64_t engine_free[kEngines] = {};
  std::vector<NodeId> result;
  result.reserve(n);
  while (!ready.empty()) {
    const auto start = [&](uint32_t i) { return std::max(inputs_done[i], engine_free[engine[i]]); };
    const auto next = std::min_element(ready.begin(), ready.end(), [&](uint32_t a, uint32_t b) {
      if (start(a) != start(b)) return start(a) < start(b);
      if (path[a] != path[b]) return path[a] > path[b];
      return a < b;
    });
    const uint32_t i = *next;
    ready.erase(next);
    const uint64_t done = start(i) + cost[i];
    engine_free[engine[i]] = done;
    result.push_back(order[i]);
    for (uint32_t s : after[i]) {
      inputs_done[s] = std::max(inputs_done[s], done);
      if (--waiting[s] == 0) ready.push_back(s);
    }
  }
  return result;
}

}  // namespace hpusim::synapse::compiler
