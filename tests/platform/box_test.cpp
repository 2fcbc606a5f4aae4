// A box of two cards: two workloads, each on its own card, driven from its own host thread with
// its own host-time track, take exactly the cycles each takes alone on a one-card platform, and
// the same on every run however the threads are scheduled. Every platform lives in a forked child
// (SystemC elaborates once per process); the parent compares what the children report.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "arch/packets/packets.h"
#include "arch/uapi/uapi.h"
#include "driver/device_file.h"
#include "hw/card/card.h"
#include "hw/pcie/host_memory.h"
#include "sim/platform/platform.h"
#include "sim/stats/stats.h"
#include "synapse/hlthunk/hlthunk.h"
#include "tests/support/in_child.h"

namespace hpusim::platform {
namespace {

using uapi::hl_cs_chunk;

// Where each workload's host thread starts: after both cards of a box have booted, at the same
// host time in every child, so absolute device times can be compared too.
constexpr uint64_t kWorkloadStartPs = 20'000'000'000ull;   // 20 ms
constexpr uint64_t kPage = 4096;

// A workload: `copies` round trips of `bytes` host -> DRAM -> host through the PCI DMA queues,
// one CS each way. What it reports is the host time at which each CS completed.
struct Workload {
  uint32_t bytes;
  unsigned copies;
};
constexpr Workload kWorkloads[2] = {{1u << 20, 3}, {96u << 10, 7}};
constexpr size_t kMaxEvents = 32;

struct Report {
  bool ok = false;
  char error[160] = {};
  unsigned events = 0;
  uint64_t completed_at_ps[kMaxEvents] = {};
};

void fail(Report& r, const std::string& what) {
  std::snprintf(r.error, sizeof r.error, "%s", what.c_str());
  r.ok = false;
}

// One external job of `bytes` of command buffer on `queue`, in a CB of the driver's pool.
bool external_job(int fd, uint32_t queue, const std::vector<uint8_t>& bytes, hl_cs_chunk* chunk) {
  uint64_t handle = 0;
  if (hlthunk::cb_create(fd, static_cast<uint32_t>(bytes.size()), &handle) != 0) return false;
  void* memory = nullptr;
  const uint64_t length = (bytes.size() + kPage - 1) / kPage * kPage;
  if (driver::hl_mmap(fd, length, handle, &memory) != 0) return false;
  std::memcpy(memory, bytes.data(), bytes.size());
  driver::hl_munmap(memory, length);
  *chunk = hl_cs_chunk{};
  chunk->cb_handle = handle;
  chunk->queue_index = queue;
  chunk->cb_size = static_cast<uint32_t>(bytes.size());
  return true;
}

// Runs workload `w` on card `card` from the calling thread (bound to its own track).
Report run_workload(Platform& box, unsigned card, const Workload& w) {
  Report r;
  const int fd = driver::hl_open(Platform::device_path(card).c_str());
  if (fd < 0) {
    fail(r, "open " + Platform::device_path(card) + ": " + std::to_string(fd));
    return r;
  }
  // Page-aligned host buffers: where a buffer starts inside its page changes how the DMA engine
  // splits its reads, so the workloads use the same alignment in every process.
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  const std::unique_ptr<uint8_t[], Free> host(static_cast<uint8_t*>(std::aligned_alloc(kPage, w.bytes)));
  const std::unique_ptr<uint8_t[], Free> back(static_cast<uint8_t*>(std::aligned_alloc(kPage, w.bytes)));
  for (size_t i = 0; i < w.bytes; ++i) host[i] = static_cast<uint8_t>(i * 7 + card);
  std::memset(back.get(), 0, w.bytes);
  uint64_t host_va = 0, back_va = 0;
  if (hlthunk::host_memory_map(fd, host.get(), w.bytes, &host_va) != 0 ||
      hlthunk::host_memory_map(fd, back.get(), w.bytes, &back_va) != 0) {
    fail(r, "MEMORY map failed");
    return r;
  }
  const uint64_t dram = box.preset().memory_map().dram_user_base() + 0x100000;
  for (unsigned i = 0; i < w.copies && r.events + 2 <= kMaxEvents; ++i) {
    for (const bool down : {true, false}) {
      qman::CommandBufferBuilder cb;
      cb.lin_dma(down ? host_va : dram, down ? dram : back_va, w.bytes);
      hl_cs_chunk chunk{};
      const uint32_t queue = down ? uapi::GAUDI_QUEUE_ID_DMA_0_0 : uapi::GAUDI_QUEUE_ID_DMA_1_0;
      if (!external_job(fd, queue, cb.take(), &chunk)) {
        fail(r, "command buffer");
        return r;
      }
      uint64_t seq = 0;
      uint32_t status = 0;
      if (hlthunk::submit(fd, {chunk}, &seq) != 0 || hlthunk::wait(fd, seq, 1000000, &status) != 0 ||
          status != uapi::HL_WAIT_CS_STATUS_COMPLETED) {
        fail(r, "CS " + std::to_string(r.events) + " did not complete");
        return r;
      }
      r.completed_at_ps[r.events++] = box.host_now_ps();
      hlthunk::cb_destroy(fd, chunk.cb_handle);
    }
  }
  if (std::memcmp(host.get(), back.get(), w.bytes) != 0) {
    fail(r, "the data came back changed");
    return r;
  }
  driver::hl_close(fd);
  r.ok = true;
  return r;
}

PlatformOptions options(unsigned cards) {
  PlatformOptions o;
  o.cards = cards;
  o.driver.heartbeat_period_us = 0;   // no heartbeat traffic between the workloads' submissions
  return o;
}

// Workload `which` alone, on a one-card platform.
std::vector<Report> alone(unsigned which) {
  Platform box(options(1));
  HostThread thread(box, "workload", kWorkloadStartPs);
  return {run_workload(box, 0, kWorkloads[which])};
}

// Both workloads at once, each on its card from its own thread and track.
std::vector<Report> together() {
  Platform box(options(2));
  std::vector<Report> reports(2);
  std::vector<unsigned> tracks;
  for (unsigned card = 0; card < 2; ++card) {
    tracks.push_back(box.reserve_host_track("card " + std::to_string(card) + " workload", kWorkloadStartPs));
  }
  std::vector<std::thread> threads;
  for (unsigned card = 0; card < 2; ++card) {
    threads.emplace_back([&box, &reports, &tracks, card] {
      HostThread thread(box, tracks[card]);
      reports[card] = run_workload(box, card, kWorkloads[card]);
    });
  }
  for (auto& t : threads) t.join();
  return reports;
}

// Runs `body` in a child process and returns its reports (an exception: the first one failed).
std::vector<Report> in_child(const std::function<std::vector<Report>()>& body, size_t expected) {
  return hpusim::testing::in_child<Report>(body, expected, [expected](const char* what) {
    std::vector<Report> reports(expected);
    fail(reports[0], what);
    return reports;
  });
}

void expect_same(const Report& a, const Report& b, const std::string& what) {
  ASSERT_TRUE(a.ok) << what << ": " << a.error;
  ASSERT_TRUE(b.ok) << what << ": " << b.error;
  ASSERT_EQ(a.events, b.events) << what;
  for (unsigned i = 0; i < a.events; ++i) EXPECT_EQ(a.completed_at_ps[i], b.completed_at_ps[i]) << what << ", CS " << i;
}

TEST(PlatformBox, TwoWorkloadsOnTwoCardsTakeTheCyclesEachTakesAlone) {
  const auto first_alone = in_child([] { return alone(0); }, 1);
  const auto second_alone = in_child([] { return alone(1); }, 1);
  const auto box = in_child(together, 2);
  expect_same(box[0], first_alone[0], "card 0 in the box vs alone");
  expect_same(box[1], second_alone[0], "card 1 in the box vs alone");
  // They did run at the same time: each started at 20 ms and ended after the other's first CS.
  ASSERT_TRUE(box[0].ok && box[1].ok);
  EXPECT_GT(box[0].completed_at_ps[box[0].events - 1], box[1].completed_at_ps[0]);
  EXPECT_GT(box[1].completed_at_ps[box[1].events - 1], box[0].completed_at_ps[0]);
  // Whatever the threads' scheduling, the box gives the same times again.
  const auto again = in_child(together, 2);
  expect_same(again[0], box[0], "card 0, second run");
  expect_same(again[1], box[1], "card 1, second run");
}

TEST(PlatformBox, EachCardHasItsDeviceFileDriverAndNames) {
  Platform box(options(2));
  ASSERT_EQ(box.cards(), 2u);
  EXPECT_STREQ(box.card(0).name(), "card0");
  EXPECT_STREQ(box.card(1).name(), "card1");
  EXPECT_NE(&box.driver(0), &box.driver(1));
  const int fd0 = driver::hl_open("/dev/hl0");
  const int fd1 = driver::hl_open("/dev/hl1");
  EXPECT_GE(fd0, 0);
  EXPECT_GE(fd1, 0);
  EXPECT_LT(driver::hl_open("/dev/hl2"), 0);
  EXPECT_EQ(driver::hl_close(fd0), 0);
  EXPECT_EQ(driver::hl_close(fd1), 0);
  EXPECT_THROW(box.card(2), std::out_of_range);
  // Each card's MSIs go to its own root port, at the x86 MSI window.
  for (unsigned i = 0; i < 2; ++i) {
    const hw::MsiPort& msi = box.card(i).memory().pcie().msi();
    EXPECT_TRUE(msi.bound()) << i;
    EXPECT_EQ(msi.address(), Platform::kMsiHostAddress) << i;
  }
  // Each card's blocks registered their counters under the card's name as they were built.
  for (const char* name : {"card0.tpc.core7.kernels", "card1.tpc.core0.kernels", "card1.qman.dma0_qm.packets",
                           "card0.hbm.ch0.activates", "card1.pcie.msis", "card1.mmu.dma0.walks"}) {
    EXPECT_NE(box.stats().find(name), nullptr) << name;
  }
  EXPECT_EQ(box.stats().find("tpc.core0.kernels"), nullptr);
  // The probes' MSIs went through each card's own link.
  const double msis0 = box.cosim().on_sim_thread([&] { return box.stats().find_formula("card0.pcie.msis")->value(); });
  const double msis1 = box.cosim().on_sim_thread([&] { return box.stats().find_formula("card1.pcie.msis")->value(); });
  EXPECT_GT(msis0, 0.0);
  EXPECT_EQ(msis0, msis1);
}

// The box has one host memory: both cards reach it, each driver's pins land at bus addresses of
// its own, and a buffer one card wrote is what the other reads.
TEST(PlatformBox, TheCardsShareOneHostMemory) {
  Platform box(options(2));
  hw::HostMemory& host_memory = box.card(0).memory().host_memory();
  EXPECT_EQ(&host_memory, &box.card(1).memory().host_memory());
  EXPECT_FALSE(box.card(0).memory().owns_host_memory());
  const uint64_t pinned_at_boot = box.cosim().on_sim_thread([&] { return host_memory.pinned_ranges(); });
  const int fd[2] = {driver::hl_open("/dev/hl0"), driver::hl_open("/dev/hl1")};
  ASSERT_GE(fd[0], 0);
  ASSERT_GE(fd[1], 0);
  constexpr uint32_t kBytes = 64 << 10;
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t[], Free> buffers[3];
  for (auto& b : buffers) {
    b.reset(static_cast<uint8_t*>(std::aligned_alloc(kPage, kBytes)));
    std::memset(b.get(), 0, kBytes);
  }
  for (uint32_t i = 0; i < kBytes; ++i) buffers[0][i] = static_cast<uint8_t>(i * 13 + 5);
  // Card 0 copies buffer 0 to buffer 1 through its DRAM, card 1 buffer 1 to buffer 2 through its.
  uint64_t va[2][3] = {};
  for (unsigned card = 0; card < 2; ++card) {
    for (unsigned b = card; b < card + 2; ++b) {
      ASSERT_EQ(hlthunk::host_memory_map(fd[card], buffers[b].get(), kBytes, &va[card][b]), 0) << card << " " << b;
    }
  }
  EXPECT_EQ(box.cosim().on_sim_thread([&] { return host_memory.pinned_ranges(); }), pinned_at_boot + 4);
  const uint64_t dram = box.preset().memory_map().dram_user_base();
  for (unsigned card = 0; card < 2; ++card) {
    for (const bool down : {true, false}) {
      qman::CommandBufferBuilder cb;
      cb.lin_dma(down ? va[card][card] : dram, down ? dram : va[card][card + 1], kBytes);
      hl_cs_chunk chunk{};
      ASSERT_TRUE(external_job(fd[card], down ? uapi::GAUDI_QUEUE_ID_DMA_0_0 : uapi::GAUDI_QUEUE_ID_DMA_1_0,
                               cb.take(), &chunk));
      uint64_t seq = 0;
      uint32_t status = 0;
      ASSERT_EQ(hlthunk::submit(fd[card], {chunk}, &seq), 0);
      ASSERT_EQ(hlthunk::wait(fd[card], seq, 1000000, &status), 0);
      EXPECT_EQ(status, uapi::HL_WAIT_CS_STATUS_COMPLETED);
    }
  }
  EXPECT_EQ(std::memcmp(buffers[0].get(), buffers[2].get(), kBytes), 0);
  EXPECT_EQ(driver::hl_close(fd[0]), 0);
  EXPECT_EQ(driver::hl_close(fd[1]), 0);
  EXPECT_EQ(box.cosim().on_sim_thread([&] { return host_memory.pinned_ranges(); }), pinned_at_boot);
}

TEST(PlatformBox, ABoxOfNoCardsOrTooManyIsRefused) {
  for (const unsigned cards : {0u, 17u}) {
    try {
      Platform box(options(cards));
      FAIL() << cards << " cards were accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("cards = " + std::to_string(cards) + ": a box has 1 to 16 cards"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace hpusim::platform
