// What the assembler and the disassembler share: the names of switch values, the encoding of the
// switches each op takes, operand text order and immediate formatting. ASSEMBLY.md documents all of
// it; the two must agree, so it lives in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arch/tpc/isa.h"

namespace hpusim::tpc::syntax {

// What an op's switches field holds (besides kSwScalarSrc, which goes with a VorS operand).
enum class SwitchKind : uint8_t {
  None,
  Cmp,       // Cmp value: cmp.eq/ne/lt/le/gt/ge
  Reduce,    // ReduceKind: reduce.add/max/min
  Special,   // Special: special.exp/log/rsqrt/rcp/sqrt/tanh/sigmoid
  Convert,   // [2:0] target dtype, [4:3] rounding, [6:5] part (vector convert only)
  Dim,       // the dim 0..4 of imov_dim / iadd_dim / iget_dim
  LoopStep,  // int8 step, non-zero
  PredMov,   // 0: copy src0; kPredConst | value: a constant
};
SwitchKind switch_kind(Op op);

const char* slot_name(Slot slot);   // "Load", "SPU", "VPU", "Store"

// pmov switches: bit 1 set = the destination gets a constant, bit 0 = that constant.
inline constexpr uint8_t kPredConst = 0x2;
inline constexpr uint8_t kPredConstTrue = 0x1;

// Convert switches.
inline constexpr unsigned kConvertRoundShift = 3;
inline constexpr unsigned kConvertPartShift = 5;

extern const std::vector<std::string> kCmpNames;       // by Cmp value
extern const std::vector<std::string> kReduceNames;    // by ReduceKind value
extern const std::vector<std::string> kSpecialNames;   // by Special value
extern const std::vector<std::string> kRoundingNames;  // rne, rz, rd, ru (switches[4:3])
std::optional<unsigned> find_name(const std::vector<std::string>& names, const std::string& name);

// Operand positions in the order they are written: dst, src0, src1, src2, except that a tensor
// number (src2) is written right after src0 (ld_tnsr Vd, Ia, t / st_tnsr Ia, t, Vb).
struct Field {
  const char* name;   // "dst", "src0", ...
  Operand kind;
};
std::vector<Field> text_operands(const OpInfo& info);
uint8_t field_value(const SlotInstr& s, const char* field);
void set_field(SlotInstr& s, const char* field, uint8_t value);

// Whether the op has an operand the imm flag turns into the immediate (SorImm, VorS, IorImm,
// Label), and whether it has a VorS operand.
bool has_imm_operand(const OpInfo& info);
bool has_vors_operand(const OpInfo& info);
bool has_label_operand(const OpInfo& info);

// How an immediate operand of an op is written: as a float (SPU / VPU op on a float dtype), a
// signed or unsigned integer (integer dtype), or a plain 32-bit value (no dtype, and the addresses
// of the Load and Store slots).
enum class ImmStyle : uint8_t { Float, Signed, Unsigned, Plain };
ImmStyle imm_style(const OpInfo& info, DType dtype);
std::string format_imm(uint32_t value, ImmStyle style);

// A float literal that reads back as exactly these bits, or nullopt (NaN, infinity).
std::optional<std::string> format_float(uint32_t bits);

// Register names: "V3", "SP0"... and the parse of one (case-insensitive); number may be beyond
// the file (the caller reports it).
const char* register_prefix(Operand kind);     // V, S, I, SP, VP; nullptr for other kinds
unsigned register_count(Operand kind);         // 40, 36, 8, 16, 8 (16 for Tensor)
struct RegisterName {
  Operand kind;       // V, S, I, SP or VP
  unsigned number;    // may be out of range (capped at 1e6)
};
std::optional<RegisterName> parse_register(const std::string& text);

// Type rules of ISA.md / isa.h that decode() does not check (the core faults on them): SPU
// arithmetic on f32 / i32 / u32 only, shifts and lane_id on integers, vector div and special
// functions on floats, a convert part within the lane ratio, no vector predicate on a scalar load.
// "" when the instruction obeys them, else the message.
std::string type_problem(Slot slot, const SlotInstr& s);

// Short operand descriptions for error messages and ASSEMBLY.md: "a vector register", ...
std::string describe(Operand kind);

// A name usable as a label or constant: [A-Za-z_][A-Za-z0-9_]*, not a register name, not
// true/false.
bool valid_symbol_name(const std::string& name);

}  // namespace hpusim::tpc::syntax
