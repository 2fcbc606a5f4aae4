// The order the lowering emits nodes in. It starts from the graph's topological order; then each
// tensor-list optimizer node (one parameter group: fused_adam_f32, fused_adamw_f32, fused_sgd_f32)
// is split by when its entries can start: an entry waits for the producers of what it reads and
// for every node that reads or writes memory its updates overwrite (the forward and backward
// GEMMs still reading the old weight). Entries ready after the same node become one update-only
// node of the same GUID (no state output), placed before the first later GEMM long enough to hide
// it (schedule.cpp: MACs against the update's bytes and launches), so the TPCs update those
// parameters while the MME computes and the TPC queue would otherwise wait. Entries no GEMM can
// hide stay in the last part, which keeps the node's name, place and state output (the step
// count). Values are unchanged: each entry is updated by the same kernel from the same inputs.
#pragma once

#include <vector>

#include "synapse/compiler/memory_plan.h"
#include "synapse/graph/graph.h"

namespace hpusim::synapse::compiler {

struct ScheduledGraph {
  // The graph's tensors (same ids) and nodes (same ids; a split node's last part keeps its id, the
  // other parts are added after the last node, named "<name>/part<k>").
  graph::Graph graph;
  std::vector<graph::NodeId> order;   // every node of `graph` once
  // The inputs of a split node's earlier parts stay live until its last part (for plan_memory):
  // memory an update may still be reading is not handed to a node that could run meanwhile.
  std::vector<LiveUntil> holds;
  size_t split_nodes = 0;             // optimizer nodes split into parts
  size_t added_nodes = 0;             // parts added by the splits
};

// What decides whether GEMMs hide an update (schedule.cpp).
struct ScheduleOptions {
  // An update streams its bytes at the HBM's rate while a GEMM runs its MACs at the MME's: a GEMM
  // of this many MACs per update byte lasts about as long (a Gaudi-class balance: hl205's MMEs do
  // 30 TMAC/s against 0.9 TB/s of HBM, 33 MACs a byte).
  uint64_t macs_per_update_byte = 32;
  // A launch of the update costs about as much as streaming this many bytes (a few microseconds
  // of command submission at HBM speed).
  uint64_t update_launch_bytes = 4 << 20;
};

// `order` must be a topological order of the valid `graph`.
ScheduledGraph schedule_nodes(const graph::Graph& graph, const std::vector<graph::NodeId>& order,
                              const ScheduleOptions& options = {});

}  // namespace hpusim::synapse::compiler
