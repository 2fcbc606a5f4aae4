// The fourth batch against C++ references, on 1 and 8 simulated cores (bit-identical outputs, no
// writes outside the outputs): permute / transpose up to 5-D (the view variant when dim 0 stays,
// the per-element gather when it moves; raw bits, NaN payloads included), embedding forward (a
// gather; out-of-range indices give zero rows) and backward (scatter-add into a zeroed
// grad_weight, bit-exact against a reference that adds in f32 in the indices' memory order and
// rounds once; padding_idx; out-of-range indices add nothing; several VLM row chunks), the validation errors and the geometries / patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

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
// Raw element bits (any pattern: NaNs with payloads, infinities, denormals).
void fill_bits(HostTensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  for (uint32_t& v : t.data) v = t.dtype == DType::BF16 ? (rng() & 0xFFFFu) : static_cast<uint32_t>(rng());
}

// ---- permute / transpose ----

// The reference: Y's element at c is X's element at x_c[perm[d]] = c[d].
HostTensor permute_ref(const HostTensor& x, const std::vector<unsigned>& perm, const Shape& y_shape) {
  HostTensor y(x.dtype, y_shape);
  for (size_t i = 0; i < y.count(); ++i) {
    const auto c = coords(y_shape, i);
    std::array<uint32_t, 5> xc{};
    for (size_t d = 0; d < perm.size(); ++d) xc[perm[d]] = c[d];
    y.data[i] = x.data[linear(x.shape, xc)];
  }
  return y;
}
Shape permuted(const Shape& s, const std::vector<unsigned>& perm) {
  Shape r(s.size());
  for (size_t d = 0; d < s.size(); ++d) r[d] = s[perm[d]];
  return r;
}
std::vector<float> as_scalars(const std::vector<unsigned>& perm) { return {perm.begin(), perm.end()}; }

void check_permute(DType t, const Shape& s, const std::vector<unsigned>& perm, uint32_t seed) {
  HostTensor x(t, s);
  fill_bits(x, seed);
  const Shape ys = permuted(s, perm);
  const std::string guid = "permute" + sfx(t);
  const auto got = run_1_and_8(guid, {x}, {HostTensor(t, ys)}, as_scalars(perm));
  const HostTensor want = permute_ref(x, perm, ys);
  std::string ps;
  for (unsigned p : perm) ps += std::to_string(p);
  EXPECT_EQ(got[0].data, want.data) << guid << " " << shape_str(s) << " perm " << ps;
}

TEST(TpcKernelPermute, EveryPermutationUpToRank3) {
  const std::vector<Shape> shapes = {{1}, {65}, {300}, {65, 3}, {3, 129}, {1, 70}, {130, 1}, {70, 3, 2}, {5, 66, 3}, {2, 3, 129}};
  uint32_t seed = 1;
  for (DType t : {DType::F32, DType::BF16})
    for (const Shape& s : shapes) {
      std::vector<unsigned> perm(s.size());
      std::iota(perm.begin(), perm.end(), 0u);
      do check_permute(t, s, perm, seed++);
      while (std::next_permutation(perm.begin(), perm.end()));
    }
}

TEST(TpcKernelPermute, Rank4And5IncludingDim0Moves) {
  const std::vector<std::pair<Shape, std::vector<unsigned>>> cases = {
      {{65, 3, 2, 2}, {0, 3, 1, 2}},          {{65, 3, 2, 2}, {3, 2, 1, 0}},    {{7, 5, 3, 2}, {1, 0, 3, 2}},
      {{7, 5, 3, 2}, {2, 3, 0, 1}},           {{129, 2, 1, 3}, {0, 2, 3, 1}},   {{5, 4, 3, 2, 3}, {4, 3, 2, 1, 0}},
      {{5, 4, 3, 2, 3}, {0, 4, 1, 3, 2}},     {{5, 4, 3, 2, 3}, {2, 0, 4, 1, 3}}, {{3, 2, 2, 2, 65}, {4, 0, 1, 2, 3}},
      {{66, 2, 1, 2, 3}, {0, 2, 1, 4, 3}},    {{66, 2, 1, 2, 3}, {1, 2, 3, 4, 0}}, {{1, 1, 1, 1, 1}, {3, 1, 4, 0, 2}}};
  uint32_t seed = 100;
  for (DType t : {DType::F32, DType::BF16})
    for (const auto& [s, perm] : cases) check_permute(t, s, perm, seed++);
  // Random permutations of 5-D shapes with odd sizes.
  std::mt19937 rng(7);
  for (int n = 0; n < 8; ++n) {
    std::vector<unsigned> perm = {0, 1, 2, 3, 4};
    std::shuffle(perm.begin(), perm.end(), rng);
    const auto draw = [&rng](uint32_t n) { return static_cast<uint32_t>(1 + rng() % n); };
    const Shape s = {draw(70), draw(4), draw(3), draw(3), draw(3)};
    check_permute(n % 2 ? DType::BF16 : DType::F32, s, perm, seed++);
  }
}

TEST(TpcKernelPermute, ZeroDimAndVariants) {
  // 0-D: no scalars, a one-element copy.
  for (DType t : {DType::F32, DType::BF16}) {
    HostTensor x(t, {});
    x.data[0] = t == DType::F32 ? 0x7FA12345u : 0xFF81u;   // a NaN with a payload
    const auto got = run_1_and_8("permute" + sfx(t), {x}, {HostTensor(t, {})}, {});
    EXPECT_EQ(got[0].data, x.data);
  }
  KernelLibrary& lib = KernelLibrary::instance();
  auto r = lib.instantiate("permute_f32", {{tp(DType::F32, {70, 3, 4})}, {tp(DType::F32, {70, 4, 3})}, {0, 2, 1}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("view"), std::string::npos) << r.inst->variant;
  r = lib.instantiate("permute_bf16", {{tp(DType::BF16, {70, 3, 4})}, {tp(DType::BF16, {4, 70, 3})}, {2, 0, 1}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("tiles"), std::string::npos) << r.inst->variant;
}

// Rows of one vector take permute_rows.s (the innermost loop over dim 1; the prefetch wrapping to
// the next dim-2 coordinate, or on short passes at the next dim-3 pass: both on these shapes, 1
// and 8 cores); BERT's heads permute is one. Values on shapes whose dim-1 ranges end
// inside a core's slice, and the variants the short-row kernels of softmax and layernorm select.
TEST(TpcKernelPermute, OneVectorRowsAndShortRowVariants) {
  KernelLibrary& lib = KernelLibrary::instance();
  auto r = lib.instantiate("permute_f32", {{tp(DType::F32, {64, 12, 128, 2})}, {tp(DType::F32, {64, 128, 12, 2})}, {0, 2, 1, 3}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("permute rows"), std::string::npos) << r.inst->variant;
  uint32_t seed = 900;
  for (DType t : {DType::F32, DType::BF16}) {
    check_permute(t, {64, 5, 37, 3}, {0, 2, 1, 3}, seed++);
    check_permute(t, {50, 3, 130}, {0, 2, 1}, seed++);
    check_permute(t, {64, 7, 2, 3, 2}, {0, 3, 1, 4, 2}, seed++);
  }
  r = lib.instantiate("softmax_fwd_f32", {{tp(DType::F32, {128, 5})}, {tp(DType::F32, {128, 5})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("short 2"), std::string::npos) << r.inst->variant;
  r = lib.instantiate("softmax_fwd_f32", {{tp(DType::F32, {128, 10})}, {tp(DType::F32, {128, 10})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("2 rows a step of 2"), std::string::npos) << r.inst->variant;
  r = lib.instantiate("softmax_fwd_f32", {{tp(DType::F32, {128, 8})}, {tp(DType::F32, {128, 8})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("4 rows a step of 2"), std::string::npos) << r.inst->variant;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 2, 1, 1, 1}));
  r = lib.instantiate("softmax_bwd_f32", {{tp(DType::F32, {300, 6}), tp(DType::F32, {300, 6})}, {tp(DType::F32, {300, 6})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant.find("short"), std::string::npos) << r.inst->variant;
  const auto ln = [&](DType t, uint32_t n0) {
    return lib.instantiate("layernorm_fwd" + std::string(t == DType::F32 ? "_f32" : "_bf16"),
                           {{tp(t, {n0, 4})}, {tp(t, {n0, 4}), tp(DType::F32, {1, 4}), tp(DType::F32, {1, 4})}, {1e-5f}});
  };
  r = ln(DType::F32, 768);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("scheduled 2 x 12"), std::string::npos) << r.inst->variant;
  r = lib.instantiate_own_kernel("layernorm_fwd_f32", {{tp(DType::F32, {768, 4})},
                                                      {tp(DType::F32, {768, 4}), tp(DType::F32, {1, 4}), tp(DType::F32, {1, 4})},
                                                      {1e-5f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("short 12"), std::string::npos) << r.inst->variant;
  r = ln(DType::BF16, 769);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant.find("short"), std::string::npos) << r.inst->variant;
  // A bias add: the row in registers, one row a step.
  r = lib.instantiate("add_fwd_f32", {{tp(DType::F32, {768, 1024}), tp(DType::F32, {768, 1})}, {tp(DType::F32, {768, 1024})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("bias-row 1 12"), std::string::npos) << r.inst->variant;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 1024, 1, 1, 1}));
}

// layernorm over f32 or bf16 rows of whole vectors is glue-written and list-scheduled
// (layernorm_rows.cpp; the forward two rows a step for an even row count): Y, mean, rstd and the
// backward's dx bit-identical to the short-row kernel files, with and without gamma / beta, on 1
// and 8 cores.
// `scheduled` on 1 and 8 cores against `own` (the kernel file) on one, bit for bit; `outputs`
// makes the output tensors. Returns the kernel file's outputs.
std::vector<HostTensor> expect_same_bits(const InstantiateResult& scheduled, const InstantiateResult& own,
                                         const std::vector<HostTensor>& inputs,
                                         const std::function<std::vector<HostTensor>()>& outputs) {
  std::vector<HostTensor> expected = outputs();
  const RunOutcome reference = run_instantiated(own, inputs, expected, 1, KernelLibrary::kDefaultVectorBits);
  if (!reference.ok) {
    ADD_FAILURE() << "the kernel file: " << reference.error;
    return expected;
  }
  for (unsigned cores : {1u, 8u}) {
    std::vector<HostTensor> got = outputs();
    const RunOutcome r = run_instantiated(scheduled, inputs, got, cores, KernelLibrary::kDefaultVectorBits);
    if (!r.ok) {
      ADD_FAILURE() << cores << " cores: " << r.error;
      continue;
    }
    EXPECT_TRUE(r.gaps_ok) << cores << " cores wrote outside the outputs";
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k].data, expected[k].data) << "output " << k << ", " << cores << " cores";
  }
  return expected;
}

TEST(TpcKernelLayerNorm, ScheduledRowsAreBitIdenticalToTheShortKernel) {
  KernelLibrary& lib = KernelLibrary::instance();
  uint32_t seed = 990;
  for (DType t : {DType::F32, DType::BF16}) {
    const bool bf16 = t == DType::BF16;
    const uint32_t lanes = KernelLibrary::kDefaultVectorBits / tpc::dtype_bits(t);
    for (uint32_t n0 : bf16 ? std::vector<uint32_t>{64u, 128u, 640u, 768u} : std::vector<uint32_t>{16u, 32u, 64u, 704u, 768u}) {
      for (uint32_t rows : {7u, 10u, 12u}) {
        for (bool affine : {false, true}) {
          SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(n0) + sfx(t) + (affine ? " affine" : ""));
          std::vector<HostTensor> inputs{HostTensor(t, {n0, rows})};
          fill_uniform(inputs[0], seed++, -3.0f, 5.0f);
          if (affine) {
            for (int k = 0; k < 2; ++k) {
              inputs.emplace_back(t, std::vector<uint32_t>{n0});
              fill_uniform(inputs.back(), seed++, -2.0f, 2.0f);
            }
          }
          KernelParams params;
          for (const HostTensor& in : inputs) params.inputs.push_back(in.params());
          params.outputs = {tp(t, {n0, rows}), tp(DType::F32, {1, rows}), tp(DType::F32, {1, rows})};
          params.scalars = {1e-5f};
          const InstantiateResult scheduled = lib.instantiate("layernorm_fwd" + sfx(t), params);
          const InstantiateResult own = lib.instantiate_own_kernel("layernorm_fwd" + sfx(t), params);
          ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
          if (n0 >= lanes)
            EXPECT_NE(scheduled.inst->variant.find(rows % 2 == 0 ? "scheduled 2" : "scheduled 1"), std::string::npos)
                << scheduled.inst->variant;
          else if (!bf16 && rows % (64 / n0) == 0)   // k rows a vector, 2k a step when that divides
            EXPECT_NE(scheduled.inst->variant.find("scheduled " + std::to_string(rows % (128 / n0) == 0 ? 128 / n0 : 64 / n0) +
                                                   " x " + std::to_string(n0) + " elements"),
                      std::string::npos)
                << scheduled.inst->variant;
          else
            EXPECT_EQ(scheduled.inst->variant, own.inst->variant);
          const auto outputs = [&] {
            return std::vector<HostTensor>{HostTensor(t, {n0, rows}), HostTensor(DType::F32, {1, rows}),
                                           HostTensor(DType::F32, {1, rows})};
          };
          const std::vector<HostTensor> expected = expect_same_bits(scheduled, own, inputs, outputs);
          // The backward's dx from the forward's statistics.
          HostTensor grad(t, {n0, rows});
          fill_uniform(grad, seed++, -1.0f, 1.0f);
          std::vector<HostTensor> bwd_inputs{grad, inputs[0], expected[1], expected[2]};
          if (affine) bwd_inputs.push_back(inputs[1]);
          KernelParams bwd;
          for (const HostTensor& in : bwd_inputs) bwd.inputs.push_back(in.params());
          bwd.outputs = {tp(t, {n0, rows})};
          const InstantiateResult bwd_scheduled = lib.instantiate("layernorm_bwd" + sfx(t), bwd);
          const InstantiateResult bwd_own = lib.instantiate_own_kernel("layernorm_bwd" + sfx(t), bwd);
          ASSERT_TRUE(bwd_scheduled.ok() && bwd_own.ok()) << bwd_scheduled.message << bwd_own.message;
          if (!bf16 || n0 >= lanes)
            EXPECT_NE(bwd_scheduled.inst->variant.find(!bf16 && n0 < 64 && rows % (64 / n0) == 0 ? " elements" : "scheduled"),
                      std::string::npos)
                << bwd_scheduled.inst->variant;
          EXPECT_NE(bwd_own.inst->variant.find("short"), std::string::npos) << bwd_own.inst->variant;
          expect_same_bits(bwd_scheduled, bwd_own, bwd_inputs, [&] { return std::vector<HostTensor>{HostTensor(t, {n0, rows})}; });
        }
      }
    }
  }
}

// f32 rows of one or two whole vectors in pairs take two rows a step (paired_rows.cpp): the same
// bits as one row a step (an odd row count keeps softmax_short.s), forward and backward, softmax
// and log_softmax, on 1 and 8 cores.
// dgamma / dbeta: the kernel that steps four column vectors (bf16: two, each two columns) and walks
// rows in pairs (layernorm_gamma_beta.cpp) against the kernel file's four-row blocks and single
// rows, bit for bit: columns past the features, an odd last row, fewer rows than a block, several
// dims of rows.
TEST(TpcKernelLayerNorm, GammaBetaColumnsAreBitIdenticalToTheKernelFile) {
  KernelLibrary& lib = KernelLibrary::instance();
  uint32_t seed = 4410;
  for (DType t : {DType::F32, DType::BF16}) {   // bf16: two vectors a step, each two columns
    for (const Shape& shape : {Shape{64, 3}, Shape{200, 5}, Shape{256, 7}, Shape{768, 16}, Shape{1000, 33},
                               Shape{130, 3, 5}}) {
      SCOPED_TRACE(shape_str(shape) + sfx(t));
      Shape stats{1};
      stats.insert(stats.end(), shape.begin() + 1, shape.end());
      std::vector<HostTensor> inputs{HostTensor(t, shape), HostTensor(t, shape), HostTensor(DType::F32, stats),
                                     HostTensor(DType::F32, stats)};
      for (HostTensor& x : inputs) fill_uniform(x, seed++, -3.0f, 3.0f);
      KernelParams params;
      for (const HostTensor& x : inputs) params.inputs.push_back(x.params());
      params.outputs = {tp(t, {shape[0]}), tp(t, {shape[0]})};
      const InstantiateResult columns = lib.instantiate("layernorm_bwd_gamma_beta" + sfx(t), params);
      const InstantiateResult own = lib.instantiate_own_kernel("layernorm_bwd_gamma_beta" + sfx(t), params);
      ASSERT_TRUE(columns.ok() && own.ok()) << columns.message << own.message;
      EXPECT_NE(columns.inst->variant.find("4 columns scheduled"), std::string::npos) << columns.inst->variant;
      EXPECT_EQ(columns.inst->ispace_geometry[0], static_cast<int32_t>((shape[0] + 255) / 256));
      const auto outputs = [&] { return std::vector<HostTensor>{HostTensor(t, {shape[0]}), HostTensor(t, {shape[0]})}; };
      expect_same_bits(columns, own, inputs, outputs);
    }
  }
}

// Rows six a step where the registers hold them (6 and 12 rows: the forward), four a step (8 rows;
// 6 and 12 for the backward) and two a step (10 rows) against one row a step (11 rows: no pairing),
// f32 and bf16 (a bf16 row of one vector pairs as its two f32 halves).
TEST(TpcKernelSoftmax, PairedRowsAreBitIdenticalToOneRowAStep) {
  uint32_t seed = 950;
  for (DType t : {DType::F32, DType::BF16}) {
    for (uint32_t n0 : {64u, 128u}) {
      for (const char* op : {"softmax", "log_softmax"}) {
        for (uint32_t rows : {8u, 6u, 10u}) {
          SCOPED_TRACE(std::string(op) + sfx(t) + " " + std::to_string(rows) + " rows of " + std::to_string(n0));
          HostTensor odd(t, {n0, 11}), g_odd(t, {n0, 11});
          fill_uniform(odd, seed++, -6.0f, 6.0f);
          fill_uniform(g_odd, seed++, -1.0f, 1.0f);
          HostTensor even(t, {n0, rows}), g_even(t, {n0, rows});
          std::copy(odd.data.begin(), odd.data.begin() + n0 * rows, even.data.begin());
          std::copy(g_odd.data.begin(), g_odd.data.begin() + n0 * rows, g_even.data.begin());
          const auto y_odd = run_1_and_8(std::string(op) + "_fwd" + sfx(t), {odd}, {HostTensor(t, {n0, 11})});
          const auto y_even = run_1_and_8(std::string(op) + "_fwd" + sfx(t), {even}, {HostTensor(t, {n0, rows})});
          EXPECT_TRUE(std::equal(y_even[0].data.begin(), y_even[0].data.end(), y_odd[0].data.begin()));
          const auto dx_odd = run_1_and_8(std::string(op) + "_bwd" + sfx(t), {g_odd, y_odd[0]}, {HostTensor(t, {n0, 11})});
          const auto dx_even =
              run_1_and_8(std::string(op) + "_bwd" + sfx(t), {g_even, y_even[0]}, {HostTensor(t, {n0, rows})});
          EXPECT_TRUE(std::equal(dx_even[0].data.begin(), dx_even[0].data.end(), dx_odd[0].data.begin()));
        }
      }
    }
  }
  KernelLibrary& lib = KernelLibrary::instance();
  const auto r = lib.instantiate("softmax_bwd_f32", {{tp(DType::F32, {64, 8}), tp(DType::F32, {64, 8})}, {tp(DType::F32, {64, 8})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant, "softmax bwd f32 4 rows a step of 1");
  // Six rows of two vectors take 36 registers forward; log_softmax keeps the exps too (48: four).
  for (const auto& [guid, variant] : {std::pair<std::string, std::string>{"softmax_fwd_f32", "softmax fwd f32 6 rows a step of 2"},
                                      {"log_softmax_fwd_f32", "log_softmax fwd f32 4 rows a step of 2"},
                                      {"softmax_bwd_f32", "softmax bwd f32 4 rows a step of 2"}}) {
    const bool bwd = guid.find("_bwd") != std::string::npos;
    KernelParams params;
    params.inputs.assign(bwd ? 2 : 1, tp(DType::F32, {128, 12}));
    params.outputs = {tp(DType::F32, {128, 12})};
    const auto six = lib.instantiate(guid, params);
    ASSERT_TRUE(six.ok()) << six.message;
    EXPECT_EQ(six.inst->variant, variant);
  }
  // bf16 rows of 128 paired, in at most half the issue cycles of one row a step through io_bf16.inc's
  // one scratch register.
  for (const std::string guid : {"softmax_fwd_bf16", "log_softmax_fwd_bf16", "softmax_bwd_bf16", "log_softmax_bwd_bf16"}) {
    SCOPED_TRACE(guid);
    const bool bwd = guid.find("_bwd") != std::string::npos;
    std::vector<HostTensor> inputs{HostTensor(DType::BF16, {128, 64})};
    if (bwd) inputs.emplace_back(DType::BF16, std::vector<uint32_t>{128, 64});
    for (size_t k = 0; k < inputs.size(); ++k) fill_uniform(inputs[k], seed++, bwd && k == 1 ? 0.0f : -6.0f, 1.0f);
    KernelParams params;
    for (const HostTensor& in : inputs) params.inputs.push_back(in.params());
    params.outputs.push_back(tp(DType::BF16, {128, 64}));
    const auto paired = lib.instantiate(guid, params);
    const auto own = lib.instantiate_own_kernel(guid, params);
    ASSERT_TRUE(paired.ok() && own.ok()) << paired.message << own.message;
    EXPECT_EQ(paired.inst->variant, guid.substr(0, guid.find("_" + std::string(bwd ? "bwd" : "fwd"))) +
                                        (bwd ? " bwd" : " fwd") + " bf16 4 rows a step of 1");
    std::vector<HostTensor> got{HostTensor(DType::BF16, {128, 64})}, want{HostTensor(DType::BF16, {128, 64})};
    const auto r_paired = run_instantiated(paired, inputs, got, 1, KernelLibrary::kDefaultVectorBits);
    const auto r_own = run_instantiated(own, inputs, want, 1, KernelLibrary::kDefaultVectorBits);
    ASSERT_TRUE(r_paired.ok && r_own.ok) << r_paired.error << r_own.error;
    EXPECT_EQ(got[0].data, want[0].data);
    EXPECT_LT(r_paired.issue_cycles * 2, r_own.issue_cycles) << "the kernel file's " << r_own.issue_cycles;
  }
}

TEST(TpcKernelPermute, StridedTensors) {
  for (DType t : {DType::F32, DType::BF16}) {
    for (const std::vector<unsigned>& perm : {std::vector<unsigned>{0, 2, 1}, std::vector<unsigned>{1, 2, 0}}) {
      HostTensor x(t, {70, 3, 4}, {1, 80, 300});
      fill_bits(x, 5);
      const Shape ys = permuted(x.shape, perm);
      const int64_t row = ys[0] + 9;
      HostTensor y(t, ys, {1, row, row * ys[1] + 5});
      const auto got = run_1_and_8("permute" + sfx(t), {x}, {y}, as_scalars(perm));
      EXPECT_EQ(got[0].data, permute_ref(x, perm, ys).data) << perm[0] << perm[1] << perm[2];
    }
  }
}

// The cost in bundles executed (functional): the view variant moves a vector per step; f32 tiles
// transposed in registers take under a quarter of a bundle an element (768 VPU operations per
// 64 x 64 tile: one shuffle and three selects per pair of rows and stage); the element gather (the
// kernel file, and bf16) two bundles an element plus the row overhead. All the same bits.
TEST(TpcKernelPermute, TilesCostAFractionOfABundlePerElementTheGatherTwo) {
  HostTensor x(DType::F32, {256, 64});
  fill_bits(x, 3);
  std::vector<HostTensor> view = {HostTensor(DType::F32, {256, 64})}, tiles = {HostTensor(DType::F32, {64, 256})};
  std::vector<HostTensor> gather = tiles;
  const RunOutcome rv = run_kernel("transpose_f32", {x}, view, 1, {1.0f, 1.0f});
  const RunOutcome rt = run_kernel("transpose_f32", {x}, tiles, 1, {0.0f, 1.0f});
  const KernelParams params{{x.params()}, {gather[0].params()}, {0.0f, 1.0f}};
  const InstantiateResult own = KernelLibrary::instance().instantiate_own_kernel("transpose_f32", params);
  ASSERT_TRUE(own.ok()) << own.message;
  EXPECT_NE(own.inst->variant.find("gather"), std::string::npos) << own.inst->variant;
  const RunOutcome rg = run_instantiated(own, {x}, gather, 1, KernelLibrary::kDefaultVectorBits);
  ASSERT_TRUE(rv.ok && rt.ok && rg.ok) << rv.error << rt.error << rg.error;
  EXPECT_EQ(tiles[0].data, permute_ref(x, {1, 0}, {64, 256}).data);
  EXPECT_EQ(gather[0].data, tiles[0].data);
  EXPECT_LT(rv.bundles, x.count() / 8) << rv.bundles;
  EXPECT_GE(rt.bundles * 16, 3 * x.count()) << rt.bundles << ": at least 768 VPU operations a tile";
  EXPECT_LT(rt.bundles * 4, x.count()) << rt.bundles;
  EXPECT_GE(rg.bundles, 2 * x.count()) << rg.bundles;
  EXPECT_LT(rg.bundles, 3 * x.count()) << rg.bundles;
}

// bf16 tiles are 128 x 128 (u16 lanes): the gather's values in under a quarter of a bundle an
// element, on a shape that ends inside a tile both ways, on 1 and 8 cores.
TEST(TpcKernelPermute, Bf16TilesAreTheGathersValuesAtAFractionOfItsCost) {
  for (const Shape& shape : {Shape{256, 128}, Shape{300, 130}}) {
    SCOPED_TRACE(shape_str(shape));
    HostTensor x(DType::BF16, shape);
    fill_bits(x, 5);
    const Shape ys{shape[1], shape[0]};
    const KernelParams params{{x.params()}, {tp(DType::BF16, ys)}, {0.0f, 1.0f}};
    const InstantiateResult tiles = KernelLibrary::instance().instantiate("transpose_bf16", params);
    const InstantiateResult own = KernelLibrary::instance().instantiate_own_kernel("transpose_bf16", params);
    ASSERT_TRUE(tiles.ok() && own.ok()) << tiles.message << own.message;
    EXPECT_NE(tiles.inst->variant.find("tiles"), std::string::npos) << tiles.inst->variant;
    std::vector<HostTensor> want{HostTensor(DType::BF16, ys)};
    const RunOutcome rg = run_instantiated(own, {x}, want, 1, KernelLibrary::kDefaultVectorBits);
    ASSERT_TRUE(rg.ok) << rg.error;
    EXPECT_EQ(want[0].data, permute_ref(x, {1, 0}, ys).data);
    for (unsigned cores : {1u, 8u}) {
      std::vector<HostTensor> got{HostTensor(DType::BF16, ys)};
      const RunOutcome rt = run_instantiated(tiles, {x}, got, cores, KernelLibrary::kDefaultVectorBits);
      ASSERT_TRUE(rt.ok) << rt.error;
      EXPECT_TRUE(rt.gaps_ok);
      EXPECT_EQ(got[0].data, want[0].data) << cores << " cores";
      if (cores == 1 && shape[0] == 256) EXPECT_LT(rt.bundles * 4, x.count()) << rt.bundles;
    }
  }
}

// BERT's heads permute split over 24 cores (6 tokens x 12 heads a dim-3 pass): each row
// prefetches the same row of the next pass, three bundles a row and no wrap, where the rows-ahead
// walk (one core: 1536 rows a pass) pays six a row. The same bits.
TEST(TpcKernelPermute, ShortPassesPrefetchTheNextPassAtThreeBundlesARow) {
  HostTensor x(DType::F32, {64, 128, 12, 8});
  fill_bits(x, 11);
  const std::vector<unsigned> perm = {0, 2, 1, 3};
  const Shape ys = permuted(x.shape, perm);
  std::vector<HostTensor> split = {HostTensor(DType::F32, ys)}, whole = split;
  const RunOutcome r24 = run_kernel("permute_f32", {x}, split, 24, as_scalars(perm));
  const RunOutcome r1 = run_kernel("permute_f32", {x}, whole, 1, as_scalars(perm));
  ASSERT_TRUE(r24.ok && r1.ok) << r24.error << r1.error;
  EXPECT_EQ(split[0].data, permute_ref(x, perm, ys).data);
  EXPECT_EQ(whole[0].data, split[0].data);
  const uint64_t rows = 128 * 12 * 8;
  EXPECT_LT(r24.bundles, 4 * rows) << r24.bundles << " bundles over 24 cores";
  EXPECT_GE(r1.bundles, 6 * rows) << r1.bundles << " bundles on one core";
}

TEST(TpcKernelTranspose, SwapsTwoDims) {
  const std::vector<std::pair<Shape, std::pair<unsigned, unsigned>>> cases = {
      {{70, 3, 4}, {0, 2}}, {{70, 3, 4}, {1, 2}}, {{65, 129}, {1, 0}}, {{5, 4, 3, 2, 3}, {0, 4}}, {{300}, {0, 0}},
      {{3, 2, 2, 2, 65}, {3, 1}}};
  uint32_t seed = 200;
  for (DType t : {DType::F32, DType::BF16})
    for (const auto& [s, ab] : cases) {
      std::vector<unsigned> perm(s.size());
      std::iota(perm.begin(), perm.end(), 0u);
      std::swap(perm[ab.first], perm[ab.second]);
      HostTensor x(t, s);
      fill_bits(x, seed++);
      const Shape ys = permuted(s, perm);
      const auto got = run_1_and_8("transpose" + sfx(t), {x}, {HostTensor(t, ys)},
                                   {static_cast<float>(ab.first), static_cast<float>(ab.second)});
      EXPECT_EQ(got[0].data, permute_ref(x, perm, ys).data) << shape_str(s) << " " << ab.first << "," << ab.second;
    }
}

// ---- embedding ----

Shape embedding_shape(uint32_t d, const Shape& idx) {
  Shape s = {d};
  s.insert(s.end(), idx.begin(), idx.end());
  return s;
}
HostTensor random_indices(const Shape& s, int32_t lo, int32_t hi, uint32_t seed) {
  HostTensor idx(DType::I32, s);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> u(lo, hi);
  for (uint32_t& v : idx.data) v = static_cast<uint32_t>(u(rng));
  return idx;
}

const std::vector<Shape>& index_shapes() {
  static const std::vector<Shape> s = {{}, {1}, {9}, {3, 4}, {2, 3, 2}, {2, 1, 3, 2}};
  return s;
}

TEST(TpcKernelEmbedding, ForwardGathersRowsAndZeroesOutOfRange) {
  uint32_t seed = 1;
  for (DType t : {DType::F32, DType::BF16})
    for (uint32_t d : {1u, 63u, 65u, 129u, 300u})
      for (uint32_t v : {1u, 7u, 50u})
        for (const Shape& is : index_shapes()) {
          HostTensor w(t, {d, v});
          fill_bits(w, seed++);
          // Indices in -2 .. V+1: some out of range (negative and >= V).
          const HostTensor idx = random_indices(is, -2, static_cast<int32_t>(v) + 1, seed++);
          const Shape ys = embedding_shape(d, is);
          const auto got = run_1_and_8("embedding_fwd" + sfx(t), {w, idx}, {HostTensor(t, ys)});
          size_t bad = 0;
          for (size_t n = 0; n < idx.count() && bad < 3; ++n) {
            const int32_t r = static_cast<int32_t>(idx.data[n]);
            for (uint32_t j = 0; j < d && bad < 3; ++j) {
              const uint32_t want = r >= 0 && r < static_cast<int32_t>(v) ? w.data[static_cast<size_t>(r) * d + j] : 0u;
              if (got[0].data[n * d + j] != want) {
                ++bad;
                ADD_FAILURE() << "embedding_fwd" << sfx(t) << " D " << d << " V " << v << " indices " << shape_str(is)
                              << " n " << n << " (index " << r << ") elem " << j << ": got " << got[0].data[n * d + j]
                              << ", want " << want;
              }
            }
          }
        }
}

// Rows of at most 36 vectors are software-pipelined (embedding_rows.cpp): groups of rows (BERT's
// 768: two f32 rows, five bf16; one-vector rows: 16), each group's rows prefetched three groups
// ahead, their indices staged in the SLM, four groups a step. The kernel file's Y, bit for bit, on
// index counts the step does not divide, some out of range, cores with one step and with several
// (the prologue, the staged groups carried from step to step, the groups past the end), on 1 and 8
// cores.
TEST(TpcKernelEmbedding, ForwardPipelinedGroupsAreTheKernelFilesValues) {
  KernelLibrary& lib = KernelLibrary::instance();
  for (DType t : {DType::F32, DType::BF16})
  for (const uint32_t d : {768u, 64u}) {
    for (const Shape& is : {Shape{100}, Shape{7, 5}, Shape{d == 64 ? 1000u : 30u}}) {
      SCOPED_TRACE(std::string("embedding_fwd") + sfx(t) + " D " + std::to_string(d) + " indices " + shape_str(is));
      HostTensor w(t, {d, 40});
      fill_bits(w, 17);
      const HostTensor idx = random_indices(is, -1, 41, 18);
      const Shape ys = embedding_shape(d, is);
      const KernelParams params{{w.params(), idx.params()}, {tp(t, ys)}, {}};
      const InstantiateResult rows = lib.instantiate("embedding_fwd" + sfx(t), params);
      const InstantiateResult own = lib.instantiate_own_kernel("embedding_fwd" + sfx(t), params);
      ASSERT_TRUE(rows.ok() && own.ok()) << rows.message << own.message;
      const std::string step = d == 64 ? "groups of 16 rows" : t == DType::F32 ? "groups of 2 rows" : "groups of 5 rows";
      EXPECT_NE(rows.inst->variant.find(step), std::string::npos) << rows.inst->variant;
      std::vector<HostTensor> want{HostTensor(t, ys)};
      const RunOutcome r_own = run_instantiated(own, {w, idx}, want, 1, KernelLibrary::kDefaultVectorBits);
      ASSERT_TRUE(r_own.ok) << r_own.error;
      for (unsigned cores : {1u, 8u}) {
        std::vector<HostTensor> got{HostTensor(t, ys)};
        const RunOutcome r = run_instantiated(rows, {w, idx}, got, cores, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(r.ok) << r.error;
        EXPECT_TRUE(r.gaps_ok);
        EXPECT_EQ(got[0].data, want[0].data) << cores << " cores";
      }
    }
  }
}

// The reference: acc = 0 (f32), then for n in the indices' memory order, in range and not
// padding_idx: acc[:, idx[n]] += grad[:, n] in f32; grad_weight = acc rounded once to the dtype.
HostTensor embedding_bwd_ref(const HostTensor& grad, const HostTensor& idx, uint32_t v, int32_t pad) {
  const uint32_t d = grad.shape[0];
  std::vector<float> acc(static_cast<size_t>(d) * v, 0.0f);
  for (size_t n = 0; n < idx.count(); ++n) {
    const int32_t r = static_cast<int32_t>(idx.data[n]);
    if (r < 0 || r >= static_cast<int32_t>(v) || r == pad) continue;
    for (uint32_t j = 0; j < d; ++j) acc[static_cast<size_t>(r) * d + j] += grad.at(n * d + j);
  }
  HostTensor gw(grad.dtype, {d, v});
  for (size_t i = 0; i < acc.size(); ++i) gw.data[i] = round_to(grad.dtype, acc[i]);
  return gw;
}

TEST(TpcKernelEmbedding, BackwardScatterAddsBitExact) {
  uint32_t seed = 1000;
  for (DType t : {DType::F32, DType::BF16})
    for (uint32_t d : {1u, 65u, 129u, 300u})
      for (uint32_t v : {1u, 7u, 50u})
        for (const Shape& is : index_shapes())
          for (int pad_case = 0; pad_case < 3; ++pad_case) {
            if (pad_case && (d == 1 || v == 1)) continue;
            HostTensor grad(t, embedding_shape(d, is));
            fill_uniform(grad, seed++, -2.0f, 2.0f);
            // Few rows so that indices repeat; some out of range.
            const HostTensor idx = random_indices(is, -1, static_cast<int32_t>(std::min(v, 5u)), seed++);
            std::vector<float> scalars;
            int32_t pad = -1000;
            if (pad_case == 1) scalars = {2.0f}, pad = 2;
            if (pad_case == 2) scalars = {-static_cast<float>(v)}, pad = 0;   // -V is row 0
            const auto got = run_1_and_8("embedding_bwd" + sfx(t), {grad, idx}, {HostTensor(t, {d, v})}, scalars);
            const HostTensor want = embedding_bwd_ref(grad, idx, v, pad);
            EXPECT_EQ(got[0].data, want.data) << "embedding_bwd" << sfx(t) << " D " << d << " V " << v << " indices "
                                              << shape_str(is) << " padding case " << pad_case;
          }
}

// Many contributions to one row: the additions are sequential in the indices' order (not a tree),
// in f32 (a big first term makes the order visible).
TEST(TpcKernelEmbedding, BackwardOrderIsTheIndicesMemoryOrder) {
  for (DType t : {DType::F32, DType::BF16}) {
    HostTensor grad(t, {130, 40, 3}), idx(DType::I32, {40, 3});
    fill_uniform(grad, 9, -1.0f, 1.0f);
    for (size_t n = 0; n < idx.count(); ++n) idx.data[n] = n % 7 == 0 ? 1u : 0u;
    for (size_t j = 0; j < 130; ++j) grad.data[j] = round_to(t, 1e8f);   // big first: later small terms round away
    const auto got = run_1_and_8("embedding_bwd" + sfx(t), {grad, idx}, {HostTensor(t, {130, 2})});
    EXPECT_EQ(got[0].data, embedding_bwd_ref(grad, idx, 2, -1000).data) << sfx(t);
    // And the 8-core run used ceil(130 / lanes) cores, each owning a slice of every row.
    std::vector<HostTensor> out = {HostTensor(t, {130, 2})};
    const RunOutcome r = run_kernel("embedding_bwd" + sfx(t), {grad, idx}, out, 8);
    EXPECT_EQ(r.cores_used, t == DType::F32 ? 3u : 2u);
  }
}

// V beyond one VLM chunk (256 rows f32, 128 bf16): the chunks are index-space steps too (more
// cores), each rereads the indices; rows at the chunk edges and the last partial chunk.
TEST(TpcKernelEmbedding, BackwardOverSeveralRowChunks) {
  uint32_t seed = 5000;
  for (DType t : {DType::F32, DType::BF16})
    for (uint32_t d : {3u, 129u})
      for (uint32_t v : {255u, 256u, 257u, 600u}) {
        HostTensor grad(t, {d, 40, 5});
        fill_uniform(grad, seed++, -2.0f, 2.0f);
        HostTensor idx = random_indices({40, 5}, -3, static_cast<int32_t>(v) + 2, seed++);
        for (uint32_t e : {0u, 127u, 128u, 255u, 256u, 599u}) idx.data[e % idx.count()] = std::min(e, v - 1);
        const auto got = run_1_and_8("embedding_bwd" + sfx(t), {grad, idx}, {HostTensor(t, {d, v})}, {});
        EXPECT_EQ(got[0].data, embedding_bwd_ref(grad, idx, v, -1000).data) << sfx(t) << " D " << d << " V " << v;
      }
  KernelLibrary& lib = KernelLibrary::instance();
  const auto r = lib.instantiate("embedding_bwd_bf16", {{tp(DType::BF16, {129, 7}), tp(DType::I32, {7})},
                                                        {tp(DType::BF16, {129, 600})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{2, 5, 1, 1, 1}));
  EXPECT_EQ(r.inst->output_patterns[0][1], (AccessPatternDim{1, 128, 0, 127}));
}

// Past kMinOldSteps (vector, chunk) steps of embedding_bwd.s the node is five launches: the
// indices bucketed by chunk (in slices of about 512: counted, offset, scattered), then each
// chunk's rows accumulated from its list. The same bits:
// every row's additions in the indices' order; padding_idx and indices out of range add nothing.
TEST(TpcKernelEmbedding, BackwardByBucketsBitExact) {
  KernelLibrary& lib = KernelLibrary::instance();
  uint32_t seed = 7000;
  struct Case {
    DType t;
    uint32_t d, v;
    Shape indices;
    int32_t lo, hi;   // the indices' range (repeats when narrow)
  };
  const std::vector<Case> cases = {
      {DType::F32, 300, 1100, {200}, -3, 1102},       // 2 blocks of 4 vectors (the second 1 + padding), 18 chunks
      {DType::F32, 129, 2000, {7, 30}, 0, 40},        // 2 vectors a step, rows repeated many times
      {DType::F32, 1024, 300, {1}, 0, 299},           // one index
      {DType::F32, 1024, 300, {2, 3, 17}, 250, 299},  // every index in the last, partial chunk
      {DType::BF16, 300, 1100, {150}, -2, 1101},
      {DType::BF16, 1000, 700, {5, 11}, 600, 620},
      {DType::F32, 300, 1100, {1500}, -3, 1102},      // 3 slices of 500
      {DType::F32, 200, 5000, {3, 700}, 4000, 4100},  // 5 slices, every index in two chunks
      {DType::BF16, 256, 900, {7, 301}, -1, 903}};    // 5 slices, the last odd
  for (const Case& c : cases)
    for (int pad_case = 0; pad_case < 2; ++pad_case) {
      HostTensor grad(c.t, embedding_shape(c.d, c.indices));
      fill_uniform(grad, seed++, -2.0f, 2.0f);
      const HostTensor idx = random_indices(c.indices, c.lo, c.hi, seed++);
      std::vector<float> scalars;
      int32_t pad = -1000;
      if (pad_case == 1) pad = static_cast<int32_t>(idx.data[0]) >= 0 ? static_cast<int32_t>(idx.data[0]) : 0,
                         scalars = {static_cast<float>(pad) - static_cast<float>(c.v)};   // negative: row pad
      KernelParams p{{grad.params(), idx.params()}, {HostTensor(c.t, {c.d, c.v}).params()}, scalars};
      const InstantiateResult r = lib.instantiate("embedding_bwd" + sfx(c.t), p);
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_EQ(r.parts.size(), 5u) << "D " << c.d << " V " << c.v;
      const auto got = run_1_and_8("embedding_bwd" + sfx(c.t), {grad, idx}, {HostTensor(c.t, {c.d, c.v})}, scalars);
      EXPECT_EQ(got[0].data, embedding_bwd_ref(grad, idx, c.v, pad).data)
          << "embedding_bwd" << sfx(c.t) << " D " << c.d << " V " << c.v << " indices " << shape_str(c.indices)
          << " padding case " << pad_case;
    }
  // Few (vector, chunk) steps: the one launch.
  const InstantiateResult small = lib.instantiate(
      "embedding_bwd_f32", {{tp(DType::F32, {129, 40}), tp(DType::I32, {40})}, {tp(DType::F32, {129, 600})}, {}});
  ASSERT_TRUE(small.ok()) << small.message;
  EXPECT_TRUE(small.inst.has_value());
}

// From 32768 indices an entry holds the row, not its VLM offset (the index needs the bits).
TEST(TpcKernelEmbedding, BackwardByBucketsOverManyIndices) {
  HostTensor grad(DType::F32, {64, 33000}), idx(DType::I32, {33000});
  fill_uniform(grad, 77, -2.0f, 2.0f);
  std::mt19937 rng(78);
  for (uint32_t& v : idx.data) v = static_cast<uint32_t>(std::uniform_int_distribution<int32_t>(-1, 4100)(rng));
  const auto got = run_1_and_8("embedding_bwd_f32", {grad, idx}, {HostTensor(DType::F32, {64, 4096})});
  EXPECT_EQ(got[0].data, embedding_bwd_ref(grad, idx, 4096, -1000).data);
  std::vector<HostTensor> out = {HostTensor(DType::F32, {64, 4096})};
  EXPECT_EQ(run_kernel("embedding_bwd_f32", {grad, idx}, out, 8).parts, 5u);
}

// A big first term makes the order of a row's additions visible; the buckets keep the indices'
// (across the slices too: 1201 indices are three).
TEST(TpcKernelEmbedding, BackwardByBucketsKeepsTheIndicesOrder) {
  for (DType t : {DType::F32, DType::BF16}) {
    HostTensor grad(t, {512, 1201}), idx(DType::I32, {1201});
    fill_uniform(grad, 11, -1.0f, 1.0f);
    for (size_t n = 0; n < idx.count(); ++n) idx.data[n] = n % 7 == 0 ? 1000u : static_cast<uint32_t>(n % 5);
    for (size_t j = 0; j < 512; ++j) grad.data[j] = round_to(t, 1e8f);   // index 1000, first
    const auto got = run_1_and_8("embedding_bwd" + sfx(t), {grad, idx}, {HostTensor(t, {512, 1030})});
    EXPECT_EQ(got[0].data, embedding_bwd_ref(grad, idx, 1030, -1000).data) << sfx(t);
    std::vector<HostTensor> out = {HostTensor(t, {512, 1030})};
    EXPECT_EQ(run_kernel("embedding_bwd" + sfx(t), {grad, idx}, out, 8).parts, 5u) << sfx(t);
  }
}

// ---- glue ----

TEST(TpcKernelGlue4, RejectsBadParams) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16, I = DType::I32;
  expect_error(lib.instantiate("permute_f32", {{tp(F, {8, 2, 3})}, {tp(F, {8, 3, 2})}, {0, 2}}),
               GlueStatus::IncompatibleScalarParams, {"permute_f32", "one scalar parameter per dim", "3", "got 2"});
  expect_error(lib.instantiate("permute_f32", {{tp(F, {8, 2, 3})}, {tp(F, {8, 3, 2})}, {0, 2, 2}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 2 (perm[2])", "repeats perm[1]"});
  expect_error(lib.instantiate("permute_f32", {{tp(F, {8, 2, 3})}, {tp(F, {8, 3, 2})}, {0, 3, 1}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (perm[1])", "0 .. 2"});
  expect_error(lib.instantiate("permute_bf16", {{tp(B, {8, 2, 3})}, {tp(B, {8, 3, 2})}, {0, 1.5f, 1}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (perm[1])", "integer"});
  expect_error(lib.instantiate("permute_f32", {{tp(F, {8, 2, 3})}, {tp(F, {8, 2, 3})}, {0, 2, 1}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "[8, 2, 3]", "gives", "[8, 3, 2]"});
  expect_error(lib.instantiate("permute_f32", {{tp(F, {8, 2, 3})}, {tp(B, {8, 3, 2})}, {0, 2, 1}}),
               GlueStatus::IncompatibleDataType, {"output 0 (Y)"});
  expect_error(lib.instantiate("permute_f32", {{tp(F, {8, 2, 3, 1, 1, 2})}, {tp(F, {8, 2, 3, 1, 1, 2})}, {0, 1, 2, 3, 4, 5}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X)", "at most 5"});
  expect_error(lib.instantiate("transpose_f32", {{tp(F, {8, 2})}, {tp(F, {2, 8})}, {0}}),
               GlueStatus::IncompatibleScalarParams, {"dim0, dim1"});
  expect_error(lib.instantiate("transpose_f32", {{tp(F, {8, 2})}, {tp(F, {2, 8})}, {0, 2}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (dim1)", "0 .. 1"});
  expect_error(lib.instantiate("transpose_f32", {{tp(F, {8, 2})}, {tp(F, {8, 2})}, {0, 1}}),
               GlueStatus::IncompatibleOutputSize, {"[2, 8]"});
  expect_error(lib.instantiate("embedding_fwd_f32", {{tp(F, {8, 5}), tp(F, {3})}, {tp(F, {8, 3})}, {}}),
               GlueStatus::IncompatibleDataType, {"input 1 (indices)", "i32"});
  expect_error(lib.instantiate("embedding_fwd_f32", {{tp(F, {8, 5, 2}), tp(I, {3})}, {tp(F, {8, 3})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (weight)", "[D, V]"});
  expect_error(lib.instantiate("embedding_fwd_f32", {{tp(F, {8, 5}), tp(I, {3, 1, 1, 1, 2})}, {tp(F, {8, 3, 1, 1, 1})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (indices)", "at most 4"});
  expect_error(lib.instantiate("embedding_fwd_bf16", {{tp(B, {8, 5}), tp(I, {3, 2})}, {tp(B, {8, 2, 3})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "[8, 3, 2]"});
  expect_error(lib.instantiate("embedding_fwd_f32", {{tp(F, {8, 5}), tp(I, {3})}, {tp(F, {8, 3})}, {0.0f}}),
               GlueStatus::IncompatibleScalarParams, {"takes 0 scalar"});
  expect_error(lib.instantiate("embedding_bwd_f32", {{tp(F, {8, 3}), tp(I, {3})}, {tp(F, {8, 5})}, {5.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (padding_idx)", "-V .. V-1", "V = 5"});
  expect_error(lib.instantiate("embedding_bwd_f32", {{tp(F, {8, 3}), tp(I, {3})}, {tp(F, {8, 5})}, {0.5f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (padding_idx)", "integer"});
  expect_error(lib.instantiate("embedding_bwd_f32", {{tp(F, {9, 3}), tp(I, {3})}, {tp(F, {8, 5})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (grad)", "[8, 3]"});
  expect_error(lib.instantiate("embedding_bwd_bf16", {{tp(B, {8, 3}), tp(I, {3})}, {tp(B, {8})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (grad_weight)", "[D, V]"});
  expect_error(lib.instantiate("embedding_bwd_bf16", {{tp(B, {8, 3})}, {tp(B, {8, 5})}, {}}),
               GlueStatus::IncompatibleInputCount, {"grad, indices"});
}

TEST(TpcKernelGlue4, GeometryAndPatterns) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16, I = DType::I32;
  // View: Y [70, 4, 3] from X [70, 3, 4]; X's descriptor in Y's coordinates.
  auto r = lib.instantiate("permute_f32", {{tp(F, {70, 3, 4})}, {tp(F, {70, 4, 3})}, {0, 2, 1}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{2, 4, 3, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].size[1], 4u);
  EXPECT_EQ(r.inst->inputs[0].stride[1], 210);
  EXPECT_EQ(r.inst->inputs[0].stride[2], 70);
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 64, 0, 63}));
  EXPECT_EQ(r.inst->input_patterns[0][1], (AccessPatternDim{2, 1, 0, 0}));   // X's dim 1 is Y's dim 2
  EXPECT_EQ(r.inst->output_patterns[0][1], (AccessPatternDim{1, 1, 0, 0}));
  // Tiles of 128 x 128 bf16: Y's dim 0 in vectors, Y's dim 1 (X's dim 0) in tiles; raw bits.
  r = lib.instantiate("permute_bf16", {{tp(B, {70, 3, 4})}, {tp(B, {4, 70, 3})}, {2, 0, 1}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 1, 3, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].dtype, DType::U16);
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{1, 128, 0, 127}));
  EXPECT_EQ(r.inst->input_patterns[0][2], (AccessPatternDim{0, 128, 0, 127}));
  // Gather (the kernel file): the index space is Y's shape in elements; raw-bit descriptors.
  r = lib.instantiate_own_kernel("permute_bf16", {{tp(B, {70, 3, 4})}, {tp(B, {4, 70, 3})}, {2, 0, 1}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{4, 70, 3, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].dtype, DType::U16);
  EXPECT_EQ(r.inst->input_patterns[0][2], (AccessPatternDim{0, 1, 0, 0}));   // X's dim 2 is Y's dim 0
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 1, 0, 0}));
  // Embedding forward, pipelined: the 40 indices as [1, 40]; groups of eight rows of three vectors
  // (the prefetch budget's share: 112 entries over 3 x 3 row vectors and 4 indices a row), four
  // groups a step.
  r = lib.instantiate("embedding_fwd_bf16", {{tp(B, {300, 50}), tp(I, {5, 8})}, {tp(B, {300, 5, 8})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("groups of 8 rows"), std::string::npos) << r.inst->variant;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 2, 1, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[1][0], (AccessPatternDim{0, 0, 0, 0}));
  EXPECT_EQ(r.inst->input_patterns[1][1], (AccessPatternDim{1, 32, 0, 31}));
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 0, 0, 299}));
  // The kernel file: Y's index space, indices' dim k on the index space's dim k + 1.
  r = lib.instantiate_own_kernel("embedding_fwd_bf16", {{tp(B, {300, 50}), tp(I, {3, 4})}, {tp(B, {300, 3, 4})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{3, 3, 4, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][1], (AccessPatternDim{1, 0, 0, 49}));
  EXPECT_EQ(r.inst->input_patterns[1][0], (AccessPatternDim{1, 1, 0, 0}));
  EXPECT_EQ(r.inst->input_patterns[1][1], (AccessPatternDim{2, 1, 0, 0}));
  // Embedding backward: dim-0 vectors only; every row of grad_weight, every index.
  r = lib.instantiate("embedding_bwd_f32", {{tp(F, {130, 3, 4}), tp(I, {3, 4})}, {tp(F, {130, 50})}, {-1.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{3, 1, 1, 1, 1}));
  EXPECT_EQ(r.inst->output_patterns[0][1], (AccessPatternDim{1, 256, 0, 255}));   // chunks of 256 rows
  EXPECT_EQ(r.inst->input_patterns[0][2], (AccessPatternDim{2, 0, 0, 3}));
  EXPECT_EQ(r.inst->srf[0], 50u);
  EXPECT_EQ(r.inst->srf[1], 49u);   // padding_idx -1 is row V-1
  EXPECT_EQ(r.inst->srf[2], 1u);
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
