// Helpers of the TPC kernel library tests: host tensors (f32 / bf16 element bits, optional
// strides) in an in-memory GlobalMemory, running an instantiation on N simulated cores
// (TpcExecutor, the index space split by partition_index_space), number formats and ulp distance.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "hw/tpc/executor.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels::testing {

using tpc::DType;

// ---- Number formats (independent of arch/tpc/numerics.h) ----

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// f32 -> bf16, round to nearest even; NaN stays NaN.
inline uint16_t to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint32_t lower = u & 0xFFFF, upper = u >> 16;
  const bool up = lower > 0x8000 || (lower == 0x8000 && (upper & 1));
  return static_cast<uint16_t>(upper + (up ? 1 : 0));
}
inline float from_bf16(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }
// double -> bf16 correctly rounded (nearest even) without a double rounding through f32.
inline uint16_t double_to_bf16(double x) {
  if (std::isnan(x)) return 0x7FC0;
  const float f = static_cast<float>(x);   // nearest f32
  const uint16_t lo = static_cast<uint16_t>(bits_of(f) >> 16);   // truncation of f toward zero
  // The two bf16 candidates around x (by magnitude): lo and lo + 1; pick by the exact midpoint.
  const float a = from_bf16(lo), b = from_bf16(static_cast<uint16_t>(lo + 1));
  if (std::isinf(a)) return lo;
  const double da = std::fabs(x - static_cast<double>(a));
  const double db = std::isinf(b) ? INFINITY : std::fabs(static_cast<double>(b) - x);
  if (da < db) return lo;
  if (db < da) return static_cast<uint16_t>(lo + 1);
  return (lo & 1) ? static_cast<uint16_t>(lo + 1) : lo;
}

// The value of an element's bits as a float.
inline float value_of(DType t, uint32_t bits) {
  return t == DType::F32 ? float_of(bits) : from_bf16(static_cast<uint16_t>(bits));
}
// A float rounded to the dtype, as element bits.
inline uint32_t round_to(DType t, float f) { return t == DType::F32 ? bits_of(f) : to_bf16(f); }
inline uint32_t round_to(DType t, double x) {
  return t == DType::F32 ? bits_of(static_cast<float>(x)) : double_to_bf16(x);
}

// Distance in units in the last place between two values of dtype t (NaN vs NaN: 0; NaN vs
// number: huge). Works through the sign-magnitude ordering of the bits.
inline int64_t ulp_distance(DType t, uint32_t a, uint32_t b) {
  const float fa = value_of(t, a), fb = value_of(t, b);
  if (std::isnan(fa) || std::isnan(fb)) return std::isnan(fa) && std::isnan(fb) ? 0 : INT64_MAX;
  auto ordered = [&](uint32_t v) -> int64_t {
    const unsigned bits = t == DType::F32 ? 32 : 16;
    const uint32_t sign = 1u << (bits - 1);
    return (v & sign) ? -static_cast<int64_t>(v & (sign - 1)) : static_cast<int64_t>(v);
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// ---- Tensors ----

struct HostTensor {
  DType dtype = DType::F32;
  std::vector<uint32_t> shape;    // dim 0 innermost
  std::vector<int64_t> strides;   // empty: dense
  std::vector<uint32_t> data;     // element bits in dense order (dim 0 fastest)

  HostTensor() = default;
  HostTensor(DType t, std::vector<uint32_t> s, std::vector<int64_t> st = {})
      : dtype(t), shape(std::move(s)), strides(std::move(st)), data(count(), 0) {}
  size_t count() const {
    size_t n = 1;
    for (uint32_t d : shape) n *= d;
    return n;
  }
  TensorParams params() const { return {dtype, shape, strides}; }
  unsigned elem_bytes() const { return tpc::dtype_bits(dtype) / 8; }
  uint32_t dim(unsigned d) const { return d < shape.size() ? shape[d] : 1; }
  int64_t stride(unsigned d) const {
    if (d < strides.size()) return strides[d];
    int64_t s = 1;
    for (unsigned k = 0; k < d && k < shape.size(); ++k) s *= shape[k];
    return s;
  }
  // Elements spanned in memory (strides may leave gaps).
  int64_t span() const {
    int64_t last = 0;
    for (unsigned d = 0; d < shape.size(); ++d) last += (static_cast<int64_t>(shape[d]) - 1) * stride(d);
    return last + 1;
  }
  float at(size_t i) const { return value_of(dtype, data[i]); }
};

// Fills a tensor with values from gen, rounded to its dtype.
inline void fill(HostTensor& t, const std::function<float()>& gen) {
  for (uint32_t& v : t.data) v = round_to(t.dtype, gen());
}

// ---- Memory and launch ----

inline constexpr uint8_t kSentinel = 0xEE;

// A flat memory at [kBase, kBase + size) with a bump allocator; unallocated bytes hold kSentinel.
class SimMemory : public tpc::GlobalMemory {
 public:
  static constexpr uint64_t kBase = 0x100000;
  uint64_t alloc(uint64_t bytes) {
    const uint64_t addr = kBase + bytes_.size();
    constexpr uint64_t kPad = KernelLibrary::kMaxVectorBits / 8;   // room for the widest vector
    bytes_.resize(bytes_.size() + ((bytes + kPad - 1) / kPad + 1) * kPad, kSentinel);
    return addr;
  }
  bool access(uint64_t address, uint32_t bytes, void* data, bool is_write) override {
    if (address < kBase || address - kBase + bytes > bytes_.size()) return false;
    uint8_t* p = bytes_.data() + (address - kBase);
    if (is_write) std::memcpy(p, data, bytes);
    else std::memcpy(data, p, bytes);
    ++accesses;
    return true;
  }
  uint8_t* at(uint64_t address) { return bytes_.data() + (address - kBase); }
  uint64_t accesses = 0;

 private:
  std::vector<uint8_t> bytes_;
};

// Writes (or reads back) a tensor through its strides.
inline void store_tensor(SimMemory& mem, uint64_t base, const HostTensor& t) {
  for (size_t i = 0; i < t.count(); ++i) {
    size_t rest = i;
    int64_t off = 0;
    for (unsigned d = 0; d < t.shape.size(); ++d) {
      off += static_cast<int64_t>(rest % t.shape[d]) * t.stride(d);
      rest /= t.shape[d];
    }
    std::memcpy(mem.at(base + off * t.elem_bytes()), &t.data[i], t.elem_bytes());
  }
}
inline void load_tensor(SimMemory& mem, uint64_t base, HostTensor& t) {
  for (size_t i = 0; i < t.count(); ++i) {
    size_t rest = i;
    int64_t off = 0;
    for (unsigned d = 0; d < t.shape.size(); ++d) {
      off += static_cast<int64_t>(rest % t.shape[d]) * t.stride(d);
      rest /= t.shape[d];
    }
    uint32_t v = 0;
    std::memcpy(&v, mem.at(base + off * t.elem_bytes()), t.elem_bytes());
    t.data[i] = v;
  }
}
// Every byte of the output's span that is not an element still holds the sentinel.
inline bool gaps_untouched(SimMemory& mem, uint64_t base, const HostTensor& t) {
  std::vector<bool> is_elem(static_cast<size_t>(t.span()), false);
  for (size_t i = 0; i < t.count(); ++i) {
    size_t rest = i;
    int64_t off = 0;
    for (unsigned d = 0; d < t.shape.size(); ++d) {
      off += static_cast<int64_t>(rest % t.shape[d]) * t.stride(d);
      rest /= t.shape[d];
    }
    is_elem[static_cast<size_t>(off)] = true;
  }
  for (size_t e = 0; e < is_elem.size(); ++e)
    if (!is_elem[e])
      for (unsigned b = 0; b < t.elem_bytes(); ++b)
        if (*mem.at(base + e * t.elem_bytes() + b) != kSentinel) return false;
  // And the bytes right after the span (the last vector's lanes past the end, up to the widest
  // vector).
  for (unsigned b = 0; b < KernelLibrary::kMaxVectorBits / 8; ++b)
    if (*mem.at(base + t.span() * t.elem_bytes() + b) != kSentinel) return false;
  return true;
}

struct RunOutcome {
  bool ok = false;
  std::string error;
  size_t cores_used = 0;
  uint64_t bundles = 0;
  // The cycles the bundles take to issue on an in-order core whose scoreboard waits for each
  // register a bundle reads or writes (latencies: scalar 1, vector 4, special functions 8, loads
  // 4 as if every one hit the prefetch buffer); summed over the cores. What a kernel's schedule
  // costs apart from the memory.
  uint64_t issue_cycles = 0;
  bool gaps_ok = true;
  size_t parts = 0;   // launches (1, or a node's parts)
};

inline RunOutcome run_instantiated(const InstantiateResult& r, const std::vector<HostTensor>& inputs,
                                   std::vector<HostTensor>& outputs, unsigned cores, unsigned vector_bits);

// Instantiates `guid`, runs it on `cores` simulated cores (partition_index_space) over the
// tensors in a fresh memory, and reads the outputs back into `outputs` (their shapes given).
// With `then`, the kernel fused with those unary kernels (KernelLibrary::instantiate_fused); with
// `vector_bits`, the library and the cores of that vector width.
inline RunOutcome run_kernel(const std::string& guid, const std::vector<HostTensor>& inputs,
                             std::vector<HostTensor>& outputs, unsigned cores,
                             const std::vector<float>& scalars = {}, const std::vector<std::string>& then = {},
                             unsigned vector_bits = KernelLibrary::kDefaultVectorBits) {
  KernelParams p;
  for (const HostTensor& t : inputs) p.inputs.push_back(t.params());
  for (const HostTensor& t : outputs) p.outputs.push_back(t.params());
  p.scalars = scalars;
  KernelLibrary& library = KernelLibrary::instance(vector_bits);
  const InstantiateResult r = then.empty() ? library.instantiate(guid, p) : library.instantiate_fused(guid, p, then);
  return run_instantiated(r, inputs, outputs, cores, vector_bits);
}

// TpcExecutor::run's loop, also adding to *cycles the issue cycles RunOutcome::issue_cycles describes.
inline tpc::RunResult run_counting_issue_cycles(tpc::TpcExecutor& ex, const std::vector<tpc::Bundle>& program,
                                                uint64_t* cycles, uint64_t max_bundles = 100'000'000) {
  tpc::RunResult r;
  tpc::ExecInfo info;
  std::map<std::pair<int, int>, uint64_t> ready;   // (register file, index) -> the cycle its value is ready
  const auto key = [](const tpc::RegRef& reg) { return std::make_pair(static_cast<int>(reg.file), static_cast<int>(reg.index)); };
  uint64_t cycle = 0;
  while (ex.state().status == tpc::CoreStatus::Running && r.bundles < max_bundles && ex.state().pc < program.size()) {
    ex.execute(program[ex.state().pc], info);
    if (info.faulted) break;
    ++r.bundles;
    uint64_t issue = cycle;
    for (const tpc::SlotExec& slot : info.slot) {
      for (unsigned k = 0; k < slot.num_reads; ++k) {
        const auto it = ready.find(key(slot.reads[k]));
        if (it != ready.end()) issue = std::max(issue, it->second);
      }
      if (slot.write.file != tpc::RegFile::None) {
        const auto it = ready.find(key(slot.write));
        if (it != ready.end()) issue = std::max(issue, it->second);
      }
    }
    for (const tpc::SlotExec& slot : info.slot) {
      if (slot.write.file == tpc::RegFile::None || !slot.executed) continue;
      const unsigned latency = slot.latency == tpc::LatencyClass::Spu       ? 1
                               : slot.latency == tpc::LatencyClass::Special ? 8
                               : slot.latency == tpc::LatencyClass::None    ? 0
                                                                            : 4;
      ready[key(slot.write)] = issue + latency;
    }
    cycle = issue + 1;
  }
  if (ex.state().status == tpc::CoreStatus::Running && ex.state().pc >= program.size())
    ex.raise_fault(tpc::FaultKind::FetchError, "pc past the end of the program");
  *cycles += cycle;
  r.status = ex.state().status;
  return r;
}

// The same for an instantiation already made (an elementwise cluster's, for one).
inline RunOutcome run_instantiated(const InstantiateResult& r, const std::vector<HostTensor>& inputs,
                                   std::vector<HostTensor>& outputs, unsigned cores, unsigned vector_bits) {
  RunOutcome out;
  if (!r.ok()) {
    out.error = std::string(glue_status_name(r.status)) + ": " + r.message;
    return out;
  }
  SimMemory mem;
  std::vector<uint64_t> in_bases, out_bases;
  for (const HostTensor& t : inputs) in_bases.push_back(mem.alloc(t.span() * t.elem_bytes()));
  for (const HostTensor& t : outputs) out_bases.push_back(mem.alloc(t.span() * t.elem_bytes()));
  for (size_t k = 0; k < inputs.size(); ++k) store_tensor(mem, in_bases[k], inputs[k]);
  // A node of several launches: each part over its tensors (the node's, then its scratch), in order.
  std::vector<uint64_t> bases = in_bases;
  bases.insert(bases.end(), out_bases.begin(), out_bases.end());
  for (uint64_t bytes : r.scratch_bytes) bases.push_back(mem.alloc(bytes));
  std::vector<std::pair<const Instantiation*, std::vector<uint32_t>>> launches;
  if (r.inst) {
    std::vector<uint32_t> all(inputs.size() + outputs.size());
    for (uint32_t k = 0; k < all.size(); ++k) all[k] = k;
    launches.emplace_back(&*r.inst, all);
  }
  for (const KernelPart& part : r.parts) launches.emplace_back(&part.inst, part.tensors);
  out.parts = launches.size();
  for (const auto& [inst, tensors] : launches) {
    std::vector<uint64_t> ins, outs;
    for (size_t k = 0; k < tensors.size(); ++k) (k < inst->inputs.size() ? ins : outs).push_back(bases.at(tensors[k]));
    const auto slices = partition_index_space(inst->ispace_geometry, cores);
    out.cores_used = std::max(out.cores_used, slices.size());
    for (const CoreSlice& s : slices) {
      tpc::TpcCoreConfig config;
      config.vector_bits = vector_bits;
      tpc::TpcExecutor ex(config);
      ex.set_global_memory(&mem);
      ex.launch(inst->launch_context(ins, outs, s.offset, s.size));
      const tpc::RunResult res = run_counting_issue_cycles(ex, inst->program->bundles, &out.issue_cycles);
      out.bundles += res.bundles;
      if (res.status != tpc::CoreStatus::Halted) {
        out.error = "core did not halt: " + ex.state().fault.message;
        return out;
      }
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    load_tensor(mem, out_bases[k], outputs[k]);
    out.gaps_ok = out.gaps_ok && gaps_untouched(mem, out_bases[k], outputs[k]);
  }
  out.ok = true;
  return out;
}

// The input element a broadcast output element reads: dims of size 1 (and missing outer dims)
// use index 0.
inline size_t broadcast_index(const HostTensor& in, const HostTensor& out, size_t i) {
  size_t rest = i, idx = 0, mul = 1;
  for (unsigned d = 0; d < 5; ++d) {
    const uint32_t od = out.dim(d);
    const uint32_t c = static_cast<uint32_t>(rest % od);
    rest /= od;
    if (d < in.shape.size()) {
      idx += (in.shape[d] == 1 ? 0 : c) * mul;
      mul *= in.shape[d];
    }
  }
  return idx;
}


// ---- helpers the batch tests share ----
inline void fill_uniform(HostTensor& t, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (uint32_t& v : t.data) v = round_to(t.dtype, u(rng));
}
// Runs `guid` on 1 and on 8 cores; both must succeed, write nothing outside the outputs, and give
// the same bits. Returns the 1-core outputs.
inline std::vector<HostTensor> run_1_and_8(const std::string& guid, const std::vector<HostTensor>& inputs,
                                    const std::vector<HostTensor>& outputs, const std::vector<float>& scalars = {}) {
  std::vector<HostTensor> one = outputs, eight = outputs;
  const RunOutcome r1 = run_kernel(guid, inputs, one, 1, scalars);
  EXPECT_TRUE(r1.ok) << guid << ": " << r1.error;
  EXPECT_TRUE(r1.gaps_ok) << guid << ": 1 core wrote outside the outputs' elements";
  const RunOutcome r8 = run_kernel(guid, inputs, eight, 8, scalars);
  EXPECT_TRUE(r8.ok) << guid << ": " << r8.error;
  EXPECT_TRUE(r8.gaps_ok) << guid << ": 8 cores wrote outside the outputs' elements";
  for (size_t k = 0; k < one.size(); ++k) EXPECT_EQ(one[k].data, eight[k].data) << guid << ": 1 vs 8 cores, output " << k;
  return one;
}
inline TensorParams tp(DType t, std::vector<uint32_t> shape) { return {t, std::move(shape), {}}; }
inline void expect_error(const InstantiateResult& r, GlueStatus status, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, status) << glue_status_name(r.status) << ": " << r.message;
  for (const std::string& part : parts) EXPECT_NE(r.message.find(part), std::string::npos) << r.message << " / " << part;
}
// Dense index of coordinates c in shape s (dim 0 fastest), and back.
inline size_t linear(const std::vector<uint32_t>& s, const std::array<uint32_t, 5>& c) {
  size_t i = 0, mul = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    i += c[d] * mul;
    mul *= s[d];
  }
  return i;
}
inline std::array<uint32_t, 5> coords(const std::vector<uint32_t>& s, size_t i) {
  std::array<uint32_t, 5> c{};
  for (size_t d = 0; d < s.size(); ++d) {
    c[d] = static_cast<uint32_t>(i % s[d]);
    i /= s[d];
  }
  return c;
}

// The random generator's mixing function (Wellons' lowbias32), as the README documents it for
// dropout_fwd and the random fills: element i draws mix32(i ^ mix32(seed ^ 0x9e3779b9)).
inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

}  // namespace hpusim::synapse::tpc_kernels::testing
