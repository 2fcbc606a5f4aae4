// Per-engine utilisation of the simulated card over a time window, from the engines' own
// statistics (TPC kernels, MME jobs, DMA busy time): what a profiler's counters give. For tools
// only; the Synapse layers never read the card.
#pragma once

#include <cstdint>

namespace hpusim::hw {
class Card;
}

namespace hpusim::zoo {

struct Utilisation {
  double mme = 0;   // mean over the MME engines of the fraction of the window they ran jobs
  double tpc = 0;   // mean over the TPCs of the fraction of the window they ran kernels
};

// What the engines have been busy for since the card was built (the engines' totals); read it on
// the simulation thread.
struct EngineBusy {
  uint64_t tpc_ps = 0, mme_ps = 0;   // summed over the engines
  unsigned tpcs = 0, mmes = 0;
};
EngineBusy engine_busy(hw::Card& card);

// Utilisation over a window of `window_ps` in which the busy totals went from `before` to `after`
// (the engines idle at both ends, as around a synchronised step).
Utilisation engine_utilisation(const EngineBusy& before, const EngineBusy& after, uint64_t window_ps);

}  // namespace hpusim::zoo
