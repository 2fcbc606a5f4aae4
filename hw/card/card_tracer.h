// Puts the card's activity on the shared timeline: one track per engine instance (a slice per TPC
// kernel named by the program the host loaded, per MME job, per DMA transfer; failures and halts
// as instants), HBM and PCIe bandwidth counters (the average since the previous sample, sampled
// as engine work ends), a slice per command buffer (first packet to done) and QMAN errors per QMAN
// stream, and MMU page faults.
// NIC ports: a slice per operation (COMMIT to done) on the port's track and its transmit bandwidth
// as a counter (sampled as its operations end).
// With the timeline's packet detail also a slice per QMAN packet and per NIC packet on the wire,
// and per sync-manager block its SOB updates and monitor firings.
#pragma once

#include <map>
#include <string>

#include "hw/card/card.h"
#include "traces/timeline.h"

namespace hpusim::hw {

class CardTracer : public QmanObserver,
                   public SyncManagerObserver,
                   public DmaObserver,
                   public MmuObserver,
                   public TpcObserver,
                   public MmeObserver,
                   public NicObserver {
 public:
  // The card's tracks go on the process "device (<preset>)", or "device <label> (<preset>)" with
  // a label (the card's index in a box).
  CardTracer(traces::Timeline& timeline, Card& card, const std::string& label = "");
  // Detaches from the card (which must still be there).
  ~CardTracer() override;
  CardTracer(const CardTracer&) = delete;
  CardTracer& operator=(const CardTracer&) = delete;

  void packet_executed(const std::string& qman, unsigned cp, const qman::Packet& packet, Picoseconds start,
                       Picoseconds end) override;
  void command_buffer_done(const std::string& qman, unsigned stream, uint32_t pq_ci, Picoseconds at) override;
  void error(const std::string& qman, unsigned cp, QmanError cause, const std::string& message,
             Picoseconds at) override;
  void sob_updated(const std::string& block, uint32_t sob, uint32_t value, Picoseconds at) override;
  void monitor_fired(const std::string& block, uint32_t monitor, uint64_t address, uint32_t data,
                     Picoseconds at) override;
  void transfer_started(uint32_t channel, const DmaTransfer& transfer, Picoseconds at) override;
  void transfer_done(uint32_t channel, const DmaTransfer& transfer, Picoseconds at) override;
  void transfer_failed(uint32_t channel, uint64_t address, const std::string& message, Picoseconds at) override;
  void halted(uint32_t channel, Picoseconds at) override;
  void page_fault(const MmuFault& fault) override;
  void kernel_finished(const std::string& core, const TpcKernelStats& kernel) override;
  void job_finished(const std::string& engine, const MmeJobStats& job) override;
  void packet_sent(uint32_t port, uint64_t payload, Picoseconds start, Picoseconds end) override;
  void operation_done(uint32_t port, const NicOperation& op, Picoseconds at) override;
  void operation_failed(uint32_t port, const NicOperation& op, const std::string& message, Picoseconds at) override;

 private:
  traces::TrackId cp_track(const std::string& qman, unsigned cp);
  traces::TrackId dma_track(uint32_t channel);
  // Port `port`'s sends or receives: "NIC<port> send" / "recv", and "... (2)", "... (3)" for an
  // operation that starts before the one on the track ended (operations are queued and complete on
  // acknowledgement, so one direction's can overlap).
  traces::TrackId nic_track(uint32_t port, bool send, uint64_t start_ns = 0, uint64_t end_ns = 0);
  // Bandwidth samples for the bytes moved since the last sample, spread over [max(last, from), to].
  // Hold the timeline's mutex.
  void sample_bandwidth(Picoseconds from, Picoseconds to);

  traces::Timeline& timeline_;
  Card& card_;
  std::string label_;   // the card's index in a box ("" alone): the key of its CS flows
  traces::TrackId device_ = 0;
  struct Bytes {
    uint64_t hbm_read = 0, hbm_write = 0, pcie_to_device = 0, pcie_to_host = 0;
  };
  Bytes sampled_;
  uint64_t sampled_ns_ = 0;
  std::map<uint32_t, Picoseconds> dma_started_;   // channel -> start of the running transfer
  std::map<std::pair<uint32_t, bool>, std::vector<uint64_t>> nic_lane_ends_;   // (port, send) -> each lane's last end
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> nic_sampled_;   // port -> (tx bytes, ns) at its last sample
  std::map<std::pair<std::string, unsigned>, Picoseconds> cb_started_;   // (QMAN, stream) -> its CB's first packet
};

}  // namespace hpusim::hw
