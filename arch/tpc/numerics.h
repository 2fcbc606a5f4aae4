// Number formats of the TPC: f32 <-> bf16, directed rounding, IEEE 754-2019 minimum / maximum,
// conversions through double, and the VPU special functions. Pure functions; the small ones are
// inline so the executor's lane loops can vectorise them. ISA.md is the reference for the rules.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "arch/tpc/isa.h"

namespace hpusim::tpc {

// VConvert / SConvert rounding (switches[4:3]).
enum class Rounding : uint8_t { NearestEven = 0, TowardZero = 1, Down = 2, Up = 3 };

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16 is the upper half of an f32: widening is exact.
inline float bf16_to_f32(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

// f32 -> bf16, round to nearest even; a NaN stays a (quiet) NaN with its sign.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

// f32 -> bf16 with any rounding mode (exact inputs are returned unchanged; overflow follows the
// mode: nearest and away-from-zero directions give inf, the others the largest finite bf16).
uint16_t f32_to_bf16(float f, Rounding mode);

// double -> f32 / bf16 with a rounding mode (one rounding of the exact double value).
float double_to_f32(double x, Rounding mode);
uint16_t double_to_bf16(double x, Rounding mode);

// IEEE 754-2019 minimum / maximum: a NaN operand gives a NaN, and -0 < +0.
inline float f32_min(float a, float b) {
  float r = a < b ? a : b;
  r = a == b ? f32_from_bits(f32_bits(a) | f32_bits(b)) : r;   // min(-0, +0) = -0
  return (a != a || b != b) ? a + b : r;
}
inline float f32_max(float a, float b) {
  float r = a > b ? a : b;
  r = a == b ? f32_from_bits(f32_bits(a) & f32_bits(b)) : r;   // max(-0, +0) = +0
  return (a != a || b != b) ? a + b : r;
}

// The double -> integer conversion of the ISA: round by mode, saturate to [lo, hi], NaN -> 0.
int64_t double_to_int(double x, Rounding mode, int64_t lo, int64_t hi);

// The special functions (exp, log, rsqrt, rcp, sqrt, tanh, sigmoid) in double precision, and
// rounded (nearest even) to f32 / bf16. Special cases are IEEE 754's (log(+-0) = -inf,
// log(x<0) = NaN, rsqrt(+0) = +inf, rsqrt(-0) = -inf, sqrt(-0) = -0, ...).
double special_double(Special fn, double x);
inline float special_f32(Special fn, float x) { return static_cast<float>(special_double(fn, x)); }
inline uint16_t special_bf16(Special fn, uint16_t x) {
  return double_to_bf16(special_double(fn, bf16_to_f32(x)), Rounding::NearestEven);
}

}  // namespace hpusim::tpc
