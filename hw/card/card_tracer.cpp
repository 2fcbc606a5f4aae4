#include "hw/card/card_tracer.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "arch/regs/gaudi1_map.h"

namespace hpusim::hw {
namespace {
uint64_t ns(Picoseconds ps) { return ps / 1000; }
std::string to_upper(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}
}  // namespace

CardTracer::CardTracer(traces::Timeline& timeline, Card& card, const std::string& label)
    : timeline_(timeline), card_(card), label_(label) {
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  device_ = timeline_.process("device " + (label.empty() ? "" : label + " ") + "(" + card.preset().name() + ")");
  card.set_qman_observer(this);
  card.set_sync_manager_observer(this);
  card.set_dma_observer(this);
  card.set_mmu_observer(this);
  card.set_engine_observers(this, this);
  card.set_nic_observer(this);
  // Every engine's track from the start: an idle engine shows (and counts) as idle.
  for (unsigned i = 0; card.tpc_core(i) != nullptr; ++i) timeline_.track(device_, "TPC" + std::to_string(i));
  for (unsigned i = 0; i < card.mme_numbers(); ++i)
    if (card.mme_engine(i) != nullptr) timeline_.track(device_, "MME" + std::to_string(i));
  for (unsigned i = 0; card.dma_core(i) != nullptr; ++i) dma_track(i);
  for (unsigned i = 0; i < card.nic_ports(); ++i) {
    timeline_.track(device_, "NIC" + std::to_string(i) + " send");
    timeline_.track(device_, "NIC" + std::to_string(i) + " recv");
  }
}

CardTracer::~CardTracer() {
  card_.set_qman_observer(nullptr);
  card_.set_sync_manager_observer(nullptr);
  card_.set_dma_observer(nullptr);
  card_.set_mmu_observer(nullptr);
  card_.set_engine_observers(nullptr, nullptr);
  card_.set_nic_observer(nullptr);
}

traces::TrackId CardTracer::dma_track(uint32_t channel) { return timeline_.track(device_, "DMA" + std::to_string(channel) + " core"); }

traces::TrackId CardTracer::nic_track(uint32_t port, bool send, uint64_t start_ns, uint64_t end_ns) {
  std::vector<uint64_t>& lanes = nic_lane_ends_[{port, send}];
  size_t lane = 0;
  while (lane < lanes.size() && lanes[lane] > start_ns) ++lane;
  if (lane == lanes.size()) lanes.push_back(0);
  lanes[lane] = std::max(lanes[lane], end_ns);
  const std::string name = "NIC" + std::to_string(port) + (send ? " send" : " recv");
  return timeline_.track(device_, lane == 0 ? name : name + " (" + std::to_string(lane + 1) + ")");
}

traces::TrackId CardTracer::cp_track(const std::string& qman, unsigned cp) {
  return timeline_.track(device_, qman + (cp == regs::kLowerCp ? " lower CP" : " stream " + std::to_string(cp)));
}

void CardTracer::packet_executed(const std::string& qman, unsigned cp, const qman::Packet& packet, Picoseconds start,
                                 Picoseconds end) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  cb_started_.emplace(std::make_pair(qman, cp), start);   // the stream's command buffer began (if none had)
  if (!timeline_.packets()) return;
  timeline_.writer().complete_slice(cp_track(qman, cp), ns(start), std::max(ns(end), ns(start) + 1),
                                    qman::opcode_name(qman::opcode_of(packet)), {{"packet", qman::describe(packet)}});
}

void CardTracer::command_buffer_done(const std::string& qman, unsigned stream, uint32_t pq_ci, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  const auto started = cb_started_.find({qman, stream});
  const Picoseconds start = started != cb_started_.end() ? std::min(started->second, at) : at;
  if (started != cb_started_.end()) cb_started_.erase(started);
  // A CS's job: the submission's flow passes through it (traces/timeline.h).
  const traces::FlowId flow = timeline_.take_queue_entry(label_, qman, stream, pq_ci);
  timeline_.writer().complete_slice(cp_track(qman, stream), ns(start), std::max(ns(at), ns(start) + 1),
                                    "command buffer", {{"pq_ci", uint64_t{pq_ci}}},
                                    flow ? std::vector<traces::FlowId>{flow} : std::vector<traces::FlowId>{});
}

void CardTracer::error(const std::string& qman, unsigned cp, QmanError cause, const std::string& message,
                       Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(cp_track(qman, cp), ns(at), "QMAN error",
                             {{"cause", uint64_t{static_cast<uint32_t>(cause)}}, {"message", message}});
}

void CardTracer::sob_updated(const std::string& block, uint32_t sob, uint32_t value, Picoseconds at) {
  if (!timeline_.packets()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(timeline_.track(device_, block), ns(at), "SOB " + std::to_string(sob),
                             {{"sob", uint64_t{sob}}, {"value", uint64_t{value}}});
}

void CardTracer::monitor_fired(const std::string& block, uint32_t monitor, uint64_t address, uint32_t data,
                               Picoseconds at) {
  if (!timeline_.packets()) return;
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
  sample_bandwidth(start, at);
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

void CardTracer::kernel_finished(const std::string& core, const TpcKernelStats& kernel) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  std::string name = timeline_.kernel_label(kernel.kernel_address);
  if (kernel.faulted) name += " (faulted)";
  timeline_.writer().complete_slice(timeline_.track(device_, to_upper(core)), ns(kernel.start_ps),
                                    std::max(ns(kernel.end_ps), ns(kernel.start_ps) + 1), name,
                                    {{"cycles", kernel.cycles},
                                     {"bundles", kernel.bundles},
                                     {"stall cycles", kernel.stall_cycles},
                                     {"window stall cycles", kernel.window_stall_cycles},
                                     {"fetch stall cycles", kernel.fetch_stall_cycles},
                                     {"icache misses", kernel.icache_misses},
                                     {"prefetches", kernel.prefetches},
                                     {"prefetch hits", kernel.prefetch_hits},
                                     {"prefetches dropped", kernel.prefetch_dropped},
                                     {"load bytes", kernel.load_bytes},
                                     {"store bytes", kernel.store_bytes}});
  sample_bandwidth(kernel.start_ps, kernel.end_ps);
}

void CardTracer::job_finished(const std::string& engine, const MmeJobStats& job) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  std::string name = std::string(mme::op_name(job.op)) + " " + std::to_string(job.dims.m) + "x" +
                     std::to_string(job.dims.n) + "x" + std::to_string(job.dims.k);
  if (job.dims.batch > 1) name += " x" + std::to_string(job.dims.batch);
  if (job.faulted) name += " (faulted)";
  timeline_.writer().complete_slice(timeline_.track(device_, to_upper(engine)), ns(job.start_ps),
                                    std::max(ns(job.end_ps), ns(job.start_ps) + 1), name,
                                    {{"macs", job.macs},
                                     {"cycles", job.cycles},
                                     {"array cycles", job.array_cycles},
                                     {"read bytes", job.read_bytes},
                                     {"write bytes", job.write_bytes}});
  sample_bandwidth(job.start_ps, job.end_ps);
}

void CardTracer::packet_sent(uint32_t port, uint64_t payload, Picoseconds start, Picoseconds end) {
  if (!timeline_.enabled() || !timeline_.packets()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().complete_slice(timeline_.track(device_, "NIC" + std::to_string(port) + " wire"), ns(start),
                                    std::max(ns(end), ns(start) + 1), "packet", {{"payload", payload}});
}

void CardTracer::operation_done(uint32_t port, const NicOperation& op, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  const bool send = op.op == NicOp::Send;
  const uint64_t start_ns = ns(op.committed_ps), end_ns = std::max(ns(at), start_ns + 1);
  timeline_.writer().complete_slice(nic_track(port, send, start_ns, end_ns), start_ns, end_ns,
                                    send ? "send" : "recv",
                                    {{"id", op.id}, {"bytes", op.bytes}, {"buffer", regs::describe_device_address(op.address)}});
  if (!send) return;
  // The port's payload sent since its last sample, over [last sample, now].
  const uint64_t tx = card_.nic_port(port)->stats().tx_bytes, now_ns = ns(at);
  auto [last_tx, last_ns] = nic_sampled_.count(port) ? nic_sampled_[port] : std::make_pair(uint64_t{0}, ns(op.committed_ps));
  if (now_ns > last_ns) {
    const traces::TrackId track = timeline_.counter(device_, "NIC" + std::to_string(port) + " tx", "GB/s");
    timeline_.writer().counter(track, last_ns, static_cast<double>(tx - last_tx) / static_cast<double>(now_ns - last_ns));
    timeline_.writer().counter(track, now_ns, 0.0);
    nic_sampled_[port] = {tx, now_ns};
  }
}

void CardTracer::operation_failed(uint32_t port, const NicOperation& op, const std::string& message, Picoseconds at) {
  if (!timeline_.enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_.mutex());
  timeline_.writer().instant(nic_track(port, op.op == NicOp::Send, ns(at), ns(at)), ns(at),
                             op.op == NicOp::Send ? "send failed" : "recv failed",
                             {{"message", message}});
}

void CardTracer::sample_bandwidth(Picoseconds from, Picoseconds to) {
  const uint64_t to_ns = ns(to);
  const uint64_t from_ns = std::max(sampled_ns_, ns(from));
  if (to_ns <= from_ns) return;   // the bytes go into the next sample
  const hbm::SubsystemStats& hbm = card_.memory().hbm().stats();
  const PcieStats& pcie = card_.memory().pcie().stats();
  const Bytes now{hbm.read_bytes, hbm.write_bytes, pcie.downstream_bytes, pcie.upstream_bytes};
  const double seconds_ns = static_cast<double>(to_ns - from_ns);   // bytes per ns = GB/s
  auto sample = [&](const char* name, uint64_t bytes) {
    const traces::TrackId track = timeline_.counter(device_, name, "GB/s");
    timeline_.writer().counter(track, from_ns, static_cast<double>(bytes) / seconds_ns);
    timeline_.writer().counter(track, to_ns, 0.0);
  };
  sample("HBM read", now.hbm_read - sampled_.hbm_read);
  sample("HBM write", now.hbm_write - sampled_.hbm_write);
  sample("PCIe to device", now.pcie_to_device - sampled_.pcie_to_device);
  sample("PCIe to host", now.pcie_to_host - sampled_.pcie_to_host);
  sampled_ = now;
  sampled_ns_ = to_ns;
}

}  // namespace hpusim::hw
