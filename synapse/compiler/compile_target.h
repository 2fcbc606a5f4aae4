// What the graph compiler compiles for: the engines it may use and the sync-manager resources
// (E_N sync objects and monitors) its recipes own. The runtime derives it from the device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/regs/gaudi1_map.h"

namespace hpusim::synapse::compiler {

struct CompileTarget {
  unsigned tpcs = 8;                        // TPC 0 .. tpcs-1, stream 0 of each
  unsigned tpc_vector_bits = 2048;          // the TPCs' vector width: the kernels' lane counts
  unsigned tpc_prefetch_entries = 128;      // the TPCs' prefetch-buffer entries: the kernels' lookahead
  std::vector<regs::QueueId> mme_queues = {regs::QueueId::MME_1_0, regs::QueueId::MME_0_0};  // MME0, MME2
  uint32_t mme_geometries = 2;              // output geometries each MME engine offers
  regs::QueueId external_queue = regs::QueueId::DMA_0_0;   // where the launch's last job runs
  // memcpy nodes: the internal DMA channels (stream 0 of each); a large copy is spread over them.
  std::vector<regs::QueueId> dma_queues = {regs::QueueId::DMA_2_0, regs::QueueId::DMA_3_0, regs::QueueId::DMA_4_0,
                                           regs::QueueId::DMA_5_0, regs::QueueId::DMA_6_0, regs::QueueId::DMA_7_0};
  // A copy is split into pieces of at least this many bytes, one per DMA queue at most.
  uint64_t dma_split_min_bytes = 256 * 1024;
  // E_N sync objects the runtime hands launches their ranges from (a recipe needs one per node
  // plus one, and numbers them from 0), and the monitors (one per queue, monitor_for_queue).
  uint32_t sob_base = 256, sob_count = 1536;
  uint32_t monitor_base = 256, monitor_end = 504;   // the runtime's queue waits use 504..511
  // An MME GEMM with at least this many rows is split by rows across every MME engine.
  uint32_t mme_split_min_rows = 256;
  // The output rows an MME engine computes per pass over B in a large GEMM (its super-tile): a
  // sliced GEMM's chunks are multiples of it (compiler/slicing.h). 0: no slicing.
  uint32_t mme_super_tile_rows = 0;
  // Fuse elementwise clusters and chains (compiler/fusion.h).
  bool fuse_elementwise = true;
  // The SRAM arena intermediates may use (0: none); the runtime gives its SRAM user range.
  uint64_t sram_bytes = 0;

  // "tpcs=8 vector=2048 prefetch=128 mme=2 geometries=2 dma=6 sob=256+1536 mon=256 fuse=2 order=4 frame=2 kernels=5 slice2 slice=320 sram=...": recorded in the
  // recipe (and so part of the recipe cache's key).
  std::string describe() const;
};

}  // namespace hpusim::synapse::compiler
