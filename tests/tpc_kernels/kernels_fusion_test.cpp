// Fusion (KernelLibrary::instantiate_fused): a binary or unary elementwise kernel with unary
// kernels applied in registers gives exactly what the kernels give one after another, with
// broadcasting, in f32 and bf16; and only such chains are accepted.
#include <gtest/gtest.h>

#include <random>

#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels {
namespace {

using testing::HostTensor;

HostTensor random_tensor(DType t, std::vector<uint32_t> shape, uint32_t seed) {
  HostTensor h(t, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  testing::fill(h, [&] { return d(rng); });
  return h;
}

// The fused result and the unfused chain's result, element bits.
void expect_fused_equals_chain(const std::string& producer, const std::vector<HostTensor>& inputs,
                               const std::vector<std::string>& then) {
  const HostTensor& like = inputs[0];
  std::vector<uint32_t> out_shape = like.shape;
  for (const HostTensor& in : inputs) {
    for (size_t d = 0; d < in.shape.size(); ++d) out_shape[d] = std::max(out_shape[d], in.shape[d]);
  }
  std::vector<HostTensor> fused{HostTensor(like.dtype, out_shape)};
  const auto r = testing::run_kernel(producer, inputs, fused, 3, {}, then);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.gaps_ok);

  std::vector<HostTensor> step{HostTensor(like.dtype, out_shape)};
  ASSERT_TRUE(testing::run_kernel(producer, inputs, step, 3).ok);
  for (const std::string& unary : then) {
    std::vector<HostTensor> next{HostTensor(like.dtype, out_shape)};
    ASSERT_TRUE(testing::run_kernel(unary, {step[0]}, next, 3).ok);
    step = next;
  }
  for (size_t i = 0; i < step[0].data.size(); ++i) {
    ASSERT_EQ(fused[0].data[i], step[0].data[i]) << producer << " then " << then.front() << ": element " << i;
  }
}

TEST(TpcKernelFusion, BinaryThenUnaryEqualsTheChainInF32AndBf16) {
  for (const char* t : {"f32", "bf16"}) {
    const DType dt = std::string(t) == "f32" ? DType::F32 : DType::BF16;
    uint32_t seed = 1;
    for (const char* binary : {"add_fwd", "mul_fwd", "sub_fwd", "max_fwd"}) {
      for (const char* unary : {"relu_fwd", "tanh_fwd", "neg_fwd", "sigmoid_fwd", "exp_fwd"}) {
        SCOPED_TRACE(std::string(binary) + " then " + unary + " " + t);
        // B broadcasts along dim 1 (a bias row) and A is not a multiple of the vector width.
        expect_fused_equals_chain(std::string(binary) + "_" + t,
                                  {random_tensor(dt, {150, 7, 2}, seed), random_tensor(dt, {150, 1, 2}, seed + 1)},
                                  {std::string(unary) + "_" + t});
        seed += 2;
      }
    }
  }
}

TEST(TpcKernelFusion, LongerChainsAndUnaryProducers) {
  expect_fused_equals_chain("add_fwd_f32", {random_tensor(DType::F32, {64, 9}, 3), random_tensor(DType::F32, {1, 9}, 4)},
                            {"relu_fwd_f32", "neg_fwd_f32", "abs_fwd_f32"});
  expect_fused_equals_chain("tanh_fwd_bf16", {random_tensor(DType::BF16, {300, 5}, 5)}, {"relu_fwd_bf16"});
}

TEST(TpcKernelFusion, OnlyElementwiseChainsOfOneDtypeFuse) {
  const KernelLibrary& lib = KernelLibrary::instance();
  EXPECT_TRUE(lib.can_fuse("add_fwd_f32", "relu_fwd_f32"));
  EXPECT_TRUE(lib.can_fuse("relu_fwd_bf16", "neg_fwd_bf16"));
  EXPECT_FALSE(lib.can_fuse("add_fwd_f32", "relu_fwd_bf16")) << "dtypes differ";
  EXPECT_FALSE(lib.can_fuse("add_fwd_f32", "add_fwd_f32")) << "the follower must be unary";
  EXPECT_FALSE(lib.can_fuse("softmax_fwd_f32", "relu_fwd_f32")) << "a row kernel is not elementwise";
  EXPECT_FALSE(lib.can_fuse("add_fwd_f32", "gelu_tanh_fwd_f32")) << "computed in its own f32 loop";
  EXPECT_FALSE(lib.can_fuse("nope", "relu_fwd_f32"));
  KernelParams p;
  p.inputs = {{DType::F32, {64}, {}}, {DType::F32, {64}, {}}};
  p.outputs = {{DType::F32, {64}, {}}};
  const InstantiateResult r = KernelLibrary::instance().instantiate_fused("add_fwd_f32", p, {"softmax_fwd_f32"});
  EXPECT_EQ(r.status, GlueStatus::UnsupportedGuid);
  EXPECT_NE(r.message.find("cannot be fused with 'softmax_fwd_f32'"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels
