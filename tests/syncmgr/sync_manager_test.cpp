// The sync manager through the card's fabric: SOB SET/ADD, monitors, payload writes, errors, reset.
#include <gtest/gtest.h>

#include "tests/syncmgr/sync_manager_bench.h"

namespace hpusim::testing {
namespace {

TEST(SyncManager, SetAndAddWrapAtFifteenBits) {
  SmBench b;
  const uint32_t s = 37;
  b.master.write32(b.sob(s), 5);                    // SET 5
  EXPECT_EQ(b.master.read32(b.sob(s)), 5u);
  b.master.write32(b.sob(s), kAdd | 3);             // ADD 3
  EXPECT_EQ(b.master.read32(b.sob(s)), 8u);
  b.master.write32(b.sob(s), 0x7FFE);               // SET to just below the wrap
  b.master.write32(b.sob(s), kAdd | 3);             // 0x7FFE + 3 wraps modulo 2^15
  EXPECT_EQ(b.master.read32(b.sob(s)), 1u);
  b.master.write32(b.sob(s), kAdd | 0x7FFF);        // ADD 0x7FFF is -1 modulo 2^15
  EXPECT_EQ(b.master.read32(b.sob(s)), 0u);
  b.master.write32(b.sob(s), 0x40012345);           // SET: bits above val[14:0] (trace_evict...) are ignored
  EXPECT_EQ(b.master.read32(b.sob(s)), 0x2345u);
  b.master.write32(b.sob(s), kAdd | 0x00018001);    // ADD: only val[14:0] = 1 is added
  EXPECT_EQ(b.master.read32(b.sob(s)), 0x2346u);
  EXPECT_EQ(b.sm().sob_value(s), 0x2346u);
  EXPECT_EQ(b.sm().sob_value(s + 1), 0u);           // neighbours untouched
  EXPECT_EQ(b.sm().sob_value(s - 1), 0u);
  EXPECT_EQ(b.sm().stats().sob_writes, 7u);
  ASSERT_EQ(b.recorder.updates.size(), 7u);
  EXPECT_EQ(b.recorder.updates[2].value, 0x7FFEu);
  EXPECT_EQ(b.recorder.updates[3].value, 1u);
  EXPECT_EQ(b.recorder.updates[3].sob, s);
  EXPECT_EQ(b.recorder.updates[3].block, "sm_e_n");
}

TEST(SyncManager, ReadsReturnEveryRegisterArray) {
  SmBench b;
  const uint32_t last_sob = 2047, last_mon = 511;
  b.master.write32(b.sob(last_sob), 0x1234);
  b.master.write32(b.sob(0), 0x0042);
  b.master.write32(b.pay_addrl(last_mon), 0xDEADBEEC);
  b.master.write32(b.pay_addrh(last_mon), 0x7F);
  b.master.write32(b.pay_data(last_mon), 0xCAFEF00D);
  b.master.write32(b.pay_addrl(3), 0x11111110);
  EXPECT_EQ(b.master.read32(b.sob(last_sob)), 0x1234u);
  EXPECT_EQ(b.master.read32(b.sob(0)), 0x42u);
  EXPECT_EQ(b.master.read32(b.sob(1)), 0u);
  EXPECT_EQ(b.master.read32(b.pay_addrl(last_mon)), 0xDEADBEECu);
  EXPECT_EQ(b.master.read32(b.pay_addrh(last_mon)), 0x7Fu);
  EXPECT_EQ(b.master.read32(b.pay_data(last_mon)), 0xCAFEF00Du);
  EXPECT_EQ(b.master.read32(b.pay_addrl(3)), 0x11111110u);
  EXPECT_EQ(b.master.read32(b.pay_addrl(4)), 0u);
  EXPECT_EQ(b.master.read32(b.mon_status(last_mon)), 0u);  // never armed
  // An armed monitor reads back its arm word, valid = 1, and the watched SOBs still pending.
  const uint32_t arm = arm_word(5, 0xF0, false, 2);  // group 5 (SOBs 40..47), watch 40..43, >= 2
  b.master.write32(b.sob(41), 2);
  b.master.write32(b.mon_arm(7), arm);
  EXPECT_EQ(b.master.read32(b.mon_arm(7)), arm);
  EXPECT_EQ(b.master.read32(b.mon_status(7)), 1u | (0x0Du << 1));  // SOBs 40, 42, 43 pending, prot 0
  // 8 bytes: two consecutive registers in one access.
  RegisterMaster::Access& pair = b.master.run_word(false, b.sob(2046), 0, 8);
  EXPECT_EQ(pair.status(), tlm::TLM_OK_RESPONSE);
  uint32_t words[2];
  std::memcpy(words, pair.data.data(), 8);
  EXPECT_EQ(words[0], 0u);
  EXPECT_EQ(words[1], 0x1234u);
  EXPECT_EQ(b.sm().size_bytes(), 0x4800u);
}

TEST(SyncManager, GreaterOrEqualMonitorHonoursItsMask) {
  SmBench b;
  const uint32_t m = 20, group = 3;  // SOBs 24..31
  b.program(m, b.sram(0x1000), 0xA5A50001);
  // Watch SOBs 24 and 27 only (mask bit set = ignored), value >= 3.
  const uint8_t mask = static_cast<uint8_t>(~((1u << 0) | (1u << 3)));
  b.master.write32(b.mon_arm(m), arm_word(group, mask, false, 3));
  EXPECT_TRUE(b.sm().monitor_armed(m));
  for (uint32_t ignored : {25u, 26u, 28u, 29u, 30u, 31u}) b.master.write32(b.sob(ignored), 100);
  b.master.write32(b.sob(24), 7);
  b.master.write32(b.sob(27), 2);  // 27 below target
  b.drain();
  EXPECT_TRUE(b.sm().monitor_armed(m));
  EXPECT_EQ(b.sm().stats().monitor_fires, 0u);
  EXPECT_EQ(b.master.read32(b.mon_status(m)), 1u | (1u << (3 + 1)));  // only SOB 27 pending
  EXPECT_EQ(b.sram_word(0x1000), 0u);
  b.master.write32(b.sob(27), kAdd | 1);  // 3 >= 3: every watched SOB satisfied
  b.drain();
  EXPECT_FALSE(b.sm().monitor_armed(m));
  EXPECT_EQ(b.master.read32(b.mon_status(m)), 0u);
  EXPECT_EQ(b.sm().stats().monitor_fires, 1u);
  EXPECT_EQ(b.sram_word(0x1000), 0xA5A50001u);
  ASSERT_EQ(b.recorder.fires.size(), 1u);
  EXPECT_EQ(b.recorder.fires[0].monitor, m);
  EXPECT_EQ(b.recorder.fires[0].address, b.sram(0x1000));
  EXPECT_EQ(b.recorder.fires[0].data, 0xA5A50001u);
  EXPECT_EQ(b.sm().stats().payload_errors, 0u);
  EXPECT_EQ(b.sm().stats().payload_responses, 1u);
}

TEST(SyncManager, EqualMonitorFiresOnlyOnTheExactValue) {
  SmBench b;
  b.program(1, b.sram(0x2000), 11);  // == 4 on SOB 9
  b.program(2, b.sram(0x2004), 22);  // >= 4 on SOB 9, for contrast
  b.master.write32(b.mon_arm(1), arm_word(1, only(9), true, 4));
  b.master.write32(b.mon_arm(2), arm_word(1, only(9), false, 4));
  b.master.write32(b.sob(9), 5);  // jumps over 4
  b.drain();
  EXPECT_TRUE(b.sm().monitor_armed(1));
  EXPECT_FALSE(b.sm().monitor_armed(2));
  EXPECT_EQ(b.sram_word(0x2000), 0u);
  EXPECT_EQ(b.sram_word(0x2004), 22u);
  b.master.write32(b.sob(9), kAdd | 0x7FFF);  // 5 - 1 = 4
  b.drain();
  EXPECT_FALSE(b.sm().monitor_armed(1));
  EXPECT_EQ(b.sram_word(0x2000), 11u);
  // Equality over several SOBs: all watched SOBs must equal the target.
  b.program(3, b.sram(0x2008), 33);
  b.master.write32(b.mon_arm(3), arm_word(2, 0xFC, true, 6));  // SOBs 16, 17 == 6
  b.master.write32(b.sob(16), 6);
  b.master.write32(b.sob(17), 7);
  b.drain();
  EXPECT_TRUE(b.sm().monitor_armed(3));
  b.master.write32(b.sob(17), 6);
  b.drain();
  EXPECT_FALSE(b.sm().monitor_armed(3));
  EXPECT_EQ(b.sram_word(0x2008), 33u);
  EXPECT_EQ(b.sm().stats().monitor_fires, 3u);
}

TEST(SyncManager, MonitorArmedWhenItsConditionHoldsFiresAtOnce) {
  SmBench b;
  b.master.write32(b.sob(100), 10);
  b.program(4, b.sram(0x3000), 0x44);
  RegisterMaster::Access& arm = b.master.run_word(true, b.mon_arm(4), arm_word(100 / 8, only(100), false, 5));
  EXPECT_EQ(arm.status(), tlm::TLM_OK_RESPONSE);
  b.drain();
  ASSERT_EQ(b.recorder.fires.size(), 1u);
  // It fired when the arm write took effect.
  EXPECT_EQ(b.recorder.fires[0].at, arm.issued_ps + b.path_to_cfg_ps());
  EXPECT_FALSE(b.sm().monitor_armed(4));
  EXPECT_EQ(b.sram_word(0x3000), 0x44u);
  // Nothing watched (mask 0xFF): the condition holds vacuously, so it fires at once too.
  b.program(5, b.sram(0x3004), 0x55);
  b.master.write32(b.mon_arm(5), arm_word(7, 0xFF, false, 0x7FFF));
  b.drain();
  EXPECT_FALSE(b.sm().monitor_armed(5));
  EXPECT_EQ(b.sram_word(0x3004), 0x55u);
  EXPECT_EQ(b.sm().stats().monitor_fires, 2u);
  EXPECT_EQ(b.sm().stats().monitor_arms, 2u);
}

TEST(SyncManager, MonitorFiresExactlyOnceAndMustBeRearmed) {
  SmBench b;
  const uint32_t m = 9, s = 200;
  b.program(m, b.fence_base(), 1);
  b.master.write32(b.mon_arm(m), arm_word(s / 8, only(s), false, 1));
  b.master.write32(b.sob(s), kAdd | 1);
  b.drain();
  EXPECT_EQ(b.fence.counters[0], 1u);
  for (int i = 0; i < 3; ++i) b.master.write32(b.sob(s), kAdd | 1);  // still >= 1, but disarmed
  b.drain();
  EXPECT_EQ(b.fence.counters[0], 1u);
  EXPECT_EQ(b.sm().stats().monitor_fires, 1u);
  EXPECT_FALSE(b.sm().monitor_armed(m));
  // Re-armed for a value not yet reached: waits, then fires once more.
  b.master.write32(b.mon_arm(m), arm_word(s / 8, only(s), false, 6));
  b.drain();
  EXPECT_TRUE(b.sm().monitor_armed(m));
  EXPECT_EQ(b.fence.counters[0], 1u);
  b.master.write32(b.sob(s), kAdd | 2);
  b.drain();
  EXPECT_EQ(b.fence.counters[0], 2u);
  EXPECT_EQ(b.fence.writes.size(), 2u);
  EXPECT_EQ(b.sm().stats().monitor_fires, 2u);
}

TEST(SyncManager, PayloadLandsInSramAtFireTimePlusLatencyPlusFabricPath) {
  const hw::Picoseconds latency = 7777;
  SmBench b(1, latency);
  const uint32_t m = 33, s = 1500;
  b.program(m, b.sram(0x4000), 0x600DF00D);
  b.master.write32(b.mon_arm(m), arm_word(s / 8, only(s), false, 1));
  const size_t updates_before = b.recorder.updates.size();
  RegisterMaster::Access& msg = b.master.issue_word(true, b.sob(s), kAdd | 1, hw::now_ps());
  const hw::Picoseconds effective = msg.issued_ps + b.path_to_cfg_ps();
  // Timing gate: one picosecond before the write takes effect the SOB still reads its old value.
  sc_core::sc_start(hw::delay_until(effective - 1));
  EXPECT_EQ(b.sm().sob_value(s), 0u);
  EXPECT_TRUE(b.sm().monitor_armed(m));
  sc_core::sc_start(hw::delay_until(effective));
  EXPECT_EQ(b.sm().sob_value(s), 1u);
  EXPECT_FALSE(b.sm().monitor_armed(m));
  b.drain();
  ASSERT_EQ(b.recorder.updates.size(), updates_before + 1);
  EXPECT_EQ(b.recorder.updates.back().at, effective);
  ASSERT_EQ(b.recorder.fires.size(), 1u);
  EXPECT_EQ(b.recorder.fires[0].at, effective);
  // The payload enters the fabric `latency` after the fire, reaches SRAM one fabric path later,
  // and its response returns after the SRAM access and the way back.
  const hw::Picoseconds lands = effective + latency + b.path_to_sram_ps();
  ASSERT_EQ(b.recorder.dones.size(), 1u);
  EXPECT_TRUE(b.recorder.dones[0].ok);
  EXPECT_EQ(b.recorder.dones[0].at, lands + b.system.sram().unloaded_latency_ps(4) + b.system.fabric().latency_ps());
  EXPECT_EQ(b.sram_word(0x4000), 0x600DF00Du);
  EXPECT_EQ(b.sm().payloads_in_flight(), 0u);
}

TEST(SyncManager, SeveralMonitorsOnOneGroupFireEachAtItsOwnCondition) {
  SmBench b;
  const uint32_t group = 40;  // SOBs 320..327
  const uint32_t s0 = 320, s1 = 321;
  struct Mon {
    uint32_t m;
    uint32_t arm;
    uint64_t sram_offset;
  };
  const std::vector<Mon> mons = {
      {10, arm_word(group, only(s0), false, 1), 0x5000},                                  // s0 >= 1
      {11, arm_word(group, only(s0), false, 3), 0x5004},                                  // s0 >= 3
      {12, arm_word(group, static_cast<uint8_t>(~0x3u), false, 2), 0x5008},               // s0, s1 >= 2
      {13, arm_word(group, only(s1), true, 1), 0x500C},                                   // s1 == 1
  };
  for (const Mon& x : mons) {
    b.program(x.m, b.sram(x.sram_offset), 0x100 + x.m);
    b.master.write32(b.mon_arm(x.m), x.arm);
  }
  auto fired = [&](const Mon& x) { return b.sram_word(x.sram_offset) == 0x100 + x.m; };
  b.master.write32(b.sob(s0), kAdd | 1);  // s0 = 1
  b.drain();
  EXPECT_TRUE(fired(mons[0]));
  EXPECT_FALSE(fired(mons[1]) || fired(mons[2]) || fired(mons[3]));
  b.master.write32(b.sob(s1), kAdd | 1);  // s1 = 1
  b.drain();
  EXPECT_TRUE(fired(mons[3]));
  EXPECT_FALSE(fired(mons[1]) || fired(mons[2]));
  b.master.write32(b.sob(s0), kAdd | 2);  // s0 = 3
  b.drain();
  EXPECT_TRUE(fired(mons[1]));
  EXPECT_FALSE(fired(mons[2]));           // s1 still 1
  b.master.write32(b.sob(s1), kAdd | 1);  // s1 = 2
  b.drain();
  EXPECT_TRUE(fired(mons[2]));
  ASSERT_EQ(b.recorder.fires.size(), 4u);
  EXPECT_EQ(b.recorder.fires[0].monitor, 10u);
  EXPECT_EQ(b.recorder.fires[1].monitor, 13u);
  EXPECT_EQ(b.recorder.fires[2].monitor, 11u);
  EXPECT_EQ(b.recorder.fires[3].monitor, 12u);
  // Two monitors satisfied by one write both fire, in the order they were armed.
  b.program(20, b.fence_base(), 1);
  b.program(21, b.fence_base() + 4, 1);
  b.master.write32(b.mon_arm(21), arm_word(group, only(327), false, 9));
  b.master.write32(b.mon_arm(20), arm_word(group, only(327), false, 9));
  b.master.write32(b.sob(327), 9);
  b.drain();
  EXPECT_EQ(b.fence.counters[0], 1u);
  EXPECT_EQ(b.fence.counters[1], 1u);
  ASSERT_EQ(b.recorder.fires.size(), 6u);
  EXPECT_EQ(b.recorder.fires[4].monitor, 21u);
  EXPECT_EQ(b.recorder.fires[5].monitor, 20u);
}

TEST(SyncManager, MonitorsOnDifferentGroupsDoNotInterfere) {
  SmBench b;
  b.program(0, b.fence_base(), 1);
  b.program(1, b.fence_base() + 4, 1);
  b.master.write32(b.mon_arm(0), arm_word(0, only(0), false, 2));  // SOB 0 >= 2
  b.master.write32(b.mon_arm(1), arm_word(1, only(8), false, 2));  // SOB 8 >= 2
  b.master.write32(b.sob(8), 2);     // same position in the next group
  b.master.write32(b.sob(1), 5);     // same group, other SOB
  b.master.write32(b.sob(2048 - 8), 5);
  b.drain();
  EXPECT_EQ(b.fence.counters[0], 0u);
  EXPECT_EQ(b.fence.counters[1], 1u);
  EXPECT_TRUE(b.sm().monitor_armed(0));
  EXPECT_FALSE(b.sm().monitor_armed(1));
  b.master.write32(b.sob(0), 2);
  b.drain();
  EXPECT_EQ(b.fence.counters[0], 1u);
  EXPECT_EQ(b.fence.counters[1], 1u);
  EXPECT_FALSE(b.sm().monitor_armed(0));
}

TEST(SyncManager, CanonicalWaitSequenceIsReleasedByAnAddOneMessage) {
  SmBench b(4, 2000);
  // The waiter programs monitor 72 of W_S (block 3) to write 1 into a fence register when SOB 147
  // reaches 1, exactly as the driver's wait CB does.
  const unsigned ws = 3;
  const uint32_t sob = 147, mon = 72;
  const uint64_t fence = b.fence_base() + 0x8;
  b.master.write32(b.pay_addrl(mon, ws), static_cast<uint32_t>(fence));
  b.master.write32(b.pay_addrh(mon, ws), static_cast<uint32_t>(fence >> 32));
  b.master.write32(b.pay_data(mon, ws), 1);
  b.master.write32(b.mon_arm(mon, ws), (sob / 8) | (uint32_t{only(sob)} << 8) | (0u << 16) | (1u << 17));
  b.drain();
  EXPECT_EQ(b.fence.counters[2], 0u);
  // The producer signals: MSG_SHORT value 1 | bit31 (ADD 1).
  RegisterMaster::Access& signal = b.master.run_word(true, b.sob(sob, ws), 0x80000001);
  b.drain();
  EXPECT_EQ(b.fence.counters[2], 1u);
  ASSERT_EQ(b.fence.writes.size(), 1u);
  const hw::Picoseconds effective = signal.issued_ps + b.path_to_cfg_ps();
  EXPECT_EQ(b.fence.writes[0].at, effective + 2000 + b.path_to_cfg_ps());
  // Only W_S saw it; the other blocks' SOB 147 and monitor 72 are untouched.
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(b.sm(i).sob_value(sob), 0u) << b.sm(i).block_name();
    EXPECT_EQ(b.sm(i).stats().sob_writes, 0u);
  }
  EXPECT_EQ(b.sm(ws).sob_value(sob), 1u);
  ASSERT_EQ(b.recorder.fires.size(), 1u);
  EXPECT_EQ(b.recorder.fires[0].block, "sm_w_s");
  EXPECT_EQ(b.recorder.fires[0].address, fence);
  // A monitor's payload can itself be a SOB message: E_N monitor 0 adds 1 to W_S SOB 148 when
  // E_N SOB 0 reaches 1, which releases a second W_S wait.
  b.program(0, b.sob(148, ws), 0x80000001, 0);
  b.master.write32(b.mon_arm(0, 0), arm_word(0, only(0), false, 1));
  b.program(73, fence + 4, 1, ws);
  b.master.write32(b.mon_arm(73, ws), arm_word(148 / 8, only(148), false, 1));
  b.master.write32(b.sob(0, 0), 0x80000001);
  b.drain();
  EXPECT_EQ(b.sm(ws).sob_value(148), 1u);
  EXPECT_EQ(b.fence.counters[3], 1u);
}

TEST(SyncManager, InvalidOffsetsUnalignedAndWrongSizeAccessesGetErrors) {
  hw::SyncManagerConfig base;
  base.sobs = 64;                  // 8 groups: a sid >= 8 is refused
  base.monitors = 16;
  base.layout.sob_obj = 0x100;     // a gap at the start and between the arrays
  base.layout.mon_pay_addrl = 0x400;
  base.layout.mon_pay_addrh = 0x500;
  base.layout.mon_pay_data = 0x600;
  base.layout.mon_arm = 0x700;
  base.layout.mon_status = 0x800;
  base.layout.block_bytes = 0x1000;
  SmBench b(1, 1000, base);
  EXPECT_EQ(b.sm().size_bytes(), 0x1000u);
  const uint64_t blk = b.sm_base();
  auto status = [&](bool write, uint64_t address, unsigned bytes = 4) {
    return b.master.run_word(write, address, 0x80000001, bytes).status();
  };
  // Inside the block but outside every array.
  for (uint64_t off : {0x0ull, 0xFCull, 0x200ull, 0x440ull, 0x840ull, 0xFFCull}) {
    EXPECT_EQ(status(false, blk + off), tlm::TLM_GENERIC_ERROR_RESPONSE) << std::hex << off;
    EXPECT_EQ(status(true, blk + off), tlm::TLM_GENERIC_ERROR_RESPONSE) << std::hex << off;
  }
  // Unaligned and wrong-size accesses to a real register.
  EXPECT_EQ(status(true, b.sob(1) + 2), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(status(false, b.sob(1) + 1), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(status(true, b.sob(1), 2), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(status(false, b.sob(1), 1), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  // An arm naming a group this block does not have.
  EXPECT_EQ(b.master.run_word(true, b.mon_arm(0), arm_word(8, 0, false, 1)).status(), tlm::TLM_GENERIC_ERROR_RESPONSE);
  // The valid ones at the array edges work.
  EXPECT_EQ(status(true, b.sob(63)), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(b.master.read32(b.mon_status(15)), 0u);
  EXPECT_EQ(status(false, b.sob(64)), tlm::TLM_GENERIC_ERROR_RESPONSE);  // one past the SOBs
  b.master.write32(b.mon_arm(0), arm_word(7, only(63), false, 1));  // SOB 63 is 1: fires at once
  // Nothing the refused accesses carried reached the state.
  EXPECT_EQ(b.sm().sob_value(1), 0u);
  EXPECT_EQ(b.sm().stats().sob_writes, 1u);
  EXPECT_EQ(b.sm().stats().monitor_arms, 1u);
  EXPECT_EQ(b.sm().stats().rejected_accesses, 14u);
  // Its payload registers are 0: the write to address 0 lands in DRAM (reserved range) fine; an
  // unmapped payload address is answered with an error and counted.
  b.drain();
  EXPECT_EQ(b.sm().stats().payload_errors, 0u);
  b.program(1, 0x4000000000ull, 1);  // between DRAM and SRAM: nothing there
  b.master.write32(b.mon_arm(1), arm_word(7, only(63), false, 1));
  b.drain();
  EXPECT_EQ(b.sm().stats().payload_errors, 1u);
  EXPECT_EQ(b.sm().stats().payload_responses, 2u);
  ASSERT_EQ(b.recorder.dones.size(), 2u);
  EXPECT_FALSE(b.recorder.dones[1].ok);
}

TEST(SyncManager, ConfigurationErrorsAreRejected) {
  hw::SyncManagerConfig c;
  c.name = "bad";
  c.sobs = 12;
  EXPECT_THROW(hw::SyncManager{c}, std::invalid_argument);
  c.sobs = 4096;
  EXPECT_THROW(hw::SyncManager{c}, std::invalid_argument);
  c.sobs = 2048;
  c.layout.mon_status = 0x3C00;  // overlaps mon_arm
  EXPECT_THROW(hw::SyncManager{c}, std::invalid_argument);
  c.layout.mon_status = 0x4002;  // unaligned
  EXPECT_THROW(hw::SyncManager{c}, std::invalid_argument);
  c.layout.mon_status = 0x4000;
  c.layout.block_bytes = 0x4000;  // smaller than the arrays
  EXPECT_THROW(hw::SyncManager{c}, std::invalid_argument);
  c.layout.block_bytes = 0;
  hw::SyncManager good(c);
  EXPECT_EQ(good.size_bytes(), 0x4800u);
}

TEST(SyncManager, WritesApplyInEffectiveTimeOrder) {
  SmBench b;
  // The RegisterBlock callbacks arrive in acceptance order; effects follow effective time. Here
  // the arm is accepted after the SOB write but takes effect before it, so it must wait for it.
  hw::SyncManager& sm = b.sm();
  const auto& l = sm.config().layout;
  b.program(3, b.fence_base(), 1);
  const hw::Picoseconds t = hw::now_ps();
  ASSERT_TRUE(sm.write_register(l.sob_obj + 4 * 16, kAdd | 1, t + 5000));
  ASSERT_TRUE(sm.write_register(l.mon_arm + 4 * 3, arm_word(2, only(16), false, 1), t + 2000));
  uint32_t status = 0;
  ASSERT_TRUE(sm.read_register(l.mon_status + 4 * 3, status, t + 3000));
  EXPECT_EQ(status, 1u | (1u << 1));  // armed, SOB 16 still pending at t + 3000
  // A read effective at t + 6000, accepted while simulation time is still t, sees the monitor
  // fired at t + 5000 (not at the time the read was accepted).
  ASSERT_TRUE(sm.read_register(l.mon_status + 4 * 3, status, t + 6000));
  EXPECT_EQ(status, 0u);
  ASSERT_EQ(b.recorder.fires.size(), 1u);
  EXPECT_EQ(b.recorder.fires[0].at, t + 5000);
  b.drain();
  ASSERT_EQ(b.recorder.fires.size(), 1u);
  EXPECT_EQ(b.recorder.fires[0].at, t + 5000);
  EXPECT_EQ(b.fence.counters[0], 1u);
  // A read sees the writes that took effect before it and none after.
  ASSERT_TRUE(sm.write_register(l.sob_obj + 4 * 17, 40, hw::now_ps() + 1000));
  ASSERT_TRUE(sm.write_register(l.sob_obj + 4 * 17, 50, hw::now_ps() + 3000));
  uint32_t value = 0;
  ASSERT_TRUE(sm.read_register(l.sob_obj + 4 * 17, value, hw::now_ps() + 2000));
  EXPECT_EQ(value, 40u);
  b.drain();
  EXPECT_EQ(sm.sob_value(17), 50u);
}

TEST(SyncManager, ResetClearsSobsMonitorsAndPayloadRegisters) {
  SmBench b;
  b.master.write32(b.sob(5), 9);
  b.master.write32(b.sob(2047), 0x7FFF);
  b.program(2, b.fence_base(), 1);
  b.master.write32(b.mon_arm(2), arm_word(0, only(5), false, 20));
  b.program(3, b.fence_base() + 4, 1);
  b.master.write32(b.mon_arm(3), arm_word(1, only(8), false, 1));
  ASSERT_TRUE(b.sm().monitor_armed(2));
  // A write in flight that takes effect after the reset still applies afterwards.
  RegisterMaster::Access& late = b.master.issue_word(true, b.sob(6), 4, hw::now_ps());
  b.sm().reset();
  EXPECT_EQ(b.sm().sob_value(5), 0u);
  EXPECT_EQ(b.sm().sob_value(2047), 0u);
  EXPECT_FALSE(b.sm().monitor_armed(2));
  EXPECT_FALSE(b.sm().monitor_armed(3));
  EXPECT_EQ(b.master.read32(b.pay_addrl(2)), 0u);
  EXPECT_EQ(b.master.read32(b.pay_addrh(2)), 0u);
  EXPECT_EQ(b.master.read32(b.pay_data(2)), 0u);
  EXPECT_EQ(b.master.read32(b.mon_arm(2)), 0u);
  EXPECT_EQ(b.master.read32(b.mon_status(2)), 0u);
  EXPECT_TRUE(late.done);
  EXPECT_EQ(b.sm().sob_value(6), 4u);
  // The old monitors are gone: the writes that would have fired them do nothing.
  b.master.write32(b.sob(5), 30);
  b.master.write32(b.sob(8), 1);
  b.drain();
  EXPECT_TRUE(b.fence.writes.empty());
  EXPECT_EQ(b.sm().stats().monitor_fires, 0u);
  // And the block works normally after the reset.
  b.program(2, b.fence_base(), 1);
  b.master.write32(b.mon_arm(2), arm_word(0, only(5), false, 31));
  b.master.write32(b.sob(5), kAdd | 1);
  b.drain();
  EXPECT_EQ(b.fence.counters[0], 1u);
}

TEST(SyncManager, ClearingMonitorStatusDisarms) {
  SmBench b;
  b.program(6, b.fence_base(), 1);
  b.master.write32(b.mon_arm(6), arm_word(4, only(33), false, 1));
  EXPECT_EQ(b.master.read32(b.mon_status(6)), 1u | (1u << 2));
  b.master.write32(b.mon_status(6), 1);  // valid = 1 written: no effect
  EXPECT_TRUE(b.sm().monitor_armed(6));
  b.master.write32(b.mon_status(6), 0);  // what the driver does on context switch
  EXPECT_FALSE(b.sm().monitor_armed(6));
  b.master.write32(b.sob(33), 1);
  b.drain();
  EXPECT_TRUE(b.fence.writes.empty());
}

}  // namespace
}  // namespace hpusim::testing
