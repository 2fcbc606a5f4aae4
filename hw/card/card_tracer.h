// Puts the card's command-submission activity on the shared timeline: one track per QMAN CP with
// a slice per packet and per command buffer, QMAN errors as instants, per sync-manager block a
// track of SOB updates and monitor firings (instants with their values), one track per DMA core
// with a slice per transfer (failures and halts as instants), and MMU page faults as instants.
#pragma once

#include <map>
#include <string>

#include "hw/card/card.h"
#include "traces/timeline.h"

namespace hpusim::hw {

class CardTracer : public QmanObserver, public SyncManagerObserver, public DmaObserver, public MmuObserver {
 public:
  // The card's tracks go on the process "device (<preset>)", or "device <label> (<preset>)" with
  // a label (the card's index in a box).
  CardTracer(traces::Timeline& timeline, Card& card, const std::string& label = "");

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

 private:
  traces::TrackId cp_track(const std::string& qman, unsigned cp);
  traces::TrackId dma_track(uint32_t channel);

  traces::Timeline& timeline_;
  traces::TrackId device_ = 0;
  std::map<uint32_t, Picoseconds> dma_started_;   // channel -> start of the running transfer
};

}  // namespace hpusim::hw
