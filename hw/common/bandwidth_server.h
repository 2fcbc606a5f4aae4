// A bandwidth server: one serial resource (a link direction, a port, a bank) that moves bytes at
// a fixed rate. A transfer starts when both it has arrived and the resource is free, so queued
// transfers serialise and contention shows up as waiting time.
#pragma once

#include <algorithm>
#include <cstdint>

namespace hpusim::hw {

class BandwidthServer {
 public:
  BandwidthServer() = default;
  // bytes_per_cycle bytes move every period_ps picoseconds.
  BandwidthServer(double bytes_per_cycle, uint64_t period_ps)
      : ps_per_byte_(static_cast<double>(period_ps) / bytes_per_cycle) {}

  // Reserves the resource for `bytes` arriving at `arrival_ps`; returns when the last byte leaves.
  uint64_t reserve(uint64_t arrival_ps, uint64_t bytes) {
    uint64_t start = std::max(arrival_ps, free_at_ps_);
    waited_ps_ += start - arrival_ps;
    uint64_t finish = start + duration_ps(bytes);
    busy_ps_ += finish - start;
    free_at_ps_ = finish;
    bytes_ += bytes;
    return finish;
  }

  uint64_t duration_ps(uint64_t bytes) const {
    return static_cast<uint64_t>(static_cast<double>(bytes) * ps_per_byte_ + 0.5);
  }
  double bytes_per_ps() const { return 1.0 / ps_per_byte_; }
  uint64_t free_at_ps() const { return free_at_ps_; }
  uint64_t busy_ps() const { return busy_ps_; }
  uint64_t waited_ps() const { return waited_ps_; }
  uint64_t bytes() const { return bytes_; }
  void reset_state() { free_at_ps_ = 0; }

 private:
  double ps_per_byte_ = 1.0;
  uint64_t free_at_ps_ = 0;
  uint64_t busy_ps_ = 0;
  uint64_t waited_ps_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace hpusim::hw
