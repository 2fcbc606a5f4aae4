// How the benches start each case (README, "Start phase and --phases"): from the same memory state
// (every HBM channel idle long enough to be in self-refresh, whose exit restarts its refresh
// schedule at the case's first request) and, run k of a case, k x kPhaseStepNs later, so that
// a case measured at several phases of the card's clocks gives a median and a spread.
#pragma once

#include <cstdint>

#include "hw/hbm/hbm_config.h"

namespace hpusim::bench {

// A prime number of nanoseconds: the starts fall at different phases of every clock.
constexpr uint64_t kPhaseStepNs = 37;
constexpr unsigned kMaxPhases = 64;

// The idle time after which every channel of an HBM controlled so is in self-refresh (0 without it).
inline uint64_t self_refresh_settle_ns(const hbm::ControllerConfig& controller, const hbm::Timing& timing) {
  if (!controller.refresh_enabled || controller.self_refresh_after_refi == 0) return 0;
  const uint64_t ps = uint64_t{controller.self_refresh_after_refi + 1} * timing.nREFI * timing.tck_ps;
  return (ps + 999) / 1000;
}

}  // namespace hpusim::bench
