// The driver and the device CPU through the driver API only: cpucp messages (INFO_GET at init,
// heartbeats), firmware events that ask for a reset, and illegal accesses (RAZWI).
#include <gtest/gtest.h>

#include <algorithm>

#include "arch/cpucp/cpucp.h"
#include "tests/driver/driver_fixture.h"
#include "sim/platform/platform.h"
#include "hw/tpc/tpc_core.h"
#include "hw/mme/mme_engine.h"
#include "hw/card/card.h"

namespace hpusim::driver {
namespace {

bool logged(const testing::TestDevice& dev, const std::string& text) {
  const auto& log = dev.log();
  return std::any_of(log.begin(), log.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

TEST_F(DriverTest, HwIpInfoComesFromTheFirmwaresCpucpInfo) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const auto hw = info<hl_info_hw_ip_info>(HL_INFO_HW_IP_INFO);
  EXPECT_STREQ(reinterpret_cast<const char*>(hw.card_name), "HL205");
  EXPECT_STREQ(reinterpret_cast<const char*>(hw.cpucp_version), fw_if::cpucp::DeviceInfo{}.cpucp_version.c_str());
  EXPECT_GE(dev->cpu_messages(), 1u);   // INFO_GET
  EXPECT_EQ(dev->close(), 0);
}

// Heartbeats go out at their period while the driver waits, the firmware answers them, nothing
// resets.
TEST_F(DriverTest, HeartbeatsAreAnsweredWhileTheDriverWaits) {
  HlDeviceOptions options;
  options.heartbeat_period_us = 200;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const uint64_t before = dev->heartbeats();
  // A CS held by a fence for 1 ms of host time, then released by another stream.
  uint64_t held = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().fence(3, 1, 1).bytes())}, &held), 0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(held, 1000, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_BUSY);
  const uint64_t release = cfg(regs::qman_fence_rdata(regs::QmanId::DMA0, 3, 0));
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_1, CommandBufferBuilder().msg_long(release, 1).bytes())}),
            HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->wait(held, 100000, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_GE(dev->heartbeats() - before, 3u);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_FALSE(logged(*dev, "heartbeat failed"));
  EXPECT_EQ(dev->close(), 0);
}

// A device CPU that stops answering (here halted by a user CB, as a firmware hang would leave it)
// fails the next heartbeat: the driver hard-resets, the firmware boots again, the device works.
TEST_F(DriverTest, AMissedHeartbeatHardResetsTheDevice) {
  HlDeviceOptions options;
  options.heartbeat_period_us = 200;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  namespace ev = fw_if::event;
  CommandBufferBuilder hang;
  hang.msg_long(cfg(fw_if::boot::kKmdMsgToCpu), fw_if::boot::kKmdMsgGotoWfe)
      .msg_long(cfg(regs::gic::kGicdSetspiNsr), ev::spi_of(ev::kHaltMachine));
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, hang.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  uint64_t held = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_1, CommandBufferBuilder().fence(3, 1, 1).bytes())}, &held), 0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(held, 5000, &status), -EIO);   // rolled back by the reset
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_ABORTED);
  EXPECT_TRUE(logged(*dev, "Device heartbeat failed!"));
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, CommandBufferBuilder().nop().bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

// A block raising DEV_RESET_REQ (here a user message to the GIC, as a block's interrupt would
// arrive): the driver hard-resets once the event handler has returned, and stays usable.
TEST_F(DriverTest, AResetRequestEventHardResetsTheDevice) {
  make();
  ASSERT_EQ(dev->open(), 0);
  namespace ev = fw_if::event;
  CommandBufferBuilder raise;
  raise.msg_long(cfg(regs::gic::kGicdSetspiNsr), ev::spi_of(ev::kDevResetReq));
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, raise.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  // The event arrives shortly after; the next ioctls see it and reset.
  for (int i = 0; i < 50 && info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt == 0; ++i) {
    uint32_t status = 0;
    uint64_t seq = 0;
    ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_1, CommandBufferBuilder().nop().bytes())}, &seq), 0);
    dev->wait(seq, 100000, &status);
  }
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  EXPECT_TRUE(logged(*dev, "DEV_RESET_REQ"));
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, CommandBufferBuilder().nop().bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

// A message to an address no target serves: the QMAN reports a message error, the fabric a
// RAZWI naming the address, the direction and the initiator; the stuck CS times out and the
// device is usable after the reset.
TEST_F(DriverTest, AnIllegalAccessIsARazwiEvent) {
  HlDeviceOptions options;
  options.cs_timeout_us = 2000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const uint64_t hole = 0x1000000000ull;   // between DRAM (32 GB) and SRAM: nothing there
  uint64_t seq = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().msg_long(hole, 1).bytes())}, &seq), 0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(seq, 100000, &status), -ETIMEDOUT);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_TIMEDOUT);
  EXPECT_EQ(dev->razwi_events(), 1u);
  EXPECT_TRUE(logged(*dev, "RAZWI: illegal write to 0x1000000000 by DMA0"));
  EXPECT_TRUE(logged(*dev, "DMA0_QM (QMAN) error"));
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().nop().bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

// The card's wires are named ports bound where the card is assembled: every engine's error
// interrupt and the MMU's page fault reach the GIC at their SPI, the fabric's RAZWI reports and
// the firmware's SW_ALL_RST reach the card.
TEST(CardWiring, EveryLineIsBoundWhereTheCardIsAssembled) {
  platform::PlatformOptions options;
  options.overrides.push_back("hbm.refresh_enabled=false");
  platform::Platform box(options);
  hw::Card& card = box.card();
  box.cosim().on_sim_thread([&] {
    for (unsigned n = 0; hw::TpcCore* core = card.tpc_core(n); ++n) {
      EXPECT_TRUE(core->interrupt().bound()) << "tpc " << n;
      EXPECT_EQ(core->interrupt().line(), fw_if::event::spi_of(fw_if::event::tpc_krn_err(n))) << "tpc " << n;
    }
    for (unsigned m = 0; m < card.mme_numbers(); ++m) {
      if (hw::MmeEngine* engine = card.mme_engine(m)) {
        EXPECT_TRUE(engine->interrupt().bound()) << "mme " << m;
        EXPECT_EQ(engine->interrupt().line(), fw_if::event::spi_of(fw_if::event::mme_err(m))) << "mme " << m;
      }
    }
    EXPECT_TRUE(card.mmu_controller().interrupt().bound());
    EXPECT_EQ(card.mmu_controller().interrupt().line(), fw_if::event::spi_of(fw_if::event::kMmuPageFault));
    EXPECT_TRUE(card.memory().fabric().razwi().bound());
    EXPECT_TRUE(card.device_cpu()->reset_out().bound());
  });
}

}  // namespace
}  // namespace hpusim::driver
