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
  std::vector<uint8_t> block(info::kBytes, 0);
  const uint32_t sensors = std::min(device.num_sensors, info::kMaxSensors);
  for (uint32_t i = 0; i < sensors; ++i) {
    put32(block.data() + info::kSensors + 8 * i, 0);       // type: temperature
    put32(block.data() + info::kSensors + 8 * i + 4, 1);   // flags: input
  }
  put_string(block, info::kKernelVersion, info::kVersionLen, device.kernel_version);
  put32(block.data() + info::kCardType, device.card_type);
  put_string(block, info::kCpucpVersion, info::kVersionLen, device.cpucp_version);
  put64(block.data() + info::kDramSize, device.dram_size);
  put_string(block, info::kCardName, info::kCardNameLen, device.card_name);
  return block;
}

}  // namespace cpucp

namespace event {

std::string name(uint32_t type) {
  if (type >= kTpc0Qm && type < kTpc0Qm + 8) return "TPC" + std::to_string(type - kTpc0Qm) + "_QM";
  if (type >= kDma0Qm && type < kDma0Qm + 8) return "DMA" + std::to_string(type - kDma0Qm) + "_QM";
  if (type >= kDma0Core && type < kDma0Core + 8) return "DMA" + std::to_string(type - kDma0Core) + "_CORE";
  if (tpc_of_krn_err(type) >= 0) return "TPC" + std::to_string(tpc_of_krn_err(type)) + "_KRN_ERR";
  if (mme_of_err(type) >= 0) return "MME" + std::to_string(mme_of_err(type)) + "_ERR";
  if (type >= kNic0Qm0 && type < kNic0Qm0 + 10) {
    const uint32_t i = type - kNic0Qm0;
    return "NIC" + std::to_string(i / 2) + "_QM" + std::to_string(i % 2);
  }
  switch (type) {
    case kHeartbeat: return "HEARTBEAT";
    case kMmuPageFault: return "MMU_PAGE_FAULT";
    case kMmuWrPerm: return "MMU_WR_PERM";
    case kRazwiOrAdc: return "RAZWI_OR_ADC";
    case kMme0Qm: return "MME0_QM";
    case kMme2Qm: return "MME2_QM";
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

namespace {

// QMAN events: the event type and the enum gaudi_engine_id of the engine.
std::optional<std::pair<uint32_t, int>> qman_event(uint32_t type) {
  using namespace event;
  if (type >= kTpc0Qm && type < kTpc0Qm + 8) return std::make_pair(type, static_cast<int>(12 + type - kTpc0Qm));
  if (type == kMme0Qm) return std::make_pair(type, 8);
  if (type == kMme2Qm) return std::make_pair(type, 10);
  if (type >= kDma0Qm && type < kDma0Qm + 8) return std::make_pair(type, static_cast<int>(type - kDma0Qm));
  if (type >= kNic0Qm0 && type < kNic0Qm0 + 10) return std::make_pair(type, static_cast<int>(20 + type - kNic0Qm0));
  return std::nullopt;
}

}  // namespace

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
    if (auto q = qman_event(type)) {
      meaning.kind = SpiKind::kQmanError;
      meaning.event_type = q->first;
      meaning.engine_id = q->second;
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
      meaning.engine_id = 12 + event::tpc_of_krn_err(type);   // enum gaudi_engine_id: TPC_0 = 12
      return meaning;
    }
    if (event::mme_of_err(type) >= 0) {
      meaning.kind = SpiKind::kHwError;
      meaning.event_type = type;
      meaning.engine_id = 8 + event::mme_of_err(type);   // enum gaudi_engine_id: MME_0 = 8
      return meaning;
    }
    if (type >= event::kDma0Core && type < event::kDma0Core + 8) {
      meaning.kind = SpiKind::kHwError;
      meaning.event_type = type;
      meaning.engine_id = static_cast<int>(type - event::kDma0Core);
      return meaning;
    }
  }
  return meaning;
}

}  // namespace hpusim::fw_if
