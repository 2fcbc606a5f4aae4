// The fifth batch against C++ references, on 1 and 8 simulated cores (bit-identical outputs, no
// writes outside the outputs): comparisons (f32 / bf16 / i32, broadcasting, NaN and -0), where
// (broadcasting of cond, A and B on every dim, raw bits), the u8 casts, reduce_min, gather
// (out-of-range indices give 0), range (arange / linspace rules, f32 and wrapping i32), the random
// generators (uniform bit-exact against the generator; normal against a double evaluation of the
// same formula, and its distribution over >= 100k elements), silu and gelu (erf form) forward /
// backward against double, the
// validation errors and the geometries / patterns, and some of them at other vector widths.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "arch/tpc/asm/assembler.h"
#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

using Shape = std::vector<uint32_t>;

std::string sfx(DType t) { return std::string("_") + tpc::dtype_name(t); }
std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}
// Raw element bits of the tensor's width (any pattern: NaNs with payloads, infinities, denormals).
void fill_bits(HostTensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  const unsigned bits = tpc::dtype_bits(t.dtype);
  for (uint32_t& v : t.data) v = bits == 32 ? static_cast<uint32_t>(rng()) : static_cast<uint32_t>(rng()) & ((1u << bits) - 1);
}
struct Tol {
  double rtol, atol;
};
bool within(double got, double ref, Tol tol) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isinf(ref)) return got == ref;
  return std::fabs(got - ref) <= tol.rtol * std::fabs(ref) + tol.atol;
}
int32_t as_i32(uint32_t bits) { return static_cast<int32_t>(bits); }

// ---- comparisons ----

// Values with many ties, both zeros, infinities and NaN (floats); small numbers and the extremes (i32).
void fill_compare_values(HostTensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  if (t.dtype == DType::I32) {
    const int32_t special[] = {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), -1, 0, 1};
    for (uint32_t& v : t.data)
      v = static_cast<uint32_t>(rng() % 4 == 0 ? special[rng() % 5] : static_cast<int32_t>(rng() % 7) - 3);
    return;
  }
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e-30f};
  for (uint32_t& v : t.data) {
    const float f = rng() % 4 == 0 ? special[rng() % 7] : static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.5f;
    v = round_to(t.dtype, f);
  }
}
bool compare(const std::string& op, double a, double b) {
  if (op == "equal") return a == b;
  if (op == "not_equal") return a != b;
  if (op == "less") return a < b;
  if (op == "less_equal") return a <= b;
  if (op == "greater") return a > b;
  return a >= b;
}

struct BcastCase {
  Shape a, b, out;
};
const std::vector<BcastCase>& binary_cases() {
  static const std::vector<BcastCase> c = {
      {{300}, {300}, {300}},           {{65, 3}, {1, 3}, {65, 3}},      {{1}, {129, 2}, {129, 2}},
      {{70, 1, 4}, {70, 3, 1}, {70, 3, 4}}, {{}, {5}, {5}},          {{65, 2, 1, 2, 3}, {65, 1, 2, 1, 3}, {65, 2, 2, 2, 3}},
      {{3, 7}, {3, 7}, {3, 7}},        {{257, 2}, {257}, {257, 2}},     {{}, {}, {}}};
  return c;
}

TEST(TpcKernelCompare, EveryOpAndDtypeWithBroadcastingNaNAndZeros) {
  uint32_t seed = 1;
  for (DType t : {DType::F32, DType::BF16, DType::I32})
    for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
      for (const BcastCase& c : binary_cases()) {
        const std::string guid = std::string(op) + "_fwd" + sfx(t);
        HostTensor a(t, c.a), b(t, c.b);
        fill_compare_values(a, seed++);
        fill_compare_values(b, seed++);
        const auto got = run_1_and_8(guid, {a, b}, {HostTensor(t, c.out)});
        HostTensor out(t, c.out);
        size_t bad = 0;
        for (size_t i = 0; i < out.count() && bad < 3; ++i) {
          const uint32_t ab = a.data[broadcast_index(a, out, i)], bb = b.data[broadcast_index(b, out, i)];
          const double av = t == DType::I32 ? as_i32(ab) : value_of(t, ab), bv = t == DType::I32 ? as_i32(bb) : value_of(t, bb);
          const bool holds = compare(op, av, bv);
          const uint32_t want = t == DType::I32 ? (holds ? 1u : 0u) : round_to(t, holds ? 1.0f : 0.0f);
          if (got[0].data[i] != want) {
            ++bad;
            ADD_FAILURE() << guid << " " << shape_str(c.a) << " vs " << shape_str(c.b) << " elem " << i << ": " << av << " "
                          << op << " " << bv << " gave bits " << got[0].data[i] << ", want " << want;
          }
        }
      }
}

// NaN: every comparison is false except not_equal; -0 == +0.
TEST(TpcKernelCompare, NaNAndSignedZeros) {
  for (DType t : {DType::F32, DType::BF16}) {
    HostTensor a(t, {4}), b(t, {4});
    const float av[] = {NAN, 1.0f, NAN, -0.0f}, bv[] = {1.0f, NAN, NAN, 0.0f};
    for (int i = 0; i < 4; ++i) a.data[i] = round_to(t, av[i]), b.data[i] = round_to(t, bv[i]);
    for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
      const auto got = run_1_and_8(std::string(op) + "_fwd" + sfx(t), {a, b}, {HostTensor(t, {4})});
      const bool ne = std::string(op) == "not_equal";
      for (int i = 0; i < 3; ++i) EXPECT_EQ(got[0].at(i), ne ? 1.0f : 0.0f) << op << " elem " << i;
      const bool zero_holds = std::string(op) == "equal" || std::string(op) == "less_equal" || std::string(op) == "greater_equal";
      EXPECT_EQ(got[0].at(3), zero_holds ? 1.0f : 0.0f) << op << " -0 vs +0";
    }
  }
}

// ---- where ----

struct WhereCase {
  Shape cond, a, b, out;
};

TEST(TpcKernelWhere, BroadcastsEveryInputOnEveryDimAndKeepsRawBits) {
  const std::vector<WhereCase> cases = {
      {{300}, {300}, {300}, {300}},
      {{1}, {300}, {300}, {300}},                          // cond along dim 0
      {{65, 3}, {1, 3}, {65, 1}, {65, 3}},                 // A along dim 0, B along dim 1
      {{130, 1}, {1, 4}, {130, 4}, {130, 4}},
      {{}, {}, {}, {}},
      {{70, 2, 1, 1, 3}, {70, 1, 3, 2, 1}, {1, 2, 3, 2, 3}, {70, 2, 3, 2, 3}},
      {{1, 4}, {257, 4}, {1, 1}, {257, 4}},                // cond and B along dim 0
      {{1, 5}, {1, 5}, {129, 1}, {129, 5}},                // cond and A along dim 0, B along dim 1
      {{129, 2}, {129, 2}, {}, {129, 2}},
      {{3, 7}, {3}, {1, 7}, {3, 7}}};
  uint32_t seed = 1;
  for (DType t : {DType::F32, DType::BF16, DType::I32})
    for (const WhereCase& c : cases) {
      HostTensor cond(DType::U8, c.cond), a(t, c.a), b(t, c.b);
      std::mt19937 rng(seed++);
      for (uint32_t& v : cond.data) v = rng() % 2 ? 0u : 1u + rng() % 255;   // any nonzero is true
      fill_bits(a, seed++);
      fill_bits(b, seed++);
      HostTensor y(t, c.out);
      const auto got = run_1_and_8("where_fwd" + sfx(t), {cond, a, b}, {y});
      size_t bad = 0;
      for (size_t i = 0; i < y.count() && bad < 3; ++i) {
        const bool pick_a = cond.data[broadcast_index(cond, y, i)] != 0;
        const uint32_t want = pick_a ? a.data[broadcast_index(a, y, i)] : b.data[broadcast_index(b, y, i)];
        if (got[0].data[i] != want) {
          ++bad;
          ADD_FAILURE() << "where_fwd" << sfx(t) << " " << shape_str(c.cond) << " " << shape_str(c.a) << " "
                        << shape_str(c.b) << " elem " << i << ": got " << got[0].data[i] << ", want " << want;
        }
      }
    }
}

// No input broadcast along dim 0: a step is one u8 vector of cond and the four (bf16: two) vectors
// of A, B and Y it covers (where_scheduled.cpp); the kernel file's values, on 1 and 8 cores. An
// input broadcast along dim 0 keeps the kernel file.
TEST(TpcKernelWhere, ScheduledStepsOneVectorOfCond) {
  KernelLibrary& lib = KernelLibrary::instance();
  for (DType t : {DType::F32, DType::BF16, DType::I32}) {
    for (const WhereCase& c : {WhereCase{{1000, 3}, {1000, 3}, {1000, 3}, {1000, 3}},
                               WhereCase{{1000, 3}, {1000, 1}, {1000, 3}, {1000, 3}}}) {
      SCOPED_TRACE(std::string("where_fwd") + sfx(t) + " B " + shape_str(c.b));
      HostTensor cond(DType::U8, c.cond), a(t, c.a), b(t, c.b);
      std::mt19937 rng(9);
      for (uint32_t& v : cond.data) v = rng() % 2 ? 0u : 1u + rng() % 255;
      fill_bits(a, 10);
      fill_bits(b, 11);
      const KernelParams params{{cond.params(), a.params(), b.params()}, {tp(t, c.out)}, {}};
      const InstantiateResult scheduled = lib.instantiate("where_fwd" + sfx(t), params);
      const InstantiateResult own = lib.instantiate_own_kernel("where_fwd" + sfx(t), params);
      ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
      EXPECT_NE(scheduled.inst->variant.find("scheduled"), std::string::npos) << scheduled.inst->variant;
      std::vector<HostTensor> want{HostTensor(t, c.out)};
      ASSERT_TRUE(run_instantiated(own, {cond, a, b}, want, 1, KernelLibrary::kDefaultVectorBits).ok);
      for (unsigned cores : {1u, 8u}) {
        std::vector<HostTensor> got{HostTensor(t, c.out)};
        const RunOutcome r = run_instantiated(scheduled, {cond, a, b}, got, cores, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(r.ok) << r.error;
        EXPECT_TRUE(r.gaps_ok);
        EXPECT_EQ(got[0].data, want[0].data) << cores << " cores";
      }
    }
  }
  const InstantiateResult bcast = lib.instantiate(
      "where_fwd_f32", {{tp(DType::U8, {1, 4}), tp(DType::F32, {257, 4}), tp(DType::F32, {257, 4})}, {tp(DType::F32, {257, 4})}, {}});
  ASSERT_TRUE(bcast.ok()) << bcast.message;
  EXPECT_EQ(bcast.inst->variant.find("scheduled"), std::string::npos) << bcast.inst->variant;
}

TEST(TpcKernelWhere, StridedTensors) {
  for (DType t : {DType::F32, DType::BF16, DType::I32}) {
    HostTensor cond(DType::U8, {70, 3}, {1, 301}), a(t, {70, 3}, {1, 80}), b(t, {70, 1});
    std::mt19937 rng(3);
    for (uint32_t& v : cond.data) v = rng() % 3 == 0 ? 0u : 7u;
    fill_bits(a, 4);
    fill_bits(b, 5);
    HostTensor y(t, {70, 3}, {1, 75});
    const auto got = run_1_and_8("where_fwd" + sfx(t), {cond, a, b}, {y});
    for (size_t i = 0; i < y.count(); ++i)
      ASSERT_EQ(got[0].data[i], cond.data[i] ? a.data[i] : b.data[i % 70]) << sfx(t) << " elem " << i;
  }
}

// ---- u8 casts ----

const std::vector<Shape>& cast_shapes() {
  static const std::vector<Shape> s = {{1}, {255}, {256}, {257}, {300, 3}, {1000}, {65, 2, 3, 1, 2}, {}};
  return s;
}

TEST(TpcKernelCastU8, FromF32TowardZeroSaturatingNaNToZero) {
  const float special[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 0.5f, 0.99f, 1.0f, 1.5f, 254.9f, 255.0f,
                           255.5f, 256.0f, 300.0f, -1.0f, -0.5f, -300.0f, 1e10f, 127.7f, 1e-40f, -1e-40f};
  uint32_t seed = 1;
  for (const Shape& s : cast_shapes()) {
    HostTensor x(DType::F32, s);
    fill_uniform(x, seed++, -50.0f, 300.0f);
    for (size_t i = 0; i < x.count() && i < std::size(special) * 3; ++i) x.data[i * 7 % x.count()] = bits_of(special[i % std::size(special)]);
    const auto got = run_1_and_8("cast_f32_to_u8", {x}, {HostTensor(DType::U8, s)});
    for (size_t i = 0; i < x.count(); ++i) {
      const float f = x.at(i);
      const uint32_t want = std::isnan(f) ? 0u : f <= 0.0f ? 0u : f >= 255.0f ? 255u : static_cast<uint32_t>(std::trunc(f));
      ASSERT_EQ(got[0].data[i], want) << shape_str(s) << " elem " << i << " value " << f;
    }
  }
}

TEST(TpcKernelCastU8, FromI32Saturating) {
  uint32_t seed = 100;
  const int32_t special[] = {std::numeric_limits<int32_t>::min(), -256, -1, 0, 1, 127, 128, 254, 255, 256, 257, 65535,
                             std::numeric_limits<int32_t>::max()};
  for (const Shape& s : cast_shapes()) {
    HostTensor x(DType::I32, s);
    std::mt19937 rng(seed++);
    for (uint32_t& v : x.data) v = static_cast<uint32_t>(static_cast<int32_t>(rng() % 700) - 200);
    for (size_t i = 0; i < x.count() && i < std::size(special); ++i) x.data[i * 5 % x.count()] = static_cast<uint32_t>(special[i]);
    const auto got = run_1_and_8("cast_i32_to_u8", {x}, {HostTensor(DType::U8, s)});
    for (size_t i = 0; i < x.count(); ++i) {
      const int32_t v = as_i32(x.data[i]);
      ASSERT_EQ(got[0].data[i], static_cast<uint32_t>(std::clamp(v, 0, 255))) << shape_str(s) << " elem " << i << " value " << v;
    }
  }
}

TEST(TpcKernelCastU8, ToF32AndI32Exactly) {
  uint32_t seed = 200;
  for (const Shape& s : cast_shapes()) {
    HostTensor x(DType::U8, s);
    for (size_t i = 0; i < x.count(); ++i) x.data[i] = static_cast<uint32_t>((i * 37 + seed) % 256);   // every value
    ++seed;
    const auto f = run_1_and_8("cast_u8_to_f32", {x}, {HostTensor(DType::F32, s)});
    const auto n = run_1_and_8("cast_u8_to_i32", {x}, {HostTensor(DType::I32, s)});
    for (size_t i = 0; i < x.count(); ++i) {
      ASSERT_EQ(f[0].data[i], bits_of(static_cast<float>(x.data[i]))) << shape_str(s) << " elem " << i;
      ASSERT_EQ(n[0].data[i], x.data[i]) << shape_str(s) << " elem " << i;
    }
  }
  // Strided both ways (gaps not written): u8 rows of 300 in a pitch of 333, f32 rows in 310.
  HostTensor x(DType::U8, {300, 3}, {1, 333});
  for (size_t i = 0; i < x.count(); ++i) x.data[i] = static_cast<uint32_t>(i % 256);
  const auto f = run_1_and_8("cast_u8_to_f32", {x}, {HostTensor(DType::F32, {300, 3}, {1, 310})});
  for (size_t i = 0; i < x.count(); ++i) ASSERT_EQ(f[0].at(i), static_cast<float>(x.data[i]));
  const auto back = run_1_and_8("cast_f32_to_u8", {f[0]}, {HostTensor(DType::U8, {300, 3}, {1, 301})});
  EXPECT_EQ(back[0].data, x.data);
}

// ---- reduce_min ----

TEST(TpcKernelReduceMin, EveryDimBitExactNaNAndSignedZeros) {
  const std::vector<Shape> shapes = {{1}, {300}, {65, 3}, {129, 2, 3}, {3, 4, 2, 5}, {70, 2, 1, 2, 3}, {257, 1, 2}};
  uint32_t seed = 1;
  for (DType t : {DType::F32, DType::BF16})
    for (const Shape& s : shapes)
      for (unsigned dim = 0; dim < s.size(); ++dim) {
        HostTensor x(t, s);
        fill_uniform(x, seed++, -100.0f, 100.0f);
        Shape ys = s;
        ys[dim] = 1;
        const auto got = run_1_and_8("reduce_min_fwd" + sfx(t), {x}, {HostTensor(t, ys)}, {static_cast<float>(dim)});
        HostTensor y(t, ys);
        size_t bad = 0;
        for (size_t o = 0; o < y.count() && bad < 3; ++o) {
          auto c = coords(ys, o);
          float m = INFINITY;
          for (uint32_t k = 0; k < s[dim]; ++k) {
            c[dim] = k;
            m = std::min(m, x.at(linear(s, c)));
          }
          if (got[0].data[o] != round_to(t, m)) {
            ++bad;
            ADD_FAILURE() << "reduce_min_fwd" << sfx(t) << " " << shape_str(s) << " dim " << dim << " out " << o << ": got "
                          << got[0].at(o) << ", want " << m;
          }
        }
      }
  // IEEE minimum: NaN propagates, -0 < +0; a row of +inf gives +inf (the padding is +inf, not 0).
  for (DType t : {DType::F32, DType::BF16})
    for (unsigned dim = 0; dim < 2; ++dim) {
      const Shape s = {130, 4};
      HostTensor x(t, s);
      fill_uniform(x, 9, 1.0f, 2.0f);
      for (uint32_t k = 0; k < (dim == 0 ? 130u : 4u); ++k) {
        const size_t row1 = dim == 0 ? 130 + k : 1 + 130 * k, row2 = dim == 0 ? 260 + k : 2 + 130 * k,
                     row3 = dim == 0 ? 390 + k : 3 + 130 * k;
        x.data[row1] = round_to(t, k % 2 ? 0.0f : -0.0f);
        x.data[row2] = round_to(t, INFINITY);
        x.data[row3] = round_to(t, k == 3 ? NAN : 0.5f);
      }
      Shape ys = s;
      ys[dim] = 1;
      const auto got = run_1_and_8("reduce_min_fwd" + sfx(t), {x}, {HostTensor(t, ys)}, {static_cast<float>(dim)});
      const size_t stride = dim == 0 ? 1 : 1;
      EXPECT_EQ(got[0].data[1 * stride], round_to(t, -0.0f)) << sfx(t) << " dim " << dim;
      EXPECT_EQ(got[0].at(2 * stride), INFINITY) << sfx(t) << " dim " << dim;
      EXPECT_TRUE(std::isnan(got[0].at(3 * stride))) << sfx(t) << " dim " << dim;
    }
}

// ---- gather ----

struct GatherCase {
  Shape x, index;
  unsigned dim;
};

TEST(TpcKernelGather, AlongEveryDimOutOfRangeGivesZero) {
  const std::vector<GatherCase> cases = {
      {{300}, {500}, 0},          {{65, 3}, {65, 3}, 0},       {{65, 3}, {64, 5}, 1},      {{10, 4, 3}, {7, 6, 2}, 1},
      {{10, 4, 3}, {10, 4, 9}, 2}, {{5, 4, 3, 2}, {3, 4, 2, 2}, 3}, {{6, 3, 2, 2, 3}, {6, 2, 2, 1, 4}, 4},
      {{6, 3, 2, 2, 3}, {9, 3, 1, 2, 2}, 0}, {{}, {}, 0},      {{1}, {70}, 0},             {{3, 1}, {3, 2}, 1}};
  uint32_t seed = 1;
  for (DType t : {DType::F32, DType::BF16, DType::I32})
    for (const GatherCase& c : cases) {
      HostTensor x(t, c.x), idx(DType::I32, c.index);
      fill_bits(x, seed++);
      const int32_t n = static_cast<int32_t>(x.dim(c.dim));
      std::mt19937 rng(seed++);
      for (uint32_t& v : idx.data) v = static_cast<uint32_t>(static_cast<int32_t>(rng() % (n + 4)) - 2);   // -2 .. n+1
      const auto got = run_1_and_8("gather_fwd" + sfx(t), {x, idx}, {HostTensor(t, c.index)}, {static_cast<float>(c.dim)});
      size_t bad = 0;
      for (size_t i = 0; i < idx.count() && bad < 3; ++i) {
        auto xc = coords(c.index, i);
        const int32_t k = as_i32(idx.data[i]);
        uint32_t want = 0;
        if (k >= 0 && k < n) {
          xc[c.dim] = static_cast<uint32_t>(k);
          want = x.data[linear(c.x, xc)];
        }
        if (got[0].data[i] != want) {
          ++bad;
          ADD_FAILURE() << "gather_fwd" << sfx(t) << " X " << shape_str(c.x) << " index " << shape_str(c.index) << " dim "
                        << c.dim << " elem " << i << " (index " << k << "): got " << got[0].data[i] << ", want " << want;
        }
      }
    }
}

TEST(TpcKernelGather, StridedTensors) {
  HostTensor x(DType::F32, {20, 5, 3}, {1, 25, 130}), idx(DType::I32, {20, 4, 3}, {1, 21, 90});
  fill_bits(x, 1);
  for (size_t i = 0; i < idx.count(); ++i) idx.data[i] = static_cast<uint32_t>((i * 7) % 6);   // 5 is out of range
  const auto got = run_1_and_8("gather_fwd_f32", {x, idx}, {HostTensor(DType::F32, {20, 4, 3}, {1, 22, 100})}, {1.0f});
  for (size_t i = 0; i < idx.count(); ++i) {
    auto c = coords({20, 4, 3}, i);
    c[1] = idx.data[i];
    ASSERT_EQ(got[0].data[i], idx.data[i] < 5 ? x.data[linear({20, 5, 3}, c)] : 0u) << i;
  }
}

// The cost README.md states (bundles executed, functional): 8 elements a step, about 4 bundles each
// plus the row overhead; a vector kernel (where) moves a vector in ~6, plus its prefetches (one
// per input a step, and a row's first vectors: ~14 a vector on these rows of 4 vectors).
TEST(TpcKernelGather, CostsBundlesPerElement) {
  HostTensor x(DType::F32, {256, 64}), idx(DType::I32, {256, 64}), cond(DType::U8, {256, 64});
  for (size_t i = 0; i < idx.count(); ++i) idx.data[i] = static_cast<uint32_t>(i % 64);
  std::vector<HostTensor> g = {HostTensor(DType::F32, {256, 64})}, w = {HostTensor(DType::F32, {256, 64})};
  const RunOutcome rg = run_kernel("gather_fwd_f32", {x, idx}, g, 1, {1.0f});
  const RunOutcome rw = run_kernel("where_fwd_f32", {cond, x, x}, w, 1);
  ASSERT_TRUE(rg.ok && rw.ok) << rg.error << rw.error;
  EXPECT_GE(rg.bundles, 4 * x.count()) << rg.bundles;
  EXPECT_LT(rg.bundles, 5 * x.count()) << rg.bundles;
  EXPECT_LT(rw.bundles, x.count() / 4) << rw.bundles;
}

// ---- range ----

// The documented rule, in f32 (each product rounded, then the sum) or wrapping i32.
HostTensor range_ref(DType t, const Shape& s, float start, float step, float end, float halfway) {
  HostTensor y(t, s);
  const size_t n = y.count();
  for (size_t i = 0; i < n; ++i) {
    const bool first = static_cast<double>(i) < static_cast<double>(halfway);
    if (t == DType::F32) {
      const float k = static_cast<float>(first ? i : n - 1 - i);
      const float prod = step * k;
      const float v = first ? start + prod : end - prod;
      y.data[i] = bits_of(v);
    } else {
      const uint32_t k = static_cast<uint32_t>(first ? i : n - 1 - i);
      const uint32_t prod = static_cast<uint32_t>(static_cast<int32_t>(step)) * k;
      y.data[i] = first ? static_cast<uint32_t>(static_cast<int32_t>(start)) + prod
                        : static_cast<uint32_t>(static_cast<int32_t>(end)) - prod;
    }
  }
  return y;
}

// range runs four vectors a step, each range_fwd.s's own lines (generator_scheduled.cpp): the
// kernel file's values bit for bit (linspace's two halves, f32 and i32, a row ending inside a step;
// arange's first value alone, and the second alone when halfway is 0), on 1 and 8 cores, in at most
// 60 % of its issue cycles.
TEST(TpcKernelRange, ScheduledIsTheKernelFileBitForBit) {
  KernelLibrary& lib = KernelLibrary::instance();
  for (DType t : {DType::F32, DType::I32}) {
    const std::string guid = std::string("range_fwd_") + tpc::dtype_name(t);
    SCOPED_TRACE(guid);
    const Shape shape{1000, 3};
    // linspace(-5, 7, 3000) (f32; step 12 / 2999) or from -5 by 3 (i32), the second half counted
    // back from the end; and arange (every element below halfway: the first value only).
    for (const float halfway : {1500.0f, 3000.0f, 0.0f}) {
    SCOPED_TRACE("halfway " + std::to_string(halfway));
    const KernelParams params{{},
                              {tp(t, shape)},
                              t == DType::F32 ? std::vector<float>{-5.0f, 12.0f / 2999.0f, 7.0f, halfway}
                                              : std::vector<float>{-5.0f, 3.0f, 8992.0f, halfway}};
    const InstantiateResult scheduled = lib.instantiate(guid, params);
    const InstantiateResult own = lib.instantiate_own_kernel(guid, params);
    ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
    EXPECT_NE(scheduled.inst->variant.find("scheduled"), std::string::npos) << scheduled.inst->variant;
    std::vector<HostTensor> want{HostTensor(t, shape)};
    const RunOutcome r_own = run_instantiated(own, {}, want, 1, KernelLibrary::kDefaultVectorBits);
    ASSERT_TRUE(r_own.ok) << r_own.error;
    for (unsigned cores : {1u, 8u}) {
      std::vector<HostTensor> got{HostTensor(t, shape)};
      const RunOutcome r = run_instantiated(scheduled, {}, got, cores, KernelLibrary::kDefaultVectorBits);
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_TRUE(r.gaps_ok);
      EXPECT_EQ(got[0].data, want[0].data) << cores << " cores";
      if (cores == 1) EXPECT_LT(r.issue_cycles * 10, r_own.issue_cycles * 6) << "the kernel file's " << r_own.issue_cycles;
    }
    }
  }
}

TEST(TpcKernelRange, ArangeAndLinspaceRules) {
  const std::vector<Shape> shapes = {{1}, {63}, {65}, {300}, {130, 3}, {65, 2, 2, 3, 2}, {3, 7}, {}};
  for (const Shape& s : shapes) {
    HostTensor probe(DType::F32, s);
    const float n = static_cast<float>(probe.count());
    // arange(start, step): halfway >= n.
    struct Case {
      float start, step, end, halfway;
    };
    const std::vector<Case> f32_cases = {
        {0.0f, 1.0f, 0.0f, n}, {-3.5f, 0.1f, 0.0f, 1e30f}, {10.0f, -0.3f, 0.0f, n + 5.0f},
        // linspace(-1, 1, n): step = (end - start) / (n - 1), halfway = n / 2.
        {-1.0f, n > 1 ? 2.0f / (n - 1.0f) : 0.0f, 1.0f, std::floor(n / 2.0f)},
        {0.0f, n > 1 ? 1.0f / (n - 1.0f) : 0.0f, 1.0f, std::floor(n / 2.0f)}, {3.0f, 0.7f, 100.0f, 2.5f},
        {1.0f, 2.0f, 3.0f, -4.0f}};
    for (const Case& c : f32_cases) {
      const auto got = run_1_and_8("range_fwd_f32", {}, {HostTensor(DType::F32, s)}, {c.start, c.step, c.end, c.halfway});
      const HostTensor want = range_ref(DType::F32, s, c.start, c.step, c.end, c.halfway);
      EXPECT_EQ(got[0].data, want.data) << shape_str(s) << " start " << c.start << " step " << c.step << " halfway " << c.halfway;
    }
    // linspace's last element is exactly end, its first exactly start.
    if (probe.count() > 1) {
      const auto ls = run_1_and_8("range_fwd_f32", {}, {HostTensor(DType::F32, s)},
                                  {-1.0f, 2.0f / (n - 1.0f), 1.0f, std::floor(n / 2.0f)});
      EXPECT_EQ(ls[0].at(0), -1.0f);
      EXPECT_EQ(ls[0].at(probe.count() - 1), 1.0f);
    }
    const std::vector<Case> i32_cases = {{0.0f, 1.0f, 0.0f, n}, {5.0f, -3.0f, 0.0f, n}, {-7.0f, 2.0f, 100.0f, 3.0f},
                                         {2147483520.0f, 1000.0f, 0.0f, n},                    // wraps past 2^31
                                         {-2147483648.0f, -65536.0f, 2000000000.0f, std::floor(n / 2.0f)}};
    for (const Case& c : i32_cases) {
      const auto got = run_1_and_8("range_fwd_i32", {}, {HostTensor(DType::I32, s)}, {c.start, c.step, c.end, c.halfway});
      const HostTensor want = range_ref(DType::I32, s, c.start, c.step, c.end, c.halfway);
      EXPECT_EQ(got[0].data, want.data) << shape_str(s) << " start " << c.start << " step " << c.step << " halfway " << c.halfway;
    }
  }
  // A strided output: elements in dense order, gaps not written.
  HostTensor y(DType::I32, {70, 3}, {1, 77});
  const auto got = run_1_and_8("range_fwd_i32", {}, {y}, {1.0f, 3.0f, 0.0f, 1000.0f});
  for (size_t i = 0; i < y.count(); ++i) ASSERT_EQ(as_i32(got[0].data[i]), 1 + 3 * static_cast<int32_t>(i));
}

// ---- random ----

uint32_t hash_of(uint32_t seed, uint32_t i) { return mix32(i ^ mix32(seed ^ 0x9e3779b9u)); }
// The uniform of the generator, as the kernel computes it in f32.
float uniform_value(uint32_t seed, uint32_t i, float low, float high) {
  const float u = static_cast<float>(hash_of(seed, i) >> 8) * 0x1p-24f;
  const float range = high - low;
  const float prod = u * range;
  return low + prod;
}
// Wichura's PPND7 in double, of the kernel's u (an odd multiple of 2^-24), the branch picked as the
// kernel picks it (|q| <= 0.425 in f32; q is exact).
double ppnd7(float u) {
  const double q = static_cast<double>(u) - 0.5;
  if (std::fabs(static_cast<float>(q)) <= 0.425f) {
    const double r = 0.180625 - q * q;
    return q * (((59.109374720 * r + 159.29113202) * r + 50.434271938) * r + 3.3871327179) /
           (((67.187563600 * r + 78.757757664) * r + 17.895169469) * r + 1.0);
  }
  const double s = std::sqrt(-std::log(std::min<double>(u, 1.0 - u))) - 1.6;
  const double v = (((0.17023821103 * s + 1.3067284816) * s + 2.7568153900) * s + 1.4234372777) /
                   ((0.12021132975 * s + 0.73700164250) * s + 1.0);
  return q < 0 ? -v : v;
}
double normal_ref(uint32_t seed, uint32_t i) {
  const float u = static_cast<float>((hash_of(seed, i) >> 8) | 1u) * 0x1p-24f;
  return ppnd7(u);
}
HostTensor seed_tensor(uint32_t seed) {
  HostTensor s(DType::I32, {1});
  s.data[0] = seed;
  return s;
}

const std::vector<Shape>& random_shapes() {
  static const std::vector<Shape> s = {{1}, {65}, {300, 3}, {130, 2, 2, 2}, {65, 2, 1, 2, 3}, {3, 7}, {}};
  return s;
}

TEST(TpcKernelRandom, UniformFollowsTheGeneratorBitExact) {
  uint32_t seed = 5;
  for (DType t : {DType::F32, DType::BF16})
    for (const Shape& s : random_shapes())
      for (const auto& [low, high] : std::vector<std::pair<float, float>>{{0.0f, 1.0f}, {-3.0f, 5.5f}, {2.0f, 2.0f}, {-1e-3f, 0.0f}}) {
        const auto got = run_1_and_8("random_uniform_fwd" + sfx(t), {}, {HostTensor(t, s)}, {low, high, static_cast<float>(seed)});
        size_t bad = 0;
        for (size_t i = 0; i < got[0].count() && bad < 3; ++i) {
          const float want = uniform_value(seed, static_cast<uint32_t>(i), low, high);
          if (got[0].data[i] != round_to(t, want)) {
            ++bad;
            ADD_FAILURE() << "random_uniform_fwd" << sfx(t) << " " << shape_str(s) << " [" << low << ", " << high << ") elem "
                          << i << ": got " << got[0].at(i) << ", want " << want;
          }
        }
        ++seed;
      }
}

// A seed tensor gives what the scalar seed gives; any 32-bit seed through the tensor.
// Random numbers run four f32 vectors a step, each vector random_fwd.s's own lines on registers of
// its own, list-scheduled (generator_scheduled.cpp): the kernel file's values bit for bit (uniform
// and normal, f32 and bf16, seed scalar and tensor, a row ending inside a step), on 1 and 8 cores,
// in at most 60 % of its issue cycles.
TEST(TpcKernelRandom, ScheduledIsTheKernelFileBitForBit) {
  KernelLibrary& lib = KernelLibrary::instance();
  for (const char* kind : {"uniform", "normal"}) {
    for (DType t : {DType::F32, DType::BF16}) {
      for (bool seed_input : {false, true}) {
        const std::string guid = std::string("random_") + kind + "_fwd" + sfx(t);
        SCOPED_TRACE(guid + (seed_input ? " seed tensor" : ""));
        const Shape shape{1000, 3};
        std::vector<HostTensor> inputs;
        KernelParams params{{}, {tp(t, shape)}, {-2.0f, 3.0f, 77.0f}};
        if (seed_input) {
          inputs.emplace_back(DType::I32, Shape{1});
          inputs.back().data[0] = 77;
          params.inputs.push_back(inputs.back().params());
          params.scalars = {-2.0f, 3.0f};
        }
        const InstantiateResult scheduled = lib.instantiate(guid, params);
        const InstantiateResult own = lib.instantiate_own_kernel(guid, params);
        ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
        EXPECT_NE(scheduled.inst->variant.find("scheduled"), std::string::npos) << scheduled.inst->variant;
        std::vector<HostTensor> want{HostTensor(t, shape)};
        const RunOutcome r_own = run_instantiated(own, inputs, want, 1, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(r_own.ok) << r_own.error;
        for (unsigned cores : {1u, 8u}) {
          std::vector<HostTensor> got{HostTensor(t, shape)};
          const RunOutcome r = run_instantiated(scheduled, inputs, got, cores, KernelLibrary::kDefaultVectorBits);
          ASSERT_TRUE(r.ok) << r.error;
          EXPECT_TRUE(r.gaps_ok);
          EXPECT_EQ(got[0].data, want[0].data) << cores << " cores";
          if (cores == 1) EXPECT_LT(r.issue_cycles * 10, r_own.issue_cycles * 6) << "the kernel file's " << r_own.issue_cycles;
        }
      }
    }
  }
}

TEST(TpcKernelRandom, SeedTensorSeedsAndStreams) {
  for (const char* kind : {"random_uniform_fwd", "random_normal_fwd"})
    for (DType t : {DType::F32, DType::BF16}) {
      const std::string guid = kind + sfx(t);
      const Shape s = {300, 3};
      const auto a = run_1_and_8(guid, {}, {HostTensor(t, s)}, {0.0f, 1.0f, 7.0f});
      const auto b = run_1_and_8(guid, {seed_tensor(7)}, {HostTensor(t, s)}, {0.0f, 1.0f});
      EXPECT_EQ(a[0].data, b[0].data) << guid;
      const auto c = run_1_and_8(guid, {}, {HostTensor(t, s)}, {0.0f, 1.0f, 8.0f});
      size_t same = 0;
      for (size_t i = 0; i < s[0] * s[1]; ++i) same += a[0].data[i] == c[0].data[i];
      EXPECT_LT(same, 20u) << guid << ": seeds 7 and 8 give nearly the same stream";
      // A seed beyond the scalar's range, through the tensor.
      const auto d = run_1_and_8(guid, {seed_tensor(0xdeadbeefu)}, {HostTensor(t, s)}, {0.0f, 1.0f});
      for (size_t i = 0; i < d[0].count(); ++i) {
        const double want = std::string(kind) == "random_uniform_fwd" ? uniform_value(0xdeadbeefu, static_cast<uint32_t>(i), 0.0f, 1.0f)
                                                                       : normal_ref(0xdeadbeefu, static_cast<uint32_t>(i));
        ASSERT_TRUE(within(d[0].at(i), want, Tol{t == DType::F32 ? 1e-6 : 1.0 / 256, 2e-6})) << guid << " elem " << i;
      }
    }
}

TEST(TpcKernelRandom, UniformDistribution) {
  const Shape s = {512, 256};   // 131072 elements
  const auto got = run_1_and_8("random_uniform_fwd_f32", {}, {HostTensor(DType::F32, s)}, {0.0f, 1.0f, 1234.0f});
  const double n = static_cast<double>(got[0].count());
  double sum = 0, sq = 0, below = 0;
  for (size_t i = 0; i < got[0].count(); ++i) {
    const double u = got[0].at(i);
    ASSERT_TRUE(u >= 0.0 && u < 1.0) << u;
    sum += u;
    sq += u * u;
    below += u < 0.1;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(var, 1.0 / 12, 0.002);
  EXPECT_NEAR(below / n, 0.1, 5 * std::sqrt(0.09 / n));
}

// Against the double evaluation of the kernel's formula (PPND7) of the same u: f32 within
// 2e-6 * std + 1e-6 * |y|; bf16 also within its rounding (|y| / 256).
TEST(TpcKernelRandom, NormalMatchesTheDoubleFormula) {
  uint32_t seed = 40;
  double worst = 0;
  for (DType t : {DType::F32, DType::BF16})
    for (const Shape& s : random_shapes())
      for (const auto& [mean, stdev] : std::vector<std::pair<float, float>>{{0.0f, 1.0f}, {3.0f, 0.5f}, {-2.0f, 10.0f}, {1.0f, 0.0f}}) {
        const auto got = run_1_and_8("random_normal_fwd" + sfx(t), {}, {HostTensor(t, s)}, {mean, stdev, static_cast<float>(seed)});
        size_t bad = 0;
        for (size_t i = 0; i < got[0].count() && bad < 3; ++i) {
          const double z = normal_ref(seed, static_cast<uint32_t>(i));
          const double want = mean + static_cast<double>(stdev) * z;
          const Tol tol{t == DType::F32 ? 1e-6 : 1e-6 + 1.0 / 256, 2e-6 * stdev};
          if (t == DType::F32 && stdev == 1.0f && mean == 0.0f) worst = std::max(worst, std::fabs(got[0].at(i) - want));
          if (!within(got[0].at(i), want, tol)) {
            ++bad;
            ADD_FAILURE() << "random_normal_fwd" << sfx(t) << " " << shape_str(s) << " mean " << mean << " std " << stdev
                          << " elem " << i << ": got " << got[0].at(i) << ", want " << want;
          }
        }
        ++seed;
      }
  // Over a large sample, the f32 kernel's z stays within 1e-6 of the double formula.
  const Shape big = {1024, 256};
  const auto got = run_1_and_8("random_normal_fwd_f32", {}, {HostTensor(DType::F32, big)}, {0.0f, 1.0f, 99.0f});
  for (size_t i = 0; i < got[0].count(); ++i) worst = std::max(worst, std::fabs(got[0].at(i) - normal_ref(99, static_cast<uint32_t>(i))));
  EXPECT_LT(worst, 1e-6);
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", worst);
  RecordProperty("normal_f32_max_abs_error", text);
}

TEST(TpcKernelRandom, NormalDistribution) {
  const Shape s = {512, 256};   // 131072 elements
  for (const auto& [mean, stdev] : std::vector<std::pair<float, float>>{{0.0f, 1.0f}, {2.0f, 3.0f}}) {
    const auto got = run_1_and_8("random_normal_fwd_f32", {}, {HostTensor(DType::F32, s)}, {mean, stdev, 77.0f});
    const double n = static_cast<double>(got[0].count());
    double sum = 0, sq = 0, t1 = 0, t2 = 0, t3 = 0, below = 0, zmax = 0;
    for (size_t i = 0; i < got[0].count(); ++i) {
      const double z = (got[0].at(i) - mean) / stdev;
      sum += z;
      sq += z * z;
      t1 += std::fabs(z) > 1;
      t2 += std::fabs(z) > 2;
      t3 += std::fabs(z) > 3;
      below += z < 0;
      zmax = std::max(zmax, std::fabs(z));
    }
    const double m = sum / n, sd = std::sqrt(sq / n - m * m);
    EXPECT_NEAR(m, 0.0, 5 / std::sqrt(n)) << mean << " " << stdev;
    EXPECT_NEAR(sd, 1.0, 0.01) << mean << " " << stdev;
    auto near_p = [&](double count, double p) { EXPECT_NEAR(count / n, p, 5 * std::sqrt(p * (1 - p) / n)) << p; };
    near_p(t1, 0.31731050786);
    near_p(t2, 0.04550026390);
    near_p(t3, 0.00269979606);
    near_p(below, 0.5);
    EXPECT_LT(zmax, 5.4);   // u in [2^-24, 1 - 2^-24]: |z| <= 5.33
    EXPECT_GT(zmax, 3.5);
  }
}

// ---- silu ----

double silu_ref(double x) { return x / (1 + std::exp(-x)); }
double silu_bwd_ref(double g, double x) {
  const double s = 1 / (1 + std::exp(-x));
  return g * (s * (1 + x * (1 - s)));
}
Tol act_tol(DType t) { return t == DType::F32 ? Tol{1e-5, 1e-6} : Tol{1.0 / 128, 1e-5}; }

TEST(TpcKernelSilu, ForwardAndBackwardMatchTheDoubleReference) {
  const std::vector<Shape> shapes = {{1}, {65}, {300, 3}, {130, 2, 2, 2}, {65, 2, 1, 2, 3}, {3, 7}};
  uint32_t seed = 1;
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 30.0f, -30.0f, 100.0f, -100.0f, -1.2785f};
  for (DType t : {DType::F32, DType::BF16})
    for (const Shape& s : shapes) {
      HostTensor x(t, s), g(t, s);
      fill_uniform(x, seed++, -8.0f, 8.0f);
      fill_uniform(g, seed++, -3.0f, 3.0f);
      for (size_t i = 0; i < std::size(special) && i < x.count(); ++i) x.data[(i * 11) % x.count()] = round_to(t, special[i]);
      const auto y = run_1_and_8("silu_fwd" + sfx(t), {x}, {HostTensor(t, s)});
      const auto dx = run_1_and_8("silu_bwd" + sfx(t), {g, x}, {HostTensor(t, s)});
      size_t bad = 0;
      for (size_t i = 0; i < x.count() && bad < 3; ++i) {
        const double want = silu_ref(x.at(i)), dwant = silu_bwd_ref(g.at(i), x.at(i));
        Tol dtol = act_tol(t);
        dtol.atol *= std::max(1.0, std::fabs(static_cast<double>(g.at(i))));
        if (!within(y[0].at(i), want, act_tol(t)) || !within(dx[0].at(i), dwant, dtol)) {
          ++bad;
          ADD_FAILURE() << "silu" << sfx(t) << " " << shape_str(s) << " x " << x.at(i) << " g " << g.at(i) << ": y "
                        << y[0].at(i) << " want " << want << ", dx " << dx[0].at(i) << " want " << dwant;
        }
      }
    }
}

// ---- gelu, erf form ----

double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_bwd_ref(double g, double x) {
  const double cdf = 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  return g * (cdf + x * pdf);
}

TEST(TpcKernelGeluErf, ForwardAndBackwardMatchTheDoubleReference) {
  const std::vector<Shape> shapes = {{1}, {65}, {300, 3}, {130, 2, 2, 2}, {65, 2, 1, 2, 3}, {3, 7}};
  uint32_t seed = 1;
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 30.0f, -30.0f, 0.9277f * 1.41421356f, -5.5f, 1e-30f};
  for (DType t : {DType::F32, DType::BF16})
    for (const Shape& s : shapes) {
      HostTensor x(t, s), g(t, s);
      fill_uniform(x, seed++, -8.0f, 8.0f);
      fill_uniform(g, seed++, -3.0f, 3.0f);
      for (size_t i = 0; i < std::size(special) && i < x.count(); ++i) x.data[(i * 11) % x.count()] = round_to(t, special[i]);
      const auto y = run_1_and_8("gelu_fwd" + sfx(t), {x}, {HostTensor(t, s)});
      const auto dx = run_1_and_8("gelu_bwd" + sfx(t), {g, x}, {HostTensor(t, s)});
      size_t bad = 0;
      for (size_t i = 0; i < x.count() && bad < 3; ++i) {
        // +-inf: the formula's NaNs (-inf * 0, inf * 0), as PyTorch's.
        const double want = gelu_ref(x.at(i)), dwant = gelu_bwd_ref(g.at(i), x.at(i));
        Tol dtol = act_tol(t);
        dtol.atol *= std::max(1.0, std::fabs(static_cast<double>(g.at(i))));
        if (!within(y[0].at(i), want, act_tol(t)) || !within(dx[0].at(i), dwant, dtol)) {
          ++bad;
          ADD_FAILURE() << "gelu" << sfx(t) << " " << shape_str(s) << " x " << x.at(i) << " g " << g.at(i) << ": y "
                        << y[0].at(i) << " want " << want << ", dx " << dx[0].at(i) << " want " << dwant;
        }
      }
    }
}

// A dense sweep of x in [-8, 8] (f32): the achieved errors, and the erf form against the tanh form.
// Relative to |y| the forward is worst where 1 + erf cancels (x < -2: up to ~5e-5 of |y| for
// |y| > 1e-3, under 5e-7 absolute), as in any f32 evaluation of the formula.
TEST(TpcKernelGeluErf, DenseSweepF32) {
  const uint32_t n = 1 << 17;
  HostTensor x(DType::F32, {n}), g(DType::F32, {n});
  for (uint32_t i = 0; i < n; ++i) x.data[i] = bits_of(-8.0f + 16.0f * static_cast<float>(i) / n), g.data[i] = bits_of(1.0f);
  const auto y = run_1_and_8("gelu_fwd_f32", {x}, {HostTensor(DType::F32, {n})});
  const auto dx = run_1_and_8("gelu_bwd_f32", {g, x}, {HostTensor(DType::F32, {n})});
  const auto yt = run_1_and_8("gelu_tanh_fwd_f32", {x}, {HostTensor(DType::F32, {n})});
  double fwd_abs = 0, fwd_rel = 0, bwd_abs = 0, vs_tanh = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const double xv = x.at(i), r = gelu_ref(xv), dr = gelu_bwd_ref(1.0, xv);
    fwd_abs = std::max(fwd_abs, std::fabs(y[0].at(i) - r));
    if (std::fabs(r) > 1e-3) fwd_rel = std::max(fwd_rel, std::fabs(y[0].at(i) - r) / std::fabs(r));
    bwd_abs = std::max(bwd_abs, std::fabs(dx[0].at(i) - dr));
    vs_tanh = std::max(vs_tanh, static_cast<double>(std::fabs(y[0].at(i) - yt[0].at(i))));
  }
  EXPECT_LT(fwd_abs, 1e-6);
  EXPECT_LT(fwd_rel, 1e-4);
  EXPECT_LT(bwd_abs, 1e-6);
  EXPECT_GT(vs_tanh, 1e-5);   // the two forms differ (< 1e-3, README.md)
  EXPECT_LT(vs_tanh, 1e-3);
  char text[96];
  std::snprintf(text, sizeof text, "fwd abs %.3g rel(|y|>1e-3) %.3g bwd abs %.3g vs tanh %.3g", fwd_abs, fwd_rel, bwd_abs, vs_tanh);
  RecordProperty("gelu_f32_errors", text);
}

// ops.inc's ERF_F32 alone: gelu_fwd_f32's kernel-file instantiation with the program of `Y = ERF_F32(X)` (the
// same eltwise_f32.s, OP = ERF_F32), against double erf over [-6, 6] and special values.
TEST(TpcKernelGeluErf, ErfMacroWithin1e7Absolute) {
  const uint32_t n = 1 << 17;
  HostTensor x(DType::F32, {n});
  for (uint32_t i = 0; i < n; ++i) x.data[i] = bits_of(-6.0f + 12.0f * static_cast<float>(i) / n);
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-40f, 0.9277f, -0.9277f, 3.9999f, 4.0f, 50.0f};
  for (size_t i = 0; i < std::size(special); ++i) x.data[i * 1001] = bits_of(special[i]);
  KernelParams p;
  p.inputs = {x.params()};
  p.outputs = {x.params()};
  const InstantiateResult r = KernelLibrary::instance().instantiate_own_kernel("gelu_fwd_f32", p);
  ASSERT_TRUE(r.ok()) << r.message;
  tpc::AssembleOptions options;
  options.read_file = [](const std::string& path) { return KernelLibrary::embedded_source(path.substr(path.find_last_of('/') + 1)); };
  const std::string source =
      ".equ F32_LANES 64\n.equ VECTOR_BYTES 256\n.equ LANES 128\n.macro PREFETCH_ROW\n.endm\n.macro PREFETCH_START\n.endm\n"
      ".macro PREFETCH_STEP ireg\n.endm\n.include \"io_f32x2.inc\"\n.equ OUT_T 1\n"
      ".macro OP d, a, b, c\n        ERF_F32 \\d, \\a\n.endm\n.macro LOAD_0\n        LDW V10, V20, I2, 0\n.endm\n"
      ".macro LOAD_1\n.endm\n.macro LOAD_2\n.endm\n.macro ROW_SETUP\n.endm\n"
      ".macro OPS\n        EACH4 OP, V13, V10, V11, V12, V23, V20, V21, V22\n.endm\n.include \"eltwise_f32.s\"\n";
  tpc::AssembleResult a = tpc::assemble(source, "erf.s", options);
  ASSERT_TRUE(a.ok()) << a.error_text();
  SimMemory mem;
  const uint64_t in = mem.alloc(n * 4), out = mem.alloc(n * 4);
  store_tensor(mem, in, x);
  for (const CoreSlice& sl : partition_index_space(r.inst->ispace_geometry, 8)) {
    tpc::TpcExecutor ex;
    ex.set_global_memory(&mem);
    ex.launch(r.inst->launch_context({in}, {out}, sl.offset, sl.size));
    ASSERT_EQ(ex.run(a.program.bundles, 100'000'000).status, tpc::CoreStatus::Halted) << ex.state().fault.message;
  }
  HostTensor y(DType::F32, {n});
  load_tensor(mem, out, y);
  double worst = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const double want = std::erf(static_cast<double>(x.at(i)));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y.at(i)));
      continue;
    }
    worst = std::max(worst, std::fabs(y.at(i) - want));
    if (want == 0) EXPECT_EQ(y.data[i], x.data[i]) << "erf(+-0) = +-0";   // the sign kept
  }
  EXPECT_LT(worst, 1e-7);
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", worst);
  RecordProperty("erf_f32_max_abs_error", text);
}

// ---- the other widths: the same bits as at 2048 ----

TEST(TpcKernelBatch5Width, SameBitsAt256And4096) {
  struct Run {
    std::string guid;
    std::vector<HostTensor> in;
    std::vector<HostTensor> out;
    std::vector<float> scalars;
  };
  std::vector<Run> runs;
  {
    HostTensor cond(DType::U8, {300, 3}), a(DType::BF16, {1, 3}), b(DType::BF16, {300, 3});
    for (size_t i = 0; i < cond.count(); ++i) cond.data[i] = i % 3 ? 1u : 0u;
    fill_bits(a, 1);
    fill_bits(b, 2);
    runs.push_back({"where_fwd_bf16", {cond, a, b}, {HostTensor(DType::BF16, {300, 3})}, {}});
    HostTensor c2(DType::U8, {1, 3}), a2(DType::F32, {300, 3}), b2(DType::F32, {300, 1});
    c2.data = {1, 0, 1};
    fill_bits(a2, 3);
    fill_bits(b2, 4);
    runs.push_back({"where_fwd_f32", {c2, a2, b2}, {HostTensor(DType::F32, {300, 3})}, {}});
  }
  {
    HostTensor x(DType::F32, {700, 2});
    fill_uniform(x, 5, -20.0f, 300.0f);
    runs.push_back({"cast_f32_to_u8", {x}, {HostTensor(DType::U8, {700, 2})}, {}});
    HostTensor u(DType::U8, {700, 2});
    fill_bits(u, 6);
    runs.push_back({"cast_u8_to_f32", {u}, {HostTensor(DType::F32, {700, 2})}, {}});
    runs.push_back({"cast_u8_to_i32", {u}, {HostTensor(DType::I32, {700, 2})}, {}});
    HostTensor xi(DType::I32, {700, 2});
    fill_bits(xi, 7);
    runs.push_back({"cast_i32_to_u8", {xi}, {HostTensor(DType::U8, {700, 2})}, {}});
  }
  {
    HostTensor a(DType::BF16, {1, 4}), b(DType::BF16, {200, 4});
    fill_compare_values(a, 8);
    fill_compare_values(b, 9);
    runs.push_back({"less_equal_fwd_bf16", {a, b}, {HostTensor(DType::BF16, {200, 4})}, {}});
  }
  runs.push_back({"range_fwd_f32", {}, {HostTensor(DType::F32, {300, 3})}, {-1.0f, 2.0f / 899.0f, 1.0f, 450.0f}});
  runs.push_back({"random_normal_fwd_bf16", {}, {HostTensor(DType::BF16, {300, 3})}, {1.0f, 2.0f, 3.0f}});
  runs.push_back({"random_uniform_fwd_f32", {seed_tensor(9)}, {HostTensor(DType::F32, {300, 3})}, {-1.0f, 1.0f}});
  {
    HostTensor x(DType::F32, {130, 5});
    fill_uniform(x, 10, -5.0f, 5.0f);
    runs.push_back({"reduce_min_fwd_f32", {x}, {HostTensor(DType::F32, {1, 5})}, {0.0f}});
    runs.push_back({"silu_fwd_f32", {x}, {HostTensor(DType::F32, {130, 5})}, {}});
    runs.push_back({"gelu_bwd_f32", {x, x}, {HostTensor(DType::F32, {130, 5})}, {}});
    HostTensor idx(DType::I32, {130, 2});
    for (size_t i = 0; i < idx.count(); ++i) idx.data[i] = static_cast<uint32_t>(i % 6);
    runs.push_back({"gather_fwd_f32", {x, idx}, {HostTensor(DType::F32, {130, 2})}, {1.0f}});
  }
  for (Run& r : runs) {
    std::vector<HostTensor> ref = r.out;
    const RunOutcome base = run_kernel(r.guid, r.in, ref, 8, r.scalars);
    ASSERT_TRUE(base.ok) << r.guid << ": " << base.error;
    for (unsigned bits : {256u, 4096u}) {
      std::vector<HostTensor> got = r.out;
      const RunOutcome o = run_kernel(r.guid, r.in, got, 8, r.scalars, {}, bits);
      ASSERT_TRUE(o.ok) << r.guid << " at " << bits << ": " << o.error;
      EXPECT_TRUE(o.gaps_ok) << r.guid << " at " << bits;
      EXPECT_EQ(got[0].data, ref[0].data) << r.guid << " at " << bits << " bits";
    }
  }
}

// ---- glue ----

TEST(TpcKernelGlue5, RejectsBadParams) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16, I = DType::I32, U = DType::U8;
  // comparisons
  expect_error(lib.instantiate("less_fwd_i32", {{tp(I, {8}), tp(B, {8})}, {tp(I, {8})}, {}}),
               GlueStatus::IncompatibleDataType, {"less_fwd_i32", "input 1 (B)", "i32"});
  expect_error(lib.instantiate("equal_fwd_f32", {{tp(F, {8, 2}), tp(F, {3, 2})}, {tp(F, {8, 2})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (B)", "does not broadcast"});
  expect_error(lib.instantiate("greater_fwd_bf16", {{tp(B, {8})}, {tp(B, {8})}, {}}),
               GlueStatus::IncompatibleInputCount, {"2 inputs (A, B)"});
  expect_error(lib.instantiate("not_equal_fwd_f32", {{tp(F, {8}), tp(F, {8})}, {tp(F, {8})}, {1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"takes 0 scalar"});
  // where
  expect_error(lib.instantiate("where_fwd_f32", {{tp(F, {8}), tp(F, {8}), tp(F, {8})}, {tp(F, {8})}, {}}),
               GlueStatus::IncompatibleDataType, {"where_fwd_f32", "input 0 (cond)", "u8"});
  expect_error(lib.instantiate("where_fwd_bf16", {{tp(U, {4, 2}), tp(B, {3, 2}), tp(B, {4, 2})}, {tp(B, {4, 2})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (A)", "does not broadcast"});
  expect_error(lib.instantiate("where_fwd_i32", {{tp(U, {4}), tp(I, {4})}, {tp(I, {4})}, {}}),
               GlueStatus::IncompatibleInputCount, {"3 inputs (cond, A, B)"});
  expect_error(lib.instantiate("where_fwd_i32", {{tp(U, {4}), tp(I, {4}), tp(I, {4})}, {tp(I, {4})}, {0.0f}}),
               GlueStatus::IncompatibleScalarParams, {"takes 0 scalar"});
  expect_error(lib.instantiate("where_fwd_f32", {{tp(U, {4}), tp(F, {4}), tp(F, {4})}, {tp(F, {4, 3})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "broadcast to 1"});
  expect_error(lib.instantiate("where_fwd_f32", {{tp(U, {4}), tp(F, {4}), tp(F, {4})}, {tp(B, {4})}, {}}),
               GlueStatus::IncompatibleDataType, {"output 0 (Y)"});
  // casts
  expect_error(lib.instantiate("cast_f32_to_u8", {{tp(F, {8})}, {tp(F, {8})}, {}}),
               GlueStatus::IncompatibleDataType, {"output 0 (Y)", "u8"});
  expect_error(lib.instantiate("cast_u8_to_i32", {{tp(U, {8})}, {tp(I, {9})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)"});
  expect_error(lib.instantiate("cast_u8_to_f32", {{tp(I, {8})}, {tp(F, {8})}, {}}),
               GlueStatus::IncompatibleDataType, {"input 0 (X)", "u8"});
  // reduce_min
  expect_error(lib.instantiate("reduce_min_fwd_f32", {{tp(F, {8, 2})}, {tp(F, {8, 1})}, {2.0f}}),
               GlueStatus::IncompatibleScalarParams, {"the dim to reduce (scalar 0)"});
  expect_error(lib.instantiate("reduce_min_fwd_bf16", {{tp(B, {8, 2})}, {tp(B, {8, 2})}, {1.0f}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "keepdim"});
  // gather
  expect_error(lib.instantiate("gather_fwd_f32", {{tp(F, {8, 2}), tp(I, {8, 2})}, {tp(F, {8, 2})}, {}}),
               GlueStatus::IncompatibleScalarParams, {"takes 1 scalar parameter (dim)"});
  expect_error(lib.instantiate("gather_fwd_f32", {{tp(F, {8, 2}), tp(I, {8, 2})}, {tp(F, {8, 2})}, {2.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (dim)", "0 .. 1"});
  expect_error(lib.instantiate("gather_fwd_bf16", {{tp(B, {8, 2}), tp(I, {8, 2})}, {tp(B, {8, 2})}, {0.5f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (dim)", "integer"});
  expect_error(lib.instantiate("gather_fwd_f32", {{tp(F, {8, 2}), tp(F, {8, 2})}, {tp(F, {8, 2})}, {0.0f}}),
               GlueStatus::IncompatibleDataType, {"input 1 (index)", "i32"});
  expect_error(lib.instantiate("gather_fwd_i32", {{tp(I, {8, 2}), tp(I, {8})}, {tp(I, {8})}, {0.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (index)", "X's rank"});
  expect_error(lib.instantiate("gather_fwd_f32", {{tp(F, {8, 2}), tp(I, {5, 3})}, {tp(F, {5, 3})}, {0.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (index)", "dim 1 has size 3", "more than input 0 (X)'s 2"});
  expect_error(lib.instantiate("gather_fwd_f32", {{tp(F, {8, 2}), tp(I, {12, 2})}, {tp(F, {12, 3})}, {0.0f}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "[12, 2]"});
  // range
  expect_error(lib.instantiate("range_fwd_f32", {{}, {tp(F, {8})}, {0.0f, 1.0f, 0.0f}}),
               GlueStatus::IncompatibleScalarParams, {"takes 4 scalar parameters (start, step, end, halfway), got 3"});
  expect_error(lib.instantiate("range_fwd_f32", {{tp(F, {8})}, {tp(F, {8})}, {0.0f, 1.0f, 0.0f, 8.0f}}),
               GlueStatus::IncompatibleInputCount, {"no inputs"});
  expect_error(lib.instantiate("range_fwd_f32", {{}, {tp(F, {4096, 4097})}, {0.0f, 1.0f, 0.0f, 1e9f}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "2^24"});
  expect_error(lib.instantiate("range_fwd_i32", {{}, {tp(I, {8})}, {0.5f, 1.0f, 0.0f, 8.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (start)", "integer"});
  expect_error(lib.instantiate("range_fwd_i32", {{}, {tp(I, {8})}, {0.0f, 3e9f, 0.0f, 8.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (step)", "2^31"});
  expect_error(lib.instantiate("range_fwd_f32", {{}, {tp(F, {8})}, {0.0f, NAN, 0.0f, 8.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (step)", "finite"});
  expect_error(lib.instantiate("range_fwd_i32", {{}, {tp(F, {8})}, {0.0f, 1.0f, 0.0f, 8.0f}}),
               GlueStatus::IncompatibleDataType, {"output 0 (Y)", "i32"});
  // random
  expect_error(lib.instantiate("random_uniform_fwd_f32", {{}, {tp(F, {8})}, {1.0f, 0.0f, 1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (high)", ">= low"});
  expect_error(lib.instantiate("random_uniform_fwd_f32", {{}, {tp(F, {8})}, {-3e38f, 3e38f, 1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (high)", "overflow"});
  expect_error(lib.instantiate("random_uniform_fwd_bf16", {{}, {tp(B, {8})}, {0.0f, 1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"without a seed tensor takes 3 scalar parameters (low, high, seed), got 2"});
  expect_error(lib.instantiate("random_uniform_fwd_bf16", {{tp(I, {1})}, {tp(B, {8})}, {0.0f, 1.0f, 3.0f}}),
               GlueStatus::IncompatibleScalarParams, {"with a seed tensor takes 2 scalar parameters (low, high), got 3"});
  expect_error(lib.instantiate("random_normal_fwd_f32", {{}, {tp(F, {8})}, {0.0f, 1.0f, 1.5f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 2 (seed)", "0 .. 2^24"});
  expect_error(lib.instantiate("random_normal_fwd_bf16", {{}, {tp(B, {8})}, {0.0f, -1.0f, 1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (std)", ">= 0"});
  expect_error(lib.instantiate("random_normal_fwd_f32", {{tp(F, {1})}, {tp(F, {8})}, {0.0f, 1.0f}}),
               GlueStatus::IncompatibleDataType, {"input 0 (seed)", "i32"});
  expect_error(lib.instantiate("random_normal_fwd_f32", {{tp(I, {2})}, {tp(F, {8})}, {0.0f, 1.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (seed)", "one element"});
  expect_error(lib.instantiate("random_normal_fwd_f32", {{tp(I, {1}), tp(I, {1})}, {tp(F, {8})}, {0.0f, 1.0f}}),
               GlueStatus::IncompatibleInputCount, {"0 or 1 inputs (seed)"});
  // silu
  expect_error(lib.instantiate("silu_bwd_f32", {{tp(F, {8}), tp(F, {9})}, {tp(F, {8})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 1 (x)"});
  expect_error(lib.instantiate("silu_fwd_bf16", {{tp(F, {8})}, {tp(B, {8})}, {}}),
               GlueStatus::IncompatibleDataType, {"input 0 (X)", "bf16"});
}

TEST(TpcKernelGlue5, GeometryAndPatterns) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16, I = DType::I32, U = DType::U8;
  // where: raw-bit descriptors, a dim-0 broadcast cond read once per row; cond's load is a u8 vector.
  auto r = lib.instantiate("where_fwd_bf16", {{tp(U, {1, 3}), tp(B, {300, 3}), tp(B, {300, 1})}, {tp(B, {300, 3})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{3, 3, 1, 1, 1}));
  EXPECT_NE(r.inst->variant.find("bcast-00"), std::string::npos) << r.inst->variant;
  EXPECT_EQ(r.inst->inputs[1].dtype, DType::U16);
  EXPECT_EQ(r.inst->outputs[0].dtype, DType::U16);
  EXPECT_EQ(r.inst->inputs[2].stride[1], 0);
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 0, 0, 0}));
  EXPECT_EQ(r.inst->input_patterns[2][1], (AccessPatternDim{1, 0, 0, 0}));
  // No dim-0 broadcast: one run of 900 elements, a step one u8 vector of cond and four of A, B, Y.
  r = lib.instantiate("where_fwd_f32", {{tp(U, {300, 3}), tp(F, {300, 3}), tp(F, {300, 3})}, {tp(F, {300, 3})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{4, 1, 1, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 256, 0, 255}));
  EXPECT_EQ(r.inst->input_patterns[1][0], (AccessPatternDim{0, 256, 0, 255}));
  // The kernel file: a step one vector of Y, cond's whole u8 vector read at it.
  r = lib.instantiate_own_kernel("where_fwd_f32", {{tp(U, {300, 3}), tp(F, {300, 3}), tp(F, {300, 3})}, {tp(F, {300, 3})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 64, 0, 255}));
  EXPECT_EQ(r.inst->input_patterns[1][0], (AccessPatternDim{0, 64, 0, 63}));
  // the u8 casts: a step is one u8 vector (256 lanes); dense tensors of one shape are one run.
  r = lib.instantiate("cast_f32_to_u8", {{tp(F, {300, 2})}, {tp(U, {300, 2})}, {}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{3, 1, 1, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 256, 0, 255}));
  // reduce_min: +inf padding.
  r = lib.instantiate("reduce_min_fwd_bf16", {{tp(B, {300, 2})}, {tp(B, {1, 2})}, {0.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->inputs[0].padding, 0x7F80u);
  // gather: Y's shape, dim 0 in steps of 8 elements; X whole along dim (data-dependent).
  r = lib.instantiate("gather_fwd_f32", {{tp(F, {10, 4, 3}), tp(I, {10, 7, 3})}, {tp(F, {10, 7, 3})}, {1.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{2, 7, 3, 1, 1}));
  EXPECT_EQ(r.inst->input_patterns[0][1], (AccessPatternDim{1, 0, 0, 3}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 8, 0, 7}));
  EXPECT_EQ(r.inst->inputs[0].dtype, DType::U32);
  EXPECT_EQ(r.inst->inputs[0].padding, 0u);
  // range: halfway clamped to 0 .. n; a step is four vectors (256 elements).
  r = lib.instantiate("range_fwd_i32", {{}, {tp(I, {100, 3})}, {1.0f, 2.0f, 3.0f, 1e9f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{1, 3, 1, 1, 1}));
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 256, 0, 255}));
  EXPECT_EQ(r.inst->srf[3], 300u);
  EXPECT_EQ(r.inst->srf[4], 299u);
  r = lib.instantiate("range_fwd_f32", {{}, {tp(F, {100})}, {1.0f, 2.0f, 3.0f, 10.5f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->srf[3], 11u);
  // random: high - low in f32; the seed tensor read once; a step is two bf16 vectors.
  r = lib.instantiate("random_uniform_fwd_bf16", {{tp(I, {})}, {tp(B, {300, 2})}, {-1.0f, 3.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{2, 2, 1, 1, 1}));
  EXPECT_EQ(r.inst->srf[1], bits_of(4.0f));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 0, 0, 0}));
  EXPECT_NE(r.inst->variant.find("seed tensor"), std::string::npos);
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
