// What moves the SystemC kernel forward when the co-simulation advances the device. Alone, the
// loop calls sc_start; a simulation split across processes (sim/distributed) installs a runner
// that cuts every run at its synchronisation windows and meets the other processes there.
#pragma once

#include <cstdint>

namespace hpusim::cosim {

class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  // Simulation thread: runs the device from now towards `target_ps` (later than now). It may stop
  // short, at a window's end or when the kernel is paused (sc_pause: a host port has news); the
  // caller looks at what happened and calls again.
  virtual void run_towards(uint64_t target_ps) = 0;
};

}  // namespace hpusim::cosim
