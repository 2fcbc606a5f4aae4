#include "sim/zoo/engine_utilisation.h"

#include <algorithm>
#include <utility>

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
    b.tpc_kernels.push_back(core->kernel_totals().kernels);
    ++b.tpcs;
  }
  b.tpc_bundles_per_ns = double(b.tpcs) * clocks.tpc_mhz() / 1000.0;
  for (unsigned m = 0; m < card.mme_numbers(); ++m) {
    if (hw::MmeEngine* engine = card.mme_engine(m)) {
      b.mme_ps += engine->job_totals().busy_ps;
      b.mme_mac_cycles += engine->job_totals().mac_cycles;
      b.mme_jobs.push_back(engine->job_totals().jobs);
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

namespace {

using Intervals = std::vector<std::pair<uint64_t, uint64_t>>;   // [start, end) in ps

// Sorted, disjoint.
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [s, e] : v) {
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(s, e);
    }
  }
  return out;
}

uint64_t length(const Intervals& v) {
  uint64_t sum = 0;
  for (const auto& [s, e] : v) sum += e - s;
  return sum;
}

// Of two sorted, disjoint lists.
uint64_t intersection(const Intervals& a, const Intervals& b) {
  uint64_t sum = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t s = std::max(a[i].first, b[j].first), e = std::min(a[i].second, b[j].second);
    if (s < e) sum += e - s;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return sum;
}

// The entries of `history` numbered after `since` (numbers from 1); false if some fell out of it.
template <typename History, typename Number>
bool collect(const History& history, uint64_t since, uint64_t total, Number number, Intervals& out) {
  uint64_t found = 0;
  for (const auto& entry : history) {
    if (number(entry) > since) {
      out.emplace_back(entry.start_ps, entry.end_ps);
      ++found;
    }
  }
  return found == total - since;
}

}  // namespace

Overlap engine_overlap(hw::Card& card, const EngineBusy& before) {
  Overlap o;
  Intervals tpc, mme;
  for (unsigned t = 0; hw::TpcCore* core = card.tpc_core(t); ++t) {
    const uint64_t since = t < before.tpc_kernels.size() ? before.tpc_kernels[t] : 0;
    o.complete &= collect(core->kernels(), since, core->kernel_totals().kernels,
                          [](const auto& k) { return k.kernel; }, tpc);
  }
  unsigned index = 0;
  for (unsigned m = 0; m < card.mme_numbers(); ++m) {
    if (hw::MmeEngine* engine = card.mme_engine(m)) {
      const uint64_t since = index < before.mme_jobs.size() ? before.mme_jobs[index] : 0;
      o.complete &= collect(engine->jobs(), since, engine->job_totals().jobs, [](const auto& j) { return j.job; }, mme);
      ++index;
    }
  }
  const Intervals t = merged(std::move(tpc)), m = merged(std::move(mme));
  o.tpc_ns = double(length(t)) / 1000.0;
  o.mme_ns = double(length(m)) / 1000.0;
  o.both_ns = double(intersection(t, m)) / 1000.0;
  Intervals either = t;
  either.insert(either.end(), m.begin(), m.end());
  either = merged(std::move(either));
  if (!either.empty()) o.span_ns = double(either.back().second - either.front().first) / 1000.0;
  return o;
}

Roofline roofline(const EngineBusy& before, const EngineBusy& after) {
  Roofline r;
  if (after.mme_macs_per_ns > 0) r.mme_ns = double(after.mme_mac_cycles - before.mme_mac_cycles) / after.mme_macs_per_ns;
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
