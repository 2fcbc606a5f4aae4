// The functional core of a TPC: architectural state and the execution of one bundle at a time,
// exactly per ISA.md, without time. The cycle model (a SystemC module) fetches bundles, calls
// TpcExecutor::execute() and uses the ExecInfo it fills (registers read and written per slot,
// latency class, global accesses, control flow) for its scoreboard, its fabric traffic and its
// timing. Global memory is reached through the GlobalMemory interface, one call per tensor access.
//
// Readings of ISA.md / isa.h where the text leaves a choice (each is tested):
//  * Read/write order. Every slot reads its sources (registers, SLM/VLM, global memory) before any
//    slot writes. Then the Store slot's memory write is made (global first: a refused store faults
//    the bundle before any register changes, so a faulting bundle has no architectural effect),
//    then register writes in slot order Load, SPU, VPU. Two slots writing the same register: the
//    later slot's value wins in the lanes both write (disjoint vector predicates merge). A loop
//    iterator is stepped after the bundle's writes.
//  * Operand kinds follow op_table.cpp (the executor does not link it; its own static check
//    mirrors decode()): use_imm replaces the op's one immediate-capable operand: src1 of two-source
//    SPU / VPU ops, src0 of mov, imov_dim, iadd_dim, ld_smov, imov (all dims), and the address of
//    ld_slm / ld_vlm / st_slm / st_vlm; other ops ignore it. The VorS operand (src0 of VPU mov,
//    src1 of add, sub, mul, mac, min, max, and, or, xor, shl, shr, cmp, sel, div) is the broadcast
//    immediate with use_imm, else a broadcast scalar register with kSwScalarSrc, else a vector
//    register. Labels of jmp / loop are always the immediate. Decode-level errors (opcode not in
//    its slot, register beyond its file, bad dtype / switches for the op) fault even when the
//    slot's predicate is false; a tensor number >= 16 is a BadTensor fault likewise.
//  * A scalar (register or immediate) used as a vector element of dtype t: f32 the bits; bf16 the
//    f32 value rounded to bf16 (nearest even); integers the low bits. A bf16 element held in a
//    scalar register (ld_tnsr_s, convert to bf16) is its f32 value; narrow integers are sign- or
//    zero-extended to 32 bits. SConvert reads its source the same way (low bits of an integer).
//  * SPU arithmetic takes f32, i32 and u32 (other dtypes are an illegal instruction); mov, the
//    index, predicate and control ops ignore the dtype; loop always compares
//    signed (ISA.md). Shifts of float dtypes and integer VDiv / VSpecial are illegal instructions.
//  * mac (f32 and bf16) is not fused: the product is rounded to f32, then the sum (ISA.md's bf16
//    rule, applied to f32 too). min / max are IEEE 754-2019 minimum / maximum (NaN in -> NaN,
//    -0 < +0). NaN payloads are not specified. Integer division rounds toward zero and
//    INT_MIN / -1 wraps to INT_MIN.
//  * Conversions: integer -> narrower integer saturates, like float -> integer (ISA.md only names
//    the latter). Same lane count: all lanes convert; narrowing writes destination lanes
//    part*n .. part*n+n-1 (n = source lanes), widening converts source lanes part*n .. (n = dest
//    lanes); a part beyond the ratio is an illegal instruction. Vector predicates act on
//    destination lanes.
//  * Predicates: SPMov / VPMov copy SPa / VPa, or, with kSwPredConst in switches, write the constant
//    kSwPredTrue ? true : false. VP logic (mov, not, and, or) acts on all vector_bits/8 bits. VCmp
//    writes bits 0..lanes(dtype)-1 and clears the bits above. A vector predicate on a Load op
//    with a scalar destination is an illegal instruction.
//  * Reduce: the f32 add tree of ISA.md; bf16 add uses the same tree in f32 and rounds once.
//    Integer add wraps. max / min as the elementwise ops. A vector predicate masks the writes.
//    Shuffle indices are the raw lane bits of Vb (unsigned, also for f32 / bf16) modulo lanes.
//    Lane id takes integer dtypes (wrapping: lane 255 of i8 is -1).
//  * ExecInfo: a slot whose scalar predicate is false lists its predicate as its only read and
//    writes nothing. Load-slot moves (ld_mov, ld_smov) are LatencyClass::Local, as are tensor
//    loads that touched no memory (all lanes padding).
//  * Loops: `loop Sd, Sa, label`: iterator dst, bound src0 (read once), step the signed switches;
//    the loop bundle's other slots run once. Loop bodies whose last bundle is shared step the
//    inner loop first; a skipped (zero-trip) loop whose label ends an enclosing body steps that
//    loop. The iterator wraps like any i32 / u32 add. A taken jmp in a body's last bundle
//    wins over the loop-back (the loop is not stepped); jumping out of a body leaves its frame on
//    the loop stack. Executing a loop instruction (predicate true) while 4 loops are active faults,
//    whether or not it would iterate; step 0 and a label not after the loop bundle are illegal.
//  * Tensors: lanes = vector_bits / bits(descriptor dtype) (the slot's dtype is not used); dim 0
//    is contiguous (stride[0] is ignored); dims at or beyond `dims` have size 1, so a non-zero
//    coordinate there is out of the tensor; a descriptor with dims == 0 was not set by the launch
//    and using it faults like a tensor number >= 16. The padding is the low bits(dtype) bits of
//    the 32-bit padding value. ld_tnsr under a vector predicate still reads all in-bounds lanes.
//  * Faults are precise: the faulting bundle changes no register, pc stays at it; launch() clears
//    everything, so the next launch works.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arch/tpc/isa.h"
#include "arch/tpc/launch_context.h"

namespace hpusim::tpc {

// dtype_bits() / dtype_is_float() of isa.h, inline for the executor's hot paths.
inline unsigned elem_bits(DType t) {
  static constexpr uint8_t kBits[8] = {32, 16, 32, 16, 8, 32, 16, 8};
  return kBits[static_cast<uint8_t>(t) & 7];
}
inline bool elem_is_float(DType t) { return t == DType::F32 || t == DType::BF16; }

// Switches of SPMov / VPMov (see above).
inline constexpr uint8_t kSwPredConst = 0x02;   // arch/tpc/asm/syntax.h: bit 1 = constant,
inline constexpr uint8_t kSwPredTrue = 0x01;    // bit 0 = its value

struct TpcCoreConfig {
  unsigned vector_bits = 2048;   // a power of two, 256 .. 16384
  uint32_t slm_bytes = 1024;     // a multiple of 4
  uint32_t vlm_bytes = 80 * 1024;
};

// Global memory as the executor sees it: one call per tensor instruction, for the in-bounds
// contiguous span. Returns false on an access error (the core faults).
class GlobalMemory {
 public:
  virtual ~GlobalMemory() = default;
  virtual bool access(uint64_t address, uint32_t bytes, void* data, bool is_write) = 0;
};

enum class CoreStatus : uint8_t { Idle, Running, Halted, Faulted };

enum class FaultKind : uint8_t {
  None,
  IllegalInstruction,   // opcode not in its slot, register out of range, bad dtype / switches ...
  FetchError,           // pc past the program, or the fetch failed (raised by the fetcher)
  GlobalAccess,         // the memory refused a tensor access, or no memory is attached
  LocalAccess,          // SLM / VLM access out of range or misaligned
  DivideByZero,         // integer division by zero
  LoopTooDeep,          // a fifth nested loop
  BadTensor,            // tensor number >= 16, or a descriptor the launch did not set
};
const char* fault_kind_name(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::None;
  uint32_t pc = 0;
  std::string message;
};

struct LoopFrame {
  uint32_t start = 0;      // first bundle of the body
  uint32_t end = 0;        // last bundle of the body (the label)
  uint32_t bound = 0;      // read once, at the loop bundle
  int8_t step = 0;
  uint8_t iter = 0;        // iterator scalar register
  bool is_unsigned = false;
};

// The architectural state of one core. Registers are public for the wrapper and the tests;
// vector registers and predicates go through the accessors (their size is a runtime parameter).
class TpcCoreState {
 public:
  explicit TpcCoreState(const TpcCoreConfig& config);

  unsigned vector_bits() const { return vector_bits_; }
  unsigned vector_bytes() const { return vector_bits_ / 8; }
  unsigned lanes(DType t) const { return vector_bits_ / elem_bits(t); }
  unsigned pred_lanes() const { return vector_bits_ / 8; }   // bits of a vector predicate

  uint8_t* vreg(unsigned r) { return vregs_.get() + static_cast<size_t>(r) * vector_bytes(); }
  const uint8_t* vreg(unsigned r) const { return vregs_.get() + static_cast<size_t>(r) * vector_bytes(); }
  template <class T> T vlane(unsigned r, unsigned lane) const {
    T v;
    std::memcpy(&v, vreg(r) + static_cast<size_t>(lane) * sizeof(T), sizeof(T));
    return v;
  }
  template <class T> void set_vlane(unsigned r, unsigned lane, T v) {
    std::memcpy(vreg(r) + static_cast<size_t>(lane) * sizeof(T), &v, sizeof(T));
  }
  // One byte (0 or 1) per predicate bit.
  uint8_t* vpred(unsigned p) { return vpreds_.get() + static_cast<size_t>(p) * pred_lanes(); }
  const uint8_t* vpred(unsigned p) const { return vpreds_.get() + static_cast<size_t>(p) * pred_lanes(); }
  bool vpred_bit(unsigned p, unsigned lane) const { return vpred(p)[lane] != 0; }
  void set_vpred_bit(unsigned p, unsigned lane, bool v) { vpred(p)[lane] = v ? 1 : 0; }

  // The launch state: S0..S31 = SRF, everything else zero, SP0 / VP0 true, pc 0, Running.
  void reset(const LaunchContext& ctx);

  std::array<uint32_t, kScalarRegs> s{};
  std::array<std::array<int32_t, kDims>, kIndexRegs> i{};
  std::array<bool, kScalarPreds> sp{};
  std::vector<uint8_t> slm;
  std::vector<uint8_t> vlm;
  std::array<LoopFrame, kLoopDepth> loops{};
  unsigned loop_depth = 0;
  uint32_t pc = 0;
  CoreStatus status = CoreStatus::Idle;
  Fault fault;
  uint64_t bundles = 0;    // bundles executed since the launch

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  unsigned vector_bits_;
  std::unique_ptr<uint8_t[], FreeDeleter> vregs_;
  std::unique_ptr<uint8_t[], FreeDeleter> vpreds_;
};

// ---- What one executed bundle did, for the timing model ----

// Which pipeline latency a slot's result has (preset `tpc`: spu_latency, vpu_latency,
// special_latency, local_latency; GlobalLoad: when the memory's response arrives). Load-slot
// moves (ld_mov, ld_s_mov) and tensor loads that touched no memory (all padding) are Local.
enum class LatencyClass : uint8_t { None, Spu, Vpu, Special, Local, GlobalLoad };
const char* latency_class_name(LatencyClass c);

enum class RegFile : uint8_t { None, V, S, I, SP, VP };

struct RegRef {
  RegFile file = RegFile::None;
  uint8_t index = 0;
  bool operator==(const RegRef& o) const { return file == o.file && index == o.index; }
  bool operator!=(const RegRef& o) const { return !(*this == o); }
};

inline constexpr unsigned kMaxSlotReads = 6;

struct SlotExec {
  Op op = Op::Nop;
  bool executed = false;   // not a NOP and its scalar predicate held (a vector predicate may
                           // still mask every lane)
  LatencyClass latency = LatencyClass::None;
  RegRef write;            // the register written (SP0 / VP0 writes are dropped: none)
  uint8_t num_reads = 0;   // registers read at issue (SP0 / VP0 are not listed); a slot whose
                           // predicate failed lists its predicate only. A destination merged
                           // with (vector predicate, mac, partial convert) is listed as read.
  std::array<RegRef, kMaxSlotReads> reads{};   // entries from num_reads on are unspecified
};

struct GlobalAccess {
  uint64_t address = 0;
  uint32_t bytes = 0;
  bool is_write = false;
  bool prefetch = false;   // a prefetch: timing only, no data and no register
  Slot slot = Slot::Load;
  RegRef dst;              // loads: the register the data goes to
};

struct ExecInfo {
  uint32_t pc = 0;         // the bundle executed
  uint32_t next_pc = 0;
  std::array<SlotExec, kSlots> slot{};   // indexed by Slot
  uint8_t num_global = 0;  // at most one load (Load slot) and one store (Store slot)
  std::array<GlobalAccess, 2> global{};
  bool branch_taken = false;   // a jmp was taken (costs tpc.branch_penalty)
  bool loop_entered = false;   // a loop instruction started iterating
  bool loop_back = false;      // the end of a loop body jumped back to its start (no cost)
  uint8_t num_loop_steps = 0;  // loop iterators stepped after this bundle (instant writes)
  std::array<uint8_t, kLoopDepth> loop_step_regs{};
  bool halted = false;         // this bundle halted the core (or the core was not running)
  bool faulted = false;        // this bundle faulted (state.fault says why)
};

struct RunResult {
  uint64_t bundles = 0;        // bundles executed by this call
  CoreStatus status = CoreStatus::Idle;
};

class TpcExecutor {
 public:
  // Throws std::invalid_argument for a bad configuration.
  explicit TpcExecutor(const TpcCoreConfig& config = {});
  ~TpcExecutor();
  TpcExecutor(const TpcExecutor&) = delete;
  TpcExecutor& operator=(const TpcExecutor&) = delete;

  const TpcCoreConfig& config() const { return config_; }
  TpcCoreState& state() { return state_; }
  const TpcCoreState& state() const { return state_; }
  const LaunchContext& launch_context() const { return ctx_; }

  void set_global_memory(GlobalMemory* memory) { memory_ = memory; }

  // Starts a kernel: resets the whole state (also after a fault). Throws std::invalid_argument
  // for a descriptor with more than 5 dims.
  void launch(const LaunchContext& ctx);

  // Executes the bundle at state().pc (the caller fetched it) and advances pc. A core that is not
  // Running does nothing (info.halted or info.faulted says why).
  void execute(const Bundle& bundle, ExecInfo& info);

  // The same for a bundle the caller has checked once with bundle_well_formed() (e.g. when it
  // decoded it into an instruction cache): skips the per-slot static check. The result is
  // identical to execute() for such a bundle.
  void execute_checked(const Bundle& bundle, ExecInfo& info);

  // True when no slot of `bundle` has a decode-level error (the static check execute() makes on
  // every non-NOP slot, predicated or not). A bundle that fails it faults in execute().
  static bool bundle_well_formed(const Bundle& bundle);

  // For the fetcher: stop the core with a fault at the current pc (e.g. a fetch error).
  void raise_fault(FaultKind kind, const std::string& message);

  // Untimed run over an in-memory program (bundle index = pc) until halt, a fault or max_bundles.
  // Fetching past the end is a FetchError fault.
  RunResult run(const Bundle* program, size_t count, uint64_t max_bundles = UINT64_MAX);
  RunResult run(const std::vector<Bundle>& program, uint64_t max_bundles = UINT64_MAX) {
    return run(program.data(), program.size(), max_bundles);
  }

 private:
  struct Impl;
  TpcCoreConfig config_;
  TpcCoreState state_;
  LaunchContext ctx_;
  GlobalMemory* memory_ = nullptr;
  std::unique_ptr<Impl> impl_;
};

// Wall-clock speed of the executor on a compute-bound loop (one bundle per iteration: a VPU mac
// of `mac_dtype`, an SPU add and a Load-slot move), in bundles per second. Not used by any test
// assertion; tests print it.
double measure_executor_speed(uint64_t bundles = 20'000'000, unsigned vector_bits = 2048,
                              DType mac_dtype = DType::F32);

}  // namespace hpusim::tpc
