// The third batch of kernels against C++ references, on 1 and 8 simulated cores (bit-identical):
// layernorm forward / backward (within tolerances of a double reference; dgamma / dbeta bit-exact
// against the kernel's f32 order), nll_loss forward / backward (bit-exact) and cross_entropy as
// log_softmax + nll_loss, dropout (the documented generator, bit-exact; the same mask on any core
// count), the optimizer steps in place (bit-exact against PyTorch's formulas in f32), and the
// validation errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/row_chunks.h"
#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

using Shape = std::vector<uint32_t>;

std::string sfx(DType t) { return t == DType::F32 ? "_f32" : "_bf16"; }
std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}
struct Tol {
  double rtol, atol;
};
bool within(double got, double ref, Tol tol) {
  if (std::isnan(ref)) return std::isnan(got);
  return std::fabs(got - ref) <= tol.rtol * std::fabs(ref) + tol.atol;
}

const std::vector<Shape>& ln_shapes() {
  static const std::vector<Shape> s = {{1},          {63},       {65},          {129},         {300},
                                       {150, 3},     {1, 4},     {70, 2, 3},    {130, 2, 2, 2}, {65, 2, 1, 2, 3},
                                       {257, 1, 1, 1, 2}, {3, 7},
                                       // Rows past the registers (f32 > 12 vectors, bf16 > 6): the three-pass kernel.
                                       {900, 2},
                                       // f32 dgamma / dbeta split into row chunks (row_chunks.h): 11 x 48
                                       // (rows over dims 1..4), 9 x 64 with a partial vector.
                                       {100, 4, 4, 3, 11}, {65, 576}};
  return s;
}

// ---- layernorm ----

Tol ln_tol(DType t) { return t == DType::F32 ? Tol{1e-5, 1e-5} : Tol{1.0 / 128, 1e-2}; }

TEST(TpcKernelLayerNorm, ForwardMatchesTheDoubleReference) {
  for (DType t : {DType::F32, DType::BF16}) {
    uint32_t seed = 1;
    for (const Shape& s : ln_shapes()) {
      for (bool affine : {false, true}) {
        const std::string guid = "layernorm_fwd" + sfx(t);
        HostTensor x(t, s), gamma(t, {s[0]}), beta(t, {s[0]});
        fill_uniform(x, seed++, -3.0f, 5.0f);
        fill_uniform(gamma, seed++, 0.5f, 1.5f);
        fill_uniform(beta, seed++, -1.0f, 1.0f);
        Shape ss = s;
        ss[0] = 1;
        HostTensor y(t, s), mean(DType::F32, ss), rstd(DType::F32, ss);
        std::vector<HostTensor> in = {x};
        if (affine) in = {x, gamma, beta};
        const float eps = 1e-5f;
        const auto got = run_1_and_8(guid, in, {y, mean, rstd}, {eps});
        const uint32_t n0 = s[0];
        size_t bad = 0;
        for (size_t r = 0; r < mean.count() && bad < 3; ++r) {
          double m = 0, v = 0;
          for (uint32_t j = 0; j < n0; ++j) m += x.at(r * n0 + j);
          m /= n0;
          for (uint32_t j = 0; j < n0; ++j) v += (x.at(r * n0 + j) - m) * (x.at(r * n0 + j) - m);
          v /= n0;
          const double rs = 1.0 / std::sqrt(v + eps);
          if (!within(got[1].at(r), m, {1e-5, 1e-5}) || !within(got[2].at(r), rs, {1e-5, 1e-5})) {
            ++bad;
            ADD_FAILURE() << guid << " " << shape_str(s) << " row " << r << ": mean " << got[1].at(r) << " want " << m
                          << ", rstd " << got[2].at(r) << " want " << rs;
          }
          for (uint32_t j = 0; j < n0 && bad < 3; ++j) {
            double want = (x.at(r * n0 + j) - m) * rs;
            if (affine) want = want * gamma.at(j) + beta.at(j);
            if (!within(got[0].at(r * n0 + j), want, ln_tol(t))) {
              ++bad;
              ADD_FAILURE() << guid << (affine ? " affine " : " ") << shape_str(s) << " row " << r << " elem " << j
                            << ": got " << got[0].at(r * n0 + j) << ", want " << want;
            }
          }
        }
      }
    }
  }
}

// A constant row: var = 0, rstd = 1 / sqrt(eps), y = 0 (no NaN); the padding lanes are masked.
TEST(TpcKernelLayerNorm, ConstantRowsAndLargeOffsets) {
  for (DType t : {DType::F32, DType::BF16}) {
    HostTensor x(t, {100, 2}), y(t, {100, 2}), mean(DType::F32, {1, 2}), rstd(DType::F32, {1, 2});
    for (size_t i = 0; i < 100; ++i) x.data[i] = round_to(t, 7.0f);
    for (size_t i = 100; i < 200; ++i) x.data[i] = round_to(t, 96.0f + static_cast<float>(i % 2));
    const auto got = run_1_and_8("layernorm_fwd" + sfx(t), {x}, {y, mean, rstd}, {1e-5f});
    EXPECT_EQ(got[1].at(0), 7.0f);
    EXPECT_NEAR(got[2].at(0), 1.0 / std::sqrt(1e-5), 1e-2);
    for (size_t i = 0; i < 100; ++i) EXPECT_EQ(got[0].at(i), 0.0f) << i;
    EXPECT_NEAR(got[1].at(1), 96.5, 1e-5);
    EXPECT_NEAR(got[2].at(1), 1.0 / std::sqrt(0.25 + 1e-5), 1e-4);   // masked: the padding adds no (0 - mean)^2
  }
}

TEST(TpcKernelLayerNorm, BackwardMatchesTheDoubleReference) {
  for (DType t : {DType::F32, DType::BF16}) {
    uint32_t seed = 100;
    for (const Shape& s : ln_shapes()) {
      for (bool affine : {false, true}) {
        const uint32_t n0 = s[0];
        HostTensor g(t, s), x(t, s), gamma(t, {n0});
        fill_uniform(g, seed++, -1.0f, 1.0f);
        fill_uniform(x, seed++, -3.0f, 5.0f);
        fill_uniform(gamma, seed++, 0.5f, 1.5f);
        Shape ss = s;
        ss[0] = 1;
        HostTensor mean(DType::F32, ss), rstd(DType::F32, ss);
        for (size_t r = 0; r < mean.count(); ++r) {   // the statistics as the forward would give them
          double m = 0, v = 0;
          for (uint32_t j = 0; j < n0; ++j) m += x.at(r * n0 + j);
          m /= n0;
          for (uint32_t j = 0; j < n0; ++j) v += (x.at(r * n0 + j) - m) * (x.at(r * n0 + j) - m);
          mean.data[r] = bits_of(static_cast<float>(m));
          rstd.data[r] = bits_of(static_cast<float>(1.0 / std::sqrt(v / n0 + 1e-5)));
        }
        std::vector<HostTensor> in = {g, x, mean, rstd};
        if (affine) in.push_back(gamma);
        const auto dx = run_1_and_8("layernorm_bwd" + sfx(t), in, {HostTensor(t, s)});
        const auto gb = run_1_and_8("layernorm_bwd_gamma_beta" + sfx(t), {g, x, mean, rstd},
                                    {HostTensor(t, {n0}), HostTensor(t, {n0})});
        size_t bad = 0;
        const Tol tol = t == DType::F32 ? Tol{1e-4, 1e-5} : Tol{1.0 / 64, 2e-2};
        for (size_t r = 0; r < mean.count() && bad < 3; ++r) {
          const double m = mean.at(r), rs = rstd.at(r);
          double a = 0, b = 0;
          for (uint32_t j = 0; j < n0; ++j) {
            const double dxh = g.at(r * n0 + j) * (affine ? gamma.at(j) : 1.0);
            a += dxh;
            b += dxh * (x.at(r * n0 + j) - m) * rs;
          }
          a /= n0;
          b /= n0;
          for (uint32_t j = 0; j < n0 && bad < 3; ++j) {
            const double xh = (x.at(r * n0 + j) - m) * rs;
            const double dxh = g.at(r * n0 + j) * (affine ? gamma.at(j) : 1.0);
            const double want = rs * (dxh - a - xh * b);
            if (!within(dx[0].at(r * n0 + j), want, tol)) {
              ++bad;
              ADD_FAILURE() << "layernorm_bwd" << sfx(t) << (affine ? " affine " : " ") << shape_str(s) << " row " << r
                            << " elem " << j << ": got " << dx[0].at(r * n0 + j) << ", want " << want;
            }
          }
        }
        // dgamma / dbeta: bit-exact against the kernel's order (rows in memory order, f32;
        // outputs of fewer than 1024 elements in chunks of rows whose partials are then added,
        // row_chunks.h; bf16 rounded once at the end).
        const uint32_t chunk = split_row_chunk(mean.count(), n0);
        const size_t length = chunk != 0 ? chunk : mean.count();
        for (uint32_t j = 0; j < n0 && bad < 3; ++j) {
          float dg = 0.0f, db = 0.0f;
          for (size_t first = 0; first < mean.count(); first += length) {
            float pg = 0.0f, pb = 0.0f;
            for (size_t r = first; r < first + length; ++r) {
              const float xh = (x.at(r * n0 + j) - mean.at(r)) * rstd.at(r);
              pg = pg + g.at(r * n0 + j) * xh;
              pb = pb + g.at(r * n0 + j);
            }
            dg = chunk != 0 ? dg + pg : pg;
            db = chunk != 0 ? db + pb : pb;
          }
          if (gb[0].data[j] != round_to(t, dg) || gb[1].data[j] != round_to(t, db)) {
            ++bad;
            ADD_FAILURE() << "layernorm_bwd_gamma_beta" << sfx(t) << " " << shape_str(s) << " elem " << j << ": got "
                          << gb[0].at(j) << " / " << gb[1].at(j) << ", want " << dg << " / " << db;
          }
        }
      }
    }
  }
}

// ---- nll_loss, cross_entropy ----

HostTensor targets(uint32_t n, uint32_t classes, uint32_t seed, const std::vector<uint32_t>& shape) {
  HostTensor t(DType::I32, shape);
  std::mt19937 rng(seed);
  for (uint32_t i = 0; i < n; ++i) t.data[i] = rng() % classes;
  return t;
}

TEST(TpcKernelNllLoss, ForwardAndBackwardBitExactWithIgnoreIndex) {
  for (DType t : {DType::F32, DType::BF16}) {
    for (const Shape& s : std::vector<Shape>{{10, 1}, {5}, {65, 7}, {129, 33}, {300, 3}, {1, 20}}) {
      for (bool ignore : {false, true}) {
        const uint32_t c = s[0], n = s.size() > 1 ? s[1] : 1;
        HostTensor logp(t, s);
        fill_uniform(logp, c * 31 + n, -8.0f, 0.0f);
        HostTensor target = targets(n, c, c + n, s.size() > 1 ? Shape{n} : Shape{});
        const int32_t ii = 2;
        if (ignore && n > 2) target.data[n - 1] = ii;   // also a target equal to it
        std::vector<float> sc;
        if (ignore) sc = {static_cast<float>(ii)};
        const auto out = run_1_and_8("nll_loss_fwd" + sfx(t), {logp, target}, {HostTensor(t, {}), HostTensor(t, {1})}, sc);
        float sum = 0.0f, cnt = 0.0f;
        for (uint32_t i = 0; i < n; ++i) {
          const int32_t k = static_cast<int32_t>(target.data[i]);
          if (ignore && k == ii) continue;
          sum = sum - logp.at(static_cast<size_t>(i) * c + k);
          cnt = cnt + 1.0f;
        }
        const float loss = sum / cnt;
        EXPECT_EQ(out[0].data[0], round_to(t, loss)) << shape_str(s) << " got " << out[0].at(0) << " want " << loss;
        EXPECT_EQ(out[1].at(0), cnt);
        // Backward with grad 1.5.
        HostTensor grad(t, {1});
        grad.data[0] = round_to(t, 1.5f);
        const auto dx = run_1_and_8("nll_loss_bwd" + sfx(t), {grad, target, out[1]}, {HostTensor(t, s)}, sc);
        const float v = -(1.5f / cnt);
        size_t bad = 0;
        for (uint32_t i = 0; i < n; ++i)
          for (uint32_t k = 0; k < c && bad < 3; ++k) {
            const int32_t tk = static_cast<int32_t>(target.data[i]);
            const float want = (static_cast<int32_t>(k) == tk && !(ignore && tk == ii)) ? v : 0.0f;
            if (dx[0].data[static_cast<size_t>(i) * c + k] != round_to(t, want)) {
              ++bad;
              ADD_FAILURE() << "nll_loss_bwd " << shape_str(s) << " (" << k << ", " << i << "): got "
                            << dx[0].at(static_cast<size_t>(i) * c + k) << ", want " << want;
            }
          }
      }
    }
  }
}

TEST(TpcKernelNllLoss, BadTargetsAndAllIgnoredGiveNaN) {
  HostTensor logp(DType::F32, {4, 3});
  fill_uniform(logp, 5, -3.0f, 0.0f);
  HostTensor target(DType::I32, {3});
  target.data = {1, 4, 0};   // 4 is out of range
  auto out = run_1_and_8("nll_loss_fwd_f32", {logp, target}, {HostTensor(DType::F32, {1}), HostTensor(DType::F32, {1})});
  EXPECT_TRUE(std::isnan(out[0].at(0)));
  target.data = {7, 7, 7};
  out = run_1_and_8("nll_loss_fwd_f32", {logp, target}, {HostTensor(DType::F32, {1}), HostTensor(DType::F32, {1})}, {7.0f});
  EXPECT_TRUE(std::isnan(out[0].at(0)));
  EXPECT_EQ(out[1].at(0), 0.0f);
}

// cross_entropy = log_softmax_fwd + nll_loss_fwd; its backward nll_loss_bwd + log_softmax_bwd.
TEST(TpcKernelCrossEntropy, ComposedFromLogSoftmaxAndNllLoss) {
  for (DType t : {DType::F32, DType::BF16}) {
    const uint32_t c = 70, n = 9;
    HostTensor x(t, {c, n});
    fill_uniform(x, 9, -5.0f, 5.0f);
    HostTensor target = targets(n, c, 3, {n});
    const auto lsm = run_1_and_8("log_softmax_fwd" + sfx(t), {x}, {HostTensor(t, {c, n})});
    const auto loss = run_1_and_8("nll_loss_fwd" + sfx(t), {lsm[0], target}, {HostTensor(t, {1}), HostTensor(t, {1})});
    HostTensor grad(t, {1});
    grad.data[0] = round_to(t, 1.0f);
    const auto dlsm = run_1_and_8("nll_loss_bwd" + sfx(t), {grad, target, loss[1]}, {HostTensor(t, {c, n})});
    const auto dx = run_1_and_8("log_softmax_bwd" + sfx(t), {dlsm[0], lsm[0]}, {HostTensor(t, {c, n})});
    double want_loss = 0;
    const Tol tol = t == DType::F32 ? Tol{1e-5, 1e-6} : Tol{1.0 / 64, 1e-3};
    for (uint32_t i = 0; i < n; ++i) {
      double m = -INFINITY, s = 0;
      for (uint32_t k = 0; k < c; ++k) m = std::max<double>(m, x.at(i * c + k));
      for (uint32_t k = 0; k < c; ++k) s += std::exp(x.at(i * c + k) - m);
      const double lse = m + std::log(s);
      want_loss += lse - x.at(i * c + target.data[i]);
      for (uint32_t k = 0; k < c; ++k) {
        const double want = (std::exp(x.at(i * c + k) - lse) - (k == target.data[i] ? 1.0 : 0.0)) / n;
        EXPECT_TRUE(within(dx[0].at(i * c + k), want, tol)) << sfx(t) << " (" << k << ", " << i << "): got "
                                                           << dx[0].at(i * c + k) << ", want " << want;
      }
    }
    want_loss /= n;
    EXPECT_TRUE(within(loss[0].at(0), want_loss, tol)) << loss[0].at(0) << " vs " << want_loss;
  }
}

// ---- dropout ----

// The documented generator: element i is kept iff ((mix32(i ^ key) >> 8) * 2^-24) >= p.
bool kept(uint32_t seed, uint32_t i, float p) {
  const uint32_t key = mix32(seed ^ 0x9e3779b9u);
  const float u = static_cast<float>(mix32(i ^ key) >> 8) * 0x1p-24f;
  return u >= p;
}

TEST(TpcKernelDropout, ForwardAndBackwardFollowTheGenerator) {
  for (DType t : {DType::F32, DType::BF16}) {
    uint32_t seed = 11;
    for (const Shape& s : std::vector<Shape>{{1}, {65}, {300}, {150, 3}, {130, 3, 4}, {70, 2, 3, 2}, {65, 2, 2, 3, 2}, {3, 7}}) {
      for (float p : {0.0f, 0.3f, 0.5f, 1.0f}) {
        HostTensor x(t, s);
        fill_uniform(x, seed, -4.0f, 4.0f);
        const auto out = run_1_and_8("dropout_fwd" + sfx(t), {x}, {HostTensor(t, s), HostTensor(t, s)}, {p, static_cast<float>(seed)});
        const float scale = p == 1.0f ? 0.0f : static_cast<float>(1.0 / (1.0 - p));
        size_t bad = 0, kept_count = 0;
        for (size_t i = 0; i < x.count() && bad < 3; ++i) {
          const float m = kept(seed, static_cast<uint32_t>(i), p) ? 1.0f : 0.0f;
          kept_count += m != 0.0f;
          const uint32_t want = round_to(t, (x.at(i) * m) * scale);
          if (out[1].at(i) != m || out[0].data[i] != want) {
            ++bad;
            ADD_FAILURE() << "dropout" << sfx(t) << " " << shape_str(s) << " p " << p << " elem " << i << ": got "
                          << out[0].at(i) << " mask " << out[1].at(i) << ", want mask " << m;
          }
        }
        if (x.count() >= 300 && p > 0.0f && p < 1.0f)
          EXPECT_NEAR(static_cast<double>(kept_count) / x.count(), 1.0 - p, 0.1) << shape_str(s);
        HostTensor g(t, s);
        fill_uniform(g, seed + 1, -1.0f, 1.0f);
        const auto dx = run_1_and_8("dropout_bwd" + sfx(t), {g, out[1]}, {HostTensor(t, s)}, {p});
        for (size_t i = 0; i < x.count() && bad < 3; ++i)
          if (dx[0].data[i] != round_to(t, (g.at(i) * out[1].at(i)) * scale)) {
            ++bad;
            ADD_FAILURE() << "dropout_bwd" << sfx(t) << " elem " << i;
          }
        ++seed;
      }
    }
  }
  // Different seeds give different masks; the same seed the same mask.
  HostTensor x(DType::F32, {256});
  fill_uniform(x, 1, 1.0f, 2.0f);
  const auto a = run_1_and_8("dropout_fwd_f32", {x}, {HostTensor(DType::F32, {256}), HostTensor(DType::F32, {256})}, {0.5f, 1.0f});
  const auto b = run_1_and_8("dropout_fwd_f32", {x}, {HostTensor(DType::F32, {256}), HostTensor(DType::F32, {256})}, {0.5f, 2.0f});
  EXPECT_NE(a[1].data, b[1].data);
}

TEST(TpcKernelDropout, ASeedTensorGivesTheMaskOfThatSeed) {
  for (DType t : {DType::F32, DType::BF16}) {
    for (uint32_t seed : {0u, 7u, 16777216u, 0xdeadbeefu}) {
      const Shape s{300, 3};
      HostTensor x(t, s);
      fill_uniform(x, seed, -4.0f, 4.0f);
      HostTensor seed_tensor(DType::I32, {1});
      seed_tensor.data[0] = seed;
      const auto out = run_1_and_8("dropout_fwd" + sfx(t), {x, seed_tensor}, {HostTensor(t, s), HostTensor(t, s)}, {0.4f});
      size_t bad = 0;
      for (size_t i = 0; i < x.count() && bad < 3; ++i) {
        const float m = kept(seed, static_cast<uint32_t>(i), 0.4f) ? 1.0f : 0.0f;
        if (out[1].at(i) != m || out[0].data[i] != round_to(t, (x.at(i) * m) * (1.0f / 0.6f))) {
          ++bad;
          ADD_FAILURE() << "seed " << seed << " elem " << i << ": mask " << out[1].at(i) << ", want " << m;
        }
      }
      if (seed <= 16777216u) {
        const auto scalar = run_1_and_8("dropout_fwd" + sfx(t), {x}, {HostTensor(t, s), HostTensor(t, s)},
                                        {0.4f, static_cast<float>(seed)});
        EXPECT_EQ(out[1].data, scalar[1].data);
        EXPECT_EQ(out[0].data, scalar[0].data);
      }
    }
  }
}

// The forward runs a list-scheduled body (dropout_scheduled.cpp: four vectors' hash chains
// interleaved, the keep test on integers): the kernel file's Y and mask bit for bit, with the seed
// as a scalar and as a tensor, in at most 70 % of its issue cycles.
TEST(TpcKernelDropout, TheScheduledForwardIsTheKernelFileBitForBit) {
  KernelLibrary& lib = KernelLibrary::instance();
  for (DType t : {DType::F32, DType::BF16}) {
    for (bool seed_input : {false, true}) {
      for (float p : {0.1f, 0.3f, 0.999f}) {
        SCOPED_TRACE(std::string("dropout_fwd") + sfx(t) + (seed_input ? " seed tensor" : "") + " p " + std::to_string(p));
        const Shape s{1000, 3};
        std::vector<HostTensor> inputs{HostTensor(t, s)};
        fill_uniform(inputs[0], 31, -4.0f, 4.0f);
        KernelParams params{{inputs[0].params()}, {tp(t, s), tp(t, s)}, {p, 12345.0f}};
        if (seed_input) {
          inputs.emplace_back(DType::I32, Shape{1});
          inputs.back().data[0] = 12345;
          params.inputs.push_back(inputs.back().params());
          params.scalars = {p};
        }
        const InstantiateResult scheduled = lib.instantiate("dropout_fwd" + sfx(t), params);
        const InstantiateResult own = lib.instantiate_own_kernel("dropout_fwd" + sfx(t), params);
        ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
        EXPECT_NE(scheduled.inst->variant.find("scheduled"), std::string::npos) << scheduled.inst->variant;
        std::vector<HostTensor> want{HostTensor(t, s), HostTensor(t, s)}, got = want;
        const RunOutcome r_own = run_instantiated(own, inputs, want, 1, KernelLibrary::kDefaultVectorBits);
        const RunOutcome r = run_instantiated(scheduled, inputs, got, 1, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(r.ok && r_own.ok) << r.error << r_own.error;
        EXPECT_EQ(got[0].data, want[0].data);
        EXPECT_EQ(got[1].data, want[1].data);
        EXPECT_LT(r.issue_cycles * 10, r_own.issue_cycles * 7) << "the kernel file's " << r_own.issue_cycles;
      }
    }
  }
  EXPECT_EQ(glue::dropout_keep_threshold(0.0f), 0u);
  EXPECT_EQ(glue::dropout_keep_threshold(0.5f), 8388608u);
  EXPECT_EQ(glue::dropout_keep_threshold(1.0f), 16777216u);   // no h >> 8 reaches it: nothing kept
}

// ---- optimizers, in place ----

// Runs an optimizer GUID with the updated tensors' outputs at their inputs' addresses: the
// library's kernel, or with `kernel_file` optim.s itself; `bundles` (if given) gets the bundles
// executed over all cores.
std::vector<HostTensor> run_in_place(const std::string& guid, const std::vector<HostTensor>& inputs,
                                     const std::vector<float>& scalars, unsigned cores, bool kernel_file = false,
                                     uint64_t* bundles = nullptr) {
  KernelParams p;
  for (const HostTensor& t : inputs) p.inputs.push_back(t.params());
  p.outputs.push_back(inputs[0].params());
  for (size_t k = 2; k < inputs.size(); ++k) p.outputs.push_back(inputs[k].params());
  p.scalars = scalars;
  const InstantiateResult r = kernel_file ? KernelLibrary::instance().instantiate_own_kernel(guid, p)
                                          : KernelLibrary::instance().instantiate(guid, p);
  EXPECT_TRUE(r.ok()) << r.message;
  if (!r.ok()) return {};
  SimMemory mem;
  std::vector<uint64_t> in_bases, out_bases;
  for (const HostTensor& t : inputs) in_bases.push_back(mem.alloc(t.span() * t.elem_bytes()));
  for (size_t k = 0; k < inputs.size(); ++k) store_tensor(mem, in_bases[k], inputs[k]);
  out_bases.push_back(in_bases[0]);
  for (size_t k = 2; k < inputs.size(); ++k) out_bases.push_back(in_bases[k]);
  if (bundles != nullptr) *bundles = 0;
  for (const CoreSlice& s : partition_index_space(r.inst->ispace_geometry, cores)) {
    tpc::TpcExecutor ex;
    ex.set_global_memory(&mem);
    ex.launch(r.inst->launch_context(in_bases, out_bases, s.offset, s.size));
    const tpc::RunResult run = ex.run(r.inst->program->bundles, 100'000'000);
    EXPECT_EQ(run.status, tpc::CoreStatus::Halted) << ex.state().fault.message;
    if (bundles != nullptr) *bundles += run.bundles;
  }
  std::vector<HostTensor> out;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (k == 1) continue;
    HostTensor t = inputs[k];
    load_tensor(mem, out_bases[out.size()], t);
    out.push_back(t);
  }
  return out;
}

struct OptCase {
  std::string guid;
  std::vector<float> scalars;
};

TEST(TpcKernelOptimizer, StepsInPlaceBitExact) {
  const std::vector<OptCase> cases = {
      {"sgd_momentum_f32", {0.1f, 0.9f, 0.0f, 0.0f, 0.0f}},  {"sgd_momentum_f32", {0.05f, 0.9f, 0.1f, 1e-2f, 0.0f}},
      {"sgd_momentum_f32", {0.1f, 0.9f, 0.0f, 1e-4f, 1.0f}}, {"adam_f32", {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f}},
      {"adam_f32", {1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 7.0f}}, {"adamw_f32", {1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 3.0f}},
      {"adadelta_f32", {1.0f, 0.9f, 1e-6f, 0.0f}},          {"adadelta_f32", {0.5f, 0.95f, 1e-6f, 1e-3f}}};
  uint32_t seed = 1;
  for (const OptCase& oc : cases) {
    for (const Shape& s : std::vector<Shape>{{1}, {65}, {300}, {130, 3, 4}, {65, 2, 2, 3, 2}, {3, 7}}) {
      const size_t nst = oc.guid == "sgd_momentum_f32" ? 1 : 2;
      std::vector<HostTensor> in;
      for (size_t k = 0; k < 2 + nst; ++k) {
        HostTensor h(DType::F32, s);
        if (k < 2) fill_uniform(h, seed++, -1.0f, 1.0f);
        else fill_uniform(h, seed++, k == 2 && oc.guid != "adadelta_f32" ? -0.1f : 0.0f, 0.1f);
        in.push_back(h);
      }
      const auto one = run_in_place(oc.guid, in, oc.scalars, 1);
      const auto eight = run_in_place(oc.guid, in, oc.scalars, 8);
      ASSERT_EQ(one.size(), 1 + nst);
      for (size_t k = 0; k < one.size(); ++k) EXPECT_EQ(one[k].data, eight[k].data) << oc.guid << " 1 vs 8 cores";
      const std::vector<float>& sc = oc.scalars;
      size_t bad = 0;
      for (size_t i = 0; i < in[0].count() && bad < 3; ++i) {
        float p = in[0].at(i), g = in[1].at(i), s1 = in[2].at(i), s2 = nst > 1 ? in[3].at(i) : 0.0f;
        if (oc.guid == "sgd_momentum_f32") {
          if (sc[3] != 0.0f) g = g + p * sc[3];
          s1 = sc[4] != 0.0f ? g : s1 * sc[1] + g * static_cast<float>(1.0 - sc[2]);
          p = p + s1 * static_cast<float>(-static_cast<double>(sc[0]));
        } else if (oc.guid != "adadelta_f32") {
          const double lr = sc[0], b1 = sc[1], b2 = sc[2], step = sc[5];
          if (oc.guid == "adamw_f32") p = p * static_cast<float>(1.0 - lr * sc[4]);
          else if (sc[4] != 0.0f) g = g + p * sc[4];
          s1 = s1 * sc[1] + g * static_cast<float>(1.0 - b1);
          s2 = s2 * sc[2] + (g * static_cast<float>(1.0 - b2)) * g;
          const float denom = std::sqrt(s2) / static_cast<float>(std::sqrt(1.0 - std::pow(b2, step))) + sc[3];
          p = p + (s1 * static_cast<float>(-(lr / (1.0 - std::pow(b1, step))))) / denom;
        } else {
          const float rho = sc[1], omr = static_cast<float>(1.0 - sc[1]), eps = sc[2];
          if (sc[3] != 0.0f) g = g + p * sc[3];
          s1 = s1 * rho + (g * omr) * g;
          const float delta = (std::sqrt(s2 + eps) / std::sqrt(s1 + eps)) * g;
          s2 = s2 * rho + (delta * omr) * delta;
          p = p + delta * static_cast<float>(-static_cast<double>(sc[0]));
        }
        const float want[3] = {p, s1, s2};
        for (size_t k = 0; k < one.size(); ++k)
          if (one[k].data[i] != bits_of(want[k])) {
            ++bad;
            ADD_FAILURE() << oc.guid << " " << shape_str(s) << " tensor " << k << " elem " << i << ": got " << one[k].at(i)
                          << ", want " << want[k];
          }
      }
    }
  }
}

// The library's optimizers step four vectors, the two banks of optim.s twice and list-scheduled
// (optim_step.cpp), so four dependent chains fill each other's latency: the same bits as optim.s
// (the kernel file, two vectors a step), in fewer bundles.
TEST(TpcKernelOptimizer, FourVectorStepsAreScheduledBitIdenticalToTheKernelFile) {
  const std::vector<OptCase> cases = {{"adam_f32", {1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 7.0f}},
                                      {"adamw_f32", {1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, 3.0f}},
                                      {"adadelta_f32", {0.5f, 0.95f, 1e-6f, 1e-3f}},
                                      {"sgd_momentum_f32", {0.05f, 0.9f, 0.1f, 1e-2f, 0.0f}}};
  uint32_t seed = 40;
  for (const OptCase& oc : cases) {
    for (const Shape& s : std::vector<Shape>{{64 * 64}, {300}, {130, 3, 4}}) {
      const size_t nst = oc.guid == "sgd_momentum_f32" ? 1 : 2;
      std::vector<HostTensor> in;
      for (size_t k = 0; k < 2 + nst; ++k) {
        HostTensor h(DType::F32, s);
        fill_uniform(h, seed++, k < 2 ? -1.0f : 0.0f, k < 2 ? 1.0f : 0.1f);
        in.push_back(h);
      }
      uint64_t scheduled = 0, file = 0;
      const auto got = run_in_place(oc.guid, in, oc.scalars, 1, false, &scheduled);
      const auto want = run_in_place(oc.guid, in, oc.scalars, 1, true, &file);
      ASSERT_EQ(got.size(), want.size()) << oc.guid;
      for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k].data, want[k].data) << oc.guid << " " << shape_str(s) << " tensor " << k;
      // 64 vectors on one core: the scheduled steps pack two steps' instructions into fewer
      // bundles than optim.s's two (Adam: 1693 against 1821); the cycles they save (the chains'
      // latency) show in `hpusim bench kernels`, not in the functional executor's count.
      if (s.size() == 1 && s[0] == 64 * 64) {
        EXPECT_LT(scheduled * 100, file * 97) << oc.guid << ": " << scheduled << " / " << file;
      }
    }
  }
  const KernelParams p{{HostTensor(DType::F32, {300}).params(), HostTensor(DType::F32, {300}).params(),
                        HostTensor(DType::F32, {300}).params(), HostTensor(DType::F32, {300}).params()},
                       {HostTensor(DType::F32, {300}).params(), HostTensor(DType::F32, {300}).params(),
                        HostTensor(DType::F32, {300}).params()},
                       {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f}};
  const InstantiateResult r = KernelLibrary::instance().instantiate("adam_f32", p);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("x4 scheduled"), std::string::npos) << r.inst->variant;
  EXPECT_EQ(r.inst->ispace_geometry[0], 2) << "300 elements: two steps of four vectors";
}

// ---- validation and glue ----

TensorParams tp(DType t, std::vector<uint32_t> shape) { return {t, std::move(shape), {}}; }
void expect_error(const InstantiateResult& r, GlueStatus status, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, status) << glue_status_name(r.status) << ": " << r.message;
  for (const std::string& part : parts) EXPECT_NE(r.message.find(part), std::string::npos) << r.message << " / " << part;
}

TEST(TpcKernelGlue3, RejectsBadParams) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16, I = DType::I32;
  expect_error(lib.instantiate("layernorm_fwd_f32", {{tp(F, {8, 2}), tp(F, {8})}, {tp(F, {8, 2}), tp(F, {1, 2}), tp(F, {1, 2})}, {1e-5f}}),
               GlueStatus::IncompatibleInputCount, {"1 input (X) or 3"});
  expect_error(lib.instantiate("layernorm_fwd_f32", {{tp(F, {8, 2})}, {tp(F, {8, 2}), tp(F, {1, 2}), tp(F, {1, 2})}, {}}),
               GlueStatus::IncompatibleScalarParams, {"eps"});
  expect_error(lib.instantiate("layernorm_fwd_f32", {{tp(F, {8, 2})}, {tp(F, {8, 2}), tp(F, {1, 2}), tp(F, {1, 2})}, {-1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (eps)", ">= 0"});
  expect_error(lib.instantiate("layernorm_fwd_bf16", {{tp(B, {8, 2})}, {tp(B, {8, 2}), tp(B, {1, 2}), tp(F, {1, 2})}, {1e-5f}}),
               GlueStatus::IncompatibleDataType, {"output 1 (mean)", "f32"});
  expect_error(lib.instantiate("layernorm_fwd_f32", {{tp(F, {8, 2}), tp(F, {8, 2}), tp(F, {8})}, {tp(F, {8, 2}), tp(F, {1, 2}), tp(F, {1, 2})}, {1e-5f}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (gamma)"});
  expect_error(lib.instantiate("layernorm_fwd_f32", {{tp(F, {8, 2})}, {tp(F, {8, 2}), tp(F, {8, 2}), tp(F, {1, 2})}, {1e-5f}}),
               GlueStatus::IncompatibleOutputSize, {"output 1 (mean)", "[1, 2]"});
  expect_error(lib.instantiate("layernorm_bwd_f32", {{tp(F, {8, 2}), tp(F, {8, 2}), tp(F, {1, 2})}, {tp(F, {8, 2})}, {}}),
               GlueStatus::IncompatibleInputCount, {"4 or 5"});
  expect_error(lib.instantiate("layernorm_bwd_gamma_beta_f32", {{tp(F, {8, 2}), tp(F, {8, 2}), tp(F, {1, 2}), tp(F, {1, 2})}, {tp(F, {8, 2}), tp(F, {8})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (dgamma)"});
  expect_error(lib.instantiate("nll_loss_fwd_f32", {{tp(F, {8, 3}), tp(F, {3})}, {tp(F, {1}), tp(F, {1})}, {}}),
               GlueStatus::IncompatibleDataType, {"input 1 (target)", "i32"});
  expect_error(lib.instantiate("nll_loss_fwd_f32", {{tp(F, {8, 3}), tp(I, {4})}, {tp(F, {1}), tp(F, {1})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (target)", "[3]"});
  expect_error(lib.instantiate("nll_loss_fwd_f32", {{tp(F, {8, 3, 2}), tp(I, {3})}, {tp(F, {1}), tp(F, {1})}, {}}),
               GlueStatus::IncompatibleInputSize, {"[C, N]"});
  expect_error(lib.instantiate("nll_loss_fwd_f32", {{tp(F, {8, 3}), tp(I, {3})}, {tp(F, {3}), tp(F, {1})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (loss)", "one element"});
  expect_error(lib.instantiate("nll_loss_fwd_f32", {{tp(F, {8, 3}), tp(I, {3})}, {tp(F, {1}), tp(F, {1})}, {0.5f}}),
               GlueStatus::IncompatibleScalarParams, {"ignore_index", "integer"});
  expect_error(lib.instantiate("nll_loss_bwd_bf16", {{tp(B, {1}), tp(I, {3}), tp(B, {2})}, {tp(B, {8, 3})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 2 (total_weight)"});
  expect_error(lib.instantiate("dropout_fwd_f32", {{tp(F, {8})}, {tp(F, {8}), tp(F, {8})}, {1.5f, 1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (p)", "[0, 1]"});
  expect_error(lib.instantiate("dropout_fwd_f32", {{tp(F, {8})}, {tp(F, {8}), tp(F, {8})}, {0.5f, 1.5f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (seed)"});
  expect_error(lib.instantiate("dropout_fwd_f32", {{tp(F, {8})}, {tp(F, {8})}, {0.5f, 1.0f}}),
               GlueStatus::IncompatibleOutputCount, {"Y, mask"});
  expect_error(lib.instantiate("dropout_fwd_f32", {{tp(F, {8}), tp(I, {1})}, {tp(F, {8}), tp(F, {8})}, {0.5f, 1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"with a seed tensor takes 1 scalar parameter (p), got 2"});
  expect_error(lib.instantiate("dropout_fwd_f32", {{tp(F, {8})}, {tp(F, {8}), tp(F, {8})}, {0.5f}}),
               GlueStatus::IncompatibleScalarParams, {"without a seed tensor takes 2 scalar parameters (p, seed), got 1"});
  expect_error(lib.instantiate("dropout_fwd_f32", {{tp(F, {8}), tp(I, {2})}, {tp(F, {8}), tp(F, {8})}, {0.5f}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (seed)"});
  expect_error(lib.instantiate("dropout_fwd_f32", {{tp(F, {8}), tp(F, {1})}, {tp(F, {8}), tp(F, {8})}, {0.5f}}),
               GlueStatus::IncompatibleDataType, {"input 1 (seed)"});
  expect_error(lib.instantiate("dropout_bwd_bf16", {{tp(B, {8}), tp(B, {9})}, {tp(B, {8})}, {0.5f}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (mask)"});
  expect_error(lib.instantiate("adam_f32", {{tp(F, {8}), tp(F, {8}), tp(F, {8}), tp(F, {8})}, {tp(F, {8}), tp(F, {8}), tp(F, {8})},
                                            {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 5 (step)"});
  expect_error(lib.instantiate("sgd_momentum_f32", {{tp(F, {8}), tp(F, {8}), tp(F, {8})}, {tp(F, {8}), tp(F, {8})}, {0.1f, 0.9f, 0.0f, 0.0f}}),
               GlueStatus::IncompatibleScalarParams, {"lr, momentum"});
  expect_error(lib.instantiate("adadelta_f32", {{tp(B, {8}), tp(F, {8}), tp(F, {8}), tp(F, {8})}, {tp(F, {8}), tp(F, {8}), tp(F, {8})},
                                                {1.0f, 0.9f, 1e-6f, 0.0f}}),
               GlueStatus::IncompatibleDataType, {"input 0 (param)"});
  expect_error(lib.instantiate("adamw_f32", {{tp(F, {8}), tp(F, {8}), tp(F, {8}), tp(F, {8})}, {tp(F, {8}), tp(F, {8}), tp(F, {7})},
                                             {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f}}),
               GlueStatus::IncompatibleOutputSize, {"output 2 (exp_avg_sq)"});
}

TEST(TpcKernelGlue3, GeometryAndPatterns) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16, I = DType::I32;
  auto r = lib.instantiate("layernorm_fwd_bf16", {{tp(B, {300, 3, 4}), tp(B, {300}), tp(B, {300})},
                                                  {tp(B, {300, 3, 4}), tp(F, {1, 3, 4}), tp(F, {1, 3, 4})}, {1e-5f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 3, 4, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 0, 0, 299}));
  EXPECT_EQ(r.inst->input_patterns[1][1], (AccessPatternDim{1, 0, 0, 0}));
  EXPECT_EQ(r.inst->inputs[1].stride[1], 0);
  EXPECT_EQ(r.inst->output_patterns[1][0], (AccessPatternDim{0, 0, 0, 0}));
  r = lib.instantiate("layernorm_bwd_gamma_beta_f32", {{tp(F, {130, 3}), tp(F, {130, 3}), tp(F, {1, 3}), tp(F, {1, 3})},
                                                       {tp(F, {130}), tp(F, {130})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  // f32: a step is four vectors (layernorm_gamma_beta.cpp), one column step a dim-4 step (S3).
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 1, 1, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 256, 0, 255}));
  EXPECT_EQ(r.inst->input_patterns[0][1], (AccessPatternDim{1, 0, 0, 2}));
  EXPECT_EQ(r.inst->srf[3], 1u);
  r = lib.instantiate("layernorm_bwd_gamma_beta_bf16", {{tp(B, {130, 3}), tp(B, {130, 3}), tp(F, {1, 3}), tp(F, {1, 3})},
                                                        {tp(B, {130}), tp(B, {130})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  // bf16 the same columns: two bf16 vectors a step.
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 1, 1, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 256, 0, 255}));
  // A split (1024 rows in 16 chunks of 64): its (chunk, column step) pairs on dim 4, every column.
  r = lib.instantiate("layernorm_bwd_gamma_beta_f32", {{tp(F, {768, 1024}), tp(F, {768, 1024}), tp(F, {1, 1024}), tp(F, {1, 1024})},
                                                       {tp(F, {768}), tp(F, {768})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  ASSERT_EQ(r.parts.size(), 3u);
  EXPECT_EQ(r.parts[0].inst.ispace_geometry, (std::array<int32_t, 5>{1, 1, 1, 1, 48}));
  EXPECT_EQ(r.parts[0].inst.srf[3], 3u);
  EXPECT_EQ(r.parts[0].inst.input_patterns[0][0], (AccessPatternDim{0, 0, 0, 767}));
  EXPECT_EQ(r.parts[0].inst.output_patterns[0][4], (AccessPatternDim{4, 0, 0, 15}));
  r = lib.instantiate("nll_loss_bwd_f32", {{tp(F, {1}), tp(I, {5}), tp(F, {1})}, {tp(F, {100, 5})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{2, 5, 1, 1, 1}));
  // The target viewed as [1, N] (a read at (0, n) is target n alone, what its prefetch brings).
  EXPECT_EQ(r.inst->inputs[1].size[0], 1u);
  EXPECT_EQ(r.inst->inputs[1].size[1], 5u);
  EXPECT_EQ(r.inst->input_patterns[1][0], (AccessPatternDim{0, 0, 0, 0}));
  EXPECT_EQ(r.inst->input_patterns[1][1], (AccessPatternDim{1, 1, 0, 0}));
  r = lib.instantiate("nll_loss_fwd_bf16", {{tp(B, {100, 5}), tp(I, {5})}, {tp(B, {}), tp(B, {1})}, {-100.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 1, 1, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].padding, 0x7FC0u);
  EXPECT_EQ(static_cast<int32_t>(r.inst->srf[1]), -100);
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
