// Per-engine utilisation and the roofline of the simulated card over a time window, from the
// engines' own statistics (TPC kernels, MME jobs, HBM traffic): what a profiler's counters give.
// For tools only; the Synapse layers never read the card.
#pragma once

#include <cstdint>
#include <vector>

namespace hpusim::hw {
class Card;
}

namespace hpusim::zoo {

struct Utilisation {
  double mme = 0;   // mean over the MME engines of the fraction of the window they ran jobs
  double tpc = 0;   // mean over the TPCs of the fraction of the window they ran kernels
};

// What the engines have done since the card was built (the engines' totals) and the card's
// peaks; read it on the simulation thread.
struct EngineBusy {
  uint64_t tpc_ps = 0, mme_ps = 0;   // summed over the engines
  unsigned tpcs = 0, mmes = 0;
  uint64_t mme_mac_cycles = 0;       // MACs the MME engines executed, each counted for the array
                                     // cycles it took (an f32 job's mme.f32_array_cycles_per_k)
  uint64_t tpc_bundles = 0;          // bundles the TPCs issued
  uint64_t hbm_bytes = 0;            // read and written at the HBM, by every master
  double mme_macs_per_ns = 0;        // peaks: every MME engine's array every cycle,
  double tpc_bundles_per_ns = 0;     // one bundle per TPC per cycle,
  double hbm_bytes_per_ns = 0;       // the HBM's data-bus peak
  std::vector<uint64_t> tpc_kernels, mme_jobs;   // finished so far, per TPC and per MME engine
};
EngineBusy engine_busy(hw::Card& card);

// Utilisation over a window of `window_ps` in which the busy totals went from `before` to `after`
// (the engines idle at both ends, as around a synchronised step).
Utilisation engine_utilisation(const EngineBusy& before, const EngineBusy& after, uint64_t window_ps);

// The roofline of what ran between `before` and `after`: the time each resource needs at its
// peak for the work it did (MME: the MACs; TPC: the bundles it issued, so a kernel with fewer
// bundles lowers it; HBM: the bytes moved), and the bound, the longest of the three.
struct Roofline {
  double mme_ns = 0, tpc_ns = 0, hbm_ns = 0;
  double bound_ns = 0;
  const char* limit = "none";   // "mme", "tpc" or "hbm": the resource that sets the bound
};
Roofline roofline(const EngineBusy& before, const EngineBusy& after);

// When the engines ran, from the kernels and jobs finished since `before` (the engines' histories;
// read on the simulation thread): the time at least one MME ran a job, at least one TPC ran a
// kernel, and both at once; and the span from the first of those kernels and jobs to start to
// the last to end (the launch's device time without the submission before it and the completion
// after it).
struct Overlap {
  double mme_ns = 0, tpc_ns = 0, both_ns = 0, span_ns = 0;
  bool complete = true;   // false: an engine finished more than its history keeps
};
Overlap engine_overlap(hw::Card& card, const EngineBusy& before);

}  // namespace hpusim::zoo
