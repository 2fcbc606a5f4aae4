#include "synapse/compiler/memory_plan.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "synapse/compiler/plan_check.h"
#include "synapse/compiler/tensor_size.h"

namespace hpusim::synapse::compiler {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

std::string node_label(const Graph& g, NodeId n) { return "node '" + g.node(n).name + "'"; }
std::string tensor_label(const Graph& g, TensorId t) { return "tensor '" + g.tensor(t).name + "'"; }
std::string step_label(uint32_t step) { return "step " + std::to_string(step); }

Result invalid(std::string message) { return Result::error(Status::InvalidArgument, std::move(message)); }

// Every node of the graph exactly once.
Result check_order_covers_graph(const Graph& g, const std::vector<NodeId>& order) {
  std::vector<uint32_t> step_of(g.node_count(), kNone);
  for (uint32_t s = 0; s < order.size(); ++s) {
    const NodeId n = order[s];
    if (n.index >= g.node_count())
      return invalid("order " + step_label(s) + ": handle " + std::to_string(n.index) +
                     " is not a node of this graph (it has " + std::to_string(g.node_count()) + ")");
    if (step_of[n.index] != kNone)
      return invalid("order " + step_label(s) + ": " + node_label(g, n) + " is already at " +
                     step_label(step_of[n.index]));
    step_of[n.index] = s;
  }
  for (uint32_t n = 0; n < g.node_count(); ++n)
    if (step_of[n] == kNone)
      return invalid("the order has " + std::to_string(order.size()) + " of the graph's " +
                     std::to_string(g.node_count()) + " nodes: " + node_label(g, NodeId{n}) + " is missing");
  return Result::success();
}

// What the walk of the order learns about one tensor.
struct TensorUse {
  uint32_t writer_step = kNone;
  uint32_t writer_slot = 0;    // among the writer's outputs
  uint32_t last_step = kNone;  // the last step that touches it
  std::vector<uint32_t> reader_steps;   // ascending, each once
};

// Which steps each step already waits for through its inputs (read after write, transitively).
// A copy planned as a view touches no memory and nothing waits for it, so its readers inherit
// what it waits for without it.
class ReadPrecedence {
 public:
  ReadPrecedence(const Graph& g, const std::vector<NodeId>& order, const std::vector<TensorUse>& uses,
                 const std::vector<bool>& view_step)
      : words_((order.size() + 63) / 64), bits_(order.size() * words_, 0) {
    for (uint32_t s = 0; s < order.size(); ++s) {
      for (TensorId t : g.node(order[s]).inputs) {
        const uint32_t w = uses[t.index].writer_step;
        if (w == kNone || w >= s) continue;   // persistent and written by no earlier step
        for (size_t i = 0; i < words_; ++i) bits_[s * words_ + i] |= bits_[w * words_ + i];
        if (!view_step[w]) bits_[s * words_ + w / 64] |= uint64_t{1} << (w % 64);
      }
    }
  }
  // Step `later` waits, directly or not, for step `earlier`.
  bool waits_for(uint32_t later, uint32_t earlier) const {
    return (bits_[later * words_ + earlier / 64] >> (earlier % 64)) & 1;
  }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
};

Result find_writers(const Graph& g, const std::vector<NodeId>& order, std::vector<TensorUse>* uses) {
  for (uint32_t s = 0; s < order.size(); ++s) {
    const std::vector<TensorId>& outputs = g.node(order[s]).outputs;
    for (uint32_t slot = 0; slot < outputs.size(); ++slot) {
      TensorUse& use = (*uses)[outputs[slot].index];
      if (use.writer_step != kNone)
        return invalid(tensor_label(g, outputs[slot]) + " is written by two nodes: " +
                       node_label(g, order[use.writer_step]) + " (" + step_label(use.writer_step) + ") and " +
                       node_label(g, order[s]) + " (" + step_label(s) + ")");
      use.writer_step = s;
      use.writer_slot = slot;
      use.last_step = s;
    }
  }
  return Result::success();
}

// Every non-persistent input written at an earlier step; extends the live ranges to the reads.
Result find_readers(const Graph& g, const std::vector<NodeId>& order, std::vector<TensorUse>* uses) {
  for (uint32_t s = 0; s < order.size(); ++s) {
    const std::vector<TensorId>& inputs = g.node(order[s]).inputs;
    for (uint32_t i = 0; i < inputs.size(); ++i) {
      TensorUse& use = (*uses)[inputs[i].index];
      const std::string read = step_label(s) + ": " + node_label(g, order[s]) + " reads " +
                               tensor_label(g, inputs[i]) + " (input " + std::to_string(i) + ")";
      if (!g.tensor(inputs[i]).persistent) {
        if (use.writer_step == kNone) return invalid(read + ", which no node writes and which is not persistent");
        if (use.writer_step >= s)
          return invalid(read + " before " + node_label(g, order[use.writer_step]) + " writes it at " +
                         step_label(use.writer_step));
      }
      use.last_step = use.last_step == kNone ? s : std::max(use.last_step, s);
      if (use.reader_steps.empty() || use.reader_steps.back() != s) use.reader_steps.push_back(s);
    }
  }
  return Result::success();
}

// The persistent tensors in order of first touch (a step's inputs before its outputs).
std::vector<PatchPoint> find_patch_points(const Graph& g, const std::vector<NodeId>& order) {
  std::vector<PatchPoint> points;
  std::vector<uint32_t> point_of(g.tensor_count(), kNone);
  auto touch = [&](TensorId t, NodeId n, bool writes) {
    if (!g.tensor(t).persistent) return;
    if (point_of[t.index] == kNone) {
      point_of[t.index] = static_cast<uint32_t>(points.size());
      points.push_back({t, {}, {}});
    }
    std::vector<NodeId>& nodes = writes ? points[point_of[t.index]].writers : points[point_of[t.index]].readers;
    if (nodes.empty() || nodes.back() != n) nodes.push_back(n);   // a node reading one tensor twice
  };
  for (NodeId n : order) {
    for (TensorId t : g.node(n).inputs) touch(t, n, false);
    for (TensorId t : g.node(n).outputs) touch(t, n, true);
  }
  return points;
}

// The non-persistent tensors with their sizes and live ranges, in placement order (views are
// placed after the rest, on their roots), and for each the steps touching its bytes.
Result size_tensors(const Graph& g, const std::vector<TensorUse>& uses, const std::vector<uint32_t>& root_of,
                    const std::vector<bool>& view_step, uint64_t alignment, MemoryPlan* plan,
                    std::vector<std::vector<uint32_t>>* touching_steps) {
  std::vector<uint32_t> planned;
  for (uint32_t t = 0; t < g.tensor_count(); ++t)
    if (!g.tensor(TensorId{t}).persistent && uses[t].writer_step != kNone && root_of[t] == kNone) planned.push_back(t);
  std::sort(planned.begin(), planned.end(), [&](uint32_t a, uint32_t b) {
    if (uses[a].writer_step != uses[b].writer_step) return uses[a].writer_step < uses[b].writer_step;
    return uses[a].writer_slot < uses[b].writer_slot;
  });
  for (uint32_t t : planned) {
    const graph::TensorDesc& desc = g.tensor(TensorId{t});
    const std::optional<uint64_t> bytes = tensor_bytes(desc);
    const std::optional<uint64_t> size = bytes ? align_up(*bytes, alignment) : std::nullopt;
    if (!size || __builtin_add_overflow(plan->bytes_without_reuse, *size, &plan->bytes_without_reuse))
      return invalid(tensor_label(g, TensorId{t}) + ": shape " + graph::shape_text(desc.shape) + " " +
                     tpc::dtype_name(desc.dtype) + ": the workspace would not fit 64 bits");
    plan->tensors.push_back({TensorId{t}, 0, *size, uses[t].writer_step, uses[t].last_step});
    touching_steps->push_back({uses[t].writer_step});
    for (uint32_t r : uses[t].reader_steps)
      if (!view_step[r]) touching_steps->back().push_back(r);
  }
  // A view's readers read its root's bytes.
  for (uint32_t v = 0; v < g.tensor_count(); ++v) {
    if (root_of[v] == kNone) continue;
    const auto root = std::find_if(plan->tensors.begin(), plan->tensors.end(),
                                   [&](const PlannedTensor& p) { return p.tensor.index == root_of[v]; });
    std::vector<uint32_t>& steps = (*touching_steps)[root - plan->tensors.begin()];
    for (uint32_t r : uses[v].reader_steps)
      if (!view_step[r]) steps.push_back(r);
  }
  return Result::success();
}

// Byte ranges [offset, offset + size) of placed tensors, sorted by offset (they may overlap one
// another: two tensors that share bytes can both be in the way of a third).
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

// The lowest aligned offset where `size` bytes fit between `ranges`. Every candidate is 0 or the
// end of a placed tensor, so it stays aligned.
uint64_t lowest_free_offset(const Ranges& ranges, uint64_t size) {
  uint64_t candidate = 0;
  for (const auto& [offset, bytes] : ranges) {
    if (candidate + size <= offset) break;
    candidate = std::max(candidate, offset + bytes);
  }
  return candidate;
}

// Which tensors may share bytes (indices into the plan's tensors): `a` ends before `b` starts,
// and b's writer already waits, through what it reads, for every step that touches a's bytes.
// Reuse then never adds a wait, so it cannot serialise engines that would otherwise run side by
// side (a GEMM's output on the bytes of a bias add that runs meanwhile on the TPCs would make the
// GEMM wait for the add).
class Sharing {
 public:
  Sharing(const std::vector<PlannedTensor>& tensors, const std::vector<std::vector<uint32_t>>& touching_steps,
          const ReadPrecedence& precedence)
      : tensors_(tensors), touching_steps_(touching_steps), precedence_(precedence) {}
  bool behind(size_t a, size_t b) const {
    if (tensors_[a].last_step >= tensors_[b].first_step) return false;
    for (uint32_t step : touching_steps_[a])
      if (!precedence_.waits_for(tensors_[b].first_step, step)) return false;
    return true;
  }
  bool may_share(size_t a, size_t b) const { return behind(a, b) || behind(b, a); }
  bool live_apart(size_t a, size_t b) const {
    return tensors_[a].last_step < tensors_[b].first_step || tensors_[b].last_step < tensors_[a].first_step;
  }

 private:
  const std::vector<PlannedTensor>& tensors_;
  const std::vector<std::vector<uint32_t>>& touching_steps_;
  const ReadPrecedence& precedence_;
};

// An SRAM arena filled first fit, tensors taken in `order`: each where it may share bytes with
// every placed tensor it overlaps, else (a wait is cheaper than HBM traffic) where it is only
// live apart from them, else not at all. Per tensor: its SRAM offset, or none.
using SramFill = std::vector<std::optional<uint64_t>>;
SramFill fill_sram(const std::vector<PlannedTensor>& tensors, const std::vector<uint32_t>& order, uint64_t capacity,
                   const Sharing& sharing) {
  SramFill fill(tensors.size());
  std::vector<std::pair<uint64_t, size_t>> placed;   // (offset, tensor), sorted by offset
  Ranges in_the_way;
  for (uint32_t t : order) {
    const uint64_t size = tensors[t].size;
    if (size > capacity) continue;
    for (bool strict : {true, false}) {
      in_the_way.clear();
      for (const auto& [offset, p] : placed)
        if (!(strict ? sharing.may_share(p, t) : sharing.live_apart(p, t))) in_the_way.emplace_back(offset, tensors[p].size);
      const uint64_t offset = lowest_free_offset(in_the_way, size);
      if (offset > capacity - size) continue;
      fill[t] = offset;
      placed.insert(std::upper_bound(placed.begin(), placed.end(), std::pair{offset, size_t{t}}), {offset, t});
      break;
    }
  }
  return fill;
}

// Two arenas. SRAM is filled first: in placement order if that way it holds every tensor (the
// order then changes no traffic, and its addresses repeat more from node to node: fewer
// relocations to patch), else shortest-lived first (a forward activation the backward reads
// would otherwise hold its bytes for the whole step). The workspace then takes the rest in
// placement order, first fit where it may share bytes.
void place_tensors(MemoryPlan* plan, const std::vector<std::vector<uint32_t>>& touching_steps,
                   const ReadPrecedence& precedence) {
  std::vector<PlannedTensor>& tensors = plan->tensors;
  const Sharing sharing(tensors, touching_steps, precedence);
  if (plan->sram_capacity > 0) {
    std::vector<uint32_t> by_step(tensors.size());
    for (uint32_t t = 0; t < by_step.size(); ++t) by_step[t] = t;
    std::vector<uint32_t> by_life = by_step;
    std::stable_sort(by_life.begin(), by_life.end(), [&](uint32_t a, uint32_t b) {
      return tensors[a].last_step - tensors[a].first_step < tensors[b].last_step - tensors[b].first_step;
    });
    SramFill fill = fill_sram(tensors, by_step, plan->sram_capacity, sharing);
    if (std::find(fill.begin(), fill.end(), std::nullopt) != fill.end())
      fill = fill_sram(tensors, by_life, plan->sram_capacity, sharing);
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (!fill[t]) continue;
      tensors[t].in_sram = true;
      tensors[t].offset = *fill[t];
      plan->sram_bytes = std::max(plan->sram_bytes, tensors[t].offset + tensors[t].size);
    }
  }
  std::vector<std::pair<uint64_t, size_t>> placed;   // workspace (offset, tensor), sorted by offset
  Ranges in_the_way;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].in_sram) continue;
    in_the_way.clear();
    for (const auto& [offset, p] : placed)
      if (!sharing.behind(p, t)) in_the_way.emplace_back(offset, tensors[p].size);
    tensors[t].offset = lowest_free_offset(in_the_way, tensors[t].size);
    plan->workspace_bytes = std::max(plan->workspace_bytes, tensors[t].offset + tensors[t].size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), std::pair{tensors[t].offset, t}),
                  {tensors[t].offset, t});
  }
}

}  // namespace

const PlannedTensor* MemoryPlan::find(TensorId id) const {
  for (const PlannedTensor& t : tensors)
    if (t.tensor == id) return &t;
  return nullptr;
}

const PatchPoint* MemoryPlan::find_patch_point(TensorId id) const {
  for (const PatchPoint& p : patch_points)
    if (p.tensor == id) return &p;
  return nullptr;
}

bool MemoryPlan::is_view_step(uint32_t step) const {
  return std::binary_search(view_steps.begin(), view_steps.end(), step);
}

Result plan_memory(const Graph& graph, const std::vector<NodeId>& order, MemoryPlan* plan, uint64_t alignment,
                   uint64_t sram_capacity, const std::vector<LiveUntil>& holds, const std::vector<CopyView>& views) {
  if (!is_power_of_two(alignment)) return invalid("alignment " + std::to_string(alignment) + " is not a power of two");
  Result r = check_order_covers_graph(graph, order);
  std::vector<TensorUse> uses(graph.tensor_count());
  if (r.ok()) r = find_writers(graph, order, &uses);
  if (r.ok()) r = find_readers(graph, order, &uses);
  for (const LiveUntil& hold : holds) {
    if (!r.ok()) break;
    if (hold.tensor.index >= uses.size() || hold.step >= order.size()) {
      r = invalid("a hold on tensor " + std::to_string(hold.tensor.index) + " until step " + std::to_string(hold.step) +
                  " is outside the graph or the order");
      break;
    }
    TensorUse& use = uses[hold.tensor.index];
    if (use.last_step != kNone) use.last_step = std::max(use.last_step, hold.step);
  }
  // Each view's root (the first source that is no view) stays live until the view's last reader.
  std::vector<uint32_t> root_of(graph.tensor_count(), kNone);
  for (const CopyView& v : views) {
    if (!r.ok()) break;
    if (v.step >= order.size() || v.source.index >= uses.size() || v.view.index >= uses.size() ||
        uses[v.view.index].writer_step != v.step || root_of[v.view.index] != kNone ||
        graph.node(order[v.step]).inputs != std::vector<TensorId>{v.source} ||
        graph.tensor(v.source).persistent || graph.tensor(v.view).persistent) {
      r = invalid("a copy view at step " + std::to_string(v.step) + " does not match the order's copy there");
      break;
    }
    const uint32_t root = root_of[v.source.index] != kNone ? root_of[v.source.index] : v.source.index;
    root_of[v.view.index] = root;
    uses[root].last_step = std::max(uses[root].last_step, uses[v.view.index].last_step);
  }
  MemoryPlan result;
  result.alignment = alignment;
  result.sram_capacity = sram_capacity;
  std::vector<bool> view_step(order.size(), false);
  for (const CopyView& v : views)
    if (r.ok()) view_step[v.step] = true;
  std::vector<std::vector<uint32_t>> touching_steps;
  if (r.ok()) r = size_tensors(graph, uses, root_of, view_step, alignment, &result, &touching_steps);
  if (!r.ok()) return r;
  place_tensors(&result, touching_steps, ReadPrecedence(graph, order, uses, view_step));
  for (const CopyView& v : views) {
    const PlannedTensor root = *result.find(TensorId{root_of[v.view.index]});
    const TensorUse& use = uses[v.view.index];
    result.tensors.push_back({v.view, root.offset, root.size, use.writer_step, use.last_step, root.in_sram, root.tensor});
    result.view_steps.push_back(v.step);
  }
  std::sort(result.view_steps.begin(), result.view_steps.end());
  result.patch_points = find_patch_points(graph, order);
  r = check_plan(graph, result);
  if (!r.ok()) return Result::error(Status::Fail, "memory plan self-check: " + r.message);
  *plan = std::move(result);
  return Result::success();
}

}  // namespace hpusim::synapse::compiler
