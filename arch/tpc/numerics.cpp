#include "arch/tpc/numerics.h"

namespace hpusim::tpc {

uint16_t f32_to_bf16(float f, Rounding mode) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  const uint32_t truncated = u >> 16;
  const bool inexact = (u & 0xFFFFu) != 0;
  const bool negative = (u >> 31) != 0;
  switch (mode) {
    case Rounding::NearestEven: return f32_to_bf16(f);
    case Rounding::TowardZero: return static_cast<uint16_t>(truncated);
    case Rounding::Down: return static_cast<uint16_t>(truncated + (inexact && negative ? 1u : 0u));
    case Rounding::Up: return static_cast<uint16_t>(truncated + (inexact && !negative ? 1u : 0u));
  }
  return static_cast<uint16_t>(truncated);
}

float double_to_f32(double x, Rounding mode) {
  const float r = static_cast<float>(x);      // nearest even (the default floating-point environment)
  if (mode == Rounding::NearestEven || std::isnan(x)) return r;
  const double back = r;
  if (back == x) return r;
  uint32_t u = f32_bits(r);
  // Adding 1 to the bit pattern moves away from zero, subtracting 1 toward zero (also across
  // binades, from inf to the largest finite value and from the smallest subnormal to zero).
  switch (mode) {
    case Rounding::TowardZero:
      if (std::fabs(back) > std::fabs(x)) --u;
      break;
    case Rounding::Down:
      if (back > x) u = r > 0.0f ? u - 1 : u + 1;
      break;
    case Rounding::Up:
      if (back < x) u = r < 0.0f ? u - 1 : u + 1;
      break;
    case Rounding::NearestEven: break;
  }
  return f32_from_bits(u);
}

uint16_t double_to_bf16(double x, Rounding mode) {
  // Round to f32 with round-to-odd (truncate, and set the last bit when inexact): f32 keeps 16
  // more bits than bf16, so rounding that to bf16 gives the once-rounded result in every mode.
  float r = static_cast<float>(x);
  if (!std::isnan(x)) {
    const double back = r;
    if (back != x) {
      uint32_t u = f32_bits(r);
      if (std::fabs(back) > std::fabs(x)) --u;
      r = f32_from_bits(u | 1u);
    }
  }
  return f32_to_bf16(r, mode);
}

int64_t double_to_int(double x, Rounding mode, int64_t lo, int64_t hi) {
  if (std::isnan(x)) return 0;
  double r = x;
  switch (mode) {
    case Rounding::NearestEven: r = std::nearbyint(x); break;
    case Rounding::TowardZero: r = std::trunc(x); break;
    case Rounding::Down: r = std::floor(x); break;
    case Rounding::Up: r = std::ceil(x); break;
  }
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(r);
}

double special_double(Special fn, double x) {
  switch (fn) {
    case Special::Exp: return std::exp(x);
    case Special::Log: return std::log(x);
    case Special::Rsqrt: return 1.0 / std::sqrt(x);
    case Special::Rcp: return 1.0 / x;
    case Special::Sqrt: return std::sqrt(x);
    case Special::Tanh: return std::tanh(x);
    case Special::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
  }
  return std::nan("");
}

}  // namespace hpusim::tpc
