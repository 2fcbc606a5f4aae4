// A card driven the way a driver drives it: the host owns its memory (primary queues and command
// buffers live there) and reaches the device only by MMIO through the co-simulation loop.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "hw/card/card.h"
#include "arch/packets/packets.h"
#include "sim/cosim/cosimulation.h"
#include "sim/preset/preset.h"
#include "tests/support/host_platform.h"

namespace hpusim::testing {

class QmanRecorder : public hw::QmanObserver {
 public:
  struct Executed {
    std::string who;   // "DMA0_QM/0"
    qman::Opcode opcode;
    hw::Picoseconds start, end;
  };
  void packet_executed(const std::string& qman, unsigned cp, const qman::Packet& packet, hw::Picoseconds start,
                       hw::Picoseconds end) override {
    const std::string who = qman + "/" + std::to_string(cp);
    if (std::holds_alternative<qman::MsgLong>(packet)) message_order.push_back({start, who});
    executed.push_back({who, qman::opcode_of(packet), start, end});
  }
  // The packets of one kind `who` executed, in order.
  std::vector<Executed> of(const std::string& who, qman::Opcode opcode) const {
    std::vector<Executed> out;
    for (const Executed& e : executed) {
      if (e.who == who && e.opcode == opcode) out.push_back(e);
    }
    return out;
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
  std::vector<Executed> executed;   // every packet executed (a packet run from the scalar RFs too)
};

// What the card's DMA cores report (set with CardTest::watch_dma).
struct DmaEvents : hw::DmaObserver {
  struct Event {
    uint32_t channel;
    uint64_t id;
    hw::Picoseconds at;
  };
  void transfer_started(uint32_t channel, const hw::DmaTransfer& t, hw::Picoseconds at) override {
    started.push_back({channel, t.id, at});
  }
  void transfer_done(uint32_t channel, const hw::DmaTransfer& t, hw::Picoseconds at) override {
    done.push_back({channel, t.id, at});
  }
  void transfer_failed(uint32_t channel, uint64_t, const std::string&, hw::Picoseconds at) override {
    failed.push_back({channel, 0, at});
  }
  void halted(uint32_t channel, hw::Picoseconds at) override { halts.push_back({channel, 0, at}); }
  std::vector<Event> started, done, failed, halts;
};

class CardTest : public HostPlatformTest {
 protected:
  void SetUp() override {
    build_platform([this] { card->set_qman_observer(&recorder); }, 0x100000000ull, {"hbm.refresh_enabled=false"},
                   preset_name());
  }
  // The card's preset (a parameterised fixture picks its own).
  virtual std::string preset_name() const { return "hl205"; }

  uint32_t sram_read32(uint64_t offset) {
    uint32_t value = 0;
    sim->on_sim_thread([&] { card->memory().sram().store().read(sram(offset), &value, 4); });
    return value;
  }
  void sram_write(uint64_t offset, const std::vector<uint8_t>& bytes) {
    sim->on_sim_thread([&] { card->memory().sram().store().write(sram(offset), bytes.data(), bytes.size()); });
  }
  // Device DRAM contents, straight in the HBM's backing store (no simulated time).
  void dram_write(uint64_t address, const void* data, size_t bytes) {
    sim->on_sim_thread([&] { card->memory().hbm().store().write(address, data, bytes); });
  }
  void dram_read(uint64_t address, void* data, size_t bytes) {
    sim->on_sim_thread([&] { card->memory().hbm().store().read(address, data, bytes); });
  }

  // What the driver programs so that LIN_DMA on `stream` of a DMA QMAN drives its DMA core: the
  // CP's LDMA offsets into the core, and the core's enable.
  void enable_lin_dma(regs::QmanId q, unsigned stream) {
    mmio_write(q, regs::QmReg::CpLdmaSrcBaseLoOffset, stream, regs::kQmanLdmaSrcOffset);
    mmio_write(q, regs::QmReg::CpLdmaDstBaseLoOffset, stream, regs::kQmanLdmaDstOffset);
    mmio_write(q, regs::QmReg::CpLdmaTsizeOffset, stream, regs::kQmanLdmaSizeOffset);
    dma_write(regs::qman_engine(q), regs::dma_core::kCfg0, regs::dma_core::kCfg0En);
  }
  void dma_write(unsigned channel, uint32_t offset, uint32_t value) {
    sim->mmio_write32(cfg(regs::dma_core_base(channel) + offset), value);
  }
  uint32_t dma_read(unsigned channel, uint32_t offset) {
    return sim->mmio_read32(cfg(regs::dma_core_base(channel) + offset));
  }
  // Reports the transfers of DMA core `channel` to `dma_events`.
  void watch_dma(unsigned channel) {
    sim->on_sim_thread([&] { card->dma_core(channel)->set_observer(&dma_events); });
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

  QmanRecorder recorder;
  DmaEvents dma_events;

 private:
  std::map<std::pair<unsigned, unsigned>, Queue> queues_;
};

}  // namespace hpusim::testing
