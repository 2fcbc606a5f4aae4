// The order nodes are lowered in, chosen for the engines: from a topological order, a list
// schedule on estimated times. Each engine (the MMEs, the TPCs, the DMA channels) runs its nodes
// in the order they are lowered, so that order decides what an engine waits for: a GEMM lowered
// before another it does not feed keeps the second one (and the TPC work waiting for it) behind
// it. The schedule takes, at each turn, the node that can start soonest on its engine (its
// inputs' producers done, its engine free), and among those the one with the longest estimated
// path to the end of the graph: the backward's input gradient (feeding the rest of the backward)
// before its weight gradient (feeding only the optimizer), so TPC work on the input gradient
// overlaps the weight gradient's GEMM.
//
// Estimates are relative: a GEMM costs its MACs over `macs_per_byte` (a Gaudi-class MME-to-HBM
// balance, schedule.h), any other node the bytes it reads and writes, and every node
// `launch_bytes` more for what a launch costs whatever its size (the engines' start, the first
// reads' round trip, the end message), so a chain of small launches counts as long as it runs
// rather than as the few bytes it moves: the conv block's loss (relu, pooling, mean) started
// behind its whole backward and ended the step 2 us after the optimizer. Nodes touching the same
// persistent memory keep their order (memory_order.h), as do a tensor's writer and its readers.
// The result is a topological order of the graph; values do not change, only when engines run.
#pragma once

#include <cstdint>
#include <vector>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::compiler {

struct EngineOrderOptions {
  uint64_t macs_per_byte = 32;   // as ScheduleOptions::macs_per_update_byte
  // A launch's fixed cost in the estimate's bytes: about 0.3 us (a Gaudi-class card's small
  // kernels take 0.3-0.6 us) of an HBM of about 1 TB/s.
  uint64_t launch_bytes = 256 * 1024;
};

// `order` must be a topological order of the valid `graph`; the result holds the same nodes.
std::vector<graph::NodeId> engine_order(const graph::Graph& graph, const std::vector<graph::NodeId>& order,
                                        const EngineOrderOptions& options = {});

// The MACs of an MME node (0 if it has no job).
uint64_t mme_macs(const graph::Graph& graph, graph::NodeId node);

}  // namespace hpusim::synapse::compiler
