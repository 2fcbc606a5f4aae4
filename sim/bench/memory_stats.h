// Registers the memory system's counters (HBM channels, SRAM, PCIe, fabric ports) in a stats
// registry as formulas read at dump time.
#pragma once

#include "hw/card/memory_system.h"
#include "sim/stats/stats.h"

namespace hpusim::bench {

void register_memory_system_stats(stats::Registry& registry, hw::MemorySystem& system);

}  // namespace hpusim::bench
