// The sixth batch against C++ references, on 1 and 8 simulated cores (bit-identical outputs, no
// writes outside the outputs): strided_view (Y = a strided view of a flat X) and strided_insert (S
// written through a strided view of a flat Y that is X's memory, in place) in every dtype (f32,
// bf16, i32, u8; raw bits, NaN payloads included), both variants (a vector copy when stride[0] is
// 1, one element per step otherwise), 0-D..5-D views: column slices, rows with gaps, transposed
// and broadcast (stride 0) views; the insert leaves the elements outside the view untouched; other
// vector widths; the element variant's cost; the validation errors and the geometries / patterns.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

using Shape = std::vector<uint32_t>;
using Strides = std::vector<int64_t>;

const DType kDtypes[] = {DType::F32, DType::BF16, DType::I32, DType::U8};

std::string sfx(DType t) { return std::string("_") + tpc::dtype_name(t); }
std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}
std::string strides_str(const Strides& s) {
  std::string r = "{";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "}";
}
// Raw element bits of the tensor's width (any pattern: NaNs with payloads, infinities, denormals).
void fill_bits(HostTensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  const unsigned bits = tpc::dtype_bits(t.dtype);
  for (uint32_t& v : t.data) v = bits == 32 ? static_cast<uint32_t>(rng()) : static_cast<uint32_t>(rng()) & ((1u << bits) - 1);
}
std::vector<float> as_scalars(const Strides& s) { return {s.begin(), s.end()}; }
// The flat index of the view's element c.
size_t flat_index(const std::array<uint32_t, 5>& c, const Strides& st) {
  size_t i = 0;
  for (size_t d = 0; d < st.size(); ++d) i += static_cast<size_t>(c[d]) * static_cast<size_t>(st[d]);
  return i;
}
// The smallest X the view fits: its last element + 1.
uint32_t span_of(const Shape& s, const Strides& st) {
  size_t last = 0;
  for (size_t d = 0; d < s.size(); ++d) last += static_cast<size_t>(s[d] - 1) * static_cast<size_t>(st[d]);
  return static_cast<uint32_t>(last + 1);
}

// ---- references ----

HostTensor view_ref(const HostTensor& x, const Shape& ys, const Strides& st) {
  HostTensor y(x.dtype, ys);
  for (size_t i = 0; i < y.count(); ++i) y.data[i] = x.data[flat_index(coords(ys, i), st)];
  return y;
}
std::vector<uint32_t> insert_ref(const HostTensor& x, const HostTensor& s, const Strides& st) {
  std::vector<uint32_t> y = x.data;
  for (size_t i = 0; i < s.count(); ++i) y[flat_index(coords(s.shape, i), st)] = s.data[i];
  return y;
}

// ---- cases ----

struct ViewCase {
  Shape shape;      // the view's (Y of strided_view, S of strided_insert)
  Strides strides;  // one per dim
  uint32_t extra;   // X's elements past the view's last (X.size = span + extra)
  bool element;     // the variant expected
  bool overlaps;    // two elements of the view share an element of X (not for insert)
};

// A matrix of 7 rows of 130 (row stride 130) and friends, 0-D .. 5-D.
const std::vector<ViewCase>& view_cases() {
  static const std::vector<ViewCase> c = {
      {{}, {}, 0, false, false},                             // 0-D: X[0]
      {{}, {}, 9, false, false},                             // 0-D of a longer X
      {{300}, {1}, 0, false, false},                         // the whole of X
      {{65}, {1}, 235, false, false},                        // a prefix
      {{1}, {7}, 3, false, false},                           // one element, stride ignored (vector)
      {{150}, {2}, 1, true, false},                          // every other element
      {{300}, {0}, 4, true, true},                           // one element broadcast along dim 0
      {{130, 7}, {1, 130}, 0, false, false},                 // the whole matrix
      {{100, 5}, {1, 130}, 30, false, false},                // rows with a gap (stride[1] > size[0])
      {{65, 7}, {2, 130}, 1, true, false},                   // column slice: every other column
      {{1, 7}, {3, 130}, 5, false, false},                   // one column: size 1 in dim 0 (vector)
      {{7, 130}, {130, 1}, 0, true, false},                  // transposed
      {{130, 4}, {1, 0}, 0, false, true},                    // broadcast of a row (stride 0 in dim 1)
      {{5, 3}, {0, 1}, 2, true, true},                       // broadcast along dim 0
      {{129, 3}, {1, 300}, 7, false, false},                 // around a bf16 vector
      {{257, 2}, {1, 260}, 0, false, false},                 // around a u8 vector
      {{70, 3, 4}, {1, 80, 300}, 10, false, false},          // 3-D, gaps in dims 1 and 2
      {{4, 70, 3}, {300, 1, 80}, 0, true, false},            // 3-D, dim 0 strided
      {{3, 4, 5, 2}, {5, 1, 20, 100}, 3, true, false},       // 4-D, dims interleaved
      {{66, 2, 3, 2, 2}, {1, 70, 150, 500, 1000}, 0, false, false},   // 5-D vector
      {{3, 2, 3, 2, 2}, {7, 1, 30, 100, 250}, 1, true, false},        // 5-D element
      {{2, 2, 1, 2, 3}, {1, 0, 9, 4, 0}, 2, false, true},             // 5-D with broadcasts
  };
  return c;
}

// ---- strided_view ----

TEST(TpcKernelStridedView, EveryDtypeVariantAndRank) {
  uint32_t seed = 1;
  KernelLibrary& lib = KernelLibrary::instance();
  for (DType t : kDtypes)
    for (const ViewCase& vc : view_cases()) {
      const std::string guid = "strided_view" + sfx(t);
      HostTensor x(t, {span_of(vc.shape, vc.strides) + vc.extra});
      fill_bits(x, seed++);
      const auto got = run_1_and_8(guid, {x}, {HostTensor(t, vc.shape)}, as_scalars(vc.strides));
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0].data, view_ref(x, vc.shape, vc.strides).data)
          << guid << " " << shape_str(vc.shape) << " strides " << strides_str(vc.strides);
      const auto r = lib.instantiate(guid, {{x.params()}, {tp(t, vc.shape)}, as_scalars(vc.strides)});
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_NE(r.inst->variant.find(vc.element ? "element" : "vector"), std::string::npos)
          << r.inst->variant << " " << shape_str(vc.shape) << " " << strides_str(vc.strides);
    }
}

TEST(TpcKernelStridedView, KeepsNaNPayloadsAndSpecialBits) {
  const uint32_t f32_bits[] = {0x7FA12345u, 0xFFC00001u, 0x80000000u, 0x00000001u, 0x7F800000u};
  const uint32_t bf16_bits[] = {0xFF81u, 0x7FC1u, 0x8000u, 0x0001u, 0xFF80u};
  for (DType t : kDtypes) {
    HostTensor x(t, {10});
    for (size_t i = 0; i < 10; ++i)
      x.data[i] = t == DType::BF16 ? bf16_bits[i % 5] : t == DType::U8 ? 0xF0u + i : f32_bits[i % 5];
    // Element variant (stride 2) and vector variant (stride 1), and a 0-D view.
    for (const auto& [shape, st] : std::vector<std::pair<Shape, Strides>>{{{5}, {2}}, {{10}, {1}}, {{}, {}}, {{3, 2}, {3, 1}}}) {
      const auto got = run_1_and_8("strided_view" + sfx(t), {x}, {HostTensor(t, shape)}, as_scalars(st));
      EXPECT_EQ(got[0].data, view_ref(x, shape, st).data) << tpc::dtype_name(t) << " " << shape_str(shape);
    }
  }
}

TEST(TpcKernelStridedView, StridedOutput) {
  // Y itself strided (gaps between its rows: not written, run_1_and_8 checks).
  uint32_t seed = 50;
  for (DType t : kDtypes)
    for (const auto& [shape, st] : std::vector<std::pair<Shape, Strides>>{{{65, 3}, {1, 70}}, {{65, 3}, {3, 1}}}) {
      HostTensor x(t, {span_of(shape, st)});
      fill_bits(x, seed++);
      HostTensor y(t, shape, {1, 80});
      const auto got = run_1_and_8("strided_view" + sfx(t), {x}, {y}, as_scalars(st));
      EXPECT_EQ(got[0].data, view_ref(x, shape, st).data) << tpc::dtype_name(t) << " " << strides_str(st);
    }
}

// ---- strided_insert, in place ----

struct InsertRun {
  bool ok = false;
  std::string error;
  std::vector<uint32_t> y;   // X's memory afterwards
  bool tail_ok = true;       // nothing written past X's last element
  bool s_unchanged = true;
  uint64_t bundles = 0;
};

// Runs strided_insert with Y at X's address (the runtime's in-place rule): Y's buffer holds X's
// values before the launch.
InsertRun run_insert(const std::string& guid, const HostTensor& x, const HostTensor& s, const Strides& st, unsigned cores,
                     unsigned vector_bits = KernelLibrary::kDefaultVectorBits) {
  InsertRun out;
  KernelParams p;
  p.inputs = {x.params(), s.params()};
  p.outputs = {x.params()};
  p.scalars = as_scalars(st);
  const InstantiateResult r = KernelLibrary::instance(vector_bits).instantiate(guid, p);
  if (!r.ok()) {
    out.error = std::string(glue_status_name(r.status)) + ": " + r.message;
    return out;
  }
  SimMemory mem;
  const uint64_t xb = mem.alloc(x.span() * x.elem_bytes());
  const uint64_t sb = mem.alloc(s.span() * s.elem_bytes());
  store_tensor(mem, xb, x);
  store_tensor(mem, sb, s);
  for (const CoreSlice& slice : partition_index_space(r.inst->ispace_geometry, cores)) {
    tpc::TpcCoreConfig config;
    config.vector_bits = vector_bits;
    tpc::TpcExecutor ex(config);
    ex.set_global_memory(&mem);
    ex.launch(r.inst->launch_context({xb, sb}, {xb}, slice.offset, slice.size));
    const tpc::RunResult res = ex.run(r.inst->program->bundles, 100'000'000);
    out.bundles += res.bundles;
    if (res.status != tpc::CoreStatus::Halted) {
      out.error = "core did not halt: " + ex.state().fault.message;
      return out;
    }
  }
  HostTensor y = x;
  load_tensor(mem, xb, y);
  out.y = y.data;
  out.tail_ok = gaps_untouched(mem, xb, x);
  HostTensor s_after = s;
  load_tensor(mem, sb, s_after);
  out.s_unchanged = s_after.data == s.data;
  out.ok = true;
  return out;
}

void check_insert(DType t, const Shape& shape, const Strides& st, uint32_t n, uint32_t seed, const Strides& s_strides = {}) {
  const std::string guid = "strided_insert" + sfx(t);
  HostTensor x(t, {n});
  fill_bits(x, seed);
  HostTensor s(t, shape, s_strides);
  fill_bits(s, seed + 1000);
  const std::vector<uint32_t> want = insert_ref(x, s, st);
  const InsertRun one = run_insert(guid, x, s, st, 1);
  const InsertRun eight = run_insert(guid, x, s, st, 8);
  const std::string what = guid + " " + shape_str(shape) + " strides " + strides_str(st);
  ASSERT_TRUE(one.ok) << what << ": " << one.error;
  ASSERT_TRUE(eight.ok) << what << ": " << eight.error;
  EXPECT_EQ(one.y, want) << what;   // the view's elements are S's, every other one keeps X's
  EXPECT_EQ(eight.y, one.y) << what << ": 1 vs 8 cores";
  EXPECT_TRUE(one.tail_ok && eight.tail_ok) << what << ": wrote past X";
  EXPECT_TRUE(one.s_unchanged && eight.s_unchanged) << what << ": S changed";
}

TEST(TpcKernelStridedInsert, EveryDtypeVariantAndRankInPlace) {
  uint32_t seed = 300;
  KernelLibrary& lib = KernelLibrary::instance();
  for (DType t : kDtypes)
    for (const ViewCase& vc : view_cases()) {
      if (vc.overlaps) continue;   // unspecified (README.md)
      const uint32_t n = span_of(vc.shape, vc.strides) + vc.extra;
      check_insert(t, vc.shape, vc.strides, n, seed++);
      const auto r = lib.instantiate("strided_insert" + sfx(t),
                                     {{tp(t, {n}), tp(t, vc.shape)}, {tp(t, {n})}, as_scalars(vc.strides)});
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_NE(r.inst->variant.find(vc.element ? "element" : "vector"), std::string::npos) << r.inst->variant;
    }
}

TEST(TpcKernelStridedInsert, SizeOneDimsAndStridedS) {
  uint32_t seed = 600;
  for (DType t : kDtypes) {
    // Stride 0 where the view's size is 1 (no overlap), and an S that is itself strided.
    check_insert(t, {1, 5}, {0, 3}, 20, seed++);
    check_insert(t, {4, 1, 3}, {1, 0, 10}, 30, seed++);
    check_insert(t, {65, 3}, {1, 70}, 300, seed++, {1, 80});
    check_insert(t, {65, 3}, {3, 1}, 200, seed++, {1, 70});
  }
}

TEST(TpcKernelStrided, ZeroDimX) {
  // A 0-D X is one element, as [1].
  for (DType t : kDtypes) {
    HostTensor x(t, {});
    fill_bits(x, 77);
    EXPECT_EQ(run_1_and_8("strided_view" + sfx(t), {x}, {HostTensor(t, {3})}, {0.0f})[0].data,
              std::vector<uint32_t>(3, x.data[0]));
    HostTensor s(t, {});
    fill_bits(s, 78);
    const InsertRun r = run_insert("strided_insert" + sfx(t), x, s, {}, 1);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.y, s.data);
  }
}

// ---- other vector widths ----

TEST(TpcKernelStrided, OtherVectorWidthsGiveTheSameBits) {
  uint32_t seed = 900;
  for (unsigned bits : {256u, 4096u})
    for (DType t : {DType::BF16, DType::U8})
      for (const ViewCase& vc : view_cases()) {
        if (vc.shape.size() < 2) continue;
        HostTensor x(t, {span_of(vc.shape, vc.strides) + vc.extra});
        fill_bits(x, seed++);
        std::vector<HostTensor> y = {HostTensor(t, vc.shape)};
        const RunOutcome r = run_kernel("strided_view" + sfx(t), {x}, y, 3, as_scalars(vc.strides), {}, bits);
        ASSERT_TRUE(r.ok) << r.error;
        EXPECT_TRUE(r.gaps_ok);
        EXPECT_EQ(y[0].data, view_ref(x, vc.shape, vc.strides).data) << bits << " " << shape_str(vc.shape);
        if (vc.overlaps) continue;
        HostTensor s(t, vc.shape);
        fill_bits(s, seed++);
        const InsertRun ir = run_insert("strided_insert" + sfx(t), x, s, vc.strides, 3, bits);
        ASSERT_TRUE(ir.ok) << ir.error;
        EXPECT_TRUE(ir.tail_ok);
        EXPECT_EQ(ir.y, insert_ref(x, s, vc.strides)) << bits << " " << shape_str(vc.shape);
      }
}

// The performance caveat in numbers (bundles executed, functional, one core): the vector variant
// moves a vector per step, the element variant one element per step (2 bundles each, plus the
// row overhead).
TEST(TpcKernelStrided, ElementVariantCostsBundlesPerElement) {
  HostTensor x(DType::F32, {256 * 64});
  fill_bits(x, 3);
  std::vector<HostTensor> vec = {HostTensor(DType::F32, {256, 64})}, elem = {HostTensor(DType::F32, {64, 256})};
  const RunOutcome rv = run_kernel("strided_view_f32", {x}, vec, 1, {1.0f, 256.0f});
  const RunOutcome re = run_kernel("strided_view_f32", {x}, elem, 1, {256.0f, 1.0f});
  ASSERT_TRUE(rv.ok && re.ok) << rv.error << re.error;
  EXPECT_EQ(elem[0].data, view_ref(x, {64, 256}, {256, 1}).data);
  EXPECT_LT(rv.bundles, x.count() / 8) << rv.bundles;
  EXPECT_GE(re.bundles, 2 * x.count()) << re.bundles;
  EXPECT_LT(re.bundles, 3 * x.count()) << re.bundles;
  HostTensor s(DType::F32, {64, 256});
  fill_bits(s, 4);
  const InsertRun ie = run_insert("strided_insert_f32", x, s, {256, 1}, 1);
  ASSERT_TRUE(ie.ok) << ie.error;
  EXPECT_GE(ie.bundles, 2 * x.count()) << ie.bundles;
  EXPECT_LT(ie.bundles, 3 * x.count()) << ie.bundles;
}

// ---- validation ----

TEST(TpcKernelGlueStrided, RejectsBadParams) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16, I = DType::I32, U = DType::U8;
  // The view reaching past X: 3 + 2 * 4 = 11 >= 10 (12 elements fit).
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {10})}, {tp(F, {4, 3})}, {1.0f, 4.0f}}),
               GlueStatus::IncompatibleInputSize,
               {"strided_view_f32: input 0 (X): shape [10] holds 10 elements", "output 0 (Y)'s shape [4, 3] with strides [1, 4]",
                "reaches element 11", "past X's last, 9"});
  EXPECT_TRUE(lib.instantiate("strided_view_f32", {{tp(F, {12})}, {tp(F, {4, 3})}, {1.0f, 4.0f}}).ok());
  expect_error(lib.instantiate("strided_insert_u8", {{tp(U, {10}), tp(U, {2, 3})}, {tp(U, {10})}, {5.0f, 4.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X)", "input 1 (S)'s shape [2, 3] with strides [5, 4]", "reaches element 13"});
  // Huge views: the sum (here about 5 * 2^62) saturates instead of wrapping.
  const uint32_t big = 0x7FFFFFFFu;
  const float big_stride = 2147483520.0f;   // the largest f32 below 2^31
  expect_error(lib.instantiate("strided_view_i32", {{tp(I, {10})}, {tp(I, {big, big, big, big, big})},
                                                    {big_stride, big_stride, big_stride, big_stride, big_stride}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X)", "reaches element 2^64 or more"});
  expect_error(lib.instantiate("strided_view_i32", {{tp(I, {10})}, {tp(I, {2, 2})}, {1073741824.0f, 1073741824.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X)", "reaches element 2147483648"});
  // Strides: integers 0 .. 2^31-1, finite.
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {100})}, {tp(F, {4, 3})}, {1.0f, 2.5f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 1 (stride[1]) is 2.500000", "an integer 0 .. 2^31-1"});
  expect_error(lib.instantiate("strided_insert_bf16", {{tp(B, {100}), tp(B, {4})}, {tp(B, {100})}, {-1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (stride[0])", "an integer 0 .. 2^31-1"});
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {100})}, {tp(F, {4})}, {2147483648.0f}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (stride[0])"});
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {100})}, {tp(F, {4})}, {NAN}}),
               GlueStatus::IncompatibleScalarParams, {"scalar 0 (stride[0])", "finite"});
  // One stride per dim of the view (a 0-D view takes none).
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {100})}, {tp(F, {4, 3})}, {1.0f}}),
               GlueStatus::IncompatibleScalarParams,
               {"strided_view_f32 takes one scalar parameter per dim of output 0 (Y), 2", "got 1"});
  expect_error(lib.instantiate("strided_view_bf16", {{tp(B, {100})}, {tp(B, {})}, {1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"output 0 (Y), 0", "got 1"});
  expect_error(lib.instantiate("strided_insert_i32", {{tp(I, {100}), tp(I, {2, 2, 2})}, {tp(I, {100})}, {1.0f, 2.0f}}),
               GlueStatus::IncompatibleScalarParams, {"per dim of input 1 (S), 3", "got 2"});
  // X / Y of the insert: the same size and dtype.
  expect_error(lib.instantiate("strided_insert_f32", {{tp(F, {10}), tp(F, {3})}, {tp(F, {12})}, {1.0f}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y): shape [12]", "input 0 (X)'s shape", "[10]"});
  expect_error(lib.instantiate("strided_insert_f32", {{tp(F, {10}), tp(F, {3})}, {tp(I, {10})}, {1.0f}}),
               GlueStatus::IncompatibleDataType, {"output 0 (Y): dtype i32", "f32"});
  expect_error(lib.instantiate("strided_insert_u8", {{tp(U, {10}), tp(F, {3})}, {tp(U, {10})}, {1.0f}}),
               GlueStatus::IncompatibleDataType, {"input 1 (S): dtype f32", "u8"});
  // X is flat.
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {10, 2})}, {tp(F, {3})}, {1.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X): shape [10, 2]", "1-D"});
  expect_error(lib.instantiate("strided_insert_f32", {{tp(F, {10, 2}), tp(F, {3})}, {tp(F, {10, 2})}, {1.0f}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X)", "1-D"});
  // Counts.
  expect_error(lib.instantiate("strided_insert_f32", {{tp(F, {10})}, {tp(F, {10})}, {}}),
               GlueStatus::IncompatibleInputCount, {"2 inputs (X, S)"});
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {10})}, {tp(F, {3}), tp(F, {3})}, {1.0f}}),
               GlueStatus::IncompatibleOutputCount, {"1 output (Y)"});
  // A rank-6 view is a tensor error.
  expect_error(lib.instantiate("strided_view_f32", {{tp(F, {10})}, {tp(F, {1, 1, 1, 1, 1, 1})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "at most 5"});
}

TEST(TpcKernelGlueStrided, GeometryDescriptorsAndPatterns) {
  KernelLibrary& lib = KernelLibrary::instance();
  const DType F = DType::F32, B = DType::BF16;
  // Vector view: Y's index space in vectors; X described in Y's coordinates.
  auto r = lib.instantiate("strided_view_f32", {{tp(F, {1000})}, {tp(F, {100, 5})}, {1.0f, 130.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant, "strided view vector f32");
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{2, 5, 1, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].dims, 2);
  EXPECT_EQ(r.inst->inputs[0].size, (std::array<uint32_t, 5>{100, 5, 1, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].stride[1], 130);
  EXPECT_EQ(r.inst->inputs[0].dtype, F);
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 0, 0, 999}));   // the whole of X
  EXPECT_EQ(r.inst->input_patterns[0][1], (AccessPatternDim{1, 0, 0, 0}));
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 64, 0, 63}));
  EXPECT_EQ(r.inst->output_patterns[0][1], (AccessPatternDim{1, 1, 0, 0}));
  // Element view: Y's shape in elements, raw-bit descriptors, S0 = stride[0].
  r = lib.instantiate("strided_view_bf16", {{tp(B, {910})}, {tp(B, {7, 130})}, {130.0f, 1.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant, "strided view element bf16");
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{7, 130, 1, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].size, (std::array<uint32_t, 5>{781, 130, 1, 1, 1}));
  EXPECT_EQ(r.inst->inputs[0].stride[1], 1);
  EXPECT_EQ(r.inst->inputs[0].dtype, DType::U16);
  EXPECT_EQ(r.inst->outputs[0].dtype, DType::U16);
  EXPECT_EQ(r.inst->srf[0], 130u);
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 1, 0, 0}));
  // Insert: S's index space; Y (flat) described in S's coordinates and covered whole, as X.
  r = lib.instantiate("strided_insert_u8", {{tp(DType::U8, {1000}), tp(DType::U8, {300, 3})}, {tp(DType::U8, {1000})}, {1.0f, 310.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant, "strided insert vector u8");
  EXPECT_EQ(r.inst->ispace_geometry, (std::array<int32_t, 5>{2, 3, 1, 1, 1}));
  EXPECT_EQ(r.inst->outputs[0].size, (std::array<uint32_t, 5>{300, 3, 1, 1, 1}));
  EXPECT_EQ(r.inst->outputs[0].stride[1], 310);
  EXPECT_EQ(r.inst->output_patterns[0][0], (AccessPatternDim{0, 0, 0, 999}));
  EXPECT_EQ(r.inst->input_patterns[0][0], (AccessPatternDim{0, 0, 0, 999}));
  EXPECT_EQ(r.inst->input_patterns[1][0], (AccessPatternDim{0, 256, 0, 255}));
  r = lib.instantiate("strided_insert_i32", {{tp(DType::I32, {100}), tp(DType::I32, {10, 3})}, {tp(DType::I32, {100})}, {3.0f, 31.0f}});
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.inst->variant, "strided insert element i32");
  EXPECT_EQ(r.inst->outputs[0].dtype, DType::U32);
  EXPECT_EQ(r.inst->inputs[1].dtype, DType::U32);
  EXPECT_EQ(r.inst->outputs[0].size, (std::array<uint32_t, 5>{28, 3, 1, 1, 1}));
  // One program per variant and dtype: strides are not part of it.
  const size_t before = lib.assembled_count();
  for (float s1 : {40.0f, 50.0f, 60.0f})
    ASSERT_TRUE(lib.instantiate("strided_insert_i32", {{tp(DType::I32, {200}), tp(DType::I32, {10, 3})}, {tp(DType::I32, {200})}, {5.0f, s1}}).ok());
  EXPECT_EQ(lib.assembled_count(), before);
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
