// The device CPU of a Gaudi 1 class card running its firmware, as an SC_THREAD program.
//
// The firmware reaches hardware only through its bus-master port (bound as a fabric master by
// whoever assembles the card) and through the registers it owns: the CPU_IF queue registers
// (CPU primary-queue doorbell, PQ / CQ / EQ base and length, EQ read offset, queue-init status),
// the GIC SETSPI register that the driver and the QMAN error messages write, and the
// PSOC_GLOBAL_CONF boot-status / KMD-message / software-reset registers. The register callbacks
// only record the write and wake the program; the program reads its registers and the host
// rings over the bus, executes, and writes results, event-queue entries and MSIs over the bus.
//
// The program: boot (zero the firmware's memory region, CPU_BOOT_STATUS = SRAM_AVAIL), then serve:
// the queue-init handshake (QUEUE_INIT READY_FOR_CP -> READY_FOR_HOST), CPU-queue packets
// (cpucp_packet: TEST, INFO_GET, TEMPERATURE/FREQUENCY_GET, PCI access enable/disable, ...),
// the event queue (QMAN errors from the GIC, report_event() from other models, periodic
// heartbeat events), and the halt request of the hard-reset handshake (KMD_MSG_TO_CPU = GOTO_WFE
// -> CPU_BOOT_STATUS = IN_WFE, queues no longer served). reset() (or a write to SW_ALL_RST) is
// the modelled hard reset after which the firmware boots again. See firmware/README.md.
#pragma once

#include <systemc>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "card_preset.pb.h"
#include "arch/cpucp/cpucp.h"
#include "hw/cfg/cfg_space.h"
#include "hw/common/bus_master.h"
#include "hw/common/ports.h"

namespace hpusim::firmware {
// The driver <-> firmware interface (arch/cpucp) is this namespace's vocabulary.
using namespace fw_if;

using hw::Picoseconds;

struct DeviceCpuConfig {
  uint64_t cfg_base = 0x7FFC000000ull;   // device address of the CFG window
  Picoseconds cycle_ps = 1000;           // device CPU clock (clocks.cpu_mhz)
  uint32_t boot_cycles = 20000;          // boot ROM / firmware start-up before memory init
  uint32_t packet_cycles = 2000;         // firmware work per CPU-queue packet
  uint32_t event_cycles = 500;           // firmware work per event-queue entry
  uint32_t interrupt_cycles = 200;       // taking one GIC interrupt
  uint64_t init_region_base = 0;         // zeroed at boot (the firmware's DRAM reservation)
  uint32_t init_region_bytes = 4096;
  uint32_t write_chunk_bytes = 128;      // bus write granule for memory init and INFO_GET
  unsigned eq_msi_vector = kEventQueueMsiVector;
  unsigned cpu_queue_msi_vector = 9;     // raised after a packet whose BD ctl has kBdCtlMsiRequest
  Picoseconds heartbeat_period_ps = 0;   // periodic HEARTBEAT events; 0 = off
  size_t max_pending_events = 256;       // events waiting for EQ space; more are dropped
  int32_t temperature_millicelsius = 45000;
  std::vector<uint32_t> pll_mhz;         // FREQUENCY_GET by pll_index
  cpucp::DeviceInfo info;
};

// The configuration for a card preset (clocks, DRAM size, card name).
DeviceCpuConfig device_cpu_config_from(const preset::Card& card);

// hpusim extension of the BD ctl word of a CPU-queue entry: the driver asks for an MSI
// (cpu_queue_msi_vector) once the packet's fence is written. The real driver polls the fence.
inline constexpr uint32_t kBdCtlMsiRequest = 1u << 31;

struct DeviceCpuStats {
  uint64_t boots = 0;
  uint64_t packets = 0;
  uint64_t invalid_packets = 0;
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;
  uint64_t msis = 0;
  uint64_t interrupts = 0;
  uint64_t unknown_spis = 0;
  uint64_t bus_errors = 0;
};

class DeviceCpu : public sc_core::sc_module, public hw::InterruptTarget {
 public:
  DeviceCpu(sc_core::sc_module_name name, const DeviceCpuConfig& config);

  // The firmware's only way to memory and registers; bind as a fabric master.
  hw::BusMaster& bus() { return bus_; }

  // Claims the firmware's registers at their CFG offsets (CPU_IF queue registers, GIC SETSPI,
  // PSOC CPU_BOOT_STATUS / KMD_MSG_TO_CPU / SW_ALL_RST). `cfg` must cover config.cfg_base.
  void attach_registers(hw::CfgSpace& cfg);

  // An interrupt line into the GIC (a block that signals an SPI by wire rather than by a message
  // write to GICD_SETSPI_NSR, e.g. the MMU's page-fault interrupt). Same effect as that write.
  void raise_spi(uint32_t spi, Picoseconds at_ps);

  // Another model (MMU, DMA, ...) reports an event: queued and written to the event queue as
  // {type, payload} when the queue is up. Call on the simulation thread.
  void report_event(uint32_t type, const std::array<uint64_t, eq::kDataWords>& payload = {});

  // The modelled hard reset: registers back to reset values, pending work dropped, the firmware
  // boots again. Call on the simulation thread.
  void reset();
  // Called (from the firmware's reset process) when the driver writes SW_ALL_RST, before the
  // firmware's own reset(): the owner resets the rest of the card here.
  // SW_ALL_RST resets the rest of the card through this line (the card binds it).
  hw::ResetLine& reset_out() { return reset_out_; }
  // The GIC's interrupt inputs: an engine's line raises SPI `line`.
  void raise_interrupt(uint32_t line, Picoseconds at) override { raise_spi(line, at); }

  void set_heartbeat_period(Picoseconds period_ps);

  const DeviceCpuStats& stats() const { return stats_; }
  uint32_t boot_status() const { return psoc_.boot_status; }
  bool serving_queues() const { return queues_up_; }

 private:
  struct Restart {};   // thrown inside the firmware thread when a reset interrupts it

  // CPU_IF registers (block at cpu_if::kPfPqPi .. kQueueInit).
  class CpuIfRegisters : public hw::RegisterBlock {
   public:
    explicit CpuIfRegisters(DeviceCpu& cpu) : cpu_(cpu) {}
    bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
    bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;
    void reset() { regs.fill(0); }
    std::array<uint32_t, 13> regs{};   // word index = (cfg offset - kPfPqPi) / 4
   private:
    DeviceCpu& cpu_;
  };
  // GICD_SETSPI_NSR: records the SPI numbers written.
  class GicRegisters : public hw::RegisterBlock {
   public:
    explicit GicRegisters(DeviceCpu& cpu) : cpu_(cpu) {}
    bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
    bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;
    std::deque<uint32_t> pending;
   private:
    DeviceCpu& cpu_;
  };
  // PSOC_GLOBAL_CONF CPU_BOOT_STATUS and KMD_MSG_TO_CPU (8 bytes), SW_ALL_RST (4 bytes).
  class PsocRegisters : public hw::RegisterBlock {
   public:
    explicit PsocRegisters(DeviceCpu& cpu) : cpu_(cpu) {}
    bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
    bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;
    uint32_t boot_status = boot::kStatusNa;
    uint32_t kmd_msg = boot::kKmdMsgNa;
   private:
    DeviceCpu& cpu_;
  };
  class ResetRegister : public hw::RegisterBlock {
   public:
    explicit ResetRegister(DeviceCpu& cpu) : cpu_(cpu) {}
    bool read_register(uint64_t offset, uint32_t& value, Picoseconds at_ps) override;
    bool write_register(uint64_t offset, uint32_t value, Picoseconds at_ps) override;
   private:
    DeviceCpu& cpu_;
  };

  struct Event {
    uint32_t type;
    std::array<uint64_t, eq::kDataWords> data;
  };

  // Register side: record and wake.
  void wake(Picoseconds at_ps);

  // The firmware program (SC_THREAD) and the reset controller (SC_THREAD).
  void firmware_main();
  void reset_controller();

  void boot();
  void serve();
  void halt();
  void take_interrupts();
  void init_queues();
  void serve_cpu_queue();
  void execute_packet(uint64_t bd_address);
  void drain_events();
  void write_event(const Event& event);
  void raise_msi(unsigned vector);

  // Firmware primitives: every one is a bus access or CPU time, and checks for a reset after.
  uint32_t read_reg(uint64_t cfg_offset);
  void write_reg(uint64_t cfg_offset, uint32_t value);
  bool read_mem(uint64_t address, void* data, uint32_t length);
  bool write_mem(uint64_t address, const void* data, uint32_t length);
  void spend(uint64_t cycles);
  void checkpoint();

  DeviceCpuConfig config_;
  hw::BusMaster bus_;
  CpuIfRegisters cpu_if_;
  GicRegisters gic_;
  PsocRegisters psoc_;
  ResetRegister sw_reset_;
  hw::ResetLine reset_out_{"sw_all_rst"};

  sc_core::sc_event wake_;
  sc_core::sc_event reset_request_;
  bool dirty_ = false;            // something was recorded since the program last looked
  uint64_t generation_ = 0;       // bumped by reset()
  uint64_t running_generation_ = 0;

  // Firmware state (the firmware's own RAM).
  bool queues_up_ = false;
  bool pci_access_ = true;
  uint64_t pq_base_ = 0, eq_base_ = 0;
  uint32_t pq_entries_ = 0, eq_entries_ = 0;
  uint32_t pq_ci_ = 0;            // 0 .. 2 * pq_entries_ - 1, like the driver's PI
  uint32_t eq_pi_ = 0;            // slot of the next entry
  uint32_t eq_index_ = 0;         // running EQ_CTL_INDEX of the last entry written
  std::deque<Event> events_;
  Picoseconds next_heartbeat_ps_ = 0;
  uint64_t heartbeats_ = 0;
  DeviceCpuStats stats_;
};

}  // namespace hpusim::firmware
