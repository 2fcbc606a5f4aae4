// HlDevice's messages to the device CPU (hl_fw_send_cpu_message and its users): the cpucp packet
// goes in host memory, its BD on the CPU PQ, the PI doorbell and the PI_UPDATE interrupt; the
// firmware answers by writing the result and the fence value into the packet.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "driver/device.h"
#include "arch/cpucp/cpucp.h"

namespace hpusim::driver {
namespace {

namespace fw = fw_if;
namespace cpucp = fw_if::cpucp;


std::string fixed_string(const uint8_t* data, size_t max) {
  size_t n = 0;
  while (n < max && data[n] != 0) ++n;
  return std::string(reinterpret_cast<const char*>(data), n);
}

}  // namespace

int HlDevice::send_cpu_message(uint32_t opcode, uint64_t value, uint32_t index, uint64_t timeout_us,
                               uint64_t* result) {
  cpucp::Packet packet;
  packet.value = value;
  packet.ctl = cpucp::make_ctl(opcode);
  packet.index = index;
  const auto bytes = cpucp::encode(packet);
  host_write(cpu_packet_address_, bytes.data(), bytes.size());
  uint8_t bd[fw::kPqEntryBytes] = {};
  const uint64_t ptr = device_view(cpu_packet_address_);
  const uint32_t len = cpucp::kPacketBytes;
  std::memcpy(bd, &ptr, 8);
  std::memcpy(bd + 8, &len, 4);
  host_write(cpu_pq_address_ + uint64_t{cpu_pq_pi_ % kCpuPqEntries} * fw::kPqEntryBytes, bd, sizeof bd);
  cpu_pq_pi_ = (cpu_pq_pi_ + 1) % (2 * kCpuPqEntries);
  mmio_write(regs::cpu_if::kPfPqPi, cpu_pq_pi_);
  mmio_write(regs::gic::kGicdSetspiNsr, fw::event::spi_of(fw::event::kPiUpdate));
  // hl_poll_timeout_memory on the packet's fence, sleeping between looks.
  const uint64_t deadline = link_.host_now_ps() + timeout_us * 1000000;
  uint8_t answer[cpucp::kPacketBytes];
  while (true) {
    link_.sync_device();
    host_read(cpu_packet_address_, answer, sizeof answer);
    if (cpucp::decode(answer).fence == cpucp::kFenceValue) break;
    if (link_.host_now_ps() >= deadline) {
      logf("Device CPU packet timeout (opcode " + std::to_string(opcode) + ")");
      return -EIO;
    }
    charge(1000);
  }
  const cpucp::Packet done = cpucp::decode(answer);
  if (cpucp::ctl_rc(done.ctl) != static_cast<uint32_t>(cpucp::Rc::kSuccess)) {
    logf("F/W ERROR " + std::to_string(cpucp::ctl_rc(done.ctl)) + " for CPU packet " + std::to_string(opcode));
    return -EIO;
  }
  if (result != nullptr) *result = done.value;
  ++cpu_messages_;
  return 0;
}

// hl_fw_cpucp_info_get: the firmware fills struct cpucp_info in host memory.
bool HlDevice::cpucp_info_get() {
  std::vector<uint8_t> block(cpucp::info::kExtendedBytes, 0);
  host_write(cpu_info_address_, block.data(), block.size());
  uint64_t written = 0;
  if (send_cpu_message(static_cast<uint32_t>(cpucp::Opcode::kInfoGet), device_view(cpu_info_address_),
                       cpucp::info::kExtendedBytes, 1000, &written) != 0) {
    logf("Failed to handle CPU-CP info pkt");
    return false;
  }
  host_read(cpu_info_address_, block.data(), block.size());
  // The memory map: hpusim's extension, or Gaudi 1's fixed map from a firmware without it.
  const cpucp::MemoryMap map = cpucp::parse_memory_map(block.data(), written).value_or(cpucp::MemoryMap{});
  if (map.sram_bytes <= map.sram_reserved_bytes || map.dram_user_base < map.dram_base) {
    logf("F/W reports an unusable memory map");
    return false;
  }
  sram_base_ = map.sram_base;
  sram_size_ = map.sram_bytes;
  sram_reserved_ = std::max<uint64_t>(map.sram_reserved_bytes, uapi::GAUDI_DRIVER_SRAM_RESERVED_SIZE_FROM_START);
  dram_base_ = map.dram_base;
  dram_user_base_ = map.dram_user_base;
  card_generation_ = cpucp::parse_card_generation(block.data(), written).value_or(1);
  if (card_generation_ < 1 || card_generation_ > 3) {
    logf("F/W reports an unknown card generation " + std::to_string(card_generation_));
    return false;
  }
  card_name_ = fixed_string(block.data() + cpucp::info::kCardName, cpucp::info::kCardNameLen);
  cpucp_version_ = fixed_string(block.data() + cpucp::info::kCpucpVersion, cpucp::info::kVersionLen);
  uint64_t dram_size = 0;
  std::memcpy(&dram_size, block.data() + cpucp::info::kDramSize, 8);
  if (dram_size == 0) {
    logf("F/W reports no DRAM");
    return false;
  }
  dram_size_ = dram_size;   // the driver learns the DRAM size from the firmware, as hl_fw_cpucp_info_get does
  // The engines: whatever the map has and the binning masks do not take away.
  uint64_t tpc_binning = 0;
  std::memcpy(&tpc_binning, block.data() + cpucp::info::kTpcBinningMask, 8);
  const uint8_t edma_binning = block[cpucp::info::kEdmaBinningMask];
  const uint8_t mme_binning = block[cpucp::info::kMmeMasterBinningMask];
  tpc_mask_ = ~tpc_binning;
  dma_channel_count_ = regs::kNumPciDmaChannels;
  for (unsigned i = 0; i < regs::kMaxDmaChannels - regs::kNumPciDmaChannels && ((edma_binning >> i) & 1) == 0; ++i) {
    ++dma_channel_count_;
  }
  mme_master_mask_ = ~uint32_t{mme_binning} & ((1u << regs::kMaxMmeMasters) - 1);
  if (tpc_mask_ == 0 || mme_master_mask_ == 0) {
    logf("F/W reports no TPC or no MME");
    return false;
  }
  nic_ports_mask_ = cpucp::parse_nic_ports_mask(block.data(), written).value_or(0);
  tpc_vector_bits_ = static_cast<uint16_t>(block[cpucp::info::kTpcVectorBits] | block[cpucp::info::kTpcVectorBits + 1] << 8);
  mme_geometries_ = block[cpucp::info::kMmeGeometries];
  tpc_prefetch_entries_ = cpucp::parse_tpc_prefetch_entries(block.data(), written).value_or(0);
  mme_super_tile_rows_ = cpucp::parse_mme_super_tile_rows(block.data(), written).value_or(0);
  if (tpc_vector_bits_ == 0 || mme_geometries_ == 0) {
    logf("F/W reports no TPC vector width or no MME geometry");
    return false;
  }
  return true;
}

// hl_fw_send_heartbeat: a TEST packet carrying the fence value must come back with it.
bool HlDevice::send_heartbeat() {
  uint64_t result = 0;
  const int rc = send_cpu_message(static_cast<uint32_t>(cpucp::Opcode::kTest), cpucp::kFenceValue, 0, 1000, &result);
  ++heartbeats_;
  return rc == 0 && result == cpucp::kFenceValue;
}

}  // namespace hpusim::driver
