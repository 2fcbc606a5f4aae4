// A card as a host sees it: the co-simulation loop, the card, the host's root port and its MSI
// sink, plus host-side helpers (a bump allocator over host memory, reads and writes of it, CFG
// and device addresses). Tests that drive the device like a driver derive from it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/card/card.h"
#include "sim/cosim/cosimulation.h"
#include "sim/preset/preset.h"

namespace hpusim::testing {

inline constexpr uint64_t kMsiHostAddress = 0xFEE00000;

class HostPlatformTest : public ::testing::Test {
 protected:
  // Builds the platform; `extra` runs on the simulation thread after the card exists (to add
  // modules or observers before elaboration ends).
  void build_platform(std::function<void()> extra = {}, uint64_t host_heap_base = 0x100000000ull,
                      const std::vector<std::string>& overrides = {"hbm.refresh_enabled=false"}) {
    next_host_ = host_heap_base;
    sim = std::make_unique<cosim::CoSimulation>(cosim::HostTimeSource::kModeled, cosim::HostCostsNs{});
    preset = preset::load_preset("hl205", overrides);
    sim->on_sim_thread([&] {
      card = std::make_unique<hw::Card>("card", preset);
      host = std::make_unique<cosim::HostPort>("host");
      host->socket.bind(card->memory().pcie().host_side);
      card->memory().pcie().set_msi_sink(kMsiHostAddress, [this](uint32_t v, hw::Picoseconds at) {
        host->deliver_msi(v, at);
      });
      if (extra) extra();
    });
    sim->attach(*host);
  }
  // Modules a derived fixture added; released on the simulation thread before the card.
  virtual void release_extras() {}
  void TearDown() override {
    if (!sim) return;
    sim->on_sim_thread([this] {
      release_extras();
      card.reset();
      host.reset();
    });
  }

  uint64_t device_view(uint64_t host_address) const { return preset.memory_map().host_phys_base() + host_address; }
  uint64_t sram(uint64_t offset) const { return preset.memory_map().sram_base() + offset; }
  uint64_t cfg(uint64_t offset) const { return regs::cfg_address(offset); }

  // Host memory: a bump allocator, written directly (it is the host's own memory).
  uint64_t host_alloc(uint64_t bytes) {
    const uint64_t address = next_host_;
    next_host_ += (bytes + 127) / 128 * 128;
    return address;
  }
  void host_write(uint64_t address, const void* data, uint64_t bytes) {
    sim->on_sim_thread([&] { card->memory().host_memory().write(address, data, bytes); });
  }
  template <typename T>
  T host_read(uint64_t address) {
    T value{};
    sim->on_sim_thread([&] { card->memory().host_memory().read(address, &value, sizeof value); });
    return value;
  }

  std::unique_ptr<cosim::CoSimulation> sim;
  preset::Card preset;
  std::unique_ptr<hw::Card> card;
  std::unique_ptr<cosim::HostPort> host;

 private:
  uint64_t next_host_ = 0x100000000ull;
};

}  // namespace hpusim::testing
