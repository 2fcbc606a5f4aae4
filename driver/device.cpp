#include "driver/device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "arch/cpucp/cpucp.h"
#include "arch/hex.h"
#include "arch/mme/mme_job.h"
#include "arch/packets/packets.h"
#include "traces/timeline.h"

namespace hpusim::driver {
namespace {

using namespace uapi;

// CQ entry (struct hl_cq_entry) and BD ctl fields.
constexpr uint32_t kCqEntryReady = 1u << 31;
constexpr uint32_t kCqEntryShadowIndexValid = 1u << 30;
constexpr uint32_t kShadowIndexMask = 0xFFF;

// The driver's coherent DMA memory (host memory is sparse, so the buffers are generous and never
// move): the device CPU's block (CPU PQ, event queue, message buffers, CPU-accessible window), the
// completion queues, a PQ per queue and, per external queue, a patched-CB slot per PQ entry.
constexpr uint64_t kCpuBlockBytes = 0x10000;
constexpr uint64_t kCpuPqOffset = 0x0;             // CPU PQ: kCpuPqEntries BDs
constexpr uint64_t kEqOffset = 0x4000;             // event queue: kEqEntries x 64 B
constexpr uint64_t kCpuPacketOffset = 0x6000;      // one cpucp packet at a time
constexpr uint64_t kCpuInfoOffset = 0x7000;        // struct cpucp_info and hpusim's extension
constexpr uint64_t kCpuCqOffset = 0x8000;          // CPU-accessible window (CQ regs)
constexpr uint32_t kEqEntries = fw_if::eq::kDefaultLength;   // HL_EQ_LENGTH
constexpr uint32_t kCpuCqBytes = 0x4000;
constexpr uint64_t kCqStride = 0x4000;                       // 4096 entries x 4 B
constexpr uint64_t kPqStride = 0x10000;                      // 4096 BDs x 16 B
constexpr uint64_t kPatchedCbSlot = 0x210000;                // 2 MB + 64 KB, page-aligned
constexpr uint64_t kHostPage = 0x10000;                      // host store page (release granule)
constexpr uint64_t kCoherentAlignment = 0x10000;

constexpr uint32_t kBdBytes = 16;
constexpr uint64_t kGaudiHostVaStart = 0x1000000000000ull;   // VA_HOST_SPACE_START
constexpr uint64_t kGaudiHostVaEnd = 0x3FF8000000000ull;

uint32_t get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint32_t log2u(uint32_t v) {
  uint32_t r = 0;
  while ((1u << r) < v) ++r;
  return r;
}

// Internal PQ lengths of Gaudi 1 (gaudiP.h).
uint32_t internal_queue_length(regs::QueueKind kind) {
  switch (kind) {
    case regs::QueueKind::Mme: return 1024;
    case regs::QueueKind::Tpc: return 1024;
    default: return 4096;
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Platform and device initialisation
// ---------------------------------------------------------------------------------------------

HlDevice::HlDevice(DeviceLink& link, const HlDeviceOptions& options) : link_(link), options_(options), mutex_(link) {
  if (options_.ext_queue_length == 0 || options_.ext_queue_length > 4096 ||
      (options_.ext_queue_length & (options_.ext_queue_length - 1)) != 0) {
    throw std::invalid_argument("HlDevice: ext_queue_length must be a power of two <= 4096");
  }
  if (options_.max_pending_cs == 0 || (options_.max_pending_cs & (options_.max_pending_cs - 1)) != 0) {
    throw std::invalid_argument("HlDevice: max_pending_cs must be a power of two");
  }
  if (options_.cs_timeout_us == 0) throw std::invalid_argument("HlDevice: cs_timeout_us must not be 0");
  timeline_ = options_.timeline;

  host_phys_base_ = link_.host_window_base();
  host_va_start_ = kGaudiHostVaStart;
  host_va_end_ = kGaudiHostVaEnd;
  const uint64_t cpu_block = alloc_coherent(kCpuBlockBytes);
  cpu_pq_address_ = cpu_block + kCpuPqOffset;
  eq_address_ = cpu_block + kEqOffset;
  cpu_packet_address_ = cpu_block + kCpuPacketOffset;
  cpu_info_address_ = cpu_block + kCpuInfoOffset;
  cpu_cq_address_ = cpu_block + kCpuCqOffset;
  const uint64_t cq_block = alloc_coherent(kNumCqs * kCqStride);
  for (unsigned i = 0; i < kNumCqs; ++i) cqs_[i].address = cq_block + i * kCqStride;
  pq_block_ = alloc_coherent(uint64_t{regs::kNumQueues} * kPqStride);
  qman_error_words_.assign(regs::kNumQmans, 0);

  if (!init_cpu_queues()) throw std::runtime_error("HlDevice: the device CPU did not come up");
  if (!cpucp_info_get()) throw std::runtime_error("HlDevice: the device CPU did not answer INFO_GET");
  build_queue_table();
  init_mmu();
  init_queues();
  status_ = HL_DEVICE_STATUS_OPERATIONAL;
  if (options_.heartbeat_period_us != 0) next_heartbeat_ps_ = link_.host_now_ps() + options_.heartbeat_period_us * 1000000;
  logf("device initialised: " + card_name_ + " (F/W " + cpucp_version_ + ")");
}

uint64_t HlDevice::alloc_coherent(uint64_t bytes) {
  const auto address = link_.dma_alloc_coherent(bytes, kCoherentAlignment);
  if (!address) throw std::runtime_error("HlDevice: no host memory left for " + std::to_string(bytes) + " bytes of DMA buffers");
  coherent_.push_back(*address);
  return *address;
}

HlDevice::~HlDevice() {
  if (open_) close();
  for (const uint64_t address : coherent_) link_.dma_free_coherent(address);
}

void HlDevice::build_queue_table() {
  queues_.assign(regs::kNumQueues, HwQueue{});
  for (unsigned q = 0; q < regs::kNumQueues; ++q) {
    HwQueue& hq = queues_[q];
    hq.exists = queue_exists(q);
    if (!hq.exists) continue;
    const auto id = regs::queue_from_index(q);
    hq.external = regs::queue_is_external(id);
    hq.length = hq.external ? options_.ext_queue_length : internal_queue_length(regs::queue_kind(id));
    hq.pq_address = pq_block_ + q * kPqStride;
    if (hq.external) {
      hq.cb_slots = alloc_coherent(hq.length * kPatchedCbSlot);
      hq.shadow.resize(hq.length);
    }
  }
}

bool HlDevice::queue_exists(unsigned q) const {
  if (q >= regs::kNumQueues) return false;
  const auto id = regs::queue_from_index(q);
  const unsigned engine = regs::queue_engine(id);
  switch (regs::queue_kind(id)) {
    case regs::QueueKind::Cpu: return false;   // driver-only
    case regs::QueueKind::Dma: return engine < dma_channel_count_;
    case regs::QueueKind::Mme: return qman_present(regs::mme_qman(regs::mme_group_master(engine)));
    case regs::QueueKind::Tpc: return ((tpc_mask_ >> engine) & 1) != 0;
    case regs::QueueKind::Nic: return ((nic_ports_mask_ >> engine) & 1) != 0;
  }
  return false;
}

void HlDevice::mmio_write(uint64_t cfg_offset, uint32_t value) { link_.mmio_write32(regs::cfg_address(cfg_offset), value); }

void HlDevice::host_write(uint64_t address, const void* data, uint64_t bytes) { link_.host_write(address, data, bytes); }
void HlDevice::host_read(uint64_t address, void* data, uint64_t bytes) { link_.host_read(address, data, bytes); }
void HlDevice::host_release(uint64_t address, uint64_t bytes) {
  const uint64_t rounded = (bytes + kHostPage - 1) / kHostPage * kHostPage;
  link_.host_fill(address, 0, rounded);
}

HlDevice::HostSpan::HostSpan(HlDevice& device, const char* name)
    : device_(device), name_(name), start_ps_(device.timeline_ != nullptr ? device.link_.host_now_ps() : 0) {}

HlDevice::HostSpan::~HostSpan() {
  traces::Timeline* timeline = device_.timeline_;
  if (timeline == nullptr || !timeline->enabled()) return;
  const uint64_t end_ps = device_.link_.host_now_ps();
  std::lock_guard<std::mutex> lock(timeline->mutex());
  const auto track = timeline->track(timeline->process(device_.options_.trace_process), "ioctls");
  timeline->writer().complete_slice(track, start_ps_ / 1000, std::max(end_ps / 1000, start_ps_ / 1000 + 1), name_, {},
                                    flow_ ? std::vector<traces::FlowId>{flow_} : std::vector<traces::FlowId>{});
}

uint64_t HlDevice::start_cs_flow(uint64_t seq) {
  if (timeline_ == nullptr) return 0;
  std::lock_guard<std::mutex> lock(timeline_->mutex());
  return timeline_->start_cs_flow(options_.card_label, seq);
}

// The completion interrupt of a CS: a slice from its MSI's arrival to the CS completing (the
// interrupt latency and the handler), on the CS's flow.
void HlDevice::trace_completion(const Cs& cs) {
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_->mutex());
  const traces::FlowId flow = timeline_->cs_flow(options_.card_label, cs.seq);
  if (flow == 0) return;
  // Interrupts handled together overlap: each slice starts after the previous one ends.
  const uint64_t end = std::max(cs.completed_ps / 1000, completion_slice_end_ns_);
  const uint64_t start = std::max(entry_msi_ps_ != 0 ? std::min(entry_msi_ps_ / 1000, end) : end, completion_slice_end_ns_);
  completion_slice_end_ns_ = std::max(end, start + 1);
  const auto track = timeline_->track(timeline_->process(options_.trace_process), "interrupts");
  timeline_->writer().complete_slice(track, start, std::max(end, start + 1), "CS completion", {{"seq", cs.seq}}, {flow});
}

// A wait that saw its CS complete ends the CS's flow, at the wait's return.
void HlDevice::trace_waited(uint64_t seq) {
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  std::lock_guard<std::mutex> lock(timeline_->mutex());
  const traces::FlowId flow = timeline_->cs_flow(options_.card_label, seq);
  if (flow == 0) return;
  timeline_->end_cs_flow(options_.card_label, seq);
  const uint64_t at = link_.host_now_ps() / 1000;
  const auto track = timeline_->track(timeline_->process(options_.trace_process), "ioctls");
  timeline_->writer().complete_slice(track, at, at, "CS waited", {{"seq", seq}}, {}, {flow});
}

void HlDevice::trace_instant(const std::string& name) {
  if (timeline_ == nullptr || !timeline_->enabled()) return;
  const uint64_t at_ps = link_.host_now_ps();
  std::lock_guard<std::mutex> lock(timeline_->mutex());
  const auto track = timeline_->track(timeline_->process(options_.trace_process), "interrupts");
  timeline_->writer().instant(track, at_ps / 1000, name);
}

void HlDevice::charge(uint64_t ns) {
  if (ns != 0) link_.charge_host_ns(ns);
}

void HlDevice::logf(const std::string& line) { log_.push_back(line); }

uint32_t HlDevice::mmio_read(uint64_t cfg_offset) { return link_.mmio_read32(regs::cfg_address(cfg_offset)); }

uint32_t HlDevice::qman_error_word(regs::QmanId qman) {
  std::lock_guard<DriverLock> lock(mutex_);
  poll_interrupts();
  return qman_error_words_.at(regs::to_index(qman));
}

bool HlDevice::wait_qman_error(regs::QmanId qman, uint64_t timeout_us) {
  std::lock_guard<DriverLock> lock(mutex_);
  const uint64_t deadline = link_.host_now_ps() + timeout_us * 1000000;
  const unsigned index = regs::to_index(qman);
  poll_interrupts();
  while (qman_error_words_.at(index) == 0 && link_.host_now_ps() < deadline) wait_event(deadline);
  return qman_error_words_.at(index) != 0;
}

// ---------------------------------------------------------------------------------------------
// The device CPU: boot wait, CPU queue / event queue init (gaudi_init_cpu_queues), halt
// ---------------------------------------------------------------------------------------------

bool HlDevice::init_cpu_queues() {
  namespace fw = fw_if;
  namespace cif = regs::cpu_if;
  // hl_fw_read_preboot_status / the boot wait: CPU_BOOT_STATUS reaches SRAM_AVAIL.
  const uint64_t boot_deadline = link_.host_now_ps() + 100'000'000'000ull;   // 100 ms
  uint32_t boot_status = mmio_read(fw::boot::kCpuBootStatus);
  while (boot_status != fw::boot::kStatusSramAvail && link_.host_now_ps() < boot_deadline) {
    charge(1000);
    boot_status = mmio_read(fw::boot::kCpuBootStatus);
  }
  if (boot_status != fw::boot::kStatusSramAvail) {
    logf("Device CPU did not boot, CPU_BOOT_STATUS " + std::to_string(boot_status));
    return false;
  }
  // The rings live in host memory; the firmware wants device addresses and lengths in bytes.
  const std::vector<uint8_t> zeros(uint64_t{kEqEntries} * fw::eq::kEntryBytes, 0);
  host_write(cpu_pq_address_, zeros.data(), uint64_t{kCpuPqEntries} * fw::kPqEntryBytes);
  host_write(eq_address_, zeros.data(), zeros.size());
  eq_ci_ = 0;
  cpu_pq_pi_ = 0;
  const uint64_t pq = device_view(cpu_pq_address_), eq = device_view(eq_address_), cq = device_view(cpu_cq_address_);
  mmio_write(cif::kPqBaseAddrLow, static_cast<uint32_t>(pq));
  mmio_write(cif::kPqBaseAddrHigh, static_cast<uint32_t>(pq >> 32));
  mmio_write(cif::kEqBaseAddrLow, static_cast<uint32_t>(eq));
  mmio_write(cif::kEqBaseAddrHigh, static_cast<uint32_t>(eq >> 32));
  mmio_write(cif::kCqBaseAddrLow, static_cast<uint32_t>(cq));
  mmio_write(cif::kCqBaseAddrHigh, static_cast<uint32_t>(cq >> 32));
  mmio_write(cif::kPqLength, kCpuPqEntries * fw::kPqEntryBytes);
  mmio_write(cif::kEqLength, kEqEntries * fw::eq::kEntryBytes);
  mmio_write(cif::kCqLength, kCpuCqBytes);
  mmio_write(cif::kEqRdOffs, 0);
  mmio_write(cif::kPfPqPi, 0);
  mmio_write(cif::kQueueInit, fw::boot::kPqInitReadyForCp);
  mmio_write(regs::gic::kGicdSetspiNsr, fw::event::spi_of(fw::event::kPiUpdate));
  const uint64_t init_deadline = link_.host_now_ps() + 10'000'000'000ull;   // 10 ms
  uint32_t status = mmio_read(cif::kQueueInit);
  while (status == fw::boot::kPqInitReadyForCp && link_.host_now_ps() < init_deadline) {
    charge(1000);
    status = mmio_read(cif::kQueueInit);
  }
  if (status != fw::boot::kPqInitReadyForHost) {
    logf("Failed to communicate with device CPU (CPU-CP timeout), QUEUE_INIT " + std::to_string(status));
    return false;
  }
  return true;
}

void HlDevice::halt_device_cpu() {
  namespace fw = fw_if;
  mmio_write(fw::boot::kKmdMsgToCpu, fw::boot::kKmdMsgGotoWfe);
  mmio_write(regs::gic::kGicdSetspiNsr, fw::event::spi_of(fw::event::kHaltMachine));
  const uint64_t deadline = link_.host_now_ps() + 1'000'000'000ull;   // 1 ms
  uint32_t status = mmio_read(fw::boot::kCpuBootStatus);
  while (status != fw::boot::kStatusInWfe && link_.host_now_ps() < deadline) {
    charge(1000);
    status = mmio_read(fw::boot::kCpuBootStatus);
  }
  if (status != fw::boot::kStatusInWfe) logf("Device CPU did not halt, CPU_BOOT_STATUS " + std::to_string(status));
}

void HlDevice::init_qman(regs::QmanId qman) {
  using regs::QmReg;
  const bool dma = regs::qman_family(qman) == regs::QmanFamily::Dma;
  const unsigned engine = regs::qman_engine(qman);
  // Sync-stream bases (W_S monitors / SOBs) only on the PCI DMA, DMA5 and TPC7 QMANs.
  const bool ws_bases = (dma && (engine < 2 || engine == 5)) ||
                        (regs::qman_family(qman) == regs::QmanFamily::Tpc && engine == 7);
  auto reg = [&](QmReg r, unsigned index) { return regs::qman_reg(qman, r, index); };

  for (unsigned cp = 0; cp < regs::kQmanCps; ++cp) {
    const bool ldma = dma || cp == regs::kLowerCp;
    mmio_write(reg(QmReg::CpLdmaTsizeOffset, cp), ldma ? regs::kQmanLdmaSizeOffset : regs::kQmanCpdmaSizeOffset);
    mmio_write(reg(QmReg::CpLdmaSrcBaseLoOffset, cp), ldma ? regs::kQmanLdmaSrcOffset : regs::kQmanCpdmaSrcOffset);
    mmio_write(reg(QmReg::CpLdmaDstBaseLoOffset, cp), ldma ? regs::kQmanLdmaDstOffset : regs::kQmanCpdmaDstOffset);
    const QmReg lo[4] = {QmReg::CpMsgBase0AddrLo, QmReg::CpMsgBase1AddrLo, QmReg::CpMsgBase2AddrLo, QmReg::CpMsgBase3AddrLo};
    const QmReg hi[4] = {QmReg::CpMsgBase0AddrHi, QmReg::CpMsgBase1AddrHi, QmReg::CpMsgBase2AddrHi, QmReg::CpMsgBase3AddrHi};
    for (unsigned base = 0; base < (ws_bases ? 4u : 2u); ++base) {
      const uint64_t address = regs::cfg_address(regs::cp_msg_base_default(base));
      mmio_write(reg(lo[base], cp), static_cast<uint32_t>(address));
      mmio_write(reg(hi[base], cp), static_cast<uint32_t>(address >> 32));
    }
    mmio_write(reg(QmReg::CpBarrierCfg, cp), 0x100);
  }
  // Errors become a message to the GIC: the QMAN's SPI, which the firmware turns into an
  // event-queue entry (gaudi_init_*_qman: GLBL_ERR_ADDR = CFG_BASE + GIC SETSPI, WDATA = irq).
  const uint64_t gic = regs::cfg_address(regs::gic::kGicdSetspiNsr);
  mmio_write(reg(QmReg::GlblErrAddrLo, 0), static_cast<uint32_t>(gic));
  mmio_write(reg(QmReg::GlblErrAddrHi, 0), static_cast<uint32_t>(gic >> 32));
  mmio_write(reg(QmReg::GlblErrWdata, 0), fw_if::event::spi_of(fw_if::event::qman_error_event(qman)));
  mmio_write(reg(QmReg::GlblErrCfg, 0), (0xFu << regs::qm::kGlblErrCfgPqfMsgEnShift) |
                                            (0x1Fu << regs::qm::kGlblErrCfgCqfMsgEnShift) |
                                            (0x1Fu << regs::qm::kGlblErrCfgCpMsgEnShift));
  mmio_write(reg(QmReg::ArbCfg0, 0), 0);
  mmio_write(reg(QmReg::GlblCfg0, 0), regs::qm::kGlblCfg0PqfEnMask | regs::qm::kGlblCfg0CqfEnMask |
                                          regs::qm::kGlblCfg0CpEnMask);
}

unsigned HlDevice::dma_channels() const { return dma_channel_count_; }

bool HlDevice::qman_present(regs::QmanId qman) const {
  const unsigned engine = regs::qman_engine(qman);
  switch (regs::qman_family(qman)) {
    case regs::QmanFamily::Dma: return engine < dma_channels();
    case regs::QmanFamily::Mme: return engine % 2 == 0 && ((mme_master_mask_ >> (engine / 2)) & 1) != 0;
    case regs::QmanFamily::Tpc: return ((tpc_mask_ >> engine) & 1) != 0;
    case regs::QmanFamily::Nic: return ((nic_ports_mask_ >> engine) & 1) != 0;
  }
  return false;
}

// gaudi_init_dma_core: errors become a message to the GIC (the DMA<ch>_CORE event) and stop the
// engine (no completion for an operation that hit an error), the kernel's secure accesses bypass
// the MMU, then the engine is enabled.
void HlDevice::init_dma_core(unsigned channel) {
  namespace dc = regs::dma_core;
  const uint64_t base = regs::dma_core_base(channel);
  const uint64_t gic = regs::cfg_address(regs::gic::kGicdSetspiNsr);
  mmio_write(base + dc::kErrmsgAddrLo, static_cast<uint32_t>(gic));
  mmio_write(base + dc::kErrmsgAddrHi, static_cast<uint32_t>(gic >> 32));
  mmio_write(base + dc::kErrmsgWdata, fw_if::event::spi_of(fw_if::event::dma_core(channel)));
  mmio_write(base + dc::kErrCfg, dc::kErrCfgErrMsgEn | dc::kErrCfgStopOnErr);
  mmio_write(base + dc::kSecureProps, dc::kPropsMmbp);
  mmio_write(base + dc::kNonSecureProps, dc::kPropsMmbp);
  mmio_write(base + dc::kCfg0, dc::kCfg0En);
}

// A NIC port (hpusim's block): MMU bypass until a context sets its ASID, then enabled.
void HlDevice::init_nic_port(unsigned port) {
  const uint64_t base = regs::nic_port_base(port);
  mmio_write(base + regs::nic_port::kNonSecureProps, regs::dma_core::kPropsMmbp);
  mmio_write(base + regs::nic_port::kCfg, regs::nic_port::kCfgEn);
}

void HlDevice::init_queues() {
  // Streams first (PQ rings in host memory), then each QMAN's CPs, errors and enables.
  std::vector<bool> qman_used(regs::kNumQmans, false);
  for (unsigned q = 0; q < regs::kNumQueues; ++q) {
    HwQueue& hq = queues_[q];
    if (!hq.exists) continue;
    const auto id = regs::queue_from_index(q);
    const auto qman = regs::queue_qman(id);
    const unsigned stream = regs::queue_stream(id);
    qman_used[regs::to_index(qman)] = true;
    hq.pi = hq.ci = 0;
    const uint64_t pq = device_view(hq.pq_address);
    mmio_write(regs::qman_reg(qman, regs::QmReg::PqBaseLo, stream), static_cast<uint32_t>(pq));
    mmio_write(regs::qman_reg(qman, regs::QmReg::PqBaseHi, stream), static_cast<uint32_t>(pq >> 32));
    mmio_write(regs::qman_reg(qman, regs::QmReg::PqSize, stream), log2u(hq.length));
    mmio_write(regs::qman_reg(qman, regs::QmReg::PqPi, stream), 0);
    mmio_write(regs::qman_reg(qman, regs::QmReg::PqCi, stream), 0);
  }
  for (unsigned ch = 0; ch < dma_channels(); ++ch) init_dma_core(ch);
  for (unsigned port = 0; port < regs::kMaxNicEngines; ++port) {
    if (qman_present(regs::nic_qman(port))) init_nic_port(port);
  }
  for (unsigned i = 0; i < regs::kNumQmans; ++i) {
    if (qman_used[i]) init_qman(regs::qman_from_index(i));
  }
  for (auto& cq : cqs_) {
    cq.pi = cq.ci = 0;
    host_release(cq.address, kCqStride);
  }
}

// The context-open restore (gaudi_restore_sm_registers): a kernel CS of MSG_LONGs zeroing every
// SOB and monitor status of E_N, E_S and W_N, and of W_S above the driver-reserved range.
void HlDevice::clear_sync_managers() {
  qman::CommandBufferBuilder cb;
  for (unsigned s = 0; s < regs::kNumSyncManagers; ++s) {
    const auto sm = static_cast<regs::SyncManager>(s);
    const bool ws = sm == regs::SyncManager::W_S;
    for (unsigned sob = ws ? GAUDI_FIRST_AVAILABLE_W_S_SYNC_OBJECT : 0; sob < regs::sm::kNumSobs; ++sob) {
      cb.msg_long(regs::cfg_address(regs::sm_sob(sm, sob)), 0, qman::kNoBarriers);
    }
    for (unsigned mon = ws ? GAUDI_FIRST_AVAILABLE_W_S_MONITOR : 0; mon < regs::sm::kNumMonitors; ++mon) {
      cb.msg_long(regs::cfg_address(regs::sm_mon_status(sm, mon)), 0, qman::kNoBarriers);
    }
  }
  // Kernel CBs are driver memory: hand them to the same path as a user CB on DMA_0_0.
  const uint64_t handle = next_cb_id_++ << 12;
  CommandBuffer& kcb = cbs_[handle];
  kcb.memory = cb.take();
  kcb.size = static_cast<uint32_t>(kcb.memory.size());
  kcb.destroyed = true;   // invisible to the user
  hl_cs_chunk chunk{};
  chunk.cb_handle = handle;
  chunk.queue_index = GAUDI_QUEUE_ID_DMA_0_0;
  chunk.cb_size = kcb.size;
  // The kernel CB may exceed the user limit: split it into jobs of at most HL_MAX_CB_SIZE is not
  // needed here (about 160 KB).
  uint64_t seq = 0;
  int rc = cs_default(&chunk, 1, 0, 0, true, &seq);
  cbs_.erase(handle);
  if (rc == 0) rc = wait_for_kernel_cs(seq);
  if (rc != 0) logf("failed to restore the sync managers, rc " + std::to_string(rc));
}

int HlDevice::wait_for_kernel_cs(uint64_t seq) {
  while (true) {
    Cs* cs = find_cs(seq);
    if (cs == nullptr) return -EIO;
    if (cs->state != CsState::kInFlight) {
      const int rc = cs->state == CsState::kCompleted ? 0 : -EIO;
      cs_.erase(seq);
      return rc;
    }
    wait_event(UINT64_MAX);
  }
}

// ---------------------------------------------------------------------------------------------
// open / close / ioctl
// ---------------------------------------------------------------------------------------------

int HlDevice::do_open() {
  std::lock_guard<DriverLock> lock(mutex_);
  const HostSpan span(*this, "open");
  link_.charge(DriverWork::kIoctl);
  if (open_) return -EBUSY;
  if (status_ == HL_DEVICE_STATUS_MALFUNCTION) return -ENODEV;
  open_ = true;
  next_seq_ = 1;
  busy_pending_.clear();
  busy_ = {};
  busy_covered_ps_ = 0;
  restore_done_ = false;
  for (auto it = cs_.begin(); it != cs_.end();) it = it->second.kernel ? std::next(it) : cs_.erase(it);
  counters_.ctx_out_of_mem_drop_cnt = counters_.ctx_parsing_drop_cnt = counters_.ctx_queue_full_drop_cnt = 0;
  counters_.ctx_device_in_reset_drop_cnt = counters_.ctx_max_cs_in_flight_drop_cnt = 0;
  counters_.ctx_validation_drop_cnt = 0;
  page_fault_.reset();
  ctx_dram_used_ = 0;
  prepare_mmu_asid(kUserAsid);
  // gaudi_restore_qm_registers: a new context starts with stream arbitration off everywhere.
  for (unsigned i = 0; i < regs::kNumQmans; ++i) {
    const auto qman = regs::qman_from_index(i);
    if (qman_present(qman)) mmio_write(regs::qman_reg(qman, regs::QmReg::ArbCfg0, 0), 0);
  }
  clear_sync_managers();
  return 0;
}

int HlDevice::do_close() {
  std::lock_guard<DriverLock> lock(mutex_);
  const HostSpan span(*this, "close");
  if (!open_) return -EBADF;
  // Work in flight is waited for; the TDR still runs, so a CS that never ends resets the device
  // (and aborts whatever else is in flight) instead of hanging the close.
  while (!in_flight_.empty()) wait_event(UINT64_MAX);
  unmap_all_host_memory();
  for (auto it = cbs_.begin(); it != cbs_.end();) {
    if (it->second.mmaps > 0) {
      it->second.destroyed = true;   // freed at munmap
      ++it;
    } else {
      it = cbs_.erase(it);
    }
  }
  open_ = false;
  return 0;
}

// Every entry point catches at the boundary: whatever a lower layer throws (a host write or an
// MMIO the link refuses) becomes -EIO (-ENOMEM for allocation) and a line in the log, never an
// exception into user space. What the entry point had changed is undone where it matters: a CS
// that failed before its first doorbell leaves no trace (schedule()).
template <class Body>
int HlDevice::at_boundary(const char* entry, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    logf(std::string(entry) + ": out of host memory");
    return -ENOMEM;
  } catch (const std::exception& e) {
    logf(std::string(entry) + " failed: " + e.what());
    return -EIO;
  }
}

int HlDevice::open() { return at_boundary("open", [&] { return do_open(); }); }
int HlDevice::close() { return at_boundary("close", [&] { return do_close(); }); }
int HlDevice::info(hl_info_args& args) { return at_boundary("INFO", [&] { return do_info(args); }); }
int HlDevice::cb(hl_cb_args& args) { return at_boundary("CB", [&] { return do_cb(args); }); }
int HlDevice::cs(hl_cs_args& args) { return at_boundary("CS", [&] { return do_cs(args); }); }
int HlDevice::wait_cs(hl_wait_cs_args& args) { return at_boundary("WAIT_CS", [&] { return do_wait_cs(args); }); }
int HlDevice::memory(hl_mem_args& args) { return at_boundary("MEMORY", [&] { return do_memory(args); }); }
int HlDevice::mmap_cb(uint64_t handle, uint64_t length, void** address) {
  return at_boundary("mmap", [&] { return do_mmap_cb(handle, length, address); });
}
int HlDevice::munmap_cb(void* address, uint64_t length) {
  return at_boundary("munmap", [&] { return do_munmap_cb(address, length); });
}

int HlDevice::ioctl(unsigned long request, void* arg) {
  if (arg == nullptr) return -EFAULT;
  if (request == DRM_IOCTL_HL_INFO || request == HL_IOCTL_INFO) return info(*static_cast<hl_info_args*>(arg));
  if (request == DRM_IOCTL_HL_CB || request == HL_IOCTL_CB) return cb(*static_cast<hl_cb_args*>(arg));
  if (request == DRM_IOCTL_HL_CS || request == HL_IOCTL_CS) return cs(*static_cast<hl_cs_args*>(arg));
  if (request == DRM_IOCTL_HL_WAIT_CS || request == HL_IOCTL_WAIT_CS) return wait_cs(*static_cast<hl_wait_cs_args*>(arg));
  if (request == DRM_IOCTL_HL_MEMORY || request == HL_IOCTL_MEMORY) return memory(*static_cast<hl_mem_args*>(arg));
  return -ENOTTY;   // DEBUG and anything unknown
}

// ---------------------------------------------------------------------------------------------
// INFO
// ---------------------------------------------------------------------------------------------

int HlDevice::do_info(hl_info_args& args) {
  std::lock_guard<DriverLock> lock(mutex_);
  const HostSpan span(*this, "INFO");
  link_.charge(DriverWork::kIoctl);
  if (!open_) return -EBADF;
  if (args.return_pointer == 0 || args.return_size == 0) return -EINVAL;
  poll_interrupts();
  run_timers();
  void* out = reinterpret_cast<void*>(static_cast<uintptr_t>(args.return_pointer));
  auto copy_out = [&](const auto& value) {
    std::memcpy(out, &value, std::min<size_t>(args.return_size, sizeof value));
    return 0;
  };
  switch (args.op) {
    case HL_INFO_HW_IP_INFO: {
      hl_info_hw_ip_info hw{};
      hw.sram_base_address = sram_base_ + sram_reserved_;
      hw.sram_size = static_cast<uint32_t>(sram_size_ - sram_reserved_);
      hw.dram_base_address = dram_user_base_;
      hw.dram_size = dram_base_ + dram_size_ - dram_user_base_;
      // A real driver reads the PCI device ID; here the firmware reports the generation.
      hw.device_id = card_generation_ == 3 ? PCI_IDS_GAUDI3 : card_generation_ == 2 ? PCI_IDS_GAUDI2 : PCI_IDS_GAUDI;
      // The engines the card has, as the firmware reported them.
      hw.tpc_enabled_mask_ext = tpc_mask_;
      hw.tpc_enabled_mask = static_cast<uint8_t>(tpc_mask_);
      hw.nic_ports_mask = nic_ports_mask_;
      hw.edma_enabled_mask = dma_channel_count_ > regs::kNumPciDmaChannels
                                 ? (1u << (dma_channel_count_ - regs::kNumPciDmaChannels)) - 1
                                 : 0;
      hw.reserved1 = static_cast<uint8_t>(mme_master_mask_);   // hpusim: MME masters (bit k = MME 2k)
      hw.dram_enabled = 1;
      hw.reserved7 = mme_geometries_;    // hpusim: MME output geometries
      hw.reserved6 = tpc_vector_bits_;   // hpusim: TPC vector width in bits
      hw.reserved9 = tpc_prefetch_entries_;   // hpusim: TPC prefetch-buffer entries
      hw.reserved3 = mme_super_tile_rows_;    // hpusim: MME super-tile rows
      hw.dram_page_size = 0x200000;   // 2 MB
      hw.device_mem_alloc_default_page_size = 0x200000;
      std::memcpy(hw.cpucp_version, cpucp_version_.data(), std::min(cpucp_version_.size(), sizeof hw.cpucp_version - 1));
      std::memcpy(hw.card_name, card_name_.data(), std::min(card_name_.size(), sizeof hw.card_name - 1));
      return copy_out(hw);
    }
    case HL_INFO_DEVICE_STATUS: {
      hl_info_device_status st{};
      st.status = status_;
      return copy_out(st);
    }
    case HL_INFO_RESET_COUNT: {
      hl_info_reset_count rc{};
      rc.hard_reset_cnt = hard_reset_cnt_;
      rc.soft_reset_cnt = 0;
      return copy_out(rc);
    }
    case HL_INFO_CS_COUNTERS: return copy_out(counters_);
    case HL_INFO_HPUSIM_DEVICE_BUSY: return copy_out(busy_);
    case HL_INFO_DRAM_USAGE: {
      hl_info_dram_usage usage{};
      const uint64_t user_dram = dram_base_ + dram_size_ - dram_user_base_;
      usage.dram_free_mem = user_dram - std::min(user_dram, dram_used_);
      usage.ctx_dram_mem = ctx_dram_used_;
      return copy_out(usage);
    }
    case HL_INFO_PAGE_FAULT_EVENT: {
      if (!page_fault_) return 0;   // nothing captured: the buffer is left as it was
      return copy_out(*page_fault_);
    }
    case HL_INFO_SYNC_MANAGER: {
      if (args.dcore_id >= HL_MAX_DCORES) return -EINVAL;
      hl_info_sync_manager sm{};
      if (args.dcore_id == HL_GAUDI_WS_DCORE) {
        sm.first_available_sync_object = GAUDI_FIRST_AVAILABLE_W_S_SYNC_OBJECT;
        sm.first_available_monitor = GAUDI_FIRST_AVAILABLE_W_S_MONITOR;
      }
      return copy_out(sm);
    }
    default:
      return -EINVAL;   // "Invalid request" in the real driver; other ops are not implemented
  }
}

// ---------------------------------------------------------------------------------------------
// CB
// ---------------------------------------------------------------------------------------------

int HlDevice::do_cb(hl_cb_args& args) {
  std::lock_guard<DriverLock> lock(mutex_);
  const HostSpan span(*this, "CB");
  link_.charge(DriverWork::kIoctl);
  if (!open_) return -EBADF;
  switch (args.in.op) {
    case HL_CB_OP_CREATE: {
      if (args.in.cb_size > HL_MAX_CB_SIZE) return -EINVAL;
      if (args.in.flags & HL_CB_FLAGS_MAP) return -EINVAL;   // needs the device MMU (not modelled)
      // Small CBs come from the pool of 128 KB buffers; others are page-rounded.
      uint64_t bytes = (uint64_t{args.in.cb_size} + kPageSize - 1) / kPageSize * kPageSize;
      if (bytes == 0) bytes = kPageSize;
      if (bytes <= kCbPoolCbSize) bytes = kCbPoolCbSize;
      const uint64_t handle = next_cb_id_++ << 12;
      CommandBuffer& buffer = cbs_[handle];
      buffer.memory.assign(bytes, 0);
      buffer.size = args.in.cb_size;
      args.out = hl_cb_out{};
      args.out.cb_handle = handle;
      return 0;
    }
    case HL_CB_OP_DESTROY: {
      auto it = cbs_.find(args.in.cb_handle);
      if (it == cbs_.end() || it->second.destroyed) return -EINVAL;
      if (it->second.mmaps > 0) {
        it->second.destroyed = true;   // the mapping keeps the memory until munmap
      } else {
        cbs_.erase(it);
      }
      return 0;
    }
    case HL_CB_OP_INFO: {
      auto it = cbs_.find(args.in.cb_handle);
      if (it == cbs_.end() || it->second.destroyed) return -EINVAL;
      if (args.in.flags & HL_CB_FLAGS_GET_DEVICE_VA) return -EINVAL;
      args.out = hl_cb_out{};
      args.out.usage_cnt = 0;   // CBs are copied at submission; no CS holds them afterwards
      return 0;
    }
    default:
      return -EINVAL;
  }
}

int HlDevice::do_mmap_cb(uint64_t handle, uint64_t length, void** address) {
  std::lock_guard<DriverLock> lock(mutex_);
  if (address == nullptr) return -EFAULT;
  auto it = cbs_.find(handle);
  if (it == cbs_.end() || it->second.destroyed) return -EINVAL;
  const uint64_t expected = std::max<uint64_t>(kPageSize, (uint64_t{it->second.size} + kPageSize - 1) / kPageSize * kPageSize);
  if (length != expected) return -EINVAL;
  ++it->second.mmaps;
  *address = it->second.memory.data();
  mapped_[*address] = handle;
  return 0;
}

int HlDevice::do_munmap_cb(void* address, uint64_t) {
  std::lock_guard<DriverLock> lock(mutex_);
  auto m = mapped_.find(address);
  if (m == mapped_.end()) return -EINVAL;
  auto it = cbs_.find(m->second);
  if (it != cbs_.end() && --it->second.mmaps == 0) {
    mapped_.erase(m);
    if (it->second.destroyed) cbs_.erase(it);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// CS
// ---------------------------------------------------------------------------------------------

int HlDevice::do_cs(hl_cs_args& args) {
  std::lock_guard<DriverLock> lock(mutex_);
  HostSpan span(*this, "CS");
  submit_span_ = &span;   // schedule() puts the CS's flow on it
  struct Clear {
    HostSpan*& span;
    ~Clear() { span = nullptr; }
  } clear{submit_span_};
  link_.charge(DriverWork::kIoctl);
  if (!open_) return -EBADF;
  poll_interrupts();
  run_timers();
  const hl_cs_in in = args.in;
  for (uint8_t b : in.pad) {
    if (b != 0) return -EINVAL;
  }
  const uint32_t type_flags = in.cs_flags & (HL_CS_FLAGS_SIGNAL | HL_CS_FLAGS_WAIT | HL_CS_FLAGS_COLLECTIVE_WAIT |
                                             HL_CS_FLAGS_RESERVE_SIGNALS_ONLY | HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY |
                                             HL_CS_FLAGS_ENGINE_CORE_COMMAND | HL_CS_FLAGS_ENGINES_COMMAND |
                                             HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES);
  if (type_flags & (type_flags - 1)) return -EINVAL;
  if (in.cs_flags & HL_CS_FLAGS_STAGED_SUBMISSION) return -EPERM;
  if (type_flags != 0) return -EINVAL;   // sync-stream and engine commands: not implemented
  const uint32_t supported = HL_CS_FLAGS_FORCE_RESTORE | HL_CS_FLAGS_CUSTOM_TIMEOUT;
  if (in.cs_flags & ~supported) return -EINVAL;
  if (status_ != HL_DEVICE_STATUS_OPERATIONAL) {
    ++counters_.total_device_in_reset_drop_cnt;
    ++counters_.ctx_device_in_reset_drop_cnt;
    return -EBUSY;
  }
  if (in.num_chunks_execute == 0) return -EINVAL;
  const uint32_t timeout_s = (in.cs_flags & HL_CS_FLAGS_CUSTOM_TIMEOUT) ? in.timeout : 0;

  // Restore phase: on the first CS of the context or when forced; executed and waited for here.
  if (in.num_chunks_restore > 0 && (!restore_done_ || (in.cs_flags & HL_CS_FLAGS_FORCE_RESTORE))) {
    if (in.num_chunks_restore > HL_MAX_JOBS_PER_CS || in.chunks_restore == 0) return -EINVAL;
    uint64_t restore_seq = 0;
    const int rc = cs_default(reinterpret_cast<const hl_cs_chunk*>(static_cast<uintptr_t>(in.chunks_restore)),
                              in.num_chunks_restore, in.cs_flags, timeout_s, false, &restore_seq);
    if (rc != 0) return rc;
    while (true) {
      Cs* r = find_cs(restore_seq);
      if (r == nullptr || r->state == CsState::kCompleted) break;
      if (r->state != CsState::kInFlight) return -ENOEXEC;
      wait_event(UINT64_MAX);
    }
    restore_done_ = true;
  }
  if (in.chunks_execute == 0) return -EFAULT;
  uint64_t seq = 0;
  const int rc = cs_default(reinterpret_cast<const hl_cs_chunk*>(static_cast<uintptr_t>(in.chunks_execute)),
                            in.num_chunks_execute, in.cs_flags, timeout_s, false, &seq);
  if (rc == -EAGAIN) return rc;   // arguments untouched, the user may retry
  args.out = hl_cs_out{};
  args.out.status = static_cast<uint32_t>(rc == 0 ? HL_CS_STATUS_SUCCESS : -rc);
  args.out.seq = rc == 0 ? seq : ~0ull;
  return rc;
}

int HlDevice::cs_default(const hl_cs_chunk* chunks, uint32_t count, uint32_t, uint32_t timeout_s, bool kernel,
                         uint64_t* seq_out) {
  link_.charge(DriverWork::kCsSubmit);
  auto validation_drop = [&] {
    ++counters_.total_validation_drop_cnt;
    ++counters_.ctx_validation_drop_cnt;
    return -EINVAL;
  };
  if (count == 0) return -EINVAL;
  if (count > HL_MAX_JOBS_PER_CS) {
    logf("Number of chunks can NOT be larger than " + std::to_string(HL_MAX_JOBS_PER_CS));
    return validation_drop();
  }
  if (chunks == nullptr) return -EFAULT;
  if (in_flight_.size() >= options_.max_pending_cs) {
    ++counters_.total_max_cs_in_flight_drop_cnt;
    ++counters_.ctx_max_cs_in_flight_drop_cnt;
    return -EAGAIN;
  }

  std::vector<PendingJob> jobs;
  jobs.reserve(count);
  bool has_external = false;
  const InternalCbRanges ranges{sram_base_ + sram_reserved_, sram_base_ + sram_size_, dram_user_base_,
                                dram_base_ + dram_size_, host_va_start_, host_va_end_};
  for (uint32_t i = 0; i < count; ++i) {
    const hl_cs_chunk chunk = chunks[i];   // copy_from_user
    const unsigned q = chunk.queue_index;
    if (q >= regs::kNumQueues || !queues_[q].exists) {
      logf("Queue index " + std::to_string(q) + " is invalid or disabled");
      return validation_drop();
    }
    PendingJob job;
    job.queue = q;
    job.external = queues_[q].external;
    if (job.external) {
      auto it = cbs_.find(chunk.cb_handle);
      if (it == cbs_.end() || (it->second.destroyed && !kernel)) {
        logf("CB handle " + hex(chunk.cb_handle) + " invalid");
        return validation_drop();
      }
      const CommandBuffer& buffer = it->second;
      if (chunk.cb_size < 8 || chunk.cb_size > buffer.size) {
        logf("CB size " + std::to_string(chunk.cb_size) + " invalid");
        return validation_drop();
      }
      CompletionPackets completion;   // the values are filled in at scheduling time
      completion.cq_address = 0;
      completion.msi_address = regs::cfg_address(regs::pcie::msi_intr(0));
      job.parsed = parse_external_cb(buffer.memory.data(), chunk.cb_size, completion);
      link_.charge(DriverWork::kCbParsePerPacket, job.parsed.packet_count);
      if (!job.parsed.ok()) {
        logf("Failed to parse JOB " + std::to_string(i) + ", err " + std::to_string(job.parsed.error) + ": " +
             job.parsed.message);
        ++counters_.total_parsing_drop_cnt;
        ++counters_.ctx_parsing_drop_cnt;
        return job.parsed.error;
      }
      has_external = true;
    } else {
      std::string message;
      const int rc = check_internal_cb(chunk.cb_handle, chunk.cb_size, ranges, &message);
      if (rc != 0) {
        logf("Failed to parse JOB " + std::to_string(i) + ", err " + std::to_string(rc) + ": " + message);
        ++counters_.total_parsing_drop_cnt;
        ++counters_.ctx_parsing_drop_cnt;
        return rc;
      }
      job.address = chunk.cb_handle;
      job.size = chunk.cb_size;
    }
    jobs.push_back(std::move(job));
  }
  if (!has_external) {
    logf("Reject CS since it contains only internal queues jobs and needs completion");
    return validation_drop();
  }

  Cs cs;
  cs.kernel = kernel;
  const uint64_t timeout_us = timeout_s != 0 ? uint64_t{timeout_s} * 1000000 : options_.cs_timeout_us;
  cs.timeout_ps = timeout_us * 1000000;
  const int rc = schedule(jobs, cs);
  if (rc != 0) {
    ++counters_.total_queue_full_drop_cnt;
    ++counters_.ctx_queue_full_drop_cnt;
    return rc;
  }
  *seq_out = cs.seq;
  return 0;
}

int HlDevice::schedule(std::vector<PendingJob>& jobs, Cs& cs) {
  // Room check first, for every queue the CS uses (nothing is written on -EAGAIN).
  std::map<unsigned, uint32_t> per_queue;
  for (const PendingJob& job : jobs) ++per_queue[job.queue];
  for (const auto& [q, n] : per_queue) {
    const HwQueue& hq = queues_[q];
    const uint32_t used = (hq.pi - hq.ci) & (2 * hq.length - 1);
    if (used + n > hq.length) {
      logf("Queue " + regs::queue_name(regs::queue_from_index(q)) + " is full");
      return -EAGAIN;
    }
  }
  // Phase 1 writes every job's patched CB and PQ entry; phase 2 rings the doorbells. A failure in
  // phase 1 (a host write the link refuses) is undone here: no job is rung, the queues, the CQs and
  // the CS table are as they were.
  std::map<unsigned, uint32_t> saved_pi, saved_cq_pi;
  for (const auto& [q, n] : per_queue) {
    saved_pi[q] = queues_[q].pi;
    if (queues_[q].external) saved_cq_pi[q] = cqs_[q].pi;
  }
  const uint64_t saved_next_seq = next_seq_, saved_next_kernel_seq = next_kernel_seq_;
  cs.seq = cs.kernel ? next_kernel_seq_++ : next_seq_++;
  for (const PendingJob& job : jobs) {
    if (job.external) ++cs.external_pending;
  }
  const uint64_t now = link_.host_now_ps();
  cs.head_since_ps = now;
  cs.submitted_ps = now;
  const uint64_t seq = cs.seq;
  cs_[seq] = cs;
  const uint64_t flow = start_cs_flow(seq);
  if (submit_span_ != nullptr) submit_span_->add_flow(flow);
  if (!cs.kernel) busy_pending_[seq] = {now, 0};
  in_flight_.push_back(seq);
  if (in_flight_.size() == 1) cs_[seq].head_since_ps = now;

  std::vector<std::pair<unsigned, uint32_t>> doorbells;   // queue, its PI after the job
  doorbells.reserve(jobs.size());
  try {
    for (PendingJob& job : jobs) {
      HwQueue& hq = queues_[job.queue];
      const uint32_t offset = hq.pi & (hq.length - 1);
      uint8_t bd[kBdBytes];
      uint64_t ptr = 0;
      uint32_t len = 0, ctl = 0;
      if (job.external) {
        // add_end_of_cb_packets: the CQ entry for this PQ slot and the MSI of this queue's CQ.
        const unsigned cq_index = job.queue;   // CQ i serves external queue i
        CompletionQueue& cq = cqs_[cq_index];
        const uint32_t shadow = hq.pi & kShadowIndexMask;
        qman::MsgProt entry;
        entry.value = shadow | kCqEntryShadowIndexValid | kCqEntryReady;
        entry.addr = device_view(cq.address + 4ull * cq.pi);
        entry.barriers = qman::Barriers{job.parsed.contains_dma_pkt, false, true};
        qman::MsgProt msi;
        msi.value = 1;
        msi.addr = regs::cfg_address(regs::pcie::msi_intr(cq_index));
        msi.barriers = qman::kMbOnly;
        std::vector<uint8_t> tail;
        qman::encode(entry, tail);
        qman::encode(msi, tail);
        std::memcpy(job.parsed.patched.data() + job.parsed.completion_offset, tail.data(), tail.size());
        cq.pi = (cq.pi + 1) & (hq.length - 1);

        const uint64_t slot = hq.cb_slots + offset * kPatchedCbSlot;
        host_write(slot, job.parsed.patched.data(), job.parsed.patched.size());
        hq.shadow[offset] = Job{seq, cs.kernel, slot, job.parsed.patched.size()};
        ptr = device_view(slot);
        len = static_cast<uint32_t>(job.parsed.patched.size());
        ctl = shadow;
      } else {
        ptr = job.address;
        len = job.size;
        ++cs_[seq].internal_jobs[job.queue];
      }
      std::memcpy(bd, &ptr, 8);
      std::memcpy(bd + 8, &len, 4);
      std::memcpy(bd + 12, &ctl, 4);
      host_write(hq.pq_address + offset * kBdBytes, bd, kBdBytes);
      hq.pi = (hq.pi + 1) & (2 * hq.length - 1);
      doorbells.emplace_back(job.queue, hq.pi);
      if (flow != 0 && job.external) {   // the card's queue joins the CS's flow when it runs this entry
        const regs::QueueId q = regs::queue_from_index(job.queue);
        std::lock_guard<std::mutex> lock(timeline_->mutex());
        timeline_->note_queue_entry(options_.card_label, regs::qman_name(regs::queue_qman(q)), regs::queue_stream(q),
                                    hq.pi, flow);
      }
      if (options_.fault_hook) options_.fault_hook("schedule: PQ entry written");
    }
  } catch (...) {
    for (const auto& [q, pi] : saved_pi) queues_[q].pi = pi;
    for (const auto& [q, pi] : saved_cq_pi) cqs_[q].pi = pi;
    cs_.erase(seq);
    in_flight_.pop_back();
    next_seq_ = saved_next_seq;
    next_kernel_seq_ = saved_next_kernel_seq;
    throw;
  }
  for (const auto& [queue, pi] : doorbells) mmio_write(regs::queue_doorbell(regs::queue_from_index(queue)), pi);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Completion: MSI -> CQ -> shadow queue -> job -> CS
// ---------------------------------------------------------------------------------------------

bool HlDevice::poll_interrupts() {
  // Every MSI already there is taken (and its latency and handler charged) before any is handled,
  // so each CQ entry handled below has its own interrupt's time.
  std::vector<unsigned> taken;
  while (true) {
    const uint64_t before = link_.host_now_ps();
    uint64_t arrived = 0;
    const auto vector = link_.wait_for_interrupt(0, &arrived);
    if (!vector) break;
    link_.charge(DriverWork::kIrqHandler);
    const uint64_t handled = arrived + (link_.host_now_ps() - before);   // + the latency and the handler
    taken.push_back(*vector);
    if (*vector < kNumCqs) msi_handled_ps_[*vector].push_back({arrived, std::min(handled, link_.host_now_ps())});
  }
  for (const unsigned vector : taken) handle_irq(vector);
  for (auto& times : msi_handled_ps_) times.clear();
  return !taken.empty();
}

void HlDevice::handle_irq(unsigned vector) {
  trace_instant("MSI " + std::to_string(vector));
  if (vector < kNumCqs) {
    handle_cq(vector);
  } else if (vector == fw_if::kEventQueueMsiVector) {
    handle_eq();
  }
}

// hl_irq_handler_eq: every READY entry from CI on is handled, its header cleared, and the new CI
// written to EQ_RD_OFFS.
void HlDevice::handle_eq() {
  namespace eq = fw_if::eq;
  bool any = false;
  while (true) {
    uint8_t entry[eq::kEntryBytes];
    const uint64_t slot = eq_address_ + uint64_t{eq_ci_} * eq::kEntryBytes;
    host_read(slot, entry, sizeof entry);
    const uint32_t ctl = get32(entry + eq::kCtlOffset);
    if (!eq::ctl_ready(ctl)) break;
    uint64_t data[eq::kDataWords];
    std::memcpy(data, entry + eq::kDataOffset, sizeof data);
    ++eq_events_;
    handle_event(eq::ctl_type(ctl), data);
    const uint32_t zero = 0;
    host_write(slot + eq::kCtlOffset, &zero, 4);
    eq_ci_ = (eq_ci_ + 1) % kEqEntries;
    any = true;
  }
  if (any) mmio_write(regs::cpu_if::kEqRdOffs, eq_ci_);
}

// gaudi_handle_eqe: QMAN errors name the engine and the causes (GLBL_STS1 of each CP, cleared).
void HlDevice::handle_event(uint32_t type, const uint64_t* data) {
  namespace ev = fw_if::event;
  if (type == ev::kHeartbeat) return;
  if (type == ev::kMmuPageFault) {
    handle_page_fault();
    return;
  }
  if (type == ev::kRazwiOrAdc) {
    // gaudi_print_irq_info with razwi: the address, direction and initiator of the illegal
    // access, as the firmware read them from the fabric's capture.
    ++razwi_events_;
    logf("RAZWI: illegal " + std::string(data[1] ? "write to " : "read of ") + hex(data[0]) + " by " +
         regs::engine_name(static_cast<uint32_t>(data[2])));
    return;
  }
  if (type == ev::kDevResetReq || type == ev::kPktQueueOutSync || type == ev::kFwAliveS) {
    // gaudi_handle_eqe's reset_device cases (hard_reset_on_fw_events): the reset runs once the
    // event handler has returned.
    logf("Received H/W interrupt " + std::to_string(type) + " (" + ev::name(type) + "), resetting the device");
    if (reset_request_.empty()) reset_request_ = "event " + ev::name(type);
    return;
  }
  if (ev::dma_of_core_event(type) >= 0) {
    handle_dma_core_error(static_cast<unsigned>(ev::dma_of_core_event(type)));
    return;
  }
  if (ev::tpc_of_krn_err(type) >= 0) {
    // gaudi_tpc_read_interrupts: the TPC's interrupt causes are printed and cleared.
    const unsigned tpc = static_cast<unsigned>(ev::tpc_of_krn_err(type));
    const uint64_t cause_reg = regs::tpc_cfg_base(tpc) + regs::tpc_cfg::kTpcIntrCause;
    const uint32_t causes = mmio_read(cause_reg);
    logf("TPC" + std::to_string(tpc) + " kernel error (" + ev::name(type) + "): TPC_INTR_CAUSE " + hex(causes));
    if (causes != 0) mmio_write(cause_reg, causes);
    return;
  }
  if (ev::mme_of_err(type) >= 0) {
    // The MME's error causes (hpusim's INTR_CAUSE) are printed and cleared.
    const unsigned mme = static_cast<unsigned>(ev::mme_of_err(type));
    const uint64_t cause_reg = regs::mme_ctrl_base(mme) + mme::desc::kIntrCause;
    const uint32_t causes = mmio_read(cause_reg);
    logf("MME" + std::to_string(mme) + " job error (" + ev::name(type) + "): INTR_CAUSE " + hex(causes));
    if (causes != 0) mmio_write(cause_reg, causes);
    return;
  }
  for (unsigned i = 0; i < regs::kNumQmans; ++i) {
    const auto qman = regs::qman_from_index(i);
    if (fw_if::event::qman_error_event(qman) != type) continue;
    std::ostringstream line;
    line << regs::qman_name(qman) << " (QMAN) error: event " << ev::name(type) << " (" << type << "), SPI "
         << data[0];
    for (unsigned cp = 0; cp < regs::kQmanCps; ++cp) {
      const uint64_t sts1 = regs::qman_reg(qman, regs::QmReg::GlblSts1, cp);
      const uint32_t causes = mmio_read(sts1);
      if (causes == 0) continue;
      line << ", CP" << cp << " causes " << hex(causes);
      mmio_write(sts1, causes);   // write 1 to clear
    }
    logf(line.str());
    qman_error_words_[i] = static_cast<uint32_t>(data[0]) != 0 ? static_cast<uint32_t>(data[0]) : type;
    return;
  }
  logf("Received event " + ev::name(type) + " (" + std::to_string(type) + ")");
}

// gaudi_handle_qman_err for a DMA core: the causes are printed and cleared; the engine stays
// halted (STOP_ON_ERR) until the device is reset.
void HlDevice::handle_dma_core_error(unsigned channel) {
  const uint64_t cause_reg = regs::dma_core_base(channel) + regs::dma_core::kErrCause;
  const uint32_t causes = mmio_read(cause_reg);
  logf("DMA" + std::to_string(channel) + "_CORE error: ERR_CAUSE " + hex(causes));
  if (causes != 0) mmio_write(cause_reg, causes);
}

void HlDevice::handle_cq(unsigned cq_index) {
  CompletionQueue& cq = cqs_[cq_index];
  const uint32_t length = queues_[cq_index].length;
  while (true) {
    const uint64_t slot = cq.address + 4ull * cq.ci;
    uint32_t entry = 0;
    host_read(slot, &entry, 4);
    if (!(entry & kCqEntryReady)) break;
    std::deque<MsiTimes>& times = msi_handled_ps_[cq_index];
    entry_completion_ps_ = times.empty() ? 0 : times.front().handled_ps;
    entry_msi_ps_ = times.empty() ? 0 : times.front().arrived_ps;
    if (!times.empty()) times.pop_front();
    if (entry & kCqEntryShadowIndexValid) complete_job(cq_index, entry & kShadowIndexMask);
    entry_completion_ps_ = entry_msi_ps_ = 0;
    const uint32_t zero = 0;
    host_write(slot, &zero, 4);
    cq.ci = (cq.ci + 1) & (length - 1);
  }
}

void HlDevice::complete_job(unsigned queue, uint32_t shadow_index) {
  HwQueue& hq = queues_[queue];
  Job job = hq.shadow[shadow_index & (hq.length - 1)];
  hq.shadow[shadow_index & (hq.length - 1)] = Job{};
  if (job.patched_bytes != 0) host_release(job.patched_address, job.patched_bytes);
  hq.ci = (hq.ci + 1) & (2 * hq.length - 1);
  Cs* cs = find_cs(job.cs_seq);
  if (cs == nullptr || cs->state != CsState::kInFlight) return;
  if (cs->external_pending > 0 && --cs->external_pending == 0) finish_cs(*cs, CsState::kCompleted);
}

void HlDevice::account_busy(uint64_t seq, uint64_t completed_ps) {
  const auto found = busy_pending_.find(seq);
  if (found == busy_pending_.end()) return;
  found->second.second = std::max<uint64_t>(completed_ps, 1);
  // In submission order, once every earlier submission is done: exact union of the intervals.
  while (!busy_pending_.empty() && busy_pending_.begin()->second.second != 0) {
    const auto [submitted, completed] = busy_pending_.begin()->second;
    const uint64_t from = std::max(submitted, busy_covered_ps_);
    if (completed > from) busy_.busy_ns += (completed - from) / 1000;
    busy_covered_ps_ = std::max(busy_covered_ps_, completed);
    busy_.last_completion_ns = busy_covered_ps_ / 1000;
    ++busy_.completed_cs;
    busy_pending_.erase(busy_pending_.begin());
  }
}

void HlDevice::finish_cs(Cs& cs, CsState state) {
  cs.state = state;
  cs.completed_ps = entry_completion_ps_ != 0 ? std::min(entry_completion_ps_, link_.host_now_ps()) : link_.host_now_ps();
  // As hl_irq_handler_cq stamps it on entry: the device was done when its MSI arrived, before the
  // interrupt's latency and handler (host time) passed.
  cs.stamped_ps = entry_msi_ps_ != 0 ? std::min(entry_msi_ps_, cs.completed_ps) : cs.completed_ps;
  if (!cs.kernel) account_busy(cs.seq, cs.stamped_ps);
  if (state == CsState::kCompleted) trace_completion(cs);
  if (state == CsState::kCompleted) {
    // hl_hw_queue_update_ci: internal queues get their slots back when the CS completes.
    for (const auto& [q, n] : cs.internal_jobs) {
      HwQueue& hq = queues_[q];
      hq.ci = (hq.ci + n) & (2 * hq.length - 1);
    }
  }
  const bool was_head = !in_flight_.empty() && in_flight_.front() == cs.seq;
  in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), cs.seq), in_flight_.end());
  if (was_head && !in_flight_.empty()) {
    // The TDR is re-armed for the new oldest CS.
    if (Cs* next = find_cs(in_flight_.front())) next->head_since_ps = link_.host_now_ps();
  }
  // Bounded history: outcomes of the last max_pending_cs user CSs.
  if (!cs.kernel && next_seq_ > options_.max_pending_cs) {
    const uint64_t oldest_kept = next_seq_ - options_.max_pending_cs;
    for (auto it = cs_.begin(); it != cs_.end() && it->first < oldest_kept;) {
      it = it->second.state == CsState::kInFlight ? std::next(it) : cs_.erase(it);
    }
  }
}

HlDevice::Cs* HlDevice::find_cs(uint64_t seq) {
  auto it = cs_.find(seq);
  return it == cs_.end() ? nullptr : &it->second;
}

HlDevice::Cs* HlDevice::oldest_in_flight() { return in_flight_.empty() ? nullptr : find_cs(in_flight_.front()); }

uint64_t HlDevice::tdr_deadline_ps() {
  Cs* head = oldest_in_flight();
  if (head == nullptr) return UINT64_MAX;
  return head->head_since_ps + head->timeout_ps;
}

void HlDevice::run_timers() {
  if (!reset_request_.empty() && status_ == HL_DEVICE_STATUS_OPERATIONAL) {
    const std::string reason = reset_request_;
    reset_request_.clear();
    hard_reset(reason, nullptr);
  }
  if (status_ == HL_DEVICE_STATUS_OPERATIONAL && link_.host_now_ps() >= next_heartbeat_ps_) {
    next_heartbeat_ps_ = link_.host_now_ps() + options_.heartbeat_period_us * 1000000;
    if (!send_heartbeat()) {
      logf("Device heartbeat failed!");
      hard_reset("heartbeat", nullptr);
    }
  }
  check_tdr();
}

void HlDevice::check_tdr() {
  Cs* head = oldest_in_flight();
  if (head == nullptr || link_.host_now_ps() < tdr_deadline_ps()) return;
  std::ostringstream msg;
  msg << "Command submission " << head->seq << " has not finished in " << head->timeout_ps / 1000000 << " us!";
  logf(msg.str());
  hard_reset("TDR", head);
}

void HlDevice::wait_event(uint64_t until_ps, LockWhileWaiting hold) {
  // An interrupt already due is the event: the caller re-checks what it waits for. (Blocking for
  // the next one instead could wait for an interrupt that never comes, until the next deadline.)
  if (poll_interrupts()) {
    run_timers();
    return;
  }
  run_timers();
  const uint64_t now = link_.host_now_ps();
  uint64_t target = std::min(until_ps, tdr_deadline_ps());
  if (status_ == HL_DEVICE_STATUS_OPERATIONAL) target = std::min(target, next_heartbeat_ps_);
  if (target == UINT64_MAX) return;   // nothing can happen: no CS in flight, no deadline
  if (target > now) {
    // Sleep until an interrupt is there (taking nothing); it is taken and handled below. With kNo
    // the caller holds the lock exactly once (an ioctl's) and lets it go meanwhile: other threads
    // use the driver while this one sleeps, every sleeper wakes on the interrupt, and whoever gets
    // the lock first handles it.
    if (hold == LockWhileWaiting::kNo) mutex_.unlock();
    try {
      link_.await_interrupt(target - now);
    } catch (...) {
      if (hold == LockWhileWaiting::kNo) mutex_.lock();
      throw;
    }
    if (hold == LockWhileWaiting::kNo) mutex_.lock();
  }
  poll_interrupts();
  run_timers();
}

// ---------------------------------------------------------------------------------------------
// Hard reset
// ---------------------------------------------------------------------------------------------

void HlDevice::hard_reset(const std::string& reason, Cs* timed_out) {
  status_ = HL_DEVICE_STATUS_IN_RESET;
  logf("hard reset (" + reason + ")");
  // hl_cs_rollback_all: the timed-out CS reports TIMEDOUT, everything else in flight ABORTED.
  const uint64_t timed_out_seq = timed_out != nullptr ? timed_out->seq : 0;
  const std::deque<uint64_t> flight = in_flight_;
  for (uint64_t seq : flight) {
    if (Cs* cs = find_cs(seq)) finish_cs(*cs, seq == timed_out_seq ? CsState::kTimedOut : CsState::kAborted);
  }
  in_flight_.clear();
  // gaudi_hw_fini: the device CPU is asked to halt (it stops serving its queues), then the
  // modelled reset line puts the QMANs, sync managers, DMA cores and the device CPU back to
  // their reset state; the firmware boots again.
  halt_device_cpu();
  link_.reset_card();
  // Anything the device had already signalled is stale now.
  while (link_.wait_for_interrupt(0)) {
  }
  for (HwQueue& hq : queues_) {
    if (!hq.exists) continue;
    for (Job& job : hq.shadow) {
      if (job.patched_bytes != 0) host_release(job.patched_address, job.patched_bytes);
      job = Job{};
    }
  }
  std::fill(qman_error_words_.begin(), qman_error_words_.end(), 0);
  // The firmware boots again: wait for it, then the CPU queue / event queue handshake.
  if (!init_cpu_queues()) {
    status_ = HL_DEVICE_STATUS_MALFUNCTION;
    logf("hard reset failed, the device CPU is not responding");
    return;
  }
  init_mmu();      // hop0 and enable again; the tables in DRAM (and the user's mappings) survive
  init_queues();   // PI/CI to 0, CQs cleared, QMANs and DMA cores re-programmed
  if (open_) prepare_mmu_asid(kUserAsid);
  ++hard_reset_cnt_;
  status_ = HL_DEVICE_STATUS_OPERATIONAL;
  if (options_.heartbeat_period_us != 0) next_heartbeat_ps_ = link_.host_now_ps() + options_.heartbeat_period_us * 1000000;
  logf("hard reset done, device is operational");
}

// ---------------------------------------------------------------------------------------------
// WAIT_CS
// ---------------------------------------------------------------------------------------------

int HlDevice::do_wait_cs(hl_wait_cs_args& args) {
  std::lock_guard<DriverLock> lock(mutex_);
  const HostSpan span(*this, "WAIT_CS");
  link_.charge(DriverWork::kIoctl);
  if (!open_) return -EBADF;
  const hl_wait_cs_in in = args.in;
  if (in.flags != 0) return -EINVAL;   // multi-CS and interrupt waits are not implemented
  poll_interrupts();
  run_timers();
  args.out = hl_wait_cs_out{};
  if (in.seq == 0 || in.seq >= next_seq_) {
    logf("Can't wait on CS " + std::to_string(in.seq) + " because current CS is at seq " + std::to_string(next_seq_ - 1));
    return -EINVAL;
  }
  if (find_cs(in.seq) == nullptr) {
    // Older than the kept history: it completed long ago.
    args.out.status = HL_WAIT_CS_STATUS_COMPLETED;
    args.out.flags = HL_WAIT_CS_STATUS_FLAG_GONE;
    return 0;
  }
  const uint64_t start = link_.host_now_ps();
  const uint64_t deadline = in.timeout_us > (UINT64_MAX - start) / 1000000 ? UINT64_MAX : start + in.timeout_us * 1000000;
  while (true) {
    Cs* cs = find_cs(in.seq);
    if (cs == nullptr) {
      args.out.status = HL_WAIT_CS_STATUS_COMPLETED;
      args.out.flags = HL_WAIT_CS_STATUS_FLAG_GONE;
      return 0;
    }
    switch (cs->state) {
      case CsState::kCompleted:
        args.out.status = HL_WAIT_CS_STATUS_COMPLETED;
        args.out.flags = HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD;
        args.out.timestamp_nsec = static_cast<int64_t>(cs->stamped_ps / 1000);
        trace_waited(in.seq);
        return 0;
      case CsState::kTimedOut:
        args.out.status = HL_WAIT_CS_STATUS_TIMEDOUT;
        return -ETIMEDOUT;
      case CsState::kAborted:
        args.out.status = HL_WAIT_CS_STATUS_ABORTED;
        return -EIO;
      case CsState::kInFlight:
        break;
    }
    if (in.timeout_us == 0 || link_.host_now_ps() >= deadline) {
      args.out.status = HL_WAIT_CS_STATUS_BUSY;
      return 0;
    }
    wait_event(deadline, LockWhileWaiting::kNo);
    if (!open_) return -EBADF;   // closed by another thread meanwhile
  }
}

// ---------------------------------------------------------------------------------------------
// Convenience wrappers
// ---------------------------------------------------------------------------------------------

}  // namespace hpusim::driver
