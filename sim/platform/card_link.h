// The device link of one simulated card (driver/device_link.h): the host's MMIO and interrupts
// through the co-simulation loop and the card's root port, host memory, the reset line.
// Every SystemC call runs on the simulation thread.
#pragma once

#include "driver/device_link.h"
#include "sim/cosim/cosimulation.h"

namespace hpusim::hw {
class Card;
}

namespace hpusim::platform {

class CardLink : public driver::DeviceLink {
 public:
  CardLink(cosim::CoSimulation& cosim, hw::Card& card, cosim::HostPort& port) : cosim_(cosim), card_(card), port_(port) {}

  void mmio_write32(uint64_t address, uint32_t value) override { cosim_.mmio_write32(port_, address, value); }
  uint32_t mmio_read32(uint64_t address) override { return cosim_.mmio_read32(port_, address); }
  void mmio_write_block(uint64_t address, const void* data, uint64_t bytes) override {
    cosim_.mmio_write_block(port_, address, data, bytes);
  }
  std::optional<uint32_t> wait_for_interrupt(uint64_t timeout_ps) override {
    return cosim_.wait_for_interrupt(port_, timeout_ps);
  }
  void sync_device() override { cosim_.sync_device(); }

  void host_write(uint64_t bus_address, const void* data, uint64_t bytes) override;
  void host_read(uint64_t bus_address, void* data, uint64_t bytes) override;
  void host_fill(uint64_t bus_address, uint8_t value, uint64_t bytes) override;
  void pin_user_pages(uint64_t bus_address, uint8_t* memory, uint64_t bytes) override;
  void unpin_user_pages(uint64_t bus_address) override;

  void reset_card() override;

  uint64_t host_now_ps() override { return cosim_.host_now_ps(); }
  void charge_host_ns(uint64_t ns) override { cosim_.charge_ns(ns); }

 private:
  cosim::CoSimulation& cosim_;
  hw::Card& card_;
  cosim::HostPort& port_;
};

}  // namespace hpusim::platform
