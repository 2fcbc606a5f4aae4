// Runs TPC library kernels on the functional executor over f32 / i32 host tensors, for comparing
// the reference's operations with the device's bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::zoo_reference::test_support {

using tpc_kernels::testing::HostTensor;

inline HostTensor f32_tensor(std::vector<uint32_t> shape, const std::vector<float>& values) {
  HostTensor t(tpc::DType::F32, std::move(shape));
  EXPECT_EQ(t.count(), values.size());
  for (size_t i = 0; i < values.size() && i < t.count(); ++i) t.data[i] = tpc_kernels::testing::bits_of(values[i]);
  return t;
}

inline HostTensor i32_tensor(std::vector<uint32_t> shape, const std::vector<int32_t>& values) {
  HostTensor t(tpc::DType::I32, std::move(shape));
  for (size_t i = 0; i < values.size() && i < t.count(); ++i) t.data[i] = static_cast<uint32_t>(values[i]);
  return t;
}

inline HostTensor f32_output(std::vector<uint32_t> shape) { return HostTensor(tpc::DType::F32, std::move(shape)); }

inline std::vector<float> values_of(const HostTensor& t) {
  std::vector<float> v(t.count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.at(i);
  return v;
}

// The outputs of `guid` on 2 cores; an empty vector (and a test failure) if it does not run.
inline std::vector<HostTensor> run_device(const std::string& guid, const std::vector<HostTensor>& inputs,
                                          std::vector<HostTensor> outputs, const std::vector<float>& scalars = {}) {
  const auto outcome = tpc_kernels::testing::run_kernel(guid, inputs, outputs, 2, scalars);
  if (!outcome.ok) {
    ADD_FAILURE() << guid << ": " << outcome.error;
    return {};
  }
  return outputs;
}

// Bit-for-bit comparison, reporting the first few differences.
inline void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i)
    if (tpc_kernels::testing::bits_of(got[i]) != tpc_kernels::testing::bits_of(want[i])) {
      ++bad;
      ADD_FAILURE() << what << " element " << i << ": reference " << got[i] << ", device " << want[i];
    }
}

}  // namespace hpusim::synapse::zoo_reference::test_support
