// HCCL's hierarchical collectives on boxes joined rail by rail (topology.h Hierarchy): each one a
// list of parts, every part a collective planned on this rank's box or rail (plan()), with the
// parts each waits for, for chain() to run as one program. The stages overlap slice group by
// slice group where the data allows; parts that reuse scratch memory wait for its last user.
//
// Rank b * group + i is the i-th card of box b; rail i joins the boxes' i-th cards. Reductions run
// in the box first, in rank order, then along the rail in box order, so the host reference of an
// element is (x_0 + ... + x_{g-1}) + (x_g + ... + x_{2g-1}) + ...
// - all_reduce: reduce-scatter half in the box, all_reduce of box rank i's chunk along rail i,
//   all-gather half in the box.
// - reduce_scatter: a reduce_scatter in the box per box's part of the buffer (box rank i gets its
//   box's sum of the chunks of the boxes' i-th ranks, in staging memory), then a reduce_scatter
//   of those along the rail.
// - all_gather: an all_gather along the rail (each rank's piece to its place), then one in the box
//   per box's part of the buffer.
// - broadcast: along the root's rail from the root, then in every box from its rank on that rail.
// - reduce: a reduce in every box to its rank on the root's rail (in staging memory), then along
//   that rail to the root (each a reduce_scatter and a gather to its root, the other ranks'
//   chunks reduced in staging memory too).
// - all_to_all: along the rail, every rank's blocks for a box to that box's rank on its rail (in
//   staging memory), then in the box per box of origin.
// - barrier: in the box, along the rail, in the box.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synapse/hccl/schedule.h"
#include "synapse/hccl/topology.h"

namespace hpusim::synapse::hccl {

struct Stages {
  std::vector<Program> parts;
  std::vector<std::vector<size_t>> after;   // chain()'s: the earlier parts part i waits for
};

// Device memory `request` needs besides the communicator's scratch (0 if none), on this rank.
uint64_t staging_bytes(const Hierarchy& h, unsigned ranks, const Request& request, const Config& config);

// The stages of `request` on this rank (h's). `config.scratch` is the communicator's scratch
// (Config::scratch_bytes(ranks)); `staging` the device memory staging_bytes() asked for. "" or
// why not.
std::string plan_stages(const Hierarchy& h, unsigned ranks, const Request& request, const Config& config,
                        uint64_t staging, Stages* out);

}  // namespace hpusim::synapse::hccl
