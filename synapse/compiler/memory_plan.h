// The graph compiler's memory planner: every non-persistent tensor gets an offset in one
// workspace, tensors whose live ranges are disjoint sharing memory; persistent tensors are left
// to the runtime, which patches their addresses at launch, and are listed as patch points.
//
//   std::vector<NodeId> order;
//   validate(g, &order);
//   MemoryPlan plan;
//   Result r = plan_memory(g, order, &plan);            // default alignment: 128 bytes
//   plan.find(y)->offset;                               // y's place in the workspace
//   check_plan(g, plan);                                // plan_check.h
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "synapse/compiler/copy_views.h"
#include "synapse/graph/graph.h"
#include "synapse/graph/status.h"

namespace hpusim::synapse::compiler {

using graph::Graph;
using graph::NodeId;
using graph::Result;
using graph::Status;
using graph::TensorId;

inline constexpr uint64_t kDefaultAlignment = 128;   // the device cache line

// A tensor in the workspace: bytes [offset, offset + size), live from the step (index in the
// order) of its producer to the step of its last reader, both inclusive.
struct PlannedTensor {
  TensorId tensor;
  uint64_t offset = 0;   // in the SRAM arena when in_sram, else in the (HBM) workspace
  uint64_t size = 0;   // elements x dtype bytes, rounded up to the alignment
  uint32_t first_step = 0;
  uint32_t last_step = 0;
  bool in_sram = false;
  std::optional<TensorId> view_of;   // a copy view (copy_views.h): on this tensor's bytes, no memory of its own
};

// A persistent tensor and the nodes that touch it, each list in step order.
struct PatchPoint {
  TensorId tensor;
  std::vector<NodeId> readers;
  std::vector<NodeId> writers;
};

struct MemoryPlan {
  uint64_t alignment = kDefaultAlignment;
  std::vector<PlannedTensor> tensors;     // in placement order: by first step, then output slot
  std::vector<PatchPoint> patch_points;   // by first touch: step, inputs before outputs
  uint64_t workspace_bytes = 0;           // the highest end in the workspace
  uint64_t sram_capacity = 0;             // the SRAM arena's size (0: no SRAM)
  uint64_t sram_bytes = 0;                // the highest end in the SRAM arena
  uint64_t bytes_without_reuse = 0;       // the sum of the sizes (views have none of their own)
  std::vector<uint32_t> view_steps;       // the steps of the copies planned as views: they touch no memory

  const PlannedTensor* find(TensorId id) const;
  const PatchPoint* find_patch_point(TensorId id) const;
  bool is_view_step(uint32_t step) const;
};

// Places the non-persistent tensors the nodes of `order` touch (tensors no node touches take
// no memory). First fit by liveness: tensors are taken by first step, then by their slot among
// the producer's outputs (so the plan depends on the order, not on creation order), and each
// goes to the lowest aligned offset where it overlaps no placed tensor it may not reuse. A
// placed tensor's bytes may be reused only when its live range ended before the new tensor's
// first step and the new tensor's writer already waits, through what it reads (transitively),
// for the placed tensor's writer and every reader: reuse never adds a wait between nodes that
// could otherwise run side by side on different engines. The plan is checked with check_plan
// before it is returned.
//
// Errors (synInvalidArgument; nothing is written to *plan): an alignment that is not a power of
// two; an order entry that is not a node of the graph or repeats one; an order that leaves out
// a node; a tensor written by two nodes; a node that reads a non-persistent tensor no earlier
// step writes; a workspace that would not fit 64 bits. README.md lists the messages.
//
// SRAM: with `sram_capacity` > 0 the SRAM arena is filled first (the same first fit, bounded by
// the capacity), in placement order if that way it holds every tensor, else shortest-lived first
// (ties by placement order); a tensor that finds no room otherwise takes bytes by liveness alone.
// The rest go to the workspace. SRAM's bandwidth and latency beat HBM's.
//
// `holds`: tensors kept live at least until a step (by its index in `order`) though no node
// touches them there: the scheduler's way of saying a node placed earlier may still be running.
//
// `views` (find_copy_views): each view is planned on its source's bytes (the tensor its source
// is a view of, if that is one too), which stays live until the view's last reader.
struct LiveUntil {
  TensorId tensor;
  uint32_t step = 0;
};
Result plan_memory(const Graph& graph, const std::vector<NodeId>& order, MemoryPlan* plan,
                   uint64_t alignment = kDefaultAlignment, uint64_t sram_capacity = 0,
                   const std::vector<LiveUntil>& holds = {}, const std::vector<CopyView>& views = {});

}  // namespace hpusim::synapse::compiler
