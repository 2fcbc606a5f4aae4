#include "sim/zoo/engine_utilisation.h"

#include "hw/card/card.h"
#include "hw/mme/mme_engine.h"
#include "hw/tpc/tpc_core.h"

namespace hpusim::zoo {

EngineBusy engine_busy(hw::Card& card) {
  EngineBusy b;
  for (unsigned t = 0; hw::TpcCore* core = card.tpc_core(t); ++t) {
    b.tpc_ps += core->kernel_totals().busy_ps;
    ++b.tpcs;
  }
  for (unsigned m = 0; m < card.mme_numbers(); ++m) {
    if (hw::MmeEngine* engine = card.mme_engine(m)) {
      b.mme_ps += engine->job_totals().busy_ps;
      ++b.mmes;
    }
  }
  return b;
}

Utilisation engine_utilisation(const EngineBusy& before, const EngineBusy& after, uint64_t window_ps) {
  Utilisation u;
  if (window_ps == 0) return u;
  const double window = static_cast<double>(window_ps);
  if (after.tpcs) u.tpc = static_cast<double>(after.tpc_ps - before.tpc_ps) / window / after.tpcs;
  if (after.mmes) u.mme = static_cast<double>(after.mme_ps - before.mme_ps) / window / after.mmes;
  return u;
}

}  // namespace hpusim::zoo
