// QMAN command processing on a whole card, driven through MMIO and host memory only.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "hw/card/card_tracer.h"
#include "tests/qman/qman_fixture.h"
#include "tests/support/golden.h"
#include "traces/trace_reader.h"

namespace hpusim::testing {
namespace {

using qman::CommandBufferBuilder;
using regs::QmanId;
using regs::QmReg;

TEST_F(CardTest, NopCommandBuffersComplete) {
  open_stream(QmanId::DMA0, 0);
  for (int count : {1, 16, 64}) {
    for (int i = 0; i < count; ++i) submit(QmanId::DMA0, 0, CommandBufferBuilder().nop().nop().bytes());
    ASSERT_TRUE(drain(QmanId::DMA0, 0)) << count;
  }
  EXPECT_EQ(recorder.done["DMA0_QM/0"].size(), 81u);
  EXPECT_TRUE(recorder.errors.empty());
}

TEST_F(CardTest, MsgLongWritesSram) {
  open_stream(QmanId::DMA0, 0);
  submit(QmanId::DMA0, 0, CommandBufferBuilder().msg_long(sram(0x1000), 0xbaba0ded).bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0));
  EXPECT_EQ(sram_read32(0x1000), 0xbaba0dedu);

  CommandBufferBuilder many;
  for (uint32_t i = 0; i < 2000; ++i) many.msg_long(sram(0x10000 + 4 * i), 0x1000 + i);
  submit(QmanId::DMA0, 0, many.bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0));
  for (uint32_t i = 0; i < 2000; i += 97) EXPECT_EQ(sram_read32(0x10000 + 4 * i), 0x1000 + i) << i;
  EXPECT_EQ(sram_read32(0x10000 + 4 * 1999), 0x1000u + 1999);
}

// A command processor runs the front of its buffer while the rest streams in (cp_fetch_bytes
// reads, cp_fetch_window of them in flight): the first packet of a 32 KB buffer in host memory
// starts when the first packet of a 16-byte one does, long before the buffer's end has arrived.
TEST_F(CardTest, ACommandBufferRunsWhileTheRestOfItStreamsIn) {
  open_stream(QmanId::DMA0, 0);
  // When the buffer's first and last packets start, after its doorbell.
  const auto starts = [&](const std::vector<uint8_t>& cb) {
    const size_t before = recorder.executed.size();
    const uint64_t submitted = sim->host_now_ps();
    submit(QmanId::DMA0, 0, cb);
    EXPECT_TRUE(drain(QmanId::DMA0, 0));
    return std::make_pair(recorder.executed.at(before).start - submitted, recorder.executed.back().start - submitted);
  };
  const auto [one_first, one_last] = starts(CommandBufferBuilder().msg_long(sram(0x1000), 1).bytes());
  CommandBufferBuilder many;
  for (uint32_t i = 0; i < 2000; ++i) many.msg_long(sram(0x10000 + 4 * i), i);
  const auto [many_first, many_last] = starts(many.bytes());
  EXPECT_EQ(one_first, one_last);
  EXPECT_LT(many_first, one_first + 50'000);   // a 128-byte read instead of a 16-byte one
  // 32 KB come in 1 KB (8 reads of 128 bytes) per PCIe round trip of more than 600 ns.
  EXPECT_GT(many_last - many_first, 15'000'000u);
}

TEST_F(CardTest, MsgProtCompletionWritesTheQueueEntryAndRaisesTheInterrupt) {
  open_stream(QmanId::DMA1, 2);
  const uint64_t cq_slot = host_alloc(8);
  submit(QmanId::DMA1, 2,
         CommandBufferBuilder().nop().msg_prot(device_view(cq_slot), 0x80000007).msg_prot(device_view(kMsiHostAddress), 3).bytes());
  auto vector = sim->wait_for_interrupt(100000000);
  ASSERT_TRUE(vector.has_value());
  EXPECT_EQ(*vector, 3u);
  EXPECT_EQ(host_read<uint32_t>(cq_slot), 0x80000007u);  // the entry landed before the interrupt
}

TEST_F(CardTest, MsgProtToTheMsiRegisterInterruptsTheHost) {
  open_stream(QmanId::DMA0, 1);
  const uint64_t cq_slot = host_alloc(8);
  submit(QmanId::DMA0, 1,
         CommandBufferBuilder().msg_prot(device_view(cq_slot), 0x1234).msg_prot(cfg(regs::pcie::msi_intr(5)), 1).bytes());
  auto vector = sim->wait_for_interrupt(100000000);
  ASSERT_TRUE(vector.has_value());
  EXPECT_EQ(*vector, 5u);
  EXPECT_EQ(host_read<uint32_t>(cq_slot), 0x1234u);
  submit(QmanId::DMA0, 1, CommandBufferBuilder().msg_prot(cfg(regs::pcie::kCoreMsiReq), 1).bytes());
  vector = sim->wait_for_interrupt(100000000);
  ASSERT_TRUE(vector.has_value());
  EXPECT_EQ(*vector, 0u);
}

TEST_F(CardTest, TwoStreamsAreOrderedThroughAMonitorAndAFence) {
  const auto en = regs::SyncManager::E_N;
  const unsigned sob = 144, mon = 72;
  open_stream(QmanId::DMA0, 0);
  open_stream(QmanId::DMA0, 3);
  // Stream 0 arms a monitor whose payload increments its own fence 2, waits on that fence, then writes.
  submit(QmanId::DMA0, 0,
         CommandBufferBuilder()
             .msg_long(cfg(regs::sm_mon_pay_addrl(en, mon)), static_cast<uint32_t>(cfg(regs::qman_fence_rdata(QmanId::DMA0, 2, 0))))
             .msg_long(cfg(regs::sm_mon_pay_addrh(en, mon)), static_cast<uint32_t>(cfg(regs::qman_fence_rdata(QmanId::DMA0, 2, 0)) >> 32))
             .msg_long(cfg(regs::sm_mon_pay_data(en, mon)), 1)
             .msg_long(cfg(regs::sm_mon_arm(en, mon)), qman::monitor_arm_value(sob / 8, qman::single_sob_mask(sob), false, 1))
             .fence(2, 1, 1)
             .msg_long(sram(0x2000), 0xB)
             .bytes());
  sim->charge_ns(20000);
  sim->sync_device();
  EXPECT_EQ(mmio_read(QmanId::DMA0, QmReg::PqCi, 0), 0u) << "stream 0 must still wait on its fence";
  EXPECT_EQ(sram_read32(0x2000), 0u);
  // Stream 3 produces the data, then signals the sync object.
  submit(QmanId::DMA0, 3,
         CommandBufferBuilder().msg_long(sram(0x3000), 0xA).msg_long(cfg(regs::sm_sob(en, sob)), qman::sob_write_value(1, true)).bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 3));
  ASSERT_TRUE(drain(QmanId::DMA0, 0));
  EXPECT_EQ(sram_read32(0x3000), 0xAu);
  EXPECT_EQ(sram_read32(0x2000), 0xBu);
  ASSERT_EQ(recorder.done["DMA0_QM/0"].size(), 1u);
  ASSERT_EQ(recorder.done["DMA0_QM/3"].size(), 1u);
  EXPECT_GT(recorder.done["DMA0_QM/0"][0], recorder.done["DMA0_QM/3"][0]);
  EXPECT_EQ(card->qman(QmanId::DMA0)->fence_counter(0, 2), 0u);  // consumed by the FENCE
}

TEST_F(CardTest, StopRaisesAnErrorEventAndStopsOnlyThatCp) {
  open_stream(QmanId::DMA2, 0);
  open_stream(QmanId::DMA2, 1);
  const uint64_t err_addr = sram(0x4000);
  mmio_write(QmanId::DMA2, QmReg::GlblErrAddrLo, 0, static_cast<uint32_t>(err_addr));
  mmio_write(QmanId::DMA2, QmReg::GlblErrAddrHi, 0, static_cast<uint32_t>(err_addr >> 32));
  mmio_write(QmanId::DMA2, QmReg::GlblErrWdata, 0, 0xE770);
  mmio_write(QmanId::DMA2, QmReg::GlblErrCfg, 0, 0x1F << regs::qm::kGlblErrCfgCpMsgEnShift);
  submit(QmanId::DMA2, 0, CommandBufferBuilder().nop().stop().msg_long(sram(0x5000), 1).bytes());
  submit(QmanId::DMA2, 1, CommandBufferBuilder().msg_long(sram(0x5004), 2).bytes());
  ASSERT_TRUE(drain(QmanId::DMA2, 1));
  EXPECT_FALSE(drain(QmanId::DMA2, 0, 50));
  EXPECT_TRUE(mmio_read(QmanId::DMA2, QmReg::GlblSts1, 0) & regs::qm::kGlblSts1CpStopOp);
  EXPECT_TRUE((mmio_read(QmanId::DMA2, QmReg::GlblSts0, 0) >> regs::qm::kGlblSts0CpIsStopShift) & 1u);
  EXPECT_EQ(sram_read32(0x4000), 0xE770u);   // the error message
  EXPECT_EQ(sram_read32(0x5000), 0u);        // nothing after the STOP ran
  EXPECT_EQ(sram_read32(0x5004), 2u);        // the other stream kept going
  ASSERT_EQ(recorder.errors.size(), 1u);
  EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kStop);
  EXPECT_NE(recorder.errors[0].second.find("DMA2_QM CP0"), std::string::npos) << recorder.errors[0].second;
}

// A failed message write is reported to the CP that sent it, at its next message barrier; the
// other streams of the QMAN are not affected.
TEST_F(CardTest, FailedMessageStopsOnlyTheCpThatSentIt) {
  open_stream(QmanId::DMA3, 0);
  open_stream(QmanId::DMA3, 1);
  submit(QmanId::DMA3, 1, CommandBufferBuilder().msg_long(0x4000000000ull, 1).msg_long(sram(0xC100), 2).bytes());
  submit(QmanId::DMA3, 0, CommandBufferBuilder().msg_long(sram(0xC000), 3).msg_long(sram(0xC004), 4).bytes());
  ASSERT_TRUE(drain(QmanId::DMA3, 0));
  EXPECT_FALSE(drain(QmanId::DMA3, 1, 50));
  EXPECT_EQ(sram_read32(0xC004), 4u);
  EXPECT_EQ(sram_read32(0xC100), 0u);
  EXPECT_TRUE(mmio_read(QmanId::DMA3, QmReg::GlblSts1, 1) & regs::qm::kGlblSts1CpMsgWrErr);
  EXPECT_EQ(mmio_read(QmanId::DMA3, QmReg::GlblSts1, 0), 0u);
  ASSERT_EQ(recorder.errors.size(), 1u);
  EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kMessage);
}

TEST_F(CardTest, UndefinedOpcodeIsAnErrorNotACrash) {
  open_stream(QmanId::TPC3, 2);
  submit(QmanId::TPC3, 2, CommandBufferBuilder().nop().raw_header(0, 0xE << 24).bytes());
  EXPECT_FALSE(drain(QmanId::TPC3, 2, 50));
  EXPECT_TRUE(mmio_read(QmanId::TPC3, QmReg::GlblSts1, 2) & regs::qm::kGlblSts1CpUndefCmdErr);
  ASSERT_EQ(recorder.errors.size(), 1u);
  EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kUndefinedOpcode);
  // A truncated packet at the end of a buffer is an error too.
  open_stream(QmanId::TPC3, 1);
  std::vector<uint8_t> truncated = CommandBufferBuilder().msg_long(sram(0x10), 1).bytes();
  truncated.resize(12);
  submit(QmanId::TPC3, 1, truncated);
  EXPECT_FALSE(drain(QmanId::TPC3, 1, 50));
  EXPECT_EQ(recorder.errors.size(), 2u);
}

// Gaudi's predicate map is the non-consecutive one (hl-thunk test_cs_load_pred_non_consecutive_map):
// 32 words, predicate i is bit 0 of word i.
TEST_F(CardTest, PredicatedPacketsFollowLoadAndExe) {
  open_stream(QmanId::DMA3, 0);
  const uint64_t predicates = host_alloc(128);
  std::vector<uint32_t> words(32, 0);
  words[3] = 1;
  words[4] = 0xFFFFFFFEu;   // only bit 0 counts: predicate 4 stays clear
  host_write(predicates, words.data(), 128);
  qman::MsgLong taken;
  taken.addr = sram(0x6000);
  taken.value = 0x33;
  taken.pred = 3;
  taken.barriers = qman::kRbMb;
  qman::MsgLong skipped = taken;
  skipped.addr = sram(0x6004);
  skipped.pred = 4;
  submit(QmanId::DMA3, 0,
         CommandBufferBuilder().load_and_exe(device_view(predicates), true, false).add(taken).add(skipped).bytes());
  ASSERT_TRUE(drain(QmanId::DMA3, 0));
  EXPECT_EQ(sram_read32(0x6000), 0x33u);
  EXPECT_EQ(sram_read32(0x6004), 0u);
}

TEST_F(CardTest, CpDmaFeedsTheLowerCp) {
  open_stream(QmanId::DMA4, 1);
  const std::vector<uint8_t> inner = CommandBufferBuilder().msg_long(sram(0x7000), 0x77).bytes();
  const uint64_t inner_host = host_alloc(inner.size());
  host_write(inner_host, inner.data(), inner.size());
  submit(QmanId::DMA4, 1, CommandBufferBuilder().cp_dma(device_view(inner_host), static_cast<uint32_t>(inner.size())).bytes());
  ASSERT_TRUE(drain(QmanId::DMA4, 1));
  sim->charge_ns(20000);
  sim->sync_device();
  EXPECT_EQ(sram_read32(0x7000), 0x77u);
}

TEST_F(CardTest, WaitIncrementsAFenceAfterItsCycles) {
  open_stream(QmanId::MME0, 0);
  submit(QmanId::MME0, 0, CommandBufferBuilder().wait(1000, 1, 1).fence(1, 1, 1).msg_long(sram(0x8000), 5).bytes());
  ASSERT_TRUE(drain(QmanId::MME0, 0));
  EXPECT_EQ(sram_read32(0x8000), 5u);
  EXPECT_TRUE(recorder.errors.empty());
}

TEST_F(CardTest, FenceCountersAreVisibleAndWritable) {
  open_stream(QmanId::DMA5, 0);
  mmio_write(QmanId::DMA5, QmReg::CpFence0Rdata, 0, 3);
  sim->sync_device();
  EXPECT_EQ(mmio_read(QmanId::DMA5, QmReg::CpFence0Cnt, 0), 3u);
  submit(QmanId::DMA5, 0, CommandBufferBuilder().fence(0, 2, 2).bytes());
  ASSERT_TRUE(drain(QmanId::DMA5, 0));
  EXPECT_EQ(mmio_read(QmanId::DMA5, QmReg::CpFence0Cnt, 0), 1u);
}

TEST_F(CardTest, UnmappedCommandBufferIsAFetchError) {
  open_stream(QmanId::DMA6, 0);
  Queue& queue = open_stream(QmanId::DMA6, 0);
  struct {
    uint64_t ptr;
    uint32_t len;
    uint32_t ctl;
  } bd{0x4000000000ull, 64, 0};  // nothing is mapped there
  host_write(queue.pq, &bd, 16);
  queue.pi = 1;
  mmio_write(QmanId::DMA6, QmReg::PqPi, 0, 1);
  EXPECT_FALSE(drain(QmanId::DMA6, 0, 50));
  EXPECT_TRUE(mmio_read(QmanId::DMA6, QmReg::GlblSts1, 0) & regs::qm::kGlblSts1CpRdErr);
}

TEST_F(CardTest, PacketsAndSyncObjectsAppearOnTheTimeline) {
  traces::Timeline timeline;
  timeline.set_packets(true);   // packet-level events are opt-in
  std::unique_ptr<hw::CardTracer> tracer;
  sim->on_sim_thread([&] { tracer = std::make_unique<hw::CardTracer>(timeline, *card); });
  const auto en = regs::SyncManager::E_N;
  open_stream(QmanId::DMA0, 0);
  submit(QmanId::DMA0, 0,
         CommandBufferBuilder()
             .msg_long(cfg(regs::sm_mon_pay_addrl(en, 80)), static_cast<uint32_t>(sram(0x9000)))
             .msg_long(cfg(regs::sm_mon_pay_addrh(en, 80)), static_cast<uint32_t>(sram(0x9000) >> 32))
             .msg_long(cfg(regs::sm_mon_pay_data(en, 80)), 9)
             .msg_long(cfg(regs::sm_mon_arm(en, 80)), qman::monitor_arm_value(200 / 8, qman::single_sob_mask(200), false, 1))
             .msg_long(cfg(regs::sm_sob(en, 200)), qman::sob_write_value(1, true))
             .nop()
             .bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0));
  sim->charge_ns(5000);
  sim->sync_device();
  EXPECT_EQ(sram_read32(0x9000), 9u);
  const std::string path = ::testing::TempDir() + "qman_timeline.pftrace";
  sim->on_sim_thread([&] {
    std::lock_guard<std::mutex> lock(timeline.mutex());
    timeline.writer().write_perfetto(path);
  });
  traces::TraceModel model = traces::read_perfetto(path);
  const traces::TrackInfo* stream = model.find_track("DMA0_QM stream 0");
  ASSERT_NE(stream, nullptr);
  auto slices = model.slices_on(stream->uuid);
  ASSERT_EQ(slices.size(), 7u);   // the command buffer and its six packets inside it
  EXPECT_EQ(slices[0]->name, "command buffer");
  EXPECT_EQ(slices[1]->name, "MSG_LONG");
  EXPECT_EQ(slices[1]->depth, 1u);
  EXPECT_EQ(slices[6]->name, "NOP");
  const traces::TrackInfo* sm = model.find_track("sm_E_N");
  ASSERT_NE(sm, nullptr);
  bool sob_seen = false, fired_seen = false;
  for (const auto* instant : model.instants_on(sm->uuid)) {
    sob_seen |= instant->name == "SOB 200";
    fired_seen |= instant->name == "monitor 80 fired";
  }
  EXPECT_TRUE(sob_seen);
  EXPECT_TRUE(fired_seen);
  sim->on_sim_thread([&] { card->set_qman_observer(nullptr); card->set_sync_manager_observer(nullptr); tracer.reset(); });
}

// LIN_DMA through the external DMA0 queue: host -> SRAM -> host and host -> DRAM -> host, the
// data checked in host memory, completion signalled to a sync object after the data.
TEST_F(CardTest, LinDmaRoundTripsThroughSramAndDram) {
  const auto en = regs::SyncManager::E_N;
  open_stream(QmanId::DMA0, 0);
  // What the driver programs: the CP's LIN_DMA offsets into the DMA core, and the core's enable.
  mmio_write(QmanId::DMA0, QmReg::CpLdmaSrcBaseLoOffset, 0, regs::kQmanLdmaSrcOffset);
  mmio_write(QmanId::DMA0, QmReg::CpLdmaDstBaseLoOffset, 0, regs::kQmanLdmaDstOffset);
  mmio_write(QmanId::DMA0, QmReg::CpLdmaTsizeOffset, 0, regs::kQmanLdmaSizeOffset);
  const uint64_t core = cfg(regs::dma_core_base(0));
  sim->mmio_write32(core + regs::dma_core::kCfg0, regs::dma_core::kCfg0En);
  sim->mmio_write32(core + regs::dma_core::kWrCompAddrLo, static_cast<uint32_t>(cfg(regs::sm_sob(en, 400))));
  sim->mmio_write32(core + regs::dma_core::kWrCompAddrHi, static_cast<uint32_t>(cfg(regs::sm_sob(en, 400)) >> 32));
  sim->mmio_write32(core + regs::dma_core::kWrCompWdata, qman::sob_write_value(1, true));

  std::mt19937_64 rng(5);
  uint32_t completions = 0;
  for (uint32_t size : {1u, 77u, 5000u, 92517u, 1u << 20}) {
    for (uint64_t device_buffer : {sram(0x100000 + 3), preset.memory_map().dram_user_base() + 0x1000005}) {
      std::vector<uint8_t> data(size);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      const uint64_t source = host_alloc(size), back = host_alloc(size);
      host_write(source, data.data(), size);
      submit(QmanId::DMA0, 0,
             CommandBufferBuilder()
                 .lin_dma(device_view(source), device_buffer, size, true)
                 .lin_dma(device_buffer, device_view(back), size, true)
                 .bytes());
      ASSERT_TRUE(drain(QmanId::DMA0, 0, 20000)) << size;
      completions += 2;
      // The last transfer may still be writing when the CP has moved on: wait for its completion.
      for (int i = 0; i < 200 && sim->mmio_read32(cfg(regs::sm_sob(en, 400))) != completions; ++i) sim->charge_ns(1000);
      ASSERT_EQ(sim->mmio_read32(cfg(regs::sm_sob(en, 400))), completions) << size;
      std::vector<uint8_t> seen(size);
      sim->on_sim_thread([&] { card->memory().host_memory().read(back, seen.data(), size); });
      EXPECT_EQ(seen, data) << size << " bytes via " << std::hex << device_buffer;
    }
  }
  EXPECT_TRUE(recorder.errors.empty());
}

// Stream arbitration with ARB_CFG_0 enabled in priority mode: while stream 0 holds the grant, the
// other streams wait at their ARB_POINT; on release the highest-priority waiter goes first.
TEST_F(CardTest, ArbitrationGrantsTheHighestPriorityWaiterFirst) {
  for (unsigned s = 0; s < 3; ++s) open_stream(QmanId::DMA1, s);
  mmio_write(QmanId::DMA1, QmReg::ArbCfg0, 0, regs::qm::kArbCfg0En);   // priority mode
  submit(QmanId::DMA1, 0,
         CommandBufferBuilder().arb_point(1, false).wait(20000, 3, 1).msg_long(sram(0xB000), 1).arb_point(0, true).bytes());
  sim->charge_ns(3000);
  submit(QmanId::DMA1, 1, CommandBufferBuilder().arb_point(2, false).msg_long(sram(0xB004), 2).arb_point(0, true).bytes());
  submit(QmanId::DMA1, 2, CommandBufferBuilder().arb_point(9, false).msg_long(sram(0xB008), 3).arb_point(0, true).bytes());
  sim->charge_ns(10000);
  sim->sync_device();
  EXPECT_EQ(sram_read32(0xB004), 0u) << "stream 1 ran while stream 0 held the grant";
  EXPECT_EQ(sram_read32(0xB008), 0u) << "stream 2 ran while stream 0 held the grant";
  for (unsigned s = 0; s < 3; ++s) ASSERT_TRUE(drain(QmanId::DMA1, s));
  const auto t0 = recorder.done["DMA1_QM/0"].at(0), t1 = recorder.done["DMA1_QM/1"].at(0),
             t2 = recorder.done["DMA1_QM/2"].at(0);
  EXPECT_LT(t0, t2);
  EXPECT_LT(t2, t1);   // priority 9 before priority 2
  EXPECT_EQ(sram_read32(0xB004), 2u);
  EXPECT_EQ(sram_read32(0xB008), 3u);
}

// Weighted round robin: with weights 2 and 1 and both streams asking all the time, stream 0 gets
// two critical sections for every one of stream 1. Stream 2 holds the grant first, so both are
// already waiting when the contest starts.
TEST_F(CardTest, WeightedRoundRobinFollowsTheWeights) {
  open_stream(QmanId::DMA1, 0);
  open_stream(QmanId::DMA1, 1);
  open_stream(QmanId::DMA1, 2);
  mmio_write(QmanId::DMA1, QmReg::ArbWrrWeight, 0, 2);
  mmio_write(QmanId::DMA1, QmReg::ArbWrrWeight, 1, 1);
  mmio_write(QmanId::DMA1, QmReg::ArbCfg0, 0, regs::qm::kArbCfg0En | regs::qm::kArbCfg0Type);
  submit(QmanId::DMA1, 2, CommandBufferBuilder().arb_point(0, false).wait(20000, 3, 1).arb_point(0, true).bytes());
  sim->charge_ns(3000);
  for (unsigned s = 0; s < 2; ++s) {
    CommandBufferBuilder cb;
    for (int i = 0; i < 9; ++i) cb.arb_point(0, false).msg_long(sram(0xB200 + 4 * s), i).arb_point(0, true);
    submit(QmanId::DMA1, s, cb.bytes());
  }
  ASSERT_TRUE(drain(QmanId::DMA1, 0));
  ASSERT_TRUE(drain(QmanId::DMA1, 1));
  std::string order;
  for (const auto& [at, who] : recorder.message_order) order += who == "DMA1_QM/0" ? '0' : '1';
  ASSERT_EQ(order.size(), 18u);
  // While both compete (the first 12 grants), every window of three grants is two of 0, one of 1.
  for (size_t i = 0; i + 3 <= 12; i += 3) {
    const std::string window = order.substr(i, 3);
    EXPECT_EQ(std::count(window.begin(), window.end(), '0'), 2) << order;
  }
}

TEST_F(CardTest, ArbPointIsANopWithoutArbitration) {
  open_stream(QmanId::DMA1, 0);
  submit(QmanId::DMA1, 0, CommandBufferBuilder().arb_point(3, false).msg_long(sram(0xB100), 7).bytes());
  ASSERT_TRUE(drain(QmanId::DMA1, 0));
  EXPECT_EQ(sram_read32(0xB100), 7u);
}

// Random command buffers (random bytes and mutated valid buffers) on a live QMAN: each either
// completes, stops its CP with an error, or blocks (a FENCE nobody signals); the simulator never
// crashes or hangs, and a reset brings the QMAN back.
TEST_F(CardTest, RandomCommandBuffersNeverCrashTheSimulator) {
  std::mt19937_64 rng(2024);
  open_stream(QmanId::DMA7, 0);
  unsigned completed = 0, stopped = 0, blocked = 0;
  for (int i = 0; i < 60; ++i) {
    std::vector<uint8_t> cb;
    if (i % 10 == 5) {
      cb = CommandBufferBuilder().fence(3, 15, 1).msg_long(sram(0x200), 1).bytes();  // nobody signals
    } else if (i % 2 == 0) {
      cb.resize(8 * (1 + rng() % 12));
      for (auto& b : cb) b = static_cast<uint8_t>(rng());
    } else {
      cb = CommandBufferBuilder().nop().msg_long(sram(0x100 + 4 * (rng() % 64)), 1).nop().bytes();
      cb[rng() % cb.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    submit(QmanId::DMA7, 0, cb);
    if (drain(QmanId::DMA7, 0, 30)) {
      ++completed;
      continue;
    }
    card->qman(QmanId::DMA7)->cp_stopped(0) ? ++stopped : ++blocked;
    // Recover the way a driver does after a hard reset: reset the QMAN, program the queue again.
    sim->on_sim_thread([&] { card->qman(QmanId::DMA7)->reset(); });
    open_stream(QmanId::DMA7, 0);
  }
  EXPECT_GT(completed, 0u);
  EXPECT_GT(stopped, 0u);
  EXPECT_GE(blocked, 6u);
  RecordProperty("completed", completed);
  RecordProperty("stopped", stopped);
  RecordProperty("blocked", blocked);
  EXPECT_EQ(completed + stopped + blocked, 60u);
  // Still fully usable.
  submit(QmanId::DMA7, 0, CommandBufferBuilder().msg_long(sram(0xA000), 0x5A5A).bytes());
  ASSERT_TRUE(drain(QmanId::DMA7, 0));
  EXPECT_EQ(sram_read32(0xA000), 0x5A5Au);
}

// A fixed submission scenario whose device-side completion times (in picoseconds) are kept as
// golden values: any change to QMAN, sync manager, fabric, SRAM or PCIe timing shows up here.
TEST_F(CardTest, SubmissionScenarioMatchesGoldenCycleCounts) {
  GoldenFile golden("qman_submission.txt");
  const auto en = regs::SyncManager::E_N;
  open_stream(QmanId::DMA0, 0);
  open_stream(QmanId::DMA0, 3);
  submit(QmanId::DMA0, 0, CommandBufferBuilder().nop().bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0));
  for (int i = 0; i < 64; ++i) submit(QmanId::DMA0, 0, CommandBufferBuilder().nop().nop().nop().nop().bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0));
  CommandBufferBuilder many;
  for (uint32_t i = 0; i < 2000; ++i) many.msg_long(sram(0x10000 + 4 * i), i);
  submit(QmanId::DMA0, 3, many.bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 3));
  submit(QmanId::DMA0, 0,
         CommandBufferBuilder()
             .msg_long(cfg(regs::sm_mon_pay_addrl(en, 90)), static_cast<uint32_t>(cfg(regs::qman_fence_rdata(QmanId::DMA0, 1, 0))))
             .msg_long(cfg(regs::sm_mon_pay_addrh(en, 90)), static_cast<uint32_t>(cfg(regs::qman_fence_rdata(QmanId::DMA0, 1, 0)) >> 32))
             .msg_long(cfg(regs::sm_mon_pay_data(en, 90)), 1)
             .msg_long(cfg(regs::sm_mon_arm(en, 90)), qman::monitor_arm_value(300 / 8, qman::single_sob_mask(300), false, 2))
             .fence(1, 1, 1)
             .msg_long(sram(0x2000), 0xB)
             .bytes());
  submit(QmanId::DMA0, 3,
         CommandBufferBuilder().msg_long(cfg(regs::sm_sob(en, 300)), qman::sob_write_value(1, true))
             .wait(500, 0, 1).fence(0, 1, 1)
             .msg_long(cfg(regs::sm_sob(en, 300)), qman::sob_write_value(1, true)).bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0));
  ASSERT_TRUE(drain(QmanId::DMA0, 3));
  const auto& s0 = recorder.done["DMA0_QM/0"];
  const auto& s3 = recorder.done["DMA0_QM/3"];
  ASSERT_EQ(s0.size(), 66u);
  ASSERT_EQ(s3.size(), 2u);
  golden.check("one_nop_cb_done_ps", s0[0]);
  golden.check("sixty_four_nop_cbs_done_ps", s0[64]);
  golden.check("two_thousand_msg_long_done_ps", s3[0]);
  golden.check("fence_released_cb_done_ps", s0[65]);
  golden.check("signalling_cb_done_ps", s3[1]);
  golden.check("dma0_packets", card->qman(QmanId::DMA0)->stats().packets);

  // The engine barrier: the driver's completion (MSG_PROT with EB|MB) behind a LIN_DMA is sent
  // only once the DMA core has finished (on DMA1, so the DMA0 values above stay as they were).
  open_stream(QmanId::DMA1, 0);
  enable_lin_dma(QmanId::DMA1, 0);
  watch_dma(1);
  const uint64_t cq = host_alloc(8);
  submit(QmanId::DMA1, 0,
         CommandBufferBuilder()
             .lin_dma(sram(0x100000), preset.memory_map().dram_user_base() + 0x200000, 256u << 10)
             .msg_prot(device_view(cq), 0x80000001u, qman::Barriers{true, false, true})
             .bytes());
  ASSERT_TRUE(drain(QmanId::DMA1, 0, 2000));
  ASSERT_EQ(dma_events.done.size(), 1u);
  ASSERT_EQ(recorder.done["DMA1_QM/0"].size(), 1u);
  EXPECT_GE(recorder.done["DMA1_QM/0"][0], dma_events.done[0].at);
  golden.check("eb_lin_dma_done_ps", dma_events.done[0].at);
  golden.check("eb_completion_cb_done_ps", recorder.done["DMA1_QM/0"][0]);
}

}  // namespace
}  // namespace hpusim::testing
