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

// The window is [start_ps, end_ps) of simulated time.
Utilisation engine_utilisation(hw::Card& card, uint64_t start_ps, uint64_t end_ps);

}  // namespace hpusim::zoo
