// What the box tests drive cards with at the driver's level: device files, command submissions
// of command buffers made here, host buffers copied to and from the card through the PCI DMA
// queues (hlthunk and the device file, as a user-space library would).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "arch/packets/packets.h"
#include "arch/uapi/uapi.h"
#include "driver/device_file.h"
#include "sim/platform/platform.h"
#include "synapse/hlthunk/hlthunk.h"

namespace hpusim::testing {

inline constexpr uint64_t kPage = 4096;

struct Device {
  int fd = -1;
  uint64_t dram = 0, sram = 0;
};

struct Aligned {
  explicit Aligned(size_t bytes) : p(static_cast<uint8_t*>(std::aligned_alloc(kPage, (bytes + kPage - 1) / kPage * kPage))) {}
  ~Aligned() { std::free(p); }
  uint8_t* p;
};

// The box's options: `cards` HLS-1 cards, no heartbeat traffic between the submissions.
inline platform::PlatformOptions hls1(unsigned cards) {
  platform::PlatformOptions options;
  options.box = "hls1";
  options.cards = cards;
  options.driver.heartbeat_period_us = 0;
  return options;
}

// Each card's device file and the buffers the tests use on it.
inline std::vector<Device> open_cards(platform::Platform& box) {
  std::vector<Device> d(box.cards());
  for (unsigned c = 0; c < box.cards(); ++c) {
    d[c].fd = driver::hl_open(platform::Platform::device_path(c).c_str());
    EXPECT_GE(d[c].fd, 0) << "card " << c;
    d[c].dram = box.preset().memory_map().dram_user_base() + 0x200000;
    d[c].sram = box.preset().memory_map().sram_base() + 0x10000;
  }
  return d;
}

// One CS of `jobs`, waited for.
inline bool run_cs(int fd, const std::vector<uapi::hl_cs_chunk>& jobs, uint64_t* seq_out = nullptr) {
  uint64_t seq = 0;
  if (hlthunk::submit(fd, jobs, &seq) != 0) return false;
  if (seq_out) {
    *seq_out = seq;
    return true;
  }
  uint32_t status = 0;
  return hlthunk::wait(fd, seq, 10000000, &status) == 0 && status == uapi::HL_WAIT_CS_STATUS_COMPLETED;
}

inline uapi::hl_cs_chunk external(int fd, uint32_t queue, const std::vector<uint8_t>& bytes) {
  uint64_t handle = 0;
  EXPECT_EQ(hlthunk::cb_create(fd, static_cast<uint32_t>(bytes.size()), &handle), 0);
  void* memory = nullptr;
  const uint64_t length = (bytes.size() + kPage - 1) / kPage * kPage;
  EXPECT_EQ(driver::hl_mmap(fd, length, handle, &memory), 0);
  std::memcpy(memory, bytes.data(), bytes.size());
  driver::hl_munmap(memory, length);
  uapi::hl_cs_chunk chunk{};
  chunk.cb_handle = handle;
  chunk.queue_index = queue;
  chunk.cb_size = static_cast<uint32_t>(bytes.size());
  return chunk;
}

// Copies host bytes to device memory (or back) through the PCI DMA queues.
inline bool copy(int fd, void* host, uint64_t device, uint32_t bytes, bool down) {
  uint64_t va = 0;
  if (hlthunk::host_memory_map(fd, host, bytes, &va) != 0) return false;
  qman::CommandBufferBuilder cb;
  cb.lin_dma(down ? va : device, down ? device : va, bytes);
  const bool ok = run_cs(fd, {external(fd, down ? uapi::GAUDI_QUEUE_ID_DMA_0_0 : uapi::GAUDI_QUEUE_ID_DMA_1_0, cb.take())});
  return hlthunk::memory_unmap(fd, va) == 0 && ok;
}

}  // namespace hpusim::testing
