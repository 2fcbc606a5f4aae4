// The co-simulation loop: one timeline for host and device.
//
// Host code calls in from any thread; all SystemC work runs on the simulation thread. Each host
// access is stamped with host time; the device is first advanced to that time, then the access is
// delivered. When the host waits (for an interrupt or a read), the device runs until the awaited
// event, and host time jumps to it (plus the interrupt latency for interrupts). The device never
// runs ahead of the host except while the host waits.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "sim/cosim/host_clock.h"
#include "sim/cosim/host_port.h"
#include "sim/cosim/sim_thread.h"

namespace hpusim::cosim {

// The host's costs the loop charges itself (the preset's host table: mmio_write_ns, mmio_read_ns,
// irq_latency_ns; the platform fills them in).
struct HostCostsNs {
  uint64_t mmio_write_ns = 0;      // per posted write; block writes pay it per 64 bytes
  uint64_t mmio_read_ns = 0;       // host-side cost on top of the modelled round trip
  uint64_t irq_latency_ns = 0;
};

class CoSimulation {
 public:
  CoSimulation(HostTimeSource source, const HostCostsNs& costs);
  ~CoSimulation();

  // Runs `work` on the simulation thread (elaboration, model queries).
  template <typename Work>
  auto on_sim_thread(Work&& work) {
    return sim_.call(std::forward<Work>(work));
  }

  // Connects the card's host port; call once after elaboration.
  void attach(HostPort& port);

  HostClock& host_clock() { return clock_; }
  uint64_t host_now_ps() {
    std::lock_guard<std::recursive_mutex> lock(host_mutex_);
    return clock_.now_ps();
  }
  uint64_t device_now_ps();

  // Host work charged to the modeled clock.
  void charge_ns(uint64_t ns);

  // MMIO through the PCIe link. A write is posted; a read blocks until its data returns.
  // Both throw std::runtime_error if the device answers with an error response.
  void mmio_write32(uint64_t device_address, uint32_t value);
  uint32_t mmio_read32(uint64_t device_address);

  // A block of posted writes (memcpy_toio through a BAR): `bytes` bytes from `data` to
  // [device_address, device_address + bytes). They leave as writes of at most kBlockWriteBytes,
  // cut at kBlockWriteBytes-aligned addresses (the first and last may be shorter), all reaching
  // the link at the current host time in one hand-off to the simulation thread; the data is
  // copied, so the caller's buffer may go away on return. The host pays mmio_write_ns per
  // 64 bytes, rounded up (write-combining: the CPU streams the block in 64-byte lines, each
  // costing about one posted write). Zero bytes do nothing. If any write is answered with an
  // error at once, throws std::runtime_error naming the block and the failing address (the other
  // writes still go out, and the host is not charged, as in mmio_write32).
  static constexpr uint64_t kBlockWriteBytes = 128;
  static constexpr uint64_t kWriteCombiningBytes = 64;
  void mmio_write_block(uint64_t device_address, const void* data, uint64_t bytes);

  // Blocks until an MSI reaches the host or `timeout_ps` of host time passes; returns the vector.
  std::optional<uint32_t> wait_for_interrupt(uint64_t timeout_ps);

  // Lets the device run until host time (no-op if it is already there).
  void sync_device();

 private:
  void advance_device_to(uint64_t ps);   // simulation thread only
  void run_until(uint64_t ps);           // simulation thread only: stops early on news

  SimThread sim_;
  HostClock clock_;
  HostCostsNs costs_;
  HostPort* port_ = nullptr;
  std::recursive_mutex host_mutex_;   // host calls from several threads take turns
};

}  // namespace hpusim::cosim
