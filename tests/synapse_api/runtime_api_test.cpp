// The Synapse C API end to end on a simulated hl205: a dense + bias + relu graph built, compiled
// and launched through the API only, with streams, events, copies and a memset; the result bit
// for bit against a C++ reference; the recipe cache's counters on a recompile; recipes through
// files (and a corrupt file refused); and the errors of the lifecycle and launch calls.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/in_child.h"
#include "tests/synapse_api/synapse_fixture.h"

namespace {

using namespace hpusim::synapse_api_testing;

TEST_F(SynapseRuntimeApi, DenseReluThroughStreamsAndEventsMatchesTheReference) {
  EXPECT_EQ(device, 0u);
  synGraphHandle g = dense_graph();
  synRecipeHandle recipe = nullptr;
  ASSERT_EQ(synGraphCompile(&recipe, g, "dense", nullptr), synSuccess) << error();
  uint64_t ns = 0;
  expect_reference(run(recipe, &ns));
  uint64_t launch_ns = 0;
  ASSERT_EQ(hpusim_lastLaunchDeviceTime(&launch_ns), synSuccess) << error();
  EXPECT_GT(launch_ns, 0u);
  EXPECT_EQ(synRecipeDestroy(recipe), synSuccess);
  EXPECT_EQ(synGraphDestroy(g), synSuccess);
}

// Where the caller's buffers sit in memory does not change the card's work or the host's: the same
// step, with its inputs at page offsets 0, 8, 100 and 4092, takes the same launch time and the
// same host time and computes the same values. Each offset runs in a child process on a card of
// its own (one platform per process), so the runs differ in nothing but the offset.
class SynapseAlignment : public SynapseRuntimeApi {
 protected:
  void SetUp() override {}      // the children acquire
  void TearDown() override {}

  struct Outcome {
    uint64_t launch_ns = 0;
    uint64_t host_ns = 0;
    bool values_ok = false;
  };
  // In a child process: warm-up steps, then the step with its inputs at `offset`.
  Outcome step_with_inputs_at(size_t offset) {
    SynapseRuntimeApi::SetUp();
    synGraphHandle g = dense_graph();
    synRecipeHandle recipe = nullptr;
    Outcome o;
    if (synGraphCompile(&recipe, g, "dense", nullptr) != synSuccess) return o;
    run(recipe);   // the first launch loads the recipe and warms the caches
    run(recipe);
    constexpr size_t kPage = 4096;
    std::vector<std::vector<uint8_t>> storage;
    auto place = [&](const std::vector<float>& values) {
      storage.emplace_back(values.size() * 4 + 2 * kPage);
      const uintptr_t base = reinterpret_cast<uintptr_t>(storage.back().data());
      float* at = reinterpret_cast<float*>((base + kPage - 1) / kPage * kPage + offset);
      std::memcpy(at, values.data(), values.size() * 4);
      return static_cast<const float*>(at);
    };
    const Inputs inputs{place(x), place(w), place(bias)};
    uint64_t before = 0, after = 0;
    hpusim_hostTimeNs(&before);
    const std::vector<float> out = run(recipe, nullptr, &inputs);
    hpusim_hostTimeNs(&after);
    hpusim_lastLaunchDeviceTime(&o.launch_ns);
    o.host_ns = after - before;
    const std::vector<float> want = reference();
    o.values_ok = out.size() == want.size() && std::memcmp(out.data(), want.data(), out.size() * 4) == 0;
    return o;
  }
};

TEST_F(SynapseAlignment, TheCallersBufferAlignmentChangesNoTime) {
  std::vector<std::pair<size_t, Outcome>> outcomes;
  for (size_t offset : {size_t{0}, size_t{8}, size_t{100}, size_t{4092}}) {
    const Outcome o = hpusim::testing::in_child<Outcome>([&] { return std::vector<Outcome>{step_with_inputs_at(offset)}; }, 1)[0];
    EXPECT_TRUE(o.values_ok) << "offset " << offset;
    EXPECT_GT(o.launch_ns, 0u);
    outcomes.emplace_back(offset, o);
  }
  for (const auto& [offset, o] : outcomes) {
    EXPECT_EQ(o.launch_ns, outcomes[0].second.launch_ns) << "launch time with inputs at page offset " << offset;
    EXPECT_EQ(o.host_ns, outcomes[0].second.host_ns) << "host time with inputs at page offset " << offset;
  }
}

// synStreamWaitEvent orders on the device: the compute stream's launch waits for the copies
// behind a monitor and a fence, while the host goes on at once (it does not wait for the copy).
TEST_F(SynapseRuntimeApi, AStreamWaitsForAnEventOnTheDeviceNotOnTheHost) {
  synGraphHandle g = dense_graph();
  synRecipeHandle recipe = nullptr;
  ASSERT_EQ(synGraphCompile(&recipe, g, nullptr, nullptr), synSuccess) << error();
  synStreamHandle down, compute, up;
  ASSERT_EQ(synStreamCreate(&down, device, STREAM_TYPE_COPY_HOST_TO_DEVICE, 0), synSuccess);
  ASSERT_EQ(synStreamCreateGeneric(&compute, device, 0), synSuccess);
  ASSERT_EQ(synStreamCreate(&up, device, STREAM_TYPE_COPY_DEVICE_TO_HOST, 0), synSuccess);
  uint64_t dx, dw, db, dout, scratch;
  ASSERT_EQ(synDeviceMalloc(device, x.size() * 4, 0, 0, &dx), synSuccess);
  ASSERT_EQ(synDeviceMalloc(device, w.size() * 4, 0, 0, &dw), synSuccess);
  ASSERT_EQ(synDeviceMalloc(device, bias.size() * 4, 0, 0, &db), synSuccess);
  ASSERT_EQ(synDeviceMalloc(device, kM * kN * 4, 0, 0, &dout), synSuccess);
  const std::vector<uint8_t> big(8u << 20, 0x5A);   // keeps the copy stream busy for a while
  ASSERT_EQ(synDeviceMalloc(device, big.size(), 0, 0, &scratch), synSuccess);
  const synLaunchTensorInfo infos[] = {{"x", dx, DATA_TENSOR, {0}, 0},
                                       {"w", dw, DATA_TENSOR, {0}, 0},
                                       {"bias", db, DATA_TENSOR, {0}, 0},
                                       {"out", dout, DATA_TENSOR, {0}, 0}};
  // Warm: the recipe loaded, the staging buffers mapped. Then x becomes garbage: a launch that
  // did not wait for its copy would compute with it.
  ASSERT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(big.data()), big.size(), scratch, HOST_TO_DRAM), synSuccess);
  ASSERT_EQ(synLaunch(compute, infos, 4, 0, recipe, 0), synSuccess) << error();
  ASSERT_EQ(synMemsetD32Async(dx, 0x7FC00001u, kM * kK, compute), synSuccess) << error();
  ASSERT_EQ(synDeviceSynchronize(device), synSuccess);

  synEventHandle start, copied, done;
  ASSERT_EQ(synEventCreate(&start, device, EVENT_COLLECT_TIME), synSuccess);
  ASSERT_EQ(synEventCreate(&copied, device, EVENT_COLLECT_TIME), synSuccess);
  ASSERT_EQ(synEventCreate(&done, device, EVENT_COLLECT_TIME), synSuccess);
  ASSERT_EQ(synEventRecord(start, up), synSuccess);   // an idle stream: the host time of the record
  uint64_t host_start = 0, host_after_launch = 0;
  ASSERT_EQ(hpusim_hostTimeNs(&host_start), synSuccess);
  ASSERT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(big.data()), big.size(), scratch, HOST_TO_DRAM), synSuccess);
  ASSERT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(x.data()), x.size() * 4, dx, HOST_TO_DRAM), synSuccess);
  ASSERT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(w.data()), w.size() * 4, dw, HOST_TO_DRAM), synSuccess);
  ASSERT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(bias.data()), bias.size() * 4, db, HOST_TO_DRAM),
            synSuccess);
  ASSERT_EQ(synEventRecord(copied, down), synSuccess) << error();
  ASSERT_EQ(synStreamWaitEvent(compute, copied, 0), synSuccess);
  ASSERT_EQ(synLaunch(compute, infos, 4, 0, recipe, 0), synSuccess) << error();
  ASSERT_EQ(hpusim_hostTimeNs(&host_after_launch), synSuccess);
  EXPECT_EQ(synStreamQuery(compute), synBusy);
  ASSERT_EQ(synEventRecord(done, compute), synSuccess);
  ASSERT_EQ(synStreamWaitEvent(up, done, 0), synSuccess);
  std::vector<float> out(kM * kN, -1.0f);
  ASSERT_EQ(synMemCopyAsync(up, dout, out.size() * 4, reinterpret_cast<uint64_t>(out.data()), DRAM_TO_HOST), synSuccess);
  ASSERT_EQ(synStreamSynchronize(up), synSuccess) << error();
  expect_reference(out);   // the launch read the copied x, w and bias

  uint64_t copy_ns = 0, launch_ns = 0;
  ASSERT_EQ(synEventElapsedTime(&copy_ns, start, copied), synSuccess) << error();
  ASSERT_EQ(synEventElapsedTime(&launch_ns, copied, done), synSuccess) << error();
  // The copies took a while (8 MB over PCIe); the host had submitted the launch long before they
  // were done, and the launch still finished after them.
  EXPECT_GT(copy_ns, 200000u);
  EXPECT_LT(host_after_launch - host_start, copy_ns / 2);
  EXPECT_GT(launch_ns, 0u);
  for (synStreamHandle st : {down, compute, up}) EXPECT_EQ(synStreamDestroy(st), synSuccess);
  for (synEventHandle e : {start, copied, done}) EXPECT_EQ(synEventDestroy(e), synSuccess);
}

TEST_F(SynapseRuntimeApi, ASecondCompileOfTheSameGraphIsACacheHit) {
  synGraphHandle a = dense_graph(), b = dense_graph();
  synRecipeHandle ra = nullptr, rb = nullptr;
  ASSERT_EQ(synGraphCompile(&ra, a, nullptr, nullptr), synSuccess) << error();
  ASSERT_EQ(synGraphCompile(&rb, b, nullptr, nullptr), synSuccess) << error();
  hpusim_CompileCounters c{};
  ASSERT_EQ(hpusim_compileCounters(&c), synSuccess);
  EXPECT_EQ(c.compiles, 1u);
  EXPECT_EQ(c.cacheMisses, 1u);
  EXPECT_EQ(c.cacheHits, 1u);
  expect_reference(run(rb));
}

TEST_F(SynapseRuntimeApi, RecipesGoThroughFilesAndACorruptFileIsRefused) {
  synGraphHandle g = dense_graph();
  synRecipeHandle recipe = nullptr, back = nullptr;
  ASSERT_EQ(synGraphCompile(&recipe, g, nullptr, nullptr), synSuccess) << error();
  const std::string path = testing::TempDir() + "dense.recipe";
  ASSERT_EQ(synRecipeSerialize(recipe, path.c_str()), synSuccess) << error();
  ASSERT_EQ(synRecipeDeSerialize(&back, path.c_str()), synSuccess) << error();
  expect_reference(run(back));

  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(40);
  f.put('\x5a');
  f.close();
  synRecipeHandle bad = nullptr;
  EXPECT_EQ(synRecipeDeSerialize(&bad, path.c_str()), synInvalidArgument);
  EXPECT_NE(error().find("checksum mismatch"), std::string::npos) << error();
  std::remove(path.c_str());
}

TEST_F(SynapseRuntimeApi, LaunchErrorsNameTheTensor) {
  synGraphHandle g = dense_graph();
  synRecipeHandle recipe = nullptr;
  ASSERT_EQ(synGraphCompile(&recipe, g, nullptr, nullptr), synSuccess) << error();
  synStreamHandle s;
  ASSERT_EQ(synStreamCreateGeneric(&s, device, 0), synSuccess);
  uint64_t a = 0;
  ASSERT_EQ(synDeviceMalloc(device, kM * kN * 4, 0, 0, &a), synSuccess);
  const synLaunchTensorInfo some[] = {{"x", a, DATA_TENSOR, {0}, 0}};
  EXPECT_EQ(synLaunch(s, some, 1, 0, recipe, 0), synInvalidArgument);
  EXPECT_NE(error().find("no address for persistent tensor 'w'"), std::string::npos) << error();
  const synLaunchTensorInfo unknown[] = {{"nope", a, DATA_TENSOR, {0}, 0}};
  EXPECT_EQ(synLaunch(s, unknown, 1, 0, recipe, 0), synInvalidArgument);
  EXPECT_NE(error().find("no persistent tensor 'nope'"), std::string::npos) << error();
  uint64_t ns = 0;
  EXPECT_EQ(hpusim_lastLaunchDeviceTime(&ns), synObjectNotInitialized);
}

TEST_F(SynapseRuntimeApi, MemsetsFillWithTheirPatterns) {
  synStreamHandle s;
  ASSERT_EQ(synStreamCreateGeneric(&s, device, 0), synSuccess);
  uint64_t a = 0;
  ASSERT_EQ(synDeviceMalloc(device, 64, 0, 0, &a), synSuccess);
  std::vector<uint8_t> out(64, 0);
  ASSERT_EQ(synMemsetD32Async(a, 0xA1B2C3D4u, 16, s), synSuccess) << error();
  ASSERT_EQ(synMemsetD16Async(a, 0x5566, 8, s), synSuccess) << error();   // the first 16 bytes
  ASSERT_EQ(synMemsetD8Async(a + 16, 0x7F, 8, s), synSuccess) << error();  // the next 8
  ASSERT_EQ(synMemCopyAsync(s, a, 64, reinterpret_cast<uint64_t>(out.data()), DRAM_TO_HOST), synSuccess);
  ASSERT_EQ(synStreamSynchronize(s), synSuccess);
  for (size_t i = 0; i < 16; i += 2) EXPECT_EQ(out[i] | (out[i + 1] << 8), 0x5566) << i;
  for (size_t i = 16; i < 24; ++i) EXPECT_EQ(out[i], 0x7F) << i;
  for (size_t i = 24; i < 64; i += 4) {
    EXPECT_EQ(uint32_t(out[i]) | uint32_t(out[i + 1]) << 8 | uint32_t(out[i + 2]) << 16 | uint32_t(out[i + 3]) << 24,
              0xA1B2C3D4u)
        << i;
  }
  EXPECT_EQ(synMemsetD8Async(a, 1, 3, s), synInvalidArgument) << "3 bytes: not a multiple of 4";
  EXPECT_NE(error().find("synMemsetD8Async"), std::string::npos) << error();
}

// A handle of one kind passed where another kind is expected is refused, whichever part of the
// API made it: every handle is a different number.
TEST_F(SynapseRuntimeApi, AHandleOfTheWrongKindIsRefused) {
  synGraphHandle g = dense_graph();
  synStreamHandle stream = nullptr;
  ASSERT_EQ(synStreamCreateGeneric(&stream, device, 0), synSuccess);
  synEventHandle event = nullptr;
  ASSERT_EQ(synEventCreate(&event, device, 0), synSuccess);
  synRecipeHandle recipe = nullptr;
  ASSERT_EQ(synGraphCompile(&recipe, g, "dense", nullptr), synSuccess) << error();
  const uint64_t handles[] = {reinterpret_cast<uint64_t>(g), reinterpret_cast<uint64_t>(stream),
                              reinterpret_cast<uint64_t>(event), reinterpret_cast<uint64_t>(recipe)};
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = i + 1; j < 4; ++j) EXPECT_NE(handles[i], handles[j]);
  }
  // Every handle made so far, as a stream, an event, a recipe and a graph, where it is not one.
  for (uint64_t h : handles) {
    if (h != handles[1]) {
      EXPECT_EQ(synStreamSynchronize(reinterpret_cast<synStreamHandle>(h)), synInvalidArgument) << h;
    }
    if (h != handles[2]) {
      EXPECT_EQ(synEventQuery(reinterpret_cast<synEventHandle>(h)), synInvalidArgument) << h;
    }
    uint64_t size = 0;
    if (h != handles[3]) {
      EXPECT_EQ(synWorkspaceGetSize(&size, reinterpret_cast<synRecipeHandle>(h)), synInvalidArgument) << h;
    }
    if (h != handles[0]) {
      EXPECT_NE(synGraphDestroy(reinterpret_cast<synGraphHandle>(h)), synSuccess) << h;
    }
  }
  EXPECT_EQ(synRecipeDestroy(recipe), synSuccess);
  EXPECT_EQ(synEventDestroy(event), synSuccess);
  EXPECT_EQ(synStreamDestroy(stream), synSuccess);
  EXPECT_EQ(synGraphDestroy(g), synSuccess);
}

// One platform per process: after a release, the same card can be acquired again, another cannot.
TEST_F(SynapseRuntimeApi, AnotherCardInTheSameProcessIsRefusedNamingBoth) {
  ASSERT_EQ(synDeviceRelease(device), synSuccess);
  EXPECT_EQ(hpusim_deviceAcquireWithPreset(&device, "hl225", ""), synNoDeviceFound);
  const std::string message = error();
  EXPECT_NE(message.find("preset 'hl205' --set hbm.refresh_enabled=false"), std::string::npos) << message;
  EXPECT_NE(message.find("preset 'hl225'"), std::string::npos) << message;
  EXPECT_NE(message.find("one platform per process"), std::string::npos) << message;
  EXPECT_EQ(hpusim_deviceAcquireWithPreset(&device, "hl205", "hbm.refresh_enabled=false"), synSuccess) << error();
}

// A copy larger than any card's memory is refused at once (it is not staged, nor looped over).
TEST_F(SynapseRuntimeApi, AnImpossiblyLargeCopyIsRefused) {
  synStreamHandle stream = nullptr;
  ASSERT_EQ(synStreamCreateGeneric(&stream, device, 0), synSuccess);
  uint64_t dst = 0;
  ASSERT_EQ(synDeviceMalloc(device, 4096, 0, 0, &dst), synSuccess);
  std::vector<uint8_t> host(4096, 1);
  EXPECT_NE(synMemCopyAsync(stream, reinterpret_cast<uint64_t>(host.data()), uint64_t{1} << 63, dst, HOST_TO_DRAM),
            synSuccess);
  EXPECT_NE(error().find("9223372036854775808 bytes"), std::string::npos) << error();
  EXPECT_EQ(synMemCopyAsync(stream, reinterpret_cast<uint64_t>(host.data()), host.size(), dst, HOST_TO_DRAM), synSuccess);
  EXPECT_EQ(synStreamSynchronize(stream), synSuccess) << error();
  EXPECT_EQ(synStreamDestroy(stream), synSuccess);
}

TEST_F(SynapseRuntimeApi, LifecycleErrors) {
  EXPECT_EQ(synInitialize(), synObjectAlreadyInitialized);
  synDeviceId other = 0;
  EXPECT_EQ(synDeviceAcquireByDeviceType(&other, synDeviceGaudi), synDeviceAlreadyAcquired);
  EXPECT_EQ(synDeviceAcquireByDeviceType(&other, synDeviceGaudi2), synDeviceTypeMismatch);
  uint64_t free = 0, total = 0;
  ASSERT_EQ(synDeviceGetMemoryInfo(device, &free, &total), synSuccess);
  EXPECT_GT(total, 0u);
  EXPECT_EQ(free, total);
  uint64_t big = 0;
  EXPECT_EQ(synDeviceMalloc(device, total + 1, 0, 0, &big), synOutOfDeviceMemory);
  EXPECT_EQ(synDeviceFree(device, 12345, 0), synFailedToFreeDeviceMemory);
  synDeviceInfo info{};
  ASSERT_EQ(synDeviceGetInfo(device, &info), synSuccess);
  EXPECT_EQ(info.tpcEnabledMask, 0xFFu);
  EXPECT_EQ(info.deviceType, synDeviceGaudi);
  EXPECT_EQ(synDeviceGetInfo(1, &info), synInvalidArgument);
  EXPECT_EQ(synDeviceRelease(device), synSuccess);
  EXPECT_EQ(synDeviceGetInfo(device, &info), synNoDeviceFound);
  synGraphHandle g = dense_graph();
  synRecipeHandle recipe = nullptr;
  EXPECT_EQ(synGraphCompile(&recipe, g, nullptr, nullptr), synNoDeviceFound);
}

}  // namespace

// The card type comes from the card (its generation, through the firmware and the driver's
// HW_IP_INFO device ID): an hl225 box has Gaudi2 cards.
TEST(SynapseDeviceType, ComesFromTheCardsGeneration) {
  setenv("HPUSIM_PRESET", "hl225", 1);
  setenv("HPUSIM_SET", "hbm.refresh_enabled=false", 1);
  ASSERT_EQ(synInitialize(), synSuccess);
  synDeviceId device = 99, other = 99;
  EXPECT_EQ(synDeviceAcquireByDeviceType(&device, synDeviceGaudi), synDeviceTypeMismatch);
  EXPECT_EQ(std::string(hpusim_lastErrorMessage()),
            "synDeviceAcquireByDeviceType: the box's cards are synDeviceGaudi2, not synDeviceGaudi");
  ASSERT_EQ(synDeviceAcquireByDeviceType(&device, synDeviceGaudi2), synSuccess) << hpusim_lastErrorMessage();
  synDeviceInfo info{};
  ASSERT_EQ(synDeviceGetInfo(device, &info), synSuccess);
  EXPECT_EQ(info.deviceType, synDeviceGaudi2);
  EXPECT_EQ(synDeviceAcquireByDeviceType(&other, synDeviceGaudi3), synDeviceTypeMismatch);
  EXPECT_EQ(synDeviceRelease(device), synSuccess);
  EXPECT_EQ(synDestroy(), synSuccess);
}

// hpusim_deviceBusyNs counts the device's work (copies and launches), not the time it waits for
// the host: the same step twice, with 2 ms of host-only work between, adds about the same busy
// time twice (the memory's state and the buffers' addresses differ between the runs: within 5 %),
// not 2 ms more.
TEST_F(SynapseRuntimeApi, DeviceBusyTimeCountsTheDevicesWorkNotItsWaits) {
  synGraphHandle g = dense_graph();
  synRecipeHandle recipe = nullptr;
  ASSERT_EQ(synGraphCompile(&recipe, g, "dense", nullptr), synSuccess) << error();
  run(recipe);   // the first launch loads the recipe
  uint64_t busy0 = 0, busy1 = 0, busy2 = 0, host0 = 0, host1 = 0, launch_ns = 0;
  ASSERT_EQ(hpusim_deviceBusyNs(device, &busy0), synSuccess) << error();
  hpusim_hostTimeNs(&host0);
  expect_reference(run(recipe));
  hpusim_hostTimeNs(&host1);
  ASSERT_EQ(hpusim_deviceBusyNs(device, &busy1), synSuccess) << error();
  ASSERT_EQ(hpusim_lastLaunchDeviceTime(&launch_ns), synSuccess) << error();
  EXPECT_GE(busy1 - busy0, launch_ns);            // the launch and the copies
  EXPECT_LT(busy1 - busy0, host1 - host0);        // the host's own work is not device time
  ASSERT_EQ(hpusim_hostWork(device, HPUSIM_HOST_CPU_FALLBACK_OP, 100, "host only"), synSuccess) << error();
  expect_reference(run(recipe));
  ASSERT_EQ(hpusim_deviceBusyNs(device, &busy2), synSuccess) << error();
  EXPECT_NEAR(static_cast<double>(busy2 - busy1), static_cast<double>(busy1 - busy0), 0.05 * (busy1 - busy0));
  EXPECT_EQ(hpusim_deviceBusyNs(device, nullptr), synInvalidArgument);
  EXPECT_EQ(hpusim_hostWork(device, static_cast<hpusim_HostWork>(9), 1, "x"), synInvalidArgument);
  EXPECT_EQ(error(), "hpusim_hostWork: unknown host work 9");
  EXPECT_EQ(synRecipeDestroy(recipe), synSuccess);
  EXPECT_EQ(synGraphDestroy(g), synSuccess);
}
