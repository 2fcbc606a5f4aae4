// The device link of one simulated card (driver/device_link.h): the host's MMIO and interrupts
// through the co-simulation loop and the card's root port, the box's host memory (the card's
// driver gets its DMA buffers and pinned pages from its own window of bus addresses, so where a
// buffer lands never depends on what another card did), the reset line, and the host's costs.
// Every SystemC call runs on the simulation thread.
#pragma once

#include <mutex>

#include "driver/device_link.h"
#include "driver/vm_support.h"
#include "sim/cosim/cosimulation.h"
#include "sim/preset/preset.h"

namespace hpusim::hw {
class Card;
class HostMemory;
}

namespace hpusim::platform {

struct CardLinkConfig {
  uint64_t host_window_base = 0;                   // memory_map.host_phys_base
  uint64_t bus_window_start = 0, bus_window_end = 0;   // this card's bus addresses
  preset::HostCosts costs;                         // the driver's work (ioctl_ns, ...)
};

class CardLink : public driver::DeviceLink {
 public:
  CardLink(cosim::CoSimulation& cosim, hw::Card& card, cosim::HostPort& port, hw::HostMemory& host_memory,
           const CardLinkConfig& config);

  void mmio_write32(uint64_t address, uint32_t value) override { cosim_.mmio_write32(port_, address, value); }
  uint32_t mmio_read32(uint64_t address) override { return cosim_.mmio_read32(port_, address); }
  void mmio_write_block(uint64_t address, const void* data, uint64_t bytes) override {
    cosim_.mmio_write_block(port_, address, data, bytes);
  }
  std::optional<uint32_t> wait_for_interrupt(uint64_t timeout_ps, uint64_t* arrived_ps = nullptr) override {
    return cosim_.wait_for_interrupt(port_, timeout_ps, arrived_ps);
  }
  bool await_interrupt(uint64_t timeout_ps) override { return cosim_.await_interrupt(port_, timeout_ps); }
  void lock_driver() override { cosim_.lock(driver_lock_); }
  void unlock_driver() override { cosim_.unlock(driver_lock_); }
  void sync_device() override { cosim_.sync_device(); }

  void host_write(uint64_t bus_address, const void* data, uint64_t bytes) override;
  void host_read(uint64_t bus_address, void* data, uint64_t bytes) override;
  void host_fill(uint64_t bus_address, uint8_t value, uint64_t bytes) override;
  uint64_t host_window_base() override { return config_.host_window_base; }
  std::optional<uint64_t> dma_alloc_coherent(uint64_t bytes, uint64_t alignment) override;
  void dma_free_coherent(uint64_t bus_address) override;
  uint64_t pin_user_pages(uint8_t* memory, uint64_t bytes) override;
  void unpin_user_pages(uint64_t bus_address) override;

  void reset_card() override;

  uint64_t host_now_ps() override { return cosim_.host_now_ps(); }
  void charge_host_ns(uint64_t ns) override { cosim_.charge_ns(ns); }
  void charge(driver::DriverWork work, uint64_t count = 1) override;

 private:
  cosim::CoSimulation& cosim_;
  hw::Card& card_;
  cosim::HostPort& port_;
  hw::HostMemory& host_memory_;
  CardLinkConfig config_;
  const unsigned driver_lock_;
  std::mutex bus_mutex_;   // the allocator (the driver may be called from several threads)
  driver::RangeAllocator bus_addresses_;
};

}  // namespace hpusim::platform
