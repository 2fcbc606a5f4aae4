// The hpusim TPC instruction set: the in-memory form of a VLIW bundle, the opcodes of each slot
// and their operand kinds. ISA.md is the reference (semantics, encoding, timing classes); this
// header is its machine-readable part, shared by the encoder, the assembler and the core model.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace hpusim::tpc {

// Register files (sizes are architectural; the vector width comes from the preset).
inline constexpr unsigned kVectorRegs = 40;      // V0..V39
inline constexpr unsigned kScalarRegs = 36;      // S0..S35; S0..S31 are loaded with the launch's SRFs
inline constexpr unsigned kIndexRegs = 8;        // I0..I7, each 5 x int32 (dims 0..4)
inline constexpr unsigned kScalarPreds = 16;     // SP0..SP15; SP0 is always true
inline constexpr unsigned kVectorPreds = 8;      // VP0..VP7; VP0 is always all-true
inline constexpr unsigned kDims = 5;
inline constexpr unsigned kMaxTensors = 16;
inline constexpr unsigned kLoopDepth = 4;        // nested hardware loops
inline constexpr unsigned kBundleBytes = 32;     // 256-bit bundle

enum class Slot : uint8_t { Load = 0, Spu = 1, Vpu = 2, Store = 3 };
inline constexpr unsigned kSlots = 4;

// Element types. The vector lane count of a type is vector_bits / bits(type).
enum class DType : uint8_t { F32 = 0, BF16 = 1, I32 = 2, I16 = 3, I8 = 4, U32 = 5, U16 = 6, U8 = 7 };
unsigned dtype_bits(DType t);
bool dtype_is_float(DType t);
bool dtype_is_signed(DType t);
const char* dtype_name(DType t);                  // "f32", "bf16", "i32", ...
std::optional<DType> dtype_from_name(const std::string& name);

// What an operand field names.
enum class Operand : uint8_t {
  None,
  V,      // vector register
  S,      // scalar register
  I,      // index register
  SP,     // scalar predicate
  VP,     // vector predicate
  SorImm, // scalar register, or the bundle's immediate when the slot's imm flag is set
  VorS,   // vector register, or a scalar register broadcast (switch kSwScalarSrc), or the bundle's
          // immediate broadcast when the slot's imm flag is set (as VMov's "broadcast imm")
  Tensor, // tensor descriptor number 0..15 (in the src2 field)
  Label,  // bundle index, in the bundle's immediate
  IorImm, // index register, or (imm flag) the bundle's immediate in every dim (IMov)
};

// Opcodes. Values are the encoding; 0 is NOP in every slot. The slot an opcode belongs to is in
// its OpInfo; the same mnemonic in two slots is two opcodes.
enum class Op : uint8_t {
  Nop = 0,

  // --- SPU (scalar unit, 32-bit; dtype selects f32 / i32 / u32 arithmetic) ---
  SMov = 1,         // Sd = Sa|imm
  SAdd, SSub, SMul, SMac,          // SMac: Sd += Sa * Sb
  SMin, SMax, SAbs, SNeg,
  SAnd, SOr, SXor, SNot, SShl, SShr,   // SShr: logical for unsigned dtypes, arithmetic for signed
  SDiv,             // integer division (rounds toward zero; division by 0 is a fault), f32 correctly rounded
  SCmp,             // SPd = Sa <cmp> Sb|imm  (switches: compare kind)
  SSel,             // Sd = SPc ? Sa : Sb   (SPc in src2)
  SConvert,         // Sd = convert(Sa) from dtype to switches' dtype (rounding in switches)
  SPMov,            // SPd = SPa (or constant in switches)
  SPNot, SPAnd, SPOr,
  IMovDim,          // I[d].dim[k] = Sa|imm (k in switches)
  IAddDim,          // I[d].dim[k] += Sa|imm
  IGetDim,          // Sd = I[a].dim[k]
  IMov,             // I[d] = I[a] (all dims), or all dims = imm with the imm flag
  ISpaceOffset,     // I[d] = this core's index-space offset (base of its partition)
  ISpaceSize,       // I[d] = this core's index-space size
  Loop,             // hardware loop: iterator Sd (starts at its current value) < Sa, step = switches
                    // (signed), body = next bundle .. the label bundle (inclusive)
  Jmp,              // pc = label, when the predicate holds (taken: the preset's tpc.branch_penalty cycles)
  Halt,             // the kernel ends once everything issued has completed

  // --- VPU (vector unit; lanes = vector_bits / bits(dtype)) ---
  VMov = 64,        // Vd = Va | broadcast Sa | broadcast imm
  VAdd, VSub, VMul, VMac, VMin, VMax, VAbs, VNeg,
  VAnd, VOr, VXor, VNot, VShl, VShr,
  VCmp,             // VPd = Va <cmp> Vb (per lane)
  VSel,             // Vd = VPc ? Va : Vb (per lane; VPc in src2)
  VConvert,         // Vd = convert(Va) to switches' dtype (lane-by-lane, see ISA.md for widths)
  VReduce,          // Vd lane 0 = reduce(Va) over all lanes (switches: add / max / min), other lanes 0
  VShuffle,         // Vd[i] = Va[Vb[i] mod lanes] (Vb as integer lanes of the same width)
  VSpecial,         // Vd = f(Va), f in switches: exp, log, rsqrt, rcp, sqrt, tanh, sigmoid
  VDiv,             // f32/bf16 correctly rounded division
  VLaneId,          // Vd[i] = i (integer dtype)
  VPMov, VPNot, VPAnd, VPOr,

  // --- Load slot ---
  LdTnsr = 128,     // Vd = tensor[t] at coordinates I[a] (dim 0 the vector's lanes), see ISA.md
  LdTnsrS,          // Sd = one element of tensor[t] at I[a]
  LdSlm,            // Sd = SLM[Sa|imm] (byte address, 4-byte aligned)
  LdVlm,            // Vd = VLM[Sa|imm] (byte address, aligned to the vector size)
  LdMov,            // Vd = Va (a second mover, as the real load slot has)
  LdSMov,           // Sd = Sa|imm
  Prefetch,         // start reading tensor[t] at I[a] into the prefetch buffer (timing only, see ISA.md)

  // --- Store slot ---
  StTnsr = 192,     // tensor[t] at I[a] = Vb (lanes past the tensor's dim-0 size are not written)
  StTnsrS,          // tensor[t] at I[a] = Sb (one element)
  StSlm,            // SLM[Sa|imm] = Sb
  StVlm,            // VLM[Sa|imm] = Vb
};

// Switch values (the 8-bit switches field) for the ops that take them.
enum class Cmp : uint8_t { Eq = 0, Ne, Lt, Le, Gt, Ge };
enum class ReduceKind : uint8_t { Add = 0, Max, Min };
enum class Special : uint8_t { Exp = 0, Log, Rsqrt, Rcp, Sqrt, Tanh, Sigmoid };
// Convert: switches[2:0] = target dtype, switches[4:3] = rounding (0 nearest-even, 1 toward zero,
// 2 down, 3 up); float -> int saturates, NaN -> 0.
inline constexpr uint8_t kSwScalarSrc = 0x80;    // the op's VorS operand (src0 of VMov, src1 of the others) is a scalar register

// One slot's instruction (56 bits when encoded, see ISA.md).
struct SlotInstr {
  Op op = Op::Nop;
  uint8_t dst = 0;
  uint8_t src0 = 0;
  uint8_t src1 = 0;
  uint8_t src2 = 0;
  DType dtype = DType::F32;
  uint8_t pred = 0;              // predicate register; SP0 / VP0 = always true
  bool pred_vector = false;      // pred names a VP (VPU and Load slots only)
  bool pred_invert = false;
  bool use_imm = false;          // src1 (or the label) is the bundle immediate
  uint8_t switches = 0;
  bool operator==(const SlotInstr& o) const;
  bool operator!=(const SlotInstr& o) const { return !(*this == o); }
};

struct Bundle {
  std::array<SlotInstr, kSlots> slot;   // indexed by Slot
  uint32_t imm = 0;                     // shared by every slot whose use_imm is set
  SlotInstr& operator[](Slot s) { return slot[static_cast<unsigned>(s)]; }
  const SlotInstr& operator[](Slot s) const { return slot[static_cast<unsigned>(s)]; }
  bool operator==(const Bundle& o) const { return slot == o.slot && imm == o.imm; }
};

// Static facts about an opcode: its slot, mnemonic and what each field names.
struct OpInfo {
  Op op;
  Slot slot;
  const char* mnemonic;     // lower case, e.g. "add", "ld_tnsr"
  Operand dst, src0, src1, src2;
  bool takes_dtype;
  bool takes_switches;
};
// nullptr for an opcode value that is not defined (or defined for another slot).
const OpInfo* op_info(Op op);
const OpInfo* op_info(Slot slot, const std::string& mnemonic);

// Binary form: 32 bytes per bundle, little-endian. decode() fails (nullopt, with *error set, naming
// the slot, the field and its value) on an opcode that is not defined for its slot, a register
// number beyond its file (by the operand kinds of op_info), a vector predicate in the SPU or Store
// slot, or reserved bits set. encode() throws std::invalid_argument for a value that does not fit
// its field (a register > 63, a dtype > 7, a predicate > 15); decode(encode(b)) == b for every
// bundle decode accepts, and encode(decode(bytes)) == bytes.
std::array<uint8_t, kBundleBytes> encode(const Bundle& bundle);
std::optional<Bundle> decode(const uint8_t* bytes, std::string* error = nullptr);

}  // namespace hpusim::tpc
