#include "sim/zoo/engine_utilisation.h"

#include <algorithm>

#include "hw/card/card.h"
#include "hw/mme/mme_engine.h"
#include "hw/tpc/tpc_core.h"

namespace hpusim::zoo {
namespace {

uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  const uint64_t lo = std::max(a0, b0), hi = std::min(a1, b1);
  return hi > lo ? hi - lo : 0;
}

}  // namespace

Utilisation engine_utilisation(hw::Card& card, uint64_t start_ps, uint64_t end_ps) {
  Utilisation u;
  if (end_ps <= start_ps) return u;
  const double window = static_cast<double>(end_ps - start_ps);
  unsigned tpcs = 0;
  for (unsigned t = 0; hw::TpcCore* core = card.tpc_core(t); ++t) {
    uint64_t busy = 0;
    for (const auto& k : core->kernels()) busy += overlap(k.start_ps, k.end_ps, start_ps, end_ps);
    u.tpc += static_cast<double>(busy) / window;
    ++tpcs;
  }
  if (tpcs) u.tpc /= tpcs;
  unsigned engines = 0;
  for (unsigned m = 0; m < 4; ++m) {
    hw::MmeEngine* engine = card.mme_engine(m);
    if (!engine) continue;
    uint64_t busy = 0;
    for (const auto& j : engine->jobs()) busy += overlap(j.start_ps, j.end_ps, start_ps, end_ps);
    u.mme += static_cast<double>(busy) / window;
    ++engines;
  }
  if (engines) u.mme /= engines;
  return u;
}

}  // namespace hpusim::zoo
