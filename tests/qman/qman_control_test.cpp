// QMAN flow control on a whole card: packet barriers (EB against the DMA core, MB against the CP's
// own messages), DMA STOP_ON_ERR seen from a command processor, REPEAT loops and LOAD_AND_EXE in
// scalar mode (the hl-thunk test_cs_load_scalars_exe_* cases).
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "tests/qman/qman_fixture.h"

namespace hpusim::testing {
namespace {

using qman::Barriers;
using qman::CommandBufferBuilder;
using qman::Opcode;
using regs::QmanId;
using regs::QmReg;
namespace dc = regs::dma_core;

constexpr Barriers kEbMb{true, false, true};
constexpr Barriers kEbRbMb{true, true, true};
constexpr auto kEn = regs::SyncManager::E_N;

std::vector<uint8_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> out(bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

class QmanControlTest : public CardTest {
 protected:
  uint64_t sob_address(unsigned sob) { return cfg(regs::sm_sob(kEn, sob)); }
  uint32_t sob_value(unsigned sob) { return sim->mmio_read32(sob_address(sob)) & qman::kSobValueMask; }
  // Four scalar-RF words in host memory; returns their device address.
  uint64_t rf_words(std::vector<uint32_t> words) {
    words.resize(4, 0);
    const uint64_t at = host_alloc(16);
    host_write(at, words.data(), 16);
    return device_view(at);
  }
  std::string error_text() const {
    std::string all;
    for (const auto& [cause, message] : recorder.errors) all += message + "\n";
    return all;
  }
  std::vector<uint8_t> dram_read(uint64_t address, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    sim->on_sim_thread([&] { card->memory().hbm().store().read(address, out.data(), bytes); });
    return out;
  }
  uint64_t dram(uint64_t offset) const { return preset.memory_map().dram_user_base() + offset; }
};

// ---------------------------------------------------------------------------------------------
// Barriers
// ---------------------------------------------------------------------------------------------

// The driver's completion for an external CB that holds a LIN_DMA is MSG_PROT with EB|MB: the
// completion must only be sent once the transfer has finished. Without EB it goes out while the
// DMA still runs.
TEST_F(QmanControlTest, EngineBarrierHoldsTheCompletionUntilTheDmaHasFinished) {
  open_stream(QmanId::DMA0, 0);
  enable_lin_dma(QmanId::DMA0, 0);
  watch_dma(0);
  constexpr uint32_t kBytes = 1u << 20;
  const std::vector<uint8_t> data = pattern(kBytes, 1);
  const uint64_t source = host_alloc(kBytes);
  host_write(source, data.data(), kBytes);
  const uint64_t cq = host_alloc(8);

  submit(QmanId::DMA0, 0,
         CommandBufferBuilder().lin_dma(device_view(source), dram(0x100000), kBytes).msg_prot(device_view(cq), 0xC0DE, kEbMb).bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0, 20000));
  ASSERT_EQ(dma_events.done.size(), 1u);
  auto prot = recorder.of("DMA0_QM/0", Opcode::MSG_PROT);
  ASSERT_EQ(prot.size(), 1u);
  EXPECT_GE(prot[0].end, dma_events.done[0].at) << "the completion left before the DMA finished";
  EXPECT_EQ(host_read<uint32_t>(cq), 0xC0DEu);
  EXPECT_EQ(dram_read(dram(0x100000), kBytes), data);

  // MB only: the completion is posted right after the commit, long before the transfer is done.
  submit(QmanId::DMA0, 0,
         CommandBufferBuilder().lin_dma(device_view(source), dram(0x300000), kBytes).msg_prot(device_view(cq), 0xC0DF).bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 0, 20000));
  for (int i = 0; i < 200 && dma_events.done.size() < 2; ++i) {
    sim->charge_ns(1000);
    sim->sync_device();
  }
  ASSERT_EQ(dma_events.done.size(), 2u);
  prot = recorder.of("DMA0_QM/0", Opcode::MSG_PROT);
  ASSERT_EQ(prot.size(), 2u);
  EXPECT_LT(prot[1].end + 10000000, dma_events.done[1].at) << "expected the completion ~30 us before the data";
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// EB also holds any other packet (here a MSG_LONG on another stream of the same QMAN: the engine
// is shared by the streams), and a QMAN without an engine model never waits.
TEST_F(QmanControlTest, EngineBarrierWaitsForWorkCommittedByAnyStream) {
  open_stream(QmanId::DMA1, 0);
  open_stream(QmanId::DMA1, 1);
  enable_lin_dma(QmanId::DMA1, 0);
  watch_dma(1);
  constexpr uint32_t kBytes = 4u << 20;
  // Stream 1 waits ~1.8 us (so stream 0 has committed its transfer), then sends with EB.
  submit(QmanId::DMA1, 0, CommandBufferBuilder().lin_dma(dram(0), dram(0x800000), kBytes).bytes());
  submit(QmanId::DMA1, 1, CommandBufferBuilder().wait(2000, 0, 0).msg_long(sram(0xD100), 1, kEbRbMb).bytes());
  ASSERT_TRUE(drain(QmanId::DMA1, 0));
  ASSERT_TRUE(drain(QmanId::DMA1, 1, 2000));
  ASSERT_EQ(dma_events.done.size(), 1u);
  const auto msg = recorder.of("DMA1_QM/1", Opcode::MSG_LONG);
  ASSERT_EQ(msg.size(), 1u);
  EXPECT_LT(msg[0].start, dma_events.done[0].at) << "the MSG_LONG came too late to test the barrier";
  EXPECT_GE(msg[0].end, dma_events.done[0].at);

  open_stream(QmanId::TPC0, 0);   // no engine model behind TPC QMANs yet: EB holds at once
  submit(QmanId::TPC0, 0, CommandBufferBuilder().nop(kEbRbMb).msg_long(sram(0xD104), 2, kEbRbMb).bytes());
  ASSERT_TRUE(drain(QmanId::TPC0, 0));
  EXPECT_EQ(sram_read32(0xD104), 2u);
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// MB holds every packet that carries it, not only messages: a NOP with MB waits until the
// stream's earlier (slow, host-bound) message is answered, and reports its failure.
TEST_F(QmanControlTest, MessageBarrierAppliesToEveryPacket) {
  open_stream(QmanId::DMA5, 0);
  const uint64_t host_word = host_alloc(4);
  submit(QmanId::DMA5, 0,
         CommandBufferBuilder()
             .msg_long(device_view(host_word), 1, qman::kNoBarriers).nop()                  // NOP without MB
             .msg_long(device_view(host_word), 2, qman::kNoBarriers).nop(qman::kMbOnly)     // NOP with MB
             .bytes());
  ASSERT_TRUE(drain(QmanId::DMA5, 0));
  const auto msgs = recorder.of("DMA5_QM/0", Opcode::MSG_LONG);
  const auto nops = recorder.of("DMA5_QM/0", Opcode::NOP);
  ASSERT_EQ(msgs.size(), 2u);
  ASSERT_EQ(nops.size(), 2u);
  const hw::Picoseconds plain = nops[0].end - msgs[0].end;
  const hw::Picoseconds barrier = nops[1].end - msgs[1].end;
  EXPECT_LT(plain, 10000u);       // one packet time
  EXPECT_GT(barrier, plain + 100000u) << "the MB NOP did not wait for the PCIe round trip";
  EXPECT_EQ(host_read<uint32_t>(host_word), 2u);

  // A failed message is reported at the next packet with MB, whatever its kind.
  submit(QmanId::DMA5, 0,
         CommandBufferBuilder().msg_long(0x4000000000ull, 1, qman::kNoBarriers).wait(10, 0, 0).nop(qman::kMbOnly)
             .msg_long(sram(0xD200), 3, qman::kNoBarriers).bytes());
  EXPECT_FALSE(drain(QmanId::DMA5, 0, 50));
  ASSERT_EQ(recorder.errors.size(), 1u);
  EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kMessage);
  EXPECT_EQ(sram_read32(0xD200), 0u);
  EXPECT_TRUE(mmio_read(QmanId::DMA5, QmReg::GlblSts1, 0) & regs::qm::kGlblSts1CpMsgWrErr);
}

// Register writes are posted in order: without barriers each WREG_32 costs one packet time; RB
// waits for the earlier ones' answers (a fabric round trip), so a command buffer of RB writes is
// several times slower. Both leave the same values in the registers.
TEST_F(QmanControlTest, RegisterWritesArePipelinedAndRbWaitsForThem) {
  open_stream(QmanId::DMA4, 0);
  const unsigned core = regs::qman_engine(QmanId::DMA4);
  const auto span_of = [&](size_t first) {
    const auto writes = recorder.of("DMA4_QM/0", Opcode::WREG_32);
    return writes.back().end - writes.at(first).start;
  };
  CommandBufferBuilder plain, barriers;
  for (uint32_t i = 0; i < 8; ++i) {
    plain.wreg32(static_cast<uint16_t>(dc::kWrCompWdata), 0x100 + i, qman::kNoBarriers);
    barriers.wreg32(static_cast<uint16_t>(dc::kWrCompWdata), 0x200 + i, qman::kRbMb);
  }
  submit(QmanId::DMA4, 0, plain.bytes());
  ASSERT_TRUE(drain(QmanId::DMA4, 0));
  const hw::Picoseconds pipelined = span_of(0);
  EXPECT_EQ(dma_read(core, dc::kWrCompWdata), 0x107u);
  submit(QmanId::DMA4, 0, barriers.bytes());
  ASSERT_TRUE(drain(QmanId::DMA4, 0));
  const hw::Picoseconds waited = span_of(8);
  EXPECT_EQ(dma_read(core, dc::kWrCompWdata), 0x207u);
  EXPECT_GT(waited, 4 * pipelined) << "pipelined " << pipelined << " ps, with RB " << waited << " ps";
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// A posted register write that fails (an offset the engine does not decode) is the CP's
// register-write error, naming the address, at the end of its command buffer at the latest.
TEST_F(QmanControlTest, FailedRegisterWriteIsTheCpsRegisterWriteError) {
  open_stream(QmanId::DMA4, 1);
  const uint64_t bad = cfg(regs::dma_core_base(regs::qman_engine(QmanId::DMA4)) + 0x200);
  submit(QmanId::DMA4, 1, CommandBufferBuilder().wreg32(0x200, 1, qman::kNoBarriers).bytes());
  EXPECT_FALSE(drain(QmanId::DMA4, 1, 50));
  ASSERT_EQ(recorder.errors.size(), 1u) << error_text();
  EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kRegisterWrite);
  std::ostringstream address;
  address << std::hex << bad;
  EXPECT_NE(recorder.errors[0].second.find(address.str()), std::string::npos) << error_text();
  EXPECT_TRUE(mmio_read(QmanId::DMA4, QmReg::GlblSts1, 1) & regs::qm::kGlblSts1CpWregErr);
}

// LIN_DMAs commit faster than transfers finish, but the CP holds one while the core's commit
// queue is full: twice the queue's depth in one command buffer, none dropped.
TEST_F(QmanControlTest, LinDmaWaitsForRoomInTheCommitQueue) {
  open_stream(QmanId::DMA0, 1);
  enable_lin_dma(QmanId::DMA0, 1);
  watch_dma(0);
  constexpr uint32_t kBytes = 64u << 10;
  const unsigned transfers = 2 * preset.dma().queue_depth() + 1;
  const std::vector<uint8_t> data = pattern(kBytes, 7);
  const uint64_t source = host_alloc(kBytes);
  host_write(source, data.data(), kBytes);
  CommandBufferBuilder cb;
  for (unsigned i = 0; i < transfers; ++i) cb.lin_dma(device_view(source), dram(0x400000 + i * kBytes), kBytes);
  cb.msg_long(sram(0xD300), 1, kEbRbMb);
  submit(QmanId::DMA0, 1, cb.bytes());
  ASSERT_TRUE(drain(QmanId::DMA0, 1, 20000));
  EXPECT_EQ(dma_events.done.size(), transfers);
  EXPECT_EQ(sim->on_sim_thread([&] { return card->dma_core(0)->stats().overflows; }), 0u);
  for (unsigned i = 0; i < transfers; ++i) EXPECT_EQ(dram_read(dram(0x400000 + i * kBytes), kBytes), data) << i;
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// With DMA ERR_CFG.STOP_ON_ERR (what the driver sets), a failing LIN_DMA halts the core: no
// completion, the next LIN_DMA stays queued, an EB packet waits. Resetting the QMAN and the core
// (the driver's hard reset) recovers both.
TEST_F(QmanControlTest, HaltedDmaHoldsTheEngineBarrierUntilReset) {
  open_stream(QmanId::DMA2, 0);
  enable_lin_dma(QmanId::DMA2, 0);
  watch_dma(2);
  dma_write(2, dc::kErrCfg, dc::kErrCfgStopOnErr);
  const std::vector<uint8_t> data = pattern(4096, 7);
  sram_write(0x40000, data);
  submit(QmanId::DMA2, 0,
         CommandBufferBuilder()
             .lin_dma(0x4000000000ull, dram(0x10000), 4096)    // nothing is mapped there
             .lin_dma(sram(0x40000), dram(0x20000), 4096)
             .msg_long(sram(0xD300), 0xD, kEbRbMb)
             .bytes());
  EXPECT_FALSE(drain(QmanId::DMA2, 0, 200));
  EXPECT_EQ(dma_events.failed.size(), 1u);
  EXPECT_EQ(dma_events.halts.size(), 1u);
  EXPECT_EQ(dma_events.started.size(), 1u) << "the queued transfer must not start on a halted core";
  EXPECT_TRUE(dma_events.done.empty());
  EXPECT_EQ(dma_read(2, dc::kSts1), dc::kSts1IsHalt);
  EXPECT_NE(dma_read(2, dc::kSts0) & dc::kSts0Busy, 0u);   // the queued transfer
  EXPECT_NE(dma_read(2, dc::kErrCause) & dc::kErrCauseHbwRdErr, 0u);
  EXPECT_EQ(sram_read32(0xD300), 0u) << "the EB packet ran past a halted engine";
  EXPECT_FALSE(card->qman(QmanId::DMA2)->cp_stopped(0));   // waiting, not failed
  EXPECT_TRUE(recorder.errors.empty()) << error_text();

  sim->on_sim_thread([&] {
    card->qman(QmanId::DMA2)->reset();
    card->dma_core(2)->reset();
  });
  sim->charge_ns(2000);
  EXPECT_EQ(dma_read(2, dc::kSts1), 0u);
  EXPECT_EQ(dma_events.started.size(), 1u) << "the dropped transfer ran after the reset";
  open_stream(QmanId::DMA2, 0);
  enable_lin_dma(QmanId::DMA2, 0);
  submit(QmanId::DMA2, 0,
         CommandBufferBuilder().lin_dma(sram(0x40000), dram(0x30000), 4096).msg_long(sram(0xD300), 0xE, kEbRbMb).bytes());
  ASSERT_TRUE(drain(QmanId::DMA2, 0, 200));
  EXPECT_EQ(sram_read32(0xD300), 0xEu);
  EXPECT_EQ(dram_read(dram(0x30000), 4096), data);
  EXPECT_EQ(dma_events.done.size(), 1u);
  EXPECT_EQ(dram_read(dram(0x20000), 4096), std::vector<uint8_t>(4096, 0));
}

// Without STOP_ON_ERR the failing transfer is reported and the next one runs.
TEST_F(QmanControlTest, WithoutStopOnErrorTheNextLinDmaRuns) {
  open_stream(QmanId::DMA3, 0);
  enable_lin_dma(QmanId::DMA3, 0);
  watch_dma(3);
  const std::vector<uint8_t> data = pattern(4096, 9);
  sram_write(0x50000, data);
  submit(QmanId::DMA3, 0,
         CommandBufferBuilder()
             .lin_dma(0x4000000000ull, dram(0x40000), 4096)
             .lin_dma(sram(0x50000), dram(0x50000), 4096)
             .msg_long(sram(0xD400), 0xF, kEbRbMb)
             .bytes());
  ASSERT_TRUE(drain(QmanId::DMA3, 0, 200));
  EXPECT_EQ(dma_events.failed.size(), 1u);
  EXPECT_TRUE(dma_events.halts.empty());
  EXPECT_EQ(dma_events.done.size(), 1u);
  EXPECT_EQ(sram_read32(0xD400), 0xFu);
  EXPECT_EQ(dram_read(dram(0x50000), 4096), data);
  EXPECT_EQ(dma_read(3, dc::kSts1), 0u);
}

// ---------------------------------------------------------------------------------------------
// REPEAT
// ---------------------------------------------------------------------------------------------

// REPEAT sore=1 starts a loop whose count is scalar RF0 (o = 0) and whose jmp_ptr is where to go
// when the count is 0; REPEAT sore=0 ends the body and jumps back to jmp_ptr while iterations
// remain.
TEST_F(QmanControlTest, RepeatRunsItsBodyTheCountHeldInTheScalarRf) {
  open_stream(QmanId::DMA4, 0);
  constexpr unsigned kSob = 500;
  for (uint32_t count : {5u, 1u, 0u}) {
    sim->mmio_write32(sob_address(kSob), qman::sob_write_value(0, false));
    CommandBufferBuilder cb;
    cb.load_and_exe(rf_words({count}), true, false, /*scalar_dst=*/true);
    const size_t start = cb.size(), body = start + 8, end = body + 16, after = end + 8;
    cb.repeat(static_cast<uint16_t>(after), /*sore=*/true, /*o=*/false)
        .msg_long(sob_address(kSob), qman::sob_write_value(1, true))
        .repeat(static_cast<uint16_t>(body), false, false)
        .msg_long(sram(0xE000), 0xE0 + count);
    ASSERT_EQ(cb.size(), after + 16);
    submit(QmanId::DMA4, 0, cb.bytes());
    ASSERT_TRUE(drain(QmanId::DMA4, 0)) << count;
    EXPECT_EQ(sob_value(kSob), count);
    EXPECT_EQ(sram_read32(0xE000), 0xE0 + count) << "the packet after the loop";
  }
  // 5 + 1 + 0 body runs and the three markers; REPEATs: start + 5 ends, start + 1 end, start only.
  EXPECT_EQ(recorder.of("DMA4_QM/0", Opcode::MSG_LONG).size(), 6u + 3u);
  EXPECT_EQ(recorder.of("DMA4_QM/0", Opcode::REPEAT).size(), (1u + 5u) + (1u + 1u) + 1u);
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// Two levels: o = 1 (outer, count in RF1) around o = 0 (inner, count in RF0, re-armed at every
// outer iteration). The inner body is a MSG_SHORT through CP_MSG_BASE1 (the E_N SOB block).
TEST_F(QmanControlTest, NestedRepeatLoopsMultiply) {
  open_stream(QmanId::DMA4, 1);
  mmio_write(QmanId::DMA4, QmReg::CpMsgBase1AddrLo, 1, static_cast<uint32_t>(sob_address(0)));
  mmio_write(QmanId::DMA4, QmReg::CpMsgBase1AddrHi, 1, static_cast<uint32_t>(sob_address(0) >> 32));
  constexpr unsigned kOuterSob = 510, kInnerSob = 511;
  CommandBufferBuilder cb;
  cb.load_and_exe(rf_words({3, 4}), true, false, true);
  const size_t s = cb.size();
  // s: outer start | s+8: MSG_LONG | s+24: inner start | s+32: MSG_SHORT | s+40: inner end |
  // s+48: outer end | s+56: after.
  cb.repeat(static_cast<uint16_t>(s + 56), true, true)
      .msg_long(sob_address(kOuterSob), qman::sob_write_value(1, true))
      .repeat(static_cast<uint16_t>(s + 48), true, false)
      .msg_short(qman::kMsgBaseEnSobs, kInnerSob * 4, qman::sob_write_value(1, true))
      .repeat(static_cast<uint16_t>(s + 32), false, false)
      .repeat(static_cast<uint16_t>(s + 8), false, true);
  ASSERT_EQ(cb.size(), s + 56);
  submit(QmanId::DMA4, 1, cb.bytes());
  ASSERT_TRUE(drain(QmanId::DMA4, 1));
  EXPECT_EQ(sob_value(kOuterSob), 4u);
  EXPECT_EQ(sob_value(kInnerSob), 12u);
  EXPECT_EQ(card->qman(QmanId::DMA4)->scalar_rf(1, 1), 4u);   // the RFs keep their values
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// A jump pointer outside the buffer, misaligned, or not between the loop's start and its end, and
// an end without a start, stop the CP with an undefined-opcode error; nothing hangs.
TEST_F(QmanControlTest, RepeatWithABadJumpPointerIsAQmanError) {
  struct Case {
    const char* name;
    std::vector<uint8_t> cb;
  };
  const uint64_t rfs = rf_words({3});
  const auto with_rfs = [&] { return CommandBufferBuilder().load_and_exe(rfs, true, false, true); };
  std::vector<Case> cases;
  cases.push_back({"start jumps past the buffer", with_rfs().repeat(0x4000, true, false).nop().repeat(16, false, false).bytes()});
  cases.push_back({"start jumps backward", with_rfs().repeat(8, true, false).nop().bytes()});
  cases.push_back({"end jumps forward", with_rfs().repeat(40, true, false).nop().repeat(40, false, false).nop().bytes()});
  cases.push_back({"end jumps past the buffer", with_rfs().repeat(40, true, false).nop().repeat(0xFFF8, false, false).bytes()});
  cases.push_back({"end jumps before its start", with_rfs().nop().repeat(48, true, false).nop().repeat(16, false, false).bytes()});
  cases.push_back({"misaligned", with_rfs().repeat(40, true, false).nop().repeat(28, false, false).bytes()});
  cases.push_back({"end without a start", CommandBufferBuilder().nop().repeat(0, false, false).bytes()});
  cases.push_back({"end of the other level", with_rfs().repeat(40, true, false).nop().repeat(24, false, true).bytes()});
  for (const Case& c : cases) {
    recorder.errors.clear();
    open_stream(QmanId::DMA6, 2);
    submit(QmanId::DMA6, 2, c.cb);
    EXPECT_FALSE(drain(QmanId::DMA6, 2, 30)) << c.name;
    ASSERT_EQ(recorder.errors.size(), 1u) << c.name;
    EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kUndefinedOpcode) << c.name;
    EXPECT_NE(recorder.errors[0].second.find("REPEAT"), std::string::npos) << recorder.errors[0].second;
    EXPECT_TRUE(card->qman(QmanId::DMA6)->cp_stopped(2)) << c.name;
    sim->on_sim_thread([&] { card->qman(QmanId::DMA6)->reset(); });
  }
  // A REPEAT whose predicate is clear does nothing, even with a bad pointer.
  recorder.errors.clear();
  open_stream(QmanId::DMA6, 2);
  qman::Repeat off;
  off.sore = false;
  off.jmp_ptr = 0x4004;
  off.pred = 7;
  submit(QmanId::DMA6, 2, CommandBufferBuilder().add(off).msg_long(sram(0xE100), 1).bytes());
  ASSERT_TRUE(drain(QmanId::DMA6, 2));
  EXPECT_EQ(sram_read32(0xE100), 1u);
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// ---------------------------------------------------------------------------------------------
// LOAD_AND_EXE, scalar mode
// ---------------------------------------------------------------------------------------------

// hl-thunk test_cs_load_scalars_exe_4_rfs: a 16-byte MSG_LONG in SRAM is loaded into RF0..RF3
// and executed with ETYPE 0, in one packet and in two (load, then exe with dst = 0).
TEST_F(QmanControlTest, LoadAndExeRunsAMsgLongFromTheFourScalarRfs) {
  open_stream(QmanId::DMA2, 1);
  const std::vector<uint8_t> msg = CommandBufferBuilder().msg_long(sram(0x61000), 0x5CA1A8, qman::kNoBarriers).bytes();
  ASSERT_EQ(msg.size(), 16u);
  sram_write(0x60000, msg);
  submit(QmanId::DMA2, 1,
         CommandBufferBuilder().msg_long(sram(0x61000), 1, qman::kNoBarriers)
             .load_and_exe(sram(0x60000), true, true, /*scalar_dst=*/true, /*etype=*/false, qman::kMbOnly).bytes());
  ASSERT_TRUE(drain(QmanId::DMA2, 1));
  EXPECT_EQ(sram_read32(0x61000), 0x5CA1A8u);
  for (unsigned rf = 0; rf < 4; ++rf) {
    uint32_t word;
    std::memcpy(&word, msg.data() + 4 * rf, 4);
    EXPECT_EQ(card->qman(QmanId::DMA2)->scalar_rf(1, rf), word) << rf;
  }

  submit(QmanId::DMA2, 1,
         CommandBufferBuilder().msg_long(sram(0x61000), 2, qman::kNoBarriers)
             .load_and_exe(sram(0x60000), true, false, true, false, qman::kMbOnly)
             .load_and_exe(0, false, true, /*scalar_dst=*/false, false, qman::kMbOnly).bytes());
  ASSERT_TRUE(drain(QmanId::DMA2, 1));
  EXPECT_EQ(sram_read32(0x61000), 0x5CA1A8u);
  // The MSG_LONG from the RFs shows as a packet of its own.
  EXPECT_EQ(recorder.of("DMA2_QM/1", Opcode::MSG_LONG).size(), 4u);
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
}

// hl-thunk test_cs_load_scalars_exe_lower_2_rfs / _upper_2_rfs: an 8-byte MSG_SHORT signalling a
// SOB sits at offset 0 (RF0, RF1: ETYPE 0) or 8 (RF2, RF3: ETYPE 1) of the 16 loaded bytes.
TEST_F(QmanControlTest, LoadAndExeRunsAMsgShortFromTheLowerOrUpperTwoRfs) {
  open_stream(QmanId::DMA7, 0);
  mmio_write(QmanId::DMA7, QmReg::CpMsgBase1AddrLo, 0, static_cast<uint32_t>(sob_address(0)));
  mmio_write(QmanId::DMA7, QmReg::CpMsgBase1AddrHi, 0, static_cast<uint32_t>(sob_address(0) >> 32));
  constexpr unsigned kSob = 520;
  const std::vector<uint8_t> signal =
      CommandBufferBuilder().msg_short(qman::kMsgBaseEnSobs, kSob * 4, qman::sob_write_value(1, false), qman::kNoBarriers).bytes();
  ASSERT_EQ(signal.size(), 8u);
  for (bool upper : {false, true}) {
    std::vector<uint8_t> rfs(16, 0);
    std::copy(signal.begin(), signal.end(), rfs.begin() + (upper ? 8 : 0));
    sram_write(0x62000, rfs);
    for (bool separate : {false, true}) {
      sim->mmio_write32(sob_address(kSob), qman::sob_write_value(0, false));
      CommandBufferBuilder cb;
      cb.load_and_exe(sram(0x62000), true, !separate, true, upper, qman::kNoBarriers);
      if (separate) cb.load_and_exe(0, false, true, false, upper, qman::kMbOnly);
      submit(QmanId::DMA7, 0, cb.bytes());
      ASSERT_TRUE(drain(QmanId::DMA7, 0)) << upper << separate;
      EXPECT_EQ(sob_value(kSob), 1u) << "upper " << upper << " separate " << separate;
    }
  }
  EXPECT_TRUE(recorder.errors.empty()) << error_text();
  EXPECT_EQ(recorder.of("DMA7_QM/0", Opcode::MSG_SHORT).size(), 4u);

  // ETYPE 1 with the packet in the lower RFs finds zeros (no valid opcode) in RF2, RF3: an error.
  std::vector<uint8_t> lower(16, 0);
  std::copy(signal.begin(), signal.end(), lower.begin());
  sram_write(0x62000, lower);
  submit(QmanId::DMA7, 0, CommandBufferBuilder().load_and_exe(sram(0x62000), true, true, true, true).bytes());
  EXPECT_FALSE(drain(QmanId::DMA7, 0, 30));
  ASSERT_EQ(recorder.errors.size(), 1u);
  EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kUndefinedOpcode);
}

// Only packets that fit the RFs and make sense there run from them; a failed load is a fetch error.
TEST_F(QmanControlTest, LoadAndExeRefusesWhatCannotRunFromTheRfs) {
  struct Case {
    const char* name;
    std::vector<uint8_t> rfs;
    hw::QmanError cause;
  };
  std::vector<Case> cases;
  cases.push_back({"LOAD_AND_EXE", CommandBufferBuilder().load_and_exe(sram(0x63000), true, true, true).bytes(),
                   hw::QmanError::kUndefinedOpcode});
  cases.push_back({"REPEAT", CommandBufferBuilder().repeat(0, false, false).nop().bytes(), hw::QmanError::kUndefinedOpcode});
  cases.push_back({"WREG_BULK", CommandBufferBuilder().wreg_bulk(0x100, {1}).bytes(), hw::QmanError::kUndefinedOpcode});
  cases.push_back({"zeros", std::vector<uint8_t>(16, 0), hw::QmanError::kUndefinedOpcode});
  cases.push_back({"STOP", CommandBufferBuilder().stop().nop().bytes(), hw::QmanError::kStop});
  for (Case& c : cases) {
    c.rfs.resize(16, 0);
    recorder.errors.clear();
    open_stream(QmanId::DMA6, 3);
    sram_write(0x63000, c.rfs);
    submit(QmanId::DMA6, 3, CommandBufferBuilder().load_and_exe(sram(0x63000), true, true, true).msg_long(sram(0xE200), 1).bytes());
    EXPECT_FALSE(drain(QmanId::DMA6, 3, 30)) << c.name;
    ASSERT_EQ(recorder.errors.size(), 1u) << c.name;
    EXPECT_EQ(recorder.errors[0].first, c.cause) << c.name << ": " << recorder.errors[0].second;
    sim->on_sim_thread([&] { card->qman(QmanId::DMA6)->reset(); });
  }
  EXPECT_EQ(sram_read32(0xE200), 0u);

  recorder.errors.clear();
  open_stream(QmanId::DMA6, 3);
  submit(QmanId::DMA6, 3, CommandBufferBuilder().load_and_exe(0x4000000000ull, true, false, true).bytes());
  EXPECT_FALSE(drain(QmanId::DMA6, 3, 30));
  ASSERT_EQ(recorder.errors.size(), 1u);
  EXPECT_EQ(recorder.errors[0].first, hw::QmanError::kFetch);
}

}  // namespace
}  // namespace hpusim::testing
