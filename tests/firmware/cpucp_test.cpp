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
  info.nic_ports_mask = 0x3FF;
  const auto block = cpucp::build_info_block(info);
  // struct cpucp_info (1616 bytes) and hpusim's extension (memory map, card generation, NIC ports,
  // TPC prefetch entries).
  ASSERT_EQ(block.size(), 1680u);
  EXPECT_EQ(cpucp::parse_nic_ports_mask(block.data(), block.size()), 0x3FFu);
  EXPECT_EQ(cpucp::parse_nic_ports_mask(block.data(), 1664), std::nullopt) << "a firmware without the field";
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

// The memory map rides after struct cpucp_info; a block of the real struct's size has none (a
// driver then uses the ASIC's fixed map).
TEST(FirmwareCpucp, MemoryMapExtensionRoundTripsAndIsAbsentFromTheRealStruct) {
  cpucp::DeviceInfo info;
  info.memory_map = {0x100000000ull, 0x140000000ull, 0x7FE0000000ull, 96ull << 20, 0x1000};
  const auto block = cpucp::build_info_block(info);
  uint64_t sram_base = 0;
  std::memcpy(&sram_base, block.data() + 1632, 8);
  EXPECT_EQ(sram_base, 0x7FE0000000ull);
  const auto map = cpucp::parse_memory_map(block.data(), block.size());
  ASSERT_TRUE(map.has_value());
  EXPECT_EQ(map->dram_base, 0x100000000ull);
  EXPECT_EQ(map->dram_user_base, 0x140000000ull);
  EXPECT_EQ(map->sram_base, 0x7FE0000000ull);
  EXPECT_EQ(map->sram_bytes, 96ull << 20);
  EXPECT_EQ(map->sram_reserved_bytes, 0x1000u);
  EXPECT_FALSE(cpucp::parse_memory_map(block.data(), cpucp::info::kBytes).has_value());
}

// The extension's events (engines past Gaudi 1's) round-trip through their SPI and never shadow a
// Gaudi 1 event written raw, as older drivers did.
TEST(FirmwareCpucp, ExtensionEventsDecodeToTheirEngines) {
  EXPECT_EQ(event::tpc_krn_err(7), 343u);   // TPC7_KRN_ERR = 301 + 6 * 7
  EXPECT_EQ(event::tpc_qm(7), 579u);
  for (unsigned tpc = 0; tpc < regs::kMaxTpcEngines; ++tpc) {
    const SpiMeaning krn = decode_spi(event::spi_of(event::tpc_krn_err(tpc)));
    EXPECT_EQ(krn.kind, SpiKind::kHwError) << tpc;
    EXPECT_EQ(krn.engine_id, static_cast<int>(regs::engine_id(regs::tpc_qman(tpc)))) << tpc;
    EXPECT_EQ(event::tpc_of_krn_err(event::tpc_krn_err(tpc)), static_cast<int>(tpc));
    const SpiMeaning qm = decode_spi(event::spi_of(event::tpc_qm(tpc)));
    EXPECT_EQ(qm.kind, SpiKind::kQmanError) << tpc;
    EXPECT_EQ(qm.engine_id, static_cast<int>(regs::engine_id(regs::tpc_qman(tpc)))) << tpc;
    EXPECT_EQ(event::name(event::tpc_qm(tpc)), "TPC" + std::to_string(tpc) + "_QM");
  }
  for (unsigned mme = 0; mme < regs::kMaxMmeEngines; ++mme) {
    EXPECT_EQ(event::mme_of_err(event::mme_err(mme)), static_cast<int>(mme));
    EXPECT_EQ(decode_spi(event::spi_of(event::mme_err(mme))).engine_id, static_cast<int>(regs::engine_id(regs::mme_qman(mme))));
    if (mme % 2 == 0) {
      EXPECT_EQ(event::qman_of_error_event(event::mme_qm(mme)), regs::mme_qman(mme));
      EXPECT_EQ(event::name(event::mme_qm(mme)), "MME" + std::to_string(mme) + "_QM");
    }
  }
  for (unsigned ch = 0; ch < regs::kMaxDmaChannels; ++ch) {
    EXPECT_EQ(event::dma_of_core_event(event::dma_core(ch)), static_cast<int>(ch));
    EXPECT_EQ(event::qman_of_error_event(event::dma_qm(ch)), regs::dma_qman(ch));
  }
  EXPECT_EQ(event::name(event::tpc_krn_err(40)), "TPC40_KRN_ERR");
  // Every Gaudi 1 event a QMAN or engine raises still decodes as itself when written raw.
  for (unsigned tpc = 0; tpc < regs::kGaudi1TpcEngines; ++tpc) {
    EXPECT_EQ(decode_spi(event::tpc_qm(tpc)).event_type, event::tpc_qm(tpc));
    EXPECT_EQ(decode_spi(event::tpc_krn_err(tpc)).event_type, event::tpc_krn_err(tpc));
  }
  for (unsigned ch = 0; ch < regs::kGaudi1DmaChannels; ++ch) {
    EXPECT_EQ(decode_spi(event::dma_qm(ch)).event_type, event::dma_qm(ch));
    EXPECT_EQ(decode_spi(event::dma_core(ch)).event_type, event::dma_core(ch));
  }
  EXPECT_LE(event::kExtEnd, eq::kEventTypeMask >> eq::kEventTypeShift);
}

TEST(FirmwareCpucp, InfoBlockCarriesTheMakeUpAsBinningMasks) {
  cpucp::DeviceInfo info;
  cpucp::set_make_up(info, 24, 10, 2);
  EXPECT_EQ(info.tpc_binning_mask, ~((1ull << 24) - 1));
  EXPECT_EQ(info.edma_binning_mask, 0);
  EXPECT_EQ(info.mme_master_binning_mask, 0xFC);
  cpucp::set_make_up(info, 64, 8, 8);
  EXPECT_EQ(info.tpc_binning_mask, 0u);
  EXPECT_EQ(info.edma_binning_mask, 0xC0);   // DMA8 and DMA9 absent
  EXPECT_EQ(info.mme_master_binning_mask, 0);
  cpucp::set_make_up(info, 8, 8, 2);
  const auto block = cpucp::build_info_block(info);
  uint64_t tpc;
  std::memcpy(&tpc, block.data() + 1584, 8);   // cpucp_info.tpc_binning_mask
  EXPECT_EQ(tpc, ~0xFFull);
  EXPECT_EQ(block[1603], 0xC0);                // edma_binning_mask
  EXPECT_EQ(block[1607], 0xFC);                // reserved2: hpusim's MME master binning
}

TEST(FirmwareCpucp, InfoBlockCarriesTheTpcVectorWidthAndMmeGeometries) {
  cpucp::DeviceInfo info;
  info.tpc_vector_bits = 4096;
  info.mme_geometries = 3;
  const auto block = cpucp::build_info_block(info);
  EXPECT_EQ(block[1152] | block[1153] << 8, 4096);   // the reserved u32 at 1152: hpusim's
  EXPECT_EQ(block[1154], 3);
  EXPECT_EQ(block[1156], 0);                           // card_type follows untouched
}

TEST(FirmwareCpucp, InfoBlockCarriesTheTpcPrefetchEntries) {
  cpucp::DeviceInfo info;
  EXPECT_EQ(cpucp::parse_tpc_prefetch_entries(cpucp::build_info_block(info).data(), 1680), 128u);
  info.tpc_prefetch_entries = 512;
  const auto block = cpucp::build_info_block(info);
  EXPECT_EQ(cpucp::parse_tpc_prefetch_entries(block.data(), block.size()), 512u);
  EXPECT_EQ(cpucp::parse_tpc_prefetch_entries(block.data(), 1672), std::nullopt) << "a firmware without the field";
}

TEST(FirmwareCpucp, InfoBlockCarriesTheMmeSuperTileRows) {
  cpucp::DeviceInfo info;
  EXPECT_EQ(cpucp::parse_mme_super_tile_rows(cpucp::build_info_block(info).data(), 1680), 0u) << "not given";
  info.mme_super_tile_rows = 512;
  info.tpc_prefetch_entries = 256;
  const auto block = cpucp::build_info_block(info);
  EXPECT_EQ(cpucp::parse_mme_super_tile_rows(block.data(), block.size()), 512u);
  EXPECT_EQ(cpucp::parse_tpc_prefetch_entries(block.data(), block.size()), 256u) << "the field before it";
  EXPECT_EQ(cpucp::parse_mme_super_tile_rows(block.data(), 1672), std::nullopt) << "a firmware without the field";
}

}  // namespace
}  // namespace hpusim::fw_if
