// The fixture of the Synapse C API tests: a device acquired on a simulated hl205 and the
// dense + bias + relu step built, compiled and run through the API only (streams, events,
// copies, a memset), with its C++ reference.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hw/mme/mme_compute.h"
#include "synapse_api.h"

namespace hpusim::synapse_api_testing {

constexpr uint32_t kM = 64, kN = 48, kK = 40;

inline synTensorDescriptor descriptor(const char* name, std::vector<unsigned> sizes) {
  synTensorDescriptor d{};
  d.m_dataType = syn_type_single;
  d.m_dims = static_cast<unsigned>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) d.m_sizes[i] = sizes[i];
  d.m_name = name;
  return d;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::string error() { return hpusim_lastErrorMessage(); }

class SynapseRuntimeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(synInitialize(), synSuccess) << error();
    ASSERT_EQ(hpusim_deviceAcquireWithPreset(&device, "hl205", "hbm.refresh_enabled=false"), synSuccess) << error();
  }
  void TearDown() override { EXPECT_EQ(synDestroy(), synSuccess) << error(); }

  // out = relu(x w + bias) through the API.
  synGraphHandle dense_graph() {
    synGraphHandle g = nullptr;
    EXPECT_EQ(synGraphCreate(&g, synDeviceGaudi), synSuccess);
    synTensor x, w, bias, y, z, out;
    // Each persistent tensor in a section of its own (tensors of one section share its memory
    // by their offsets).
    auto make = [&](synTensor* t, const char* name, std::vector<unsigned> sizes, bool persistent) {
      synSectionHandle section = nullptr;
      if (persistent) {
        EXPECT_EQ(synSectionCreate(&section, 0, g), synSuccess);
      }
      const synTensorDescriptor d = descriptor(name, sizes);
      EXPECT_EQ(synTensorCreate(t, &d, section, 0), synSuccess) << error();
    };
    make(&x, "x", {kK, kM}, true);
    make(&w, "w", {kN, kK}, true);
    make(&bias, "bias", {kN, 1}, true);
    make(&y, "y", {kN, kM}, false);
    make(&z, "z", {kN, kM}, false);
    make(&out, "out", {kN, kM}, true);
    hpusim_GemmParams gemm{0, 0};
    synTensor in1[] = {x, w}, out1[] = {y};
    EXPECT_EQ(synNodeCreate(g, in1, out1, 2, 1, &gemm, sizeof gemm, "gemm", "fc", nullptr, nullptr), synSuccess) << error();
    synTensor in2[] = {y, bias}, out2[] = {z};
    EXPECT_EQ(synNodeCreate(g, in2, out2, 2, 1, nullptr, 0, "add_fwd_f32", "bias_add", nullptr, nullptr), synSuccess);
    synTensor in3[] = {z}, out3[] = {out};
    EXPECT_EQ(synNodeCreate(g, in3, out3, 1, 1, nullptr, 0, "relu_fwd_f32", "act", nullptr, nullptr), synSuccess);
    return g;
  }

  std::vector<float> reference() const {
    std::vector<float> y(kM * kN);
    hpusim::mme::gemm_f32_reference(x.data(), kK, w.data(), kN, y.data(), kN, kM, kN, kK);
    for (uint32_t i = 0; i < kM; ++i) {
      for (uint32_t j = 0; j < kN; ++j) {
        const float v = y[i * kN + j] + bias[j];
        y[i * kN + j] = v <= 0.0f ? 0.0f : v;
      }
    }
    return y;
  }

  // Copies in on a host-to-device stream, launches on a compute stream after an event, copies
  // out on a device-to-host stream after another; returns the output. The inputs are copied from
  // x, w and bias, or from `inputs` (the same values anywhere in memory) when given.
  struct Inputs {
    const float* x;
    const float* w;
    const float* bias;
  };
  std::vector<float> run(synRecipeHandle recipe, uint64_t* device_ns = nullptr, const Inputs* inputs = nullptr) {
    return run_on(device, recipe, device_ns, inputs);
  }
  // The same on device `dev`.
  std::vector<float> run_on(synDeviceId dev, synRecipeHandle recipe, uint64_t* device_ns = nullptr,
                            const Inputs* inputs = nullptr) {
    const Inputs from = inputs != nullptr ? *inputs : Inputs{x.data(), w.data(), bias.data()};
    synStreamHandle down, compute, up;
    EXPECT_EQ(synStreamCreate(&down, dev, STREAM_TYPE_COPY_HOST_TO_DEVICE, 0), synSuccess);
    EXPECT_EQ(synStreamCreateGeneric(&compute, dev, 0), synSuccess);
    EXPECT_EQ(synStreamCreate(&up, dev, STREAM_TYPE_COPY_DEVICE_TO_HOST, 0), synSuccess);
    uint64_t dx, dw, db, dout, workspace = 0, ws_size = 0;
    EXPECT_EQ(synDeviceMalloc(dev, x.size() * 4, 0, 0, &dx), synSuccess);
    EXPECT_EQ(synDeviceMalloc(dev, w.size() * 4, 0, 0, &dw), synSuccess);
    EXPECT_EQ(synDeviceMalloc(dev, bias.size() * 4, 0, 0, &db), synSuccess);
    EXPECT_EQ(synDeviceMalloc(dev, kM * kN * 4, 0, 0, &dout), synSuccess);
    EXPECT_EQ(synWorkspaceGetSize(&ws_size, recipe), synSuccess);
    // The intermediates fit the SRAM arena, so there is no workspace to allocate.
    EXPECT_EQ(ws_size, 0u);
    // The output starts as garbage the launch must overwrite.
    EXPECT_EQ(synMemsetD32Async(dout, 0x7FC00001u, kM * kN, down), synSuccess) << error();
    EXPECT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(from.x), x.size() * 4, dx, HOST_TO_DRAM), synSuccess);
    EXPECT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(from.w), w.size() * 4, dw, HOST_TO_DRAM), synSuccess);
    EXPECT_EQ(synMemCopyAsync(down, reinterpret_cast<uint64_t>(from.bias), bias.size() * 4, db, HOST_TO_DRAM),
              synSuccess);
    synEventHandle copied, start, done;
    EXPECT_EQ(synEventCreate(&copied, dev, 0), synSuccess);
    EXPECT_EQ(synEventCreate(&start, dev, EVENT_COLLECT_TIME), synSuccess);
    EXPECT_EQ(synEventCreate(&done, dev, EVENT_COLLECT_TIME), synSuccess);
    EXPECT_EQ(synEventRecord(copied, down), synSuccess);
    EXPECT_EQ(synStreamWaitEvent(compute, copied, 0), synSuccess);
    EXPECT_EQ(synEventRecord(start, compute), synSuccess) << error();
    const synLaunchTensorInfo infos[] = {{"x", dx, DATA_TENSOR, {0}, 0},
                                         {"w", dw, DATA_TENSOR, {0}, 0},
                                         {"bias", db, DATA_TENSOR, {0}, 0},
                                         {"out", dout, DATA_TENSOR, {0}, 0}};
    EXPECT_EQ(synLaunch(compute, infos, 4, workspace, recipe, 0), synSuccess) << error();
    EXPECT_EQ(synEventRecord(done, compute), synSuccess);
    EXPECT_EQ(synStreamWaitEvent(up, done, 0), synSuccess);
    std::vector<float> out(kM * kN, -1.0f);
    EXPECT_EQ(synMemCopyAsync(up, dout, out.size() * 4, reinterpret_cast<uint64_t>(out.data()), DRAM_TO_HOST),
              synSuccess);
    EXPECT_EQ(synStreamSynchronize(up), synSuccess) << error();
    EXPECT_EQ(synStreamQuery(up), synSuccess);
    EXPECT_EQ(synEventQuery(done), synSuccess);
    uint64_t ns = 0;
    EXPECT_EQ(synEventElapsedTime(&ns, start, done), synSuccess) << error();
    EXPECT_GT(ns, 0u);
    if (device_ns) *device_ns = ns;
    EXPECT_EQ(synDeviceSynchronize(dev), synSuccess);
    for (uint64_t a : {dx, dw, db, dout}) EXPECT_EQ(synDeviceFree(dev, a, 0), synSuccess);
    for (synStreamHandle s : {down, compute, up}) EXPECT_EQ(synStreamDestroy(s), synSuccess);
    for (synEventHandle e : {copied, start, done}) EXPECT_EQ(synEventDestroy(e), synSuccess);
    return out;
  }

  void expect_reference(const std::vector<float>& out) const {
    const std::vector<float> want = reference();
    ASSERT_EQ(out.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(std::memcmp(&out[i], &want[i], 4), 0) << "element " << i;
  }

  synDeviceId device = 99;
  std::vector<float> x = random_floats(kM * kK, 1), w = random_floats(kK * kN, 2), bias = random_floats(kN, 3);
};

}  // namespace hpusim::synapse_api_testing
