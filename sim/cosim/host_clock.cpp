#include "sim/cosim/host_clock.h"

#include <time.h>

#include <stdexcept>

namespace hpusim::cosim {
namespace {

uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

HostTimeSource parse_host_time_source(const std::string& text) {
  if (text == "modeled") return HostTimeSource::kModeled;
  if (text == "measured") return HostTimeSource::kMeasured;
  throw std::invalid_argument("unknown host time source '" + text + "' (expected modeled or measured)");
}

const char* to_string(HostTimeSource source) {
  return source == HostTimeSource::kModeled ? "modeled" : "measured";
}

HostClock::HostClock(HostTimeSource source) : source_(source) { leave(); }

void HostClock::charge_ns(uint64_t ns) {
  if (source_ == HostTimeSource::kModeled) now_ps_ += ns * 1000;
}

// Each host thread measures its own CPU time since it last left the simulator.
thread_local uint64_t left_at_cpu_ns = 0;
thread_local const HostClock* left_clock = nullptr;

void HostClock::enter() {
  if (source_ == HostTimeSource::kMeasured) {
    uint64_t cpu = thread_cpu_ns();
    if (left_clock == this && cpu > left_at_cpu_ns) now_ps_ += (cpu - left_at_cpu_ns) * 1000;
  }
}

void HostClock::leave() {
  if (source_ == HostTimeSource::kMeasured) {
    left_at_cpu_ns = thread_cpu_ns();
    left_clock = this;
  }
}

void HostClock::wait_until(uint64_t ps) {
  if (ps > now_ps_) now_ps_ = ps;
}

}  // namespace hpusim::cosim
