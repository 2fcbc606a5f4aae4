#include "hw/tpc/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "arch/hex.h"
#include "arch/tpc/numerics.h"

namespace hpusim::tpc {
namespace {

// ---- Lane access (memcpy: no aliasing questions, compiles to plain loads and stores) ----

template <class T> inline T get(const uint8_t* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <class T> inline void put(uint8_t* p, size_t i, T v) { std::memcpy(p + i * sizeof(T), &v, sizeof(T)); }

// Element kinds: how a lane is loaded into its compute type and stored back.
struct KF32 {
  using C = float;
  static constexpr unsigned kBytes = 4;
  static C in(const uint8_t* p, size_t i) { return get<float>(p, i); }
  static void out(uint8_t* p, size_t i, C v) { put<float>(p, i, v); }
};
struct KBF16 {   // computes in f32, rounds to nearest even on the way out
  using C = float;
  static constexpr unsigned kBytes = 2;
  static C in(const uint8_t* p, size_t i) { return bf16_to_f32(get<uint16_t>(p, i)); }
  static void out(uint8_t* p, size_t i, C v) { put<uint16_t>(p, i, f32_to_bf16(v)); }
};
template <class T> struct KInt {
  using C = T;
  static constexpr unsigned kBytes = sizeof(T);
  static C in(const uint8_t* p, size_t i) { return get<T>(p, i); }
  static void out(uint8_t* p, size_t i, C v) { put<T>(p, i, v); }
};

template <class F> void dispatch_int(DType t, F&& f) {
  switch (t) {
    case DType::I32: f(KInt<int32_t>{}); break;
    case DType::I16: f(KInt<int16_t>{}); break;
    case DType::I8: f(KInt<int8_t>{}); break;
    case DType::U32: f(KInt<uint32_t>{}); break;
    case DType::U16: f(KInt<uint16_t>{}); break;
    case DType::U8: f(KInt<uint8_t>{}); break;
    default: break;
  }
}
template <class F> void dispatch_all(DType t, F&& f) {
  if (t == DType::F32) f(KF32{});
  else if (t == DType::BF16) f(KBF16{});
  else dispatch_int(t, f);
}
// Raw bits of the lane width (bitwise ops, moves, shuffles).
template <class F> void dispatch_width(DType t, F&& f) {
  switch (elem_bits(t)) {
    case 32: f(KInt<uint32_t>{}); break;
    case 16: f(KInt<uint16_t>{}); break;
    default: f(KInt<uint8_t>{}); break;
  }
}

// ---- Lane loops. `o` never aliases the sources (it is a staging buffer). ----

template <class K, class F>
void map1(uint8_t* __restrict o, const uint8_t* __restrict a, unsigned n, F f) {
  for (unsigned i = 0; i < n; ++i) K::out(o, i, f(K::in(a, i)));
}
template <class K, class F>
void map2(uint8_t* __restrict o, const uint8_t* __restrict a, const uint8_t* __restrict b, unsigned n, F f) {
  for (unsigned i = 0; i < n; ++i) K::out(o, i, f(K::in(a, i), K::in(b, i)));
}
template <class K, class F>
void map3(uint8_t* __restrict o, const uint8_t* __restrict d, const uint8_t* __restrict a,
          const uint8_t* __restrict b, unsigned n, F f) {
  for (unsigned i = 0; i < n; ++i) K::out(o, i, f(K::in(d, i), K::in(a, i), K::in(b, i)));
}

template <class T> inline T wrap(uint32_t v) { return static_cast<T>(v); }
template <class T> inline uint32_t u32(T v) { return static_cast<uint32_t>(v); }

struct FAdd {
  float operator()(float a, float b) const { return a + b; }
  template <class T> T operator()(T a, T b) const { return wrap<T>(u32(a) + u32(b)); }
};
struct FSub {
  float operator()(float a, float b) const { return a - b; }
  template <class T> T operator()(T a, T b) const { return wrap<T>(u32(a) - u32(b)); }
};
struct FMul {
  float operator()(float a, float b) const { return a * b; }
  template <class T> T operator()(T a, T b) const { return wrap<T>(u32(a) * u32(b)); }
};
struct FMac {   // d + a * b, product rounded first
  float operator()(float d, float a, float b) const {
    const float p = a * b;
    return d + p;
  }
  template <class T> T operator()(T d, T a, T b) const { return wrap<T>(u32(d) + u32(a) * u32(b)); }
};
struct FMin {
  float operator()(float a, float b) const { return f32_min(a, b); }
  template <class T> T operator()(T a, T b) const { return a < b ? a : b; }
};
struct FMax {
  float operator()(float a, float b) const { return f32_max(a, b); }
  template <class T> T operator()(T a, T b) const { return a > b ? a : b; }
};
struct FAbs {   // integers only (floats clear the sign bit)
  template <class T> T operator()(T a) const {
    if constexpr (std::is_signed_v<T>) return a < 0 ? wrap<T>(0u - u32(a)) : a;
    else return a;
  }
};
struct FNeg {
  template <class T> T operator()(T a) const { return wrap<T>(0u - u32(a)); }
};
struct FAnd {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct FOr {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct FXor {
  template <class T> T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};
struct FNot {
  template <class T> T operator()(T a) const { return static_cast<T>(~a); }
};
struct FShl {
  template <class T> T operator()(T a, T b) const { return wrap<T>(u32(a) << (u32(b) & (sizeof(T) * 8 - 1))); }
};
struct FShr {   // arithmetic for signed types, logical for unsigned ones
  template <class T> T operator()(T a, T b) const {
    return static_cast<T>(a >> (u32(b) & (sizeof(T) * 8 - 1)));
  }
};

template <class K> void cmp_loop(uint8_t* __restrict o, const uint8_t* __restrict a, const uint8_t* __restrict b,
                                 unsigned n, Cmp c) {
  switch (c) {
    case Cmp::Eq: for (unsigned i = 0; i < n; ++i) o[i] = K::in(a, i) == K::in(b, i); break;
    case Cmp::Ne: for (unsigned i = 0; i < n; ++i) o[i] = K::in(a, i) != K::in(b, i); break;
    case Cmp::Lt: for (unsigned i = 0; i < n; ++i) o[i] = K::in(a, i) < K::in(b, i); break;
    case Cmp::Le: for (unsigned i = 0; i < n; ++i) o[i] = K::in(a, i) <= K::in(b, i); break;
    case Cmp::Gt: for (unsigned i = 0; i < n; ++i) o[i] = K::in(a, i) > K::in(b, i); break;
    case Cmp::Ge: for (unsigned i = 0; i < n; ++i) o[i] = K::in(a, i) >= K::in(b, i); break;
  }
}

// The float add / sub / mul / mac kernels dominate compute-bound kernels: they get an AVX2 clone
// next to the baseline (SSE2) one, picked once at load time. Same IEEE results either way (no FMA).
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define TPC_HOT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TPC_HOT_CLONES
#endif

enum class FloatOp : uint8_t { Add, Sub, Mul, Mac };

template <class K>
inline void float_kernel(FloatOp op, uint8_t* __restrict o, const uint8_t* __restrict d, const uint8_t* __restrict a,
                         const uint8_t* __restrict b, unsigned n) {
  switch (op) {
    case FloatOp::Add: map2<K>(o, a, b, n, FAdd{}); break;
    case FloatOp::Sub: map2<K>(o, a, b, n, FSub{}); break;
    case FloatOp::Mul: map2<K>(o, a, b, n, FMul{}); break;
    case FloatOp::Mac: map3<K>(o, d, a, b, n, FMac{}); break;
  }
}
TPC_HOT_CLONES void f32_kernel(FloatOp op, uint8_t* __restrict o, const uint8_t* __restrict d,
                               const uint8_t* __restrict a, const uint8_t* __restrict b, unsigned n) {
  float_kernel<KF32>(op, o, d, a, b, n);
}
TPC_HOT_CLONES void bf16_kernel(FloatOp op, uint8_t* __restrict o, const uint8_t* __restrict d,
                                const uint8_t* __restrict a, const uint8_t* __restrict b, unsigned n) {
  float_kernel<KBF16>(op, o, d, a, b, n);
}

template <class T> bool compare(T a, T b, Cmp c) {
  switch (c) {
    case Cmp::Eq: return a == b;
    case Cmp::Ne: return a != b;
    case Cmp::Lt: return a < b;
    case Cmp::Le: return a <= b;
    case Cmp::Gt: return a > b;
    case Cmp::Ge: return a >= b;
  }
  return false;
}

// ---- Conversions ----

// A source lane as an exact double.
template <class K> inline double to_double(const uint8_t* p, size_t i) { return static_cast<double>(K::in(p, i)); }

template <class KD> inline void from_double(uint8_t* o, size_t i, double x, Rounding mode) {
  if constexpr (std::is_same_v<KD, KF32>) {
    put<float>(o, i, double_to_f32(x, mode));
  } else if constexpr (std::is_same_v<KD, KBF16>) {
    put<uint16_t>(o, i, double_to_bf16(x, mode));
  } else {
    using T = typename KD::C;
    put<T>(o, i, static_cast<T>(double_to_int(x, mode, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
  }
}

// Converts `count` lanes: source lanes from `si`, destination lanes from `di`.
template <class KS, class KD>
void convert_loop(uint8_t* __restrict o, const uint8_t* __restrict a, unsigned si, unsigned di, unsigned count,
                  Rounding mode) {
  if constexpr (std::is_same_v<KS, KD>) {
    std::memcpy(o + static_cast<size_t>(di) * KD::kBytes, a + static_cast<size_t>(si) * KS::kBytes,
                static_cast<size_t>(count) * KD::kBytes);
  } else if constexpr (std::is_same_v<KS, KF32> && std::is_same_v<KD, KBF16>) {
    if (mode == Rounding::NearestEven) {
      for (unsigned k = 0; k < count; ++k) put<uint16_t>(o, di + k, f32_to_bf16(get<float>(a, si + k)));
    } else {
      for (unsigned k = 0; k < count; ++k) put<uint16_t>(o, di + k, f32_to_bf16(get<float>(a, si + k), mode));
    }
  } else if constexpr (std::is_same_v<KS, KBF16> && std::is_same_v<KD, KF32>) {
    for (unsigned k = 0; k < count; ++k) put<float>(o, di + k, bf16_to_f32(get<uint16_t>(a, si + k)));
  } else {
    for (unsigned k = 0; k < count; ++k) from_double<KD>(o, di + k, to_double<KS>(a, si + k), mode);
  }
}

// ---- Scalars as vector elements ----

// The raw bits of a scalar used as an element of dtype t.
inline uint32_t scalar_to_elem(DType t, uint32_t s) {
  switch (t) {
    case DType::F32: case DType::I32: case DType::U32: return s;
    case DType::BF16: return f32_to_bf16(f32_from_bits(s));
    case DType::I16: case DType::U16: return s & 0xFFFFu;
    case DType::I8: case DType::U8: return s & 0xFFu;
  }
  return s;
}
// An element (raw bits) held in a scalar register.
inline uint32_t elem_to_scalar(DType t, uint32_t e) {
  switch (t) {
    case DType::F32: case DType::I32: case DType::U32: return e;
    case DType::BF16: return (e & 0xFFFFu) << 16;
    case DType::I16: return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(e)));
    case DType::U16: return e & 0xFFFFu;
    case DType::I8: return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(e)));
    case DType::U8: return e & 0xFFu;
  }
  return e;
}
// A scalar register as an exact double for SConvert (its value as an element of dtype t).
inline double scalar_to_double(DType t, uint32_t s) {
  const uint32_t e = scalar_to_elem(t, s);
  switch (t) {
    case DType::F32: return f32_from_bits(e);
    case DType::BF16: return bf16_to_f32(static_cast<uint16_t>(e));
    case DType::I32: return static_cast<int32_t>(e);
    case DType::I16: return static_cast<int16_t>(e);
    case DType::I8: return static_cast<int8_t>(e);
    case DType::U32: return e;
    case DType::U16: return static_cast<uint16_t>(e);
    case DType::U8: return static_cast<uint8_t>(e);
  }
  return 0.0;
}
inline uint32_t double_to_elem(DType t, double x, Rounding mode) {
  switch (t) {
    case DType::F32: return f32_bits(double_to_f32(x, mode));
    case DType::BF16: return double_to_bf16(x, mode);
    case DType::I32: return static_cast<uint32_t>(double_to_int(x, mode, INT32_MIN, INT32_MAX));
    case DType::I16: return static_cast<uint32_t>(double_to_int(x, mode, INT16_MIN, INT16_MAX));
    case DType::I8: return static_cast<uint32_t>(double_to_int(x, mode, INT8_MIN, INT8_MAX));
    case DType::U32: return static_cast<uint32_t>(double_to_int(x, mode, 0, UINT32_MAX));
    case DType::U16: return static_cast<uint32_t>(double_to_int(x, mode, 0, UINT16_MAX));
    case DType::U8: return static_cast<uint32_t>(double_to_int(x, mode, 0, UINT8_MAX));
  }
  return 0;
}

inline void fill_elem(uint8_t* o, unsigned bytes, unsigned ebytes, uint32_t e) {
  switch (ebytes) {
    case 4: for (unsigned i = 0; i < bytes / 4; ++i) put<uint32_t>(o, i, e); break;
    case 2: for (unsigned i = 0; i < bytes / 2; ++i) put<uint16_t>(o, i, static_cast<uint16_t>(e)); break;
    default: std::memset(o, static_cast<int>(e & 0xFF), bytes); break;
  }
}

template <class T>
void merge_lanes(uint8_t* d, const uint8_t* s, const uint8_t* m, uint8_t inv, unsigned lo,   // s may be d
                 unsigned hi) {
  for (unsigned i = lo; i < hi; ++i) {
    const T old = get<T>(d, i), nv = get<T>(s, i);
    put<T>(d, i, (m[i] ^ inv) ? nv : old);
  }
}

const char* slot_name(Slot s) {
  switch (s) {
    case Slot::Load: return "Load";
    case Slot::Spu: return "SPU";
    case Slot::Vpu: return "VPU";
    case Slot::Store: return "Store";
  }
  return "?";
}

bool is_spu_arith_dtype(DType t) { return t == DType::F32 || t == DType::I32 || t == DType::U32; }
bool valid_dtype(DType t) { return static_cast<uint8_t>(t) <= 7; }
bool tensor_op(Op op) { return op == Op::LdTnsr || op == Op::LdTnsrS || op == Op::StTnsr || op == Op::StTnsrS; }

// ---- Static checks (what decoding rejects): run for every non-NOP slot, predicated or not ----

// The register file an operand field names; None: unused (or replaced by the immediate).
struct Operands {
  RegFile dst = RegFile::None, src0 = RegFile::None, src1 = RegFile::None, src2 = RegFile::None;
};

inline unsigned file_size(RegFile f) {
  static constexpr uint16_t kSize[6] = {256, kVectorRegs, kScalarRegs, kIndexRegs, kScalarPreds, kVectorPreds};
  return kSize[static_cast<uint8_t>(f)];
}

// nullptr when the slot's instruction is well formed, else why not.
const char* check_slot(Slot slot, const SlotInstr& in) {
  using R = RegFile;
  if (!valid_dtype(in.dtype)) return "bad dtype";
  const DType t = in.dtype;
  const bool fl = elem_is_float(t);
  const bool imm = in.use_imm;
  const uint8_t sw = in.switches;
  const R vors = imm ? R::None : (sw & kSwScalarSrc) ? R::S : R::V;   // a VorS operand
  Operands o;
  bool vector_pred_ok = false;
  switch (slot) {
    case Slot::Spu:
      switch (in.op) {
        case Op::SMov: o = {R::S, imm ? R::None : R::S}; break;
        case Op::SAdd: case Op::SSub: case Op::SMul: case Op::SMac: case Op::SMin: case Op::SMax: case Op::SDiv:
        case Op::SAnd: case Op::SOr: case Op::SXor: case Op::SShl: case Op::SShr:
          if (!is_spu_arith_dtype(t)) return "SPU arithmetic takes f32, i32 or u32";
          if ((in.op == Op::SShl || in.op == Op::SShr) && fl) return "shifts take integer dtypes";
          o = {R::S, R::S, imm ? R::None : R::S};
          break;
        case Op::SAbs: case Op::SNeg: case Op::SNot:
          if (!is_spu_arith_dtype(t)) return "SPU arithmetic takes f32, i32 or u32";
          o = {R::S, R::S};
          break;
        case Op::SCmp:
          if (!is_spu_arith_dtype(t)) return "SPU arithmetic takes f32, i32 or u32";
          if (sw > static_cast<uint8_t>(Cmp::Ge)) return "bad compare kind";
          o = {R::SP, R::S, imm ? R::None : R::S};
          break;
        case Op::SSel: o = {R::S, R::S, imm ? R::None : R::S, R::SP}; break;
        case Op::SConvert: o = {R::S, R::S}; break;
        case Op::SPMov: o = {R::SP, (sw & kSwPredConst) ? R::None : R::SP}; break;
        case Op::SPNot: o = {R::SP, R::SP}; break;
        case Op::SPAnd: case Op::SPOr: o = {R::SP, R::SP, R::SP}; break;
        case Op::IMovDim: case Op::IAddDim:
          if (sw >= kDims) return "dim beyond 4";
          o = {R::I, imm ? R::None : R::S};
          break;
        case Op::IGetDim:
          if (sw >= kDims) return "dim beyond 4";
          o = {R::S, R::I};
          break;
        case Op::IMov: o = {R::I, imm ? R::None : R::I}; break;
        case Op::ISpaceOffset: case Op::ISpaceSize: o = {R::I}; break;
        case Op::Loop:
          if (sw == 0) return "loop step 0";
          o = {R::S, R::S};
          break;
        case Op::Jmp: case Op::Halt: break;
        default: return "opcode not defined in this slot";
      }
      break;
    case Slot::Vpu:
      vector_pred_ok = true;
      switch (in.op) {
        case Op::VMov: o = {R::V, vors}; break;
        case Op::VAbs: case Op::VNeg: case Op::VNot: o = {R::V, R::V}; break;
        case Op::VAdd: case Op::VSub: case Op::VMul: case Op::VMac: case Op::VMin: case Op::VMax:
        case Op::VAnd: case Op::VOr: case Op::VXor:
          o = {R::V, R::V, vors};
          break;
        case Op::VShuffle: o = {R::V, R::V, R::V}; break;
        case Op::VShl: case Op::VShr:
          if (fl) return "shifts take integer dtypes";
          o = {R::V, R::V, vors};
          break;
        case Op::VDiv:
          if (!fl) return "div takes f32 or bf16";
          o = {R::V, R::V, vors};
          break;
        case Op::VCmp:
          if ((sw & 0x7F) > static_cast<uint8_t>(Cmp::Ge)) return "bad compare kind";
          o = {R::VP, R::V, vors};
          break;
        case Op::VSel: o = {R::V, R::V, vors, R::VP}; break;
        case Op::VConvert: {
          const unsigned from = elem_bits(t), to = elem_bits(static_cast<DType>(sw & 7));
          const unsigned part = (sw >> 5) & 3;
          const unsigned ratio = from > to ? from / to : to / from;
          if (part >= ratio) return "convert part beyond the lane ratio";
          o = {R::V, R::V};
          break;
        }
        case Op::VReduce:
          if ((sw & 0x7F) > static_cast<uint8_t>(ReduceKind::Min)) return "bad reduce kind";
          o = {R::V, R::V};
          break;
        case Op::VSpecial:
          if (!fl) return "special functions take f32 or bf16";
          if ((sw & 0x7F) > static_cast<uint8_t>(Special::Sigmoid)) return "bad special function";
          o = {R::V, R::V};
          break;
        case Op::VLaneId:
          if (fl) return "lane id takes an integer dtype";
          o = {R::V};
          break;
        case Op::VPMov: o = {R::VP, (sw & kSwPredConst) ? R::None : R::VP}; break;
        case Op::VPNot: o = {R::VP, R::VP}; break;
        case Op::VPAnd: case Op::VPOr: o = {R::VP, R::VP, R::VP}; break;
        default: return "opcode not defined in this slot";
      }
      break;
    case Slot::Load:
      switch (in.op) {
        case Op::LdTnsr: o = {R::V, R::I}; vector_pred_ok = true; break;
        case Op::LdTnsrS: o = {R::S, R::I}; break;
        case Op::LdSlm: case Op::LdSMov: o = {R::S, imm ? R::None : R::S}; break;
        case Op::LdVlm: o = {R::V, imm ? R::None : R::S}; vector_pred_ok = true; break;
        case Op::LdMov: o = {R::V, R::V}; vector_pred_ok = true; break;
        case Op::Prefetch: o = {R::None, R::I}; break;
        default: return "opcode not defined in this slot";
      }
      break;
    case Slot::Store:
      switch (in.op) {
        case Op::StTnsr: o = {R::None, R::I, R::V}; break;
        case Op::StTnsrS: o = {R::None, R::I, R::S}; break;
        case Op::StSlm: o = {R::None, imm ? R::None : R::S, R::S}; break;
        case Op::StVlm: o = {R::None, imm ? R::None : R::S, R::V}; break;
        default: return "opcode not defined in this slot";
      }
      break;
  }
  if (in.dst >= file_size(o.dst) || in.src0 >= file_size(o.src0) || in.src1 >= file_size(o.src1) ||
      in.src2 >= file_size(o.src2))
    return "register number out of range";
  if (in.pred_vector) {
    if (slot == Slot::Spu || slot == Slot::Store) return "a vector predicate in the SPU or Store slot";
    if (!vector_pred_ok) return "a vector predicate on an instruction with a scalar destination";
    if (in.pred >= kVectorPreds) return "vector predicate register out of range";
  } else if (in.pred >= kScalarPreds) {
    return "scalar predicate register out of range";
  }
  return nullptr;
}

}  // namespace

const char* fault_kind_name(FaultKind kind) {
  switch (kind) {
    case FaultKind::None: return "none";
    case FaultKind::IllegalInstruction: return "illegal instruction";
    case FaultKind::FetchError: return "fetch error";
    case FaultKind::GlobalAccess: return "global access error";
    case FaultKind::LocalAccess: return "local memory access error";
    case FaultKind::DivideByZero: return "integer division by zero";
    case FaultKind::LoopTooDeep: return "loop nested too deep";
    case FaultKind::BadTensor: return "bad tensor";
  }
  return "?";
}

const char* latency_class_name(LatencyClass c) {
  switch (c) {
    case LatencyClass::None: return "none";
    case LatencyClass::Spu: return "spu";
    case LatencyClass::Vpu: return "vpu";
    case LatencyClass::Special: return "special";
    case LatencyClass::Local: return "local";
    case LatencyClass::GlobalLoad: return "global_load";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// TpcCoreState

void TpcCoreState::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

namespace {
uint8_t* aligned_bytes(size_t n) {
  const size_t rounded = (n + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return static_cast<uint8_t*>(p);
}
}  // namespace

TpcCoreState::TpcCoreState(const TpcCoreConfig& config)
    : slm(config.slm_bytes, 0),
      vlm(config.vlm_bytes, 0),
      vector_bits_(config.vector_bits),
      vregs_(aligned_bytes(static_cast<size_t>(kVectorRegs) * config.vector_bits / 8)),
      vpreds_(aligned_bytes(static_cast<size_t>(kVectorPreds) * config.vector_bits / 8)) {
  sp[0] = true;
  std::memset(vpred(0), 1, pred_lanes());
}

void TpcCoreState::reset(const LaunchContext& ctx) {
  std::memset(vregs_.get(), 0, static_cast<size_t>(kVectorRegs) * vector_bytes());
  std::memset(vpreds_.get(), 0, static_cast<size_t>(kVectorPreds) * pred_lanes());
  std::memset(vpred(0), 1, pred_lanes());
  s.fill(0);
  for (unsigned r = 0; r < 32; ++r) s[r] = ctx.srf[r];
  for (auto& reg : i) reg.fill(0);
  sp.fill(false);
  sp[0] = true;
  std::fill(slm.begin(), slm.end(), 0);
  std::fill(vlm.begin(), vlm.end(), 0);
  loops = {};
  loop_depth = 0;
  pc = 0;
  status = CoreStatus::Running;
  fault = Fault{};
  bundles = 0;
}

// ---------------------------------------------------------------------------------------------
// The executor proper

struct TpcExecutor::Impl {
  explicit Impl(TpcExecutor& e)
      : ex(e),
        st(e.state_),
        vbytes(e.state_.vector_bytes()),
        plane(e.state_.pred_lanes()),
        vres(aligned_bytes(vbytes)),
        lres(aligned_bytes(vbytes)),
        bcast0{aligned_bytes(vbytes)},
        bcast1{aligned_bytes(vbytes)},
        pres(aligned_bytes(plane)),
        tree(aligned_bytes(static_cast<size_t>(plane) * 4)) {}
  ~Impl() {
    for (uint8_t* p : {vres, lres, bcast0.data, bcast1.data, pres, tree}) std::free(p);
  }

  enum class Pred { Skip, Run, Fault };

  // Pending register / memory writes of the bundle being executed.
  struct VWrite {
    bool on = false;
    uint8_t reg = 0;
    uint8_t ebytes = 4;
    uint8_t inv = 0;
    unsigned lo = 0, hi = 0;   // lanes written
    const uint8_t* data = nullptr;
    const uint8_t* mask = nullptr;
  };
  struct SWrite {
    bool on = false;
    uint8_t reg = 0;
    uint32_t value = 0;
  };
  struct PWrite {          // vector predicate
    bool on = false;
    uint8_t reg = 0;
    uint8_t inv = 0;
    unsigned n = 0;        // bits written; bits n.. are cleared
    const uint8_t* data = nullptr;
    const uint8_t* mask = nullptr;
  };
  enum class StoreKind : uint8_t { None, Global, Slm, Vlm };

  TpcExecutor& ex;
  TpcCoreState& st;
  const unsigned vbytes;
  const unsigned plane;
  uint8_t* vres;     // VPU vector result
  uint8_t* lres;     // Load-slot vector result
  // A broadcast operand buffer and the element it holds (ebytes 0: nothing yet), so broadcasting
  // the same value again (a mac by a loop-invariant scalar) does not refill it.
  struct Broadcast {
    uint8_t* data;
    uint8_t ebytes = 0;
    uint32_t elem = 0;
  };
  Broadcast bcast0, bcast1;   // broadcast operands
  uint8_t* pres;     // VPU predicate result
  uint8_t* tree;     // reduction scratch

  VWrite load_v, vpu_v;
  SWrite load_s, spu_s;
  PWrite vpu_p;
  bool spu_sp_on = false;
  uint8_t spu_sp_reg = 0;
  bool spu_sp_value = false;
  bool spu_i_on = false;
  uint8_t spu_i_reg = 0;
  std::array<int32_t, kDims> spu_i_value{};
  StoreKind store_kind = StoreKind::None;
  uint64_t store_addr = 0;
  uint32_t store_bytes = 0;
  const uint8_t* store_data = nullptr;
  uint8_t store_elem[4] = {};
  bool halt = false, jump = false, loop_enter = false, loop_skip = false;
  uint32_t target = 0;
  LoopFrame frame;

  FaultKind fault_kind = FaultKind::None;
  std::string fault_msg;
  bool prechecked = false;   // the bundle passed bundle_well_formed(): skip check_slot()

  // ---- helpers ----

  bool fail(FaultKind kind, std::string msg) {
    fault_kind = kind;
    fault_msg = std::move(msg);
    return false;
  }
  bool illegal(Slot slot, const SlotInstr& in, const char* why) {
    return fail(FaultKind::IllegalInstruction, std::string("illegal instruction in the ") + slot_name(slot) +
                                                   " slot (opcode " + std::to_string(static_cast<unsigned>(in.op)) +
                                                   "): " + why);
  }
  static void rd(SlotExec& e, RegFile f, unsigned idx) {
    if ((f == RegFile::SP || f == RegFile::VP) && idx == 0) return;
    if (e.num_reads < kMaxSlotReads) e.reads[e.num_reads++] = RegRef{f, static_cast<uint8_t>(idx)};
  }

  Pred predicate(Slot slot, const SlotInstr& in, SlotExec& e, const uint8_t*& mask, uint8_t& inv) {
    mask = nullptr;
    inv = 0;
    if (in.pred_vector) {
      if (slot == Slot::Spu || slot == Slot::Store) {
        illegal(slot, in, "a vector predicate in the SPU or Store slot");
        return Pred::Fault;
      }
      if (in.pred >= kVectorPreds) {
        illegal(slot, in, "vector predicate register out of range");
        return Pred::Fault;
      }
      rd(e, RegFile::VP, in.pred);
      if (in.pred != 0 || in.pred_invert) {
        mask = st.vpred(in.pred);
        inv = in.pred_invert ? 1 : 0;
      }
      return Pred::Run;
    }
    if (in.pred >= kScalarPreds) {
      illegal(slot, in, "scalar predicate register out of range");
      return Pred::Fault;
    }
    rd(e, RegFile::SP, in.pred);
    const bool v = in.pred == 0 ? true : st.sp[in.pred];
    return v != in.pred_invert ? Pred::Run : Pred::Skip;
  }

  // What every slot does before its operation: NOP, the instruction check (unless the bundle was
  // prechecked), the tensor number of a tensor op (it faults even when predicated off, as decode
  // does), the predicate and the dtype. Run: execute it (the slot's latency class is set); Skip:
  // nothing to do (a NOP or predicated off); Fault: the fault is recorded.
  Pred begin_slot(Slot slot, const SlotInstr& in, SlotExec& e, LatencyClass latency, const uint8_t*& mask,
                  uint8_t& inv) {
    e.op = in.op;
    mask = nullptr;
    inv = 0;
    if (in.op == Op::Nop) return Pred::Skip;
    if (const char* why = prechecked ? nullptr : check_slot(slot, in)) {
      illegal(slot, in, why);
      return Pred::Fault;
    }
    if (tensor_op(in.op) && in.src2 >= kMaxTensors) {
      fail(FaultKind::BadTensor, std::string(slot_name(slot)) + " slot: tensor number " + std::to_string(in.src2) +
                                     " out of range (16 descriptors)");
      return Pred::Fault;
    }
    const Pred p = predicate(slot, in, e, mask, inv);
    if (p != Pred::Run) return p;
    if (!valid_dtype(in.dtype)) {
      illegal(slot, in, "bad dtype");
      return Pred::Fault;
    }
    e.executed = true;
    e.latency = latency;
    return Pred::Run;
  }

  void set_vwrite(VWrite& w, unsigned reg, DType t, const uint8_t* data, const uint8_t* mask, uint8_t inv) {
    w.on = true;
    w.reg = static_cast<uint8_t>(reg);
    w.ebytes = static_cast<uint8_t>(elem_bits(t) / 8);
    w.lo = 0;
    w.hi = st.lanes(t);
    w.data = data;
    w.mask = mask;
    w.inv = inv;
  }

  // ---- VPU ----

  // A plain vector source register.
  const uint8_t* vreg_src(uint8_t r, SlotExec& e) {
    rd(e, RegFile::V, r);
    return st.vreg(r);
  }
  // A VorS operand in field `r`: the vector register, the broadcast immediate (use_imm) or a
  // broadcast scalar register (kSwScalarSrc). `buf` receives a broadcast.
  const uint8_t* vors(const SlotInstr& in, uint8_t r, uint32_t imm, SlotExec& e, DType t, Broadcast& buf) {
    if (in.use_imm) return broadcast(buf, t, imm);
    if (in.switches & kSwScalarSrc) {
      rd(e, RegFile::S, r);
      return broadcast(buf, t, st.s[r]);
    }
    return vreg_src(r, e);
  }
  const uint8_t* broadcast(Broadcast& buf, DType t, uint32_t scalar) {
    const auto ebytes = static_cast<uint8_t>(elem_bits(t) / 8);
    const uint32_t elem = scalar_to_elem(t, scalar);
    if (buf.ebytes != ebytes || buf.elem != elem) {
      fill_elem(buf.data, vbytes, ebytes, elem);
      buf.ebytes = ebytes;
      buf.elem = elem;
    }
    return buf.data;
  }

  bool exec_vpu(const SlotInstr& in, uint32_t imm, SlotExec& e) {
    constexpr Slot kSlot = Slot::Vpu;
    const uint8_t* mask;
    uint8_t inv;
    const Pred p = begin_slot(kSlot, in, e, LatencyClass::Vpu, mask, inv);
    if (p != Pred::Run) return p == Pred::Skip;
    const DType t = in.dtype;
    const unsigned n = st.lanes(t);
    const bool is_float = elem_is_float(t);
    const uint8_t sw = in.switches & 0x7F;   // without kSwScalarSrc

    auto vdst = [&]() -> bool {
      if (in.dst >= kVectorRegs) return illegal(kSlot, in, "vector register out of range");
      e.write = RegRef{RegFile::V, in.dst};
      if (mask) rd(e, RegFile::V, in.dst);
      set_vwrite(vpu_v, in.dst, t, vres, mask, inv);
      return true;
    };
    auto pdst = [&](unsigned bits) -> bool {
      if (in.dst >= kVectorPreds) return illegal(kSlot, in, "vector predicate register out of range");
      if (in.dst != 0) e.write = RegRef{RegFile::VP, in.dst};
      vpu_p.on = in.dst != 0;
      vpu_p.reg = in.dst;
      vpu_p.n = bits;
      vpu_p.data = pres;
      vpu_p.mask = mask;
      vpu_p.inv = inv;
      return true;
    };
    auto bad_operand = [&]() { return illegal(kSlot, in, "source register out of range"); };

    switch (in.op) {
      case Op::VMov: {
        const uint8_t* a = vors(in, in.src0, imm, e, t, bcast0);
        std::memcpy(vres, a, vbytes);
        return vdst();
      }
      case Op::VAdd: case Op::VSub: case Op::VMul: case Op::VMin: case Op::VMax: case Op::VDiv: {
        if (in.op == Op::VDiv) {
          if (!is_float) return illegal(kSlot, in, "div takes f32 or bf16");
          e.latency = LatencyClass::Special;
        }
        const uint8_t* a = vreg_src(in.src0, e);
        const uint8_t* b = vors(in, in.src1, imm, e, t, bcast1);
        uint8_t* o = vres;
        if (is_float && (in.op == Op::VAdd || in.op == Op::VSub || in.op == Op::VMul)) {
          const FloatOp fop = in.op == Op::VAdd ? FloatOp::Add : in.op == Op::VSub ? FloatOp::Sub : FloatOp::Mul;
          if (t == DType::F32) f32_kernel(fop, o, nullptr, a, b, n);
          else bf16_kernel(fop, o, nullptr, a, b, n);
          return vdst();
        }
        dispatch_all(t, [&](auto k) {
          using K = decltype(k);
          switch (in.op) {
            case Op::VAdd: map2<K>(o, a, b, n, FAdd{}); break;
            case Op::VSub: map2<K>(o, a, b, n, FSub{}); break;
            case Op::VMul: map2<K>(o, a, b, n, FMul{}); break;
            case Op::VMin: map2<K>(o, a, b, n, FMin{}); break;
            case Op::VMax: map2<K>(o, a, b, n, FMax{}); break;
            case Op::VDiv:
              if constexpr (std::is_same_v<typename K::C, float>) map2<K>(o, a, b, n, [](float x, float y) { return x / y; });
              break;
            default: break;
          }
        });
        return vdst();
      }
      case Op::VMac: {
        const uint8_t* a = vreg_src(in.src0, e);
        const uint8_t* b = vors(in, in.src1, imm, e, t, bcast1);
        if (in.dst >= kVectorRegs) return illegal(kSlot, in, "vector register out of range");
        rd(e, RegFile::V, in.dst);
        const uint8_t* d = st.vreg(in.dst);
        uint8_t* o = vres;
        if (t == DType::F32) f32_kernel(FloatOp::Mac, o, d, a, b, n);
        else if (t == DType::BF16) bf16_kernel(FloatOp::Mac, o, d, a, b, n);
        else dispatch_int(t, [&](auto k) { map3<decltype(k)>(o, d, a, b, n, FMac{}); });
        return vdst();
      }
      case Op::VAbs: case Op::VNeg: case Op::VNot: {
        const uint8_t* a = vreg_src(in.src0, e);
        uint8_t* o = vres;
        if (in.op == Op::VNot) {
          dispatch_width(t, [&](auto k) { map1<decltype(k)>(o, a, n, FNot{}); });
        } else if (is_float) {   // sign-bit operations on the raw bits
          const bool abs = in.op == Op::VAbs;
          dispatch_width(t, [&](auto k) {
            using K = decltype(k);
            using T = typename K::C;
            const T sign = static_cast<T>(T(1) << (sizeof(T) * 8 - 1));
            if (abs) map1<K>(o, a, n, [sign](T x) { return static_cast<T>(x & static_cast<T>(~sign)); });
            else map1<K>(o, a, n, [sign](T x) { return static_cast<T>(x ^ sign); });
          });
        } else {
          dispatch_int(t, [&](auto k) {
            using K = decltype(k);
            if (in.op == Op::VAbs) map1<K>(o, a, n, FAbs{});
            else map1<K>(o, a, n, FNeg{});
          });
        }
        return vdst();
      }
      case Op::VAnd: case Op::VOr: case Op::VXor: {
        const uint8_t* a = vreg_src(in.src0, e);
        const uint8_t* b = vors(in, in.src1, imm, e, t, bcast1);
        uint8_t* o = vres;
        dispatch_width(t, [&](auto k) {
          using K = decltype(k);
          if (in.op == Op::VAnd) map2<K>(o, a, b, n, FAnd{});
          else if (in.op == Op::VOr) map2<K>(o, a, b, n, FOr{});
          else map2<K>(o, a, b, n, FXor{});
        });
        return vdst();
      }
      case Op::VShl: case Op::VShr: {
        if (is_float) return illegal(kSlot, in, "shifts take integer dtypes");
        const uint8_t* a = vreg_src(in.src0, e);
        const uint8_t* b = vors(in, in.src1, imm, e, t, bcast1);
        uint8_t* o = vres;
        dispatch_int(t, [&](auto k) {
          using K = decltype(k);
          if (in.op == Op::VShl) map2<K>(o, a, b, n, FShl{});
          else map2<K>(o, a, b, n, FShr{});
        });
        return vdst();
      }
      case Op::VCmp: {
        if (sw > static_cast<uint8_t>(Cmp::Ge)) return illegal(kSlot, in, "bad compare kind");
        const uint8_t* a = vreg_src(in.src0, e);
        const uint8_t* b = vors(in, in.src1, imm, e, t, bcast1);
        uint8_t* o = pres;
        dispatch_all(t, [&](auto k) { cmp_loop<decltype(k)>(o, a, b, n, static_cast<Cmp>(sw)); });
        return pdst(n);
      }
      case Op::VSel: {
        if (in.src2 >= kVectorPreds) return illegal(kSlot, in, "vector predicate register out of range");
        const uint8_t* a = vreg_src(in.src0, e);
        const uint8_t* b = vors(in, in.src1, imm, e, t, bcast1);
        rd(e, RegFile::VP, in.src2);
        const uint8_t* c = st.vpred(in.src2);
        uint8_t* o = vres;
        dispatch_width(t, [&](auto k) {
          using T = typename decltype(k)::C;
          for (unsigned i = 0; i < n; ++i) put<T>(o, i, c[i] ? get<T>(a, i) : get<T>(b, i));
        });
        return vdst();
      }
      case Op::VConvert: {
        const DType to = static_cast<DType>(in.switches & 7);
        const auto mode = static_cast<Rounding>((in.switches >> 3) & 3);
        const unsigned part = (in.switches >> 5) & 3;
        const uint8_t* a = vreg_src(in.src0, e);
        if (in.dst >= kVectorRegs) return illegal(kSlot, in, "vector register out of range");
        const unsigned ns = n, nd = st.lanes(to);
        unsigned si = 0, di = 0, count = ns;
        if (nd > ns) {          // narrowing: all source lanes into a slice of the destination
          if (part >= nd / ns) return illegal(kSlot, in, "convert part beyond the lane ratio");
          di = part * ns;
        } else if (nd < ns) {   // widening: a slice of the source lanes
          if (part >= ns / nd) return illegal(kSlot, in, "convert part beyond the lane ratio");
          si = part * nd;
          count = nd;
        }
        uint8_t* o = vres;
        dispatch_all(t, [&](auto ks) {
          dispatch_all(to, [&](auto kd) { convert_loop<decltype(ks), decltype(kd)>(o, a, si, di, count, mode); });
        });
        if (!mask && nd > ns) rd(e, RegFile::V, in.dst);   // the other lanes are kept
        set_vwrite(vpu_v, in.dst, to, vres, mask, inv);
        vpu_v.lo = di;
        vpu_v.hi = di + count;
        e.write = RegRef{RegFile::V, in.dst};
        if (mask) rd(e, RegFile::V, in.dst);
        return true;
      }
      case Op::VReduce: {
        if (sw > static_cast<uint8_t>(ReduceKind::Min)) return illegal(kSlot, in, "bad reduce kind");
        const uint8_t* a = vreg_src(in.src0, e);
        const auto kind = static_cast<ReduceKind>(sw);
        std::memset(vres, 0, vbytes);
        uint8_t* o = vres;
        float* tr = reinterpret_cast<float*>(tree);
        dispatch_all(t, [&](auto k) {
          using K = decltype(k);
          using C = typename K::C;
          if constexpr (std::is_same_v<C, float>) {
            if (kind == ReduceKind::Add) {
              for (unsigned i = 0; i < n; ++i) tr[i] = K::in(a, i);
              for (unsigned m = n; m > 1; m /= 2)
                for (unsigned i = 0; i < m / 2; ++i) tr[i] = tr[2 * i] + tr[2 * i + 1];
              K::out(o, 0, tr[0]);
              return;
            }
          }
          C r = K::in(a, 0);
          for (unsigned i = 1; i < n; ++i) {
            const C x = K::in(a, i);
            r = kind == ReduceKind::Add ? FAdd{}(r, x) : kind == ReduceKind::Max ? FMax{}(r, x) : FMin{}(r, x);
          }
          K::out(o, 0, r);
        });
        return vdst();
      }
      case Op::VShuffle: {
        const uint8_t* a = vreg_src(in.src0, e);
        const uint8_t* b = vreg_src(in.src1, e);
        uint8_t* o = vres;
        const unsigned lane_mask = n - 1;   // lanes are a power of two
        dispatch_width(t, [&](auto k) {
          using T = typename decltype(k)::C;
          for (unsigned i = 0; i < n; ++i) put<T>(o, i, get<T>(a, static_cast<uint32_t>(get<T>(b, i)) & lane_mask));
        });
        return vdst();
      }
      case Op::VSpecial: {
        if (!is_float) return illegal(kSlot, in, "special functions take f32 or bf16");
        if (sw > static_cast<uint8_t>(Special::Sigmoid)) return illegal(kSlot, in, "bad special function");
        e.latency = LatencyClass::Special;
        const uint8_t* a = vreg_src(in.src0, e);
        const auto fn = static_cast<Special>(sw);
        if (t == DType::F32) {
          for (unsigned i = 0; i < n; ++i) put<float>(vres, i, special_f32(fn, get<float>(a, i)));
        } else {
          for (unsigned i = 0; i < n; ++i) put<uint16_t>(vres, i, special_bf16(fn, get<uint16_t>(a, i)));
        }
        return vdst();
      }
      case Op::VLaneId: {
        if (is_float) return illegal(kSlot, in, "lane id takes an integer dtype");
        uint8_t* o = vres;
        dispatch_int(t, [&](auto k) {
          using T = typename decltype(k)::C;
          for (unsigned i = 0; i < n; ++i) put<T>(o, i, wrap<T>(i));
        });
        return vdst();
      }
      case Op::VPMov: case Op::VPNot: case Op::VPAnd: case Op::VPOr: {
        const bool constant = in.op == Op::VPMov && (in.switches & kSwPredConst);
        if (!constant && in.src0 >= kVectorPreds) return bad_operand();
        if ((in.op == Op::VPAnd || in.op == Op::VPOr) && in.src1 >= kVectorPreds) return bad_operand();
        if (constant) {
          std::memset(pres, (in.switches & kSwPredTrue) ? 1 : 0, plane);
        } else {
          rd(e, RegFile::VP, in.src0);
          const uint8_t* x = st.vpred(in.src0);
          if (in.op == Op::VPMov) {
            std::memcpy(pres, x, plane);
          } else if (in.op == Op::VPNot) {
            for (unsigned i = 0; i < plane; ++i) pres[i] = x[i] ^ 1;
          } else {
            rd(e, RegFile::VP, in.src1);
            const uint8_t* y = st.vpred(in.src1);
            if (in.op == Op::VPAnd) for (unsigned i = 0; i < plane; ++i) pres[i] = x[i] & y[i];
            else for (unsigned i = 0; i < plane; ++i) pres[i] = x[i] | y[i];
          }
        }
        return pdst(plane);
      }
      default: return illegal(kSlot, in, "opcode not defined in this slot");
    }
  }

  // ---- SPU ----

  // Binary / unary scalar arithmetic of dtype t. Returns false on an integer division by zero.
  static bool spu_arith(Op op, DType t, uint32_t a, uint32_t b, uint32_t d, uint32_t& r) {
    if (t == DType::F32) {
      const float x = f32_from_bits(a), y = f32_from_bits(b);
      switch (op) {
        case Op::SAdd: r = f32_bits(x + y); break;
        case Op::SSub: r = f32_bits(x - y); break;
        case Op::SMul: r = f32_bits(x * y); break;
        case Op::SMac: r = f32_bits(FMac{}(f32_from_bits(d), x, y)); break;
        case Op::SMin: r = f32_bits(f32_min(x, y)); break;
        case Op::SMax: r = f32_bits(f32_max(x, y)); break;
        case Op::SAbs: r = a & 0x7FFFFFFFu; break;
        case Op::SNeg: r = a ^ 0x80000000u; break;
        case Op::SDiv: r = f32_bits(x / y); break;
        default: break;
      }
      return true;
    }
    const bool sgn = t == DType::I32;
    const auto sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
    switch (op) {
      case Op::SAdd: r = a + b; break;
      case Op::SSub: r = a - b; break;
      case Op::SMul: r = a * b; break;
      case Op::SMac: r = d + a * b; break;
      case Op::SMin: r = sgn ? static_cast<uint32_t>(std::min(sa, sb)) : std::min(a, b); break;
      case Op::SMax: r = sgn ? static_cast<uint32_t>(std::max(sa, sb)) : std::max(a, b); break;
      case Op::SAbs: r = sgn && sa < 0 ? 0u - a : a; break;
      case Op::SNeg: r = 0u - a; break;
      case Op::SShl: r = a << (b & 31); break;
      case Op::SShr: r = sgn ? static_cast<uint32_t>(sa >> (b & 31)) : a >> (b & 31); break;
      case Op::SDiv:
        if (b == 0) return false;
        if (sgn) r = (sa == INT32_MIN && sb == -1) ? a : static_cast<uint32_t>(sa / sb);
        else r = a / b;
        break;
      default: break;
    }
    return true;
  }

  bool exec_spu(const SlotInstr& in, uint32_t imm, SlotExec& e) {
    constexpr Slot kSlot = Slot::Spu;
    const uint8_t* mask;
    uint8_t inv;
    const Pred p = begin_slot(kSlot, in, e, LatencyClass::Spu, mask, inv);
    if (p != Pred::Run) return p == Pred::Skip;
    const DType t = in.dtype;
    const auto& S = st.s;

    auto sreg = [&](uint8_t r, uint32_t& v) -> bool {
      if (r >= kScalarRegs) return illegal(kSlot, in, "scalar register out of range");
      rd(e, RegFile::S, r);
      v = S[r];
      return true;
    };
    auto src0_or_imm = [&](uint32_t& v) -> bool {
      if (in.use_imm) {
        v = imm;
        return true;
      }
      return sreg(in.src0, v);
    };
    auto src1_or_imm = [&](uint32_t& v) -> bool {
      if (in.use_imm) {
        v = imm;
        return true;
      }
      return sreg(in.src1, v);
    };
    auto sdst = [&](uint32_t v) -> bool {
      if (in.dst >= kScalarRegs) return illegal(kSlot, in, "scalar register out of range");
      e.write = RegRef{RegFile::S, in.dst};
      spu_s = SWrite{true, in.dst, v};
      return true;
    };
    auto spreg = [&](uint8_t r, bool& v) -> bool {
      if (r >= kScalarPreds) return illegal(kSlot, in, "scalar predicate register out of range");
      rd(e, RegFile::SP, r);
      v = r == 0 ? true : st.sp[r];
      return true;
    };
    auto spdst = [&](bool v) -> bool {
      if (in.dst >= kScalarPreds) return illegal(kSlot, in, "scalar predicate register out of range");
      if (in.dst == 0) return true;   // SP0 is always true
      e.write = RegRef{RegFile::SP, in.dst};
      spu_sp_on = true;
      spu_sp_reg = in.dst;
      spu_sp_value = v;
      return true;
    };
    auto ireg = [&](uint8_t r) -> bool {
      if (r >= kIndexRegs) return illegal(kSlot, in, "index register out of range");
      rd(e, RegFile::I, r);
      return true;
    };
    auto idst = [&](const std::array<int32_t, kDims>& v) -> bool {
      if (in.dst >= kIndexRegs) return illegal(kSlot, in, "index register out of range");
      e.write = RegRef{RegFile::I, in.dst};
      spu_i_on = true;
      spu_i_reg = in.dst;
      spu_i_value = v;
      return true;
    };

    switch (in.op) {
      case Op::SMov: {
        uint32_t v = 0;
        return src0_or_imm(v) && sdst(v);
      }
      case Op::SAdd: case Op::SSub: case Op::SMul: case Op::SMac: case Op::SMin: case Op::SMax: case Op::SDiv:
      case Op::SAnd: case Op::SOr: case Op::SXor: case Op::SShl: case Op::SShr: {
        if (!is_spu_arith_dtype(t)) return illegal(kSlot, in, "SPU arithmetic takes f32, i32 or u32");
        if ((in.op == Op::SShl || in.op == Op::SShr) && t == DType::F32)
          return illegal(kSlot, in, "shifts take integer dtypes");
        uint32_t a = 0, b = 0, d = 0, r = 0;
        if (!sreg(in.src0, a) || !src1_or_imm(b)) return false;
        if (in.op == Op::SMac && !sreg(in.dst, d)) return false;
        if (in.op == Op::SAnd) r = a & b;
        else if (in.op == Op::SOr) r = a | b;
        else if (in.op == Op::SXor) r = a ^ b;
        else if (!spu_arith(in.op, t, a, b, d, r)) return fail(FaultKind::DivideByZero, "integer division by zero (SPU div)");
        return sdst(r);
      }
      case Op::SAbs: case Op::SNeg: case Op::SNot: {
        if (!is_spu_arith_dtype(t)) return illegal(kSlot, in, "SPU arithmetic takes f32, i32 or u32");
        uint32_t a = 0, r = 0;
        if (!sreg(in.src0, a)) return false;
        if (in.op == Op::SNot) r = ~a;
        else spu_arith(in.op, t, a, 0, 0, r);
        return sdst(r);
      }
      case Op::SCmp: {
        if (!is_spu_arith_dtype(t)) return illegal(kSlot, in, "SPU arithmetic takes f32, i32 or u32");
        if (in.switches > static_cast<uint8_t>(Cmp::Ge)) return illegal(kSlot, in, "bad compare kind");
        uint32_t a = 0, b = 0;
        if (!sreg(in.src0, a) || !src1_or_imm(b)) return false;
        const auto c = static_cast<Cmp>(in.switches);
        bool r;
        if (t == DType::F32) r = compare(f32_from_bits(a), f32_from_bits(b), c);
        else if (t == DType::I32) r = compare(static_cast<int32_t>(a), static_cast<int32_t>(b), c);
        else r = compare(a, b, c);
        return spdst(r);
      }
      case Op::SSel: {
        uint32_t a = 0, b = 0;
        bool c = false;
        if (!spreg(in.src2, c) || !sreg(in.src0, a) || !src1_or_imm(b)) return false;
        return sdst(c ? a : b);
      }
      case Op::SConvert: {
        const DType to = static_cast<DType>(in.switches & 7);
        const auto mode = static_cast<Rounding>((in.switches >> 3) & 3);
        uint32_t a = 0;
        if (!sreg(in.src0, a)) return false;
        uint32_t r;
        if (t == to) r = elem_to_scalar(t, scalar_to_elem(t, a));
        else if (t == DType::F32 && to == DType::BF16) r = elem_to_scalar(to, f32_to_bf16(f32_from_bits(a), mode));
        else r = elem_to_scalar(to, double_to_elem(to, scalar_to_double(t, a), mode));
        return sdst(r);
      }
      case Op::SPMov: case Op::SPNot: case Op::SPAnd: case Op::SPOr: {
        bool a = false, b = false;
        if (in.op == Op::SPMov && (in.switches & kSwPredConst)) return spdst((in.switches & kSwPredTrue) != 0);
        if (!spreg(in.src0, a)) return false;
        if ((in.op == Op::SPAnd || in.op == Op::SPOr) && !spreg(in.src1, b)) return false;
        switch (in.op) {
          case Op::SPMov: return spdst(a);
          case Op::SPNot: return spdst(!a);
          case Op::SPAnd: return spdst(a && b);
          default: return spdst(a || b);
        }
      }
      case Op::IMovDim: case Op::IAddDim: {
        if (in.switches >= kDims) return illegal(kSlot, in, "dim beyond 4");
        uint32_t v = 0;
        if (!src0_or_imm(v) || !ireg(in.dst)) return false;
        std::array<int32_t, kDims> r = st.i[in.dst];
        if (in.op == Op::IMovDim) r[in.switches] = static_cast<int32_t>(v);
        else r[in.switches] = static_cast<int32_t>(static_cast<uint32_t>(r[in.switches]) + v);
        return idst(r);
      }
      case Op::IGetDim: {
        if (in.switches >= kDims) return illegal(kSlot, in, "dim beyond 4");
        if (!ireg(in.src0)) return false;
        return sdst(static_cast<uint32_t>(st.i[in.src0][in.switches]));
      }
      case Op::IMov: {
        if (in.use_imm) {
          std::array<int32_t, kDims> r;
          r.fill(static_cast<int32_t>(imm));
          return idst(r);
        }
        if (!ireg(in.src0)) return false;
        return idst(st.i[in.src0]);
      }
      case Op::ISpaceOffset: return idst(ex.ctx_.ispace_offset);
      case Op::ISpaceSize: return idst(ex.ctx_.ispace_size);
      case Op::Loop: {
        const auto step = static_cast<int8_t>(in.switches);
        if (step == 0) return illegal(kSlot, in, "loop step 0");
        if (imm <= st.pc) return illegal(kSlot, in, "loop label not after the loop bundle");
        uint32_t it = 0, bound = 0;
        if (!sreg(in.dst, it) || !sreg(in.src0, bound)) return false;
        if (st.loop_depth >= kLoopDepth)
          return fail(FaultKind::LoopTooDeep, "loop nested deeper than " + std::to_string(kLoopDepth));
        e.latency = LatencyClass::None;
        const bool uns = false;   // loop iterators and bounds are signed 32-bit (ISA.md); loop takes no dtype
        const bool go = step > 0 ? (uns ? it < bound : static_cast<int32_t>(it) < static_cast<int32_t>(bound))
                                 : (uns ? it > bound : static_cast<int32_t>(it) > static_cast<int32_t>(bound));
        if (go) {
          loop_enter = true;
          frame = LoopFrame{st.pc + 1, imm, bound, step, in.dst, uns};
        } else {
          loop_skip = true;
          target = imm;
        }
        return true;
      }
      case Op::Jmp:
        e.latency = LatencyClass::None;
        jump = true;
        target = imm;
        return true;
      case Op::Halt:
        e.latency = LatencyClass::None;
        halt = true;
        return true;
      default: return illegal(kSlot, in, "opcode not defined in this slot");
    }
  }

  // ---- Tensor accesses ----

  struct Span {
    bool any = false;
    unsigned lo = 0, hi = 0;   // in-bounds lanes
    uint64_t addr = 0;
  };

  // Resolves tensor number `tn`; faults (BadTensor) when it is out of range or unset.
  const TensorDescriptor* tensor(Slot slot, unsigned tn) {
    if (tn >= kMaxTensors) {
      fail(FaultKind::BadTensor, std::string(slot_name(slot)) + " slot: tensor number " + std::to_string(tn) +
                                     " out of range (16 descriptors)");
      return nullptr;
    }
    const TensorDescriptor& d = ex.ctx_.tensors[tn];
    if (d.dims == 0) {
      fail(FaultKind::BadTensor, std::string(slot_name(slot)) + " slot: tensor " + std::to_string(tn) +
                                     " was not set by the launch");
      return nullptr;
    }
    return &d;
  }

  static Span span(const TensorDescriptor& t, const std::array<int32_t, kDims>& c, unsigned lanes) {
    Span s;
    int64_t off = 0;
    for (unsigned d = 1; d < kDims; ++d) {
      const int64_t lim = d < t.dims ? static_cast<int64_t>(t.size[d]) : 1;
      if (c[d] < 0 || c[d] >= lim) return s;
      if (d < t.dims) off += static_cast<int64_t>(c[d]) * t.stride[d];
    }
    const int64_t c0 = c[0];
    const int64_t lo = std::max<int64_t>(0, -c0);
    const int64_t hi = std::min<int64_t>(lanes, static_cast<int64_t>(t.size[0]) - c0);
    if (lo >= hi) return s;
    s.any = true;
    s.lo = static_cast<unsigned>(lo);
    s.hi = static_cast<unsigned>(hi);
    off += c0 + lo;
    s.addr = t.base + static_cast<uint64_t>(off) * (elem_bits(t.dtype) / 8);
    return s;
  }

  bool global(ExecInfo& info, Slot slot, uint64_t addr, uint32_t bytes, void* data, bool write, RegRef dst,
              unsigned tn) {
    if (ex.memory_ == nullptr)
      return fail(FaultKind::GlobalAccess, std::string(slot_name(slot)) + " slot: no global memory attached");
    if (!write) {
      if (!ex.memory_->access(addr, bytes, data, false))
        return fail(FaultKind::GlobalAccess, "global read of " + std::to_string(bytes) + " bytes at " + hex(addr) +
                                                 " refused (tensor " + std::to_string(tn) + ")");
    }
    GlobalAccess& g = info.global[info.num_global++];
    g.address = addr;
    g.bytes = bytes;
    g.is_write = write;
    g.prefetch = false;
    g.slot = slot;
    g.dst = dst;
    return true;
  }

  bool local_addr(Slot slot, const SlotInstr& in, uint32_t addr, uint32_t size, uint32_t limit, const char* mem) {
    if (addr % size != 0 || addr > limit || limit - addr < size)
      return fail(FaultKind::LocalAccess, std::string(slot_name(slot)) + " slot: " + mem + " access of " +
                                              std::to_string(size) + " bytes at " + hex(addr) +
                                              (addr % size != 0 ? " is misaligned" : " is out of range") + " (" +
                                              mem + " is " + std::to_string(limit) + " bytes, opcode " +
                                              std::to_string(static_cast<unsigned>(in.op)) + ")");
    return true;
  }

  // ---- Load slot ----

  bool exec_load(const SlotInstr& in, uint32_t imm, SlotExec& e, ExecInfo& info) {
    constexpr Slot kSlot = Slot::Load;
    const uint8_t* mask;
    uint8_t inv;
    const Pred p = begin_slot(kSlot, in, e, LatencyClass::Local, mask, inv);
    if (p != Pred::Run) return p == Pred::Skip;
    const bool vdst_op = in.op == Op::LdTnsr || in.op == Op::LdVlm || in.op == Op::LdMov;
    if (vdst_op && in.dst >= kVectorRegs) return illegal(kSlot, in, "vector register out of range");
    if (!vdst_op && in.dst >= kScalarRegs) return illegal(kSlot, in, "scalar register out of range");
    if (!vdst_op && in.pred_vector) return illegal(kSlot, in, "a vector predicate on a scalar load");
    auto sreg = [&](uint8_t r, uint32_t& v) -> bool {
      if (r >= kScalarRegs) return illegal(kSlot, in, "scalar register out of range");
      rd(e, RegFile::S, r);
      v = st.s[r];
      return true;
    };
    auto addr_operand = [&](uint32_t& v) -> bool {
      if (in.use_imm) {
        v = imm;
        return true;
      }
      return sreg(in.src0, v);
    };
    auto vwrite = [&](DType t, const uint8_t* data) {
      e.write = RegRef{RegFile::V, in.dst};
      if (mask) rd(e, RegFile::V, in.dst);
      set_vwrite(load_v, in.dst, t, data, mask, inv);
    };
    auto swrite = [&](uint32_t v) {
      e.write = RegRef{RegFile::S, in.dst};
      load_s = SWrite{true, in.dst, v};
    };

    switch (in.op) {
      case Op::LdTnsr: case Op::LdTnsrS: {
        if (in.src0 >= kIndexRegs) return illegal(kSlot, in, "index register out of range");
        rd(e, RegFile::I, in.src0);
        const TensorDescriptor* t = tensor(kSlot, in.src2);
        if (!t) return false;
        const unsigned eb = elem_bits(t->dtype) / 8;
        const bool vec = in.op == Op::LdTnsr;
        const unsigned lanes = vec ? st.lanes(t->dtype) : 1;
        const Span s = span(*t, st.i[in.src0], lanes);
        uint8_t* buf = vec ? lres : store_elem_load;
        if (s.any) {
          e.latency = LatencyClass::GlobalLoad;
          const RegRef dst{vec ? RegFile::V : RegFile::S, in.dst};
          if (!global(info, kSlot, s.addr, (s.hi - s.lo) * eb, buf + static_cast<size_t>(s.lo) * eb, false, dst,
                      in.src2))
            return false;
        }
        const uint32_t pad = t->padding;
        if (vec) {
          if (s.lo > 0) fill_elem(buf, s.lo * eb, eb, pad);
          if (s.hi < lanes) fill_elem(buf + static_cast<size_t>(s.hi) * eb, (lanes - s.hi) * eb, eb, pad);
          if (!s.any) fill_elem(buf, lanes * eb, eb, pad);
          vwrite(t->dtype, buf);
        } else {
          uint32_t raw = pad;
          if (s.any) {
            raw = 0;
            std::memcpy(&raw, buf, eb);
          }
          swrite(elem_to_scalar(t->dtype, raw));
        }
        return true;
      }
      case Op::LdSlm: {
        uint32_t a = 0;
        if (!addr_operand(a) || !local_addr(kSlot, in, a, 4, static_cast<uint32_t>(st.slm.size()), "SLM")) return false;
        uint32_t v = 0;
        std::memcpy(&v, st.slm.data() + a, 4);
        swrite(v);
        return true;
      }
      case Op::LdVlm: {
        uint32_t a = 0;
        if (!addr_operand(a) || !local_addr(kSlot, in, a, vbytes, static_cast<uint32_t>(st.vlm.size()), "VLM"))
          return false;
        std::memcpy(lres, st.vlm.data() + a, vbytes);
        vwrite(in.dtype, lres);
        return true;
      }
      case Op::LdMov: {
        if (in.src0 >= kVectorRegs) return illegal(kSlot, in, "vector register out of range");
        rd(e, RegFile::V, in.src0);
        vwrite(in.dtype, st.vreg(in.src0));   // no copy: the Load slot's writes are committed first
        return true;
      }
      case Op::LdSMov: {
        uint32_t v = 0;
        if (!addr_operand(v)) return false;
        swrite(v);
        return true;
      }
      case Op::Prefetch: {
        // The span ld_tnsr would read; nothing is read now and nothing can fault (a hint).
        if (in.src0 >= kIndexRegs) return illegal(kSlot, in, "index register out of range");
        rd(e, RegFile::I, in.src0);
        const TensorDescriptor* t = tensor(kSlot, in.src2);
        if (!t) return false;
        const Span s = span(*t, st.i[in.src0], st.lanes(t->dtype));
        if (s.any && ex.memory_ != nullptr) {
          GlobalAccess& g = info.global[info.num_global++];
          g.address = s.addr;
          g.bytes = (s.hi - s.lo) * (elem_bits(t->dtype) / 8);
          g.is_write = false;
          g.prefetch = true;
          g.slot = kSlot;
          g.dst = RegRef{};
        }
        return true;
      }
      default: return illegal(kSlot, in, "opcode not defined in this slot");
    }
  }
  uint8_t store_elem_load[4] = {};

  // ---- Store slot ----

  bool exec_store(const SlotInstr& in, uint32_t imm, SlotExec& e, ExecInfo& info) {
    constexpr Slot kSlot = Slot::Store;
    const uint8_t* mask;
    uint8_t inv;
    const Pred p = begin_slot(kSlot, in, e, LatencyClass::None, mask, inv);
    if (p != Pred::Run) return p == Pred::Skip;
    auto sreg = [&](uint8_t r, uint32_t& v) -> bool {
      if (r >= kScalarRegs) return illegal(kSlot, in, "scalar register out of range");
      rd(e, RegFile::S, r);
      v = st.s[r];
      return true;
    };
    auto vreg = [&](uint8_t r) -> bool {
      if (r >= kVectorRegs) return illegal(kSlot, in, "vector register out of range");
      rd(e, RegFile::V, r);
      return true;
    };
    auto addr_operand = [&](uint32_t& v) -> bool {
      if (in.use_imm) {
        v = imm;
        return true;
      }
      return sreg(in.src0, v);
    };

    switch (in.op) {
      case Op::StTnsr: case Op::StTnsrS: {
        if (in.src0 >= kIndexRegs) return illegal(kSlot, in, "index register out of range");
        rd(e, RegFile::I, in.src0);
        const bool vec = in.op == Op::StTnsr;
        uint32_t sv = 0;
        if (vec ? !vreg(in.src1) : !sreg(in.src1, sv)) return false;
        const TensorDescriptor* t = tensor(kSlot, in.src2);
        if (!t) return false;
        const unsigned eb = elem_bits(t->dtype) / 8;
        const Span s = span(*t, st.i[in.src0], vec ? st.lanes(t->dtype) : 1);
        if (!s.any) return true;
        if (ex.memory_ == nullptr)
          return fail(FaultKind::GlobalAccess, "Store slot: no global memory attached");
        if (vec) {
          store_data = st.vreg(in.src1) + static_cast<size_t>(s.lo) * eb;
        } else {
          const uint32_t raw = scalar_to_elem(t->dtype, sv);
          std::memcpy(store_elem, &raw, 4);
          store_data = store_elem;
        }
        store_kind = StoreKind::Global;
        store_addr = s.addr;
        store_bytes = (s.hi - s.lo) * eb;
        return global(info, kSlot, store_addr, store_bytes, nullptr, true, RegRef{}, in.src2);
      }
      case Op::StSlm: {
        uint32_t a = 0, v = 0;
        if (!addr_operand(a) || !sreg(in.src1, v)) return false;
        if (!local_addr(kSlot, in, a, 4, static_cast<uint32_t>(st.slm.size()), "SLM")) return false;
        std::memcpy(store_elem, &v, 4);
        store_kind = StoreKind::Slm;
        store_addr = a;
        store_bytes = 4;
        store_data = store_elem;
        return true;
      }
      case Op::StVlm: {
        uint32_t a = 0;
        if (!addr_operand(a) || !vreg(in.src1)) return false;
        if (!local_addr(kSlot, in, a, vbytes, static_cast<uint32_t>(st.vlm.size()), "VLM")) return false;
        store_kind = StoreKind::Vlm;
        store_addr = a;
        store_bytes = vbytes;
        store_data = st.vreg(in.src1);   // unchanged until the register writes
        return true;
      }
      default: return illegal(kSlot, in, "opcode not defined in this slot");
    }
  }

  // ---- Commit ----

  bool commit_memory() {
    switch (store_kind) {
      case StoreKind::None: return true;
      case StoreKind::Global:
        if (!ex.memory_->access(store_addr, store_bytes, const_cast<uint8_t*>(store_data), true))
          return fail(FaultKind::GlobalAccess, "global write of " + std::to_string(store_bytes) + " bytes at " +
                                                   hex(store_addr) + " refused");
        return true;
      case StoreKind::Slm: std::memcpy(st.slm.data() + store_addr, store_data, 4); return true;
      case StoreKind::Vlm: std::memcpy(st.vlm.data() + store_addr, store_data, vbytes); return true;
    }
    return true;
  }

  void commit_v(const VWrite& w) {
    uint8_t* d = st.vreg(w.reg);
    if (!w.mask) {
      std::memmove(d + static_cast<size_t>(w.lo) * w.ebytes, w.data + static_cast<size_t>(w.lo) * w.ebytes,
                  static_cast<size_t>(w.hi - w.lo) * w.ebytes);
      return;
    }
    switch (w.ebytes) {
      case 4: merge_lanes<uint32_t>(d, w.data, w.mask, w.inv, w.lo, w.hi); break;
      case 2: merge_lanes<uint16_t>(d, w.data, w.mask, w.inv, w.lo, w.hi); break;
      default: merge_lanes<uint8_t>(d, w.data, w.mask, w.inv, w.lo, w.hi); break;
    }
  }

  void commit_p(const PWrite& w) {
    uint8_t* d = st.vpred(w.reg);
    if (!w.mask) {
      std::memcpy(d, w.data, w.n);
    } else {
      for (unsigned i = 0; i < w.n; ++i) d[i] = (w.mask[i] ^ w.inv) ? w.data[i] : d[i];
    }
    if (w.n < plane) std::memset(d + w.n, 0, plane - w.n);
  }

  void commit_registers() {
    if (load_v.on) commit_v(load_v);
    if (load_s.on) st.s[load_s.reg] = load_s.value;
    if (spu_s.on) st.s[spu_s.reg] = spu_s.value;
    if (spu_sp_on) st.sp[spu_sp_reg] = spu_sp_value;
    if (spu_i_on) st.i[spu_i_reg] = spu_i_value;
    if (vpu_v.on) commit_v(vpu_v);
    if (vpu_p.on) commit_p(vpu_p);
  }

  // After the bundle whose body position is `epc`: step every loop whose body ends there.
  uint32_t end_of_bundle(uint32_t epc, ExecInfo& info) {
    while (st.loop_depth > 0) {
      LoopFrame& f = st.loops[st.loop_depth - 1];
      if (f.end != epc) break;
      uint32_t& it = st.s[f.iter];
      it += static_cast<uint32_t>(static_cast<int32_t>(f.step));
      info.loop_step_regs[info.num_loop_steps++] = f.iter;
      const bool go = f.step > 0
                          ? (f.is_unsigned ? it < f.bound : static_cast<int32_t>(it) < static_cast<int32_t>(f.bound))
                          : (f.is_unsigned ? it > f.bound : static_cast<int32_t>(it) > static_cast<int32_t>(f.bound));
      if (go) {
        info.loop_back = true;
        return f.start;
      }
      --st.loop_depth;
    }
    return epc + 1;
  }

  void execute(const Bundle& b, ExecInfo& info, bool checked) {
    prechecked = checked;
    for (SlotExec& e : info.slot) {   // (the reads beyond num_reads are left as they were)
      e.op = Op::Nop;
      e.executed = false;
      e.latency = LatencyClass::None;
      e.write = RegRef{};
      e.num_reads = 0;
    }
    info.num_global = 0;
    info.branch_taken = info.loop_entered = info.loop_back = false;
    info.num_loop_steps = 0;
    info.halted = info.faulted = false;
    const uint32_t pc = st.pc;
    info.pc = pc;
    info.next_pc = pc;
    if (st.status != CoreStatus::Running) {
      info.halted = st.status == CoreStatus::Halted;
      info.faulted = st.status == CoreStatus::Faulted;
      return;
    }
    load_v.on = vpu_v.on = false;
    load_s.on = spu_s.on = false;
    vpu_p.on = false;
    spu_sp_on = spu_i_on = false;
    store_kind = StoreKind::None;
    halt = jump = loop_enter = loop_skip = false;

    bool ok = exec_load(b.slot[0], b.imm, info.slot[0], info) && exec_spu(b.slot[1], b.imm, info.slot[1]) &&
              exec_vpu(b.slot[2], b.imm, info.slot[2]) && exec_store(b.slot[3], b.imm, info.slot[3], info);
    if (ok) ok = commit_memory();
    if (!ok) {
      st.status = CoreStatus::Faulted;
      st.fault.kind = fault_kind;
      st.fault.pc = pc;
      st.fault.message = std::move(fault_msg);
      info.faulted = true;
      return;
    }
    commit_registers();
    ++st.bundles;

    uint32_t next;
    if (halt) {
      st.status = CoreStatus::Halted;
      info.halted = true;
      next = pc + 1;
    } else if (jump) {
      info.branch_taken = true;
      next = target;
    } else if (loop_enter) {
      st.loops[st.loop_depth++] = frame;
      info.loop_entered = true;
      next = pc + 1;
    } else {
      next = end_of_bundle(loop_skip ? target : pc, info);
    }
    st.pc = next;
    info.next_pc = next;
  }
};

// ---------------------------------------------------------------------------------------------

namespace {
TpcCoreConfig checked(const TpcCoreConfig& c) {
  const unsigned vb = c.vector_bits;
  if (vb < 256 || vb > 16384 || (vb & (vb - 1)) != 0)
    throw std::invalid_argument("tpc: vector_bits must be a power of two in 256..16384, not " + std::to_string(vb));
  if (c.slm_bytes % 4 != 0)
    throw std::invalid_argument("tpc: slm_bytes must be a multiple of 4, not " + std::to_string(c.slm_bytes));
  return c;
}
}  // namespace

TpcExecutor::TpcExecutor(const TpcCoreConfig& config)
    : config_(checked(config)), state_(config_), impl_(std::make_unique<Impl>(*this)) {}

TpcExecutor::~TpcExecutor() = default;

void TpcExecutor::launch(const LaunchContext& ctx) {
  for (unsigned t = 0; t < kMaxTensors; ++t) {
    const TensorDescriptor& d = ctx.tensors[t];
    if (d.dims > kDims)
      throw std::invalid_argument("tpc launch: tensor " + std::to_string(t) + " has " + std::to_string(d.dims) +
                                  " dims (at most 5)");
    if (!valid_dtype(d.dtype))
      throw std::invalid_argument("tpc launch: tensor " + std::to_string(t) + " has a bad dtype");
  }
  ctx_ = ctx;
  state_.reset(ctx);
}

void TpcExecutor::execute(const Bundle& bundle, ExecInfo& info) { impl_->execute(bundle, info, false); }

void TpcExecutor::execute_checked(const Bundle& bundle, ExecInfo& info) { impl_->execute(bundle, info, true); }

bool TpcExecutor::bundle_well_formed(const Bundle& bundle) {
  for (unsigned s = 0; s < kSlots; ++s) {
    const SlotInstr& in = bundle.slot[s];
    if (in.op != Op::Nop && check_slot(static_cast<Slot>(s), in) != nullptr) return false;
  }
  return true;
}

void TpcExecutor::raise_fault(FaultKind kind, const std::string& message) {
  state_.status = CoreStatus::Faulted;
  state_.fault = Fault{kind, state_.pc, message};
}

RunResult TpcExecutor::run(const Bundle* program, size_t count, uint64_t max_bundles) {
  RunResult r;
  ExecInfo info;
  while (state_.status == CoreStatus::Running && r.bundles < max_bundles) {
    if (state_.pc >= count) {
      raise_fault(FaultKind::FetchError, "pc " + std::to_string(state_.pc) + " is past the end of the program (" +
                                             std::to_string(count) + " bundles)");
      break;
    }
    impl_->execute(program[state_.pc], info, false);
    if (!info.faulted) ++r.bundles;
  }
  r.status = state_.status;
  return r;
}

double measure_executor_speed(uint64_t bundles, unsigned vector_bits, DType mac_dtype) {
  TpcCoreConfig cfg;
  cfg.vector_bits = vector_bits;
  TpcExecutor ex(cfg);
  LaunchContext ctx;
  ctx.srf[1] = static_cast<uint32_t>(std::min<uint64_t>(bundles, INT32_MAX));   // S1 = trip count
  ex.launch(ctx);
  // Normal values (no denormal slow paths) that stay finite over millions of macs: V3 = 2^-20.
  TpcCoreState& s = ex.state();
  for (unsigned r = 1; r < 8; ++r) {
    for (unsigned l = 0; l < s.lanes(mac_dtype); ++l) {
      const float f = r == 3 ? 0x1p-20f : 1.0f + static_cast<float>(l % 8) / 8;
      switch (mac_dtype) {
        case DType::F32: s.set_vlane<float>(r, l, f); break;
        case DType::BF16: s.set_vlane<uint16_t>(r, l, f32_to_bf16(f)); break;
        default: s.vreg(r)[l * elem_bits(mac_dtype) / 8] = static_cast<uint8_t>(l % 5); break;
      }
    }
  }

  std::vector<Bundle> prog(3);
  // 0: loop S2 (from 0) < S1, label 1, step 1
  prog[0][Slot::Spu] = SlotInstr{Op::Loop, 2, 1, 0, 0, DType::I32, 0, false, false, true, 1};
  prog[0].imm = 1;
  // 1: ld_mov V4 = V5 | add.i32 S3 = S3 + 1 | mac.f32 V1 += V2 * V3
  prog[1][Slot::Load] = SlotInstr{Op::LdMov, 4, 5, 0, 0, DType::F32, 0, false, false, false, 0};
  prog[1][Slot::Spu] = SlotInstr{Op::SAdd, 3, 3, 0, 0, DType::I32, 0, false, false, true, 0};
  prog[1][Slot::Vpu] = SlotInstr{Op::VMac, 1, 2, 3, 0, mac_dtype, 0, false, false, false, 0};
  prog[1].imm = 1;
  // 2: halt
  prog[2][Slot::Spu].op = Op::Halt;

  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = ex.run(prog);
  const auto t1 = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  return secs > 0 ? static_cast<double>(r.bundles) / secs : 0.0;
}

}  // namespace hpusim::tpc
