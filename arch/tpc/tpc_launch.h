// Building a TPC launch the way the runtime does (gaudi-driver-and-command-submission.md §4.3):
// partition the kernel's index space across TPCs, and per TPC build the command buffer its QMAN
// runs: WREG_32s of the QM descriptor set into the TPC CFG block, TPC_CMD (cache invalidate,
// icache prefetch, engine barrier) and TPC_EXECUTE, with the end-of-kernel sync-object message "ADD 1" on the
// last partition of each TPC ("ADD 0" on the others). Plain C++ (no SystemC).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/tpc/launch_context.h"

namespace hpusim::tpc {

struct IndexRange {
  std::array<int32_t, kDims> offset{};
  std::array<int32_t, kDims> size{};
};

struct TpcLaunchSpec {
  uint64_t kernel_address = 0;                  // device address of the program (32-byte aligned)
  std::vector<TensorDescriptor> tensors;        // tensor 0, 1, ... (at most 16; dims 1..5 each)
  std::array<uint32_t, 32> srf{};               // S0..S31
  std::array<int32_t, kDims> index_space{};     // whole index space; sizes <= 0 count as 1
  // Where it starts: a launch over part of a kernel's index space (a sliced consumer's chunk)
  // keeps the kernel's descriptors and partitions [index_offset, index_offset + index_space).
  std::array<int32_t, kDims> index_offset{};
  // Partition boundaries along a dimension are multiples of its granule (e.g. 64 in dim 0 for a
  // kernel that steps one f32 vector there). 0 counts as 1.
  std::array<int32_t, kDims> granule{};
  unsigned tpcs = 1;                            // TPCs to spread over (1..8)
  unsigned partitions_per_tpc = 1;              // launches per TPC
  uint64_t sob_address = 0;                     // full device address of the sync object
  bool invalidate_caches = true;                // TPC_CMD's I/D/L/T-cache invalidate bits
  uint32_t keep_caches_tpcs = 0;                // but not on these TPCs (bit n: TPC n)
  // ICACHE_BASE = the kernel and TPC_CMD's ICACHE_PREFETCH_32KB: the kernel's code streams into
  // the instruction cache as it starts (the memory from the kernel on must be readable for
  // kIcachePrefetchWindowBytes), instead of a round trip per missed line.
  bool icache_prefetch = false;
};

// What TPC_CMD's ICACHE_PREFETCH_32KB reads from ICACHE_BASE (at most the core's icache).
inline constexpr uint32_t kIcachePrefetchWindowBytes = 32768;

// The partitions of `spec.index_space`: tpcs * partitions_per_tpc ranges (fewer when the index
// space is too small), in launch order; partition p runs on TPC p % tpcs. Rule: the outermost
// dimension whose size in granules is at least the partition count (or, when it shares them
// unevenly, the mean slice under 90 % of the largest, an inner one that shares them better in
// slices of at least 4 granules: 12 tiles on 8 TPCs leave half of them idle half the time) is
// split into near-equal granule-aligned slices (the first ones one granule larger); when no
// dimension is that large,
// the largest dimension (in granules) is split one granule per partition. Throws
// std::invalid_argument for tpcs or partitions_per_tpc of 0, or tpcs > 8.
std::vector<IndexRange> partition_index_space(const TpcLaunchSpec& spec);

struct TpcCommandBuffer {
  unsigned tpc = 0;
  std::vector<IndexRange> partitions;           // what this TPC runs, in order
  std::vector<uint8_t> bytes;                   // the command buffer for its QMAN (TPC_n_x queue)
};

// One command buffer per TPC that has work (TPCs without a partition get none, and send no
// message: wait for result.size() ADD-1 messages). Throws std::invalid_argument for a bad spec
// (more than 16 tensors, a tensor with dims outside 1..5, an unaligned kernel address).
std::vector<TpcCommandBuffer> build_tpc_command_buffers(const TpcLaunchSpec& spec);

// The 32-bit register words of one descriptor set (regs::tpc_cfg::kDescSize bytes) for one
// partition: what the command buffer writes at the QM set.
std::vector<uint32_t> tpc_descriptor_words(const TpcLaunchSpec& spec, const IndexRange& range, uint32_t so_message);

}  // namespace hpusim::tpc
