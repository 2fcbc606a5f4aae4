// A card driven the way a driver drives it: the host owns its memory (primary queues and command
// buffers live there) and reaches the device only by MMIO through the co-simulation loop.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "hw/card/card.h"
#include "hw/qman/packets.h"
#include "sim/cosim/cosimulation.h"
#include "sim/preset/preset.h"

namespace hpusim::testing {

inline constexpr uint64_t kMsiHostAddress = 0xFEE00000;

class QmanRecorder : public hw::QmanObserver {
 public:
  void packet_executed(const std::string& qman, unsigned cp, const qman::Packet& packet, hw::Picoseconds start,
                       hw::Picoseconds) override {
    if (std::holds_alternative<qman::MsgLong>(packet)) message_order.push_back({start, qman + "/" + std::to_string(cp)});
  }
  void command_buffer_done(const std::string& qman, unsigned stream, uint32_t, hw::Picoseconds at) override {
    done[qman + "/" + std::to_string(stream)].push_back(at);
  }
  void error(const std::string&, unsigned, hw::QmanError cause, const std::string& message, hw::Picoseconds) override {
    errors.push_back({cause, message});
  }
  std::map<std::string, std::vector<hw::Picoseconds>> done;
  std::vector<std::pair<hw::QmanError, std::string>> errors;
  std::vector<std::pair<hw::Picoseconds, std::string>> message_order;   // MSG_LONGs executed, in time order
};

class CardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sim = std::make_unique<cosim::CoSimulation>(cosim::HostTimeSource::kModeled, cosim::HostCostsNs{});
    preset = preset::load_preset("hl205", {"hbm.refresh_enabled=false"});
    sim->on_sim_thread([this] {
      card = std::make_unique<hw::Card>("card", preset);
      host = std::make_unique<cosim::HostPort>("host");
      host->socket.bind(card->memory().pcie().host_side);
      card->memory().pcie().set_msi_sink(kMsiHostAddress, [this](uint32_t v, hw::Picoseconds at) {
        host->deliver_msi(v, at);
      });
      card->set_qman_observer(&recorder);
    });
    sim->attach(*host);
  }
  void TearDown() override {
    sim->on_sim_thread([this] {
      card.reset();
      host.reset();
    });
  }

  uint64_t device_view(uint64_t host_address) const { return preset.memory_map().host_phys_base() + host_address; }
  uint64_t sram(uint64_t offset) const { return preset.memory_map().sram_base() + offset; }
  uint64_t cfg(uint64_t offset) const { return regs::cfg_address(offset); }

  // Host memory: a bump allocator, written directly (it is the host's own memory).
  uint64_t host_alloc(uint64_t bytes) {
    uint64_t address = next_host_;
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
  uint32_t sram_read32(uint64_t offset) {
    uint32_t value = 0;
    sim->on_sim_thread([&] { card->memory().sram().store().read(sram(offset), &value, 4); });
    return value;
  }

  void mmio_write(regs::QmanId q, regs::QmReg r, unsigned index, uint32_t value) {
    sim->mmio_write32(cfg(regs::qman_reg(q, r, index)), value);
  }
  uint32_t mmio_read(regs::QmanId q, regs::QmReg r, unsigned index) {
    return sim->mmio_read32(cfg(regs::qman_reg(q, r, index)));
  }

  struct Queue {
    uint64_t pq;
    uint32_t entries;
    uint32_t pi = 0;
  };
  // Places a PQ ring in host memory and enables every stream and CP of the QMAN.
  Queue& open_stream(regs::QmanId q, unsigned stream, uint32_t log2_entries = 6) {
    Queue& queue = queues_[{regs::to_index(q), stream}];
    queue = Queue{};
    queue.entries = 1u << log2_entries;
    queue.pq = host_alloc(queue.entries * 16);
    mmio_write(q, regs::QmReg::PqBaseLo, stream, static_cast<uint32_t>(device_view(queue.pq)));
    mmio_write(q, regs::QmReg::PqBaseHi, stream, static_cast<uint32_t>(device_view(queue.pq) >> 32));
    mmio_write(q, regs::QmReg::PqSize, stream, log2_entries);
    mmio_write(q, regs::QmReg::GlblCfg0, 0, regs::qm::kGlblCfg0PqfEnMask | regs::qm::kGlblCfg0CqfEnMask |
                                                regs::qm::kGlblCfg0CpEnMask);
    return queue;
  }
  // Copies the command buffer into host memory, writes its descriptor and rings the doorbell.
  void submit(regs::QmanId q, unsigned stream, const std::vector<uint8_t>& cb) {
    Queue& queue = queues_.at({regs::to_index(q), stream});
    const uint64_t buffer = host_alloc(cb.size());
    host_write(buffer, cb.data(), cb.size());
    struct {
      uint64_t ptr;
      uint32_t len;
      uint32_t ctl;
    } bd{device_view(buffer), static_cast<uint32_t>(cb.size()), 0};
    host_write(queue.pq + uint64_t{queue.pi & (queue.entries - 1)} * 16, &bd, 16);
    queue.pi = (queue.pi + 1) & (2 * queue.entries - 1);
    mmio_write(q, regs::QmReg::PqPi, stream, queue.pi);
  }
  // Lets the device run until the stream has consumed everything submitted (or time runs out).
  bool drain(regs::QmanId q, unsigned stream, uint64_t limit_us = 1000) {
    const Queue& queue = queues_.at({regs::to_index(q), stream});
    for (uint64_t t = 0; t < limit_us; ++t) {
      if (mmio_read(q, regs::QmReg::PqCi, stream) == queue.pi) return true;
      sim->charge_ns(1000);
    }
    return false;
  }

  std::unique_ptr<cosim::CoSimulation> sim;
  preset::Card preset;
  std::unique_ptr<hw::Card> card;
  std::unique_ptr<cosim::HostPort> host;
  QmanRecorder recorder;

 private:
  uint64_t next_host_ = 0x100000000ull;
  std::map<std::pair<unsigned, unsigned>, Queue> queues_;
};

}  // namespace hpusim::testing
