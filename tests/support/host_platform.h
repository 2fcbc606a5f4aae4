// A card as a host sees it, without a driver: the platform's co-simulation loop, card and root
// port (sim/platform), plus host-side helpers (a bump allocator over host memory, reads and writes
// of it, CFG and device addresses). Tests that drive the device like a driver derive from it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/card/card.h"
#include "sim/cosim/cosimulation.h"
#include "sim/platform/platform.h"
#include "sim/preset/preset.h"

namespace hpusim::testing {

inline constexpr uint64_t kMsiHostAddress = platform::Platform::kMsiHostAddress;

class HostPlatformTest : public ::testing::Test {
 protected:
  // Builds the platform; `extra` runs on the simulation thread after the card exists (to add
  // modules or observers before elaboration ends).
  void build_platform(std::function<void()> extra = {}, uint64_t host_heap_base = 0x100000000ull,
                      const std::vector<std::string>& overrides = {"hbm.refresh_enabled=false"},
                      const std::string& preset_name = "hl205") {
    next_host_ = host_heap_base;
    platform::PlatformOptions options;
    options.preset = preset_name;
    options.overrides = overrides;
    options.with_driver = false;
    options.on_card_built = [this, extra](hw::Card& built) {
      card = &built;
      if (extra) extra();
    };
    preset = preset::load_preset(options.preset, overrides);
    platform_ = std::make_unique<platform::Platform>(options);
    sim = &platform_->cosim();
  }
  // Modules a derived fixture added; released on the simulation thread before the card.
  virtual void release_extras() {}
  void TearDown() override {
    if (!platform_) return;
    sim->on_sim_thread([this] { release_extras(); });
    platform_.reset();
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

  cosim::CoSimulation* sim = nullptr;
  preset::Card preset;
  hw::Card* card = nullptr;

 private:
  std::unique_ptr<platform::Platform> platform_;
  uint64_t next_host_ = 0x100000000ull;
};

}  // namespace hpusim::testing
