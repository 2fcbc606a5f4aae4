#include "hw/card/card_tracer.h"

#include <mutex>

#include "arch/regs/gaudi1_map.h"

namespace hpusim::hw {
namespace {
uint64_t ns(Picoseconds ps) { return ps / 1000; }
}  // namespace

CardTracer::CardTracer(traces::Timeline& timeline, Card& card, const std::string& label) : timeline_(timeline) {
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  device_ = timeline_.process("device " + (label.empty() ? "" : label + " ") + "(" + card.preset().name() + ")");
  card.set_qman_observer(this);
  card.set_sync_manager_observer(this);
  card.set_dma_observer(this);
  card.set_mmu_observer(this);
}

traces::TrackId CardTracer::dma_track(uint32_t channel) { return timeline_.track(device_, "DMA" + std::to_string(channel) + " core"); }

traces::TrackId CardTracer::cp_track(const std::string& qman, unsigned cp) {
  return timeline_.track(device_, qman + (cp == regs::kLowerCp ? " lower CP" : " stream " + std::to_string(cp)));
}

void CardTracer::packet_executed(const std::string& qman, unsigned cp, const qman::Packet& packet, Picoseconds start,
                                 Picoseconds end) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().complete_slice(cp_track(qman, cp), ns(start), std::max(ns(end), ns(start) + 1),
                                    qman::opcode_name(qman::opcode_of(packet)), {{"packet", qman::describe(packet)}});
}

void CardTracer::command_buffer_done(const std::string& qman, unsigned stream, uint32_t pq_ci, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(cp_track(qman, stream), ns(at), "command buffer done", {{"pq_ci", uint64_t{pq_ci}}});
}

void CardTracer::error(const std::string& qman, unsigned cp, QmanError cause, const std::string& message,
                       Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(cp_track(qman, cp), ns(at), "QMAN error",
                             {{"cause", uint64_t{static_cast<uint32_t>(cause)}}, {"message", message}});
}

void CardTracer::sob_updated(const std::string& block, uint32_t sob, uint32_t value, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(timeline_.track(device_, block), ns(at), "SOB " + std::to_string(sob),
                             {{"sob", uint64_t{sob}}, {"value", uint64_t{value}}});
}

void CardTracer::monitor_fired(const std::string& block, uint32_t monitor, uint64_t address, uint32_t data,
                               Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(timeline_.track(device_, block), ns(at), "monitor " + std::to_string(monitor) + " fired",
                             {{"address", regs::describe_device_address(address)}, {"data", uint64_t{data}}});
}

void CardTracer::transfer_started(uint32_t channel, const DmaTransfer&, Picoseconds at) {
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  dma_started_[channel] = at;
}

void CardTracer::transfer_done(uint32_t channel, const DmaTransfer& transfer, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  const Picoseconds start = dma_started_.count(channel) ? dma_started_[channel] : at;
  timeline_.writer().complete_slice(
      dma_track(channel), ns(start), std::max(ns(at), ns(start) + 1), transfer.memset ? "memset" : "copy",
      {{"id", transfer.id},
       {"bytes", transfer.bytes},
       {"src", transfer.memset ? std::string("fill") : regs::describe_device_address(transfer.source)},
       {"dst", regs::describe_device_address(transfer.destination)}});
}

void CardTracer::transfer_failed(uint32_t channel, uint64_t address, const std::string& message, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(dma_track(channel), ns(at), "transfer failed",
                             {{"address", regs::describe_device_address(address)}, {"message", message}});
}

void CardTracer::halted(uint32_t channel, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(dma_track(channel), ns(at), "halted (STOP_ON_ERR)");
}

void CardTracer::page_fault(const MmuFault& fault) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(timeline_.track(device_, "MMU"), ns(fault.at), "page fault",
                             {{"engine", fault.engine},
                              {"va", fault.virtual_address},
                              {"write", uint64_t{fault.is_write ? 1u : 0u}}});
}

}  // namespace hpusim::hw
