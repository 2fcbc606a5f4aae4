// The driver test fixture: one simulated card per test process, reached only through its device
// file and the driver's debug view (no test touches a SystemC module).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "driver/device.h"
#include "tests/support/test_device.h"
#include "arch/packets/packets.h"

namespace hpusim::driver {

using namespace uapi;
using qman::CommandBufferBuilder;
using regs::QueueId;

constexpr uint64_t kPage = 4096;

// n bytes from a seeded generator: test data that differs per seed and is the same on every run.
inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class DriverTest : public ::testing::Test {
 protected:
  // The card with the driver `options`; `platform` gives the preset, overrides and host time.
  void make(HlDeviceOptions options = {}, platform::PlatformOptions platform = {}) {
    platform.overrides.push_back("hbm.refresh_enabled=false");
    if (options.cs_timeout_us == 0) options.cs_timeout_us = 20000;   // a short TDR: 20 ms
    platform.driver = options;
    dev = std::make_unique<testing::TestDevice>(platform);
  }
  void SetUp() override {}

  // Creates a CB, writes `bytes` into it through its mapping, returns the handle.
  uint64_t cb_with(const std::vector<uint8_t>& bytes) {
    uint64_t handle = 0;
    EXPECT_EQ(dev->cb_create(static_cast<uint32_t>(bytes.size()), &handle), 0);
    void* memory = nullptr;
    const uint64_t length = (bytes.size() + kPage - 1) / kPage * kPage;
    EXPECT_EQ(dev->mmap_cb(handle, length, &memory), 0);
    std::memcpy(memory, bytes.data(), bytes.size());
    EXPECT_EQ(dev->munmap_cb(memory, length), 0);
    return handle;
  }
  static hl_cs_chunk ext(QueueId q, uint64_t handle, uint32_t size) {
    hl_cs_chunk c{};
    c.cb_handle = handle;
    c.queue_index = queue_index(q);
    c.cb_size = size;
    return c;
  }
  hl_cs_chunk ext_cb(QueueId q, const std::vector<uint8_t>& bytes) {
    return ext(q, cb_with(bytes), static_cast<uint32_t>(bytes.size()));
  }
  static hl_cs_chunk internal(QueueId q, uint64_t address, uint32_t size) {
    hl_cs_chunk c{};
    c.cb_handle = address;
    c.queue_index = queue_index(q);
    c.cb_size = size;
    return c;
  }
  // Maps user memory for the device (MEMORY ioctl, USERPTR); returns the device VA.
  uint64_t map(const void* p, uint64_t bytes) {
    uint64_t va = 0;
    EXPECT_EQ(dev->map_host(p, bytes, &va), 0);
    return va;
  }
  // Submits one CS and waits for it; returns the WAIT_CS status.
  uint32_t run(const std::vector<hl_cs_chunk>& chunks, uint64_t timeout_us = 1000000) {
    uint64_t seq = 0;
    EXPECT_EQ(dev->submit(chunks, &seq), 0);
    uint32_t status = 99;
    dev->wait(seq, timeout_us, &status);
    return status;
  }
  template <typename T>
  T info(uint32_t op, uint32_t dcore = 0) {
    T out{};
    hl_info_args args{};
    args.return_pointer = reinterpret_cast<uintptr_t>(&out);
    args.return_size = sizeof out;
    args.op = op;
    args.dcore_id = dcore;
    EXPECT_EQ(dev->ioctl(DRM_IOCTL_HL_INFO, &args), 0);
    return out;
  }
  uint64_t sram(uint64_t offset) const { return dev->sram_user_base() - 0x80 + offset; }
  static uint64_t cfg(uint64_t offset) { return regs::cfg_address(offset); }
  // A CB fragment for stream `stream` of `qman`: arm monitor `mon` of E_N on `sob` (== or >=
  // target) with its payload incrementing the stream's fence 2, then FENCE on it: the stream
  // waits until the SOB reaches the target.
  static CommandBufferBuilder& wait_for(CommandBufferBuilder& cb, regs::QmanId qman, unsigned stream, unsigned sob,
                                        unsigned mon, uint16_t target, bool equal = false) {
    const auto en = regs::SyncManager::E_N;
    const uint64_t fence = cfg(regs::qman_fence_rdata(qman, 2, stream));
    cb.msg_long(cfg(regs::sm_mon_pay_addrl(en, mon)), static_cast<uint32_t>(fence))
        .msg_long(cfg(regs::sm_mon_pay_addrh(en, mon)), static_cast<uint32_t>(fence >> 32))
        .msg_long(cfg(regs::sm_mon_pay_data(en, mon)), 1)
        .msg_long(cfg(regs::sm_mon_arm(en, mon)), qman::monitor_arm_value(sob / 8, qman::single_sob_mask(sob), equal, target))
        .fence(2, 1, 1);
    return cb;
  }
  // The same on DMA0.
  static CommandBufferBuilder& wait_on_sob(CommandBufferBuilder& cb, unsigned stream, unsigned sob, unsigned mon,
                                           bool equal, uint16_t target) {
    return wait_for(cb, regs::QmanId::DMA0, stream, sob, mon, target, equal);
  }
  static uint64_t sob_address(unsigned sob) { return cfg(regs::sm_sob(regs::SyncManager::E_N, sob)); }

  // Lines of the driver's log containing `text`, and the whole log (for failure messages).
  size_t log_lines_with(const std::string& text) const {
    const auto& log = dev->log();
    return static_cast<size_t>(
        std::count_if(log.begin(), log.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; }));
  }
  std::string log_text() const {
    std::string all;
    for (const auto& l : dev->log()) all += l + "\n";
    return all;
  }

  std::unique_ptr<testing::TestDevice> dev;
};

}  // namespace hpusim::driver
