// A card whose MME masters run jobs submitted through their QMANs (the launch helper's command
// buffers), with operands placed in DRAM and results read back, for the MME tests.
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hw/mme/mme_compute.h"
#include "hw/mme/mme_engine.h"
#include "arch/mme/mme_launch.h"
#include "arch/packets/packets.h"
#include "tests/qman/qman_fixture.h"

namespace hpusim::testing {

class MmeCardTest : public CardTest, public hw::InterruptTarget {
 protected:
  static constexpr unsigned kSob = 310;

  // Builds the card from `preset_name` with overrides (besides refresh off).
  void build(std::vector<std::string> overrides = {}, const std::string& preset_name = "hl205") {
    overrides.insert(overrides.begin(), "hbm.refresh_enabled=false");
    build_platform([this] { card->set_qman_observer(&recorder); }, 0x100000000ull, overrides, preset_name);
    sim->on_sim_thread([&] {
      card->mme_engine(0)->interrupt().bind(*this, 0);
    });
  }
  void SetUp() override {}   // each test calls build()
  // The engine's error interrupt, as a GIC would receive it.
  void raise_interrupt(uint32_t, hw::Picoseconds at) override { interrupts.push_back(at); }

  uint64_t sob_address() const { return cfg(regs::sm_sob(regs::SyncManager::E_N, kSob)); }
  uint32_t sob_value() { return sim->mmio_read32(sob_address()); }
  uint32_t geometries() { return static_cast<uint32_t>(sim->on_sim_thread([&] { return card->mme_engine(0)->params().geometries.size(); })); }

  // Runs `job` on MME0 (its end-of-job message adds 1 to the test SOB); true when the message
  // came within `limit_us` of device time.
  bool run(mme::MmeJob job, uint64_t limit_us = 20000) {
    job.so_address = sob_address();
    job.so_message = qman::sob_write_value(1, true);
    const uint32_t before = sob_value();
    if (!opened_) {
      open_stream(regs::mme_qman(0), 0);
      opened_ = true;
    }
    submit(regs::mme_qman(0), 0, mme::build_mme_command_buffer(job, geometries()));
    return wait_sob(before + 1, limit_us);
  }
  bool wait_sob(uint32_t value, uint64_t limit_us) {
    for (uint64_t t = 0; t < limit_us; t += 5) {
      if (sob_value() >= value) return true;
      sim->charge_ns(5000);
    }
    return sob_value() >= value;
  }
  // Submits `job` as is (no message of the test's own); runs the device for `us`.
  void submit_raw(const std::vector<uint8_t>& cb, uint64_t us) {
    if (!opened_) {
      open_stream(regs::mme_qman(0), 0);
      opened_ = true;
    }
    submit(regs::mme_qman(0), 0, cb);
    for (uint64_t t = 0; t < us; t += 5) {
      sim->charge_ns(5000);
      sim->sync_device();
    }
  }
  std::vector<hw::MmeJobStats> jobs() {
    return sim->on_sim_thread([&] {
      const auto& jobs = card->mme_engine(0)->jobs();
      return std::vector<hw::MmeJobStats>(jobs.begin(), jobs.end());
    });
  }
  hw::MmeFaultRecord last_fault() {
    return sim->on_sim_thread([&] { return card->mme_engine(0)->last_fault(); });
  }

  // Operand bytes of `count` random values of `type` (bf16-representable when type is bf16),
  // and the same values as f32.
  static std::vector<uint8_t> random_operand(std::mt19937& rng, size_t count, mme::MmeType type,
                                             std::vector<float>* values = nullptr) {
    std::uniform_real_distribution<float> d(-1.5f, 1.5f);
    std::vector<uint8_t> bytes(count * mme::type_bytes(type));
    if (values) values->resize(count);
    for (size_t i = 0; i < count; ++i) {
      float v = d(rng);
      if (type == mme::MmeType::Bf16) {
        const uint16_t h = mme::f32_to_bf16(v);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
        v = mme::bf16_to_f32(h);
      } else {
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
      if (values) (*values)[i] = v;
    }
    return bytes;
  }

  std::vector<hw::Picoseconds> interrupts;

 private:
  bool opened_ = false;
};

}  // namespace hpusim::testing
