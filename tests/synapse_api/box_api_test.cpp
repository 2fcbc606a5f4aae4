// The Synapse C API on a box of cards (HPUSIM_CARDS): the cards are devices 0 .. N-1, each
// acquired on its own, with its own streams, events and memory; a thread driving one device never
// waits for another device's work; two threads running the same step on two cards at once each
// take the device time the step takes alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sim/platform/platform.h"
#include "tests/support/in_child.h"
#include "tests/synapse_api/synapse_fixture.h"

namespace {

using namespace hpusim::synapse_api_testing;

constexpr const char* kOverrides = "hbm.refresh_enabled=false";

// Two cards: devices 0 and 1.
class SynapseBox : public SynapseRuntimeApi {
 protected:
  void SetUp() override {
    setenv("HPUSIM_CARDS", "2", 1);
    ASSERT_EQ(synInitialize(), synSuccess) << error();
    ASSERT_EQ(hpusim_deviceAcquireWithPreset(&device, "hl205", kOverrides), synSuccess) << error();
    ASSERT_EQ(hpusim_deviceAcquireWithPreset(&second, "hl205", kOverrides), synSuccess) << error();
  }
  synDeviceId second = 99;
};

TEST_F(SynapseBox, TheCardsAreDevicesZeroToNMinusOne) {
  EXPECT_EQ(device, 0u);
  EXPECT_EQ(second, 1u);
  uint32_t count = 0;
  ASSERT_EQ(synDeviceGetCount(&count), synSuccess);
  EXPECT_EQ(count, 2u);
  synDeviceId third = 99;
  EXPECT_EQ(hpusim_deviceAcquireWithPreset(&third, "hl205", kOverrides), synDeviceAlreadyAcquired);
  EXPECT_NE(error().find("every device of the box is acquired (2 cards)"), std::string::npos) << error();
  synDeviceInfo info{};
  EXPECT_EQ(synDeviceGetInfo(2, &info), synInvalidArgument);
  EXPECT_NE(error().find("device 2 is not acquired (acquired: 0, 1)"), std::string::npos) << error();

  // The same recipe on either card computes the reference.
  synGraphHandle g = dense_graph();
  synRecipeHandle recipe = nullptr;
  ASSERT_EQ(synGraphCompile(&recipe, g, "dense", nullptr), synSuccess) << error();
  expect_reference(run_on(1, recipe));
  expect_reference(run_on(0, recipe));

  // Streams and events belong to their device.
  synStreamHandle on_second = nullptr;
  synEventHandle on_first = nullptr;
  ASSERT_EQ(synStreamCreateGeneric(&on_second, second, 0), synSuccess);
  ASSERT_EQ(synEventCreate(&on_first, device, 0), synSuccess);
  EXPECT_EQ(synStreamWaitEvent(on_second, on_first, 0), synInvalidArgument);
  EXPECT_NE(error().find("the event is on device 0, the stream on device 1"), std::string::npos) << error();
  EXPECT_EQ(synEventRecord(on_first, on_second), synInvalidArgument);

  // Releasing one card leaves the other working; the next acquire takes the free card.
  ASSERT_EQ(synDeviceRelease(device), synSuccess) << error();
  EXPECT_EQ(synStreamQuery(on_second), synSuccess) << error();
  EXPECT_EQ(synEventQuery(on_first), synInvalidArgument) << "its device was released";
  expect_reference(run_on(1, recipe));
  synDeviceId again = 99;
  ASSERT_EQ(hpusim_deviceAcquireWithPreset(&again, "hl205", kOverrides), synSuccess) << error();
  EXPECT_EQ(again, 0u);
  expect_reference(run_on(0, recipe));
  // The box's size is fixed once it runs.
  ASSERT_EQ(synDeviceRelease(again), synSuccess) << error();
  setenv("HPUSIM_CARDS", "3", 1);
  EXPECT_EQ(hpusim_deviceAcquireWithPreset(&again, "hl205", kOverrides), synNoDeviceFound);
  EXPECT_NE(error().find("this process runs a box of 2 cards; one of 3 cannot be built"), std::string::npos) << error();
  setenv("HPUSIM_CARDS", "2", 1);
  EXPECT_EQ(synStreamDestroy(on_second), synSuccess);
  EXPECT_EQ(synRecipeDestroy(recipe), synSuccess);
  EXPECT_EQ(synGraphDestroy(g), synSuccess);
}

TEST(SynapseBoxEnvironment, ABadCardCountIsRefusedNamingTheVariable) {
  for (const char* bad : {"0", "17", "two", "-1", "2x"}) {
    setenv("HPUSIM_CARDS", bad, 1);
    ASSERT_EQ(synInitialize(), synSuccess) << error();
    uint32_t count = 0;
    EXPECT_EQ(synDeviceGetCount(&count), synInvalidArgument) << bad;
    EXPECT_NE(error().find(std::string("HPUSIM_CARDS='") + bad + "': the number of cards in the box, 1 .. 16"),
              std::string::npos)
        << error();
    synDeviceId id = 99;
    EXPECT_EQ(synDeviceAcquireByDeviceType(&id, synDeviceGaudi), synInvalidArgument) << bad;
    EXPECT_EQ(synDestroy(), synSuccess);
  }
  unsetenv("HPUSIM_CARDS");
}

// What one run of the step reports from a child process.
struct StepReport {
  bool ok = false;
  bool values_ok = false;
  uint64_t device_ns = 0;   // the launch, between events on the compute stream
};

class SynapseBoxThreads : public SynapseRuntimeApi {
 protected:
  void SetUp() override {}      // the children acquire
  void TearDown() override {}

  // In a child process: a box of `cards` cards, the step compiled once, then run on every card
  // at once, each from its own thread on its own host-time track starting at 50 ms.
  std::vector<StepReport> steps_on(unsigned cards) {
    setenv("HPUSIM_CARDS", std::to_string(cards).c_str(), 1);
    std::vector<StepReport> reports(cards);
    if (synInitialize() != synSuccess) return reports;
    std::vector<synDeviceId> ids(cards);
    for (synDeviceId& id : ids) {
      if (hpusim_deviceAcquireWithPreset(&id, "hl205", kOverrides) != synSuccess) return reports;
    }
    synGraphHandle g = dense_graph();
    synRecipeHandle recipe = nullptr;
    if (synGraphCompile(&recipe, g, "dense", nullptr) != synSuccess) return reports;
    hpusim::platform::Platform& box = *hpusim::platform::Platform::current();
    std::vector<unsigned> tracks;
    for (unsigned c = 0; c < cards; ++c) {
      tracks.push_back(box.reserve_host_track("card " + std::to_string(c) + " step", 50'000'000'000ull));
    }
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < cards; ++c) {
      threads.emplace_back([&, c] {
        hpusim::platform::HostThread on(box, tracks[c]);
        StepReport& r = reports[c];
        const std::vector<float> out = run_on(ids[c], recipe, &r.device_ns);
        const std::vector<float> want = reference();
        r.values_ok = out.size() == want.size() && std::memcmp(out.data(), want.data(), out.size() * 4) == 0;
        r.ok = true;
      });
    }
    for (std::thread& t : threads) t.join();
    synDestroy();
    return reports;
  }

  std::vector<StepReport> in_child(unsigned cards) {
    return hpusim::testing::in_child<StepReport>([this, cards] { return steps_on(cards); }, cards);
  }
};

TEST_F(SynapseBoxThreads, TwoThreadsOnTwoCardsEachTakeTheDeviceTimeOfTheStepAlone) {
  const std::vector<StepReport> alone = in_child(1);
  ASSERT_TRUE(alone[0].ok && alone[0].values_ok);
  ASSERT_GT(alone[0].device_ns, 0u);
  const std::vector<StepReport> together = in_child(2);
  for (unsigned c = 0; c < 2; ++c) {
    ASSERT_TRUE(together[c].ok) << "card " << c;
    EXPECT_TRUE(together[c].values_ok) << "card " << c;
    EXPECT_EQ(together[c].device_ns, alone[0].device_ns) << "card " << c << " in the box vs the step alone";
  }
  // Whatever the threads' scheduling, the box gives the same times again.
  const std::vector<StepReport> again = in_child(2);
  for (unsigned c = 0; c < 2; ++c) EXPECT_EQ(again[c].device_ns, together[c].device_ns) << "card " << c;
}

// Two threads on one device, each on its own host-time track: the device's lock is let go while a
// thread waits for the device, so a small copy synchronised by one thread finishes while the
// other still waits for its large one (holding the lock, it would finish after it); the times
// are the same on every run.
struct SharedDeviceReport {
  bool ok = false;
  bool data_ok = false;
  char error[120] = {};
  uint64_t done_ps = 0;   // host time when the thread's synStreamSynchronize returned
};

std::vector<SharedDeviceReport> copies_on_one_device() {
  std::vector<SharedDeviceReport> reports(2);
  const auto fail = [&](unsigned t, const char* what) {
    std::snprintf(reports[t].error, sizeof reports[t].error, "thread %u: %s", t, what);
  };
  synDeviceId id = 0;
  if (synInitialize() != synSuccess || hpusim_deviceAcquireWithPreset(&id, "hl205", kOverrides) != synSuccess) {
    fail(0, "acquire failed");
    return reports;
  }
  // Thread 0 copies 32 MB host -> DRAM (DMA channel 0); thread 1, 20 us later, 64 KB DRAM -> host
  // (channel 1) that the main thread put there first. Buffers are set up beforehand.
  const uint64_t bytes[2] = {32ull << 20, 64ull << 10};
  const synStreamType type[2] = {STREAM_TYPE_COPY_HOST_TO_DEVICE, STREAM_TYPE_COPY_DEVICE_TO_HOST};
  void* host[2] = {};
  uint64_t device[2] = {};
  synStreamHandle stream[2] = {};
  for (unsigned t = 0; t < 2; ++t) {
    if (synStreamCreate(&stream[t], id, type[t], 0) != synSuccess || synHostMalloc(id, bytes[t], 0, &host[t]) != synSuccess ||
        synDeviceMalloc(id, bytes[t], 0, 0, &device[t]) != synSuccess) {
      fail(t, "set-up failed");
      return reports;
    }
  }
  const auto pattern = [](uint64_t i, unsigned t) { return static_cast<uint8_t>(i * 31 + t); };
  for (unsigned t = 0; t < 2; ++t) {
    for (uint64_t i = 0; i < bytes[t]; ++i) static_cast<uint8_t*>(host[t])[i] = pattern(i, t);
  }
  if (synMemCopyAsync(stream[0], reinterpret_cast<uint64_t>(host[1]), bytes[1], device[1], HOST_TO_DRAM) != synSuccess ||
      synStreamSynchronize(stream[0]) != synSuccess) {
    fail(1, "staging failed");
    return reports;
  }
  std::memset(host[1], 0, bytes[1]);
  hpusim::platform::Platform& box = *hpusim::platform::Platform::current();
  constexpr uint64_t kStartPs = 50'000'000'000ull;
  const uint64_t start_ns[2] = {0, 20000};
  std::vector<unsigned> tracks;
  for (unsigned t = 0; t < 2; ++t) tracks.push_back(box.reserve_host_track("copier " + std::to_string(t), kStartPs));
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      hpusim::platform::HostThread on(box, tracks[t]);
      box.cosim().charge_ns(start_ns[t]);
      const uint64_t h = reinterpret_cast<uint64_t>(host[t]);
      const bool copied = t == 0 ? synMemCopyAsync(stream[t], h, bytes[t], device[t], HOST_TO_DRAM) == synSuccess
                                 : synMemCopyAsync(stream[t], device[t], bytes[t], h, DRAM_TO_HOST) == synSuccess;
      if (!copied || synStreamSynchronize(stream[t]) != synSuccess) {
        fail(t, "copy failed");
        return;
      }
      reports[t].done_ps = box.host_now_ps();
      reports[t].ok = true;
    });
  }
  for (std::thread& t : threads) t.join();
  // Both copies moved the right bytes: thread 1's is in its buffer, thread 0's comes back.
  std::vector<uint8_t> back(bytes[0]);
  void* staging = nullptr;
  if (synHostMalloc(id, bytes[0], 0, &staging) != synSuccess ||
      synMemCopyAsync(stream[1], device[0], bytes[0], reinterpret_cast<uint64_t>(staging), DRAM_TO_HOST) != synSuccess ||
      synStreamSynchronize(stream[1]) != synSuccess) {
    fail(0, "reading back failed");
    return reports;
  }
  for (unsigned t = 0; t < 2; ++t) {
    const auto* got = static_cast<const uint8_t*>(t == 0 ? staging : host[1]);
    bool same = true;
    for (uint64_t i = 0; i < bytes[t] && same; ++i) same = got[i] == pattern(i, t);
    reports[t].data_ok = same;
  }
  synDestroy();
  return reports;
}

TEST(SynapseDeviceThreads, AThreadWaitingForTheDeviceDoesNotKeepAnotherThreadOffIt) {
  const auto run = [] {
    return hpusim::testing::in_child<SharedDeviceReport>(copies_on_one_device, 2, [](const char* what) {
      std::vector<SharedDeviceReport> reports(2);
      std::snprintf(reports[0].error, sizeof reports[0].error, "%s", what);
      return reports;
    });
  };
  const std::vector<SharedDeviceReport> first = run();
  for (unsigned t = 0; t < 2; ++t) {
    ASSERT_TRUE(first[t].ok) << first[t].error;
    EXPECT_TRUE(first[t].data_ok) << t;
  }
  EXPECT_LT(first[1].done_ps, first[0].done_ps);
  const std::vector<SharedDeviceReport> again = run();
  for (unsigned t = 0; t < 2; ++t) {
    ASSERT_TRUE(again[t].ok) << again[t].error;
    EXPECT_EQ(again[t].done_ps, first[t].done_ps) << "thread " << t;
  }
}

}  // namespace
