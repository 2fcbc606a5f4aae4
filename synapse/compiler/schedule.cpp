#include "synapse/compiler/schedule.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <stdexcept>

#include "synapse/compiler/engine_order.h"
#include "synapse/compiler/tensor_size.h"
#include "synapse/graph/mme_nodes.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::compiler {

using graph::NodeDesc;
using graph::NodeId;
using graph::TensorId;

namespace {

// The position in `order` after which an entry (inputs `reads`, outputs `writes`) of the node at
// `position` can run: the last earlier node that writes what it reads, or reads or writes what it
// writes (-1: none).
int64_t ready_after(const graph::Graph& g, const std::vector<NodeId>& order, size_t position,
                    const std::vector<TensorId>& reads, const std::vector<TensorId>& writes) {
  for (size_t j = position; j-- > 0;) {
    const NodeDesc& other = g.node(order[j]);
    for (TensorId theirs : other.outputs) {
      for (TensorId mine : reads)
        if (share_memory(g, mine, theirs)) return static_cast<int64_t>(j);
      for (TensorId mine : writes)
        if (share_memory(g, mine, theirs)) return static_cast<int64_t>(j);
    }
    for (TensorId theirs : other.inputs) {
      for (TensorId mine : writes)
        if (share_memory(g, mine, theirs)) return static_cast<int64_t>(j);
    }
  }
  return -1;
}

struct Part {
  int64_t ready = -1;
  int64_t before = -1;   // the position in `order` an earlier part is placed before
  std::vector<size_t> entries;
};

// The tensors of list entry `e` in an optimizer node's inputs or outputs (`per` an entry, after
// the state).
std::vector<TensorId> entry_tensors(const std::vector<TensorId>& list, size_t per, size_t e) {
  return {list.begin() + static_cast<std::ptrdiff_t>(1 + e * per),
          list.begin() + static_cast<std::ptrdiff_t>(1 + (e + 1) * per)};
}

// An update-only or last part of `whole`: its state input (and output, if `state_out`), then the
// tensors of `entries`.
NodeDesc part_node(const NodeDesc& whole, const tpc_kernels::KernelLibrary::OptimizerLayout& layout,
                   const std::vector<size_t>& entries, bool state_out) {
  NodeDesc node = whole;
  node.inputs = {whole.inputs[0]};
  node.outputs.clear();
  if (state_out) node.outputs.push_back(whole.outputs[0]);
  for (size_t e : entries) {
    for (TensorId t : entry_tensors(whole.inputs, layout.per_input, e)) node.inputs.push_back(t);
    for (TensorId t : entry_tensors(whole.outputs, layout.per_output, e)) node.outputs.push_back(t);
  }
  return node;
}

std::string unused_name(const std::set<std::string>& taken, const std::string& wanted) {
  std::string name = wanted;
  for (int k = 2; taken.count(name) != 0; ++k) name = wanted + "_" + std::to_string(k);
  return name;
}

}  // namespace

ScheduledGraph schedule_nodes(const graph::Graph& g, const std::vector<NodeId>& order, const ScheduleOptions& options) {
  namespace tk = tpc_kernels;
  std::vector<size_t> position(g.node_count());
  for (size_t i = 0; i < order.size(); ++i) position[order[i].index] = i;
  std::set<std::string> names;
  for (uint32_t n = 0; n < g.node_count(); ++n) names.insert(g.node(NodeId{n}).name);

  // Per split node: its early parts (in order of readiness), then the last.
  std::map<uint32_t, std::vector<Part>> splits;
  std::map<size_t, uint64_t> shadow_left;   // MME node position -> update bytes it can still hide
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    const NodeDesc& node = g.node(NodeId{n});
    const auto layout = tk::KernelLibrary::optimizer_layout(node.guid, node.params.scalars);
    if (!layout || node.inputs.empty() || (node.inputs.size() - 1) % layout->per_input != 0) continue;
    const size_t entries = (node.inputs.size() - 1) / layout->per_input;
    if (entries < 2 || node.outputs.size() != 1 + entries * layout->per_output) continue;
    std::map<int64_t, Part> by_ready;
    for (size_t e = 0; e < entries; ++e) {
      std::vector<TensorId> reads = entry_tensors(node.inputs, layout->per_input, e);
      reads.push_back(node.inputs[0]);
      const int64_t ready = ready_after(g, order, position[n], reads, entry_tensors(node.outputs, layout->per_output, e));
      by_ready[ready].ready = ready;
      by_ready[ready].entries.push_back(e);
    }
    if (by_ready.size() < 2) continue;
    // A part moves early only if the GEMMs after it can hide it: macs_per_update_byte MACs per
    // byte of the update (and of its launches), not already taken by earlier parts, before its
    // node's place. It goes before the first of them: its TPC launches run while the MME computes.
    // A part the GEMMs cannot hide would only hold up the TPC work queued after it, so it stays
    // with the last part.
    std::vector<Part> parts;
    for (auto& [ready, part] : by_ready) parts.push_back(std::move(part));
    std::vector<Part> kept;
    for (size_t p = 0; p + 1 < parts.size(); ++p) {
      uint64_t bytes = options.update_launch_bytes * parts[p].entries.size();
      const NodeDesc streamed = part_node(node, *layout, parts[p].entries, false);
      for (const auto* list : {&streamed.inputs, &streamed.outputs})
        for (size_t k = list == &streamed.inputs ? 1 : 0; k < list->size(); ++k)
          bytes += tensor_bytes(g.tensor((*list)[k])).value_or(0);
      // The GEMMs from the first one after the part is ready up to its node's place, each hiding
      // what earlier parts have not already taken.
      std::vector<size_t> gemms;
      uint64_t hidden = 0;
      for (size_t i = static_cast<size_t>(parts[p].ready + 1); i < position[n] && hidden < bytes; ++i) {
        if (!graph::is_mme_guid(g.node(order[i]).guid)) continue;
        hidden += shadow_left.try_emplace(i, mme_macs(g, order[i]) / std::max<uint64_t>(options.macs_per_update_byte, 1)).first->second;
        gemms.push_back(i);
      }
      if (hidden >= bytes) {
        parts[p].before = static_cast<int64_t>(gemms.front());
        for (size_t i : gemms) {
          const uint64_t take = std::min(shadow_left[i], bytes);
          shadow_left[i] -= take;
          bytes -= take;
        }
        kept.push_back(std::move(parts[p]));
      } else {
        auto& last = parts.back().entries;
        last.insert(last.end(), parts[p].entries.begin(), parts[p].entries.end());
      }
    }
    if (kept.empty()) continue;
    std::sort(parts.back().entries.begin(), parts.back().entries.end());
    kept.push_back(std::move(parts.back()));
    splits[n] = std::move(kept);
  }

  ScheduledGraph out;
  for (uint32_t t = 0; t < g.tensor_count(); ++t) {
    const graph::Result r = out.graph.add_tensor(g.tensor(TensorId{t}));
    if (!r.ok()) throw std::logic_error("schedule: " + r.message);
  }
  // The nodes keep their ids (the last part of a split node takes its place); earlier parts follow.
  // The last part stays where its node was; an earlier one goes before the GEMM that hides it.
  std::map<int64_t, std::vector<NodeId>> before;   // position in `order` -> parts placed before it
  std::vector<std::pair<uint32_t, size_t>> pending;   // (split node, part) to add after the nodes
  std::map<uint32_t, std::vector<NodeId>> part_ids;   // split node -> its earlier parts
  for (uint32_t n = 0; n < g.node_count(); ++n) {
    NodeDesc node = g.node(NodeId{n});
    const auto split = splits.find(n);
    if (split != splits.end()) {
      const auto layout = tk::KernelLibrary::optimizer_layout(node.guid, node.params.scalars);
      node = part_node(node, *layout, split->second.back().entries, true);
      for (size_t p = 0; p + 1 < split->second.size(); ++p) pending.emplace_back(n, p);
      ++out.split_nodes;
    }
    NodeId id;
    const graph::Result r = out.graph.add_node(node, &id);
    if (!r.ok()) throw std::logic_error("schedule: " + r.message);
    if (split != splits.end()) before[static_cast<int64_t>(position[n])].push_back(id);
  }
  for (const auto& [n, p] : pending) {
    const NodeDesc& whole = g.node(NodeId{n});
    const auto layout = tk::KernelLibrary::optimizer_layout(whole.guid, whole.params.scalars);
    const Part& part = splits[n][p];
    NodeDesc node = part_node(whole, *layout, part.entries, false);
    node.name = unused_name(names, whole.name + "/part" + std::to_string(p));
    names.insert(node.name);
    NodeId id;
    const graph::Result r = out.graph.add_node(node, &id);
    if (!r.ok()) throw std::logic_error("schedule: " + r.message);
    before[part.before].push_back(id);
    part_ids[n].push_back(id);
    ++out.added_nodes;
  }

  const auto place_before = [&](size_t position) {
    const auto found = before.find(static_cast<int64_t>(position));
    if (found != before.end())
      for (NodeId id : found->second) out.order.push_back(id);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    place_before(i);
    if (splits.count(order[i].index) == 0) out.order.push_back(order[i]);
  }
  place_before(order.size());

  // Each split node's parts and where its last part landed.
  std::vector<size_t> scheduled_at(out.graph.node_count());
  for (size_t i = 0; i < out.order.size(); ++i) scheduled_at[out.order[i].index] = i;
  for (const auto& [n, p] : part_ids) {
    const uint32_t last = static_cast<uint32_t>(scheduled_at[n]);
    for (NodeId id : p)
      for (TensorId t : out.graph.node(id).inputs) out.holds.push_back({t, last});
  }
  return out;
}

}  // namespace hpusim::synapse::compiler
