#include "sim/zoo/engine_utilisation.h"

#include "hw/card/card.h"
#include "hw/mme/mme_engine.h"
#include "hw/tpc/tpc_core.h"

namespace hpusim::zoo {

EngineBusy engine_busy(hw::Card& card) {
  EngineBusy b;
  const auto& clocks = card.preset().clocks();
  for (unsigned t = 0; hw::TpcCore* core = card.tpc_core(t); ++t) {
    b.tpc_ps += core->kernel_totals().busy_ps;
    b.tpc_bundles += core->kernel_totals().bundles;
    ++b.tpcs;
  }
  b.tpc_bundles_per_ns = double(b.tpcs) * clocks.tpc_mhz() / 1000.0;
  for (unsigned m = 0; m < card.mme_numbers(); ++m) {
    if (hw::MmeEngine* engine = card.mme_engine(m)) {
      b.mme_ps += engine->job_totals().busy_ps;
      b.mme_macs += engine->job_totals().macs;
      const auto& geometry = engine->params().geometries.front();
      b.mme_macs_per_ns += double(geometry.rows) * geometry.cols * clocks.mme_mhz() / 1000.0;
      ++b.mmes;
    }
  }
  const auto& hbm = card.memory().hbm();
  b.hbm_bytes = hbm.stats().read_bytes + hbm.stats().write_bytes;
  b.hbm_bytes_per_ns = hbm.peak_bytes_per_second() / 1e9;
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

Roofline roofline(const EngineBusy& before, const EngineBusy& after) {
  Roofline r;
  if (after.mme_macs_per_ns > 0) r.mme_ns = double(after.mme_macs - before.mme_macs) / after.mme_macs_per_ns;
  if (after.tpc_bundles_per_ns > 0) r.tpc_ns = double(after.tpc_bundles - before.tpc_bundles) / after.tpc_bundles_per_ns;
  if (after.hbm_bytes_per_ns > 0) r.hbm_ns = double(after.hbm_bytes - before.hbm_bytes) / after.hbm_bytes_per_ns;
  r.bound_ns = r.mme_ns;
  r.limit = r.mme_ns > 0 ? "mme" : "none";
  if (r.tpc_ns > r.bound_ns) {
    r.bound_ns = r.tpc_ns;
    r.limit = "tpc";
  }
  if (r.hbm_ns > r.bound_ns) {
    r.bound_ns = r.hbm_ns;
    r.limit = "hbm";
  }
  return r;
}

}  // namespace hpusim::zoo
