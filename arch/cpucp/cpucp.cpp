#include "arch/cpucp/cpucp.h"

#include <algorithm>
#include <cstring>

namespace hpusim::fw_if {
namespace {

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) { return get32(p) | (uint64_t{get32(p + 4)} << 32); }

void put_string(std::vector<uint8_t>& block, uint32_t offset, uint32_t capacity, const std::string& s) {
  // NUL-terminated, truncated to capacity - 1 characters.
  const size_t n = std::min<size_t>(s.size(), capacity - 1);
  std::memcpy(block.data() + offset, s.data(), n);
}

}  // namespace

namespace cpucp {

std::array<uint8_t, kPacketBytes> encode(const Packet& packet) {
  std::array<uint8_t, kPacketBytes> bytes{};
  put64(bytes.data() + kValueOffset, packet.value);
  put32(bytes.data() + kCtlOffset, packet.ctl);
  put32(bytes.data() + kFenceOffset, packet.fence);
  put32(bytes.data() + kIndexOffset, packet.index);
  put32(bytes.data() + kReservedOffset, packet.reserved);
  return bytes;
}

Packet decode(const uint8_t* bytes) {
  Packet packet;
  packet.value = get64(bytes + kValueOffset);
  packet.ctl = get32(bytes + kCtlOffset);
  packet.fence = get32(bytes + kFenceOffset);
  packet.index = get32(bytes + kIndexOffset);
  packet.reserved = get32(bytes + kReservedOffset);
  return packet;
}

std::vector<uint8_t> build_info_block(const DeviceInfo& device) {
  std::vector<uint8_t> block(info::kExtendedBytes, 0);
  const uint32_t sensors = std::min(device.num_sensors, info::kMaxSensors);
  for (uint32_t i = 0; i < sensors; ++i) {
    put32(block.data() + info::kSensors + 8 * i, 0);       // type: temperature
    put32(block.data() + info::kSensors + 8 * i + 4, 1);   // flags: input
  }
  put_string(block, info::kKernelVersion, info::kVersionLen, device.kernel_version);
  block[info::kTpcVectorBits] = static_cast<uint8_t>(device.tpc_vector_bits);
  block[info::kTpcVectorBits + 1] = static_cast<uint8_t>(device.tpc_vector_bits >> 8);
  block[info::kMmeGeometries] = device.mme_geometries;
  put32(block.data() + info::kCardType, device.card_type);
  put_string(block, info::kCpucpVersion, info::kVersionLen, device.cpucp_version);
  put64(block.data() + info::kDramSize, device.dram_size);
  put_string(block, info::kCardName, info::kCardNameLen, device.card_name);
  put64(block.data() + info::kTpcBinningMask, device.tpc_binning_mask);
  block[info::kEdmaBinningMask] = device.edma_binning_mask;
  block[info::kMmeMasterBinningMask] = device.mme_master_binning_mask;
  const MemoryMap& map = device.memory_map;
  put64(block.data() + info::kDramBase, map.dram_base);
  put64(block.data() + info::kDramUserBase, map.dram_user_base);
  put64(block.data() + info::kSramBase, map.sram_base);
  put64(block.data() + info::kSramBytes, map.sram_bytes);
  put64(block.data() + info::kSramReservedBytes, map.sram_reserved_bytes);
  put64(block.data() + info::kCardGeneration, device.card_generation);
  put64(block.data() + info::kNicPortsMask, device.nic_ports_mask);
  put32(block.data() + info::kTpcPrefetchEntries, device.tpc_prefetch_entries);
  put32(block.data() + info::kMmeSuperTileRows, device.mme_super_tile_rows);
  return block;
}

std::optional<MemoryMap> parse_memory_map(const uint8_t* block, uint64_t bytes) {
  if (bytes < info::kExtendedBytes) return std::nullopt;
  MemoryMap map;
  map.dram_base = get64(block + info::kDramBase);
  map.dram_user_base = get64(block + info::kDramUserBase);
  map.sram_base = get64(block + info::kSramBase);
  map.sram_bytes = get64(block + info::kSramBytes);
  map.sram_reserved_bytes = get64(block + info::kSramReservedBytes);
  return map;
}

std::optional<uint64_t> parse_nic_ports_mask(const uint8_t* block, uint64_t bytes) {
  if (bytes < info::kExtendedBytes) return std::nullopt;
  return get64(block + info::kNicPortsMask);
}

std::optional<uint32_t> parse_tpc_prefetch_entries(const uint8_t* block, uint64_t bytes) {
  if (bytes < info::kExtendedBytes) return std::nullopt;
  return get32(block + info::kTpcPrefetchEntries);
}

std::optional<uint32_t> parse_mme_super_tile_rows(const uint8_t* block, uint64_t bytes) {
  if (bytes < info::kExtendedBytes) return std::nullopt;
  return get32(block + info::kMmeSuperTileRows);
}

std::optional<uint32_t> parse_card_generation(const uint8_t* block, uint64_t bytes) {
  if (bytes < info::kExtendedBytes) return std::nullopt;
  return static_cast<uint32_t>(get64(block + info::kCardGeneration));
}

void set_make_up(DeviceInfo& info, unsigned tpcs, unsigned dma_channels, unsigned mme_masters) {
  auto absent_above = [](unsigned present, unsigned bits) -> uint64_t {
    const uint64_t all = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    return present >= 64 ? 0 : all & ~((1ull << present) - 1);
  };
  const unsigned internal = dma_channels > regs::kNumPciDmaChannels ? dma_channels - regs::kNumPciDmaChannels : 0;
  info.tpc_binning_mask = absent_above(tpcs, regs::kMaxTpcEngines);
  info.edma_binning_mask = static_cast<uint8_t>(absent_above(internal, regs::kMaxDmaChannels - regs::kNumPciDmaChannels));
  info.mme_master_binning_mask = static_cast<uint8_t>(absent_above(mme_masters, regs::kMaxMmeMasters));
}

}  // namespace cpucp

namespace event {

std::optional<regs::QmanId> qman_of_error_event(uint32_t type) {
  static const std::vector<int> kQmanOfEvent = [] {
    std::vector<int> table(kExtEnd, -1);
    for (unsigned i = 0; i < regs::kNumQmans; ++i) {
      const regs::QmanId q = regs::qman_from_index(i);
      // Slave MMEs (odd numbers) have no QMAN of their own.
      if (regs::qman_family(q) == regs::QmanFamily::Mme && regs::qman_engine(q) % 2 != 0) continue;
      table.at(qman_error_event(q)) = static_cast<int>(i);
    }
    return table;
  }();
  if (type >= kQmanOfEvent.size() || kQmanOfEvent[type] < 0) return std::nullopt;
  return regs::qman_from_index(static_cast<unsigned>(kQmanOfEvent[type]));
}

std::string name(uint32_t type) {
  if (const auto q = qman_of_error_event(type)) return regs::qman_name(*q);
  if (dma_of_core_event(type) >= 0) return "DMA" + std::to_string(dma_of_core_event(type)) + "_CORE";
  if (tpc_of_krn_err(type) >= 0) return "TPC" + std::to_string(tpc_of_krn_err(type)) + "_KRN_ERR";
  if (mme_of_err(type) >= 0) return "MME" + std::to_string(mme_of_err(type)) + "_ERR";
  switch (type) {
    case kHeartbeat: return "HEARTBEAT";
    case kMmuPageFault: return "MMU_PAGE_FAULT";
    case kMmuWrPerm: return "MMU_WR_PERM";
    case kRazwiOrAdc: return "RAZWI_OR_ADC";
    case kPiUpdate: return "PI_UPDATE";
    case kHaltMachine: return "HALT_MACHINE";
    case kFwAliveS: return "FW_ALIVE_S";
    case kDevResetReq: return "DEV_RESET_REQ";
    case kPktQueueOutSync: return "PKT_QUEUE_OUT_SYNC";
    case kRazwiOrAdcSw: return "RAZWI_OR_ADC_SW";
    default: return "event " + std::to_string(type);
  }
}

}  // namespace event

SpiMeaning decode_spi(uint32_t value) {
  SpiMeaning meaning;
  // The SPI number first (what the current driver writes), then the raw event id.
  for (const uint32_t type : {value + event::kSpiOffset, value}) {
    if (type == event::kPiUpdate) {
      meaning.kind = SpiKind::kPiUpdate;
      meaning.event_type = type;
      return meaning;
    }
    if (type == event::kHaltMachine) {
      meaning.kind = SpiKind::kHaltMachine;
      meaning.event_type = type;
      return meaning;
    }
    if (const auto q = event::qman_of_error_event(type)) {
      meaning.kind = SpiKind::kQmanError;
      meaning.event_type = type;
      meaning.engine_id = static_cast<int>(regs::engine_id(*q));
      return meaning;
    }
    if (type == event::kMmuPageFault || type == event::kMmuWrPerm || type == event::kRazwiOrAdc ||
        type == event::kRazwiOrAdcSw || type == event::kDevResetReq || type == event::kPktQueueOutSync ||
        type == event::kFwAliveS) {
      meaning.kind = SpiKind::kHwError;
      meaning.event_type = type;
      return meaning;
    }
    if (event::tpc_of_krn_err(type) >= 0) {
      meaning.kind = SpiKind::kHwError;
      meaning.event_type = type;
      meaning.engine_id = static_cast<int>(regs::engine_id(regs::tpc_qman(static_cast<unsigned>(event::tpc_of_krn_err(type)))));
      return meaning;
    }
    if (event::mme_of_err(type) >= 0) {
      meaning.kind = SpiKind::kHwError;
      meaning.event_type = type;
      meaning.engine_id = static_cast<int>(regs::engine_id(regs::mme_qman(static_cast<unsigned>(event::mme_of_err(type)))));
      return meaning;
    }
    if (event::dma_of_core_event(type) >= 0) {
      meaning.kind = SpiKind::kHwError;
      meaning.event_type = type;
      meaning.engine_id = static_cast<int>(regs::engine_id(regs::dma_qman(static_cast<unsigned>(event::dma_of_core_event(type)))));
      return meaning;
    }
  }
  return meaning;
}

}  // namespace hpusim::fw_if
