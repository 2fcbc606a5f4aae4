// A card as the host drives it in the benches (as the QMAN tests do), without a driver: the
// platform's co-simulation loop (modeled host time), card and root port; PQs and command buffers
// in host memory, doorbells by MMIO.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "card_preset.pb.h"
#include "hw/card/card.h"
#include "arch/regs/gaudi1_map.h"
#include "sim/cosim/cosimulation.h"
#include "sim/platform/platform.h"

namespace hpusim::bench {

class BenchCard {
 public:
  static constexpr uint64_t kHostHeap = 0x100000000ull;   // host memory for the PQs and command buffers
  static constexpr uint32_t kPqLog2Entries = 6;

  explicit BenchCard(const preset::Card& preset)
      : platform_(options(preset)),
        preset_(platform_.preset()),
        sim_(&platform_.cosim()),
        card_(&platform_.card()) {}

  hw::Card& card() { return *card_; }
  cosim::CoSimulation& sim() { return *sim_; }

  template <typename Work>
  auto on_sim_thread(Work&& work) {
    return sim_->on_sim_thread(std::forward<Work>(work));
  }
  void dram_write(uint64_t address, const void* data, size_t bytes) {
    on_sim_thread([&] { card_->memory().hbm().store().write(address, data, bytes); });
  }
  void dram_read(uint64_t address, void* data, size_t bytes) {
    on_sim_thread([&] { card_->memory().hbm().store().read(address, data, bytes); });
  }
  // Brings the memory to the state every case of a bench starts from, so that a row does not
  // depend on the rows before it: the HBM cache's write-backs finished and its lines dropped
  // (hl325), then every HBM channel idle long enough to be in self-refresh, which restarts its
  // refresh schedule at the case's first request with every bank closed. Throws
  // std::runtime_error naming `bench` if the memory is still busy 1 ms after the case. The host
  // then waits `phase_ns` more, so that a case may start at another phase of the clocks.
  void start_cold(const std::string& bench, uint64_t phase_ns = 0);

  uint64_t sob_address(unsigned sob) const { return regs::cfg_address(regs::sm_sob(regs::SyncManager::E_N, sob)); }
  uint32_t sob_value(unsigned sob) { return sim_->mmio_read32(sob_address(sob)); }

  // Places a PQ ring for stream 0 of `q` in host memory and enables the QMAN.
  void open_stream(regs::QmanId q) {
    Queue& queue = queues_[regs::to_index(q)];
    queue.entries = 1u << kPqLog2Entries;
    queue.pq = host_alloc(queue.entries * 16);
    const uint64_t pq = device_view(queue.pq);
    qman_write(q, regs::QmReg::PqBaseLo, static_cast<uint32_t>(pq));
    qman_write(q, regs::QmReg::PqBaseHi, static_cast<uint32_t>(pq >> 32));
    qman_write(q, regs::QmReg::PqSize, kPqLog2Entries);
    qman_write(q, regs::QmReg::GlblCfg0,
               regs::qm::kGlblCfg0PqfEnMask | regs::qm::kGlblCfg0CqfEnMask | regs::qm::kGlblCfg0CpEnMask);
  }
  // Copies the command buffer to host memory, writes its PQ entry and rings the doorbell.
  void submit(regs::QmanId q, const std::vector<uint8_t>& cb) {
    Queue& queue = queues_.at(regs::to_index(q));
    const uint64_t buffer = host_alloc(cb.size());
    on_sim_thread([&] { card_->memory().host_memory().write(buffer, cb.data(), cb.size()); });
    struct {
      uint64_t ptr;
      uint32_t len;
      uint32_t ctl;
    } entry{device_view(buffer), static_cast<uint32_t>(cb.size()), 0};
    const uint64_t slot = queue.pq + uint64_t{queue.pi & (queue.entries - 1)} * 16;
    on_sim_thread([&] { card_->memory().host_memory().write(slot, &entry, sizeof entry); });
    queue.pi = (queue.pi + 1) & (2 * queue.entries - 1);
    qman_write(q, regs::QmReg::PqPi, queue.pi);
  }

 private:
  struct Queue {
    uint64_t pq = 0;
    uint32_t entries = 0;
    uint32_t pi = 0;
  };
  uint64_t host_alloc(uint64_t bytes) {
    // Command buffers are small; the heap is reused from the start once it has grown past 64 MB.
    if (next_host_ + bytes > kHostHeap + (64ull << 20)) next_host_ = kHostHeap + (1ull << 20);
    const uint64_t address = next_host_;
    next_host_ += (bytes + 127) / 128 * 128;
    return address;
  }
  uint64_t device_view(uint64_t host_address) const { return preset_.memory_map().host_phys_base() + host_address; }
  void qman_write(regs::QmanId q, regs::QmReg r, uint32_t value) {
    sim_->mmio_write32(regs::cfg_address(regs::qman_reg(q, r, 0)), value);
  }

  static platform::PlatformOptions options(const preset::Card& preset) {
    platform::PlatformOptions o;
    o.resolved_preset = preset;
    o.with_driver = false;
    return o;
  }

  platform::Platform platform_;
  preset::Card preset_;
  cosim::CoSimulation* sim_;
  hw::Card* card_;
  std::map<unsigned, Queue> queues_;
  uint64_t next_host_ = kHostHeap;
};

}  // namespace hpusim::bench
