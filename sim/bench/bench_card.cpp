#include "sim/bench/bench_card.h"

#include <stdexcept>

#include "hw/hbm/hbm_subsystem.h"
#include "hw/sram/hbm_cache.h"
#include "sim/bench/start_phase.h"

namespace hpusim::bench {

namespace {

bool hbm_idle(hbm::HbmSubsystem& hbm) {
  for (uint32_t c = 0; c < hbm.channels(); ++c) {
    if (!hbm.controller(c).idle()) return false;
  }
  return true;
}

}  // namespace

void BenchCard::start_cold(const std::string& bench, uint64_t phase_ns) {
  hw::HbmCache* cache = card_->memory().hbm_cache();
  hbm::HbmSubsystem& hbm = card_->memory().hbm();
  const auto busy = [&] { return (cache != nullptr && !cache->idle()) || !hbm_idle(hbm); };
  for (int waited_us = 0; on_sim_thread(busy); ++waited_us) {
    if (waited_us == 1000) {
      throw std::runtime_error("bench " + bench + ": the HBM still has requests in flight 1 ms after a case");
    }
    sim_->charge_ns(1000);
    sim_->sync_device();
  }
  if (cache != nullptr) on_sim_thread([&] { cache->drop_all_lines(); });
  const uint64_t idle_ns = self_refresh_settle_ns(hbm.config().controller, hbm.config().timing) + phase_ns;
  if (idle_ns == 0) return;
  sim_->charge_ns(idle_ns);
  sim_->sync_device();
}

}  // namespace hpusim::bench
