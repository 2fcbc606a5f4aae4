// The driver <-> device-CPU interface of a Gaudi 1 card, as data: the CPU-CP packet placed in the
// CPU primary queue, the event-queue entry, the boot / queue-init status codes, the PSOC
// registers of the boot handshake and the GIC SPI numbers the driver and the QMANs write to
// GICD_SETSPI_NSR. Values follow the public habanalabs headers (cpucp_if.h, hl_boot_if.h,
// gaudi_async_events.h, gaudi_fw_if.h, psoc_global_conf_regs.h and the driver's
// gaudi_irq_map_table); see firmware/README.md. Pure C++, no SystemC.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/regs/gaudi1_map.h"

namespace hpusim::fw_if {

// ---------------------------------------------------------------------------------------------
// CPU-CP packet (struct cpucp_packet, 24 bytes, little-endian)
// ---------------------------------------------------------------------------------------------
namespace cpucp {

inline constexpr uint32_t kPacketBytes = 24;
inline constexpr uint32_t kValueOffset = 0;    // u64 value (SET) / result (GET) / addr (buffers)
inline constexpr uint32_t kCtlOffset = 8;      // u32 ctl: opcode [28:16], rc [15:12]
inline constexpr uint32_t kFenceOffset = 12;   // u32 fence: the device writes kFenceValue when done
inline constexpr uint32_t kIndexOffset = 16;   // u32 index / pll_index / data_max_size / sensor_index+type
inline constexpr uint32_t kReservedOffset = 20;

inline constexpr uint32_t kFenceValue = 0xFE8CE7A5;   // CPUCP_PACKET_FENCE_VAL
inline constexpr unsigned kCtlRcShift = 12;
inline constexpr uint32_t kCtlRcMask = 0x0000F000;
inline constexpr unsigned kCtlOpcodeShift = 16;
inline constexpr uint32_t kCtlOpcodeMask = 0x1FFF0000;

// enum cpucp_packet_id (the subset this firmware serves; every other opcode answers kInvalid).
enum class Opcode : uint32_t {
  kDisablePciAccess = 1,
  kEnablePciAccess = 2,
  kTemperatureGet = 3,
  kFrequencyGet = 10,
  kInfoGet = 14,
  kUnmaskRazwiIrq = 16,
  kTest = 18,
  kFrequencyCurrGet = 19,
};

// enum cpucp_packet_rc
enum class Rc : uint32_t { kSuccess = 0, kInvalid = 1, kFault = 2 };

constexpr uint32_t make_ctl(uint32_t opcode, uint32_t rc = 0) {
  return ((opcode << kCtlOpcodeShift) & kCtlOpcodeMask) | ((rc << kCtlRcShift) & kCtlRcMask);
}
constexpr uint32_t ctl_opcode(uint32_t ctl) { return (ctl & kCtlOpcodeMask) >> kCtlOpcodeShift; }
constexpr uint32_t ctl_rc(uint32_t ctl) { return (ctl & kCtlRcMask) >> kCtlRcShift; }

struct Packet {
  uint64_t value = 0;
  uint32_t ctl = 0;
  uint32_t fence = 0;
  uint32_t index = 0;
  uint32_t reserved = 0;
};
std::array<uint8_t, kPacketBytes> encode(const Packet& packet);
Packet decode(const uint8_t* bytes);   // reads kPacketBytes

// struct cpucp_info (1616 bytes). Offsets of the fields this firmware fills.
namespace info {
inline constexpr uint32_t kMaxSensors = 128;          // struct cpucp_sensor {u32 type; u32 flags;}
inline constexpr uint32_t kVersionLen = 128;
inline constexpr uint32_t kCardNameLen = 16;
inline constexpr uint32_t kSensors = 0;
inline constexpr uint32_t kKernelVersion = 1024;
// hpusim's engine parameters in the reserved u32 at 1152 (zero on a real card): the TPC vector
// width in bits (u16) and the output geometries an MME master offers (u8).
inline constexpr uint32_t kTpcVectorBits = 1152;
inline constexpr uint32_t kMmeGeometries = 1154;
inline constexpr uint32_t kCardType = 1156;
inline constexpr uint32_t kCardLocation = 1160;
inline constexpr uint32_t kCpldVersion = 1164;
inline constexpr uint32_t kInfineonVersion = 1168;
inline constexpr uint32_t kFuseVersion = 1172;
inline constexpr uint32_t kThermalVersion = 1300;
inline constexpr uint32_t kCpucpVersion = 1428;
inline constexpr uint32_t kDramSize = 1560;
inline constexpr uint32_t kCardName = 1568;
inline constexpr uint32_t kTpcBinningMask = 1584;        // u64: bit n = TPC n is not there
inline constexpr uint32_t kEdmaBinningMask = 1603;       // u8: bit i = internal DMA channel 2 + i is not there
inline constexpr uint32_t kMmeMasterBinningMask = 1607;  // hpusim (reserved2): bit m = MME master 2m is not there
inline constexpr uint32_t kSecInfo = 1608;
inline constexpr uint32_t kBytes = 1616;
// hpusim's extension after struct cpucp_info: the card's memory map as five u64 (a driver asking for
// kBytes only gets the real struct; a real card's firmware writes kBytes and the driver falls back
// to the ASIC's fixed map).
inline constexpr uint32_t kDramBase = 1616;
inline constexpr uint32_t kDramUserBase = 1624;
inline constexpr uint32_t kSramBase = 1632;
inline constexpr uint32_t kSramBytes = 1640;
inline constexpr uint32_t kSramReservedBytes = 1648;
// The card's generation (u64: 1, 2, 3 for Gaudi, Gaudi2, Gaudi3), which a real driver reads from
// the PCI device ID.
inline constexpr uint32_t kCardGeneration = 1656;
// The NIC ports the card has (u64, bit n: port n), which a real driver learns from the NIC
// firmware's port configuration.
inline constexpr uint32_t kNicPortsMask = 1664;
// The TPC's prefetch-buffer entries (u32), which the kernel library sizes its lookahead by.
inline constexpr uint32_t kTpcPrefetchEntries = 1672;
// The rows of an MME super-tile (u32): how many output rows an MME engine computes per pass over
// its B operand in a large GEMM, which the compiler cuts GEMMs it slices into (0: not given).
inline constexpr uint32_t kMmeSuperTileRows = 1676;
inline constexpr uint32_t kExtendedBytes = 1680;
}  // namespace info

// The card's memory map as a driver needs it. The defaults are Gaudi 1's (DRAM_PHYS_BASE,
// DRAM_BASE_ADDR_USER, SRAM_BASE_ADDR, SRAM_SIZE and the driver's reserved SRAM).
struct MemoryMap {
  uint64_t dram_base = 0;
  uint64_t dram_user_base = 0x20000000;
  uint64_t sram_base = 0x7FF0000000;
  uint64_t sram_bytes = 0x1400000;
  uint64_t sram_reserved_bytes = 0x80;
};

// What INFO_GET reports.
struct DeviceInfo {
  std::string kernel_version = "hpusim-fw";
  std::string cpucp_version = "hpusim-cpucp 0.1";
  std::string card_name = "HL205";
  uint32_t card_type = 0;          // cpucp_card_type_pci
  uint64_t dram_size = 0;
  uint32_t num_sensors = 0;        // sensors[i] = {type = 0 (temperature), flags = 1 (input)}
  // The card's make-up as binning masks over the engine map (arch/regs): set bits are engines the
  // map has and this card does not. A driver learns which engines exist from these.
  uint64_t tpc_binning_mask = 0;
  uint8_t edma_binning_mask = 0;
  uint8_t mme_master_binning_mask = 0;
  uint16_t tpc_vector_bits = 2048;   // hpusim
  uint8_t mme_geometries = 1;        // hpusim
  MemoryMap memory_map;              // hpusim's extension
  uint32_t card_generation = 1;      // hpusim's extension
  uint64_t nic_ports_mask = 0;       // hpusim's extension
  uint32_t tpc_prefetch_entries = 128;   // hpusim's extension
  uint32_t mme_super_tile_rows = 0;      // hpusim's extension
};
// The binning masks of a card with `tpcs` TPCs, `dma_channels` DMA channels (2 PCI + internal)
// and `mme_masters` MME masters.
void set_make_up(DeviceInfo& info, unsigned tpcs, unsigned dma_channels, unsigned mme_masters);
// The INFO_GET answer: struct cpucp_info followed by hpusim's extension (kExtendedBytes).
std::vector<uint8_t> build_info_block(const DeviceInfo& info);
// The memory map of an INFO_GET answer of `bytes` bytes; nullopt when it has no extension.
std::optional<MemoryMap> parse_memory_map(const uint8_t* block, uint64_t bytes);
// The card generation of an INFO_GET answer of `bytes` bytes; nullopt when it has no extension.
std::optional<uint32_t> parse_card_generation(const uint8_t* block, uint64_t bytes);
std::optional<uint64_t> parse_nic_ports_mask(const uint8_t* block, uint64_t bytes);
std::optional<uint32_t> parse_tpc_prefetch_entries(const uint8_t* block, uint64_t bytes);
std::optional<uint32_t> parse_mme_super_tile_rows(const uint8_t* block, uint64_t bytes);

}  // namespace cpucp

// ---------------------------------------------------------------------------------------------
// Event queue entry (struct hl_eq_entry, 64 bytes)
// ---------------------------------------------------------------------------------------------
namespace eq {

inline constexpr uint32_t kEntryBytes = 64;    // hdr {u32 reserved; u32 ctl;} + u64 data[7]
inline constexpr uint32_t kDataWords = 7;
inline constexpr uint32_t kCtlOffset = 4;
inline constexpr uint32_t kDataOffset = 8;
inline constexpr uint32_t kReadyBit = 0x80000000u;       // EQ_CTL_READY
inline constexpr unsigned kEventTypeShift = 16;          // EQ_CTL_EVENT_TYPE [27:16]
inline constexpr uint32_t kEventTypeMask = 0x0FFF0000u;
inline constexpr uint32_t kIndexMask = 0x0000FFFFu;      // EQ_CTL_INDEX [15:0]
inline constexpr uint32_t kDefaultLength = 64;           // HL_EQ_LENGTH entries

constexpr uint32_t make_ctl(uint32_t type, uint32_t index) {
  return kReadyBit | ((type << kEventTypeShift) & kEventTypeMask) | (index & kIndexMask);
}
constexpr uint32_t ctl_type(uint32_t ctl) { return (ctl & kEventTypeMask) >> kEventTypeShift; }
constexpr uint32_t ctl_index(uint32_t ctl) { return ctl & kIndexMask; }
constexpr bool ctl_ready(uint32_t ctl) { return (ctl & kReadyBit) != 0; }

}  // namespace eq

// ---------------------------------------------------------------------------------------------
// Event types (enum gaudi_async_event_id) and the GIC SPI numbers (gaudi_irq_map_table cpu_id)
// ---------------------------------------------------------------------------------------------
namespace event {
inline constexpr uint32_t kHeartbeat = 7;          // EQ_EVENT_HEARTBEAT (generic eq_event_id); periodic
inline constexpr uint32_t kMmuPageFault = 380;     // GAUDI_EVENT_MMU_PAGE_FAULT
inline constexpr uint32_t kMmuWrPerm = 381;        // GAUDI_EVENT_MMU_WR_PERM
inline constexpr uint32_t kRazwiOrAdc = 548;       // GAUDI_EVENT_RAZWI_OR_ADC (illegal access)
inline constexpr uint32_t kTpc0KrnErr = 301;       // TPCn_KRN_ERR = 301 + 6n (tpc_krn_event_to_tpc_id)
inline constexpr uint32_t kTpcKrnErrStride = 6;
inline constexpr uint32_t kTpc0Qm = 572;           // TPC0..7_QM = 572..579
inline constexpr uint32_t kMme0Qm = 581;
inline constexpr uint32_t kMme2Qm = 582;
inline constexpr uint32_t kDma0Qm = 583;           // DMA0..7_QM = 583..590
inline constexpr uint32_t kNic0Qm0 = 594;          // NICn_QM0/1 = 594 + 2n + q
inline constexpr uint32_t kDma0Core = 604;         // DMA0..7_CORE = 604..611
inline constexpr uint32_t kPiUpdate = 635;
inline constexpr uint32_t kHaltMachine = 636;
inline constexpr uint32_t kFwAliveS = 645;
inline constexpr uint32_t kDevResetReq = 646;
inline constexpr uint32_t kPktQueueOutSync = 647;
inline constexpr uint32_t kRazwiOrAdcSw = 662;
// hpusim: an MME job error (bad descriptor, refused operand read or output write) of MME n. The
// real MMEn_WBC_RSP / MMEn_SBAB0_RSP event numbers are not in the reference; these are free.
inline constexpr uint32_t kMme0Err = 670;

// hpusim's extension: events of the engines past Gaudi 1's counts (arch/regs, "Beyond Gaudi 1").
// They start at 830 so that no Gaudi 1 event id plus kSpiOffset lands on one of them (decode_spi
// tries the SPI reading of a value first).
inline constexpr uint32_t kExtTpc8KrnErr = 830;    // TPC8..63_KRN_ERR = 830..885
inline constexpr uint32_t kExtTpc8Qm = 886;        // TPC8..63_QM = 886..941
inline constexpr uint32_t kExtMme4Err = 942;       // MME4..15_ERR = 942..953
inline constexpr uint32_t kExtMmeMaster2Qm = 954;  // the QMs of masters MME4, 6, .. 14 = 954..959
inline constexpr uint32_t kExtDma8Qm = 960;        // DMA8..9_QM = 960..961
inline constexpr uint32_t kExtDma8Core = 962;      // DMA8..9_CORE = 962..963
inline constexpr uint32_t kExtNic10Qm = 964;       // the QMs of NIC engines 10..23 = 964..977
inline constexpr uint32_t kExtEnd = 978;

constexpr uint32_t tpc_qm(unsigned tpc) {
  return tpc < regs::kGaudi1TpcEngines ? kTpc0Qm + tpc : kExtTpc8Qm + (tpc - regs::kGaudi1TpcEngines);
}
constexpr uint32_t tpc_krn_err(unsigned tpc) {
  return tpc < regs::kGaudi1TpcEngines ? kTpc0KrnErr + kTpcKrnErrStride * tpc
                                       : kExtTpc8KrnErr + (tpc - regs::kGaudi1TpcEngines);
}
// The TPC of a TPCn_KRN_ERR event, or -1.
constexpr int tpc_of_krn_err(uint32_t type) {
  if (type >= kExtTpc8KrnErr && type < kExtTpc8KrnErr + regs::kMaxTpcEngines - regs::kGaudi1TpcEngines) {
    return static_cast<int>(regs::kGaudi1TpcEngines + type - kExtTpc8KrnErr);
  }
  return type >= kTpc0KrnErr && type < kTpc0KrnErr + regs::kGaudi1TpcEngines * kTpcKrnErrStride &&
                 (type - kTpc0KrnErr) % kTpcKrnErrStride == 0
             ? static_cast<int>((type - kTpc0KrnErr) / kTpcKrnErrStride)
             : -1;
}
constexpr uint32_t dma_qm(unsigned ch) {
  return ch < regs::kGaudi1DmaChannels ? kDma0Qm + ch : kExtDma8Qm + (ch - regs::kGaudi1DmaChannels);
}
constexpr uint32_t dma_core(unsigned ch) {
  return ch < regs::kGaudi1DmaChannels ? kDma0Core + ch : kExtDma8Core + (ch - regs::kGaudi1DmaChannels);
}
// The DMA channel of a DMAn_CORE event, or -1.
constexpr int dma_of_core_event(uint32_t type) {
  if (type >= kDma0Core && type < kDma0Core + regs::kGaudi1DmaChannels) return static_cast<int>(type - kDma0Core);
  if (type >= kExtDma8Core && type < kExtDma8Core + regs::kMaxDmaChannels - regs::kGaudi1DmaChannels) {
    return static_cast<int>(regs::kGaudi1DmaChannels + type - kExtDma8Core);
  }
  return -1;
}
constexpr uint32_t mme_err(unsigned mme) {
  return mme < regs::kGaudi1MmeEngines ? kMme0Err + mme : kExtMme4Err + (mme - regs::kGaudi1MmeEngines);
}
// The MME of an MMEn error event, or -1.
constexpr int mme_of_err(uint32_t type) {
  if (type >= kMme0Err && type < kMme0Err + regs::kGaudi1MmeEngines) return static_cast<int>(type - kMme0Err);
  if (type >= kExtMme4Err && type < kExtMme4Err + regs::kMaxMmeEngines - regs::kGaudi1MmeEngines) {
    return static_cast<int>(regs::kGaudi1MmeEngines + type - kExtMme4Err);
  }
  return -1;
}
// The QM event of master MME `mme` (0, 2, 4, ...).
constexpr uint32_t mme_qm(unsigned mme) {
  return mme == 0 ? kMme0Qm : mme == 2 ? kMme2Qm : kExtMmeMaster2Qm + (mme / 2 - 2);
}
// The event of a QMAN's error message (GLBL_ERR_WDATA carries its SPI).
constexpr uint32_t qman_error_event(regs::QmanId q) {
  const unsigned engine = regs::qman_engine(q);
  switch (regs::qman_family(q)) {
    case regs::QmanFamily::Dma: return dma_qm(engine);
    case regs::QmanFamily::Mme: return mme_qm(engine);
    case regs::QmanFamily::Tpc: return tpc_qm(engine);
    case regs::QmanFamily::Nic:
      return engine < regs::kGaudi1NicEngines ? kNic0Qm0 + engine : kExtNic10Qm + (engine - regs::kGaudi1NicEngines);
  }
  return 0;
}
// The QMAN whose error message `type` is, if it is one.
std::optional<regs::QmanId> qman_of_error_event(uint32_t type);

// gaudi_irq_map_table: for the QMAN, CPU-queue and halt events, cpu_id (the SPI number written
// to GICD_SETSPI_NSR) = fc_id (the event type) - 151.
inline constexpr uint32_t kSpiOffset = 151;
constexpr uint32_t spi_of(uint32_t event_type) { return event_type - kSpiOffset; }

// A short name for traces and tests ("DMA0_QM", "MMU_PAGE_FAULT", "event 123").
std::string name(uint32_t event_type);
}  // namespace event

// What a write of `value` to GICD_SETSPI_NSR means to the firmware. Both the SPI number
// (cpu_id) and, as older drivers wrote it, the raw event id are accepted.
// kQmanError: a QMAN's error message; kHwError: another block's interrupt (MMU page fault or
// write-permission fault, RAZWI, a DMA core error, a TPC kernel error, a reset request, a queue
// out of sync). Both
// become event-queue entries.
enum class SpiKind { kPiUpdate, kHaltMachine, kQmanError, kHwError, kUnknown };
struct SpiMeaning {
  SpiKind kind = SpiKind::kUnknown;
  uint32_t event_type = 0;   // the EQ event for kQmanError / kHwError
  int engine_id = -1;        // enum gaudi_engine_id of the QMAN, -1 when not an engine
};
SpiMeaning decode_spi(uint32_t value);

// ---------------------------------------------------------------------------------------------
// Boot and queue-init handshake (hl_boot_if.h, cpucp_if.h, psoc_global_conf_regs.h)
// ---------------------------------------------------------------------------------------------
namespace boot {
// CFG offsets of the PSOC_GLOBAL_CONF registers the firmware owns.
inline constexpr uint64_t kCpuBootStatus = 0xC4B300;   // mmPSOC_GLOBAL_CONF_CPU_BOOT_STATUS
inline constexpr uint64_t kKmdMsgToCpu = 0xC4B304;     // mmPSOC_GLOBAL_CONF_KMD_MSG_TO_CPU
inline constexpr uint64_t kSwAllRst = 0xC4B498;        // mmPSOC_GLOBAL_CONF_SW_ALL_RST

// enum cpu_boot_status (subset)
inline constexpr uint32_t kStatusNa = 0;
inline constexpr uint32_t kStatusInWfe = 1;
inline constexpr uint32_t kStatusDramRdy = 2;
inline constexpr uint32_t kStatusSramAvail = 3;        // firmware up: "boot done"
inline constexpr uint32_t kStatusInPreboot = 5;

// enum kmd_msg
inline constexpr uint32_t kKmdMsgNa = 0;
inline constexpr uint32_t kKmdMsgGotoWfe = 1;

// enum pq_init_status (mmCPU_IF_QUEUE_INIT)
inline constexpr uint32_t kPqInitNa = 0;
inline constexpr uint32_t kPqInitReadyForCp = 1;
inline constexpr uint32_t kPqInitReadyForHost = 2;
inline constexpr uint32_t kPqInitLenNotPowerOfTwo = 4;
inline constexpr uint32_t kPqInitIllegalQueueAddress = 5;
}  // namespace boot

inline constexpr unsigned kEventQueueMsiVector = 8;    // GAUDI_EVENT_QUEUE_MSI_IDX
inline constexpr uint32_t kPqEntryBytes = 16;          // struct hl_bd {u64 ptr; u32 len; u32 ctl;}

}  // namespace hpusim::fw_if
