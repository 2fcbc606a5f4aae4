// Every VPU and SPU operation of the executor against an independent reference
// (tests/tpc/executor_reference.h) over many seeded random values per dtype: bit-exact for
// integer ops, f32 / bf16 add, sub, mul, mac, min, max, div, conversions and reductions; ulp
// bounds for the special functions (bf16 exhaustively).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "arch/tpc/numerics.h"
#include "tests/tpc/executor_reference.h"
#include "tests/tpc/executor_test_util.h"

namespace hpusim::tpc::testing {
namespace {

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Equal raw results: bit-exact, except that any NaN matches any NaN.
bool same_result(DType t, uint32_t got, uint32_t want) {
  if (is_nan_bits(t, want)) return is_nan_bits(t, got);
  return got == want;
}

enum class Form { Vector, Imm, Scalar };
const char* form_name(Form f) { return f == Form::Vector ? "V" : f == Form::Imm ? "imm" : "S"; }

struct OpCase {
  Op op;
  bool binary;
  bool floats;
  bool ints;
};
const OpCase kElementwise[] = {
    {Op::VAdd, true, true, true},  {Op::VSub, true, true, true},  {Op::VMul, true, true, true},
    {Op::VMac, true, true, true},  {Op::VMin, true, true, true},  {Op::VMax, true, true, true},
    {Op::VAbs, false, true, true}, {Op::VNeg, false, true, true}, {Op::VAnd, true, true, true},
    {Op::VOr, true, true, true},   {Op::VXor, true, true, true},  {Op::VNot, false, true, true},
    {Op::VShl, true, false, true}, {Op::VShr, true, false, true}, {Op::VDiv, true, true, false},
};

TEST(TpcVpu, ElementwiseOpsMatchTheReferenceForEveryDtypeAndOperandForm) {
  Core c;
  LaneRandom r(0x7C0DE);
  uint64_t lanes_checked = 0;
  for (const OpCase& oc : kElementwise) {
    for (DType t : kAllTypes) {
      if (dtype_is_float(t) ? !oc.floats : !oc.ints) continue;
      for (Form form : {Form::Vector, Form::Imm, Form::Scalar}) {
        if (!oc.binary && form != Form::Vector) continue;
        int failures = 0;
        for (int round = 0; round < 12; ++round) {
          randomize(c, 1, t, r);
          randomize(c, 2, t, r);
          randomize(c, 3, t, r);
          const uint32_t scalar = dtype_is_float(t) ? r.f32_bits() : r.int_bits(32);
          c.st().s[5] = scalar;
          Ins ins = Ins(oc.op).t(t).d(3).a(1).b(2);
          if (form == Form::Imm) ins.imm();
          if (form == Form::Scalar) ins.b(5).scalar();
          std::vector<uint32_t> old(c.lanes(t));
          for (unsigned l = 0; l < c.lanes(t); ++l) old[l] = lane_bits(c.st(), 3, t, l);
          const ExecInfo info = c.exec(bundle({ins}, scalar));
          ASSERT_FALSE(info.faulted) << c.st().fault.message;
          for (unsigned l = 0; l < c.lanes(t); ++l) {
            const uint32_t a = lane_bits(c.st(), 1, t, l);
            const uint32_t b = form == Form::Vector ? lane_bits(c.st(), 2, t, l) : ref_scalar_elem(t, scalar);
            const uint32_t want = ref_elementwise(oc.op, t, a, b, old[l]);
            const uint32_t got = lane_bits(c.st(), 3, t, l);
            ++lanes_checked;
            if (!same_result(t, got, want) && ++failures <= 3) {
              ADD_FAILURE() << "op " << static_cast<unsigned>(oc.op) << " " << dtype_name(t) << " form "
                            << form_name(form) << " lane " << l << ": a " << hex32(a) << " b " << hex32(b) << " d "
                            << hex32(old[l]) << " -> got " << hex32(got) << ", want " << hex32(want);
            }
          }
        }
      }
    }
  }
  std::printf("elementwise: %llu lanes checked\n", static_cast<unsigned long long>(lanes_checked));
}

TEST(TpcVpu, CompareWritesOneBitPerLaneAndClearsTheBitsAbove) {
  Core c;
  LaneRandom r(77);
  for (DType t : kAllTypes) {
    for (unsigned kind = 0; kind <= static_cast<unsigned>(Cmp::Ge); ++kind) {
      for (Form form : {Form::Vector, Form::Imm, Form::Scalar}) {
        randomize(c, 1, t, r);
        randomize(c, 2, t, r);
        // Some equal lanes so Eq / Le / Ge see both outcomes.
        for (unsigned l = 0; l < c.lanes(t); l += 5) set_lane_bits(c.st(), 2, t, l, lane_bits(c.st(), 1, t, l));
        const uint32_t scalar = dtype_is_float(t) ? r.f32_bits() : r.int_bits(32);
        c.st().s[7] = scalar;
        std::memset(c.st().vpred(3), 1, c.st().pred_lanes());
        Ins ins = Ins(Op::VCmp).t(t).d(3).a(1).b(2).sw(kind);
        if (form == Form::Imm) ins.imm();
        if (form == Form::Scalar) ins.b(7).scalar();
        const ExecInfo info = c.exec(bundle({ins}, scalar));
        ASSERT_FALSE(info.faulted) << c.st().fault.message;
        EXPECT_EQ(info.slot[2].write, (RegRef{RegFile::VP, 3}));
        for (unsigned l = 0; l < c.st().pred_lanes(); ++l) {
          bool want = false;
          if (l < c.lanes(t)) {
            const long double x = value_of(t, lane_bits(c.st(), 1, t, l));
            const long double y = value_of(
                t, form == Form::Vector ? lane_bits(c.st(), 2, t, l) : ref_scalar_elem(t, scalar));
            switch (static_cast<Cmp>(kind)) {
              case Cmp::Eq: want = x == y; break;
              case Cmp::Ne: want = x != y; break;
              case Cmp::Lt: want = x < y; break;
              case Cmp::Le: want = x <= y; break;
              case Cmp::Gt: want = x > y; break;
              case Cmp::Ge: want = x >= y; break;
            }
          }
          ASSERT_EQ(c.st().vpred_bit(3, l), want) << dtype_name(t) << " kind " << kind << " lane " << l;
        }
      }
    }
  }
}

TEST(TpcVpu, SelectPicksPerLaneByAVectorPredicate) {
  Core c;
  LaneRandom r(5);
  for (DType t : kAllTypes) {
    randomize(c, 1, t, r);
    randomize(c, 2, t, r);
    for (unsigned l = 0; l < c.st().pred_lanes(); ++l) c.st().set_vpred_bit(4, l, r.below(2) != 0);
    ASSERT_FALSE(c.exec(bundle({Ins(Op::VSel).t(t).d(9).a(1).b(2).c(4)})).faulted);
    for (unsigned l = 0; l < c.lanes(t); ++l)
      ASSERT_EQ(lane_bits(c.st(), 9, t, l), lane_bits(c.st(), c.st().vpred_bit(4, l) ? 1 : 2, t, l));
    // sel with a broadcast immediate as the second source; VP0 selects src0 everywhere
    ASSERT_FALSE(c.exec(bundle({Ins(Op::VSel).t(t).d(10).a(1).imm().c(4)}, 0x3F800000)).faulted);
    for (unsigned l = 0; l < c.lanes(t); ++l)
      ASSERT_EQ(lane_bits(c.st(), 10, t, l),
                c.st().vpred_bit(4, l) ? lane_bits(c.st(), 1, t, l) : ref_scalar_elem(t, 0x3F800000));
    ASSERT_FALSE(c.exec(bundle({Ins(Op::VSel).t(t).d(11).a(1).b(2).c(0)})).faulted);
    for (unsigned l = 0; l < c.lanes(t); ++l) ASSERT_EQ(lane_bits(c.st(), 11, t, l), lane_bits(c.st(), 1, t, l));
  }
}

TEST(TpcVpu, ConvertEveryDtypePairRoundingModeAndPart) {
  Core c;
  LaneRandom r(0xC0417);
  uint64_t checked = 0;
  for (DType from : kAllTypes) {
    for (DType to : kAllTypes) {
      const unsigned ns = c.lanes(from), nd = c.lanes(to);
      const unsigned parts = ns == nd ? 1 : std::max(ns, nd) / std::min(ns, nd);
      for (unsigned mode = 0; mode < 4; ++mode) {
        for (unsigned part = 0; part < parts; ++part) {
          for (int round = 0; round < 3; ++round) {
            randomize(c, 1, from, r);
            randomize(c, 2, to, r);   // the destination's previous value
            std::vector<uint32_t> before(nd);
            for (unsigned l = 0; l < nd; ++l) before[l] = lane_bits(c.st(), 2, to, l);
            const uint32_t sw = static_cast<uint32_t>(to) | (mode << 3) | (part << 5);
            const ExecInfo info = c.exec(bundle({Ins(Op::VConvert).t(from).d(2).a(1).sw(sw)}));
            ASSERT_FALSE(info.faulted) << c.st().fault.message;
            const unsigned count = std::min(ns, nd);
            const unsigned si = ns > nd ? part * nd : 0, di = nd > ns ? part * ns : 0;
            for (unsigned l = 0; l < nd; ++l) {
              const uint32_t got = lane_bits(c.st(), 2, to, l);
              if (l < di || l >= di + count) {
                ASSERT_EQ(got, before[l]) << "lane " << l << " outside the part changed";
                continue;
              }
              const uint32_t src = lane_bits(c.st(), 1, from, si + (l - di));
              const uint32_t want = ref_convert(value_of(from, src), to, mode);
              ++checked;
              ASSERT_TRUE(same_result(to, got, want))
                  << dtype_name(from) << " -> " << dtype_name(to) << " mode " << mode << " part " << part << " lane "
                  << l << ": src " << hex32(src) << " got " << hex32(got) << " want " << hex32(want);
            }
          }
        }
      }
    }
  }
  std::printf("convert: %llu lanes checked\n", static_cast<unsigned long long>(checked));
}

TEST(TpcVpu, ConvertSaturatesAndMapsNanToZero) {
  Core c;
  const float in[] = {NAN, -NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 2.5f, -2.5f, 127.5f, -128.5f, 0.5f, -0.0f};
  const int32_t rne_i32[] = {0, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 2, -2, 128, -128, 0, 0};
  const int8_t rz_i8[] = {0, 0, 127, -128, 127, -128, 2, -2, 127, -128, 0, 0};
  const uint8_t ru_u8[] = {0, 0, 255, 0, 255, 0, 3, 0, 128, 0, 1, 0};
  for (unsigned l = 0; l < 12; ++l) c.st().set_vlane<float>(1, l, in[l]);
  ASSERT_FALSE(c.exec(bundle({Ins(Op::VConvert).t(DType::F32).d(2).a(1).sw(unsigned(DType::I32))})).faulted);
  ASSERT_FALSE(c.exec(bundle({Ins(Op::VConvert).t(DType::F32).d(3).a(1).sw(unsigned(DType::I8) | (1u << 3))})).faulted);
  ASSERT_FALSE(c.exec(bundle({Ins(Op::VConvert).t(DType::F32).d(4).a(1).sw(unsigned(DType::U8) | (3u << 3))})).faulted);
  for (unsigned l = 0; l < 12; ++l) {
    EXPECT_EQ(c.st().vlane<int32_t>(2, l), rne_i32[l]) << l;
    EXPECT_EQ(c.st().vlane<int8_t>(3, l), rz_i8[l]) << l;
    EXPECT_EQ(c.st().vlane<uint8_t>(4, l), ru_u8[l]) << l;
  }
}

// Pairwise sum as ISA.md defines it, written as a recursion with one f32 rounding per add.
long double tree_sum(const std::vector<long double>& v, size_t lo, size_t n) {
  if (n == 1) return v[lo];
  return bitsf(ref_f32(tree_sum(v, lo, n / 2) + tree_sum(v, lo + n / 2, n / 2)));
}

TEST(TpcVpu, ReduceAddMaxMinPutTheResultInLaneZero) {
  Core c;
  LaneRandom r(31337);
  for (DType t : kAllTypes) {
    for (unsigned kind = 0; kind < 3; ++kind) {
      for (int round = 0; round < 20; ++round) {
        const unsigned n = c.lanes(t);
        for (unsigned l = 0; l < n; ++l) {
          uint32_t v = r.elem(t);
          // Mostly finite values, so the sums are not all NaN; some rounds keep the specials.
          if (round < 15 && dtype_is_float(t) && is_nan_bits(t, v)) v = 0;
          if (round < 10 && t == DType::F32) v = fbits(std::ldexp(float(int32_t(r.below(1 << 20)) - (1 << 19)), int(r.below(20)) - 10));
          set_lane_bits(c.st(), 1, t, l, v);
        }
        randomize(c, 2, t, r);
        ASSERT_FALSE(c.exec(bundle({Ins(Op::VReduce).t(t).d(2).a(1).sw(kind)})).faulted);
        std::vector<long double> vals(n);
        for (unsigned l = 0; l < n; ++l) vals[l] = value_of(t, lane_bits(c.st(), 1, t, l));
        uint32_t want = 0;
        if (dtype_is_float(t)) {
          long double acc = vals[0];
          if (kind == 0) {
            acc = tree_sum(vals, 0, n);
          } else {
            bool nan = false;
            for (long double v : vals) nan |= std::isnan(v);
            for (unsigned l = 1; l < n; ++l) acc = kind == 1 ? ref_max(acc, vals[l]) : ref_min(acc, vals[l]);
            if (nan) acc = NAN;
          }
          want = t == DType::F32 ? ref_f32(acc) : ref_bf16(acc);
        } else {
          int64_t acc = static_cast<int64_t>(vals[0]);
          for (unsigned l = 1; l < n; ++l) {
            const auto v = static_cast<int64_t>(vals[l]);
            acc = kind == 0 ? acc + v : kind == 1 ? std::max(acc, v) : std::min(acc, v);
          }
          want = wrap_int(t, acc);
        }
        ASSERT_TRUE(same_result(t, lane_bits(c.st(), 2, t, 0), want))
            << dtype_name(t) << " kind " << kind << " round " << round << ": got " << hex32(lane_bits(c.st(), 2, t, 0))
            << " want " << hex32(want);
        for (unsigned l = 1; l < n; ++l) ASSERT_EQ(lane_bits(c.st(), 2, t, l), 0u);
      }
    }
  }
}

TEST(TpcVpu, ReduceAddF32UsesTheDocumentedTree) {
  // 1e8 + 1 - 1e8 ... in lane order would give a different result than the pairwise tree.
  Core c;
  for (unsigned l = 0; l < 64; ++l) c.st().set_vlane<float>(1, l, 0.0f);
  c.st().set_vlane<float>(1, 0, 1.0f);
  c.st().set_vlane<float>(1, 1, 1e8f);   // (1 + 1e8) rounds to 1e8
  c.st().set_vlane<float>(1, 2, -1e8f);
  c.st().set_vlane<float>(1, 3, 1.0f);   // (-1e8 + 1) rounds to -1e8
  ASSERT_FALSE(c.exec(bundle({Ins(Op::VReduce).t(DType::F32).d(2).a(1).sw(0)})).faulted);
  EXPECT_EQ(c.st().vlane<float>(2, 0), 0.0f);   // sequential: ((1 + 1e8) - 1e8) + 1 = 1
}

TEST(TpcVpu, ShuffleGathersByIndexModuloLanes) {
  Core c;
  LaneRandom r(99);
  for (DType t : kAllTypes) {
    randomize(c, 1, t, r);
    for (unsigned l = 0; l < c.lanes(t); ++l) set_lane_bits(c.st(), 2, t, l, r.int_bits(dtype_bits(t)));
    ASSERT_FALSE(c.exec(bundle({Ins(Op::VShuffle).t(t).d(3).a(1).b(2)})).faulted);
    for (unsigned l = 0; l < c.lanes(t); ++l) {
      const unsigned idx = lane_bits(c.st(), 2, t, l) % c.lanes(t);
      ASSERT_EQ(lane_bits(c.st(), 3, t, l), lane_bits(c.st(), 1, t, idx)) << dtype_name(t) << " lane " << l;
    }
  }
}

TEST(TpcVpu, LaneIdWritesTheLaneIndexWrapped) {
  Core c;
  for (DType t : {DType::I32, DType::I16, DType::I8, DType::U32, DType::U16, DType::U8}) {
    ASSERT_FALSE(c.exec(bundle({Ins(Op::VLaneId).t(t).d(6)})).faulted);
    for (unsigned l = 0; l < c.lanes(t); ++l) ASSERT_EQ(lane_bits(c.st(), 6, t, l), l & width_mask(t));
  }
  EXPECT_EQ(c.st().vlane<int8_t>(6, 255), -1);
}

TEST(TpcVpu, MovBroadcastsAScalarOrTheImmediate) {
  Core c;
  c.st().s[4] = fbits(1.00390625f);   // not a bf16 value: rounds to even (1.0)
  ASSERT_FALSE(c.exec(bundle({Ins(Op::VMov).t(DType::BF16).d(1).a(4).scalar()})).faulted);
  ASSERT_FALSE(c.exec(bundle({Ins(Op::VMov).t(DType::I8).d(2).imm()}, 0x1234)).faulted);
  ASSERT_FALSE(c.exec(bundle({Ins(Op::VMov).t(DType::F32).d(3).a(2)})).faulted);
  for (unsigned l = 0; l < 128; ++l) ASSERT_EQ(c.st().vlane<uint16_t>(1, l), 0x3F80);
  for (unsigned l = 0; l < 256; ++l) ASSERT_EQ(c.st().vlane<uint8_t>(2, l), 0x34);
  EXPECT_EQ(std::memcmp(c.st().vreg(2), c.st().vreg(3), c.st().vector_bytes()), 0);
}

// ---- Special functions ----

long double special_ref(Special fn, long double x) {
  switch (fn) {
    case Special::Exp: return std::exp(x);
    case Special::Log: return std::log(x);
    case Special::Rsqrt: return 1.0L / std::sqrt(x);
    case Special::Rcp: return 1.0L / x;
    case Special::Sqrt: return std::sqrt(x);
    case Special::Tanh: return std::tanh(x);
    case Special::Sigmoid: return 1.0L / (1.0L + std::exp(-x));
  }
  return NAN;
}
const char* special_name(Special fn) {
  static const char* names[] = {"exp", "log", "rsqrt", "rcp", "sqrt", "tanh", "sigmoid"};
  return names[static_cast<unsigned>(fn)];
}
// ISA.md's bounds: sqrt correctly rounded; rcp, rsqrt 1 ulp; others 2 ulp (f32) / 1 ulp (bf16).
double special_bound(Special fn, DType t) {
  if (fn == Special::Sqrt) return 0.5;
  if (fn == Special::Rcp || fn == Special::Rsqrt) return 1.0;
  return t == DType::F32 ? 2.0 : 1.0;
}

// Inputs over a wide range per function (plus random bit patterns and the special values).
float special_input(Special fn, LaneRandom& r) {
  const uint32_t mode = r.below(10);
  if (mode < 3) return bitsf(r.f32_bits());
  const float u = static_cast<float>(r.u32() >> 8) / 16777216.0f;   // [0, 1)
  switch (fn) {
    case Special::Exp: return -110.0f + 200.0f * u;                    // down to subnormal results, up to overflow
    case Special::Tanh: return mode < 6 ? -10.0f + 20.0f * u : std::ldexp(u, -int(r.below(40)));
    case Special::Sigmoid: return -110.0f + 220.0f * u;
    default: return std::ldexp(1.0f + u, static_cast<int>(r.below(250)) - 125 - (mode == 9 ? 20 : 0));
  }
}

TEST(TpcVpu, SpecialFunctionsF32MeetTheUlpBounds) {
  Core c;
  LaneRandom r(0x5EC1A1);
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 1e-45f, -1e-45f, 1.17549435e-38f,
                            3.4028235e38f, -3.4028235e38f, 88.72f, 88.73f, -87.3f, -103.97f, -104.0f, 0.5f, 2.0f, 4.0f};
  for (unsigned f = 0; f <= static_cast<unsigned>(Special::Sigmoid); ++f) {
    const auto fn = static_cast<Special>(f);
    double worst = 0;
    float worst_x = 0;
    for (int round = 0; round < 1500; ++round) {
      for (unsigned l = 0; l < 64; ++l) {
        float x = special_input(fn, r);
        if (round == 0 && l < sizeof specials / sizeof specials[0]) x = specials[l];
        c.st().set_vlane<float>(1, l, x);
      }
      const ExecInfo info = c.exec(bundle({Ins(Op::VSpecial).t(DType::F32).d(2).a(1).sw(f)}));
      ASSERT_FALSE(info.faulted);
      ASSERT_EQ(info.slot[2].latency, LatencyClass::Special);
      for (unsigned l = 0; l < 64; ++l) {
        const float x = c.st().vlane<float>(1, l);
        const double err = ulp_error(DType::F32, c.st().vlane<uint32_t>(2, l), special_ref(fn, x));
        if (err > worst) {
          worst = err;
          worst_x = x;
        }
      }
    }
    std::printf("f32 %-8s max error %.4f ulp (at %.9g)\n", special_name(fn), worst, worst_x);
    ::testing::Test::RecordProperty(std::string("f32_") + special_name(fn) + "_max_ulp", std::to_string(worst));
    EXPECT_LE(worst, special_bound(fn, DType::F32)) << special_name(fn) << " at " << worst_x;
  }
}

TEST(TpcVpu, SpecialFunctionsBf16ExhaustivelyMeetTheUlpBounds) {
  Core c;
  for (unsigned f = 0; f <= static_cast<unsigned>(Special::Sigmoid); ++f) {
    const auto fn = static_cast<Special>(f);
    double worst = 0;
    uint16_t worst_x = 0;
    for (uint32_t base = 0; base < 65536; base += 128) {
      for (unsigned l = 0; l < 128; ++l) c.st().set_vlane<uint16_t>(1, l, static_cast<uint16_t>(base + l));
      ASSERT_FALSE(c.exec(bundle({Ins(Op::VSpecial).t(DType::BF16).d(2).a(1).sw(f)})).faulted);
      for (unsigned l = 0; l < 128; ++l) {
        const auto x = static_cast<uint16_t>(base + l);
        const double err = ulp_error(DType::BF16, c.st().vlane<uint16_t>(2, l), special_ref(fn, bf16_value(x)));
        if (err > worst) {
          worst = err;
          worst_x = x;
        }
      }
    }
    std::printf("bf16 %-8s max error %.4f ulp (at 0x%04x)\n", special_name(fn), worst, worst_x);
    ::testing::Test::RecordProperty(std::string("bf16_") + special_name(fn) + "_max_ulp", std::to_string(worst));
    EXPECT_LE(worst, special_bound(fn, DType::BF16)) << special_name(fn) << " at " << hex32(worst_x);
  }
}

TEST(TpcVpu, SpecialFunctionsFollowIeeeSpecialCases) {
  Core c;
  const float in[] = {0.0f, -0.0f, -1.0f, INFINITY, -INFINITY, NAN};
  for (unsigned l = 0; l < 6; ++l) c.st().set_vlane<float>(1, l, in[l]);
  auto run = [&](Special fn) {
    EXPECT_FALSE(c.exec(bundle({Ins(Op::VSpecial).t(DType::F32).d(2).a(1).sw(unsigned(fn))})).faulted);
    std::vector<float> out(6);
    for (unsigned l = 0; l < 6; ++l) out[l] = c.st().vlane<float>(2, l);
    return out;
  };
  auto log = run(Special::Log);
  EXPECT_EQ(log[0], -INFINITY);
  EXPECT_EQ(log[1], -INFINITY);
  EXPECT_TRUE(std::isnan(log[2]));
  EXPECT_EQ(log[3], INFINITY);
  EXPECT_TRUE(std::isnan(log[4]));
  auto rs = run(Special::Rsqrt);
  EXPECT_EQ(rs[0], INFINITY);
  EXPECT_EQ(rs[1], -INFINITY);
  EXPECT_TRUE(std::isnan(rs[2]));
  EXPECT_EQ(rs[3], 0.0f);
  auto sq = run(Special::Sqrt);
  EXPECT_TRUE(sq[1] == 0.0f && std::signbit(sq[1]));
  EXPECT_TRUE(std::isnan(sq[2]));
  auto ex = run(Special::Exp);
  EXPECT_EQ(ex[3], INFINITY);
  EXPECT_EQ(ex[4], 0.0f);
  EXPECT_TRUE(std::isnan(ex[5]));
  auto th = run(Special::Tanh);
  EXPECT_EQ(th[3], 1.0f);
  EXPECT_EQ(th[4], -1.0f);
  EXPECT_TRUE(std::signbit(th[1]));
  auto sg = run(Special::Sigmoid);
  EXPECT_EQ(sg[3], 1.0f);
  EXPECT_EQ(sg[4], 0.0f);
  EXPECT_EQ(sg[0], 0.5f);
  auto rc = run(Special::Rcp);
  EXPECT_EQ(rc[0], INFINITY);
  EXPECT_EQ(rc[1], -INFINITY);
  EXPECT_EQ(rc[3], 0.0f);
}

// ---- SPU ----

Op vpu_twin(Op op) {
  switch (op) {
    case Op::SAdd: return Op::VAdd;
    case Op::SSub: return Op::VSub;
    case Op::SMul: return Op::VMul;
    case Op::SMac: return Op::VMac;
    case Op::SMin: return Op::VMin;
    case Op::SMax: return Op::VMax;
    case Op::SAbs: return Op::VAbs;
    case Op::SNeg: return Op::VNeg;
    case Op::SAnd: return Op::VAnd;
    case Op::SOr: return Op::VOr;
    case Op::SXor: return Op::VXor;
    case Op::SNot: return Op::VNot;
    case Op::SShl: return Op::VShl;
    case Op::SShr: return Op::VShr;
    case Op::SDiv: return Op::VDiv;
    default: return Op::Nop;
  }
}

uint32_t ref_sdiv(DType t, uint32_t a, uint32_t b) {
  if (t == DType::F32) return ref_elementwise(Op::VDiv, t, a, b, 0);
  if (t == DType::U32) return a / b;
  const int64_t x = static_cast<int32_t>(a), y = static_cast<int32_t>(b);
  return wrap_int(t, x / y);   // int64: INT32_MIN / -1 = 2^31 wraps to INT32_MIN
}

TEST(TpcSpu, ArithmeticMatchesTheReference) {
  Core c;
  LaneRandom r(4242);
  const Op ops[] = {Op::SAdd, Op::SSub, Op::SMul, Op::SMac, Op::SMin, Op::SMax, Op::SAbs, Op::SNeg,
                    Op::SAnd, Op::SOr,  Op::SXor, Op::SNot, Op::SShl, Op::SShr, Op::SDiv};
  for (Op op : ops) {
    for (DType t : {DType::F32, DType::I32, DType::U32}) {
      if ((op == Op::SShl || op == Op::SShr) && t == DType::F32) continue;
      for (int round = 0; round < 2000; ++round) {
        const bool use_imm = round % 2 == 1;
        const uint32_t a = r.elem(t);
        uint32_t b = r.elem(t);
        if (op == Op::SDiv && t != DType::F32 && b == 0) b = 3;
        if (op == Op::SDiv && t == DType::I32 && round == 10) {
          c.st().s[1] = 0x80000000u;   // INT_MIN / -1 wraps
          b = 0xFFFFFFFFu;
        } else {
          c.st().s[1] = a;
        }
        const uint32_t av = c.st().s[1];
        c.st().s[2] = b;
        const uint32_t d = r.elem(t);
        c.st().s[3] = d;
        Ins ins = Ins(op).t(t).d(3).a(1).b(2);
        if (use_imm) ins.imm();
        const ExecInfo info = c.exec(bundle({ins}, b));
        ASSERT_FALSE(info.faulted) << c.st().fault.message;
        const uint32_t want = op == Op::SDiv ? ref_sdiv(t, av, b) : ref_elementwise(vpu_twin(op), t, av, b, d);
        ASSERT_TRUE(same_result(t, c.st().s[3], want))
            << "op " << unsigned(op) << " " << dtype_name(t) << ": a " << hex32(av) << " b " << hex32(b) << " d "
            << hex32(d) << " got " << hex32(c.st().s[3]) << " want " << hex32(want);
      }
    }
  }
}

TEST(TpcSpu, CompareSelectAndPredicateLogic) {
  Core c;
  LaneRandom r(8);
  for (DType t : {DType::F32, DType::I32, DType::U32}) {
    for (unsigned kind = 0; kind < 6; ++kind) {
      for (int round = 0; round < 300; ++round) {
        const uint32_t a = r.elem(t), b = round % 7 == 0 ? a : r.elem(t);
        c.st().s[1] = a;
        c.st().s[2] = b;
        ASSERT_FALSE(c.exec(bundle({Ins(Op::SCmp).t(t).d(5).a(1).b(2).sw(kind)})).faulted);
        const long double x = value_of(t, a), y = value_of(t, b);
        const bool want = kind == 0 ? x == y : kind == 1 ? x != y : kind == 2 ? x < y : kind == 3 ? x <= y
                                                                    : kind == 4 ? x > y : x >= y;
        ASSERT_EQ(c.st().sp[5], want) << dtype_name(t) << " " << kind << " " << hex32(a) << " " << hex32(b);
      }
    }
  }
  c.st().s[1] = 11;
  c.st().s[2] = 22;
  c.st().sp[3] = true;
  c.st().sp[4] = false;
  c.exec(bundle({Ins(Op::SSel).d(6).a(1).b(2).c(3)}));
  EXPECT_EQ(c.st().s[6], 11u);
  c.exec(bundle({Ins(Op::SSel).d(6).a(1).b(2).c(4)}));
  EXPECT_EQ(c.st().s[6], 22u);
  c.exec(bundle({Ins(Op::SSel).d(6).a(1).imm().c(4)}, 99));
  EXPECT_EQ(c.st().s[6], 99u);
  c.exec(bundle({Ins(Op::SPAnd).d(7).a(3).b(4)}));
  EXPECT_FALSE(c.st().sp[7]);
  c.exec(bundle({Ins(Op::SPOr).d(7).a(3).b(4)}));
  EXPECT_TRUE(c.st().sp[7]);
  c.exec(bundle({Ins(Op::SPNot).d(8).a(3)}));
  EXPECT_FALSE(c.st().sp[8]);
  c.exec(bundle({Ins(Op::SPMov).d(8).sw(kSwPredConst | kSwPredTrue)}));
  EXPECT_TRUE(c.st().sp[8]);
  c.exec(bundle({Ins(Op::SPMov).d(8).a(4)}));
  EXPECT_FALSE(c.st().sp[8]);
  c.exec(bundle({Ins(Op::SPNot).d(0).a(0)}));   // SP0 writes are ignored
  EXPECT_TRUE(c.st().sp[0]);
}

TEST(TpcSpu, ConvertUsesTheScalarRepresentationOfEachDtype) {
  Core c;
  LaneRandom r(0x5C);
  for (DType from : kAllTypes) {
    for (DType to : kAllTypes) {
      for (unsigned mode = 0; mode < 4; ++mode) {
        for (int round = 0; round < 40; ++round) {
          // A scalar register value: f32 bits, a bf16 in f32 form, or an extended integer.
          const uint32_t e = r.elem(from);
          uint32_t s = e;
          if (from == DType::BF16) s = e << 16;
          if (from == DType::I16) s = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(e)));
          if (from == DType::I8) s = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(e)));
          c.st().s[1] = s;
          ASSERT_FALSE(
              c.exec(bundle({Ins(Op::SConvert).t(from).d(2).a(1).sw(static_cast<unsigned>(to) | (mode << 3))})).faulted);
          const uint32_t raw = ref_convert(value_of(from, e), to, mode);
          uint32_t want = raw;
          if (to == DType::BF16) want = raw << 16;
          if (to == DType::I16) want = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(raw)));
          if (to == DType::I8) want = static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(raw)));
          const DType cmp_type = to == DType::BF16 ? DType::F32 : to;
          ASSERT_TRUE(same_result(cmp_type, c.st().s[2], want))
              << dtype_name(from) << " -> " << dtype_name(to) << " mode " << mode << ": " << hex32(s) << " got "
              << hex32(c.st().s[2]) << " want " << hex32(want);
        }
      }
    }
  }
}

TEST(TpcSpu, IndexRegisterOps) {
  Core c;
  c.ctx.ispace_offset = {1, 2, 3, 4, 5};
  c.ctx.ispace_size = {10, 20, 30, 40, 50};
  c.launch();
  c.st().s[3] = 7;
  c.exec(bundle({Ins(Op::ISpaceOffset).d(1)}));
  EXPECT_EQ(c.st().i[1], (std::array<int32_t, 5>{1, 2, 3, 4, 5}));
  c.exec(bundle({Ins(Op::ISpaceSize).d(2)}));
  EXPECT_EQ(c.st().i[2], (std::array<int32_t, 5>{10, 20, 30, 40, 50}));
  c.exec(bundle({Ins(Op::IMovDim).d(1).a(3).sw(4)}));
  c.exec(bundle({Ins(Op::IAddDim).d(1).imm().sw(0)}, static_cast<uint32_t>(-5)));
  EXPECT_EQ(c.st().i[1], (std::array<int32_t, 5>{-4, 2, 3, 4, 7}));
  c.exec(bundle({Ins(Op::IGetDim).d(9).a(1).sw(0)}));
  EXPECT_EQ(c.st().s[9], static_cast<uint32_t>(-4));
  c.exec(bundle({Ins(Op::IMov).d(3).a(1)}));
  EXPECT_EQ(c.st().i[3], c.st().i[1]);
  c.exec(bundle({Ins(Op::IMov).d(3).imm()}, 6));
  EXPECT_EQ(c.st().i[3], (std::array<int32_t, 5>{6, 6, 6, 6, 6}));
  c.exec(bundle({Ins(Op::IAddDim).d(3).imm().sw(1)}, 0x7FFFFFFF));   // wraps
  EXPECT_EQ(c.st().i[3][1], static_cast<int32_t>(0x80000005u));
}

// ---- numerics.h directly ----

TEST(TpcNumerics, Bf16RoundingModes) {
  EXPECT_EQ(f32_to_bf16(bitsf(0x3F808000)), 0x3F80);   // tie -> even
  EXPECT_EQ(f32_to_bf16(bitsf(0x3F818000)), 0x3F82);   // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(bitsf(0x3F808001)), 0x3F81);
  EXPECT_EQ(f32_to_bf16(bitsf(0x7F7FFFFF)), 0x7F80);   // overflow -> inf
  EXPECT_EQ(f32_to_bf16(bitsf(0x7F800001)) & 0x7FC0, 0x7FC0);   // sNaN stays NaN (quiet)
  EXPECT_EQ(f32_to_bf16(bitsf(0xBF80FFFF), Rounding::TowardZero), 0xBF80);
  EXPECT_EQ(f32_to_bf16(bitsf(0xBF800001), Rounding::Down), 0xBF81);
  EXPECT_EQ(f32_to_bf16(bitsf(0xBF800001), Rounding::Up), 0xBF80);
  EXPECT_EQ(f32_to_bf16(bitsf(0x7F7FFFFF), Rounding::Down), 0x7F7F);
  EXPECT_EQ(f32_to_bf16(bitsf(0x7F7FFFFF), Rounding::Up), 0x7F80);
  LaneRandom r(1);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = r.f32_bits();
    for (unsigned m = 0; m < 4; ++m) {
      const uint16_t got = f32_to_bf16(bitsf(u), static_cast<Rounding>(m));
      const uint16_t want = ref_bf16(bitsf(u), m);
      ASSERT_TRUE(same_result(DType::BF16, got, want)) << hex32(u) << " mode " << m;
    }
  }
}

TEST(TpcNumerics, DoubleToF32AndBf16RoundOnce) {
  LaneRandom r(2);
  for (int i = 0; i < 200000; ++i) {
    // Doubles with more bits than f32 keeps, across the f32 range incl. subnormals and overflow.
    const double x = std::ldexp(static_cast<double>(r.engine()() >> 11) / 9007199254740992.0 + 0.5,
                                static_cast<int>(r.below(300)) - 160) * (r.below(2) ? -1 : 1);
    for (unsigned m = 0; m < 4; ++m) {
      ASSERT_EQ(fbits(double_to_f32(x, static_cast<Rounding>(m))), ref_f32(x, m)) << x << " mode " << m;
      ASSERT_EQ(double_to_bf16(x, static_cast<Rounding>(m)), ref_bf16(x, m)) << x << " mode " << m;
    }
  }
}

TEST(TpcNumerics, MinMaxAreIeee2019MinimumMaximum) {
  EXPECT_TRUE(std::signbit(f32_min(0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(f32_min(-0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(f32_max(0.0f, -0.0f)));
  EXPECT_FALSE(std::signbit(f32_max(-0.0f, 0.0f)));
  EXPECT_TRUE(std::isnan(f32_min(NAN, 1.0f)));
  EXPECT_TRUE(std::isnan(f32_max(1.0f, NAN)));
  EXPECT_EQ(f32_min(-INFINITY, 3.0f), -INFINITY);
  EXPECT_EQ(f32_max(-INFINITY, 3.0f), 3.0f);
}

}  // namespace
}  // namespace hpusim::tpc::testing
