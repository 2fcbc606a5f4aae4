// The DMA core through the card's fabric: register programming like a LIN_DMA packet, data checks
// through the backing stores, memset, strided copies, write-completion messages into the E_N sync
// manager, errors, queueing, CFG_0.EN, reset, and bandwidth against the fabric/HBM/PCIe models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "arch/packets/dma_ops.h"
#include "arch/reduction/reduction.h"
#include "tests/dma/dma_bench.h"

namespace hpusim::testing {
namespace {

namespace dc = regs::dma_core;
constexpr uint32_t kAdd1 = regs::sm::kSobInc | 1;   // SOB message "ADD 1" (0x80000001)
constexpr uint64_t kMiB = 1ull << 20;

// Fills [address, address + bytes) with a pattern and returns it.
std::vector<uint8_t> seed(DmaBench& b, uint64_t address, uint64_t bytes, uint64_t salt) {
  std::vector<uint8_t> data = pattern_bytes(bytes, salt);
  b.poke(address, data);
  return data;
}

// Writes 64 sentinel bytes on each side of [address, address + bytes).
void guard(DmaBench& b, uint64_t address, uint64_t bytes) {
  b.poke(address - 64, std::vector<uint8_t>(64, 0xEE));
  b.poke(address + bytes, std::vector<uint8_t>(64, 0xEE));
}
bool guard_intact(DmaBench& b, uint64_t address, uint64_t bytes) {
  const std::vector<uint8_t> sentinel(64, 0xEE);
  return b.peek(address - 64, 64) == sentinel && b.peek(address + bytes, 64) == sentinel;
}

// One copy through core i with a completion ADD 1 to `sob`; returns after the core is idle.
void copy_and_wait(DmaBench& b, size_t i, uint64_t src, uint64_t dst, uint32_t bytes, uint32_t sob) {
  b.completion_to(i, b.sob_address(sob), kAdd1);
  b.copy(i, src, dst, bytes, dc::kCommitWrCompEn);
  b.run_until_idle(i);
}

void round_trip(DmaBench& b, uint64_t (DmaBench::*device)(uint64_t) const, const std::vector<uint64_t>& sizes,
                uint64_t spacing) {
  constexpr uint32_t kSob = 200;
  uint64_t moved = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const uint64_t n = sizes[k];
    const uint64_t host_src = b.host(0x10000000 + k * spacing + 3 * k + 1);   // odd, different alignments
    const uint64_t host_dst = b.host(0x400000000 + k * spacing + 5 * k + 2);
    const uint64_t dev = (b.*device)(0x1000 + k * spacing + 7 * k + 3);
    const std::vector<uint8_t> data = seed(b, host_src, n, k + 1);
    guard(b, dev, n);
    guard(b, host_dst, n);
    copy_and_wait(b, 0, host_src, dev, static_cast<uint32_t>(n), kSob);   // DMA0: host -> device
    copy_and_wait(b, 1, dev, host_dst, static_cast<uint32_t>(n), kSob);   // DMA1: device -> host
    EXPECT_TRUE(b.peek(dev, n) == data) << "device copy of " << n << " bytes";
    EXPECT_TRUE(b.peek(host_dst, n) == data) << "host copy of " << n << " bytes";
    EXPECT_TRUE(guard_intact(b, dev, n)) << "device neighbours of " << n << " bytes";
    EXPECT_TRUE(guard_intact(b, host_dst, n)) << "host neighbours of " << n << " bytes";
    moved += n;
  }
  EXPECT_TRUE(b.recorder.failed.empty());
  ASSERT_EQ(b.recorder.done.size(), 2 * sizes.size());
  EXPECT_EQ(b.sm.sob_value(kSob), 2 * sizes.size());
  EXPECT_EQ(b.core(0).stats().bytes + b.core(1).stats().bytes, 2 * moved);
  EXPECT_EQ(b.core(0).stats().transfers, sizes.size());
  EXPECT_EQ(b.core(1).stats().completion_messages, sizes.size());
  EXPECT_EQ(b.recorder.done[0].transfer.bytes, sizes[0]);
  EXPECT_EQ(b.recorder.done.back().transfer.bytes, sizes.back());
}

TEST(Dma, HostSramHostRoundTripsKeepTheData) {
  DmaBench b(DmaBench::channels({0, 1}));
  b.enable(0);
  b.enable(1);
  // SRAM holds 20 MB, so the largest SRAM case is 16 MiB.
  round_trip(b, &DmaBench::sram, {1, 77, 5000, 92517, kMiB, 16 * kMiB}, 0);
}

TEST(Dma, HostDramHostRoundTripsKeepTheData) {
  DmaBench b(DmaBench::channels({0, 1}));
  b.enable(0);
  b.enable(1);
  round_trip(b, &DmaBench::dram, {1, 77, 5000, 92517, kMiB, 64 * kMiB}, 128 * kMiB);
}

TEST(Dma, MemsetWritesTheSixtyFourBitPattern) {
  DmaBench b(DmaBench::channels({2}));
  b.enable(0);
  const uint64_t value = 0x0123456789ABCDEFull;
  struct Case {
    uint64_t address;
    uint32_t bytes;
  };
  const Case cases[] = {{b.dram(0x1003), 5003}, {b.sram(0x2001), 1}, {b.sram(0x3005), 77}, {b.dram(0x100000), 1 << 20}};
  for (const Case& c : cases) {
    seed(b, c.address, c.bytes, 9);
    guard(b, c.address, c.bytes);
    b.program(0, value, c.address, c.bytes, dc::kCommitLin | dc::kCommitMemSet);
    b.run_until_idle(0);
    const std::vector<uint8_t> got = b.peek(c.address, c.bytes);
    bool ok = true;
    for (uint64_t i = 0; i < c.bytes && ok; ++i) {
      ok = got[i] == static_cast<uint8_t>(value >> (8 * ((c.address + i) % 8)));
    }
    EXPECT_TRUE(ok) << c.bytes << " bytes at 0x" << std::hex << c.address;
    EXPECT_TRUE(guard_intact(b, c.address, c.bytes)) << c.bytes << " bytes";
  }
  // A zero fill over data, and the byte count.
  seed(b, b.dram(0x200000), 4096, 3);
  b.program(0, 0, b.dram(0x200000), 4096, dc::kCommitLin | dc::kCommitMemSet);
  b.run_until_idle(0);
  EXPECT_TRUE(b.peek(b.dram(0x200000), 4096) == std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(b.core(0).stats().bytes, 5003u + 1 + 77 + (1 << 20) + 4096);
  EXPECT_EQ(b.core(0).stats().read_bursts, 0u);   // memset reads nothing
  // Bursts end at 256-byte boundaries: 512 bytes starting 1 past one take 255 + 256 + 1.
  const uint64_t writes_before = b.core(0).stats().write_bursts;
  b.program(0, value, b.dram(0x300001), 512, dc::kCommitLin | dc::kCommitMemSet);
  b.run_until_idle(0);
  EXPECT_EQ(b.core(0).stats().write_bursts - writes_before, 3u);
  EXPECT_TRUE(b.recorder.done.back().transfer.memset);
}

TEST(Dma, WriteCompletionLandsOnlyAfterTheData) {
  DmaBench b(DmaBench::channels({2}));
  b.enable(0);
  constexpr uint32_t kSob = 17;
  const uint32_t n = 92517;
  const uint64_t src = b.dram(0x10003), dst = b.sram(0x40001);
  const std::vector<uint8_t> data = seed(b, src, n, 4);
  bool data_there = false;
  hw::Picoseconds sob_at = 0;
  b.sobs.hook = [&](uint32_t sob, uint32_t, hw::Picoseconds at) {
    if (sob != kSob) return;
    data_there = b.peek(dst, n) == data;   // what a waiter released by the SOB would read
    sob_at = at;
  };
  copy_and_wait(b, 0, src, dst, n, kSob);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);
  EXPECT_TRUE(data_there) << "the completion message overtook the data";
  ASSERT_EQ(b.recorder.done.size(), 1u);
  EXPECT_GT(sob_at, b.recorder.started[0].at);
  EXPECT_LE(sob_at, b.recorder.done[0].at);   // done = the completion's response has arrived
  EXPECT_TRUE(b.recorder.done[0].transfer.write_completion);
  EXPECT_EQ(b.recorder.done[0].transfer.completion_data, kAdd1);

  // Without WR_COMP_EN nothing is sent.
  b.copy(0, src, b.sram(0x80000), 4096);
  b.run_until_idle(0);
  b.settle();
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);

  // A zero-byte transfer moves nothing but still sends its completion.
  const uint64_t bytes_before = b.core(0).stats().bytes;
  const uint64_t reads_before = b.core(0).stats().read_bursts;
  copy_and_wait(b, 0, src, dst, 0, kSob);
  EXPECT_EQ(b.sm.sob_value(kSob), 2u);
  EXPECT_EQ(b.core(0).stats().bytes, bytes_before);
  EXPECT_EQ(b.core(0).stats().read_bursts, reads_before);

  // A completion value written to plain memory lands too.
  b.completion_to(0, b.sram(0x100), 0xC0FFEE01u);
  b.copy(0, src, b.sram(0x90000), 256, dc::kCommitWrCompEn);
  b.run_until_idle(0);
  const std::vector<uint8_t> word = b.peek(b.sram(0x100), 4);
  EXPECT_EQ(word[0] | word[1] << 8 | word[2] << 16 | uint32_t{word[3]} << 24, 0xC0FFEE01u);
  EXPECT_EQ(b.core(0).stats().completion_messages, 3u);
}

TEST(Dma, StridedCopiesGatherAndScatterBoxes) {
  DmaBench b(DmaBench::channels({3}));
  b.enable(0);
  auto set = [&](uint32_t offset, uint32_t v) { b.probe.write32(b.reg(0, offset), v); };
  // Source: a 3-D box of 48-byte rows, 5 rows 64 bytes apart, 3 planes 1000 bytes apart (720
  // bytes). Destination: a 2-D box of 9 rows of 80 bytes, 128 bytes apart.
  const uint64_t src = b.dram(0x5001), dst = b.sram(0x7003);
  const std::vector<uint8_t> space = seed(b, src, 3000, 6);
  b.poke(dst - 64, std::vector<uint8_t>(9 * 128 + 128, 0xEE));
  set(dc::kSrcTsize0, 48);
  set(dc::src_tsize(1), 5);
  set(dc::src_stride(1), 64);
  set(dc::src_tsize(2), 3);
  set(dc::src_stride(2), 1000);
  set(dc::kDstTsize0, 80);
  set(dc::dst_tsize(1), 9);
  set(dc::dst_stride(1), 128);
  b.program(0, src, dst, 80, 0);   // LIN = 0: strided
  b.run_until_idle(0);
  ASSERT_EQ(b.recorder.done.size(), 1u);
  EXPECT_EQ(b.recorder.done[0].transfer.bytes, 720u);
  std::vector<uint8_t> stream;
  for (int p = 0; p < 3; ++p)
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 48; ++c) stream.push_back(space[p * 1000 + r * 64 + c]);
  std::vector<uint8_t> expected(9 * 128 + 128, 0xEE);   // from dst - 64
  for (size_t i = 0; i < stream.size(); ++i) expected[64 + (i / 80) * 128 + i % 80] = stream[i];
  EXPECT_TRUE(b.peek(dst - 64, expected.size()) == expected);

  // A strided memset fills only the rows of its box.
  b.poke(b.sram(0x9000), std::vector<uint8_t>(256, 0));
  set(dc::kDstTsize0, 10);
  set(dc::dst_tsize(1), 4);
  set(dc::dst_stride(1), 32);
  b.program(0, 0x5A5A5A5A5A5A5A5Aull, b.sram(0x9000), 10, dc::kCommitMemSet);
  b.run_until_idle(0);
  const std::vector<uint8_t> got = b.peek(b.sram(0x9000), 256);
  for (int i = 0; i < 256; ++i) {
    const bool inside = i < 4 * 32 && i % 32 < 10;
    ASSERT_EQ(got[i], inside ? 0x5A : 0) << "byte " << i;
  }

  // Source and destination boxes of different sizes are refused with the local BAD_COMMIT bit.
  set(dc::kSrcTsize0, 48);
  set(dc::src_tsize(1), 5);
  set(dc::src_tsize(2), 2);
  b.completion_to(0, b.sob_address(3), kAdd1);
  b.program(0, src, dst, 80, dc::kCommitWrCompEn);
  b.run_until_idle(0);
  ASSERT_EQ(b.recorder.failed.size(), 1u);
  EXPECT_NE(b.recorder.failed[0].message.find("480"), std::string::npos) << b.recorder.failed[0].message;
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kErrCause)), hw::kDmaErrCauseBadCommit);
  EXPECT_EQ(b.sm.sob_value(3), 0u);
}

TEST(Dma, UnmappedAddressesFailWithoutCompletionAndTheEngineRecovers) {
  DmaBench b(DmaBench::channels({0}));
  b.enable(0);
  constexpr uint32_t kSob = 5;
  // Error messages go to an SRAM word (the driver points them at the GIC).
  b.probe.write32(b.reg(0, dc::kErrCfg), dc::kErrCfgErrMsgEn);
  b.probe.write32(b.reg(0, dc::kErrmsgAddrLo), static_cast<uint32_t>(b.sram(0x200)));
  b.probe.write32(b.reg(0, dc::kErrmsgAddrHi), static_cast<uint32_t>(b.sram(0x200) >> 32));
  b.probe.write32(b.reg(0, dc::kErrmsgWdata), 0xE44u);

  const uint64_t hole = b.card.memory_map().dram_base() + b.system.dram_size() + 0x1000;   // nothing there
  ASSERT_LT(b.system.fabric().decode(hole), 0);
  copy_and_wait(b, 0, hole, b.dram(0), 8192, kSob);
  b.settle();
  ASSERT_EQ(b.recorder.failed.size(), 1u);
  EXPECT_EQ(b.recorder.failed[0].address, hole);
  EXPECT_EQ(b.recorder.failed[0].channel, 0u);
  EXPECT_TRUE(b.recorder.done.empty());
  EXPECT_EQ(b.sm.sob_value(kSob), 0u) << "no completion message after an error";
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kErrCause)), dc::kErrCauseHbwRdErr);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts0)) & dc::kSts0Busy, 0u);
  EXPECT_EQ(b.core(0).stats().errors, 1u);
  EXPECT_EQ(b.core(0).stats().failed_transfers, 1u);
  const std::vector<uint8_t> msg = b.peek(b.sram(0x200), 4);
  EXPECT_EQ(msg[0] | msg[1] << 8, 0xE44);
  // ERR_CAUSE is write-1-to-clear.
  b.probe.write32(b.reg(0, dc::kErrCause), 0);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kErrCause)), dc::kErrCauseHbwRdErr);
  b.probe.write32(b.reg(0, dc::kErrCause), dc::kErrCauseHbwRdErr);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kErrCause)), 0u);

  // The next transfer works and completes.
  const std::vector<uint8_t> data = seed(b, b.host(0x5000), 5000, 8);
  copy_and_wait(b, 0, b.host(0x5000), b.dram(0x9000), 5000, kSob);
  EXPECT_EQ(b.recorder.done.size(), 1u);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);
  EXPECT_TRUE(b.peek(b.dram(0x9000), 5000) == data);

  // Unmapped destination: HBW_WR_ERR.
  copy_and_wait(b, 0, b.host(0x5000), hole, 1000, kSob);
  ASSERT_EQ(b.recorder.failed.size(), 2u);
  EXPECT_EQ(b.recorder.failed[1].address, hole);
  EXPECT_EQ(b.core(0).err_cause(), dc::kErrCauseHbwWrErr);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);

  // A transfer running off the end of HBM: bursts are cut at 256-byte boundaries of the source,
  // so the writes at end - 1000, - 744, - 488 land and the one at end - 232 crosses the end and
  // fails; nothing after it is issued.
  const uint64_t end = b.card.memory_map().dram_base() + b.system.dram_size();
  b.probe.write32(b.reg(0, dc::kErrCause), 0xFFFFFFFFu);
  seed(b, b.host(0x8000), 5000, 2);
  b.poke(end - 232, std::vector<uint8_t>(232, 0xEE));
  copy_and_wait(b, 0, b.host(0x8000), end - 1000, 5000, kSob);
  ASSERT_EQ(b.recorder.failed.size(), 3u);
  EXPECT_EQ(b.recorder.failed[2].address, end - 232);
  EXPECT_EQ(b.core(0).err_cause(), dc::kErrCauseHbwWrErr);
  EXPECT_TRUE(b.peek(end - 1000, 768) == b.peek(b.host(0x8000), 768));
  EXPECT_TRUE(b.peek(end - 232, 232) == std::vector<uint8_t>(232, 0xEE));

  // A completion message to nowhere: the data moved, LBW_WR_ERR, reported as a failure.
  b.probe.write32(b.reg(0, dc::kErrCause), 0xFFFFFFFFu);
  b.completion_to(0, hole, kAdd1);
  b.copy(0, b.host(0x5000), b.dram(0xA0000), 512, dc::kCommitWrCompEn);
  b.run_until_idle(0);
  ASSERT_EQ(b.recorder.failed.size(), 4u);
  EXPECT_EQ(b.recorder.failed[3].address, hole);
  EXPECT_EQ(b.core(0).err_cause(), dc::kErrCauseLbwWrErr);
  EXPECT_EQ(b.core(0).stats().errors, 4u);
  EXPECT_EQ(b.core(0).stats().error_messages, 4u);
  EXPECT_EQ(b.core(0).stats().transfers, 1u);
}

TEST(Dma, QueuedCommitsRunInCommitOrder) {
  DmaBench b(DmaBench::channels({0}));
  b.enable(0);
  constexpr uint32_t kSob = 9;
  seed(b, b.host(0x1000000), 2 * kMiB, 1);
  // A long transfer, then three short ones to the same destination while it runs.
  b.copy(0, b.host(0x1000000), b.dram(0x1000000), 2 * kMiB);
  std::vector<std::vector<uint8_t>> sources;
  for (int k = 0; k < 3; ++k) {
    const uint64_t src = b.host(0x200000 + k * 0x10000);
    sources.push_back(seed(b, src, 4096, 20 + k));
    b.completion_to(0, b.sob_address(kSob), kAdd1);
    b.copy(0, src, b.dram(0x3000000), 4096, dc::kCommitWrCompEn);
  }
  EXPECT_EQ(b.core(0).queued(), 3u);
  EXPECT_NE(b.probe.read32(b.reg(0, dc::kSts0)) & dc::kSts0Busy, 0u);
  EXPECT_TRUE(b.recorder.done.empty()) << "the long transfer should still run";
  b.run_until_idle(0);
  ASSERT_EQ(b.recorder.done.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(b.recorder.started[k].transfer.id, k + 1);
    EXPECT_EQ(b.recorder.done[k].transfer.id, k + 1);
    if (k > 0) {
      EXPECT_GE(b.recorder.started[k].at, b.recorder.done[k - 1].at);
    }
  }
  EXPECT_TRUE(b.peek(b.dram(0x3000000), 4096) == sources[2]) << "the last commit must write last";
  EXPECT_EQ(b.sm.sob_value(kSob), 3u);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts0)), 0u);
  // Busy time covers the four transfers back to back.
  const hw::DmaCoreStats s = b.core(0).stats();
  EXPECT_GE(s.busy_ps, b.recorder.done[3].at - b.recorder.started[0].at);
  EXPECT_LE(s.busy_ps, b.recorder.done[3].at - b.recorder.started[0].at + 1000000);
}

TEST(Dma, AFullCommitQueueDropsTheCommitWithDescOverflow) {
  auto configs = DmaBench::channels({1});
  configs[0].queue_depth = 2;
  DmaBench b(configs);
  b.enable(0);
  b.copy(0, b.host(0), b.dram(0), kMiB);            // runs
  b.copy(0, b.host(0), b.dram(0x200000), 4096);     // queued 1
  b.copy(0, b.host(0), b.dram(0x300000), 4096);     // queued 2
  b.copy(0, b.host(0), b.dram(0x400000), 4096);     // dropped
  EXPECT_EQ(b.core(0).err_cause(), dc::kErrCauseDescOvf);
  ASSERT_EQ(b.recorder.failed.size(), 1u);
  EXPECT_EQ(b.recorder.failed[0].address, b.dram(0x400000));
  b.run_until_idle(0);
  EXPECT_EQ(b.recorder.done.size(), 3u);
  EXPECT_EQ(b.core(0).stats().overflows, 1u);
  EXPECT_EQ(b.core(0).stats().errors, 1u);
  EXPECT_EQ(b.core(0).stats().commits, 4u);
}

TEST(Dma, CommitIsIgnoredWhileTheCoreIsDisabled) {
  DmaBench b(DmaBench::channels({4}));
  constexpr uint32_t kSob = 11;
  const std::vector<uint8_t> data = seed(b, b.dram(0x1000), 4096, 5);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kCfg0)), 0u);   // disabled out of reset
  copy_and_wait(b, 0, b.dram(0x1000), b.sram(0x1000), 4096, kSob);
  b.settle();
  EXPECT_FALSE(b.core(0).busy());
  EXPECT_EQ(b.core(0).stats().ignored_commits, 1u);
  EXPECT_EQ(b.recorder.ignored.size(), 1u);
  EXPECT_TRUE(b.recorder.started.empty());
  EXPECT_EQ(b.sm.sob_value(kSob), 0u);
  EXPECT_TRUE(b.peek(b.sram(0x1000), 4096) == std::vector<uint8_t>(4096, 0));
  b.enable(0);
  copy_and_wait(b, 0, b.dram(0x1000), b.sram(0x1000), 4096, kSob);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);
  EXPECT_TRUE(b.peek(b.sram(0x1000), 4096) == data);
  EXPECT_EQ(b.core(0).stats().ignored_commits, 1u);
}

TEST(Dma, RegistersReadBackAndUnknownOffsetsFail) {
  DmaBench b(DmaBench::channels({5}));
  const uint32_t plain[] = {dc::kCfg1, dc::kLbwMaxOutstand, dc::kSrcBaseLo, dc::kSrcBaseHi, dc::kDstBaseLo,
                            dc::kDstBaseHi, dc::kSrcTsize0, dc::kDstTsize0, dc::kWrCompWdata, dc::kWrCompAddrLo,
                            dc::kWrCompAddrHi, dc::kWrCompAwuser, dc::kTeNumrows, dc::kProt, dc::kSecureProps,
                            dc::kNonSecureProps, dc::kRdMaxOutstand, dc::kRdMaxSize, dc::kWrMaxOutstand,
                            dc::kErrCfg, dc::kErrmsgAddrLo, dc::kErrmsgAddrHi, dc::kErrmsgWdata,
                            dc::src_tsize(4), dc::src_stride(4), dc::dst_tsize(1), dc::dst_stride(2), 0xF80, 0xFFC};
  uint32_t v = 0x1000;
  for (uint32_t offset : plain) b.probe.write32(b.reg(0, offset), v++);
  v = 0x1000;
  for (uint32_t offset : plain) EXPECT_EQ(b.probe.read32(b.reg(0, offset)), v++) << "offset 0x" << std::hex << offset;
  // Status registers are read-only; unknown offsets are refused with an error response.
  b.probe.write32(b.reg(0, dc::kSts0), 0xFFFFFFFFu);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts0)), 0u);
  for (uint32_t offset : {0x00Cu, 0x010u, 0x024u, 0x08Cu, 0x198u, 0x200u, 0xF7Cu}) {
    uint32_t value = 0;
    EXPECT_NE(b.probe.access(false, b.reg(0, offset), value), tlm::TLM_OK_RESPONSE) << "read 0x" << std::hex << offset;
    EXPECT_NE(b.probe.access(true, b.reg(0, offset), value), tlm::TLM_OK_RESPONSE) << "write 0x" << std::hex << offset;
  }
  EXPECT_EQ(b.core(0).stats().commits, 0u);
}

TEST(Dma, LinDmaRegisterSequenceThroughTheCpLdmaOffsets) {
  DmaBench b(DmaBench::channels({0}));
  b.enable(0);
  // What a QMAN CP does for LIN_DMA: SRC (lo, hi) at CP_LDMA_SRC_BASE_LO_OFFSET, DST (lo, hi with
  // context_id_high in [31:24]) at CP_LDMA_DST_BASE_LO_OFFSET, tsize at CP_LDMA_TSIZE_OFFSET, then
  // COMMIT with the ctl bits (wr_comp_en, lin, context_id_low).
  const uint64_t src = b.host(0x123457), dst = b.dram(0x77001);
  const std::vector<uint8_t> data = seed(b, src, 3001, 12);
  b.completion_to(0, b.sob_address(100), kAdd1);
  b.probe.write32(b.reg(0, regs::kQmanLdmaSrcOffset), static_cast<uint32_t>(src));
  b.probe.write32(b.reg(0, regs::kQmanLdmaSrcOffset + 4), static_cast<uint32_t>(src >> 32));
  b.probe.write32(b.reg(0, regs::kQmanLdmaDstOffset), static_cast<uint32_t>(dst));
  b.probe.write32(b.reg(0, regs::kQmanLdmaDstOffset + 4), static_cast<uint32_t>(dst >> 32) | 0xAB000000u);
  b.probe.write32(b.reg(0, regs::kQmanLdmaSizeOffset), 3001);
  b.probe.write32(b.reg(0, dc::kCommit), dc::kCommitWrCompEn | dc::kCommitLin | (0x5Cu << dc::kCommitCtxIdShift));
  b.run_until_idle(0);
  ASSERT_EQ(b.recorder.done.size(), 1u);
  EXPECT_EQ(b.recorder.done[0].transfer.destination, dst);
  EXPECT_EQ(b.recorder.done[0].transfer.source, src);
  EXPECT_TRUE(b.peek(dst, 3001) == data);
  EXPECT_EQ(b.sm.sob_value(100), 1u);
}

TEST(Dma, ResetAbandonsTransfersAndDisablesTheCore) {
  DmaBench b(DmaBench::channels({0}));
  b.enable(0);
  constexpr uint32_t kSob = 30;
  b.completion_to(0, b.sob_address(kSob), kAdd1);
  b.copy(0, b.host(0), b.dram(0), 4 * kMiB, dc::kCommitWrCompEn);
  b.copy(0, b.host(0), b.dram(0x1000000), 4096, dc::kCommitWrCompEn);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));
  ASSERT_TRUE(b.core(0).busy());
  b.core(0).reset();
  EXPECT_FALSE(b.core(0).busy());
  EXPECT_EQ(b.core(0).stats().aborted_transfers, 2u);
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_US));   // requests already in the fabric drain
  EXPECT_EQ(b.sm.sob_value(kSob), 0u);
  EXPECT_TRUE(b.recorder.done.empty());
  EXPECT_TRUE(b.recorder.failed.empty());
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kCfg0)), 0u);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kWrCompAddrLo)), 0u);
  // Disabled after reset; once enabled again it works.
  b.copy(0, b.host(0), b.dram(0x2000000), 4096);
  EXPECT_EQ(b.core(0).stats().ignored_commits, 1u);
  b.enable(0);
  const std::vector<uint8_t> data = seed(b, b.host(0x9000), 4096, 31);
  copy_and_wait(b, 0, b.host(0x9000), b.dram(0x2000000), 4096, kSob);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);
  EXPECT_TRUE(b.peek(b.dram(0x2000000), 4096) == data);
  EXPECT_EQ(b.core(0).stats().transfers, 1u);
}

// ---------------------------------------------------------------------------------------------
// ERR_CFG.STOP_ON_ERR, CFG_1 HALT / FLUSH, and the engine status the QMAN's engine barrier uses.
// ---------------------------------------------------------------------------------------------

// With STOP_ON_ERR (what the driver sets: "no completion to operation in case of RAZWI") an error
// halts the engine: the failed transfer sends no completion, queued transfers stay queued, STS1
// reads IS_HALT and the engine is not idle, until reset().
TEST(Dma, StopOnErrorHaltsTheEngineUntilReset) {
  DmaBench b(DmaBench::channels({0}));
  b.enable(0);
  constexpr uint32_t kSob = 40;
  b.probe.write32(b.reg(0, dc::kErrCfg), dc::kErrCfgErrMsgEn | dc::kErrCfgStopOnErr);
  b.probe.write32(b.reg(0, dc::kErrmsgAddrLo), static_cast<uint32_t>(b.sram(0x300)));
  b.probe.write32(b.reg(0, dc::kErrmsgAddrHi), static_cast<uint32_t>(b.sram(0x300) >> 32));
  b.probe.write32(b.reg(0, dc::kErrmsgWdata), 0xE55u);
  const uint64_t hole = b.card.memory_map().dram_base() + b.system.dram_size() + 0x1000;
  seed(b, b.host(0x6000), 4096, 3);
  b.completion_to(0, b.sob_address(kSob), kAdd1);
  b.copy(0, hole, b.dram(0x10000), 4096, dc::kCommitWrCompEn);          // fails
  b.copy(0, b.host(0x6000), b.dram(0x20000), 4096, dc::kCommitWrCompEn); // queued behind it
  EXPECT_FALSE(b.core(0).engine_idle());
  sc_core::sc_start(sc_core::sc_time(50, sc_core::SC_US));
  b.copy(0, b.host(0x6000), b.dram(0x30000), 4096, dc::kCommitWrCompEn); // committed while halted
  sc_core::sc_start(sc_core::sc_time(50, sc_core::SC_US));

  ASSERT_EQ(b.recorder.failed.size(), 1u);
  ASSERT_EQ(b.recorder.halts.size(), 1u);
  EXPECT_GE(b.recorder.halts[0].second, b.recorder.failed[0].at);
  EXPECT_EQ(b.recorder.started.size(), 1u) << "a transfer started on a halted engine";
  EXPECT_TRUE(b.recorder.done.empty());
  EXPECT_EQ(b.sm.sob_value(kSob), 0u) << "no completion message for the failed transfer";
  EXPECT_TRUE(b.core(0).halted());
  EXPECT_TRUE(b.core(0).error_halted());
  EXPECT_FALSE(b.core(0).engine_idle());
  EXPECT_EQ(b.core(0).queued(), 2u);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts1)), dc::kSts1IsHalt);
  EXPECT_NE(b.probe.read32(b.reg(0, dc::kSts0)) & dc::kSts0Busy, 0u);
  EXPECT_EQ(b.core(0).err_cause(), dc::kErrCauseHbwRdErr);
  EXPECT_EQ(b.core(0).stats().halts, 1u);
  EXPECT_EQ(b.peek(b.sram(0x300), 2), (std::vector<uint8_t>{0x55, 0x0E}));   // the error message
  // Clearing ERR_CAUSE does not restart the engine.
  b.probe.write32(b.reg(0, dc::kErrCause), 0xFFFFFFFFu);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));
  EXPECT_EQ(b.recorder.started.size(), 1u);

  b.core(0).reset();
  EXPECT_FALSE(b.core(0).halted());
  EXPECT_TRUE(b.core(0).engine_idle());
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts1)), 0u);
  EXPECT_EQ(b.core(0).stats().aborted_transfers, 2u);
  b.enable(0);
  const std::vector<uint8_t> data = seed(b, b.host(0x9000), 4096, 4);
  copy_and_wait(b, 0, b.host(0x9000), b.dram(0x40000), 4096, kSob);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);
  EXPECT_TRUE(b.peek(b.dram(0x40000), 4096) == data);
  EXPECT_TRUE(b.peek(b.dram(0x20000), 4096) == std::vector<uint8_t>(4096, 0)) << "a dropped transfer ran";
}

// Without STOP_ON_ERR the engine reports the error and goes on with the next transfer.
TEST(Dma, WithoutStopOnErrorTheNextTransferRuns) {
  DmaBench b(DmaBench::channels({2}));
  b.enable(0);
  constexpr uint32_t kSob = 41;
  const uint64_t hole = b.card.memory_map().dram_base() + b.system.dram_size() + 0x1000;
  const std::vector<uint8_t> data = seed(b, b.sram(0x8000), 4096, 5);
  b.completion_to(0, b.sob_address(kSob), kAdd1);
  b.copy(0, hole, b.dram(0x10000), 4096, dc::kCommitWrCompEn);
  b.copy(0, b.sram(0x8000), b.dram(0x20000), 4096, dc::kCommitWrCompEn);
  b.run_until_idle(0);
  EXPECT_EQ(b.recorder.failed.size(), 1u);
  EXPECT_TRUE(b.recorder.halts.empty());
  EXPECT_EQ(b.recorder.done.size(), 1u);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);
  EXPECT_TRUE(b.peek(b.dram(0x20000), 4096) == data);
  EXPECT_FALSE(b.core(0).halted());
  EXPECT_TRUE(b.core(0).engine_idle());
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts1)), 0u);
  EXPECT_EQ(b.core(0).stats().halts, 0u);
}

// CFG_1.FLUSH drops the queued transfers and clears an error halt; CFG_1.HALT pauses the engine
// (nothing new starts; STS1.IS_HALT) until it is cleared.
TEST(Dma, Cfg1FlushClearsAnErrorHaltAndHaltPausesTheEngine) {
  DmaBench b(DmaBench::channels({3}));
  b.enable(0);
  constexpr uint32_t kSob = 42;
  b.probe.write32(b.reg(0, dc::kErrCfg), dc::kErrCfgStopOnErr);
  const uint64_t hole = b.card.memory_map().dram_base() + b.system.dram_size() + 0x1000;
  b.copy(0, hole, b.dram(0x10000), 4096);
  b.copy(0, b.sram(0), b.dram(0x20000), 4096);
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_US));
  ASSERT_TRUE(b.core(0).error_halted());
  EXPECT_EQ(b.core(0).queued(), 1u);
  b.probe.write32(b.reg(0, dc::kCfg1), dc::kCfg1Flush);
  EXPECT_FALSE(b.core(0).halted());
  EXPECT_EQ(b.core(0).queued(), 0u);
  EXPECT_TRUE(b.core(0).engine_idle());
  EXPECT_EQ(b.core(0).stats().aborted_transfers, 1u);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts1)), 0u);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts0)) & dc::kSts0Busy, 0u);

  // Software halt.
  b.probe.write32(b.reg(0, dc::kCfg1), dc::kCfg1Halt);
  EXPECT_EQ(b.probe.read32(b.reg(0, dc::kSts1)), dc::kSts1IsHalt);
  const std::vector<uint8_t> data = seed(b, b.sram(0x4000), 4096, 6);
  b.completion_to(0, b.sob_address(kSob), kAdd1);
  b.copy(0, b.sram(0x4000), b.dram(0x30000), 4096, dc::kCommitWrCompEn);
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_US));
  EXPECT_EQ(b.recorder.started.size(), 1u) << "only the failed transfer started";
  EXPECT_FALSE(b.core(0).engine_idle());
  b.probe.write32(b.reg(0, dc::kCfg1), 0);
  b.run_until_idle(0);
  EXPECT_EQ(b.recorder.done.size(), 1u);
  EXPECT_EQ(b.sm.sob_value(kSob), 1u);
  EXPECT_TRUE(b.peek(b.dram(0x30000), 4096) == data);
  EXPECT_EQ(b.recorder.halts.size(), 1u);
}

// engine_idle() follows the queue (a COMMIT that just took effect counts) and the event fires when
// the engine becomes idle.
TEST(Dma, EngineIdleEventFiresWhenTheQueueDrains) {
  DmaBench b(DmaBench::channels({4}));
  b.enable(0);
  std::vector<hw::Picoseconds> idle_at;
  sc_core::sc_spawn([&] {
    for (;;) {
      sc_core::wait(b.core(0).engine_idle_event());
      idle_at.push_back(hw::now_ps());
    }
  });
  EXPECT_TRUE(b.core(0).engine_idle());
  b.copy(0, b.dram(0), b.dram(0x100000), 64 * 1024);
  b.copy(0, b.dram(0), b.dram(0x200000), 64 * 1024);
  EXPECT_FALSE(b.core(0).engine_idle());
  b.run_until_idle(0);
  EXPECT_TRUE(b.core(0).engine_idle());
  ASSERT_EQ(b.recorder.done.size(), 2u);
  ASSERT_FALSE(idle_at.empty());
  EXPECT_EQ(idle_at.back(), b.recorder.done[1].at);
  for (hw::Picoseconds at : idle_at) EXPECT_GE(at, b.recorder.done[1].at) << "idle reported while busy";
}

// ---------------------------------------------------------------------------------------------
// Bandwidth. Expectations:
//  * A stream with one side in HBM and the other in SRAM is bound by the DMA's fabric master port
//    (256 B/cycle at the fabric clock = 281.6 GB/s; HBM and SRAM are faster): >= 90% of it, with a
//    request window above the bandwidth-delay product (256 x 256 B).
//  * HBM -> HBM: every byte is read and written in HBM. The HBM model's rate for that traffic is
//    measured side by side with the bench traffic generator (sequential 256 B requests, half of
//    them writes, 2 ports x 256 in flight, so its ports are not the limit); the copy moves half of
//    it. Expect >= 80% of min(master port, that / 2).
//  * With a small window W the engine keeps W reads in flight all the time: bandwidth =
//    W x 256 B / mean read latency (Little's law) within 10%.
// ---------------------------------------------------------------------------------------------

double port_gbps(const DmaBench& b) {
  return double(b.card.fabric().master_port_bytes_per_cycle()) * b.card.fabric().clock_mhz() / 1000.0;
}

TEST(Dma, StreamingHbmCopyReachesTheBandwidthOfTheMemoryModels) {
  auto configs = DmaBench::channels({2, 3});
  configs[0].outstanding = 256;
  configs[1].outstanding = 8;
  DmaBench b(configs, {}, 2);
  b.enable(0);
  b.enable(1);
  const uint32_t n = 8 * kMiB;
  const double port = port_gbps(b);

  b.copy(0, b.dram(0), b.sram(0x10000), n);
  b.run_until_idle(0);
  const double hbm_to_sram = b.last_gbps();
  b.copy(0, b.sram(0x10000), b.dram(0x4000000), n);
  b.run_until_idle(0);
  const double sram_to_hbm = b.last_gbps();

  bench::TrafficSpec spec;
  spec.pattern = bench::Pattern::kSequential;
  spec.write_fraction = 0.5;
  spec.request_bytes = 256;
  spec.requests = 2 * n / 256;
  spec.ports = 2;
  spec.window = 256;
  spec.region_base = b.dram(0x10000000);
  spec.region_bytes = 2 * n;
  const bench::TrafficResult mixed = b.generator->run(spec);
  const double hbm_mixed = double(mixed.bytes) / (double(mixed.end_ps - mixed.start_ps) / 1000.0);

  b.copy(0, b.dram(0), b.dram(0x8000000), n);
  b.run_until_idle(0);
  const double hbm_copy = b.last_gbps();
  const double expected = std::min(port, hbm_mixed / 2);

  const hw::DmaCoreStats before = b.core(1).stats();
  b.copy(1, b.dram(0), b.sram(0x10000), 2 * kMiB);
  b.run_until_idle(1);
  const double small_window = b.last_gbps();
  const hw::DmaCoreStats after = b.core(1).stats();
  const double mean_read_ns = double(after.read_latency_ps - before.read_latency_ps) /
                              double(after.read_bursts - before.read_bursts) / 1000.0;
  const double littles_law = 8 * 256 / mean_read_ns;

  std::printf("master port %.1f GB/s, HBM peak %.1f GB/s, HBM mixed read/write (generator) %.1f GB/s\n", port,
              b.system.hbm().peak_bytes_per_second() / 1e9, hbm_mixed);
  std::printf("DMA HBM->SRAM %.1f, SRAM->HBM %.1f, HBM->HBM %.1f GB/s (expected >= %.1f)\n", hbm_to_sram, sram_to_hbm,
              hbm_copy, 0.8 * expected);
  std::printf("window 8: %.1f GB/s, mean read latency %.1f ns, Little's law %.1f GB/s\n", small_window, mean_read_ns,
              littles_law);
  EXPECT_GE(hbm_to_sram, 0.9 * port);
  EXPECT_GE(sram_to_hbm, 0.9 * port);
  EXPECT_LE(std::max(hbm_to_sram, sram_to_hbm), 1.001 * port);
  EXPECT_GE(hbm_copy, 0.8 * expected);
  EXPECT_LE(hbm_copy, 1.001 * port);
  EXPECT_NEAR(small_window, littles_law, 0.1 * littles_law);
}

TEST(Dma, PciChannelsReachThePcieLinkPayloadBandwidth) {
  DmaBench b(DmaBench::channels({0, 1}));
  b.enable(0);
  b.enable(1);
  const uint32_t n = 16 * kMiB;
  // Host reads return in completions of at most max_payload (256 B = the burst size) and device
  // writes are posted TLPs of 256 B: the same payload efficiency either way.
  const double pcie = b.system.pcie().payload_bytes_per_second(256, true) / 1e9;
  b.copy(0, b.host(0x1000000), b.dram(0), n);
  b.run_until_idle(0);
  const double down = b.last_gbps();
  b.copy(1, b.dram(0), b.host(0x4000000), n);
  b.run_until_idle(1);
  const double up = b.last_gbps();
  std::printf("PCIe payload bandwidth %.2f GB/s: host->device %.2f, device->host %.2f GB/s\n", pcie, down, up);
  EXPECT_GE(down, 0.9 * pcie);
  EXPECT_LE(down, 1.001 * pcie);
  EXPECT_GE(up, 0.9 * pcie);
  EXPECT_LE(up, 1.001 * pcie);
}

}  // namespace
}  // namespace hpusim::testing

namespace hpusim::testing {
namespace {

// hpusim's reduction mode: with REDUCE_CFG set, a copy writes op(destination, source), element by
// element, the same bits as the host reduction (arch/reduction) computes; each burst reads both
// operands. Bad configurations and partial elements are refused without touching the data.
TEST(DmaReduce, ACopyWithReduceCfgWritesTheReductionOfBothOperands) {
  DmaBench b(DmaBench::channels({2}));
  b.enable(0);
  namespace dc = regs::dma_core;
  using reduction::ReduceOp;
  using reduction::ReduceType;
  constexpr uint32_t kSob = 12;
  struct Case {
    ReduceOp op;
    ReduceType type;
    uint64_t src, dst;
    uint32_t bytes;
  };
  const Case cases[] = {
      {ReduceOp::Sum, ReduceType::F32, b.dram(0x10004), b.dram(0x200000), 100000},   // unaligned bursts
      {ReduceOp::Sum, ReduceType::Bf16, b.dram(0x40002), b.sram(0x1000), 33334},
      {ReduceOp::Max, ReduceType::F32, b.sram(0x80000), b.dram(0x300000), 4096},
      {ReduceOp::Min, ReduceType::Bf16, b.dram(0x50000), b.dram(0x400006), 770},
  };
  uint64_t k = 0, reduced = 0;
  for (const Case& c : cases) {
    std::vector<uint8_t> x = pattern_bytes(c.bytes, 40 + k), acc = pattern_bytes(c.bytes, 50 + k);
    // Finite values of a sensible range: exponent bits cleared to a band (f32 and bf16 alike).
    const uint32_t e = reduction::element_bytes(c.type);
    for (uint32_t i = e - 1; i < c.bytes; i += e) {
      x[i] = static_cast<uint8_t>((x[i] & 0x83) | 0x3C);
      acc[i] = static_cast<uint8_t>((acc[i] & 0x83) | 0x3C);
    }
    b.poke(c.src, x);
    b.poke(c.dst, acc);
    guard(b, c.dst, c.bytes);
    b.probe.write32(b.reg(0, dc::kReduceCfg), qman::reduce_cfg_value(c.op, c.type));
    copy_and_wait(b, 0, c.src, c.dst, c.bytes, kSob);
    b.probe.write32(b.reg(0, dc::kReduceCfg), 0);
    reduction::reduce_into(acc.data(), x.data(), c.bytes, c.op, c.type);
    EXPECT_TRUE(b.peek(c.dst, c.bytes) == acc) << reduction::name(c.op) << " " << reduction::name(c.type) << " of "
                                               << c.bytes << " bytes";
    EXPECT_TRUE(guard_intact(b, c.dst, c.bytes));
    EXPECT_TRUE(b.peek(c.src, c.bytes) == x) << "the source is only read";
    reduced += c.bytes;
    ++k;
  }
  EXPECT_TRUE(b.recorder.failed.empty());
  EXPECT_EQ(b.sm.sob_value(kSob), 4u);
  EXPECT_EQ(b.core(0).stats().bytes, reduced);
  EXPECT_EQ(b.core(0).stats().read_bursts, 2 * b.core(0).stats().write_bursts) << "two reads per written burst";

  // With REDUCE_CFG clear again, a copy is a copy.
  const std::vector<uint8_t> plain = seed(b, b.dram(0x600000), 1000, 7);
  copy_and_wait(b, 0, b.dram(0x600000), b.dram(0x700000), 1000, kSob);
  EXPECT_TRUE(b.peek(b.dram(0x700000), 1000) == plain);

  // Refused: a bf16 reduction over an odd byte count, an f32 one at a 2-byte address, an unknown
  // op; each fails with BAD_COMMIT, writes nothing and sends no completion.
  const std::vector<uint8_t> before = b.peek(b.dram(0x800000), 64);
  const struct {
    uint32_t cfg;
    uint64_t dst;
    uint32_t bytes;
    const char* message;
  } bad[] = {
      {qman::reduce_cfg_value(ReduceOp::Sum, ReduceType::Bf16), b.dram(0x800000), 63, "whole 2-byte elements"},
      {qman::reduce_cfg_value(ReduceOp::Sum, ReduceType::F32), b.dram(0x800002), 32, "whole 4-byte elements"},
      {dc::kReduceEn | (3u << dc::kReduceOpShift), b.dram(0x800000), 32, "names no reduction"},
  };
  size_t failures = b.recorder.failed.size();
  for (const auto& c : bad) {
    b.probe.write32(b.reg(0, dc::kErrCause), 0xFFFFFFFFu);
    b.probe.write32(b.reg(0, dc::kReduceCfg), c.cfg);
    copy_and_wait(b, 0, b.dram(0x600000), c.dst, c.bytes, kSob);
    ASSERT_EQ(b.recorder.failed.size(), ++failures);
    EXPECT_NE(b.recorder.failed.back().message.find(c.message), std::string::npos) << b.recorder.failed.back().message;
    EXPECT_EQ(b.core(0).err_cause(), hw::kDmaErrCauseBadCommit);
  }
  b.probe.write32(b.reg(0, dc::kReduceCfg), 0);
  EXPECT_TRUE(b.peek(b.dram(0x800000), 64) == before);
  EXPECT_EQ(b.sm.sob_value(kSob), 5u) << "no completion for a refused reduction";
}

}  // namespace
}  // namespace hpusim::testing
