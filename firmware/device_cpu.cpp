#include "firmware/device_cpu.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "arch/regs/gaudi1_map.h"

namespace hpusim::firmware {
namespace {

using regs::cpu_if::kPfPqPi;

constexpr uint64_t kCpuIfBytes = regs::cpu_if::kQueueInit + 4 - kPfPqPi;

constexpr unsigned cpu_if_word(uint64_t cfg_offset) { return static_cast<unsigned>((cfg_offset - kPfPqPi) / 4); }

uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) { return get32(p) | (uint64_t{get32(p + 4)} << 32); }
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
bool power_of_two(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

DeviceCpuConfig device_cpu_config_from(const preset::Card& card) {
  DeviceCpuConfig config;
  const auto& map = card.memory_map();
  if (map.has_cfg_base()) config.cfg_base = map.cfg_base();
  const auto& clocks = card.clocks();
  if (clocks.cpu_mhz() != 0) config.cycle_ps = hw::period_ps_from_mhz(clocks.cpu_mhz());
  config.init_region_base = map.dram_base();
  if (card.has_firmware()) {
    config.boot_cycles = card.firmware().boot_cycles();
    config.packet_cycles = card.firmware().packet_cycles();
    config.event_cycles = card.firmware().event_cycles();
    config.interrupt_cycles = card.firmware().interrupt_cycles();
  }
  // enum gaudi_pll_index: CPU, PCI, SRAM, HBM, NIC, DMA, MESH, MME, TPC, IF.
  config.pll_mhz = {clocks.cpu_mhz(), 0, card.sram().clock_mhz(), 0, clocks.nic_mhz(), clocks.dma_mhz(),
                    clocks.fabric_mhz(), clocks.mme_mhz(), clocks.tpc_mhz(), clocks.fabric_mhz()};
  std::string name = card.name().empty() ? "HL205" : card.name();
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  config.info.card_name = name;
  config.info.card_generation = card.generation() == 0 ? 1 : card.generation();
  config.info.num_sensors = 1;
  return config;
}

// ---------------------------------------------------------------------------------------------
// Register blocks: record, wake the program.
// ---------------------------------------------------------------------------------------------

bool DeviceCpu::CpuIfRegisters::read_register(uint64_t offset, uint32_t& value, Picoseconds) {
  if (offset % 4 != 0 || offset / 4 >= regs.size()) return false;
  value = regs[offset / 4];
  return true;
}

bool DeviceCpu::CpuIfRegisters::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (offset % 4 != 0 || offset / 4 >= regs.size()) return false;
  regs[offset / 4] = value;
  cpu_.wake(at_ps);
  return true;
}

void DeviceCpu::raise_spi(uint32_t spi, Picoseconds at_ps) { gic_.write_register(0, spi, at_ps); }

bool DeviceCpu::GicRegisters::read_register(uint64_t offset, uint32_t& value, Picoseconds) {
  value = 0;   // SETSPI is write-only
  return offset == 0;
}

bool DeviceCpu::GicRegisters::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (offset != 0) return false;
  pending.push_back(value);
  cpu_.wake(at_ps);
  return true;
}

bool DeviceCpu::PsocRegisters::read_register(uint64_t offset, uint32_t& value, Picoseconds) {
  if (offset == 0) value = boot_status;
  else if (offset == 4) value = kmd_msg;
  else return false;
  return true;
}

bool DeviceCpu::PsocRegisters::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (offset == 0) boot_status = value;
  else if (offset == 4) kmd_msg = value;
  else return false;
  cpu_.wake(at_ps);
  return true;
}

bool DeviceCpu::ResetRegister::read_register(uint64_t offset, uint32_t& value, Picoseconds) {
  value = 0;
  return offset == 0;
}

bool DeviceCpu::ResetRegister::write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) {
  if (offset != 0) return false;
  if (value & 1u) cpu_.reset_request_.notify(hw::delay_until(at_ps));
  return true;
}

// ---------------------------------------------------------------------------------------------

DeviceCpu::DeviceCpu(sc_core::sc_module_name name, const DeviceCpuConfig& config)
    : sc_module(name), config_(config), bus_("bus"), cpu_if_(*this), gic_(*this), psoc_(*this), sw_reset_(*this) {
  SC_HAS_PROCESS(DeviceCpu);
  SC_THREAD(firmware_main);
  SC_THREAD(reset_controller);
}

void DeviceCpu::attach_registers(hw::CfgSpace& cfg) {
  const std::string base = basename();
  cfg.attach(base + ".CPU_IF", config_.cfg_base + kPfPqPi, kCpuIfBytes, cpu_if_);
  cfg.attach(base + ".GICD_SETSPI_NSR", config_.cfg_base + regs::gic::kGicdSetspiNsr, 4, gic_);
  cfg.attach(base + ".PSOC_CPU_BOOT_STATUS", config_.cfg_base + boot::kCpuBootStatus, 8, psoc_);
  cfg.attach(base + ".PSOC_SW_ALL_RST", config_.cfg_base + boot::kSwAllRst, 4, sw_reset_);
}

void DeviceCpu::wake(Picoseconds at_ps) {
  dirty_ = true;
  wake_.notify(hw::delay_until(at_ps));
}

void DeviceCpu::report_event(uint32_t type, const std::array<uint64_t, eq::kDataWords>& payload) {
  if (events_.size() >= config_.max_pending_events) {
    ++stats_.events_dropped;
    return;
  }
  events_.push_back({type, payload});
  dirty_ = true;
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void DeviceCpu::reset() {
  cpu_if_.reset();
  gic_.pending.clear();
  psoc_.boot_status = boot::kStatusNa;
  psoc_.kmd_msg = boot::kKmdMsgNa;
  events_.clear();
  queues_up_ = false;
  ++generation_;
  dirty_ = true;
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void DeviceCpu::set_heartbeat_period(Picoseconds period_ps) {
  config_.heartbeat_period_ps = period_ps;
  next_heartbeat_ps_ = hw::now_ps() + period_ps;
  dirty_ = true;
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void DeviceCpu::reset_controller() {
  for (;;) {
    sc_core::wait(reset_request_);
    reset_out_.assert_reset();
    reset();
  }
}

// ---------------------------------------------------------------------------------------------
// Firmware primitives
// ---------------------------------------------------------------------------------------------

void DeviceCpu::checkpoint() {
  if (generation_ != running_generation_) throw Restart{};
}

void DeviceCpu::spend(uint64_t cycles) {
  if (cycles != 0) sc_core::wait(hw::ps_to_time(cycles * config_.cycle_ps));
  checkpoint();
}

uint32_t DeviceCpu::read_reg(uint64_t cfg_offset) {
  uint32_t value = 0;
  if (bus_.read(config_.cfg_base + cfg_offset, &value, 4) != tlm::TLM_OK_RESPONSE) {
    ++stats_.bus_errors;
    value = 0;
  }
  checkpoint();
  return value;
}

void DeviceCpu::write_reg(uint64_t cfg_offset, uint32_t value) {
  if (bus_.write32(config_.cfg_base + cfg_offset, value) != tlm::TLM_OK_RESPONSE) ++stats_.bus_errors;
  checkpoint();
}

bool DeviceCpu::read_mem(uint64_t address, void* data, uint32_t length) {
  const bool ok = bus_.read(address, data, length) == tlm::TLM_OK_RESPONSE;
  if (!ok) ++stats_.bus_errors;
  checkpoint();
  return ok;
}

bool DeviceCpu::write_mem(uint64_t address, const void* data, uint32_t length) {
  // Chunks posted back to back, then all awaited: the data is in memory when this returns.
  const auto* bytes = static_cast<const uint8_t*>(data);
  const uint32_t chunk = std::max<uint32_t>(config_.write_chunk_bytes, 4);
  for (uint32_t done = 0; done < length;) {
    const uint32_t n = std::min(chunk, length - done);
    bus_.post_write(address + done, bytes + done, n);
    done += n;
  }
  const uint32_t failures = bus_.wait_posted();
  stats_.bus_errors += failures;
  checkpoint();
  return failures == 0;
}

void DeviceCpu::raise_msi(unsigned vector) {
  if (vector >= regs::pcie::kMsiEntries) return;
  write_reg(regs::pcie::msi_intr(vector), 1);
  ++stats_.msis;
}

// ---------------------------------------------------------------------------------------------
// The firmware program
// ---------------------------------------------------------------------------------------------

void DeviceCpu::firmware_main() {
  for (;;) {
    running_generation_ = generation_;
    try {
      boot();
      serve();   // returns on a halt request
      halt();    // never returns: waits for the hard reset
    } catch (const Restart&) {
      // A hard reset interrupted the program: boot again.
    }
  }
}

void DeviceCpu::boot() {
  queues_up_ = false;
  pci_access_ = true;
  pq_ci_ = eq_pi_ = eq_index_ = 0;
  heartbeats_ = 0;
  ++stats_.boots;
  write_reg(boot::kCpuBootStatus, boot::kStatusInPreboot);
  spend(config_.boot_cycles);
  // Memory init: the firmware's own region.
  if (config_.init_region_bytes != 0) {
    std::vector<uint8_t> zeros(config_.init_region_bytes, 0);
    write_mem(config_.init_region_base, zeros.data(), config_.init_region_bytes);
  }
  write_reg(boot::kCpuBootStatus, boot::kStatusSramAvail);
  next_heartbeat_ps_ = hw::now_ps() + config_.heartbeat_period_ps;
}

void DeviceCpu::serve() {
  for (;;) {
    dirty_ = false;
    take_interrupts();
    if (read_reg(boot::kKmdMsgToCpu) == boot::kKmdMsgGotoWfe) return;
    if (read_reg(regs::cpu_if::kQueueInit) == boot::kPqInitReadyForCp) init_queues();
    if (queues_up_) {
      serve_cpu_queue();
      if (config_.heartbeat_period_ps != 0 && hw::now_ps() >= next_heartbeat_ps_) {
        next_heartbeat_ps_ = hw::now_ps() + config_.heartbeat_period_ps;
        report_event(event::kHeartbeat, {++heartbeats_, hw::now_ps() / 1000});
      }
      drain_events();
    }
    if (!dirty_) {
      if (queues_up_ && config_.heartbeat_period_ps != 0) {
        sc_core::wait(hw::delay_until(next_heartbeat_ps_), wake_);
      } else {
        sc_core::wait(wake_);
      }
    }
    checkpoint();
  }
}

void DeviceCpu::halt() {
  // Acknowledge the halt request, stop serving queues, wait in WFE for the hard reset.
  queues_up_ = false;
  write_reg(boot::kCpuBootStatus, boot::kStatusInWfe);
  for (;;) {
    sc_core::wait(wake_);
    checkpoint();
  }
}

void DeviceCpu::take_interrupts() {
  while (!gic_.pending.empty()) {
    const uint32_t spi = gic_.pending.front();
    gic_.pending.pop_front();
    ++stats_.interrupts;
    spend(config_.interrupt_cycles);
    const SpiMeaning meaning = decode_spi(spi);
    switch (meaning.kind) {
      case SpiKind::kPiUpdate:      // the registers are scanned right after
      case SpiKind::kHaltMachine:
        break;
      case SpiKind::kQmanError:
      case SpiKind::kHwError: {
        std::array<uint64_t, eq::kDataWords> data{};
        data[0] = spi;
        data[1] = static_cast<uint64_t>(meaning.engine_id);
        report_event(meaning.event_type, data);
        break;
      }
      case SpiKind::kUnknown:
        ++stats_.unknown_spis;
        break;
    }
  }
}

void DeviceCpu::init_queues() {
  using namespace regs::cpu_if;
  const uint64_t pq = read_reg(kPqBaseAddrLow) | (uint64_t{read_reg(kPqBaseAddrHigh)} << 32);
  const uint32_t pq_bytes = read_reg(kPqLength);
  const uint64_t eq = read_reg(kEqBaseAddrLow) | (uint64_t{read_reg(kEqBaseAddrHigh)} << 32);
  const uint32_t eq_bytes = read_reg(kEqLength);
  if (!power_of_two(pq_bytes) || pq_bytes < kPqEntryBytes || !power_of_two(eq_bytes) || eq_bytes < 2 * eq::kEntryBytes) {
    write_reg(kQueueInit, boot::kPqInitLenNotPowerOfTwo);
    return;
  }
  if (pq == 0 || eq == 0) {
    write_reg(kQueueInit, boot::kPqInitIllegalQueueAddress);
    return;
  }
  pq_base_ = pq;
  eq_base_ = eq;
  pq_entries_ = pq_bytes / kPqEntryBytes;
  eq_entries_ = eq_bytes / eq::kEntryBytes;
  pq_ci_ = 0;
  eq_pi_ = 0;
  eq_index_ = 0;
  pci_access_ = true;
  queues_up_ = true;
  next_heartbeat_ps_ = hw::now_ps() + config_.heartbeat_period_ps;
  write_reg(kQueueInit, boot::kPqInitReadyForHost);
}

void DeviceCpu::serve_cpu_queue() {
  const uint32_t wrap = 2 * pq_entries_;
  const uint32_t pi = read_reg(regs::cpu_if::kPfPqPi) % wrap;
  while (queues_up_ && pq_ci_ != pi) {
    execute_packet(pq_base_ + uint64_t{pq_ci_ % pq_entries_} * kPqEntryBytes);
    pq_ci_ = (pq_ci_ + 1) % wrap;
  }
}

void DeviceCpu::execute_packet(uint64_t bd_address) {
  uint8_t bd[kPqEntryBytes];
  if (!read_mem(bd_address, bd, sizeof bd)) {
    ++stats_.invalid_packets;
    return;
  }
  const uint64_t packet_address = get64(bd);
  const uint32_t length = get32(bd + 8);
  const uint32_t bd_ctl = get32(bd + 12);
  spend(config_.packet_cycles);
  ++stats_.packets;

  uint8_t raw[cpucp::kPacketBytes];
  if (!read_mem(packet_address, raw, sizeof raw)) {
    ++stats_.invalid_packets;
    return;   // nowhere to answer
  }
  cpucp::Packet packet = cpucp::decode(raw);
  cpucp::Rc rc = cpucp::Rc::kSuccess;
  uint64_t result = 0;
  const uint32_t opcode = cpucp::ctl_opcode(packet.ctl);
  if (length < cpucp::kPacketBytes) {
    rc = cpucp::Rc::kInvalid;
  } else {
    switch (static_cast<cpucp::Opcode>(opcode)) {
      case cpucp::Opcode::kTest:
        result = packet.value;
        break;
      case cpucp::Opcode::kInfoGet: {
        const std::vector<uint8_t> block = cpucp::build_info_block(config_.info);
        uint32_t n = static_cast<uint32_t>(block.size());
        if (packet.index != 0) n = std::min(n, packet.index);   // data_max_size
        if (packet.value == 0 || !write_mem(packet.value, block.data(), n)) rc = cpucp::Rc::kFault;
        result = n;
        break;
      }
      case cpucp::Opcode::kTemperatureGet:
        result = static_cast<uint64_t>(static_cast<int64_t>(config_.temperature_millicelsius));
        break;
      case cpucp::Opcode::kFrequencyGet:
      case cpucp::Opcode::kFrequencyCurrGet:
        if (packet.index < config_.pll_mhz.size()) result = uint64_t{config_.pll_mhz[packet.index]} * 1000000ull;
        else rc = cpucp::Rc::kInvalid;
        break;
      case cpucp::Opcode::kDisablePciAccess:
        pci_access_ = false;
        break;
      case cpucp::Opcode::kEnablePciAccess:
        pci_access_ = true;
        break;
      case cpucp::Opcode::kUnmaskRazwiIrq:
        break;
      default:
        rc = cpucp::Rc::kInvalid;
        break;
    }
  }
  if (rc != cpucp::Rc::kSuccess) ++stats_.invalid_packets;

  // Result and ctl (with rc) first, then the fence the driver polls.
  uint8_t answer[12];
  put64(answer, result);
  put32(answer + 8, cpucp::make_ctl(opcode, static_cast<uint32_t>(rc)));
  write_mem(packet_address + cpucp::kValueOffset, answer, sizeof answer);
  uint8_t fence[4];
  put32(fence, cpucp::kFenceValue);
  write_mem(packet_address + cpucp::kFenceOffset, fence, sizeof fence);
  if (bd_ctl & kBdCtlMsiRequest) raise_msi(config_.cpu_queue_msi_vector);
}

void DeviceCpu::drain_events() {
  if (!pci_access_ || events_.empty()) return;
  const uint32_t ci = read_reg(regs::cpu_if::kEqRdOffs) % eq_entries_;
  while (queues_up_ && !events_.empty()) {
    if ((eq_pi_ + 1) % eq_entries_ == ci) return;   // full: wait for EQ_RD_OFFS to move
    const Event event = events_.front();
    events_.pop_front();
    write_event(event);
  }
}

void DeviceCpu::write_event(const Event& event) {
  spend(config_.event_cycles);
  ++eq_index_;
  uint8_t entry[eq::kEntryBytes] = {};
  put32(entry + eq::kCtlOffset, eq::make_ctl(event.type, eq_index_));
  for (uint32_t i = 0; i < eq::kDataWords; ++i) put64(entry + eq::kDataOffset + 8 * i, event.data[i]);
  const uint64_t address = eq_base_ + uint64_t{eq_pi_} * eq::kEntryBytes;
  // Payload first, then the header with the READY bit.
  write_mem(address + eq::kDataOffset, entry + eq::kDataOffset, eq::kEntryBytes - eq::kDataOffset);
  ++stats_.events_written;   // counted when the header (READY) is issued: the host may see it at once
  write_mem(address, entry, eq::kDataOffset);
  eq_pi_ = (eq_pi_ + 1) % eq_entries_;
  raise_msi(config_.eq_msi_vector);
}

}  // namespace hpusim::firmware
