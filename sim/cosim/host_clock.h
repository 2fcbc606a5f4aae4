// The virtual host clock: host time on the same timeline as device (SystemC) time.
//
//  * modeled (default): host layers charge costs from the preset's host cost table; runs are
//    deterministic and golden files use this.
//  * measured: host time advances by the thread CPU time the host code itself used between its
//    calls into the simulator; the simulator's own work runs on the simulation thread and is
//    therefore excluded. Modeled charges are ignored in this mode.
// Either way, host time jumps forward when the host blocks on the device.
#pragma once

#include <cstdint>
#include <string>

namespace hpusim::cosim {

enum class HostTimeSource { kModeled, kMeasured };

HostTimeSource parse_host_time_source(const std::string& text);  // "modeled" | "measured"
const char* to_string(HostTimeSource source);

class HostClock {
 public:
  explicit HostClock(HostTimeSource source);

  HostTimeSource source() const { return source_; }
  uint64_t now_ps() const { return now_ps_; }

  // Host work of `ns` nanoseconds according to the cost table (modeled source only).
  void charge_ns(uint64_t ns);
  // Called when host code enters the simulator: in measured mode, adds the CPU time the calling
  // thread used since it last left.
  void enter();
  // Called when host code leaves the simulator (starts the next measured interval).
  void leave();
  // The host was blocked until `ps` (for example waiting for an interrupt).
  void wait_until(uint64_t ps);

 private:
  HostTimeSource source_;
  uint64_t now_ps_ = 0;
};

}  // namespace hpusim::cosim
