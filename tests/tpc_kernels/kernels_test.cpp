// Every kernel of the library against a C++ reference, on 1 and 8 simulated cores: bit-exact
// where the ISA's operation is exact (add, sub, mul, div, max, min, relu, abs, neg, sqrt, fill,
// cast, and the backward formulas in f32, bf16 rounded once), within ISA.md's ulp bounds for exp, log, rsqrt,
// tanh and sigmoid (against a double reference rounded to the dtype).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

using Shape = std::vector<uint32_t>;

DType dtype_of(const std::string& guid) {
  return guid.size() > 5 && guid.compare(guid.size() - 5, 5, "_bf16") == 0 ? DType::BF16 : DType::F32;
}
std::string op_of(const std::string& guid) { return guid.substr(0, guid.find('_')); }

// Shapes of one dtype-independent test set: 1-D to 5-D, sizes around 64 and 128, one element.
const std::vector<Shape>& same_shapes() {
  static const std::vector<Shape> s = {{1},          {63},           {64},           {65},
                                       {127},        {128},          {129},          {300},
                                       {1, 1, 1},    {150, 3},       {130, 3, 4},    {70, 2, 3, 2},
                                       {65, 2, 2, 3, 2}, {1, 5, 1, 2, 3}, {257, 1, 1, 1, 2}};
  return s;
}

struct BcastCase {
  Shape a, b, out;
};
// Broadcasting in each dim (including dim 0, either input), lower ranks and scalars.
const std::vector<BcastCase>& bcast_cases() {
  static const std::vector<BcastCase> c = {
      {{130, 3, 4}, {1, 3, 4}, {130, 3, 4}},      // B along dim 0
      {{1, 3, 4}, {130, 3, 4}, {130, 3, 4}},      // A along dim 0
      {{130, 3, 4}, {130, 1, 4}, {130, 3, 4}},    // dim 1
      {{130, 3, 4}, {130, 3, 1}, {130, 3, 4}},    // dim 2
      {{1, 3, 1}, {130, 1, 4}, {130, 3, 4}},      // both, in different dims
      {{70, 2, 3, 2}, {70, 2, 3, 1}, {70, 2, 3, 2}},                // dim 3
      {{65, 2, 2, 3, 2}, {65, 2, 2, 3, 1}, {65, 2, 2, 3, 2}},       // dim 4
      {{65, 2, 2, 3, 2}, {1, 2, 1, 3, 1}, {65, 2, 2, 3, 2}},        // several dims with dim 0
      {{130, 3, 4}, {130}, {130, 3, 4}},          // lower rank
      {{1}, {200, 2}, {200, 2}},                  // a one-element A
      {{129, 2}, {}, {129, 2}},                   // a 0-D B
      {{1}, {1}, {1}},                            // single elements
      {{5, 1}, {1, 3}, {5, 3}},                   // outer product shape
      // A bias row (one row broadcast over every outer dim) kept in registers, as A or as B:
      {{130}, {130, 3, 4}, {130, 3, 4}},
      {{768, 5}, {768, 1}, {768, 5}},             // 12 f32 vectors: the most that stay
      {{832, 2}, {832}, {832, 2}},                // 13 f32 vectors: the two-vector kernel
  };
  return c;
}

// Random values of a kind; exact zeros of both signs now and then.
struct ValueGen {
  std::mt19937 rng;
  float lo, hi;
  bool zeros;
  ValueGen(uint32_t seed, float l, float h, bool z = true) : rng(seed), lo(l), hi(h), zeros(z) {}
  float operator()() {
    const uint32_t pick = rng() % 32;
    if (zeros && pick == 0) return 0.0f;
    if (zeros && pick == 1) return -0.0f;
    return std::uniform_real_distribution<float>(lo, hi)(rng);
  }
};

// ---- Reference semantics ----

float ref_max(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return NAN;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
float ref_min(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return NAN;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

uint32_t ref_binary(const std::string& op, DType t, float a, float b) {
  float r = 0;
  if (op == "add") r = a + b;
  else if (op == "sub") r = a - b;
  else if (op == "mul") r = a * b;
  else if (op == "div") r = a / b;
  else if (op == "max") r = ref_max(a, b);
  else if (op == "min") r = ref_min(a, b);
  else ADD_FAILURE() << "no reference for " << op;
  return round_to(t, r);
}

// The backward formulas in f32, in the kernels' order, rounded once to the dtype (bf16 tensors
// are widened, computed in f32 and rounded once, as PyTorch's bf16 kernels do).
uint32_t ref_backward(const std::string& op, DType t, float g, float x) {
  if (op == "relu") return round_to(t, x <= 0.0f ? 0.0f : g);
  if (op == "tanh") {
    const float s = 1.0f - x * x;
    return round_to(t, g * s);
  }
  const float s = g * (1.0f - x);   // sigmoid
  return round_to(t, s * x);
}

// Exact unary ops as element bits; nullopt-like flag for the approximate ones.
bool unary_is_exact(const std::string& op) {
  return op == "relu" || op == "abs" || op == "neg" || op == "sqrt";
}
double ref_unary_double(const std::string& op, double x) {
  if (op == "relu") return std::isnan(x) ? x : (x > 0 ? x : 0.0);
  if (op == "abs") return std::fabs(x);
  if (op == "neg") return -x;
  if (op == "sqrt") return std::sqrt(x);
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "rsqrt") return 1.0 / std::sqrt(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  ADD_FAILURE() << "no reference for " << op;
  return 0;
}
int64_t ulp_bound(const std::string& op, DType t) {
  if (unary_is_exact(op)) return 0;
  if (op == "rsqrt") return 1;
  return t == DType::F32 ? 2 : 1;
}
ValueGen unary_inputs(const std::string& op, uint32_t seed) {
  if (op == "exp") return ValueGen(seed, -80.0f, 80.0f);
  if (op == "log" || op == "sqrt" || op == "rsqrt") return ValueGen(seed, 1e-6f, 1e4f);
  if (op == "tanh" || op == "sigmoid") return ValueGen(seed, -12.0f, 12.0f);
  return ValueGen(seed, -1e3f, 1e3f);
}

// Runs guid on 1 and on 8 cores; both must succeed and agree bit for bit; returns the result.
std::vector<HostTensor> run_1_and_8(const std::string& guid, const std::vector<HostTensor>& inputs,
                                    const std::vector<HostTensor>& outputs, const std::vector<float>& scalars = {}) {
  std::vector<HostTensor> one = outputs, eight = outputs;
  const RunOutcome r1 = run_kernel(guid, inputs, one, 1, scalars);
  EXPECT_TRUE(r1.ok) << r1.error;
  EXPECT_TRUE(r1.gaps_ok) << "1 core wrote outside the output's elements";
  const RunOutcome r8 = run_kernel(guid, inputs, eight, 8, scalars);
  EXPECT_TRUE(r8.ok) << r8.error;
  EXPECT_TRUE(r8.gaps_ok) << "8 cores wrote outside the output's elements";
  for (size_t k = 0; k < one.size(); ++k) EXPECT_EQ(one[k].data, eight[k].data) << "1 core vs 8 cores differ";
  return one;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// ---- Binary (forward, with broadcasting) ----

class TpcKernelBinary : public ::testing::TestWithParam<std::string> {};

TEST_P(TpcKernelBinary, MatchesTheReferenceBitExactOnEveryShape) {
  const std::string guid = GetParam();
  const DType t = dtype_of(guid);
  const std::string op = op_of(guid);
  std::vector<BcastCase> cases = bcast_cases();
  for (const Shape& s : same_shapes()) cases.push_back({s, s, s});
  uint32_t seed = 1;
  for (const BcastCase& c : cases) {
    HostTensor a(t, c.a), b(t, c.b), out(t, c.out);
    ValueGen ga(seed++, -1e3f, 1e3f), gb(seed++, -1e3f, 1e3f);
    fill(a, ga);
    fill(b, gb);
    const auto got = run_1_and_8(guid, {a, b}, {out});
    size_t bad = 0;
    for (size_t i = 0; i < out.count() && bad < 5; ++i) {
      const uint32_t want = ref_binary(op, t, a.at(broadcast_index(a, out, i)), b.at(broadcast_index(b, out, i)));
      if (ulp_distance(t, got[0].data[i], want) != 0) {
        ++bad;
        ADD_FAILURE() << guid << " A" << shape_str(c.a) << " B" << shape_str(c.b) << " element " << i << ": got "
                      << value_of(t, got[0].data[i]) << ", want " << value_of(t, want);
      }
    }
  }
}

TEST_P(TpcKernelBinary, HandlesInfinitiesZerosAndNaN) {
  const std::string guid = GetParam();
  const DType t = dtype_of(guid);
  const std::string op = op_of(guid);
  const float specials[] = {0.0f, -0.0f, 1.0f, -2.5f, INFINITY, -INFINITY, NAN, 3e38f};
  HostTensor a(t, {8, 8}), b(t, {8, 8}), out(t, {8, 8});
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      a.data[i + 8 * j] = round_to(t, specials[i]);
      b.data[i + 8 * j] = round_to(t, specials[j]);
    }
  const auto got = run_1_and_8(guid, {a, b}, {out});
  for (size_t i = 0; i < out.count(); ++i)
    EXPECT_EQ(ulp_distance(t, got[0].data[i], ref_binary(op, t, a.at(i), b.at(i))), 0)
        << guid << " " << a.at(i) << ", " << b.at(i) << " -> " << value_of(t, got[0].data[i]);
}

std::vector<std::string> guids_of(const std::vector<std::string>& ops, const std::string& kind) {
  std::vector<std::string> g;
  for (const char* t : {"f32", "bf16"})
    for (const std::string& op : ops) g.push_back(op + kind + t);
  return g;
}
std::string param_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Ops, TpcKernelBinary,
                         ::testing::ValuesIn(guids_of({"add", "sub", "mul", "div", "max", "min"}, "_fwd_")),
                         param_name);

// ---- Unary ----

class TpcKernelUnary : public ::testing::TestWithParam<std::string> {};

TEST_P(TpcKernelUnary, MatchesTheReferenceWithinTheIsaBound) {
  const std::string guid = GetParam();
  const DType t = dtype_of(guid);
  const std::string op = op_of(guid);
  const int64_t bound = ulp_bound(op, t);
  uint32_t seed = 100;
  int64_t worst = 0;
  for (const Shape& s : same_shapes()) {
    HostTensor x(t, s), y(t, s);
    ValueGen gen = unary_inputs(op, seed++);
    fill(x, gen);
    const auto got = run_1_and_8(guid, {x}, {y});
    size_t bad = 0;
    for (size_t i = 0; i < y.count() && bad < 5; ++i) {
      const uint32_t want = op == "relu" ? round_to(t, ref_max(x.at(i), 0.0f))
                                         : round_to(t, ref_unary_double(op, static_cast<double>(x.at(i))));
      const int64_t d = ulp_distance(t, got[0].data[i], want);
      worst = std::max(worst, d);
      if (d > bound) {
        ++bad;
        ADD_FAILURE() << guid << " " << shape_str(s) << " x = " << x.at(i) << ": got " << value_of(t, got[0].data[i])
                      << ", want " << value_of(t, want) << " (" << d << " ulp, bound " << bound << ")";
      }
    }
  }
  RecordProperty("max_ulp", static_cast<int>(worst));
}

TEST_P(TpcKernelUnary, HandlesSpecialValues) {
  const std::string guid = GetParam();
  const DType t = dtype_of(guid);
  const std::string op = op_of(guid);
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-30f, -3.5f, 100.0f};
  HostTensor x(t, {10}), y(t, {10});
  for (int i = 0; i < 10; ++i) x.data[i] = round_to(t, specials[i]);
  const auto got = run_1_and_8(guid, {x}, {y});
  for (int i = 0; i < 10; ++i) {
    const uint32_t want = op == "relu" ? round_to(t, ref_max(x.at(i), 0.0f))
                                       : round_to(t, ref_unary_double(op, static_cast<double>(x.at(i))));
    EXPECT_LE(ulp_distance(t, got[0].data[i], want), ulp_bound(op, t))
        << guid << " x = " << x.at(i) << ": got " << value_of(t, got[0].data[i]) << ", want " << value_of(t, want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, TpcKernelUnary,
    ::testing::ValuesIn(guids_of({"relu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "abs", "neg"}, "_fwd_")),
    param_name);

// ---- Backward ----

class TpcKernelBackward : public ::testing::TestWithParam<std::string> {};

TEST_P(TpcKernelBackward, MatchesTheF32FormulaRoundedOnceBitExact) {
  const std::string guid = GetParam();
  const DType t = dtype_of(guid);
  const std::string op = op_of(guid);
  uint32_t seed = 500;
  for (const Shape& s : same_shapes()) {
    HostTensor g(t, s), x(t, s), dx(t, s);
    ValueGen gg(seed++, -10.0f, 10.0f);
    // relu: the forward input; tanh / sigmoid: the forward output, in its range.
    ValueGen gx = op == "relu" ? ValueGen(seed++, -5.0f, 5.0f)
                               : op == "tanh" ? ValueGen(seed++, -1.0f, 1.0f) : ValueGen(seed++, 0.0f, 1.0f);
    fill(g, gg);
    fill(x, gx);
    const auto got = run_1_and_8(guid, {g, x}, {dx});
    size_t bad = 0;
    for (size_t i = 0; i < dx.count() && bad < 5; ++i) {
      const uint32_t want = ref_backward(op, t, g.at(i), x.at(i));
      if (ulp_distance(t, got[0].data[i], want) != 0) {
        ++bad;
        ADD_FAILURE() << guid << " " << shape_str(s) << " g = " << g.at(i) << " x = " << x.at(i) << ": got "
                      << value_of(t, got[0].data[i]) << ", want " << value_of(t, want);
      }
    }
  }
}

// The formula stays close to the exact derivative (f32 steps, bf16 rounded once).
TEST_P(TpcKernelBackward, IsCloseToTheExactDerivative) {
  const std::string guid = GetParam();
  const DType t = dtype_of(guid);
  const std::string op = op_of(guid);
  HostTensor g(t, {1000}), x(t, {1000}), dx(t, {1000});
  ValueGen gg(7, 0.5f, 2.0f, false);
  ValueGen gx = op == "relu" ? ValueGen(8, -5.0f, 5.0f)
                             : op == "tanh" ? ValueGen(8, -0.9f, 0.9f, false) : ValueGen(8, 0.1f, 0.9f, false);
  fill(g, gg);
  fill(x, gx);
  const auto got = run_1_and_8(guid, {g, x}, {dx});
  const double tol = t == DType::F32 ? 1e-5 : 3e-2;
  for (size_t i = 0; i < dx.count(); ++i) {
    const double gi = g.at(i), xi = x.at(i);
    const double exact = op == "relu" ? (xi > 0 ? gi : 0.0) : op == "tanh" ? gi * (1 - xi * xi) : gi * xi * (1 - xi);
    EXPECT_NEAR(value_of(t, got[0].data[i]), exact, tol * std::max(1.0, std::fabs(exact))) << guid << " " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TpcKernelBackward, ::testing::ValuesIn(guids_of({"relu", "tanh", "sigmoid"}, "_bwd_")),
                         param_name);

// ---- Fill ----

class TpcKernelFill : public ::testing::TestWithParam<std::string> {};

TEST_P(TpcKernelFill, WritesTheValueEverywhere) {
  const std::string guid = GetParam();
  const DType t = dtype_of(guid);
  for (float value : {3.14159265f, -0.0f, 1e-40f, -INFINITY}) {
    for (const Shape& s : same_shapes()) {
      HostTensor y(t, s);
      const auto got = run_1_and_8(guid, {}, {y}, {value});
      for (size_t i = 0; i < y.count(); ++i)
        ASSERT_EQ(got[0].data[i], round_to(t, value)) << guid << " " << shape_str(s) << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TpcKernelFill, ::testing::Values("fill_f32", "fill_bf16"), param_name);

// ---- Integer binary ops and fill (wrapping, as int32 arithmetic) ----

TEST(TpcKernelInteger, BinaryOpsWrapAndBroadcast) {
  std::mt19937 rng(46);
  std::vector<BcastCase> cases = bcast_cases();
  for (const Shape& s : same_shapes()) cases.push_back({s, s, s});
  for (const char* op : {"add", "sub", "mul", "max", "min"}) {
    for (const BcastCase& c : cases) {
      HostTensor a(DType::I32, c.a), b(DType::I32, c.b), out(DType::I32, c.out);
      for (uint32_t& v : a.data) v = rng() % 3 ? rng() % 2001 - 1000 : rng();
      for (uint32_t& v : b.data) v = rng() % 3 ? rng() % 2001 - 1000 : rng();
      const auto got = run_1_and_8(std::string(op) + "_fwd_i32", {a, b}, {out});
      for (size_t i = 0; i < out.count(); ++i) {
        const auto x = static_cast<int32_t>(a.data[broadcast_index(a, out, i)]);
        const auto y = static_cast<int32_t>(b.data[broadcast_index(b, out, i)]);
        const uint32_t ux = static_cast<uint32_t>(x), uy = static_cast<uint32_t>(y);
        const std::string o = op;
        const uint32_t want = o == "add" ? ux + uy : o == "sub" ? ux - uy : o == "mul" ? ux * uy
                              : o == "max" ? static_cast<uint32_t>(std::max(x, y)) : static_cast<uint32_t>(std::min(x, y));
        ASSERT_EQ(got[0].data[i], want) << op << " A" << shape_str(c.a) << " B" << shape_str(c.b) << " element " << i;
      }
    }
  }
}

TEST(TpcKernelInteger, FillTakesAnIntegerValue) {
  HostTensor y(DType::I32, {70, 3});
  const auto got = run_1_and_8("fill_i32", {}, {y}, {-16777216.0f});
  for (uint32_t v : got[0].data) ASSERT_EQ(static_cast<int32_t>(v), -16777216);
  const KernelParams p{{}, {{DType::I32, {4}, {}}}, {2.5f}};
  const InstantiateResult r = KernelLibrary::instance().instantiate("fill_i32", p);
  EXPECT_EQ(r.status, GlueStatus::IncompatibleScalarParams);
  EXPECT_NE(r.message.find("must be an integer"), std::string::npos) << r.message;
}

// ---- Cast ----

TEST(TpcKernelCast, F32ToBf16RoundsToNearestEven) {
  std::mt19937 rng(42);
  for (const Shape& s : same_shapes()) {
    HostTensor x(DType::F32, s), y(DType::BF16, s);
    for (size_t i = 0; i < x.count(); ++i) {
      // Random bits with a moderate exponent; every fourth value exactly a tie.
      uint32_t u = (rng() & 0x807FFFFFu) | ((100u + rng() % 60u) << 23);
      if (i % 4 == 0) u = (u & 0xFFFF0000u) | 0x8000u;
      x.data[i] = u;
    }
    if (x.count() >= 8) {
      const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 3.4e38f, 1e-40f, -1e-39f};
      for (int k = 0; k < 8; ++k) x.data[k] = bits_of(specials[k]);
    }
    const auto got = run_1_and_8("cast_f32_to_bf16", {x}, {y});
    for (size_t i = 0; i < x.count(); ++i)
      ASSERT_EQ(ulp_distance(DType::BF16, got[0].data[i], to_bf16(x.at(i))), 0)
          << shape_str(s) << " element " << i << " x = " << x.at(i);
  }
}

TEST(TpcKernelCast, Bf16ToF32IsExact) {
  std::mt19937 rng(43);
  for (const Shape& s : same_shapes()) {
    HostTensor x(DType::BF16, s), y(DType::F32, s);
    for (uint32_t& v : x.data) v = rng() & 0xFFFF;
    const auto got = run_1_and_8("cast_bf16_to_f32", {x}, {y});
    for (size_t i = 0; i < x.count(); ++i)
      ASSERT_EQ(ulp_distance(DType::F32, got[0].data[i], bits_of(from_bf16(static_cast<uint16_t>(x.data[i])))), 0)
          << shape_str(s) << " element " << i;
  }
}

TEST(TpcKernelCast, F32ToI32TruncatesAndSaturates) {
  std::mt19937 rng(44);
  for (const Shape& s : same_shapes()) {
    HostTensor x(DType::F32, s), y(DType::I32, s);
    std::uniform_real_distribution<float> value(-3e9f, 3e9f), small(-300.0f, 300.0f);
    for (size_t i = 0; i < x.count(); ++i) x.data[i] = bits_of(i % 2 ? value(rng) : small(rng));
    if (x.count() >= 8) {
      const float specials[] = {2.7f, -2.7f, -0.0f, NAN, INFINITY, -INFINITY, 2147483520.0f, -2147483648.0f};
      for (int k = 0; k < 8; ++k) x.data[k] = bits_of(specials[k]);
    }
    const auto got = run_1_and_8("cast_f32_to_i32", {x}, {y});
    for (size_t i = 0; i < x.count(); ++i) {
      const float v = x.at(i);
      const int32_t want = std::isnan(v) ? 0 : v >= 2147483648.0f ? INT32_MAX : v < -2147483648.0f ? INT32_MIN
                                                                                        : static_cast<int32_t>(v);
      ASSERT_EQ(static_cast<int32_t>(got[0].data[i]), want) << shape_str(s) << " element " << i << " x = " << v;
    }
  }
}

TEST(TpcKernelCast, I32ToF32RoundsToNearestEven) {
  std::mt19937 rng(45);
  for (const Shape& s : same_shapes()) {
    HostTensor x(DType::I32, s), y(DType::F32, s);
    for (size_t i = 0; i < x.count(); ++i) x.data[i] = i % 3 ? rng() : rng() % 70000;
    if (x.count() >= 4) {
      const int32_t specials[] = {16777217, -16777219, INT32_MIN, INT32_MAX};
      for (int k = 0; k < 4; ++k) x.data[k] = static_cast<uint32_t>(specials[k]);
    }
    const auto got = run_1_and_8("cast_i32_to_f32", {x}, {y});
    for (size_t i = 0; i < x.count(); ++i)
      ASSERT_EQ(got[0].data[i], bits_of(static_cast<float>(static_cast<int32_t>(x.data[i]))))
          << shape_str(s) << " element " << i;
  }
}

// ---- Strided tensors ----

TEST(TpcKernelStrides, PaddedRowsAndPlanesAreReadAndWrittenThroughTheirStrides) {
  for (DType t : {DType::F32, DType::BF16}) {
    const std::string sfx = t == DType::F32 ? "f32" : "bf16";
    HostTensor a(t, {150, 3, 4}, {1, 160, 160 * 3 + 7}), b(t, {1, 3, 4}, {1, 5, 20});
    HostTensor out(t, {150, 3, 4}, {1, 200, 700});
    ValueGen g1(1, -10, 10), g2(2, -10, 10);
    fill(a, g1);
    fill(b, g2);
    const auto got = run_1_and_8("sub_fwd_" + sfx, {a, b}, {out});
    for (size_t i = 0; i < out.count(); ++i)
      ASSERT_EQ(got[0].data[i], ref_binary("sub", t, a.at(i), b.at(broadcast_index(b, out, i)))) << sfx << " " << i;
  }
}

// ---- Partitioning ----

TEST(TpcKernelPartition, EightCoresShareTheWorkAndUseTheSameBundleTotalRoughly) {
  HostTensor a(DType::F32, {640, 8, 3}), b(DType::F32, {640, 8, 3}), out(DType::F32, {640, 8, 3});
  ValueGen g(3, -1, 1);
  fill(a, g);
  fill(b, g);
  std::vector<HostTensor> o1 = {out}, o8 = {out};
  const RunOutcome r1 = run_kernel("add_fwd_f32", {a, b}, o1, 1);
  const RunOutcome r8 = run_kernel("add_fwd_f32", {a, b}, o8, 8);
  ASSERT_TRUE(r1.ok && r8.ok) << r1.error << r8.error;
  EXPECT_EQ(r1.cores_used, 1u);
  EXPECT_EQ(r8.cores_used, 8u);   // one run of 15360 elements: 120 steps, 15 per core
  EXPECT_EQ(o1[0].data, o8[0].data);
  // The loop work is the same; each core adds its own set-up (the nest's, and its prefetch of the
  // first 48 vectors of both inputs).
  EXPECT_GT(r8.bundles, r1.bundles);
  EXPECT_LT(r8.bundles, r1.bundles + 8 * 150);
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

// Each core writes exactly the output elements its slice covers by the output's access pattern
// (the box of touched_range per dim of the output's descriptor, clipped to its sizes; a dense
// elementwise output is one run, its descriptor one dim): what the graph compiler relies on.
TEST(TpcKernelPartition, EachCoreWritesExactlyItsAccessPatternBox) {
  for (const char* guid : {"add_fwd_bf16", "cast_f32_to_bf16", "relu_fwd_f32"}) {
    const bool cast = std::string(guid) == "cast_f32_to_bf16";
    const DType in_t = std::string(guid) == "add_fwd_bf16" ? DType::BF16 : DType::F32;
    const DType out_t = cast ? DType::BF16 : in_t;
    HostTensor a(in_t, {300, 3, 2, 2}), out(out_t, {300, 3, 2, 2});
    ValueGen g(9, -1, 1, false);
    fill(a, g);
    std::vector<HostTensor> inputs = {a};
    if (std::string(guid) == "add_fwd_bf16") inputs.push_back(a);
    KernelParams p;
    for (const HostTensor& t : inputs) p.inputs.push_back(t.params());
    p.outputs = {out.params()};
    const InstantiateResult r = KernelLibrary::instance().instantiate(guid, p);
    ASSERT_TRUE(r.ok()) << r.message;
    for (unsigned cores : {3u, 8u}) {
      const auto slices = partition_index_space(r.inst->ispace_geometry, cores);
      std::vector<int> writers(out.count(), 0);
      for (const CoreSlice& s : slices) {
        SimMemory mem;
        std::vector<uint64_t> in_bases;
        for (const HostTensor& t : inputs) {
          in_bases.push_back(mem.alloc(t.span() * t.elem_bytes()));
          store_tensor(mem, in_bases.back(), t);
        }
        const uint64_t out_base = mem.alloc(out.span() * out.elem_bytes());
        tpc::TpcExecutor ex;
        ex.set_global_memory(&mem);
        ex.launch(r.inst->launch_context(in_bases, {out_base}, s.offset, s.size));
        ASSERT_EQ(ex.run(r.inst->program->bundles).status, tpc::CoreStatus::Halted) << ex.state().fault.message;
        std::array<std::pair<int64_t, int64_t>, 5> box;
        for (unsigned d = 0; d < 5; ++d) box[d] = touched_range(r.inst->output_patterns[0][d], s);
        for (size_t i = 0; i < out.count(); ++i) {
          size_t rest = i;
          bool inside = true;
          for (unsigned d = 0; d < 5; ++d) {
            const uint32_t size = r.inst->outputs[0].size[d];
            const int64_t c = static_cast<int64_t>(rest % size);
            rest /= size;
            inside = inside && c >= box[d].first && c <= box[d].second;
          }
          bool written = false;
          for (unsigned b = 0; b < out.elem_bytes(); ++b) written = written || *mem.at(out_base + i * out.elem_bytes() + b) != kSentinel;
          EXPECT_EQ(written, inside) << guid << " element " << i << " on " << cores << " cores";
          writers[i] += written ? 1 : 0;
        }
      }
      for (size_t i = 0; i < out.count(); ++i) ASSERT_EQ(writers[i], 1) << guid << " element " << i;
    }
  }
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
