// Reference arithmetic for the TPC executor tests, written independently of hw/tpc/numerics:
// rounding by searching the representable neighbours of an exact (long double) value, integer
// results by wrapping int64 arithmetic.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "arch/tpc/isa.h"
#include "tests/tpc/executor_test_util.h"

namespace hpusim::tpc::testing {

inline long double bf16_value(uint16_t b) { return bitsf(static_cast<uint32_t>(b) << 16); }
inline bool is_nan_bits(DType t, uint32_t v) {
  if (t == DType::F32) return (v & 0x7FFFFFFFu) > 0x7F800000u;
  if (t == DType::BF16) return (v & 0x7FFFu) > 0x7F80u;
  return false;
}

// Rounds an exact value to a binary format whose non-negative encodings 0 .. inf_code are ordered
// like their values. mode: 0 nearest even, 1 toward zero, 2 down, 3 up.
template <class Value>
uint32_t ref_round(long double x, unsigned mode, uint32_t inf_code, uint32_t sign_bit, Value value) {
  if (std::isnan(x)) return inf_code | (inf_code >> 1);   // a NaN (callers compare NaN-ness)
  const bool neg = std::signbit(x);
  const long double ax = std::fabs(x);
  // Largest code with value <= ax.
  uint32_t lo = 0, hi = inf_code;
  if (value(hi) <= ax) {
    lo = hi;
  } else {
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (value(mid) <= ax) lo = mid;
      else hi = mid;
    }
  }
  const uint32_t tz = lo;
  uint32_t r = tz;
  if (value(tz) != ax) {
    const uint32_t away = tz + 1;
    switch (mode) {
      case 0: {
        const long double up = away == inf_code ? std::ldexp(1.0L, 128) : value(away);
        const long double d1 = ax - value(tz), d2 = up - ax;
        r = d1 < d2 ? tz : d1 > d2 ? away : ((tz & 1) ? away : tz);
        break;
      }
      case 1: r = tz; break;
      case 2: r = neg ? away : tz; break;
      case 3: r = neg ? tz : away; break;
    }
  }
  return r | (neg ? sign_bit : 0);
}

inline uint32_t ref_f32(long double x, unsigned mode = 0) {
  return ref_round(x, mode, 0x7F800000u, 0x80000000u,
                   [](uint32_t c) -> long double { return bitsf(c); });
}
inline uint16_t ref_bf16(long double x, unsigned mode = 0) {
  return static_cast<uint16_t>(ref_round(x, mode, 0x7F80u, 0x8000u,
                                         [](uint32_t c) -> long double { return bf16_value(static_cast<uint16_t>(c)); }));
}

inline long double ref_round_int(long double x, unsigned mode) {
  switch (mode) {
    case 1: return std::trunc(x);
    case 2: return std::floor(x);
    case 3: return std::ceil(x);
    default: {
      const long double f = std::floor(x), diff = x - f;
      if (diff > 0.5L) return f + 1;
      if (diff < 0.5L) return f;
      return std::fmod(f, 2.0L) == 0 ? f : f + 1;
    }
  }
}

inline int64_t int_min(DType t) {
  switch (t) {
    case DType::I32: return INT32_MIN;
    case DType::I16: return INT16_MIN;
    case DType::I8: return INT8_MIN;
    default: return 0;
  }
}
inline int64_t int_max(DType t) {
  switch (t) {
    case DType::I32: return INT32_MAX;
    case DType::I16: return INT16_MAX;
    case DType::I8: return INT8_MAX;
    case DType::U32: return UINT32_MAX;
    case DType::U16: return UINT16_MAX;
    case DType::U8: return UINT8_MAX;
    default: return 0;
  }
}
inline uint32_t width_mask(DType t) {
  const unsigned b = dtype_bits(t);
  return b == 32 ? 0xFFFFFFFFu : (1u << b) - 1;
}

// The value of raw element bits.
inline long double value_of(DType t, uint32_t v) {
  switch (t) {
    case DType::F32: return bitsf(v);
    case DType::BF16: return bf16_value(static_cast<uint16_t>(v));
    case DType::I32: return static_cast<int32_t>(v);
    case DType::I16: return static_cast<int16_t>(v);
    case DType::I8: return static_cast<int8_t>(v);
    case DType::U32: return v;
    case DType::U16: return static_cast<uint16_t>(v);
    case DType::U8: return static_cast<uint8_t>(v);
  }
  return 0;
}
inline int64_t int_of(DType t, uint32_t v) { return static_cast<int64_t>(value_of(t, v)); }
inline uint32_t wrap_int(DType t, int64_t v) { return static_cast<uint32_t>(v) & width_mask(t); }

// Conversion of an exact value to raw bits of dtype `to` (float -> int saturates, NaN -> 0).
inline uint32_t ref_convert(long double x, DType to, unsigned mode) {
  if (to == DType::F32) return ref_f32(x, mode);
  if (to == DType::BF16) return ref_bf16(x, mode);
  if (std::isnan(x)) return 0;
  long double r = ref_round_int(x, mode);
  r = std::max<long double>(r, int_min(to));
  r = std::min<long double>(r, int_max(to));
  return wrap_int(to, static_cast<int64_t>(r));
}

// A scalar (register or immediate) as an element: f32 bits, bf16 rounded, integers' low bits.
inline uint32_t ref_scalar_elem(DType t, uint32_t s) {
  if (t == DType::F32) return s;
  if (t == DType::BF16) return ref_bf16(bitsf(s));
  return s & width_mask(t);
}

// IEEE 754-2019 minimum / maximum on values (NaN handled by the caller).
inline long double ref_min(long double a, long double b) {
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
inline long double ref_max(long double a, long double b) {
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// The expected raw result of an elementwise op (d = old destination, for mac).
inline uint32_t ref_elementwise(Op op, DType t, uint32_t a, uint32_t b, uint32_t d) {
  if (dtype_is_float(t)) {
    const bool f32 = t == DType::F32;
    const uint32_t sign = f32 ? 0x80000000u : 0x8000u;
    switch (op) {
      case Op::VAbs: return a & ~sign;
      case Op::VNeg: return a ^ sign;
      case Op::VAnd: return a & b;
      case Op::VOr: return a | b;
      case Op::VXor: return a ^ b;
      case Op::VNot: return ~a & width_mask(f32 ? DType::U32 : DType::U16);
      default: break;
    }
    const long double x = value_of(t, a), y = value_of(t, b), z = value_of(t, d);
    long double r = 0;
    if (f32) {
      // f32 arithmetic: the exact result of one operation rounded once; mac rounds the product first.
      switch (op) {
        case Op::VAdd: return ref_f32(x + y);
        case Op::VSub: return ref_f32(x - y);
        case Op::VMul: return ref_f32(x * y);
        case Op::VDiv: {
          if (std::isnan(x) || std::isnan(y)) return 0x7FC00000;
          if (y == 0 || std::isinf(x) || std::isinf(y)) return fbits(bitsf(a) / bitsf(b));   // IEEE specials
          // x / y exactly is not representable; long double (64 bits) >= 2*24+2: rounding twice is exact.
          return ref_f32(x / y);
        }
        case Op::VMac: {
          const long double p = bitsf(ref_f32(x * y));
          return ref_f32(z + p);
        }
        case Op::VMin: r = (std::isnan(x) || std::isnan(y)) ? NAN : ref_min(x, y); return ref_f32(r);
        case Op::VMax: r = (std::isnan(x) || std::isnan(y)) ? NAN : ref_max(x, y); return ref_f32(r);
        default: return 0;
      }
    }
    // bf16: compute in f32, round to bf16; for one operation the f32 step cannot change the result
    // (24 >= 2*8+2). mac: the product and the sum are f32 roundings (ISA.md), then bf16.
    switch (op) {
      case Op::VAdd: return ref_bf16(x + y);
      case Op::VSub: return ref_bf16(x - y);
      case Op::VMul: return ref_bf16(x * y);
      case Op::VDiv:
        if (std::isnan(x) || std::isnan(y)) return 0x7FC0;
        if (y == 0 || std::isinf(x) || std::isinf(y)) return ref_bf16(bitsf(fbits(static_cast<float>(x) / static_cast<float>(y))));
        return ref_bf16(x / y);
      case Op::VMac: return ref_bf16(bitsf(ref_f32(z + static_cast<long double>(bitsf(ref_f32(x * y))))));
      case Op::VMin: r = (std::isnan(x) || std::isnan(y)) ? NAN : ref_min(x, y); return ref_bf16(r);
      case Op::VMax: r = (std::isnan(x) || std::isnan(y)) ? NAN : ref_max(x, y); return ref_bf16(r);
      default: return 0;
    }
  }
  const int64_t x = int_of(t, a), y = int_of(t, b), z = int_of(t, d);
  const unsigned w = dtype_bits(t);
  const unsigned count = static_cast<unsigned>(b & 0xFFFFFFFFu) % w;
  switch (op) {
    case Op::VAdd: return wrap_int(t, x + y);
    case Op::VSub: return wrap_int(t, x - y);
    case Op::VMul: return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)));
    case Op::VMac:
      return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(z) + static_cast<uint64_t>(x) * static_cast<uint64_t>(y)));
    case Op::VMin: return wrap_int(t, std::min(x, y));
    case Op::VMax: return wrap_int(t, std::max(x, y));
    case Op::VAbs: return wrap_int(t, x < 0 ? -x : x);
    case Op::VNeg: return wrap_int(t, -x);
    case Op::VAnd: return a & b;
    case Op::VOr: return a | b;
    case Op::VXor: return a ^ b;
    case Op::VNot: return ~a & width_mask(t);
    case Op::VShl: return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(x) << count));
    case Op::VShr: return wrap_int(t, x >> count);   // x is sign- or zero-extended: arithmetic / logical
    default: return 0;
  }
}

// ulp error of `got` (raw bits of t) against the exact value `ref`. Infinity counts as the next
// value after the largest finite one (2^128).
inline double ulp_error(DType t, uint32_t got, long double ref) {
  const bool f32 = t == DType::F32;
  const int mant = f32 ? 23 : 7;
  if (std::isnan(ref)) return is_nan_bits(t, got) ? 0.0 : INFINITY;
  if (is_nan_bits(t, got)) return INFINITY;
  long double g = value_of(t, got);
  if (std::isinf(ref)) return g == ref ? 0.0 : INFINITY;
  const long double two128 = std::ldexp(1.0L, 128);
  if (std::isinf(g)) {
    if (std::signbit(g) != std::signbit(ref)) return INFINITY;
    if (std::fabs(ref) >= two128) return 0.0;   // the exact value is beyond the format: inf is right
    g = std::copysign(two128, g);
  }
  const long double ar = std::fabs(ref);
  int e = ar == 0 ? -126 : std::ilogb(ar);
  e = std::max(e, -126);
  e = std::min(e, 127);
  const long double ulp = std::ldexp(1.0L, e - mant);
  return static_cast<double>(std::fabs(g - ref) / ulp);
}

}  // namespace hpusim::tpc::testing
