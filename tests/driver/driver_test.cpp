// The driver through its ioctl ABI only: every test opens the device, builds command buffers by
// hand in mmap'd CB memory, submits, waits and reads INFO. No test touches a SystemC module.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "driver/device.h"
#include "arch/packets/packets.h"
#include "tests/driver/driver_fixture.h"

namespace hpusim::driver {
namespace {

TEST_F(DriverTest, SecondOpenIsBusy) {
  make();
  EXPECT_EQ(dev->open(), 0);
  EXPECT_EQ(dev->open(), -EBUSY);
  EXPECT_EQ(dev->close(), 0);
  EXPECT_EQ(dev->close(), -EBADF);
  EXPECT_EQ(dev->open(), 0);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, OpenCloseWithoutIoctls) {
  make();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(dev->open(), 0);
    ASSERT_EQ(dev->close(), 0);
  }
  hl_info_args args{};
  EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_INFO, &args), -EBADF);   // closed
}

// With measured host time, host time moves between the driver's calls into the simulator, so a
// completion interrupt can fall due just as the driver starts to wait: the wait must return on
// it (the caller re-checks its CS) instead of blocking for another interrupt until the heartbeat
// deadline (5 s). Each open() waits for its kernel CS. The race depends on the CPU time the host
// code takes, so this test catches it often, not always (a first open after boot hung in about
// one run in ten before the fix).
TEST_F(DriverTest, MeasuredHostTimeOpensDoNotWaitForTheHeartbeat) {
  platform::PlatformOptions platform;
  platform.time_source = cosim::HostTimeSource::kMeasured;
  make({}, platform);
  for (int i = 0; i < 20; ++i) {
    const uint64_t start = dev->cosim().host_now_ps();
    ASSERT_EQ(dev->open(), 0);
    ASSERT_EQ(dev->close(), 0);
    EXPECT_LT(dev->cosim().host_now_ps() - start, 1'000'000'000'000ull) << "open " << i << " took 1 s or more";
  }
  EXPECT_EQ(log_lines_with("failed to restore the sync managers"), 0u) << log_text();
}

// The driver learns the engines from the firmware's cpucp_info binning masks (not from the
// preset) and reports them in HW_IP_INFO; it sets up exactly the queues of those engines. One
// card per process: one test per preset.
class DriverMakeUpTest : public DriverTest {
 protected:
  void check(const char* preset, uint64_t tpc_mask, uint32_t edma_mask, uint8_t mme_masters, uint64_t super_tile_rows) {
    platform::PlatformOptions platform;
    platform.preset = preset;
    make({}, platform);
    ASSERT_EQ(dev->open(), 0);
    const auto hw = info<hl_info_hw_ip_info>(HL_INFO_HW_IP_INFO);
    EXPECT_EQ(hw.tpc_enabled_mask_ext, tpc_mask);
    EXPECT_EQ(hw.edma_enabled_mask, edma_mask);
    EXPECT_EQ(hw.reserved1, mme_masters);
    EXPECT_EQ(hw.reserved6, 2048u);
    EXPECT_EQ(hw.reserved7, 3u);   // 256x256, 128x512, 512x128
    EXPECT_EQ(hw.reserved3, super_tile_rows);   // hpusim: MME super-tile rows (the compiler's slices)
    // A CS on the last TPC's queue runs; one past the card's TPCs is refused.
    const unsigned tpcs = static_cast<unsigned>(__builtin_popcountll(tpc_mask));
    CommandBufferBuilder nop;
    nop.nop();
    const std::vector<uint8_t> cb = nop.take();
    const uint64_t va = map(cb.data(), cb.size());
    const auto size = static_cast<uint32_t>(cb.size());
    EXPECT_EQ(run({internal(regs::make_queue(regs::QueueKind::Tpc, tpcs - 1, 0), va, size), ext_cb(QueueId::DMA_0_0, cb)}),
              HL_WAIT_CS_STATUS_COMPLETED);
    if (tpcs < regs::kMaxTpcEngines) {
      uint64_t seq = 0;
      EXPECT_EQ(dev->submit({internal(regs::make_queue(regs::QueueKind::Tpc, tpcs, 0), va, size)}, &seq), -EINVAL);
    }
    EXPECT_EQ(dev->close(), 0);
  }
};

TEST_F(DriverMakeUpTest, Hl225Has24TpcsTenDmaChannelsAndTwoMmeMasters) { check("hl225", (1ull << 24) - 1, 0xFF, 0x3, 512); }
TEST_F(DriverMakeUpTest, Hl325Has64TpcsTenDmaChannelsAndEightMmeMasters) { check("hl325", ~0ull, 0xFF, 0xFF, 512); }

TEST_F(DriverTest, IoctlNumbersAndInfo) {
  make();
  ASSERT_EQ(dev->open(), 0);
  hl_info_hw_ip_info hw{};
  hl_info_args args{};
  args.return_pointer = reinterpret_cast<uintptr_t>(&hw);
  args.return_size = sizeof hw;
  args.op = HL_INFO_HW_IP_INFO;
  const uint64_t before = dev->cosim().host_now_ps();
  ASSERT_EQ(dev->ioctl(HL_IOCTL_INFO, &args), 0);   // legacy encoding
  EXPECT_GE(dev->cosim().host_now_ps() - before, uint64_t{dev->preset().host().ioctl_ns()} * 1000);
  EXPECT_EQ(hw.sram_base_address, 0x7FF0000080ull);
  EXPECT_EQ(hw.sram_size, 0x1400000u - 0x80);
  EXPECT_EQ(hw.dram_base_address, 0x20000000ull);
  EXPECT_EQ(hw.dram_size, 0x800000000ull - 0x20000000ull);
  EXPECT_EQ(hw.device_id, PCI_IDS_GAUDI);
  EXPECT_EQ(hw.tpc_enabled_mask, 0xFF);
  EXPECT_EQ(hw.tpc_enabled_mask_ext, 0xFFu);
  EXPECT_EQ(hw.edma_enabled_mask, 0x3Fu);   // DMA2..7
  EXPECT_EQ(hw.reserved1, 0x3u);            // hpusim: MME masters 0 and 2
  EXPECT_EQ(hw.reserved6, 2048u);           // hpusim: the TPC vector width
  EXPECT_EQ(hw.reserved7, 2u);              // hpusim: MME output geometries
  EXPECT_EQ(hw.reserved3, 320u);            // hpusim: MME super-tile rows (5 x 64 of geometry 0)
  EXPECT_STREQ(reinterpret_cast<const char*>(hw.card_name), "HL205");
  EXPECT_EQ(info<hl_info_device_status>(HL_INFO_DEVICE_STATUS).status, HL_DEVICE_STATUS_OPERATIONAL);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  const auto ws = info<hl_info_sync_manager>(HL_INFO_SYNC_MANAGER, HL_GAUDI_WS_DCORE);
  EXPECT_EQ(ws.first_available_sync_object, 144u);
  EXPECT_EQ(ws.first_available_monitor, 72u);
  args.op = HL_INFO_SYNC_MANAGER;
  args.dcore_id = HL_MAX_DCORES;
  EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_INFO, &args), -EINVAL);
  hl_mem_args mem{};   // ALLOC of 0 bytes
  EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_MEMORY, &mem), -EINVAL);
  EXPECT_EQ(dev->ioctl(0x1234, &mem), -ENOTTY);
  EXPECT_EQ(dev->close(), 0);
}

// The driver learns the memory map from the firmware's INFO (hpusim's extension), not from the
// preset: a card with SRAM and user DRAM moved reports them where they are and runs a CS there.
TEST_F(DriverTest, TheMemoryMapComesFromTheFirmware) {
  platform::PlatformOptions platform;
  platform.overrides = {"memory_map.sram_base=0x7FE0000000", "sram.size_bytes=33554432",
                        "memory_map.dram_user_base=0x40000000"};
  make({}, platform);
  ASSERT_EQ(dev->open(), 0);
  const auto hw = info<hl_info_hw_ip_info>(HL_INFO_HW_IP_INFO);
  EXPECT_EQ(hw.sram_base_address, 0x7FE0000080ull);
  EXPECT_EQ(hw.sram_size, 0x2000000u - 0x80);
  EXPECT_EQ(hw.dram_base_address, 0x40000000ull);
  EXPECT_EQ(hw.dram_size, 0x800000000ull - 0x40000000ull);
  // A MSG_LONG into the moved SRAM lands there: a DMA brings it back to the host.
  EXPECT_EQ(dev->sram_user_base(), 0x7FE0000080ull);
  CommandBufferBuilder writer;
  writer.msg_long(0x7FE0000100ull, 0xC0FFEE);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, writer.take())}), HL_WAIT_CS_STATUS_COMPLETED);
  alignas(4096) static uint32_t back[1024] = {};
  CommandBufferBuilder reader;
  reader.lin_dma(0x7FE0000100ull, map(back, sizeof back), 4);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_1_0, reader.take())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(back[0], 0xC0FFEEu);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, CommandBuffersCreateMapDestroy) {
  make();
  ASSERT_EQ(dev->open(), 0);
  for (uint32_t size : {0x100000u, 5000u, 77u, 92517u}) {
    uint64_t handle = 0;
    ASSERT_EQ(dev->cb_create(size, &handle), 0) << size;
    const uint64_t length = (size + kPage - 1) / kPage * kPage;
    void* memory = nullptr;
    EXPECT_EQ(dev->mmap_cb(handle, length + kPage, &memory), -EINVAL) << size;
    ASSERT_EQ(dev->mmap_cb(handle, length, &memory), 0) << size;
    std::memset(memory, 0xA5, size);
    hl_cb_args args{};
    args.in.op = HL_CB_OP_INFO;
    args.in.cb_handle = handle;
    EXPECT_EQ(dev->cb(args), 0);
    EXPECT_EQ(args.out.usage_cnt, 0u);
    EXPECT_EQ(dev->munmap_cb(memory, length), 0);
    EXPECT_EQ(dev->cb_destroy(handle), 0) << size;
    EXPECT_EQ(dev->cb_destroy(handle), -EINVAL) << size;
  }
  uint64_t handle = 0;
  EXPECT_EQ(dev->cb_create(HL_MAX_CB_SIZE + 1, &handle), -EINVAL);
  // Destroy while mapped: the handle dies at once, the memory lives until the munmap.
  ASSERT_EQ(dev->cb_create(5000, &handle), 0);
  void* memory = nullptr;
  ASSERT_EQ(dev->mmap_cb(handle, 2 * kPage, &memory), 0);
  EXPECT_EQ(dev->cb_destroy(handle), 0);
  std::memset(memory, 0x5A, 5000);   // still valid
  uint64_t seq = 0;
  EXPECT_EQ(dev->submit({ext(QueueId::DMA_0_0, handle, 8)}, &seq), -EINVAL);
  EXPECT_EQ(dev->mmap_cb(handle, 2 * kPage, &memory), -EINVAL);
  EXPECT_EQ(dev->munmap_cb(memory, 2 * kPage), 0);
  EXPECT_EQ(dev->munmap_cb(memory, 2 * kPage), -EINVAL);
  // A CB still mapped at close is released at its munmap.
  ASSERT_EQ(dev->cb_create(77, &handle), 0);
  ASSERT_EQ(dev->mmap_cb(handle, kPage, &memory), 0);
  EXPECT_EQ(dev->close(), 0);
  EXPECT_EQ(dev->munmap_cb(memory, kPage), 0);
}

TEST_F(DriverTest, NopCommandSubmissionsComplete) {
  make();
  ASSERT_EQ(dev->open(), 0);
  for (unsigned count : {1u, 16u, 64u}) {
    std::vector<hl_cs_chunk> chunks;
    for (unsigned i = 0; i < count; ++i) chunks.push_back(ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().nop().bytes()));
    EXPECT_EQ(run(chunks), HL_WAIT_CS_STATUS_COMPLETED) << count;
  }
  // Jobs spread over all eight external streams in one CS.
  std::vector<hl_cs_chunk> spread;
  for (unsigned q = 0; q < 8; ++q) spread.push_back(ext_cb(static_cast<QueueId>(q), CommandBufferBuilder().nop().bytes()));
  EXPECT_EQ(run(spread), HL_WAIT_CS_STATUS_COMPLETED);
  const auto counters = info<hl_info_cs_counters>(HL_INFO_CS_COUNTERS);
  EXPECT_EQ(counters.ctx_parsing_drop_cnt, 0u);
  EXPECT_EQ(counters.ctx_queue_full_drop_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

// MSG_LONG writes 0xbaba0ded to SRAM+0x1000. With no DMA engine the user cannot read SRAM back,
// so the device proves it: the written word is the first dword of a MSG_LONG packet
// {value 0xbaba0ded, addr = SOB}; an internal queue executes that packet straight from SRAM,
// which (inc bit 31 set) adds 0x0ded to the SOB; an external job waits for SOB >= 0x0ded. It
// completes only if SRAM holds exactly those 16 bytes.
TEST_F(DriverTest, MsgLongWritesSramAndTheDeviceExecutesIt) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const unsigned sob = 16, mon = 4;
  const std::vector<uint8_t> inner =
      CommandBufferBuilder().msg_long(cfg(regs::sm_sob(regs::SyncManager::E_N, sob)), 0xbaba0ded).bytes();
  ASSERT_EQ(inner.size(), 16u);
  CommandBufferBuilder writer;
  for (size_t i = 0; i < inner.size(); i += 4) {
    uint32_t word = 0;
    std::memcpy(&word, inner.data() + i, 4);
    writer.msg_long(sram(0x1000 + i), word);
  }
  uint32_t first = 0;
  std::memcpy(&first, inner.data(), 4);
  ASSERT_EQ(first, 0xbaba0dedu);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, writer.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);

  CommandBufferBuilder waiter;
  wait_on_sob(waiter, 1, sob, mon, false, 0x0ded);
  EXPECT_EQ(run({internal(QueueId::DMA_2_0, sram(0x1000), 16), ext_cb(QueueId::DMA_0_1, waiter.bytes())}),
            HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, TwoThousandMsgLongsInOneCb) {
  make();
  ASSERT_EQ(dev->open(), 0);
  CommandBufferBuilder many;
  for (uint32_t i = 0; i < 2000; ++i) many.msg_long(sram(0x10000 + 4 * i), 0x1000 + i);
  EXPECT_EQ(many.size(), 32000u);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_1_2, many.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, ThousandCommandSubmissionsWrapTheCompletionQueue) {
  HlDeviceOptions options;
  options.ext_queue_length = 256;   // the PQ/CQ length of older kernels: 1000 CS wrap it 3 times
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const uint64_t handle = cb_with(CommandBufferBuilder().nop().bytes());
  uint64_t last = 0;
  for (int i = 0; i < 1000; ++i) {
    uint64_t seq = 0;
    ASSERT_EQ(dev->submit({ext(QueueId::DMA_0_3, handle, 8)}, &seq), 0) << i;
    EXPECT_EQ(seq, last + 1);
    last = seq;
    if (i % 100 == 99) {
      uint32_t status = 99;
      ASSERT_EQ(dev->wait(seq, 1000000, &status), 0);
      ASSERT_EQ(status, HL_WAIT_CS_STATUS_COMPLETED) << i;
    }
  }
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(500, 0, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->wait(1001, 0, &status), -EINVAL);   // beyond the current sequence
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, OldSequenceNumbersAreGone) {
  HlDeviceOptions options;
  options.max_pending_cs = 16;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const uint64_t handle = cb_with(CommandBufferBuilder().nop().bytes());
  for (int i = 0; i < 40; ++i) {
    uint64_t seq = 0;
    ASSERT_EQ(dev->submit({ext(QueueId::DMA_0_0, handle, 8)}, &seq), 0);
    uint32_t status = 99;
    ASSERT_EQ(dev->wait(seq, 1000000, &status), 0);
  }
  uint32_t status = 99, flags = 0;
  EXPECT_EQ(dev->wait(1, 0, &status, &flags), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(flags & HL_WAIT_CS_STATUS_FLAG_GONE, HL_WAIT_CS_STATUS_FLAG_GONE);
  EXPECT_EQ(dev->wait(40, 0, &status, &flags), 0);
  EXPECT_EQ(flags & HL_WAIT_CS_STATUS_FLAG_GONE, 0u);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, ParserAndChunkRejectionsSurfaceFromTheCsIoctl) {
  make();
  ASSERT_EQ(dev->open(), 0);
  struct Case {
    const char* name;
    std::vector<uint8_t> cb;
    int rc;
  };
  std::vector<uint8_t> truncated = CommandBufferBuilder().nop().msg_long(sram(0), 1).bytes();
  truncated.resize(20);
  const std::vector<Case> cases = {
      {"MSG_PROT", CommandBufferBuilder().msg_prot(sram(0), 1).bytes(), -EPERM},
      {"CP_DMA", CommandBufferBuilder().cp_dma(sram(0), 64).bytes(), -EPERM},
      {"STOP", CommandBufferBuilder().nop().stop().bytes(), -EPERM},
      {"WREG_BULK", CommandBufferBuilder().wreg_bulk(0x10, {1, 2}).bytes(), -EPERM},
      {"LOAD_AND_EXE scalar", CommandBufferBuilder().load_and_exe(sram(0), true, true, true).bytes(), -EPERM},
      {"WAIT", CommandBufferBuilder().wait(10, 0, 1).bytes(), -EINVAL},
      {"undefined opcode", CommandBufferBuilder().raw_header(0, 0xE << 24).bytes(), -EINVAL},
      {"truncated", truncated, -EINVAL},
  };
  uint64_t seq = 0;
  for (const Case& c : cases) {
    EXPECT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, c.cb)}, &seq), c.rc) << c.name;
  }
  const auto nop = ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().nop().bytes());
  // Internal CB outside SRAM/DRAM/host-VA user ranges (the first 0x80 B of SRAM are reserved).
  EXPECT_EQ(dev->submit({internal(QueueId::TPC_0_0, sram(0), 64), nop}, &seq), -EFAULT);
  EXPECT_EQ(dev->submit({internal(QueueId::MME_0_0, 0x1000, 64), nop}, &seq), -EFAULT);
  const uint64_t parser_rejections = cases.size() + 2;
  // Chunk checks before the parser.
  EXPECT_EQ(dev->submit({internal(QueueId::TPC_0_0, sram(0x1000), 64)}, &seq), -EINVAL);   // internal only
  EXPECT_EQ(dev->submit(std::vector<hl_cs_chunk>(513, nop), &seq), -EINVAL);               // > 512 jobs
  EXPECT_EQ(dev->submit({ext(QueueId::DMA_0_0, 0xDEAD000, 8)}, &seq), -EINVAL);            // bad handle
  EXPECT_EQ(dev->submit({ext(QueueId::DMA_0_0, nop.cb_handle, 4)}, &seq), -EINVAL);        // < 8 bytes
  EXPECT_EQ(dev->submit({ext(QueueId::DMA_0_0, nop.cb_handle, 4096)}, &seq), -EINVAL);     // > CB size
  EXPECT_EQ(dev->submit({ext(QueueId::CPU_PQ, nop.cb_handle, 8)}, &seq), -EINVAL);         // driver-only
  EXPECT_EQ(dev->submit({ext(regs::make_queue(regs::QueueKind::Nic, 10, 0), nop.cb_handle, 8)}, &seq), -EINVAL);   // no such port
  hl_cs_chunk beyond = nop;
  beyond.queue_index = GAUDI_QUEUE_ID_SIZE;
  EXPECT_EQ(dev->submit({beyond}, &seq), -EINVAL);
  EXPECT_EQ(dev->submit({}, &seq), -EINVAL);                                               // no chunks
  EXPECT_EQ(dev->submit({nop}, &seq, HL_CS_FLAGS_SIGNAL | HL_CS_FLAGS_WAIT), -EINVAL);     // two types
  EXPECT_EQ(dev->submit({nop}, &seq, HL_CS_FLAGS_STAGED_SUBMISSION), -EPERM);

  const auto counters = info<hl_info_cs_counters>(HL_INFO_CS_COUNTERS);
  EXPECT_EQ(counters.ctx_parsing_drop_cnt, parser_rejections);
  EXPECT_EQ(counters.total_parsing_drop_cnt, parser_rejections);
  EXPECT_EQ(counters.ctx_validation_drop_cnt, 8u);
  // Nothing was left half-submitted: a good CS gets sequence 1 and completes.
  ASSERT_EQ(dev->submit({nop}, &seq), 0);
  EXPECT_EQ(seq, 1u);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(seq, 1000000, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

// A failure inside the CS ioctl after the first of three PQ entries is written (an injected host
// write error) comes back as -EIO and rings no job: the three jobs' sync-object increments never
// happen, the next CS gets sequence 1, and the same three jobs submitted again all run.
TEST_F(DriverTest, AFailureAfterTheFirstPqWriteRingsNoJobAndLeavesNothingHalfScheduled) {
  bool armed = false;
  HlDeviceOptions options;
  options.fault_hook = [&](const char* point) {
    if (armed && std::string(point) == "schedule: PQ entry written") {
      armed = false;
      throw std::runtime_error("injected host write error");
    }
  };
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const unsigned sob = 20, mon = 6;
  const std::vector<uint8_t> increment = CommandBufferBuilder().msg_long(sob_address(sob), 0x80000001).bytes();
  const std::vector<hl_cs_chunk> three = {ext_cb(QueueId::DMA_0_0, increment), ext_cb(QueueId::DMA_0_2, increment),
                                          ext_cb(QueueId::DMA_1_0, increment)};
  armed = true;
  uint64_t seq = 0;
  EXPECT_EQ(dev->submit(three, &seq), -EIO);
  EXPECT_FALSE(armed) << "the fault point was never reached";
  EXPECT_EQ(log_lines_with("CS failed: injected host write error"), 1u) << log_text();

  // The sync object is still 0: a stream that waits for SOB == 0 passes at once.
  CommandBufferBuilder still_zero;
  wait_on_sob(still_zero, 1, sob, mon, true, 0);
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_1, still_zero.bytes())}, &seq), 0);
  EXPECT_EQ(seq, 1u);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(seq, 100000, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_COMPLETED) << "a job of the failed CS ran";

  EXPECT_EQ(run(three), HL_WAIT_CS_STATUS_COMPLETED);
  CommandBufferBuilder three_done;
  wait_on_sob(three_done, 1, sob, mon, true, 3);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_1, three_done.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, FullQueueRejectsWithEagain) {
  HlDeviceOptions options;
  options.ext_queue_length = 16;
  options.cs_timeout_us = 2000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  // The first CS blocks the stream on a fence nobody signals; 15 more fill the PQ.
  uint64_t seq = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().fence(0, 1, 1).bytes())}, &seq), 0);
  const auto nop = ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().nop().bytes());
  for (int i = 0; i < 15; ++i) ASSERT_EQ(dev->submit({nop}, &seq), 0) << i;
  EXPECT_EQ(dev->submit({nop}, &seq), -EAGAIN);
  EXPECT_EQ(info<hl_info_cs_counters>(HL_INFO_CS_COUNTERS).ctx_queue_full_drop_cnt, 1u);
  // Other streams are not affected.
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_1, CommandBufferBuilder().nop().bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);   // waits; the TDR resets the stuck stream
  EXPECT_EQ(dev->open(), 0);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  EXPECT_EQ(info<hl_info_cs_counters>(HL_INFO_CS_COUNTERS).ctx_queue_full_drop_cnt, 0u);
  EXPECT_EQ(info<hl_info_cs_counters>(HL_INFO_CS_COUNTERS).total_queue_full_drop_cnt, 1u);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, EndlessFenceTimesOutResetsAndTheDeviceIsUsableAgain) {
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  uint64_t stuck = 0, behind = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().fence(0, 1, 1).bytes())}, &stuck), 0);
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_1_0, CommandBufferBuilder().fence(1, 1, 1).bytes())}, &behind), 0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(stuck, 0, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_BUSY);
  EXPECT_EQ(dev->wait(stuck, 100, &status), 0);   // the user's timeout expires first: BUSY
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_BUSY);
  EXPECT_EQ(dev->wait(stuck, 10000000, &status), -ETIMEDOUT);   // the TDR fires meanwhile
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_TIMEDOUT);
  EXPECT_EQ(dev->wait(behind, 10000000, &status), -EIO);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_ABORTED);
  EXPECT_EQ(dev->wait(stuck, 0, &status), -ETIMEDOUT);   // the outcome stays
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  EXPECT_EQ(info<hl_info_device_status>(HL_INFO_DEVICE_STATUS).status, HL_DEVICE_STATUS_OPERATIONAL);
  // Usable again: a CS on a stream that was not stuck, and a monitor/fence chain.
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, CommandBufferBuilder().nop().bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  CommandBufferBuilder chain;
  chain.msg_long(cfg(regs::sm_sob(regs::SyncManager::E_N, 24)), qman::sob_write_value(3, false));
  wait_on_sob(chain, 1, 24, 8, true, 3);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_1, chain.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, TheStreamThatTimedOutRunsAgainAfterTheReset) {
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  uint64_t stuck = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().fence(0, 1, 1).bytes())}, &stuck), 0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(stuck, 10000000, &status), -ETIMEDOUT);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().nop().bytes())}, 100000), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, SyncObjectsAreZeroedWhenTheContextIsReopened) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const unsigned sob = 40, mon = 12;
  CommandBufferBuilder set;
  set.msg_long(cfg(regs::sm_sob(regs::SyncManager::E_N, sob)), qman::sob_write_value(1, false));
  wait_on_sob(set, 0, sob, mon, true, 1);   // proves the SOB holds 1
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, set.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  // Negative control: a monitor waiting for 0 does not fire while the SOB holds 1 ...
  CommandBufferBuilder for_zero;
  wait_on_sob(for_zero, 1, sob, mon + 1, true, 0);
  uint64_t waiting = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_1, for_zero.bytes())}, &waiting), 0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(waiting, 500, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_BUSY);
  // ... and fires once a CS sets it to 0; then it is set to 1 again.
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, CommandBufferBuilder()
                                              .msg_long(cfg(regs::sm_sob(regs::SyncManager::E_N, sob)),
                                                        qman::sob_write_value(0, false))
                                              .bytes())}),
            HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->wait(waiting, 100000, &status), 0);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, set.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  ASSERT_EQ(dev->close(), 0);
  ASSERT_EQ(dev->open(), 0);
  CommandBufferBuilder zero;
  wait_on_sob(zero, 0, sob, mon, true, 0);  // fires at once only if the open zeroed it
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, zero.bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, CloseWaitsForWorkInFlight) {
  make();
  ASSERT_EQ(dev->open(), 0);
  CommandBufferBuilder many;
  for (uint32_t i = 0; i < 500; ++i) many.msg_long(sram(0x20000 + 4 * i), i);
  uint64_t seq = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, many.bytes())}, &seq), 0);
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_1_1, many.bytes())}, &seq), 0);
  EXPECT_EQ(dev->close(), 0);
  ASSERT_EQ(dev->open(), 0);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().nop().bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverTest, CloseWithAStuckCsEndsInAResetAndTheDeviceReopens) {
  HlDeviceOptions options;
  options.cs_timeout_us = 3000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  uint64_t seq = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_3, CommandBufferBuilder().fence(3, 1, 1).bytes())}, &seq), 0);
  EXPECT_EQ(dev->close(), 0);
  ASSERT_EQ(dev->open(), 0);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, CommandBufferBuilder().nop().bytes())}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

// Writes `cb` into SRAM at `address` with MSG_LONGs from an external CB on `queue`.
static std::vector<uint8_t> sram_writer(uint64_t address, const std::vector<uint8_t>& cb) {
  CommandBufferBuilder writer;
  for (size_t i = 0; i < cb.size(); i += 4) {
    uint32_t word = 0;
    std::memcpy(&word, cb.data() + i, 4);
    writer.msg_long(address + i, word);
  }
  return writer.bytes();
}

static bool log_has(const testing::TestDevice& dev, size_t from, const std::string& a, const std::string& b) {
  for (size_t i = from; i < dev.log().size(); ++i) {
    const std::string& line = dev.log()[i];
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
  }
  return false;
}

// A STOP in an internal CB (DMA2 stream 0) stops that CP; its error message goes to the GIC, the
// firmware turns it into an event-queue entry, and the driver's EQ handler names the QMAN. The
// device keeps working.
TEST_F(DriverTest, QmanStopIsReportedThroughTheFirmwareEventQueue) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const std::vector<uint8_t> stop = CommandBufferBuilder().stop().bytes();
  const std::vector<uint8_t> nop = CommandBufferBuilder().nop().bytes();
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, sram_writer(sram(0x3000), stop)),
                 ext_cb(QueueId::DMA_0_1, sram_writer(sram(0x3100), nop))}),
            HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_FALSE(dev->qman_error(regs::QmanId::DMA2));
  EXPECT_EQ(dev->qman_error_word(regs::QmanId::DMA2), 0u);
  const uint64_t events_before = dev->eq_events();
  const size_t log_before = dev->log().size();

  EXPECT_EQ(run({internal(QueueId::DMA_2_0, sram(0x3000), static_cast<uint32_t>(stop.size())),
                 ext_cb(QueueId::DMA_0_2, nop)}),
            HL_WAIT_CS_STATUS_COMPLETED);
  ASSERT_TRUE(dev->wait_qman_error(regs::QmanId::DMA2, 2000));
  EXPECT_GT(dev->eq_events(), events_before);
  // GLBL_ERR_WDATA = the SPI of GAUDI_EVENT_DMA2_QM (585 - 151).
  EXPECT_EQ(dev->qman_error_word(regs::QmanId::DMA2), 434u);
  EXPECT_TRUE(log_has(*dev, log_before, "DMA2_QM", "(QMAN) error"));
  EXPECT_TRUE(log_has(*dev, log_before, "DMA2_QM", "CP0 causes"));
  EXPECT_FALSE(dev->qman_error(regs::QmanId::DMA3));
  EXPECT_FALSE(dev->qman_error(regs::QmanId::DMA0));

  // The device keeps working: another stream of the same QMAN and the external queues.
  EXPECT_EQ(run({internal(QueueId::DMA_2_1, sram(0x3100), static_cast<uint32_t>(nop.size())),
                 ext_cb(QueueId::DMA_0_3, nop)}),
            HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, nop)}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(info<hl_info_device_status>(HL_INFO_DEVICE_STATUS).status, HL_DEVICE_STATUS_OPERATIONAL);
  EXPECT_EQ(dev->close(), 0);
}

// The event queue is set up again after a TDR hard reset: the flags start clean, and a STOP on
// the QMAN that had stopped before the reset (and on another one) is reported again.
TEST_F(DriverTest, TheEventQueueSurvivesAHardReset) {
  HlDeviceOptions options;
  options.cs_timeout_us = 5000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  const std::vector<uint8_t> stop = CommandBufferBuilder().stop().bytes();
  const std::vector<uint8_t> nop = CommandBufferBuilder().nop().bytes();
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_0, sram_writer(sram(0x3000), stop))}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(run({internal(QueueId::DMA_2_0, sram(0x3000), static_cast<uint32_t>(stop.size())),
                 ext_cb(QueueId::DMA_0_1, nop)}),
            HL_WAIT_CS_STATUS_COMPLETED);
  ASSERT_TRUE(dev->wait_qman_error(regs::QmanId::DMA2, 2000));

  uint64_t stuck = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().fence(0, 1, 1).bytes())}, &stuck), 0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(stuck, 10000000, &status), -ETIMEDOUT);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  EXPECT_EQ(info<hl_info_device_status>(HL_INFO_DEVICE_STATUS).status, HL_DEVICE_STATUS_OPERATIONAL);
  EXPECT_FALSE(dev->qman_error(regs::QmanId::DMA2));

  const size_t log_before = dev->log().size();
  EXPECT_EQ(run({internal(QueueId::DMA_2_0, sram(0x3000), static_cast<uint32_t>(stop.size())),
                 internal(QueueId::DMA_3_0, sram(0x3000), static_cast<uint32_t>(stop.size())),
                 ext_cb(QueueId::DMA_0_1, nop)}),
            HL_WAIT_CS_STATUS_COMPLETED);
  ASSERT_TRUE(dev->wait_qman_error(regs::QmanId::DMA2, 2000));
  ASSERT_TRUE(dev->wait_qman_error(regs::QmanId::DMA3, 2000));
  EXPECT_TRUE(log_has(*dev, log_before, "DMA2_QM", "(QMAN) error"));
  EXPECT_TRUE(log_has(*dev, log_before, "DMA3_QM", "(QMAN) error"));
  EXPECT_EQ(run({ext_cb(QueueId::DMA_0_2, nop)}), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(dev->close(), 0);
}

}  // namespace
}  // namespace hpusim::driver

namespace hpusim::driver {
namespace {

// Eight host threads submit and wait concurrently, each on its own external stream; every CS
// completes and the sequence numbers are unique.
// WAIT_CS lets the driver go while it sleeps: a thread waiting for a CS that only another
// thread's CS can release does not keep that thread out of the driver. (Holding it, the waiter
// would sleep until the TDR reset the device.) Each thread is on its own host-time track.
TEST_F(DriverTest, AWaitCsDoesNotKeepOtherThreadsOutOfTheDriver) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const unsigned sob = 20, mon = 6;
  CommandBufferBuilder waiter;
  wait_on_sob(waiter, 0, sob, mon, false, 1);
  const hl_cs_chunk wait_chunk = ext_cb(QueueId::DMA_0_0, waiter.bytes());
  const hl_cs_chunk signal_chunk = ext_cb(QueueId::DMA_1_0, CommandBufferBuilder().msg_long(sob_address(sob), 1).bytes());
  platform::Platform& box = dev->platform();
  const uint64_t start = box.host_now_ps() + 1000000;
  const unsigned waiting_track = box.reserve_host_track("waiter", start);
  const unsigned signalling_track = box.reserve_host_track("signaller", start);
  uint32_t wait_status = 0, signal_status = 0;
  uint64_t waiter_done_ps = 0, signal_done_ps = 0;
  std::thread waiting([&] {
    const platform::HostThread on(box, waiting_track);
    uint64_t seq = 0;
    ASSERT_EQ(dev->submit({wait_chunk}, &seq), 0);
    EXPECT_EQ(dev->wait(seq, 1000000, &wait_status), 0);
    waiter_done_ps = box.host_now_ps();
  });
  std::thread signalling([&] {
    const platform::HostThread on(box, signalling_track);
    box.cosim().charge_ns(50000);   // 50 us into the other thread's wait
    uint64_t seq = 0;
    ASSERT_EQ(dev->submit({signal_chunk}, &seq), 0);
    EXPECT_EQ(dev->wait(seq, 1000000, &signal_status), 0);
    signal_done_ps = box.host_now_ps();
  });
  waiting.join();
  signalling.join();
  EXPECT_EQ(wait_status, HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(signal_status, HL_WAIT_CS_STATUS_COMPLETED);
  // The waiter went on once the signal had landed, long before any TDR.
  EXPECT_GT(waiter_done_ps, start + 50000000);
  EXPECT_LT(waiter_done_ps, start + 1000000000);
  EXPECT_LT(signal_done_ps, start + 1000000000);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  EXPECT_EQ(dev->close(), 0);
}

TEST(DriverThreads, EightThreadsSubmitConcurrently) {
  platform::PlatformOptions options;
  options.overrides.push_back("hbm.refresh_enabled=false");
  testing::TestDevice dev(options);
  ASSERT_EQ(dev.open(), 0);
  const std::vector<uint8_t> nop = qman::CommandBufferBuilder().nop().bytes();
  std::vector<std::vector<uint64_t>> seqs(8);
  std::vector<int> failures(8, 0);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const auto queue = static_cast<uapi::__u32>(t < 4 ? static_cast<unsigned>(regs::QueueId::DMA_0_0) + t
                                                         : static_cast<unsigned>(regs::QueueId::DMA_1_0) + (t - 4));
      for (int i = 0; i < 20; ++i) {
        uint64_t handle = 0;
        if (dev.cb_create(static_cast<uint32_t>(nop.size()), &handle) != 0) { ++failures[t]; continue; }
        void* memory = nullptr;
        if (dev.mmap_cb(handle, 4096, &memory) != 0) { ++failures[t]; continue; }
        std::memcpy(memory, nop.data(), nop.size());
        dev.munmap_cb(memory, 4096);
        uapi::hl_cs_chunk chunk{};
        chunk.cb_handle = handle;
        chunk.queue_index = queue;
        chunk.cb_size = static_cast<uint32_t>(nop.size());
        uint64_t seq = 0;
        if (dev.submit({chunk}, &seq) != 0) { ++failures[t]; continue; }
        uint32_t status = 0;
        if (dev.wait(seq, 1000000, &status) != 0 || status != uapi::HL_WAIT_CS_STATUS_COMPLETED) ++failures[t];
        seqs[t].push_back(seq);
        dev.cb_destroy(handle);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<uint64_t> unique;
  for (unsigned t = 0; t < 8; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(seqs[t].size(), 20u);
    unique.insert(seqs[t].begin(), seqs[t].end());
  }
  EXPECT_EQ(unique.size(), 160u);
  EXPECT_EQ(dev.close(), 0);
}

}  // namespace
}  // namespace hpusim::driver
