// Several streams of one QMAN through the driver API only (the hl-thunk command_submission tests
// test_cs_two_streams_with_fence, test_cs_two_streams_with_{priority_,wrr_}arb and
// test_cs_load_pred_non_consecutive_map): ordering two streams with a monitor and a fence,
// stream arbitration (ARB_CFG_0 priority and weighted round robin, ARB_POINT acquire/release),
// and predicated packets after LOAD_AND_EXE loads the predicate map. Every CB is a user CB on an
// external queue (DMA_0_x / DMA_1_x); results are read back by DMA into mapped host buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "tests/driver/driver_fixture.h"

namespace hpusim::driver {
namespace {

using regs::QmanId;
using regs::QmReg;
constexpr auto kEn = regs::SyncManager::E_N;

class DriverStreamsTest : public DriverTest {
 protected:
  static uint64_t qm(QmanId qman, QmReg reg, unsigned index = 0) { return cfg(regs::qman_reg(qman, reg, index)); }
  static uint64_t sob(unsigned id) { return cfg(regs::sm_sob(kEn, id)); }
  // Arms monitor `mon` of E_N on sync object `id` (>= target) with its payload adding 1 to fence
  // 2 of `qman`'s stream `stream`, then FENCEs on it: the stream waits until the SOB reaches target.
  static void wait_for(CommandBufferBuilder& cb, QmanId qman, unsigned stream, unsigned id, unsigned mon,
                       uint16_t target) {
    const uint64_t fence = cfg(regs::qman_fence_rdata(qman, 2, stream));
    cb.msg_long(cfg(regs::sm_mon_pay_addrl(kEn, mon)), static_cast<uint32_t>(fence))
        .msg_long(cfg(regs::sm_mon_pay_addrh(kEn, mon)), static_cast<uint32_t>(fence >> 32))
        .msg_long(cfg(regs::sm_mon_pay_data(kEn, mon)), 1)
        .msg_long(cfg(regs::sm_mon_arm(kEn, mon)), qman::monitor_arm_value(id / 8, qman::single_sob_mask(id), false, target))
        .fence(2, 1, 1);
  }
  uint64_t submit(const std::vector<hl_cs_chunk>& chunks) {
    uint64_t seq = 0;
    EXPECT_EQ(dev->submit(chunks, &seq), 0);
    return seq;
  }
  // WAIT_CS status after waiting at most `timeout_us` of host time (0: a poll).
  uint32_t status(uint64_t seq, uint64_t timeout_us) {
    uint32_t s = 99;
    dev->wait(seq, timeout_us, &s);
    return s;
  }
  // `count` 32-bit words of SRAM at sram(offset), read back by a LIN_DMA on DMA_0_3 into a mapped
  // host buffer.
  std::vector<uint32_t> read_sram(uint64_t offset, size_t count) {
    std::vector<uint32_t> words(count, 0xDEADBEEFu);
    const uint32_t bytes = static_cast<uint32_t>(4 * count);
    const uint64_t va = map(words.data(), bytes);
    EXPECT_EQ(run({ext_cb(QueueId::DMA_0_3, CommandBufferBuilder().lin_dma(sram(offset), va, bytes).bytes())}),
              HL_WAIT_CS_STATUS_COMPLETED);
    EXPECT_EQ(dev->unmap_host(va), 0);
    return words;
  }
};

// test_cs_two_streams_with_fence. Stream A (`a_queue`) waits on a sync object through a monitor and
// its fence, then DMAs an SRAM region to the host; stream B (DMA_0_3) DMAs host data into that
// region, then signals the sync object with a MSG_LONG (with the engine barrier when
// `engine_barrier`, so the signal leaves only after its DMA landed). The region first holds an
// old pattern. A is submitted first and must still be waiting when B is submitted. Returns what
// A brought back to the host.
class DriverStreamsFenceTest : public DriverStreamsTest {
 protected:
  static constexpr uint32_t kBytes = 64 * 1024;
  std::vector<uint8_t> old_data = random_bytes(kBytes, 1), new_data = random_bytes(kBytes, 2);

  std::vector<uint8_t> two_streams(QueueId a_queue, unsigned id, unsigned mon, uint64_t region, bool engine_barrier) {
    std::vector<uint8_t> back(kBytes, 0xEE);
    const uint64_t old_va = map(old_data.data(), kBytes), new_va = map(new_data.data(), kBytes),
                   back_va = map(back.data(), kBytes);
    // The region holds the old pattern, and the sync object is 0.
    EXPECT_EQ(run({ext_cb(QueueId::DMA_0_1, CommandBufferBuilder()
                                                .lin_dma(old_va, region, kBytes)
                                                .msg_long(sob(id), qman::sob_write_value(0, false))
                                                .bytes())}),
              HL_WAIT_CS_STATUS_COMPLETED);

    CommandBufferBuilder a;
    wait_for(a, regs::queue_qman(a_queue), regs::queue_stream(a_queue), id, mon, 1);
    a.lin_dma(region, back_va, kBytes);
    const uint64_t seq_a = submit({ext_cb(a_queue, a.bytes())});
    EXPECT_EQ(status(seq_a, 100), HL_WAIT_CS_STATUS_BUSY) << "stream A did not wait for its fence";
    EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0xEE; })) << "A's DMA ran early";

    CommandBufferBuilder b;
    b.lin_dma(new_va, region, kBytes)
        .msg_long(sob(id), qman::sob_write_value(1, true), qman::Barriers{engine_barrier, true, true});
    const uint64_t seq_b = submit({ext_cb(QueueId::DMA_0_3, b.bytes())});
    EXPECT_EQ(status(seq_b, 1000000), HL_WAIT_CS_STATUS_COMPLETED);
    EXPECT_EQ(status(seq_a, 1000000), HL_WAIT_CS_STATUS_COMPLETED);
    for (uint64_t va : {old_va, new_va, back_va}) EXPECT_EQ(dev->unmap_host(va), 0);
    return back;
  }
};

// As hl-thunk: both streams on DMA_0 (A = DMA_0_0, B = DMA_0_3), B signals with EB|RB|MB.
TEST_F(DriverStreamsFenceTest, TwoStreamsOrderedByAMonitorAndAFence) {
  make();
  ASSERT_EQ(dev->open(), 0);
  ASSERT_NE(old_data, new_data);
  const auto back = two_streams(QueueId::DMA_0_0, 300, 100, sram(0x100000), true);
  EXPECT_NE(back, old_data) << "A read the region before B's DMA had landed";
  EXPECT_EQ(back, new_data);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

// The engine barrier is what holds B's signal: with A on another DMA engine (DMA_1_0), B's signal
// with EB still lets A see all of B's data; the same signal without EB leaves as soon as B's
// LIN_DMA is committed (hw/qman/README.md: the CP runs on after committing a LIN_DMA unless a
// later packet has EB), so A copies the region while B's 64 KiB are still on their way.
TEST_F(DriverStreamsFenceTest, TheEngineBarrierHoldsTheSignalUntilTheDmaLanded) {
  make();
  ASSERT_EQ(dev->open(), 0);
  EXPECT_EQ(two_streams(QueueId::DMA_1_0, 301, 101, sram(0x100000), true), new_data);
  const auto racy = two_streams(QueueId::DMA_1_0, 302, 102, sram(0x200000), false);
  EXPECT_NE(racy, new_data) << "without EB the signal should overtake B's DMA";
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

// The contest of the two arbitration tests: on QMAN DMA1, stream 0 (DMA_1_0) takes the grant,
// then waits on a sync object while holding it; the other streams' CSs are submitted and all
// stop at their ARB_POINT; a last CS on DMA_0_2 sets the sync object. Each critical section
// writes the device timestamp (MSG_LONG op=1) into its own SRAM slot, so the slots order the
// grants. Fails if a contender finished, or wrote a slot, while stream 0 held the grant.
class DriverStreamsArbitrationTest : public DriverStreamsTest {
 protected:
  static constexpr uint64_t kSlots = 0x2000;   // SRAM offset of slot [stream][i]: kSlots + 0x100 * stream + 4 * i
  static uint64_t slot(unsigned stream, unsigned i) { return kSlots + 0x100 * stream + 4 * i; }

  // `arb_config` ({register, {index, value}}) is written with MSG_LONGs to DMA1's ARB registers
  // (the model has no register protection); the slots are cleared in the same CS.
  void contest(const std::vector<std::pair<QmReg, std::pair<unsigned, uint32_t>>>& arb_config,
               const std::array<std::vector<uint8_t>, 4>& contenders) {
    const unsigned id = 310, mon = 110;
    CommandBufferBuilder config;
    for (const auto& [reg, write] : arb_config) config.msg_long(qm(QmanId::DMA1, reg, write.first), write.second);
    for (unsigned s = 0; s < 4; ++s)
      for (unsigned i = 0; i < 0x40; ++i) config.msg_long(sram(slot(s, i)), 0);
    config.msg_long(sob(id), qman::sob_write_value(0, false));
    ASSERT_EQ(run({ext_cb(QueueId::DMA_0_1, config.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);

    CommandBufferBuilder holder;
    holder.arb_point(0, false);
    wait_for(holder, QmanId::DMA1, 0, id, mon, 1);
    holder.msg_long(sram(slot(0, 0)), 0, qman::kRbMb, /*op=*/1).arb_point(0, true);
    const uint64_t seq_holder = submit({ext_cb(QueueId::DMA_1_0, holder.bytes())});
    ASSERT_EQ(status(seq_holder, 20), HL_WAIT_CS_STATUS_BUSY);

    std::vector<uint64_t> seqs;
    for (unsigned s = 1; s < 4; ++s) {
      if (contenders[s].empty()) continue;
      seqs.push_back(submit({ext_cb(static_cast<QueueId>(static_cast<unsigned>(QueueId::DMA_1_0) + s), contenders[s])}));
    }
    for (uint64_t seq : seqs) {
      EXPECT_EQ(status(seq, 50), HL_WAIT_CS_STATUS_BUSY) << "a stream passed its ARB_POINT while stream 0 held the grant";
    }
    const auto early = read_sram(kSlots + 0x100, 3 * 0x40);
    EXPECT_TRUE(std::all_of(early.begin(), early.end(), [](uint32_t w) { return w == 0; }))
        << "a critical section ran while stream 0 held the grant";

    EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, CommandBufferBuilder().msg_long(sob(id), qman::sob_write_value(1, true)).bytes())}),
              HL_WAIT_CS_STATUS_COMPLETED);
    EXPECT_EQ(status(seq_holder, 1000000), HL_WAIT_CS_STATUS_COMPLETED);
    for (uint64_t seq : seqs) EXPECT_EQ(status(seq, 1000000), HL_WAIT_CS_STATUS_COMPLETED);
  }

  // The grants in time order, as stream numbers, from the timestamps of `count[s]` slots of each
  // stream. Every slot must have been written, and the timestamps must be distinct.
  std::string grant_order(const std::array<unsigned, 4>& count) {
    const auto words = read_sram(kSlots, 4 * 0x40);
    std::map<uint32_t, unsigned> by_time;
    size_t total = 0;
    for (unsigned s = 0; s < 4; ++s) {
      for (unsigned i = 0; i < count[s]; ++i) {
        const uint32_t t = words[0x40 * s + i];
        EXPECT_NE(t, 0u) << "stream " << s << " critical section " << i << " did not run";
        by_time[t] = s;
        ++total;
      }
      for (unsigned i = count[s]; i < 0x40; ++i) EXPECT_EQ(words[0x40 * s + i], 0u) << "stream " << s << " slot " << i;
    }
    EXPECT_EQ(by_time.size(), total) << "two critical sections share a timestamp";
    std::string order;
    for (const auto& [t, s] : by_time) order += static_cast<char>('0' + s);
    return order;
  }
};

// test_cs_two_streams_with_priority_arb: ARB_CFG_0 = EN, TYPE = 0 (priority). Streams 1, 2, 3 ask
// with priorities 2, 9, 5 while stream 0 holds the grant; on release the grant goes to the highest
// ARB_POINT priority value first (hw/qman/README.md), so the order is 0, 2, 3, 1.
TEST_F(DriverStreamsArbitrationTest, PriorityArbitrationGrantsTheHighestPriorityWaiterFirst) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const uint8_t priority[4] = {0, 2, 9, 5};
  std::array<std::vector<uint8_t>, 4> contenders;
  for (unsigned s = 1; s < 4; ++s) {
    contenders[s] = CommandBufferBuilder()
                        .arb_point(priority[s], false)
                        .msg_long(sram(slot(s, 0)), 0, qman::kRbMb, /*op=*/1)
                        .msg_long(sram(slot(s, 1)), 0x600D0000u + s)   // a second write inside the section
                        .arb_point(0, true)
                        .take();
  }
  contest({{QmReg::ArbCfg0, {0, regs::qm::kArbCfg0En}}}, contenders);
  if (HasFatalFailure()) return;
  const auto words = read_sram(kSlots, 4 * 0x40);
  for (unsigned s = 1; s < 4; ++s) EXPECT_EQ(words[0x40 * s + 1], 0x600D0000u + s);
  std::array<uint32_t, 4> t{};
  for (unsigned s = 0; s < 4; ++s) {
    t[s] = words[0x40 * s];
    EXPECT_NE(t[s], 0u) << "stream " << s << " did not run its critical section";
  }
  EXPECT_LT(t[0], t[2]) << "a waiter got the grant before the holder released it";
  EXPECT_LT(t[2], t[3]) << "priority 9 must go before priority 5";
  EXPECT_LT(t[3], t[1]) << "priority 5 must go before priority 2";
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

// test_cs_two_streams_with_wrr_arb: ARB_CFG_0 = EN | TYPE (weighted round robin) with weights
// 3, 1, 2 for streams 1, 2, 3, which ask 12, 4 and 8 times, each critical section followed at
// once by the next request. While they all compete, the grants go round robin over the waiting
// streams and each keeps its turn for its weight: every round of 6 grants holds 3 of stream 1,
// 1 of stream 2 and 2 of stream 3, each stream's grants back to back.
TEST_F(DriverStreamsArbitrationTest, WeightedRoundRobinFollowsTheWeights) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const std::array<unsigned, 4> weight = {1, 3, 1, 2};
  const std::array<unsigned, 4> iterations = {1, 12, 4, 8};
  std::array<std::vector<uint8_t>, 4> contenders;
  for (unsigned s = 1; s < 4; ++s) {
    CommandBufferBuilder cb;
    for (unsigned i = 0; i < iterations[s]; ++i) {
      cb.arb_point(0, false).msg_long(sram(slot(s, i)), 0, qman::kRbMb, /*op=*/1).arb_point(0, true);
    }
    contenders[s] = cb.take();
  }
  std::vector<std::pair<QmReg, std::pair<unsigned, uint32_t>>> config;
  for (unsigned s = 0; s < 4; ++s) config.push_back({QmReg::ArbWrrWeight, {s, weight[s]}});
  config.push_back({QmReg::ArbCfg0, {0, regs::qm::kArbCfg0En | regs::qm::kArbCfg0Type}});
  contest(config, contenders);
  if (HasFatalFailure()) return;
  const std::string order = grant_order(iterations);
  ASSERT_EQ(order.size(), 25u) << order;
  EXPECT_EQ(order[0], '0') << order;
  const std::string contest_order = order.substr(1);
  for (size_t round = 0; round < 4; ++round) {
    const std::string window = contest_order.substr(6 * round, 6);
    EXPECT_EQ(std::count(window.begin(), window.end(), '1'), 3) << "round " << round << " of " << contest_order;
    EXPECT_EQ(std::count(window.begin(), window.end(), '2'), 1) << "round " << round << " of " << contest_order;
    EXPECT_EQ(std::count(window.begin(), window.end(), '3'), 2) << "round " << round << " of " << contest_order;
  }
  // A turn is `weight` consecutive grants: the grants come in runs of 3 x '1', 1 x '2', 2 x '3'.
  for (size_t i = 0; i < contest_order.size();) {
    const char s = contest_order[i];
    size_t run_length = 0;
    while (i < contest_order.size() && contest_order[i] == s) ++run_length, ++i;
    EXPECT_EQ(run_length, weight[s - '0']) << "a turn of stream " << s << " in " << contest_order;
  }
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

// Arbitration is user state of the context: the context-open restore (gaudi_restore_qm_registers,
// called from gaudi_ctx_init) writes 0 to every QMAN's ARB_CFG_0. In the first context, with
// ARB_CFG_0.EN, a stream that holds the grant (ARB_POINT without release) keeps another stream at
// its ARB_POINT until a later CS releases it. After close and open, the same pair must not block.
TEST_F(DriverStreamsTest, ArbitrationIsOffAgainInTheNextContext) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const auto hold = ext_cb(QueueId::DMA_1_0, CommandBufferBuilder().arb_point(0, false).bytes());
  const auto ask = CommandBufferBuilder().arb_point(0, false).msg_long(sram(0x3000), 1).arb_point(0, true).take();
  const auto release = CommandBufferBuilder().arb_point(0, true).take();
  ASSERT_EQ(run({ext_cb(QueueId::DMA_0_1, CommandBufferBuilder().msg_long(qm(QmanId::DMA1, QmReg::ArbCfg0), regs::qm::kArbCfg0En).bytes())}),
            HL_WAIT_CS_STATUS_COMPLETED);
  ASSERT_EQ(run({hold}), HL_WAIT_CS_STATUS_COMPLETED);
  uint64_t seq = submit({ext_cb(QueueId::DMA_1_1, ask)});
  EXPECT_EQ(status(seq, 50), HL_WAIT_CS_STATUS_BUSY) << "ARB_CFG_0.EN did not enable arbitration";
  EXPECT_EQ(run({ext_cb(QueueId::DMA_1_0, release)}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(status(seq, 1000000), HL_WAIT_CS_STATUS_COMPLETED);
  ASSERT_EQ(dev->close(), 0);

  ASSERT_EQ(dev->open(), 0);
  ASSERT_EQ(run({ext_cb(QueueId::DMA_1_0, CommandBufferBuilder().arb_point(0, false).bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  seq = submit({ext_cb(QueueId::DMA_1_1, ask)});
  EXPECT_EQ(status(seq, 50), HL_WAIT_CS_STATUS_COMPLETED) << "ARB_CFG_0 survived the context switch";
  EXPECT_EQ(run({ext_cb(QueueId::DMA_1_0, release)}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(status(seq, 1000000), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

// test_cs_load_pred_non_consecutive_map: a predicate map in SRAM (32 words, bit 0 of word i is
// predicate i), LOAD_AND_EXE (load=1, dst=0) from it, then one MSG_LONG per predicate: only those
// whose predicate is set write their SRAM slot. Predicate 0 is always true; a word whose bit 0 is
// clear leaves its predicate clear whatever its other bits. A FENCE nobody would ever satisfy
// runs with a clear predicate, so it must be skipped. A second load replaces the map.
TEST_F(DriverStreamsTest, PredicatedPacketsFollowTheLoadedNonConsecutiveMap) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const uint64_t map_a = 0x4000, map_b = 0x4100, slots_a = 0x4200, slots_b = 0x4300;
  std::array<uint32_t, 32> words_a{}, words_b{};
  for (unsigned i : {1u, 3u, 6u, 17u, 30u, 31u}) words_a[i] = 1;
  words_a[4] = 0xFFFFFFFEu;   // bit 0 clear: predicate 4 stays clear
  words_a[5] = 0x3u;          // bit 0 set: predicate 5 is set
  words_a[0] = 0;             // predicate 0 is not loaded
  for (unsigned i = 0; i < 32; ++i) words_b[i] = (i % 2 == 0) ? 1u : 0u;
  auto expected_set = [](const std::array<uint32_t, 32>& words, unsigned i) { return i == 0 || (words[i] & 1u) != 0; };

  CommandBufferBuilder setup;
  for (unsigned i = 0; i < 32; ++i) {
    setup.msg_long(sram(map_a + 4 * i), words_a[i])
        .msg_long(sram(map_b + 4 * i), words_b[i])
        .msg_long(sram(slots_a + 4 * i), 0)
        .msg_long(sram(slots_b + 4 * i), 0);
  }
  ASSERT_EQ(run({ext_cb(QueueId::DMA_0_0, setup.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);

  auto predicated = [](CommandBufferBuilder& cb, uint64_t address, uint32_t value, uint8_t pred) {
    qman::MsgLong m;
    m.addr = address;
    m.value = value;
    m.pred = pred;
    m.barriers = qman::kRbMb;
    cb.add(m);
  };
  CommandBufferBuilder cb;
  cb.load_and_exe(sram(map_a), /*load=*/true, /*exe=*/false, /*scalar_dst=*/false);
  for (uint8_t i = 0; i < 32; ++i) predicated(cb, sram(slots_a + 4 * i), 0xA000u + i, i);
  qman::Fence never;   // fence 1 of this stream is never written: executed, it would block forever
  never.id = 1;
  never.target_val = 1;
  never.dec_val = 1;
  never.pred = 4;
  never.barriers = qman::kRbMb;
  cb.add(never);
  cb.load_and_exe(sram(map_b), true, false, false);
  for (uint8_t i = 0; i < 32; ++i) predicated(cb, sram(slots_b + 4 * i), 0xB000u + i, i);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, cb.bytes())}, 200000), HL_WAIT_CS_STATUS_COMPLETED)
      << "the FENCE with a clear predicate was executed";

  const auto a = read_sram(slots_a, 32), b = read_sram(slots_b, 32);
  for (unsigned i = 0; i < 32; ++i) {
    EXPECT_EQ(a[i], expected_set(words_a, i) ? 0xA000u + i : 0u) << "map A, predicate " << i;
    EXPECT_EQ(b[i], expected_set(words_b, i) ? 0xB000u + i : 0u) << "map B, predicate " << i;
  }
  // The parser still refuses LOAD_AND_EXE with dst=1 (scalar RFs) on an external queue, even
  // without exe, while dst=0 above was accepted.
  uint64_t seq = 0;
  EXPECT_EQ(dev->submit({ext_cb(QueueId::DMA_0_2, CommandBufferBuilder().load_and_exe(sram(map_a), true, false, true).bytes())},
                        &seq),
            -EPERM);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

}  // namespace
}  // namespace hpusim::driver
