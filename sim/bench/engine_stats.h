// The statistics of the card's engines for --stats: every QMAN, DMA channel, sync manager, MMU,
// TPC core and MME engine, by path (qman.dma0_qm.packets, dma.ch2.bytes, mmu.tpc3.tlb_misses...).
// Formulas over the blocks' own counters, evaluated when the registry is written (on the
// simulation thread).
#pragma once

#include "hw/card/card.h"
#include "sim/stats/stats.h"

namespace hpusim::bench {

void register_engine_stats(stats::Registry& registry, hw::Card& card);

}  // namespace hpusim::bench
