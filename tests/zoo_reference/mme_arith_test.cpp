// The reference's GEMM and convolutions against the MME's arithmetic (hw/mme/mme_compute.h): the
// scalar GEMM reference in the array's order, and the convolutions' implicit-GEMM lowering.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hw/mme/mme_compute.h"
#include "synapse/zoo_reference/conv.h"
#include "synapse/zoo_reference/gemm.h"
#include "synapse/zoo_reference/random.h"
#include "tests/zoo_reference/device_kernels.h"

namespace hpusim::synapse::zoo_reference {
namespace {

using namespace test_support;

std::vector<float> random_values(size_t count, uint32_t seed) {
  UniformSource source(seed);
  std::vector<float> v(count);
  source.fill(v, 1.0f);
  return v;
}

std::vector<float> transpose(const std::vector<float>& m, size_t rows, size_t cols) {
  std::vector<float> t(m.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  return t;
}

TEST(ZooMmeArith, GemmMatchesTheArrayOrder) {
  struct Dims {
    size_t m, n, k;
  };
  uint32_t seed = 1;
  // Sizes across the blocking (16 rows, 512 columns) and long k, where the order matters most.
  for (const Dims& d : {Dims{1, 1, 1}, Dims{3, 5, 7}, Dims{17, 513, 9}, Dims{33, 20, 1000}})
    for (const bool trans_a : {false, true})
      for (const bool trans_b : {false, true}) {
        const std::vector<float> a = random_values(d.m * d.k, seed++), b = random_values(d.k * d.n, seed++);
        std::vector<float> want(d.m * d.n), got(d.m * d.n);
        mme::gemm_f32_reference(a.data(), d.k, b.data(), d.n, want.data(), d.n, d.m, d.n, d.k);
        const std::vector<float> a_stored = trans_a ? transpose(a, d.m, d.k) : a;
        const std::vector<float> b_stored = trans_b ? transpose(b, d.k, d.n) : b;
        gemm(a_stored.data(), b_stored.data(), got.data(), d.m, d.n, d.k, trans_a, trans_b);
        expect_same_bits(got, want,
                         "gemm " + std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) +
                             (trans_a ? " A^T" : "") + (trans_b ? " B^T" : ""));
      }
}

// The MME's own lowering of a convolution job (operands gathered from a host memory), then its GEMM.
std::vector<float> mme_convolution(mme::MmeOp op, const mme::ConvShape& shape, const std::vector<float>& a,
                                   const std::vector<float>& b) {
  constexpr uint64_t kBaseA = 0x10000, kBaseB = 0x4000000;
  mme::MmeJob job;
  job.op = op;
  job.in = mme::MmeType::F32;
  job.out = mme::MmeType::F32;
  job.conv = shape;
  job.a = kBaseA;
  job.b = kBaseB;
  const auto read = [&](uint64_t address, size_t bytes, void* dst) {
    const std::vector<float>& src = address >= kBaseB ? b : a;
    const uint64_t offset = address - (address >= kBaseB ? kBaseB : kBaseA);
    if (offset + bytes > src.size() * sizeof(float)) return false;
    std::memcpy(dst, reinterpret_cast<const uint8_t*>(src.data()) + offset, bytes);
    return true;
  };
  std::vector<float> ga, gb;
  std::string error;
  EXPECT_TRUE(mme::gather_operands(job, 0, read, ga, gb, error)) << error;
  const mme::GemmDims dims = mme::gemm_dims(job);
  std::vector<float> out(dims.m * dims.n);
  mme::gemm_f32_reference(ga.data(), dims.k, gb.data(), dims.n, out.data(), dims.n, dims.m, dims.n, dims.k);
  return out;
}

TEST(ZooMmeArith, ConvolutionForwardAndWeightGradientMatchTheLowering) {
  for (const size_t pad : {size_t{0}, size_t{1}}) {
    ConvGeometry g;
    g.n = 2;
    g.h = 5;
    g.w = 6;
    g.c = 3;
    g.k = 4;
    g.r = g.s = 3;
    g.pad = pad;
    mme::ConvShape shape;
    shape.n = 2;
    shape.h = 5;
    shape.w = 6;
    shape.c = 3;
    shape.k = 4;
    shape.r = shape.s = 3;
    shape.pad_h = shape.pad_w = static_cast<uint32_t>(pad);
    ASSERT_EQ(static_cast<int64_t>(g.out_h()), shape.out_h());
    ASSERT_EQ(static_cast<int64_t>(g.out_w()), shape.out_w());
    const size_t out_count = g.n * g.out_h() * g.out_w() * g.k;
    const std::vector<float> x = random_values(g.n * g.h * g.w * g.c, 40 + pad);
    const std::vector<float> w = random_values(g.r * g.s * g.c * g.k, 50 + pad);
    const std::vector<float> dy = random_values(out_count, 60 + pad);
    std::vector<float> y(out_count), dw(w.size());
    conv2d(g, x.data(), w.data(), y.data());
    conv2d_dedw(g, x.data(), dy.data(), dw.data());
    expect_same_bits(y, mme_convolution(mme::MmeOp::ConvForward, shape, x, w), "conv forward");
    expect_same_bits(dw, mme_convolution(mme::MmeOp::ConvBackwardWeight, shape, x, dy), "conv dedw");
  }
}

}  // namespace
}  // namespace hpusim::synapse::zoo_reference
