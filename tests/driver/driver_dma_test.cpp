// DMA through the driver API only: host memory mapped with the MEMORY ioctl, LIN_DMA packets on
// the PCI and internal DMA queues, sync objects chaining internal queues, page faults.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "tests/driver/driver_fixture.h"

namespace hpusim::driver {
namespace {

class DriverDmaTest : public DriverTest {
 protected:
  // One CS with one LIN_DMA on `queue`; returns the WAIT_CS status.
  uint32_t dma(QueueId queue, uint64_t src, uint64_t dst, uint32_t bytes) {
    return run({ext_cb(queue, CommandBufferBuilder().lin_dma(src, dst, bytes).bytes())}, 10000000);
  }
  // host -> device -> host through the two PCI DMA channels, with a data check.
  void round_trip(uint64_t device_address, size_t bytes, uint32_t seed) {
    SCOPED_TRACE("round trip of " + std::to_string(bytes) + " bytes at device " + std::to_string(device_address));
    // Odd offsets inside the host pages, so the partial first and last pages are exercised.
    std::vector<uint8_t> src_storage(bytes + 64), dst_storage(bytes + 64, 0xEE);
    uint8_t* src = src_storage.data() + 5;
    uint8_t* dst = dst_storage.data() + 11;
    const auto data = random_bytes(bytes, seed);
    std::copy(data.begin(), data.end(), src);
    const uint64_t src_va = map(src, bytes), dst_va = map(dst, bytes);
    ASSERT_EQ(dma(QueueId::DMA_0_0, src_va, device_address, static_cast<uint32_t>(bytes)), HL_WAIT_CS_STATUS_COMPLETED);
    ASSERT_EQ(dma(QueueId::DMA_1_0, device_address, dst_va, static_cast<uint32_t>(bytes)), HL_WAIT_CS_STATUS_COMPLETED);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), dst)) << "data differs after the round trip";
    EXPECT_EQ(dst[-1], 0xEE) << "wrote before the buffer";
    EXPECT_EQ(dst[bytes], 0xEE) << "wrote past the buffer";
    EXPECT_EQ(dev->unmap_host(src_va), 0);
    EXPECT_EQ(dev->unmap_host(dst_va), 0);
  }
  // Arms monitor `mon` of E_N on `sob` (>= target) with its payload adding 1 to fence 2 of
  // `qman`'s stream `stream`, then FENCEs on it: the stream waits until the SOB reaches target.
  static void wait_for(CommandBufferBuilder& cb, regs::QmanId qman, unsigned stream, unsigned sob, unsigned mon,
                       uint16_t target) {
    const auto en = regs::SyncManager::E_N;
    const uint64_t fence = cfg(regs::qman_fence_rdata(qman, 2, stream));
    cb.msg_long(cfg(regs::sm_mon_pay_addrl(en, mon)), static_cast<uint32_t>(fence))
        .msg_long(cfg(regs::sm_mon_pay_addrh(en, mon)), static_cast<uint32_t>(fence >> 32))
        .msg_long(cfg(regs::sm_mon_pay_data(en, mon)), 1)
        .msg_long(cfg(regs::sm_mon_arm(en, mon)), qman::monitor_arm_value(sob / 8, qman::single_sob_mask(sob), false, target))
        .fence(2, 1, 1);
  }
  // Adds 1 to `sob` once the engine is idle (EB): the DMA before it has landed.
  static void signal(CommandBufferBuilder& cb, unsigned sob) {
    cb.msg_long(cfg(regs::sm_sob(regs::SyncManager::E_N, sob)), qman::sob_write_value(1, true), qman::Barriers{true, true, true});
  }
};

TEST_F(DriverDmaTest, MemoryIoctlMapsHostMemoryAndKeepsDramBooks) {
  make();
  ASSERT_EQ(dev->open(), 0);
  hl_mem_args args{};
  args.in.op = HL_MEM_OP_ALLOC;
  EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_MEMORY, &args), -EINVAL);   // size 0
  args = {};
  args.in.op = HL_MEM_OP_ALLOC;
  args.in.alloc.mem_size = 3 << 20;
  EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_MEMORY, &args), 0);
  EXPECT_EQ(args.out.handle, 0u);   // Gaudi 1: DRAM is not virtualised
  const auto usage = info<hl_info_dram_usage>(HL_INFO_DRAM_USAGE);
  EXPECT_EQ(usage.ctx_dram_mem, 3u << 20);
  const auto hw = info<hl_info_hw_ip_info>(HL_INFO_HW_IP_INFO);
  EXPECT_EQ(usage.dram_free_mem, hw.dram_size - (3u << 20));
  args = {};
  args.in.op = HL_MEM_OP_FREE;
  args.in.alloc.mem_size = 1 << 20;
  EXPECT_EQ(dev->ioctl(HL_IOCTL_MEMORY, &args), 0);
  EXPECT_EQ(info<hl_info_dram_usage>(HL_INFO_DRAM_USAGE).ctx_dram_mem, 2u << 20);

  args = {};
  args.in.op = HL_MEM_OP_MAP;   // a device handle: there are none on Gaudi 1
  args.in.map_device.handle = 7;
  EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_MEMORY, &args), -EINVAL);
  args = {};
  args.in.op = 42;
  EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_MEMORY, &args), -EINVAL);

  std::vector<uint8_t> buffer(3 * kPage);
  uint64_t va = 0;
  ASSERT_EQ(dev->map_host(buffer.data() + 100, 5000, &va), 0);
  EXPECT_GE(va, 0x1000000000000ull);   // VA_HOST_SPACE, PMMU half
  EXPECT_LT(va, 0x1000000000000ull + (0x3FF8000000000ull - 0x1000000000000ull) / 2);
  EXPECT_EQ(va % kPage, reinterpret_cast<uintptr_t>(buffer.data() + 100) % kPage);   // offset kept
  EXPECT_EQ(dev->map_host(nullptr, 100, &va), -EFAULT);
  EXPECT_EQ(dev->map_host(buffer.data(), 0, &va), -EFAULT);
  EXPECT_EQ(dev->unmap_host(va + 8), -EINVAL);   // not an address MAP returned
  EXPECT_EQ(dev->unmap_host(va), 0);
  EXPECT_EQ(dev->unmap_host(va), -EINVAL);       // already unmapped

  // Hints: an aligned free hint is used; a taken one falls back, or fails with FORCE_HINT; a
  // misaligned one is ignored, or fails with FORCE_HINT.
  const uint64_t hint = 0x1000040000000ull;
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_EQ(dev->map_host(buffer.data(), kPage, &a, hint), 0);
  EXPECT_EQ(a & ~(kPage - 1), hint);
  ASSERT_EQ(dev->map_host(buffer.data(), kPage, &b, hint), 0);
  EXPECT_NE(b & ~(kPage - 1), hint);
  EXPECT_EQ(dev->map_host(buffer.data(), kPage, &c, hint, HL_MEM_FORCE_HINT), -EINVAL);
  EXPECT_EQ(dev->map_host(buffer.data(), kPage, &c, hint + 12, HL_MEM_FORCE_HINT), -EINVAL);
  ASSERT_EQ(dev->map_host(buffer.data(), kPage, &c, hint + 2 * kPage + 12), 0);
  EXPECT_EQ(dev->unmap_host(a), 0);
  EXPECT_EQ(dev->unmap_host(b), 0);
  EXPECT_EQ(dev->unmap_host(c), 0);
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverDmaTest, HostSramHostRoundTrips) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const auto hw = info<hl_info_hw_ip_info>(HL_INFO_HW_IP_INFO);
  const std::vector<size_t> sizes = {1, 2, 3, 4096, 4096 + 7, 65536 + 1, (1 << 20) + 13, 16 << 20};
  uint32_t seed = 1;
  for (size_t bytes : sizes) {
    ASSERT_LE(bytes + 64, hw.sram_size);
    round_trip(hw.sram_base_address + 64, bytes, seed++);
  }
  EXPECT_EQ(dev->close(), 0);
}

TEST_F(DriverDmaTest, HostDramHostRoundTrips) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const auto hw = info<hl_info_hw_ip_info>(HL_INFO_HW_IP_INFO);
  const std::vector<size_t> sizes = {1, 127, 4096, 1 << 20, 64 << 20};
  uint32_t seed = 100;
  for (size_t bytes : sizes) round_trip(hw.dram_base_address + 0x1000 + 3, bytes, seed++);
  EXPECT_EQ(dev->close(), 0);
}

// Eight threads, each with its own buffers and DRAM region, DMA concurrently on the PCI queues.
TEST_F(DriverDmaTest, EightThreadsDmaConcurrently) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const uint64_t dram = dev->dram_user_base();
  std::vector<int> failures(8, 0);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const auto down = static_cast<QueueId>(static_cast<unsigned>(QueueId::DMA_0_0) + t % 4);
      const auto up = static_cast<QueueId>(static_cast<unsigned>(QueueId::DMA_1_0) + t % 4);
      for (unsigned i = 0; i < 4; ++i) {
        const size_t bytes = 4096 * (t + 1) + 17 * i;
        const auto data = random_bytes(bytes, 1000 * t + i);
        std::vector<uint8_t> back(bytes, 0);
        uint64_t src = 0, dst = 0;
        if (dev->map_host(data.data(), bytes, &src) != 0 || dev->map_host(back.data(), bytes, &dst) != 0) {
          ++failures[t];
          continue;
        }
        const uint64_t device = dram + (uint64_t{t} << 24);
        for (const auto& [queue, from, to] : {std::tuple{down, src, device}, std::tuple{up, device, dst}}) {
          uint64_t seq = 0;
          uint32_t status = 99;
          if (dev->submit({ext_cb(queue, CommandBufferBuilder().lin_dma(from, to, static_cast<uint32_t>(bytes)).bytes())},
                          &seq) != 0 ||
              dev->wait(seq, 10000000, &status) != 0 || status != HL_WAIT_CS_STATUS_COMPLETED) {
            ++failures[t];
          }
        }
        if (back != data) ++failures[t];
        if (dev->unmap_host(src) != 0 || dev->unmap_host(dst) != 0) ++failures[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (unsigned t = 0; t < 8; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(dev->close(), 0);
}

// A four-stage pipeline over internal DMA queues (DRAM A -> B -> C -> D -> E), each stage
// waiting on the previous stage's sync object, then an external job bringing E back to the host.
// The internal CBs live in host memory mapped for the device (the PMMU range is allowed).
TEST_F(DriverDmaTest, FourStagePipelineOverInternalQueuesChainedBySyncObjects) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const size_t bytes = 256 * 1024 + 40;
  const uint64_t dram = dev->dram_user_base();
  const uint64_t stage_address[5] = {dram, dram + 0x1000000, dram + 0x2000000, dram + 0x3000000, dram + 0x4000000};
  const auto data = random_bytes(bytes, 77);
  std::vector<uint8_t> back(bytes, 0);
  const uint64_t src = map(data.data(), bytes), dst = map(back.data(), bytes);
  ASSERT_EQ(dma(QueueId::DMA_0_0, src, stage_address[0], bytes), HL_WAIT_CS_STATUS_COMPLETED);

  const unsigned first_sob = 200, first_mon = 40;
  const regs::QmanId stage_qman[4] = {regs::QmanId::DMA2, regs::QmanId::DMA3, regs::QmanId::DMA4, regs::QmanId::DMA5};
  const QueueId stage_queue[4] = {QueueId::DMA_2_0, QueueId::DMA_3_0, QueueId::DMA_4_0, QueueId::DMA_5_0};
  std::vector<std::vector<uint8_t>> stage_cbs(4);
  std::vector<uint64_t> stage_vas(4);
  std::vector<hl_cs_chunk> chunks;
  // Stages are submitted last-first: each one really waits for its predecessor.
  for (int s = 3; s >= 0; --s) {
    CommandBufferBuilder cb;
    if (s > 0) wait_for(cb, stage_qman[s], 0, first_sob + s - 1, first_mon + s - 1, 1);
    cb.lin_dma(stage_address[s], stage_address[s + 1], bytes);
    signal(cb, first_sob + s);
    stage_cbs[s] = cb.take();
    stage_vas[s] = map(stage_cbs[s].data(), stage_cbs[s].size());
    chunks.push_back(internal(stage_queue[s], stage_vas[s], static_cast<uint32_t>(stage_cbs[s].size())));
  }
  CommandBufferBuilder last;
  wait_for(last, regs::QmanId::DMA1, 0, first_sob + 3, first_mon + 3, 1);
  last.lin_dma(stage_address[4], dst, bytes);
  chunks.insert(chunks.begin(), ext(QueueId::DMA_1_0, cb_with(last.bytes()), static_cast<uint32_t>(last.size())));
  EXPECT_EQ(run(chunks, 10000000), HL_WAIT_CS_STATUS_COMPLETED);
  EXPECT_EQ(back, data);
  for (uint64_t va : stage_vas) EXPECT_EQ(dev->unmap_host(va), 0);
  EXPECT_EQ(dev->unmap_host(src), 0);
  EXPECT_EQ(dev->unmap_host(dst), 0);
  EXPECT_EQ(dev->close(), 0);
}

// A DMA from a host address the MMU does not map: a page-fault event naming the VA and the
// engine, the DMA core stops (no completion), WAIT_CS reports the timeout, the device resets
// and is usable again.
TEST_F(DriverDmaTest, DmaFromAnUnmappedHostAddressIsAPageFault) {
  HlDeviceOptions options;
  options.cs_timeout_us = 2000;
  make(options);
  ASSERT_EQ(dev->open(), 0);
  std::vector<uint8_t> buffer(8192, 0x5A);
  const uint64_t va = map(buffer.data(), buffer.size());
  ASSERT_EQ(dev->unmap_host(va), 0);   // the VA is stale now
  uint64_t seq = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_1, CommandBufferBuilder().lin_dma(va, dev->dram_user_base(), 8192).bytes())},
                        &seq),
            0);
  uint32_t status = 99;
  EXPECT_EQ(dev->wait(seq, 100000, &status), -ETIMEDOUT);
  EXPECT_EQ(status, HL_WAIT_CS_STATUS_TIMEDOUT);
  EXPECT_GE(dev->page_faults(), 1u);
  const auto fault = info<hl_page_fault_info>(HL_INFO_PAGE_FAULT_EVENT);
  EXPECT_EQ(fault.addr & ~(kPage - 1), va & ~(kPage - 1));
  EXPECT_EQ(fault.engine_id, 0u);   // GAUDI_ENGINE_ID_DMA_0
  const auto& log = dev->log();
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) { return l.find("MMU page fault on va") != std::string::npos; }));
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) { return l.find("DMA0_CORE error") != std::string::npos; }));
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 1u);
  round_trip(dev->dram_user_base(), 10000, 5);   // the device works again
  EXPECT_EQ(dev->close(), 0);
}

// Closing with DMAs in flight waits for them and releases the user's mappings.
TEST_F(DriverDmaTest, CloseWithDmaInFlight) {
  make();
  ASSERT_EQ(dev->open(), 0);
  const size_t bytes = 8 << 20;
  const auto data = random_bytes(bytes, 9);
  const uint64_t src = map(data.data(), bytes);
  uint64_t seq = 0;
  ASSERT_EQ(dev->submit({ext_cb(QueueId::DMA_0_0, CommandBufferBuilder().lin_dma(src, dev->dram_user_base(), bytes).bytes())},
                        &seq),
            0);
  EXPECT_EQ(dev->close(), 0);
  const auto& log = dev->log();
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.find("without removing its memory mappings") != std::string::npos;
  }));
  ASSERT_EQ(dev->open(), 0);
  EXPECT_EQ(info<hl_info_reset_count>(HL_INFO_RESET_COUNT).hard_reset_cnt, 0u);
  round_trip(dev->dram_user_base(), 4096, 3);
  EXPECT_EQ(dev->close(), 0);
}

}  // namespace
}  // namespace hpusim::driver
