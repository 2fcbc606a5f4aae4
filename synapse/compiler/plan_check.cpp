#include "synapse/compiler/plan_check.h"

#include <algorithm>
#include <map>
#include <string>

#include "synapse/compiler/tensor_size.h"

namespace hpusim::synapse::compiler {
namespace {

Result broken(std::string message) { return Result::error(Status::Fail, std::move(message)); }

std::string label(const Graph& g, const PlannedTensor& t) { return "tensor '" + g.tensor(t.tensor).name + "'"; }

std::string bytes_text(const PlannedTensor& t) {
  return "bytes [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.size) + ")";
}

// The rules about one tensor on its own.
Result check_tensor(const Graph& g, const MemoryPlan& plan, const PlannedTensor& t, std::vector<bool>* seen) {
  if (t.tensor.index >= g.tensor_count())
    return broken("handle " + std::to_string(t.tensor.index) + " is not a tensor of this graph (it has " +
                  std::to_string(g.tensor_count()) + ")");
  const std::string name = label(g, t);
  if (g.tensor(t.tensor).persistent) return broken(name + " is persistent: the runtime places it, not the plan");
  if ((*seen)[t.tensor.index]) return broken(name + " is planned twice");
  (*seen)[t.tensor.index] = true;
  if (t.first_step > t.last_step)
    return broken(name + ": live from step " + std::to_string(t.first_step) + " to step " + std::to_string(t.last_step));
  const std::optional<uint64_t> bytes = tensor_bytes(g.tensor(t.tensor));
  const std::optional<uint64_t> size = bytes ? align_up(*bytes, plan.alignment) : std::nullopt;
  if (!size || *size != t.size)
    return broken(name + ": size " + std::to_string(t.size) + ", expected its " +
                  (bytes ? std::to_string(*bytes) : "(overflowing)") + " bytes aligned to " +
                  std::to_string(plan.alignment));
  if (t.offset % plan.alignment != 0)
    return broken(name + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                  std::to_string(plan.alignment));
  uint64_t end;
  const uint64_t arena = t.in_sram ? plan.sram_bytes : plan.workspace_bytes;
  if (__builtin_add_overflow(t.offset, t.size, &end) || end > arena)
    return broken(name + ": " + bytes_text(t) + " end past the " + (t.in_sram ? "SRAM arena" : "workspace") + " (" +
                  std::to_string(arena) + " bytes)");
  if (t.in_sram && end > plan.sram_capacity)
    return broken(name + ": " + bytes_text(t) + " end past the SRAM capacity (" + std::to_string(plan.sram_capacity) +
                  " bytes)");
  return Result::success();
}

// A sweep over the steps: the tensors live at one step are disjoint, so each newcomer only has
// to clear its neighbours by offset among them.
Result check_live_overlap(const Graph& g, const MemoryPlan& plan, bool sram) {
  std::vector<const PlannedTensor*> by_first;
  for (const PlannedTensor& t : plan.tensors)
    if (t.in_sram == sram && !t.view_of) by_first.push_back(&t);
  std::stable_sort(by_first.begin(), by_first.end(),
                   [](const PlannedTensor* a, const PlannedTensor* b) { return a->first_step < b->first_step; });
  std::map<uint64_t, const PlannedTensor*> live;          // by offset
  std::multimap<uint32_t, uint64_t> offset_by_last_step;  // when each live tensor dies
  for (const PlannedTensor* t : by_first) {
    while (!offset_by_last_step.empty() && offset_by_last_step.begin()->first < t->first_step) {
      live.erase(offset_by_last_step.begin()->second);
      offset_by_last_step.erase(offset_by_last_step.begin());
    }
    auto next = live.lower_bound(t->offset);
    const PlannedTensor* clash = nullptr;
    if (next != live.end() && next->second->offset < t->offset + t->size) clash = next->second;
    if (next != live.begin() && std::prev(next)->second->offset + std::prev(next)->second->size > t->offset)
      clash = std::prev(next)->second;
    if (clash)
      return broken(label(g, *clash) + " at " + bytes_text(*clash) + " and " + label(g, *t) + " at " +
                    bytes_text(*t) + " overlap while both are live at step " + std::to_string(t->first_step));
    live.emplace(t->offset, t);
    offset_by_last_step.emplace(t->last_step, t->offset);
  }
  return Result::success();
}

// A view shares its root's bytes and lies within its root's live range.
Result check_view(const Graph& g, const MemoryPlan& plan, const PlannedTensor& view) {
  const PlannedTensor* root = plan.find(*view.view_of);
  const std::string name = label(g, view);
  if (root == nullptr || root->view_of)
    return broken(name + " is a view of tensor " + std::to_string(view.view_of->index) + ", which is not a planned root");
  if (root->offset != view.offset || root->in_sram != view.in_sram || root->size != view.size)
    return broken(name + " at " + bytes_text(view) + " is not on its root " + label(g, *root) + " at " + bytes_text(*root));
  if (view.first_step < root->first_step || view.last_step > root->last_step)
    return broken(name + " is live from step " + std::to_string(view.first_step) + " to " +
                  std::to_string(view.last_step) + ", outside its root " + label(g, *root) + "'s steps " +
                  std::to_string(root->first_step) + " to " + std::to_string(root->last_step));
  return Result::success();
}

}  // namespace

Result check_plan(const Graph& graph, const MemoryPlan& plan) {
  if (!is_power_of_two(plan.alignment))
    return broken("alignment " + std::to_string(plan.alignment) + " is not a power of two");
  std::vector<bool> seen(graph.tensor_count(), false);
  uint64_t sum = 0;
  bool overflow = false;
  for (const PlannedTensor& t : plan.tensors) {
    Result r = check_tensor(graph, plan, t, &seen);
    if (r.ok() && t.view_of) r = check_view(graph, plan, t);
    if (!r.ok()) return r;
    if (!t.view_of) overflow = overflow || __builtin_add_overflow(sum, t.size, &sum);
  }
  if (overflow || sum != plan.bytes_without_reuse)
    return broken("bytes_without_reuse is " + std::to_string(plan.bytes_without_reuse) + ", but the sizes add up to " +
                  (overflow ? std::string("more than 2^64") : std::to_string(sum)));
  if (plan.sram_bytes > plan.sram_capacity)
    return broken("the SRAM arena's " + std::to_string(plan.sram_bytes) + " bytes exceed its capacity of " +
                  std::to_string(plan.sram_capacity));
  const Result hbm = check_live_overlap(graph, plan, false);
  if (!hbm.ok()) return hbm;
  return check_live_overlap(graph, plan, true);
}

}  // namespace hpusim::synapse::compiler
