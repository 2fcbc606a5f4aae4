// How one rank takes part in a collective: its NIC queues' sends and receives, its DMA queues'
// copies and reductions, and the sync objects between them, as a program of ops per queue (the
// sync objects numbered from 0; emit.h writes it as command buffers).
//
// The algorithms are HCCL's in-box ones (reference: collectives-and-scale-out): direct exchange
// over the box's links, every message striped over the links joining its two cards, data cut in
// slices so reductions overlap the transfers.
// - all_reduce: a reduce_scatter (every rank sends chunk k to rank k, which reduces it) then an
//   all_gather of the reduced chunks, each slice sent on as soon as it is reduced.
// - reduce_scatter, all_gather, all_to_all: one direct exchange.
// - reduce: as HCL runs it, a reduce_scatter (rank k reduces chunk k; a rank other than the root
//   in staging memory) whose reduced slices go on to the root as they are ready (a gather).
// - broadcast: the root scatters the chunks and every rank passes its own on (scatter +
//   all_gather), the root's own chunk straight from the root.
// - barrier: a small message from every rank to every other.
// - send / recv: the buffer to the peer, striped over their links (a pair's sends and receives
//   pair up in the order both ranks issue them).
// Reductions run on the owner of a chunk, in rank order: acc = x0, then acc = op(acc, x1), ...,
// op(acc, x_{n-1}), each step one DMA reducing copy (arch/reduction's arithmetic), so the result
// is bit-exact against that sequence on the host. Received slices wait in `slots` slots per peer
// of scratch memory; a slot is received into again only after its slice was reduced.
//
// Two ranks' programs match message for message: every pair of ranks and link share one ordered
// conversation, built the same way on both sides, each side posting its sends and receives in
// that order. A rank's waits only ever look back at slices every conversation has already
// posted, so no program waits on another that waits on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/reduction/reduction.h"
#include "arch/regs/gaudi1_map.h"
#include "synapse/hccl/topology.h"

namespace hpusim::synapse::hccl {

// Send and Recv: point to point with the peer in Request::root.
enum class Collective { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, AllToAll, Barrier, Send, Recv };
const char* name(Collective c);

// An all_reduce in parts, as a hierarchical one runs them on different sets of ranks: the
// reduce-scatter half alone (rank k's chunk reduced into its place in recv) or the all-gather half
// alone (every rank's chunk already reduced in its place in recv, sent from there).
enum class Part { Whole, ReduceScatter, AllGather };

struct Request {
  Collective collective = Collective::AllReduce;
  Part part = Part::Whole;     // all_reduce only
  // Elements: all_reduce, broadcast, reduce: the buffer; reduce_scatter: each rank's result
  // (recvcount); all_gather: each rank's piece (sendcount); all_to_all: per peer.
  uint64_t count = 0;
  reduction::ReduceType type = reduction::ReduceType::F32;
  reduction::ReduceOp op = reduction::ReduceOp::Sum;
  unsigned root = 0;           // broadcast, reduce: the root; send, recv: the peer
  uint64_t send = 0, recv = 0;   // device addresses
  // Elements from one rank's chunk to the next in a buffer of a chunk per rank (reduce_scatter's
  // send, all_gather's recv, all_to_all's both); 0: `count`, the chunks back to back. A
  // hierarchical collective's stages take every group-th chunk of the whole buffer.
  uint64_t stride = 0;
};

// all_reduce's algorithm: HCCL's direct exchange, or a ring for comparison (rank r sends to r + 1:
// a reduce-scatter of n - 1 steps, each chunk summed along the ring from its first rank, then an
// all-gather of n - 1 steps). The other collectives always exchange directly.
enum class Algorithm { Direct, Ring };
const char* name(Algorithm a);

struct Config {
  Algorithm algorithm = Algorithm::Direct;
  uint64_t slice_bytes = 512 * 1024;   // HCCL's slice (HCL_SLICE_SIZE)
  unsigned slots = 4;                  // scratch slots per peer
  std::vector<regs::QueueId> engines;  // the DMA queues that copy and reduce
  uint64_t scratch = 0;                // device memory: scratch_bytes(ranks) of it
  // reduce, a rank other than the root: device memory its chunk is reduced in before it goes to
  // the root (reduce_staging_bytes() of it).
  uint64_t staging = 0;
  static constexpr uint64_t kBarrierBytes = 64;
  uint64_t scratch_bytes(unsigned ranks) const;
  // The staging a reduce of `count` elements of `element_bytes` on `ranks` ranks needs (a chunk).
  static uint64_t reduce_staging_bytes(uint64_t count, unsigned ranks, uint64_t element_bytes) {
    return (count + ranks - 1) / ranks * element_bytes;
  }
};

enum class OpKind : uint8_t { Wait, Send, Recv, Copy, Reduce, Signal };
struct Op {
  OpKind kind = OpKind::Wait;
  uint32_t sob = 0;            // Wait: the sync object; Send/Recv/Signal: the one it increments
  uint16_t target = 0;         // Wait: until the sync object reaches it
  uint64_t source = 0;         // Send, Copy, Reduce
  uint64_t destination = 0;    // Recv, Copy, Reduce
  uint64_t bytes = 0;
  reduction::ReduceOp reduce_op = reduction::ReduceOp::Sum;        // Reduce
  reduction::ReduceType reduce_type = reduction::ReduceType::F32;  // Reduce
};
struct QueueOps {
  regs::QueueId queue = regs::QueueId::DMA_0_0;
  std::vector<Op> ops;
};

struct Program {
  uint32_t start_sob = 0;      // the external queue sets it to 1; every queue first waits for it
  uint32_t sob_count = 0;
  std::vector<QueueOps> queues;
  // Every sync object the program counts on and its value once everything is done: the external
  // queue's last job waits for them, then sets all sob_count back to 0.
  std::vector<std::pair<uint32_t, uint16_t>> final_values;
  uint64_t nic_bytes = 0;      // bytes this rank sends
  // chain()'s queue that only waits for parts and signals they are done (its own monitor).
  bool has_join_queue = false;
  regs::QueueId join_queue = regs::QueueId::DMA_0_0;
};

// The program of `rank`. "" or why the request cannot run (a count too large for the sync objects'
// 15-bit counts: a larger slice helps).
std::string plan(const Topology& topology, unsigned rank, const Request& request, const Config& config, Program* out);

}  // namespace hpusim::synapse::hccl

namespace hpusim::synapse::hccl {
// One program of `parts` (a group of calls, hcclGroupStart / End, or a hierarchical collective's
// stages): their ops appended per queue in order, every part started by one start sync object,
// the other sync objects renumbered, and part i starting only once every (earlier) part in
// after[i] is done: `join_queue` (a queue no part uses, so that no part's work stands before a
// join) waits for such a part's final values, then signals a sync object of its own that the
// dependent part's queues wait for first. Parts run on different links and engines at once (a
// hierarchical all_reduce's stages, slice group by slice group); parts that must not overlap
// (sharing scratch memory) say so in `after`.
Program chain(const std::vector<Program>& parts, const std::vector<std::vector<size_t>>& after,
              std::optional<regs::QueueId> join_queue);
// The program as text, one op per line under its queue (HPUSIM_HCCL_DUMP prints it per call).
std::string to_text(const Program& program);
}  // namespace hpusim::synapse::hccl
