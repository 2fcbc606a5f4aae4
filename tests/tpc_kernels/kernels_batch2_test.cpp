// The second batch of kernels against C++ references, on 1 and 8 simulated cores (bit-identical):
// reductions (sum / mean / max over any dim: bit-exact against a reference in the kernel's
// order, including ISA.md's reduce.add tree for dim 0), softmax / log_softmax and their backward
// over dim 0, gelu (tanh form) and its backward (within stated tolerances of a double
// reference), addcmul / addcdiv (bit-exact, with broadcasting), and their validation errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "synapse/tpc_kernels/row_chunks.h"
#include "synapse/zoo_reference/ops.h"
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

float uniform(std::mt19937& rng, float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }

void fill_random(HostTensor& t, uint32_t seed, float lo, float hi, bool zeros = true) {
  std::mt19937 rng(seed);
  for (uint32_t& v : t.data) {
    const uint32_t pick = rng() % 32;
    const float x = zeros && pick == 0 ? 0.0f : zeros && pick == 1 ? -0.0f : uniform(rng, lo, hi);
    v = round_to(t.dtype, x);
  }
}

std::vector<HostTensor> run_1_and_8(const std::string& guid, const std::vector<HostTensor>& inputs,
                                    const std::vector<HostTensor>& outputs, const std::vector<float>& scalars = {}) {
  std::vector<HostTensor> one = outputs, eight = outputs;
  const RunOutcome r1 = run_kernel(guid, inputs, one, 1, scalars);
  EXPECT_TRUE(r1.ok) << guid << ": " << r1.error;
  EXPECT_TRUE(r1.gaps_ok) << guid << ": 1 core wrote outside the output's elements";
  const RunOutcome r8 = run_kernel(guid, inputs, eight, 8, scalars);
  EXPECT_TRUE(r8.ok) << guid << ": " << r8.error;
  EXPECT_TRUE(r8.gaps_ok) << guid << ": 8 cores wrote outside the output's elements";
  for (size_t k = 0; k < one.size(); ++k) EXPECT_EQ(one[k].data, eight[k].data) << guid << ": 1 core vs 8 cores differ";
  return one;
}

float fmax_ieee(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return NAN;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// Shapes 1-D to 5-D, sizes around the lane counts, single elements.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{1},       {63},         {64},           {65},          {127},
                                       {129},     {300},        {1, 1, 1},      {150, 3},      {130, 3, 4},
                                       {70, 2, 3, 2}, {65, 2, 2, 3, 2}, {1, 5, 1, 2, 3}, {257, 1, 1, 1, 2}, {3, 7},
                                       {700, 2}};   // rows past softmax_short.s in bf16 too
  return s;
}

// Coordinates of dense element i of a shape (5 dims).
std::array<uint32_t, 5> coords(const HostTensor& t, size_t i) {
  std::array<uint32_t, 5> c{};
  for (unsigned d = 0; d < 5; ++d) {
    c[d] = static_cast<uint32_t>(i % t.dim(d));
    i /= t.dim(d);
  }
  return c;
}
size_t index_of(const HostTensor& t, const std::array<uint32_t, 5>& c) {
  size_t idx = 0, mul = 1;
  for (unsigned d = 0; d < 5; ++d) {
    idx += c[d] * mul;
    mul *= t.dim(d);
  }
  return idx;
}

// ---- Reductions: the kernel's order, in f32, rounded once ----

// ISA.md's reduce.add tree over 64 f32 lanes: lane 2i with 2i+1, then pairs of those.
float tree_sum(std::vector<float> v) {
  for (size_t m = v.size(); m > 1; m /= 2)
    for (size_t i = 0; i < m / 2; ++i) v[i] = v[2 * i] + v[2 * i + 1];
  return v[0];
}

// One output element: the values of the reduced line (in order) -> result bits.
uint32_t ref_reduce(const std::string& kind, DType t, unsigned dim, const std::vector<float>& line) {
  const bool is_max = kind == "max";
  const float init = is_max ? -INFINITY : 0.0f;
  auto acc_op = [&](float a, float b) { return is_max ? fmax_ieee(a, b) : a + b; };
  float r;
  if (dim != 0) {
    r = init;
    for (float x : line) r = acc_op(r, x);
  } else {
    // Lane j of the f32 accumulator(s) takes elements L*k + j (bf16: lo j, hi 64 + j), past the
    // row's end the padding (0 or -inf), from RINIT; bf16 combines lo and hi lane-wise.
    const size_t lanes = t == DType::F32 ? 64 : 128;
    const size_t vecs = (line.size() + lanes - 1) / lanes;
    auto elem = [&](size_t e) { return e < line.size() ? line[e] : init; };
    std::vector<float> acc(64);
    for (size_t j = 0; j < 64; ++j) {
      float lo = init, hi = init;
      for (size_t k = 0; k < vecs; ++k) {
        lo = acc_op(lo, elem(lanes * k + j));
        if (lanes == 128) hi = acc_op(hi, elem(lanes * k + 64 + j));
      }
      acc[j] = lanes == 128 ? acc_op(lo, hi) : lo;
    }
    if (is_max) {
      r = acc[0];
      for (size_t j = 1; j < 64; ++j) r = fmax_ieee(r, acc[j]);
    } else {
      r = tree_sum(acc);
    }
  }
  if (kind == "mean") r = r / static_cast<float>(line.size());
  return round_to(t, r);
}

class TpcKernelReduce : public ::testing::TestWithParam<std::string> {};

TEST_P(TpcKernelReduce, MatchesTheReferenceBitExactOverEveryDim) {
  const std::string kind = GetParam();
  for (DType t : {DType::F32, DType::BF16}) {
    const std::string guid = "reduce_" + kind + "_fwd" + sfx(t);
    uint32_t seed = 1;
    for (const Shape& s : shapes()) {
      for (unsigned dim = 0; dim < std::max<size_t>(s.size(), 1); ++dim) {
        HostTensor x(t, s);
        fill_random(x, seed++, -1e3f, 1e3f);
        Shape ys = s;
        ys[dim] = 1;
        HostTensor y(t, ys);
        const auto got = run_1_and_8(guid, {x}, {y}, {static_cast<float>(dim)});
        size_t bad = 0;
        for (size_t i = 0; i < y.count() && bad < 3; ++i) {
          auto c = coords(y, i);
          std::vector<float> line;
          for (uint32_t k = 0; k < x.dim(dim); ++k) {
            c[dim] = k;
            line.push_back(x.at(index_of(x, c)));
          }
          const uint32_t want = ref_reduce(kind, t, dim, line);
          if (ulp_distance(t, got[0].data[i], want) != 0) {
            ++bad;
            ADD_FAILURE() << guid << " " << shape_str(s) << " dim " << dim << " output " << i << ": got "
                          << value_of(t, got[0].data[i]) << ", want " << value_of(t, want);
          }
        }
      }
    }
  }
}

// The kernel's order is one valid f32 summation: close to the exact sum (double).
TEST_P(TpcKernelReduce, IsCloseToTheExactResultAndPropagatesNaN) {
  const std::string kind = GetParam();
  for (DType t : {DType::F32, DType::BF16}) {
    const std::string guid = "reduce_" + kind + "_fwd" + sfx(t);
    HostTensor x(t, {1000, 3}), y(t, {1, 3});
    fill_random(x, 77, 0.5f, 2.0f, false);
    x.data[2000 + 517] = round_to(t, NAN);   // row 2 has a NaN
    const auto got = run_1_and_8(guid, {x}, {y}, {0.0f});
    for (uint32_t r = 0; r < 2; ++r) {
      double exact = kind == "max" ? -INFINITY : 0.0;
      for (uint32_t k = 0; k < 1000; ++k)
        exact = kind == "max" ? std::max<double>(exact, x.at(r * 1000 + k)) : exact + x.at(r * 1000 + k);
      if (kind == "mean") exact /= 1000;
      const double tol = (t == DType::F32 ? 1e-5 : 8e-3) * std::fabs(exact);
      EXPECT_NEAR(value_of(t, got[0].data[r]), exact, tol) << guid << " row " << r;
    }
    EXPECT_TRUE(std::isnan(value_of(t, got[0].data[2]))) << guid;
  }
}

// A reduction over dim 1 with few outputs and many rows (a bias gradient) is split into chunks of
// rows (row_chunks.h): each chunk's partial from the kernel's start value in row order (in f32,
// bf16 widened), then the partials in chunk order; a mean divides by every row, and bf16 is rounded
// once at the end. The same bits on 1 and 8 cores, what the zoo reference's sum_outer computes for
// f32 sums, and (max / min, exact in any order) NaN kept.
TEST(TpcKernelReduceSplit, OuterDimWithFewOutputsReducesChunksOfRows) {
  struct Case {
    Shape shape;
    uint32_t chunk;   // split_row_chunk's, checked: the shapes cover an odd chunk and a partial block
  };
  // 768 columns: one block of whole rows; 1000: two blocks of 8 vectors, the second past the end;
  // 130 x 567: chunks of 27 rows (a pair loop and a last row), the last vector partly out.
  const std::vector<Case> cases = {{{768, 1024}, 64}, {{200, 576}, 64}, {{1000, 520}, 52}, {{130, 567}, 63}};
  uint32_t seed = 900;
  for (DType t : {DType::F32, DType::BF16}) {
    for (const std::string kind : {"sum", "mean", "max", "min"}) {
      const std::string guid = "reduce_" + kind + "_fwd" + sfx(t);
      for (const Case& c : cases) {
        SCOPED_TRACE(guid + " " + shape_str(c.shape));
        const uint32_t n = c.shape[0], rows = c.shape[1];
        const uint32_t chunk = split_row_chunk(rows, n);
        ASSERT_EQ(chunk, c.chunk);
        HostTensor x(t, c.shape), y(t, {n, 1});
        fill_random(x, seed++, -1e3f, 1e3f);
        const bool extremum = kind == "max" || kind == "min";
        if (extremum) x.data[uint64_t{rows / 2} * n + 7] = round_to(t, NAN);   // column 7
        std::vector<HostTensor> one{y}, eight{y};
        const RunOutcome r1 = run_kernel(guid, {x}, one, 1, {1.0f});
        const RunOutcome r8 = run_kernel(guid, {x}, eight, 8, {1.0f});
        ASSERT_TRUE(r1.ok && r8.ok) << r1.error << r8.error;
        EXPECT_TRUE(r1.gaps_ok && r8.gaps_ok);
        EXPECT_EQ(r1.parts, 2u) << "the chunks, then their partials";
        EXPECT_EQ(r8.cores_used, 8u) << "the chunks spread over the cores";
        EXPECT_EQ(one[0].data, eight[0].data);
        const auto op = [&](float a, float b) {
          return kind == "max" ? fmax_ieee(a, b) : kind == "min" ? -fmax_ieee(-a, -b) : a + b;
        };
        const float init = kind == "max" ? -INFINITY : kind == "min" ? INFINITY : 0.0f;
        std::vector<float> sum_outer(n);
        if (t == DType::F32 && kind != "max" && kind != "min")
          zoo_reference::sum_outer(reinterpret_cast<const float*>(x.data.data()), sum_outer.data(), rows, n);
        size_t bad = 0;
        for (uint32_t j = 0; j < n && bad < 3; ++j) {
          float total = init;
          for (uint32_t first = 0; first < rows; first += chunk) {
            float part = init;
            for (uint32_t r = first; r < first + chunk; ++r) part = op(part, x.at(uint64_t{r} * n + j));
            total = op(total, part);
          }
          if (kind == "mean") total = total / static_cast<float>(rows);
          if (t == DType::F32 && !extremum) {
            const float zoo = kind == "mean" ? sum_outer[j] / static_cast<float>(rows) : sum_outer[j];
            EXPECT_EQ(bits_of(zoo), bits_of(total)) << "the zoo reference, column " << j;
          }
          if (extremum && j == 7) {
            EXPECT_TRUE(std::isnan(value_of(t, one[0].data[j]))) << "column 7 holds a NaN";
            continue;
          }
          if (one[0].data[j] != round_to(t, total)) {
            ++bad;
            ADD_FAILURE() << "column " << j << ": got " << value_of(t, one[0].data[j]) << ", want "
                          << value_of(t, round_to(t, total));
          }
        }
      }
    }
  }
  // Fewer rows than kSplitRowsFrom: one launch.
  HostTensor x(DType::F32, {768, 128});
  fill_random(x, 5, -1.0f, 1.0f);
  std::vector<HostTensor> y{HostTensor(DType::F32, {768, 1})};
  EXPECT_EQ(run_kernel("reduce_sum_fwd_f32", {x}, y, 8, {1.0f}).parts, 1u);
}

// A reduction over an outer dim of at most kShortReduceLength (a pool's window) reads a step's
// inputs straight-line, several rows a step, instead of reduce_outer.s's loop along the dim: the
// same bits as the kernel file on 1 and 8 cores, in a fraction of its bundles.
TEST(TpcKernelReduceShort, ShortOuterDimsAreBitIdenticalToTheLoopKernelInFewerBundles) {
  KernelLibrary& lib = KernelLibrary::instance();
  struct Case {
    Shape shape;
    unsigned dim;
    bool short_form;
  };
  const std::vector<Case> cases = {
      {{32, 2, 8, 2, 64}, 1, true},   // the conv block's pool: half-vector rows, 8 a step
      {{32, 1, 8, 2, 64}, 3, true},   // its second sum: rows of 4 vectors
      {{64, 8, 40}, 1, true},         {{16, 3, 5, 7}, 2, true},   // 48-element rows
      {{128, 5, 3}, 1, true},         // 3 rows: one a step
      {{70, 2, 6}, 1, false},         // rows not a whole number of vectors: the loop kernel
      {{64, 9, 4}, 1, false},         // longer than kShortReduceLength
  };
  uint32_t seed = 300;
  for (const std::string kind : {"sum", "mean", "max", "min"}) {
    const std::string guid = "reduce_" + kind + "_fwd_f32";
    for (const Case& c : cases) {
      SCOPED_TRACE(guid + " " + shape_str(c.shape) + " dim " + std::to_string(c.dim));
      HostTensor x(DType::F32, c.shape);
      fill_random(x, seed++, -1e3f, 1e3f);
      Shape ys = c.shape;
      ys[c.dim] = 1;
      KernelParams params{{x.params()}, {tp(DType::F32, ys)}, {static_cast<float>(c.dim)}};
      const InstantiateResult chosen = lib.instantiate(guid, params);
      const InstantiateResult loop = lib.instantiate_own_kernel(guid, params);
      ASSERT_TRUE(chosen.ok() && loop.ok()) << chosen.message << loop.message;
      EXPECT_EQ(chosen.inst->variant.find("short outer") != std::string::npos, c.short_form) << chosen.inst->variant;
      std::vector<HostTensor> expected{HostTensor(DType::F32, ys)};
      const RunOutcome ran_loop = run_instantiated(loop, {x}, expected, 8, KernelLibrary::kDefaultVectorBits);
      ASSERT_TRUE(ran_loop.ok) << ran_loop.error;
      for (unsigned cores : {1u, 8u}) {
        std::vector<HostTensor> got{HostTensor(DType::F32, ys)};
        const RunOutcome r = run_instantiated(chosen, {x}, got, cores, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(r.ok && r.gaps_ok) << r.error;
        EXPECT_EQ(got[0].data, expected[0].data) << cores << " cores";
        if (c.short_form && cores == 8) {
          EXPECT_LT(r.bundles * 3, ran_loop.bundles * 2) << "bundles against the loop kernel's (two thirds)";
        }
      }
    }
  }
}

// Reductions over dim 0 of short rows take several rows a step (row_reductions.cpp): the loop
// kernel's values bit for bit (f32 and bf16, rows ending inside a vector, row counts the step does
// not divide), on 1 and 8 cores, in fewer bundles.
TEST(TpcKernelReduceRows, ShortRowsAreBitIdenticalToTheLoopKernel) {
  KernelLibrary& lib = KernelLibrary::instance();
  uint32_t seed = 700;
  for (DType t : {DType::F32, DType::BF16}) {
    for (const Shape& shape : {Shape{768, 10}, Shape{300, 7}, Shape{64, 9}, Shape{130, 5, 2}}) {
      for (const std::string kind : {"sum", "mean", "max", "min"}) {
        const std::string guid = "reduce_" + kind + "_fwd" + sfx(t);
        SCOPED_TRACE(guid + " " + shape_str(shape));
        HostTensor x(t, shape);
        fill_random(x, seed++, -1e3f, 1e3f);
        Shape ys = shape;
        ys[0] = 1;
        const KernelParams params{{x.params()}, {tp(t, ys)}, {0.0f}};
        const InstantiateResult rows = lib.instantiate(guid, params);
        const InstantiateResult loop = lib.instantiate_own_kernel(guid, params);
        ASSERT_TRUE(rows.ok() && loop.ok()) << rows.message << loop.message;
        EXPECT_NE(rows.inst->variant.find("rows a step"), std::string::npos) << rows.inst->variant;
        std::vector<HostTensor> want{HostTensor(t, ys)};
        const RunOutcome ran_loop = run_instantiated(loop, {x}, want, 1, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(ran_loop.ok) << ran_loop.error;
        for (unsigned cores : {1u, 8u}) {
          std::vector<HostTensor> got{HostTensor(t, ys)};
          const RunOutcome r = run_instantiated(rows, {x}, got, cores, KernelLibrary::kDefaultVectorBits);
          ASSERT_TRUE(r.ok && r.gaps_ok) << r.error;
          EXPECT_EQ(got[0].data, want[0].data) << cores << " cores";
          if (cores == 1) EXPECT_LT(r.issue_cycles * 2, ran_loop.issue_cycles) << "the loop kernel's " << ran_loop.issue_cycles;
        }
      }
    }
  }
}

// A long f32 row into one element (a loss) is split over chunks (row_chunks.h): each chunk's sum
// in the kernel's order, then the partials summed the same way; a mean divides by every element.
TEST(TpcKernelReduceSplit, LongRowsIntoOneElementSumTheirChunksInTheKernelsOrder) {
  for (const std::string kind : {"sum", "mean"}) {
    for (const uint32_t n : {131072u, 65536u * 3 + 64 * 5}) {
      const uint32_t chunk = dim0_chunk_length(n);
      ASSERT_GT(chunk, 0u) << n;
      HostTensor x(DType::F32, {n}), y(DType::F32, {1});
      fill_random(x, n, -1e3f, 1e3f);
      std::vector<HostTensor> one{y}, eight{y};
      const RunOutcome r1 = run_kernel("reduce_" + kind + "_fwd_f32", {x}, one, 1, {0.0f});
      const RunOutcome r8 = run_kernel("reduce_" + kind + "_fwd_f32", {x}, eight, 8, {0.0f});
      ASSERT_TRUE(r1.ok && r8.ok) << r1.error << r8.error;
      EXPECT_EQ(r1.parts, 2u) << "the chunks, then their partials";
      EXPECT_GT(r8.cores_used, 1u) << "the chunks spread over the cores";
      EXPECT_EQ(one[0].data, eight[0].data);
      std::vector<float> partials;
      for (uint32_t c = 0; c < n / chunk; ++c) {
        std::vector<float> part;
        for (uint32_t k = 0; k < chunk; ++k) part.push_back(x.at(c * chunk + k));
        partials.push_back(value_of(DType::F32, ref_reduce("sum", DType::F32, 0, part)));
      }
      float want = value_of(DType::F32, ref_reduce("sum", DType::F32, 0, partials));
      if (kind == "mean") want = want / static_cast<float>(n);
      EXPECT_EQ(one[0].data[0], bits_of(want)) << kind << " of " << n << ": got " << value_of(DType::F32, one[0].data[0])
                                               << ", want " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, TpcKernelReduce, ::testing::Values("sum", "mean", "max"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// ---- softmax / log_softmax over dim 0, forward and backward ----

// |got - ref| <= rtol * |ref| + atol, with ref the formula in double on the (rounded) inputs.
struct Tol {
  double rtol, atol;
};
Tol softmax_tol(DType t) { return t == DType::F32 ? Tol{1e-5, 1e-6} : Tol{1.0 / 128, 1e-5}; }
Tol gelu_tol(DType t) { return t == DType::F32 ? Tol{1e-5, 1e-6} : Tol{1.0 / 128, 1e-5}; }

bool within(double got, double ref, Tol tol) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isinf(ref)) return got == ref;
  return std::fabs(got - ref) <= tol.rtol * std::fabs(ref) + tol.atol;
}

// Rows along dim 0 of a dense tensor: row r is elements r*n0 .. r*n0 + n0-1.
void ref_softmax_rows(const std::string& op, const HostTensor& x, const HostTensor* g, std::vector<double>& out) {
  const size_t n0 = x.dim(0), rows = x.count() / n0;
  out.assign(x.count(), 0.0);
  for (size_t r = 0; r < rows; ++r) {
    const size_t b = r * n0;
    if (op == "softmax_fwd" || op == "log_softmax_fwd") {
      double m = -INFINITY, s = 0;
      for (size_t k = 0; k < n0; ++k) m = std::max<double>(m, x.at(b + k));
      for (size_t k = 0; k < n0; ++k) s += std::exp(x.at(b + k) - m);
      for (size_t k = 0; k < n0; ++k)
        out[b + k] = op == "softmax_fwd" ? std::exp(x.at(b + k) - m) / s : (x.at(b + k) - m) - std::log(s);
    } else {   // x is y, g the gradient
      double s = 0;
      for (size_t k = 0; k < n0; ++k) s += op == "softmax_bwd" ? g->at(b + k) * x.at(b + k) : g->at(b + k);
      for (size_t k = 0; k < n0; ++k)
        out[b + k] = op == "softmax_bwd" ? x.at(b + k) * (g->at(b + k) - s) : g->at(b + k) - std::exp(x.at(b + k)) * s;
    }
  }
}

class TpcKernelSoftmax : public ::testing::TestWithParam<std::string> {};

TEST_P(TpcKernelSoftmax, MatchesTheDoubleReferenceWithinTolerance) {
  const std::string op = GetParam();
  const bool bwd = op.find("_bwd") != std::string::npos;
  for (DType t : {DType::F32, DType::BF16}) {
    const std::string guid = op + sfx(t);
    uint32_t seed = 300;
    for (const Shape& s : shapes()) {
      HostTensor x(t, s), g(t, s), out(t, s);
      std::vector<double> ref;
      if (!bwd) {
        fill_random(x, seed++, -10.0f, 10.0f);
        ref_softmax_rows(op, x, nullptr, ref);
      } else {
        // y: a real forward output (softmax of random logits), g random.
        HostTensor logits(t, s);
        fill_random(logits, seed++, -4.0f, 4.0f);
        std::vector<double> y;
        ref_softmax_rows(op == "softmax_bwd" ? "softmax_fwd" : "log_softmax_fwd", logits, nullptr, y);
        for (size_t i = 0; i < x.count(); ++i) x.data[i] = round_to(t, y[i]);
        fill_random(g, seed++, -1.0f, 1.0f);
        ref_softmax_rows(op, x, &g, ref);
      }
      const auto got = bwd ? run_1_and_8(guid, {g, x}, {out}) : run_1_and_8(guid, {x}, {out});
      size_t bad = 0;
      for (size_t i = 0; i < out.count() && bad < 3; ++i) {
        // bwd: the sum over the row cancels; scale the absolute tolerance by the row's magnitude.
        Tol tol = softmax_tol(t);
        if (bwd) tol.atol *= 10;
        if (!within(value_of(t, got[0].data[i]), ref[i], tol)) {
          ++bad;
          ADD_FAILURE() << guid << " " << shape_str(s) << " element " << i << ": got " << value_of(t, got[0].data[i])
                        << ", want " << ref[i];
        }
      }
    }
  }
}

TEST(TpcKernelSoftmaxRows, SumToOneAndHandleLargeAndInfiniteLogits) {
  for (DType t : {DType::F32, DType::BF16}) {
    HostTensor x(t, {200, 3}), y(t, {200, 3});
    fill_random(x, 5, -50.0f, 50.0f);
    for (size_t k = 0; k < 200; ++k) x.data[200 + k] = round_to(t, 1e30f + 1e28f * k);   // row 1: huge, no overflow
    x.data[400 + 7] = round_to(t, -INFINITY);                                            // row 2: a -inf logit
    const auto got = run_1_and_8("softmax_fwd" + sfx(t), {x}, {y});
    for (size_t r = 0; r < 3; ++r) {
      double sum = 0;
      for (size_t k = 0; k < 200; ++k) {
        const float v = value_of(t, got[0].data[r * 200 + k]);
        ASSERT_FALSE(std::isnan(v)) << r << " " << k;
        sum += v;
      }
      EXPECT_NEAR(sum, 1.0, t == DType::F32 ? 1e-5 : 2e-2) << "row " << r;
    }
    EXPECT_EQ(value_of(t, got[0].data[407]), 0.0f);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TpcKernelSoftmax,
                         ::testing::Values("softmax_fwd", "log_softmax_fwd", "softmax_bwd", "log_softmax_bwd"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// ---- gelu (tanh form, PyTorch's approximate='tanh') ----

double gelu_tanh(double x) {
  const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
  return 0.5 * x * (1.0 + std::tanh(beta * (x + kappa * x * x * x)));
}
double gelu_tanh_grad(double x) {
  const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
  const double th = std::tanh(beta * (x + kappa * x * x * x));
  return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * beta * (1 + 3 * kappa * x * x);
}

TEST(TpcKernelGelu, ForwardAndBackwardMatchTheTanhFormulaWithinTolerance) {
  for (DType t : {DType::F32, DType::BF16}) {
    uint32_t seed = 900;
    for (const Shape& s : shapes()) {
      HostTensor x(t, s), g(t, s), y(t, s), dx(t, s);
      fill_random(x, seed++, -8.0f, 8.0f);
      fill_random(g, seed++, -2.0f, 2.0f);
      const auto fy = run_1_and_8("gelu_tanh_fwd" + sfx(t), {x}, {y});
      const auto fdx = run_1_and_8("gelu_tanh_bwd" + sfx(t), {g, x}, {dx});
      size_t bad = 0;
      for (size_t i = 0; i < x.count() && bad < 3; ++i) {
        const double want_y = gelu_tanh(x.at(i)), want_dx = g.at(i) * gelu_tanh_grad(x.at(i));
        // dx: the absolute part scales with |g| (in the left tail f32 tanh saturates to -1 and
        // 1 + tanh cancels to 0, as in PyTorch's f32 kernel).
        Tol dx_tol = gelu_tol(t);
        dx_tol.atol *= std::max(1.0, std::fabs(static_cast<double>(g.at(i))));
        if (!within(value_of(t, fy[0].data[i]), want_y, gelu_tol(t)) ||
            !within(value_of(t, fdx[0].data[i]), want_dx, dx_tol)) {
          ++bad;
          ADD_FAILURE() << sfx(t) << " " << shape_str(s) << " x = " << x.at(i) << " g = " << g.at(i) << ": y "
                        << value_of(t, fy[0].data[i]) << " (want " << want_y << "), dx "
                        << value_of(t, fdx[0].data[i]) << " (want " << want_dx << ")";
        }
      }
    }
  }
}

TEST(TpcKernelGelu, SpecialValuesAndDistanceToTheErfForm) {
  const float xs[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e20f, -1e20f, 3.0f};
  HostTensor x(DType::F32, {10}), y(DType::F32, {10});
  for (int i = 0; i < 10; ++i) x.data[i] = bits_of(xs[i]);
  const auto got = run_1_and_8("gelu_tanh_fwd_f32", {x}, {y});
  for (int i = 0; i < 10; ++i) {
    const double want = std::isinf(xs[i]) ? (xs[i] > 0 ? INFINITY : 0.0) : gelu_tanh(xs[i]);
    const float v = float_of(got[0].data[i]);
    if (std::isinf(xs[i]) && xs[i] < 0) {
      // 0.5 * -inf * (1 + -1) is NaN in IEEE arithmetic (PyTorch's formula gives NaN too).
      EXPECT_TRUE(std::isnan(v) || v == 0.0f) << v;
      continue;
    }
    EXPECT_TRUE(within(v, want, gelu_tol(DType::F32))) << xs[i] << " -> " << v << " want " << want;
  }
  // The tanh form stays within 1e-3 of PyTorch's default (exact erf) gelu on [-8, 8].
  HostTensor xr(DType::F32, {1601}), yr(DType::F32, {1601});
  for (int i = 0; i <= 1600; ++i) xr.data[i] = bits_of(-8.0f + 0.01f * i);
  const auto gr = run_1_and_8("gelu_tanh_fwd_f32", {xr}, {yr});
  for (int i = 0; i <= 1600; ++i) {
    const double xv = xr.at(i), erf_form = 0.5 * xv * (1 + std::erf(xv / std::sqrt(2.0)));
    EXPECT_NEAR(float_of(gr[0].data[i]), erf_form, 1e-3) << xv;
  }
}

// ---- addcmul / addcdiv ----

struct Bcast3 {
  Shape a, b, c, out;
};

TEST(TpcKernelAddc, MatchesTheF32ReferenceBitExactWithBroadcasting) {
  const std::vector<Bcast3> cases = {
      {{130, 3, 4}, {130, 3, 4}, {130, 3, 4}, {130, 3, 4}},
      {{1}, {1}, {1}, {1}},
      {{300}, {300}, {300}, {300}},
      {{65, 2, 2, 3, 2}, {65, 2, 2, 3, 2}, {65, 2, 2, 3, 2}, {65, 2, 2, 3, 2}},
      {{1, 3, 4}, {130, 3, 4}, {130, 1, 4}, {130, 3, 4}},      // A along dim 0, C along dim 1
      {{130, 3, 4}, {1, 3, 1}, {1, 1, 1}, {130, 3, 4}},        // B, C along dim 0 and more
      {{70, 2, 3, 2}, {70}, {}, {70, 2, 3, 2}},                // lower ranks, a 0-D C
      {{5, 1}, {1, 3}, {5, 3}, {5, 3}},
  };
  for (const char* op : {"addcmul", "addcdiv"}) {
    for (DType t : {DType::F32, DType::BF16}) {
      const std::string guid = std::string(op) + "_fwd" + sfx(t);
      uint32_t seed = 40;
      for (const Bcast3& c : cases) {
        HostTensor a(t, c.a), b(t, c.b), cc(t, c.c), y(t, c.out);
        fill_random(a, seed++, -100.0f, 100.0f);
        fill_random(b, seed++, -100.0f, 100.0f);
        fill_random(cc, seed++, 0.5f, 10.0f, false);
        for (float value : {0.5f, -3.25f}) {
          const auto got = run_1_and_8(guid, {a, b, cc}, {y}, {value});
          size_t bad = 0;
          for (size_t i = 0; i < y.count() && bad < 3; ++i) {
            const float av = a.at(broadcast_index(a, y, i)), bv = b.at(broadcast_index(b, y, i)),
                        cv = cc.at(broadcast_index(cc, y, i));
            const float vb = value * bv;
            const uint32_t want = round_to(t, std::string(op) == "addcmul" ? av + vb * cv : av + vb / cv);
            if (got[0].data[i] != want) {
              ++bad;
              ADD_FAILURE() << guid << " out" << shape_str(c.out) << " element " << i << ": got "
                            << value_of(t, got[0].data[i]) << ", want " << value_of(t, want);
            }
          }
        }
      }
    }
  }
}

// ---- Glue ----

void expect_error(const InstantiateResult& r, GlueStatus status, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, status) << glue_status_name(r.status) << ": " << r.message;
  EXPECT_FALSE(r.inst.has_value());
  for (const std::string& p : parts) EXPECT_NE(r.message.find(p), std::string::npos) << "'" << p << "' not in: " << r.message;
}
TensorParams f32(Shape s) { return {DType::F32, std::move(s), {}}; }
TensorParams bf16(Shape s) { return {DType::BF16, std::move(s), {}}; }

TEST(TpcKernelGlue2, RejectsBadReductionsSoftmaxAndAddcParams) {
  KernelLibrary lib;
  expect_error(lib.instantiate("reduce_sum_fwd_f32", KernelParams{{f32({5, 3})}, {f32({1, 3})}, {}}),
               GlueStatus::IncompatibleScalarParams, {"takes 1 scalar parameter (the dim to reduce), got 0"});
  expect_error(lib.instantiate("reduce_sum_fwd_f32", KernelParams{{f32({5, 3})}, {f32({5, 1})}, {2.0f}}),
               GlueStatus::IncompatibleScalarParams, {"must be an integer 0 .. 1"});
  expect_error(lib.instantiate("reduce_max_fwd_bf16", KernelParams{{bf16({5, 3})}, {bf16({5, 1})}, {0.5f}}),
               GlueStatus::IncompatibleScalarParams, {"dim to reduce"});
  expect_error(lib.instantiate("reduce_mean_fwd_f32", KernelParams{{f32({5, 3})}, {f32({5, 1})}, {-1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"dim to reduce"});
  expect_error(lib.instantiate("reduce_mean_fwd_f32", KernelParams{{f32({5, 3})}, {f32({5})}, {1.0f}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "[5]", "gives [5, 1]"});
  expect_error(lib.instantiate("reduce_sum_fwd_f32", KernelParams{{f32({5, 3})}, {f32({1, 1})}, {0.0f}}),
               GlueStatus::IncompatibleOutputSize, {"gives [1, 3]"});
  expect_error(lib.instantiate("softmax_fwd_f32", KernelParams{{f32({5, 3})}, {f32({1, 3})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "no broadcasting"});
  expect_error(lib.instantiate("log_softmax_bwd_bf16", KernelParams{{bf16({5, 3}), bf16({5, 1})}, {bf16({5, 3})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (y)"});
  expect_error(lib.instantiate("softmax_fwd_f32", KernelParams{{f32({5})}, {f32({5})}, {0.0f}}),
               GlueStatus::IncompatibleScalarParams, {"takes 0 scalar parameters"});
  expect_error(lib.instantiate("addcmul_fwd_f32", KernelParams{{f32({4}), f32({4}), f32({4})}, {f32({4})}, {}}),
               GlueStatus::IncompatibleScalarParams, {"takes 1 scalar parameter (value), got 0"});
  expect_error(lib.instantiate("addcdiv_fwd_f32", KernelParams{{f32({4}), f32({4})}, {f32({4})}, {1.0f}}),
               GlueStatus::IncompatibleInputCount, {"takes 3 inputs (A, B, C), got 2"});
  expect_error(lib.instantiate("addcdiv_fwd_f32", KernelParams{{f32({4}), f32({3}), f32({4})}, {f32({4})}, {1.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (B)", "does not broadcast"});
  expect_error(lib.instantiate("gelu_tanh_bwd_bf16", KernelParams{{bf16({4}), f32({4})}, {bf16({4})}, {}}),
               GlueStatus::IncompatibleDataType, {"input 1 (x): dtype f32"});
}

TEST(TpcKernelGlue2, GeometryPatternsPaddingAndEveryReductionVariant) {
  KernelLibrary lib;
  // Short rows over dim 0: several rows a step (row_reductions.cpp), X viewed as [N0, rows].
  auto r = lib.instantiate("reduce_max_fwd_bf16", KernelParams{{bf16({300, 5, 4})}, {bf16({1, 5, 4})}, {0.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant, "reduce max dim 0 bf16 5 rows a step of 3");
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 4, 1, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][1], (AccessPatternDim{1, 5, 0, 4}));
  EXPECT_EQ(r.inst->inputs[0].padding, 0xFF80u);   // bf16 -inf
  // The loop kernel: a row a step.
  r = lib.instantiate_own_kernel("reduce_max_fwd_bf16", KernelParams{{bf16({300, 5, 4})}, {bf16({1, 5, 4})}, {0.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 5, 4, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 0, 0, 299}));
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 0, 0, 0}));
  EXPECT_EQ(r.inst->inputs[0].padding, 0xFF80u);   // bf16 -inf
  EXPECT_EQ(r.inst->srf[0], 300u);
  r = lib.instantiate("reduce_mean_fwd_f32", KernelParams{{f32({300, 5, 4})}, {f32({300, 5, 1})}, {2.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  // Over an outer dim a step makes two output vectors (reduce_outer.s with io_f32x2.inc).
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{3, 5, 1, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][2], (AccessPatternDim{2, 0, 0, 3}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 128, 0, 127}));
  EXPECT_EQ(r.inst->inputs[0].padding, 0u);
  EXPECT_EQ(r.inst->srf[1], bits_of(4.0f));
  r = lib.instantiate("softmax_fwd_f32", KernelParams{{f32({100, 3})}, {f32({100, 3})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 3, 1, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].padding, 0xFF800000u);
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 0, 0, 99}));
  r = lib.instantiate("addcmul_fwd_bf16", KernelParams{{bf16({1, 3}), bf16({7, 3}), bf16({7, 1})}, {bf16({7, 3})}, {2.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.inst->variant.find("bcast-00"), std::string::npos) << r.inst->variant;
  EXPECT_EQ(r.inst->srf[0], bits_of(2.0f));
  for (const char* kind : {"sum", "mean", "max"})
    for (unsigned dim = 0; dim < 5; ++dim)
      for (DType t : {DType::F32, DType::BF16}) {
        Shape ys = {3, 3, 3, 3, 3};
        ys[dim] = 1;
        const auto rr = lib.instantiate(std::string("reduce_") + kind + "_fwd" + sfx(t),
                                        KernelParams{{{t, {3, 3, 3, 3, 3}, {}}}, {{t, ys, {}}}, {float(dim)}});
        EXPECT_TRUE(rr.ok()) << rr.message;
      }
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
