// The PEs' binary32 multiplier and adder alone (fp32_units.sv) against the host's float: known
// IEEE cases, every pair of edge values, and seeded random pairs, bit for bit.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <utility>

#include "hw/mme/rtl/rtl_fp32_units.h"
#include "tests/mme_rtl/reference_fp32.h"
#include "tests/mme_rtl/test_operands.h"

namespace hpusim::mme::rtl::test {
namespace {

using BinaryOp = std::function<uint32_t(uint32_t, uint32_t)>;

std::string hex(uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08X", v);
  return text;
}

// Counts the pairs where the RTL and the reference differ; reports the first few.
class Comparison {
 public:
  Comparison(const char* op, BinaryOp rtl, BinaryOp reference)
      : op_(op), rtl_(std::move(rtl)), reference_(std::move(reference)) {}

  void check(uint32_t x, uint32_t y) {
    ++pairs_;
    const uint32_t got = rtl_(x, y);
    const uint32_t want = reference_(x, y);
    if (got == want) return;
    if (++mismatches_ <= 5) {
      ADD_FAILURE() << op_ << "(" << hex(x) << ", " << hex(y) << "): rtl " << hex(got)
                    << ", reference " << hex(want);
    }
  }

  void expect_all_match() const {
    EXPECT_EQ(mismatches_, 0u) << op_ << ": " << mismatches_ << " of " << pairs_ << " pairs differ";
  }

 private:
  const char* op_;
  BinaryOp rtl_;
  BinaryOp reference_;
  uint64_t pairs_ = 0;
  uint64_t mismatches_ = 0;
};

constexpr int kRandomPairs = 100000;

const OperandMix kAllKinds = {
    {OperandKind::AnyBits, 2}, {OperandKind::Moderate, 2}, {OperandKind::Bf16, 1},
    {OperandKind::SparseMantissa, 2}, {OperandKind::Tiny, 1}, {OperandKind::Huge, 1},
    {OperandKind::Edge, 1},
};

TEST(MmeRtlFp32Units, KnownMultiplications) {
  Fp32Units units;
  EXPECT_EQ(units.mul(0x3FC00000u, 0x40000000u), 0x40400000u);  // 1.5 * 2 = 3
  EXPECT_EQ(units.mul(0x7F800000u, 0x00000000u), kCanonicalNan);  // inf * 0
  EXPECT_EQ(units.mul(0x80000000u, 0xFF800000u), kCanonicalNan);  // -0 * -inf
  EXPECT_EQ(units.mul(0x7F800001u, 0x3F800000u), kCanonicalNan);  // signalling NaN
  EXPECT_EQ(units.mul(0xFFC00001u, 0x3F800000u), kCanonicalNan);  // negative NaN with payload
  EXPECT_EQ(units.mul(0x7F7FFFFFu, 0x40000000u), 0x7F800000u);   // max * 2 overflows
  EXPECT_EQ(units.mul(0xFF7FFFFFu, 0x40000000u), 0xFF800000u);
  EXPECT_EQ(units.mul(0x80000000u, 0x40A00000u), 0x80000000u);   // -0 * 5 = -0
  EXPECT_EQ(units.mul(0x00800000u, 0x3F000000u), 0x00400000u);   // min normal / 2: exact subnormal
  EXPECT_EQ(units.mul(0x00000001u, 0x3F000000u), 0x00000000u);   // half the min subnormal: tie to 0
  EXPECT_EQ(units.mul(0x00000003u, 0x3F000000u), 0x00000002u);   // 1.5 min subnormals: tie to 2
  EXPECT_EQ(units.mul(0x3F800800u, 0x3F800800u), 0x3F801000u);   // (1 + 2^-12)^2: tie to even
  EXPECT_EQ(units.mul(0x1F800000u, 0x1F800000u), 0x00200000u);   // 2^-64 squared: subnormal
}

TEST(MmeRtlFp32Units, BitsShiftedOutOfSubnormalProductsStillRound) {
  // Products whose guard bit is followed by 26 zero bits and then a one that the shift into the
  // subnormal range moves out of the word: it alone makes these round up instead of to even.
  Fp32Units units;
  EXPECT_EQ(units.mul(0x1E80006Bu, 0x1F28AC43u), 0x00054567u);
  EXPECT_EQ(units.mul(0x1E8000A3u, 0x1F1AB30Bu), 0x0004D59Fu);
  EXPECT_EQ(units.mul(0x1E8001B1u, 0x1F75A751u), 0x0007AD55u);
}

TEST(MmeRtlFp32Units, KnownAdditions) {
  Fp32Units units;
  EXPECT_EQ(units.add(0x00000000u, 0x80000000u), 0x00000000u);  // (+0) + (-0) = +0
  EXPECT_EQ(units.add(0x80000000u, 0x00000000u), 0x00000000u);
  EXPECT_EQ(units.add(0x80000000u, 0x80000000u), 0x80000000u);  // (-0) + (-0) = -0
  EXPECT_EQ(units.add(0xBF800000u, 0x3F800000u), 0x00000000u);  // -1 + 1 = +0
  EXPECT_EQ(units.add(0x3F800000u, 0x33800000u), 0x3F800000u);  // 1 + 2^-24: tie to even (down)
  EXPECT_EQ(units.add(0x3F800001u, 0x33800000u), 0x3F800002u);  // tie to even (up)
  EXPECT_EQ(units.add(0x3F800000u, 0x33800001u), 0x3F800001u);  // just above the tie
  EXPECT_EQ(units.add(0x7F800000u, 0xFF800000u), kCanonicalNan);  // inf - inf
  EXPECT_EQ(units.add(0xFF800000u, 0x7F7FFFFFu), 0xFF800000u);
  EXPECT_EQ(units.add(0x7F7FFFFFu, 0x7F7FFFFFu), 0x7F800000u);  // overflow
  EXPECT_EQ(units.add(0x7F7FFFFFu, 0x73000000u), 0x7F800000u);  // max + half an ulp: tie, odd
  EXPECT_EQ(units.add(0x00000001u, 0x00000001u), 0x00000002u);  // subnormals add exactly
  EXPECT_EQ(units.add(0x007FFFFFu, 0x00000001u), 0x00800000u);  // ...into the min normal
  EXPECT_EQ(units.add(0x00800000u, 0x80000001u), 0x007FFFFFu);  // ...and back
  EXPECT_EQ(units.add(0x7FC00000u, 0x3F800000u), kCanonicalNan);
}

TEST(MmeRtlFp32Units, MultiplierMatchesHostOnEveryEdgePair) {
  Fp32Units units;
  Comparison mul("mul", [&](uint32_t x, uint32_t y) { return units.mul(x, y); }, reference_mul);
  for (uint32_t x : edge_values()) {
    for (uint32_t y : edge_values()) mul.check(x, y);
  }
  mul.expect_all_match();
}

TEST(MmeRtlFp32Units, AdderMatchesHostOnEveryEdgePair) {
  Fp32Units units;
  Comparison add("add", [&](uint32_t x, uint32_t y) { return units.add(x, y); }, reference_add);
  for (uint32_t x : edge_values()) {
    for (uint32_t y : edge_values()) add.check(x, y);
  }
  add.expect_all_match();
}

TEST(MmeRtlFp32Units, MultiplierMatchesHostOnRandomPairs) {
  Fp32Units units;
  Comparison mul("mul", [&](uint32_t x, uint32_t y) { return units.mul(x, y); }, reference_mul);
  std::mt19937 rng(20240611);
  const auto xs = random_operands(rng, kRandomPairs, kAllKinds);
  const auto ys = random_operands(rng, kRandomPairs, kAllKinds);
  for (int i = 0; i < kRandomPairs; ++i) mul.check(xs[i], ys[i]);
  mul.expect_all_match();
}

TEST(MmeRtlFp32Units, AdderMatchesHostOnRandomPairs) {
  Fp32Units units;
  Comparison add("add", [&](uint32_t x, uint32_t y) { return units.add(x, y); }, reference_add);
  std::mt19937 rng(20240612);
  const auto xs = random_operands(rng, kRandomPairs, kAllKinds);
  const auto ys = random_operands(rng, kRandomPairs, kAllKinds);
  for (int i = 0; i < kRandomPairs; ++i) {
    add.check(xs[i], ys[i]);
    add.check(xs[i], random_near_operand(rng, xs[i]));  // cancellation and alignment limits
  }
  add.expect_all_match();
}

}  // namespace
}  // namespace hpusim::mme::rtl::test
