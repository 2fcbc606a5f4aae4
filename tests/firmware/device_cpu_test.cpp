// The firmware on an HL-205 card, driven the way a driver drives it: MMIO writes and reads
// through the co-simulation loop, rings and buffers in host memory, MSIs back. Every test runs
// in its own process (SystemC elaborates once).
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "firmware/device_cpu.h"
#include "hw/card/card.h"
#include "arch/packets/packets.h"
#include "sim/cosim/cosimulation.h"
#include "sim/preset/preset.h"
#include "tests/support/host_platform.h"

namespace hpusim::firmware {
namespace {

using regs::QmanId;
using regs::QmReg;
namespace cif = regs::cpu_if;

using testing::kMsiHostAddress;
constexpr uint64_t kUs = 1000000;   // ps
constexpr uint64_t kInitRegionOffset = 0x2000;   // in SRAM, for the memory-init check
constexpr uint32_t kInitRegionBytes = 512;

class FirmwareTest : public testing::HostPlatformTest, public hw::ResetTarget {
 protected:
  // SW_ALL_RST resets the card, as the card's own wiring does.
  void reset_requested() override { card->reset(); }
  void SetUp() override { build(); }

  void build(Picoseconds heartbeat_ps = 0) {
    build_platform([this, heartbeat_ps] {
      DeviceCpuConfig config = device_cpu_config_from(preset);
      config.info.dram_size = card->memory().dram_size();
      config.init_region_base = sram(kInitRegionOffset);
      config.init_region_bytes = kInitRegionBytes;
      config.heartbeat_period_ps = heartbeat_ps;
      fw = std::make_unique<DeviceCpu>("device_cpu", config);
      card->memory().bind_master(fw->bus().socket, "device_cpu");
      fw->attach_registers(card->memory().cfg());
      fw->reset_out().bind(*this);
      // Garbage where the firmware's memory init must write zeros.
      std::vector<uint8_t> junk(kInitRegionBytes, 0xA5);
      card->memory().sram().store().write(sram(kInitRegionOffset), junk.data(), junk.size());
    }, 0x200000000ull);
  }
  void release_extras() override { fw.reset(); }

  void mmio_write(uint64_t cfg_offset, uint32_t value) { sim->mmio_write32(cfg(cfg_offset), value); }
  uint32_t mmio_read(uint64_t cfg_offset) { return sim->mmio_read32(cfg(cfg_offset)); }

  void run_us(uint64_t us) {
    sim->charge_ns(us * 1000);
    sim->sync_device();
  }
  // Polls `done` once per simulated microsecond of host time.
  template <typename Done>
  bool poll(Done done, uint64_t limit_us = 2000) {
    for (uint64_t t = 0; t < limit_us; ++t) {
      if (done()) return true;
      run_us(1);
    }
    return done();
  }

  bool wait_boot() {
    return poll([&] { return mmio_read(boot::kCpuBootStatus) == boot::kStatusSramAvail; });
  }

  // The driver's gaudi_init_cpu_queues: rings in host memory, registers, READY_FOR_CP, PI_UPDATE.
  bool init_queues(uint32_t pq_entries = 16, uint32_t eq_entries = 8) {
    pq_entries_ = pq_entries;
    eq_entries_ = eq_entries;
    pq_ = host_alloc(pq_entries * kPqEntryBytes);
    eq_ = host_alloc(eq_entries * eq::kEntryBytes);
    pi_ = 0;
    eq_ci_ = 0;
    const uint64_t pq_dev = device_view(pq_), eq_dev = device_view(eq_), cq_dev = device_view(host_alloc(4096));
    mmio_write(cif::kPqBaseAddrLow, static_cast<uint32_t>(pq_dev));
    mmio_write(cif::kPqBaseAddrHigh, static_cast<uint32_t>(pq_dev >> 32));
    mmio_write(cif::kEqBaseAddrLow, static_cast<uint32_t>(eq_dev));
    mmio_write(cif::kEqBaseAddrHigh, static_cast<uint32_t>(eq_dev >> 32));
    mmio_write(cif::kCqBaseAddrLow, static_cast<uint32_t>(cq_dev));
    mmio_write(cif::kCqBaseAddrHigh, static_cast<uint32_t>(cq_dev >> 32));
    mmio_write(cif::kPqLength, pq_entries * kPqEntryBytes);
    mmio_write(cif::kEqLength, eq_entries * eq::kEntryBytes);
    mmio_write(cif::kCqLength, 4096);
    mmio_write(cif::kEqRdOffs, 0);
    mmio_write(cif::kPfPqPi, 0);
    mmio_write(cif::kQueueInit, boot::kPqInitReadyForCp);
    mmio_write(regs::gic::kGicdSetspiNsr, event::spi_of(event::kPiUpdate));
    return poll([&] { return mmio_read(cif::kQueueInit) == boot::kPqInitReadyForHost; });
  }

  // hl_fw_send_cpu_message: the packet in host memory, a BD in the CPU PQ, the doorbell.
  uint64_t send(const cpucp::Packet& packet, uint32_t bd_ctl = 0) {
    cpucp::Packet p = packet;
    p.fence = 0xFFFFFFFF;   // "set fence to a non valid value"
    const uint64_t buffer = host_alloc(cpucp::kPacketBytes);
    const auto bytes = cpucp::encode(p);
    host_write(buffer, bytes.data(), bytes.size());
    struct {
      uint64_t ptr;
      uint32_t len;
      uint32_t ctl;
    } bd{device_view(buffer), cpucp::kPacketBytes, bd_ctl};
    host_write(pq_ + uint64_t{pi_ % pq_entries_} * kPqEntryBytes, &bd, sizeof bd);
    pi_ = (pi_ + 1) % (2 * pq_entries_);
    mmio_write(cif::kPfPqPi, pi_);
    return buffer;
  }
  bool wait_fence(uint64_t buffer, uint64_t limit_us = 2000) {
    return poll([&] { return host_read<uint32_t>(buffer + cpucp::kFenceOffset) == cpucp::kFenceValue; }, limit_us);
  }

  struct EqEntry {
    uint32_t reserved;
    uint32_t ctl;
    uint64_t data[eq::kDataWords];
  };
  EqEntry eq_entry(uint32_t slot) { return host_read<EqEntry>(eq_ + uint64_t{slot} * eq::kEntryBytes); }
  // The driver's EQ handler: clear READY, advance CI, write it to EQ_RD_OFFS.
  void consume_eq(uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t address = eq_ + uint64_t{eq_ci_} * eq::kEntryBytes + eq::kCtlOffset;
      const uint32_t cleared = host_read<uint32_t>(address) & ~eq::kReadyBit;
      host_write(address, &cleared, 4);
      eq_ci_ = (eq_ci_ + 1) % eq_entries_;
    }
    mmio_write(cif::kEqRdOffs, eq_ci_);
  }

  std::unique_ptr<DeviceCpu> fw;
  uint64_t pq_ = 0, eq_ = 0;
  uint32_t pq_entries_ = 0, eq_entries_ = 0, pi_ = 0, eq_ci_ = 0;
};

cpucp::Packet packet(cpucp::Opcode op, uint64_t value = 0, uint32_t index = 0) {
  cpucp::Packet p;
  p.ctl = cpucp::make_ctl(static_cast<uint32_t>(op));
  p.value = value;
  p.index = index;
  return p;
}

TEST_F(FirmwareTest, BootStatusReachesDoneAndMemoryIsInitialised) {
  // Right after reset the firmware has not finished booting.
  EXPECT_NE(mmio_read(boot::kCpuBootStatus), boot::kStatusSramAvail);
  ASSERT_TRUE(wait_boot());
  std::vector<uint8_t> region(kInitRegionBytes, 0xFF);
  sim->on_sim_thread([&] { card->memory().sram().store().read(sram(kInitRegionOffset), region.data(), region.size()); });
  for (size_t i = 0; i < region.size(); ++i) ASSERT_EQ(region[i], 0) << "byte " << i;
  EXPECT_EQ(mmio_read(cif::kQueueInit), boot::kPqInitNa);
  EXPECT_EQ(fw->stats().boots, 1u);
}

TEST_F(FirmwareTest, QueueInitRejectsBadLength) {
  ASSERT_TRUE(wait_boot());
  mmio_write(cif::kPqBaseAddrLow, 0x1000);
  mmio_write(cif::kEqBaseAddrLow, 0x2000);
  mmio_write(cif::kPqLength, 48);   // not a power of two
  mmio_write(cif::kEqLength, 4096);
  mmio_write(cif::kQueueInit, boot::kPqInitReadyForCp);
  ASSERT_TRUE(poll([&] { return mmio_read(cif::kQueueInit) != boot::kPqInitReadyForCp; }));
  EXPECT_EQ(mmio_read(cif::kQueueInit), boot::kPqInitLenNotPowerOfTwo);
}

TEST_F(FirmwareTest, TestPacketEchoesAndRaisesRequestedMsi) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues());
  // The driver's queue test / heartbeat: TEST with CPUCP_PACKET_FENCE_VAL, expects it back.
  const uint64_t a = send(packet(cpucp::Opcode::kTest, cpucp::kFenceValue));
  ASSERT_TRUE(wait_fence(a));
  EXPECT_EQ(host_read<uint64_t>(a + cpucp::kValueOffset), cpucp::kFenceValue);
  EXPECT_EQ(cpucp::ctl_rc(host_read<uint32_t>(a + cpucp::kCtlOffset)), 0u);

  const uint64_t b = send(packet(cpucp::Opcode::kTest, 0x0123456789ABCDEFull), kBdCtlMsiRequest);
  const auto vector = sim->wait_for_interrupt(500 * kUs);
  ASSERT_TRUE(vector.has_value());
  EXPECT_EQ(*vector, 9u);
  EXPECT_EQ(host_read<uint32_t>(b + cpucp::kFenceOffset), cpucp::kFenceValue);
  EXPECT_EQ(host_read<uint64_t>(b + cpucp::kValueOffset), 0x0123456789ABCDEFull);

  // An opcode this firmware does not serve: completed with rc = invalid.
  cpucp::Packet bad;
  bad.ctl = cpucp::make_ctl(1000);
  const uint64_t c = send(bad);
  ASSERT_TRUE(wait_fence(c));
  EXPECT_EQ(cpucp::ctl_rc(host_read<uint32_t>(c + cpucp::kCtlOffset)), static_cast<uint32_t>(cpucp::Rc::kInvalid));
  EXPECT_EQ(cpucp::ctl_opcode(host_read<uint32_t>(c + cpucp::kCtlOffset)), 1000u);
}

TEST_F(FirmwareTest, PqWrapsAround) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues(4));
  for (uint64_t i = 0; i < 11; ++i) {
    const uint64_t buffer = send(packet(cpucp::Opcode::kTest, 1000 + i));
    ASSERT_TRUE(wait_fence(buffer)) << "packet " << i;
    ASSERT_EQ(host_read<uint64_t>(buffer), 1000 + i);
  }
  EXPECT_EQ(fw->stats().packets, 11u);
}

TEST_F(FirmwareTest, InfoGetWritesTheInfoBlock) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues());
  const uint64_t info = host_alloc(cpucp::info::kBytes);
  std::vector<uint8_t> junk(cpucp::info::kBytes, 0xEE);
  host_write(info, junk.data(), junk.size());
  const uint64_t p = send(packet(cpucp::Opcode::kInfoGet, device_view(info), cpucp::info::kBytes));
  ASSERT_TRUE(wait_fence(p));
  EXPECT_EQ(cpucp::ctl_rc(host_read<uint32_t>(p + cpucp::kCtlOffset)), 0u);
  EXPECT_EQ(host_read<uint64_t>(p), cpucp::info::kBytes);
  std::vector<uint8_t> block(cpucp::info::kBytes);
  sim->on_sim_thread([&] { card->memory().host_memory().read(info, block.data(), block.size()); });
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(block.data() + cpucp::info::kCardName)), "HL205");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(block.data() + cpucp::info::kCpucpVersion)), "hpusim-cpucp 0.1");
  uint64_t dram = 0;
  std::memcpy(&dram, block.data() + cpucp::info::kDramSize, 8);
  EXPECT_GT(dram, 0u);
  EXPECT_EQ(dram, card->memory().dram_size());
  EXPECT_EQ(block[cpucp::info::kBytes - 1], 0);   // the whole block was written

  // A smaller data_max_size bounds the write.
  const uint64_t small = host_alloc(256);
  host_write(small, junk.data(), 256);
  const uint64_t q = send(packet(cpucp::Opcode::kInfoGet, device_view(small), 64));
  ASSERT_TRUE(wait_fence(q));
  EXPECT_EQ(host_read<uint64_t>(q), 64u);
  EXPECT_EQ(host_read<uint8_t>(small + 63), 0);
  EXPECT_EQ(host_read<uint8_t>(small + 64), 0xEE);
}

TEST_F(FirmwareTest, SensorAndClockQueries) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues());
  const uint64_t t = send(packet(cpucp::Opcode::kTemperatureGet));
  const uint64_t f = send(packet(cpucp::Opcode::kFrequencyGet, 0, 8));   // TPC_PLL
  const uint64_t bad = send(packet(cpucp::Opcode::kFrequencyGet, 0, 99));
  ASSERT_TRUE(wait_fence(bad));
  EXPECT_EQ(host_read<uint64_t>(t), 45000u);
  EXPECT_EQ(host_read<uint64_t>(f), uint64_t{preset.clocks().tpc_mhz()} * 1000000u);
  EXPECT_EQ(cpucp::ctl_rc(host_read<uint32_t>(bad + cpucp::kCtlOffset)), static_cast<uint32_t>(cpucp::Rc::kInvalid));
}

TEST_F(FirmwareTest, QmanStopBecomesAnEventQueueEntryAndMsi) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues());
  // The driver's QMAN init: error messages go to the GIC with the QMAN's SPI number.
  const QmanId q = QmanId::DMA2;
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::GlblErrCfg)), 1u << regs::qm::kGlblErrCfgCpMsgEnShift);
  const uint64_t gic = cfg(regs::gic::kGicdSetspiNsr);
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::GlblErrAddrLo)), static_cast<uint32_t>(gic));
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::GlblErrAddrHi)), static_cast<uint32_t>(gic >> 32));
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::GlblErrWdata)), event::spi_of(event::dma_qm(2)));
  // A PQ with one command buffer holding STOP.
  const uint64_t ring = host_alloc(64 * 16);
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::PqBaseLo)), static_cast<uint32_t>(device_view(ring)));
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::PqBaseHi)), static_cast<uint32_t>(device_view(ring) >> 32));
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::PqSize)), 6);
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::GlblCfg0)),
                    regs::qm::kGlblCfg0PqfEnMask | regs::qm::kGlblCfg0CqfEnMask | regs::qm::kGlblCfg0CpEnMask);
  const auto cb = qman::CommandBufferBuilder().nop().stop().take();
  const uint64_t buffer = host_alloc(cb.size());
  host_write(buffer, cb.data(), cb.size());
  struct {
    uint64_t ptr;
    uint32_t len;
    uint32_t ctl;
  } bd{device_view(buffer), static_cast<uint32_t>(cb.size()), 0};
  host_write(ring, &bd, sizeof bd);
  sim->mmio_write32(cfg(regs::qman_reg(q, QmReg::PqPi, 0)), 1);

  const auto vector = sim->wait_for_interrupt(1000 * kUs);
  ASSERT_TRUE(vector.has_value());
  EXPECT_EQ(*vector, kEventQueueMsiVector);
  const EqEntry e = eq_entry(0);
  EXPECT_TRUE(eq::ctl_ready(e.ctl));
  EXPECT_EQ(eq::ctl_type(e.ctl), event::dma_qm(2)) << event::name(eq::ctl_type(e.ctl));
  EXPECT_EQ(eq::ctl_index(e.ctl), 1u);
  EXPECT_EQ(e.data[0], event::spi_of(event::dma_qm(2)));
  EXPECT_EQ(e.data[1], 2u);   // GAUDI_ENGINE_ID_DMA_2
  EXPECT_FALSE(eq::ctl_ready(eq_entry(1).ctl));
  // The QMAN recorded the STOP cause the driver reads when it handles the event.
  EXPECT_NE(sim->mmio_read32(cfg(regs::qman_reg(q, QmReg::GlblSts1, 0))) & regs::qm::kGlblSts1CpStopOp, 0u);
}

TEST_F(FirmwareTest, ReportedEventsFillAndWrapTheEventQueue) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues(16, 4));
  auto report = [&](uint32_t type, uint64_t address) {
    sim->on_sim_thread([&] { fw->report_event(type, {address, 0x11}); });
  };
  for (uint64_t i = 0; i < 4; ++i) report(event::kMmuPageFault, 0x1000 * (i + 1));
  // Three fit (one slot stays free); the fourth waits for the driver to consume.
  ASSERT_TRUE(poll([&] { return eq::ctl_ready(eq_entry(2).ctl); }));
  run_us(50);
  for (uint32_t s = 0; s < 3; ++s) {
    const EqEntry e = eq_entry(s);
    EXPECT_EQ(eq::ctl_type(e.ctl), event::kMmuPageFault);
    EXPECT_EQ(eq::ctl_index(e.ctl), s + 1);
    EXPECT_EQ(e.data[0], 0x1000u * (s + 1));
  }
  EXPECT_FALSE(eq::ctl_ready(eq_entry(3).ctl));

  consume_eq(3);
  report(event::kRazwiOrAdc, 0xBAD);
  ASSERT_TRUE(poll([&] { return eq::ctl_ready(eq_entry(0).ctl); }));   // wrapped to slot 0
  EXPECT_EQ(eq::ctl_index(eq_entry(3).ctl), 4u);
  EXPECT_EQ(eq_entry(3).data[0], 0x4000u);
  const EqEntry wrapped = eq_entry(0);
  EXPECT_EQ(eq::ctl_type(wrapped.ctl), event::kRazwiOrAdc);
  EXPECT_EQ(eq::ctl_index(wrapped.ctl), 5u);
  EXPECT_EQ(wrapped.data[0], 0xBADu);
  EXPECT_EQ(fw->stats().events_written, 5u);
}

TEST_F(FirmwareTest, DisablePciAccessHoldsEventsBack) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues());
  ASSERT_TRUE(wait_fence(send(packet(cpucp::Opcode::kDisablePciAccess))));
  sim->on_sim_thread([&] { fw->report_event(event::kDevResetReq); });
  run_us(100);
  EXPECT_FALSE(eq::ctl_ready(eq_entry(0).ctl));
  ASSERT_TRUE(wait_fence(send(packet(cpucp::Opcode::kEnablePciAccess))));
  ASSERT_TRUE(poll([&] { return eq::ctl_ready(eq_entry(0).ctl); }));
  EXPECT_EQ(eq::ctl_type(eq_entry(0).ctl), event::kDevResetReq);
}

TEST_F(FirmwareTest, HardResetHandshake) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues());
  ASSERT_TRUE(wait_fence(send(packet(cpucp::Opcode::kTest, 1))));

  // gaudi_hw_fini: halt the device CPU, wait for its acknowledgement.
  mmio_write(boot::kKmdMsgToCpu, boot::kKmdMsgGotoWfe);
  mmio_write(regs::gic::kGicdSetspiNsr, event::spi_of(event::kHaltMachine));
  ASSERT_TRUE(poll([&] { return mmio_read(boot::kCpuBootStatus) == boot::kStatusInWfe; }));
  EXPECT_FALSE(fw->serving_queues());
  // Halted: the CPU queue is no longer served.
  const uint64_t ignored = send(packet(cpucp::Opcode::kTest, 2));
  EXPECT_FALSE(wait_fence(ignored, 100));

  // The reset itself; the firmware boots again and the driver re-initialises the queues.
  mmio_write(boot::kSwAllRst, 1);
  ASSERT_TRUE(wait_boot());
  EXPECT_EQ(fw->stats().boots, 2u);
  EXPECT_EQ(mmio_read(boot::kKmdMsgToCpu), boot::kKmdMsgNa);
  EXPECT_EQ(mmio_read(cif::kQueueInit), boot::kPqInitNa);
  EXPECT_EQ(host_read<uint32_t>(ignored + cpucp::kFenceOffset), 0xFFFFFFFFu);
  ASSERT_TRUE(init_queues());
  const uint64_t again = send(packet(cpucp::Opcode::kTest, 3));
  ASSERT_TRUE(wait_fence(again));
  EXPECT_EQ(host_read<uint64_t>(again), 3u);
}

TEST_F(FirmwareTest, ModelledResetRebootsFromAnyState) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues());
  sim->on_sim_thread([&] { fw->reset(); });
  EXPECT_EQ(mmio_read(boot::kCpuBootStatus), boot::kStatusInPreboot);   // booting again
  ASSERT_TRUE(wait_boot());
  EXPECT_EQ(fw->stats().boots, 2u);
  EXPECT_FALSE(fw->serving_queues());
}

class FirmwareHeartbeatTest : public FirmwareTest {
 protected:
  void SetUp() override { build(10 * kUs); }
};

TEST_F(FirmwareHeartbeatTest, PeriodicHeartbeatEvents) {
  ASSERT_TRUE(wait_boot());
  ASSERT_TRUE(init_queues(16, 16));
  const uint64_t start_ps = sim->device_now_ps();
  run_us(45);
  uint32_t beats = 0;
  for (uint32_t s = 0; s < 16 && eq::ctl_ready(eq_entry(s).ctl); ++s) {
    const EqEntry e = eq_entry(s);
    EXPECT_EQ(eq::ctl_type(e.ctl), event::kHeartbeat);
    EXPECT_EQ(e.data[0], s + 1u);   // heartbeat count
    EXPECT_GT(e.data[1] * 1000, start_ps);   // device time in ns
    ++beats;
  }
  EXPECT_GE(beats, 3u);
  EXPECT_LE(beats, 5u);
}

}  // namespace
}  // namespace hpusim::firmware
