// Encodings of the driver <-> firmware interface against the values of the public headers.
#include <gtest/gtest.h>

#include <cstring>

#include "arch/cpucp/cpucp.h"

namespace hpusim::fw_if {
namespace {

TEST(FirmwareCpucp, PacketLayoutAndCtlFields) {
  cpucp::Packet p;
  p.value = 0x1122334455667788ull;
  p.ctl = cpucp::make_ctl(static_cast<uint32_t>(cpucp::Opcode::kTest), 2);
  p.fence = 0xAABBCCDD;
  p.index = 1616;
  const auto bytes = cpucp::encode(p);
  EXPECT_EQ(bytes[0], 0x88);
  EXPECT_EQ(bytes[7], 0x11);
  // ctl: opcode 18 at [28:16], rc 2 at [15:12]
  uint32_t ctl;
  std::memcpy(&ctl, bytes.data() + 8, 4);
  EXPECT_EQ(ctl, (18u << 16) | (2u << 12));
  EXPECT_EQ(cpucp::ctl_opcode(ctl), 18u);
  EXPECT_EQ(cpucp::ctl_rc(ctl), 2u);
  const cpucp::Packet back = cpucp::decode(bytes.data());
  EXPECT_EQ(back.value, p.value);
  EXPECT_EQ(back.ctl, p.ctl);
  EXPECT_EQ(back.fence, p.fence);
  EXPECT_EQ(back.index, p.index);
  EXPECT_EQ(cpucp::kFenceValue, 0xFE8CE7A5u);
}

TEST(FirmwareCpucp, EventQueueCtl) {
  const uint32_t ctl = eq::make_ctl(event::kDma0Qm + 2, 0x12345);
  EXPECT_TRUE(eq::ctl_ready(ctl));
  EXPECT_EQ(eq::ctl_type(ctl), 585u);
  EXPECT_EQ(eq::ctl_index(ctl), 0x2345u);   // 16-bit running index
  EXPECT_EQ(ctl, 0x80000000u | (585u << 16) | 0x2345u);
}

TEST(FirmwareCpucp, SpiDecoding) {
  // SPI numbers (gaudi_irq_map_table cpu_id) and raw event ids.
  EXPECT_EQ(decode_spi(432).kind, SpiKind::kQmanError);
  EXPECT_EQ(decode_spi(432).event_type, event::kDma0Qm);
  EXPECT_EQ(decode_spi(432).engine_id, 0);
  EXPECT_EQ(decode_spi(event::spi_of(event::tpc_qm(3))).engine_id, 15);
  EXPECT_EQ(decode_spi(event::spi_of(event::kMme2Qm)).engine_id, 10);
  EXPECT_EQ(decode_spi(584).event_type, event::kDma0Qm + 1);
  EXPECT_EQ(decode_spi(484).kind, SpiKind::kPiUpdate);
  EXPECT_EQ(decode_spi(635).kind, SpiKind::kPiUpdate);
  EXPECT_EQ(decode_spi(485).kind, SpiKind::kHaltMachine);
  EXPECT_EQ(decode_spi(7).kind, SpiKind::kUnknown);
  EXPECT_EQ(event::name(585), "DMA2_QM");
}

TEST(FirmwareCpucp, InfoBlockLayout) {
  cpucp::DeviceInfo info;
  info.card_name = "HL205-LONG-NAME-TRUNCATED";
  info.dram_size = 32ull << 30;
  info.num_sensors = 2;
  const auto block = cpucp::build_info_block(info);
  ASSERT_EQ(block.size(), 1616u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(block.data() + cpucp::info::kCardName)), "HL205-LONG-NAME");
  uint64_t dram;
  std::memcpy(&dram, block.data() + cpucp::info::kDramSize, 8);
  EXPECT_EQ(dram, 32ull << 30);
  uint32_t flags;
  std::memcpy(&flags, block.data() + 8 + 4, 4);
  EXPECT_EQ(flags, 1u);
  std::memcpy(&flags, block.data() + 16 + 4, 4);
  EXPECT_EQ(flags, 0u);   // only two sensors
}

}  // namespace
}  // namespace hpusim::fw_if
