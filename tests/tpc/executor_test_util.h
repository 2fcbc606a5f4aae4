// Helpers of the TPC executor tests: building bundles directly (no assembler), an in-memory
// GlobalMemory that records its accesses, a core fixture, and random lane values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <vector>

#include "hw/tpc/executor.h"

namespace hpusim::tpc::testing {

// ---- Bundles ----

inline Slot slot_of(Op op) {
  const auto v = static_cast<unsigned>(op);
  if (v >= 192) return Slot::Store;
  if (v >= 128) return Slot::Load;
  if (v >= 64) return Slot::Vpu;
  return Slot::Spu;
}

// One slot instruction: Ins(Op::VAdd).t(DType::I8).d(1).a(2).b(3)
struct Ins {
  SlotInstr in;
  explicit Ins(Op op) { in.op = op; }
  Ins& d(unsigned r) { in.dst = static_cast<uint8_t>(r); return *this; }
  Ins& a(unsigned r) { in.src0 = static_cast<uint8_t>(r); return *this; }
  Ins& b(unsigned r) { in.src1 = static_cast<uint8_t>(r); return *this; }
  Ins& c(unsigned r) { in.src2 = static_cast<uint8_t>(r); return *this; }
  Ins& t(DType dt) { in.dtype = dt; return *this; }
  Ins& imm() { in.use_imm = true; return *this; }
  Ins& sw(unsigned s) { in.switches = static_cast<uint8_t>(s); return *this; }
  Ins& scalar() { in.switches |= kSwScalarSrc; return *this; }
  Ins& sp(unsigned p, bool invert = false) {
    in.pred = static_cast<uint8_t>(p);
    in.pred_vector = false;
    in.pred_invert = invert;
    return *this;
  }
  Ins& vp(unsigned p, bool invert = false) {
    in.pred = static_cast<uint8_t>(p);
    in.pred_vector = true;
    in.pred_invert = invert;
    return *this;
  }
  operator SlotInstr() const { return in; }   // NOLINT: implicit by design
};

// A bundle from up to four instructions (each goes to its opcode's slot) and the immediate.
inline Bundle bundle(std::initializer_list<Ins> ins, uint32_t imm = 0) {
  Bundle b;
  for (const Ins& i : ins) {
    if (b[slot_of(i.in.op)].op != Op::Nop) ADD_FAILURE() << "two instructions for one slot in a test bundle";
    b[slot_of(i.in.op)] = i.in;
  }
  b.imm = imm;
  return b;
}
inline Bundle halt_bundle() { return bundle({Ins(Op::Halt)}); }
inline uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bitsf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// ---- Global memory ----

// A flat byte array at [base, base + size); accesses outside it, or touching `refuse_*`, fail.
class TestMemory : public GlobalMemory {
 public:
  struct Access {
    uint64_t address;
    uint32_t bytes;
    bool is_write;
  };
  explicit TestMemory(uint64_t base = 0x10000, size_t size = 1 << 20) : base_(base), bytes_(size, 0xEE) {}

  bool access(uint64_t address, uint32_t bytes, void* data, bool is_write) override {
    log.push_back({address, bytes, is_write});
    if (address < base_ || address - base_ > bytes_.size() || bytes_.size() - (address - base_) < bytes) return false;
    if (refuse_bytes != 0 && address < refuse_at + refuse_bytes && refuse_at < address + bytes) return false;
    uint8_t* p = bytes_.data() + (address - base_);
    if (is_write) std::memcpy(p, data, bytes);
    else std::memcpy(data, p, bytes);
    return true;
  }

  uint64_t base() const { return base_; }
  uint8_t* at(uint64_t address) { return bytes_.data() + (address - base_); }
  template <class T> T get(uint64_t address) const {
    T v;
    std::memcpy(&v, bytes_.data() + (address - base_), sizeof(T));
    return v;
  }
  template <class T> void set(uint64_t address, T v) { std::memcpy(bytes_.data() + (address - base_), &v, sizeof(T)); }
  void fill(uint8_t v) { std::fill(bytes_.begin(), bytes_.end(), v); }

  std::vector<Access> log;
  uint64_t refuse_at = 0;
  uint64_t refuse_bytes = 0;

 private:
  uint64_t base_;
  std::vector<uint8_t> bytes_;
};

// ---- A core ----

struct Core {
  explicit Core(unsigned vector_bits = 2048) : ex(config(vector_bits)) {
    ex.set_global_memory(&mem);
    ex.launch(ctx);
  }
  static TpcCoreConfig config(unsigned vector_bits) {
    TpcCoreConfig c;
    c.vector_bits = vector_bits;
    return c;
  }
  TpcCoreState& st() { return ex.state(); }
  void launch() { ex.launch(ctx); }
  // Executes one bundle as if it were at pc (default 0); the core must be running.
  ExecInfo exec(const Bundle& b, uint32_t pc = 0) {
    st().pc = pc;
    ExecInfo info;
    ex.execute(b, info);
    return info;
  }
  RunResult run(const std::vector<Bundle>& prog, uint64_t max = 10'000'000) { return ex.run(prog, max); }
  unsigned lanes(DType t) { return st().lanes(t); }

  TestMemory mem;
  LaunchContext ctx;
  TpcExecutor ex;
};

// ---- Random lane values ----

// Raw element bits of dtype t, biased towards interesting values (zeros, infinities, NaN,
// subnormals, extremes, small integers) a quarter of the time.
class LaneRandom {
 public:
  explicit LaneRandom(uint64_t seed) : rng_(seed) {}
  uint32_t u32() { return static_cast<uint32_t>(rng_()); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }

  uint32_t f32_bits() {
    static const uint32_t special[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
                                       0x7F800001, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
                                       0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000, 0x4B000000, 0x4F000000,
                                       0xCF000000, 0x4F800000, 0x3F7FFFFF, 0x3F800001};
    switch (below(8)) {
      case 0: return special[below(sizeof special / sizeof special[0])];
      case 1: return fbits(static_cast<float>(static_cast<int32_t>(below(2001)) - 1000));   // small integers
      case 2: return fbits(std::ldexp(static_cast<float>(below(1 << 24)), static_cast<int>(below(60)) - 40));
      default: return u32();
    }
  }
  uint16_t bf16_bits() {
    if (below(4) == 0) return static_cast<uint16_t>(f32_bits() >> 16);
    return static_cast<uint16_t>(u32());
  }
  uint32_t int_bits(unsigned bits) {
    const uint32_t mask = bits == 32 ? 0xFFFFFFFFu : (1u << bits) - 1;
    switch (below(6)) {
      case 0: {
        static const uint32_t edge[] = {0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 2, 0xFFFFFFFE};
        uint32_t v = edge[below(7)];
        if (bits < 32 && (v == 0x7FFFFFFF || v == 0x80000000)) v = v == 0x7FFFFFFF ? (mask >> 1) : ((mask >> 1) + 1);
        return v & mask;
      }
      case 1: return static_cast<uint32_t>(static_cast<int32_t>(below(65)) - 32) & mask;
      default: return u32() & mask;
    }
  }
  uint32_t elem(DType t) {
    switch (t) {
      case DType::F32: return f32_bits();
      case DType::BF16: return bf16_bits();
      default: return int_bits(dtype_bits(t));
    }
  }
  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

// Raw lane access of a vector register by element width.
inline uint32_t lane_bits(const TpcCoreState& s, unsigned reg, DType t, unsigned lane) {
  switch (dtype_bits(t)) {
    case 32: return s.vlane<uint32_t>(reg, lane);
    case 16: return s.vlane<uint16_t>(reg, lane);
    default: return s.vlane<uint8_t>(reg, lane);
  }
}
inline void set_lane_bits(TpcCoreState& s, unsigned reg, DType t, unsigned lane, uint32_t v) {
  switch (dtype_bits(t)) {
    case 32: s.set_vlane<uint32_t>(reg, lane, v); break;
    case 16: s.set_vlane<uint16_t>(reg, lane, static_cast<uint16_t>(v)); break;
    default: s.set_vlane<uint8_t>(reg, lane, static_cast<uint8_t>(v)); break;
  }
}
inline void randomize(Core& c, unsigned reg, DType t, LaneRandom& r) {
  for (unsigned l = 0; l < c.lanes(t); ++l) set_lane_bits(c.st(), reg, t, l, r.elem(t));
}

inline const DType kAllTypes[] = {DType::F32, DType::BF16, DType::I32, DType::I16,
                                  DType::I8,  DType::U32,  DType::U16, DType::U8};

}  // namespace hpusim::tpc::testing
