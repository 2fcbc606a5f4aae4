// The opcode table: for every Op its slot, mnemonic and what each field names (isa.h, ISA.md).
// arch/tpc/ASSEMBLY.md shows the assembly form of each row.
//
// Conventions the table follows:
//  - "a" is src0, "b" is src1 (isa.h's comments): a unary source that may be an immediate is an
//    SorImm src0 (mov, ld_slm, imov_dim...), the second source of a binary op is src1.
//  - The imm flag (bit 41) replaces the op's one immediate-capable operand (SorImm, VorS, IorImm)
//    and is always set for a Label operand, whose value is the bundle immediate.
//  - takes_switches means the op has modifiers in the switches field (compare kind, convert
//    target, dim, loop step...). kSwScalarSrc is separate: every op with a VorS operand uses it.
#include "arch/tpc/isa.h"

#include <array>

namespace hpusim::tpc {
namespace {

using O = Operand;
constexpr O N = O::None;

constexpr OpInfo kNop{Op::Nop, Slot::Load, "nop", N, N, N, N, false, false};

// clang-format off
constexpr OpInfo kTable[] = {
  // --- SPU ---
  {Op::SMov,         Slot::Spu,   "mov",           O::S,  O::SorImm, N,         N,         false, false},
  {Op::SAdd,         Slot::Spu,   "add",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SSub,         Slot::Spu,   "sub",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SMul,         Slot::Spu,   "mul",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SMac,         Slot::Spu,   "mac",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SMin,         Slot::Spu,   "min",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SMax,         Slot::Spu,   "max",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SAbs,         Slot::Spu,   "abs",           O::S,  O::S,      N,         N,         true,  false},
  {Op::SNeg,         Slot::Spu,   "neg",           O::S,  O::S,      N,         N,         true,  false},
  {Op::SAnd,         Slot::Spu,   "and",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SOr,          Slot::Spu,   "or",            O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SXor,         Slot::Spu,   "xor",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SNot,         Slot::Spu,   "not",           O::S,  O::S,      N,         N,         true,  false},
  {Op::SShl,         Slot::Spu,   "shl",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SShr,         Slot::Spu,   "shr",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SDiv,         Slot::Spu,   "div",           O::S,  O::S,      O::SorImm, N,         true,  false},
  {Op::SCmp,         Slot::Spu,   "cmp",           O::SP, O::S,      O::SorImm, N,         true,  true},
  {Op::SSel,         Slot::Spu,   "sel",           O::S,  O::S,      O::SorImm, O::SP,     false, false},
  {Op::SConvert,     Slot::Spu,   "convert",       O::S,  O::S,      N,         N,         true,  true},
  {Op::SPMov,        Slot::Spu,   "pmov",          O::SP, O::SP,     N,         N,         false, true},
  {Op::SPNot,        Slot::Spu,   "pnot",          O::SP, O::SP,     N,         N,         false, false},
  {Op::SPAnd,        Slot::Spu,   "pand",          O::SP, O::SP,     O::SP,     N,         false, false},
  {Op::SPOr,         Slot::Spu,   "por",           O::SP, O::SP,     O::SP,     N,         false, false},
  {Op::IMovDim,      Slot::Spu,   "imov_dim",      O::I,  O::SorImm, N,         N,         false, true},
  {Op::IAddDim,      Slot::Spu,   "iadd_dim",      O::I,  O::SorImm, N,         N,         false, true},
  {Op::IGetDim,      Slot::Spu,   "iget_dim",      O::S,  O::I,      N,         N,         false, true},
  {Op::IMov,         Slot::Spu,   "imov",          O::I,  O::IorImm, N,         N,         false, false},
  {Op::ISpaceOffset, Slot::Spu,   "ispace_offset", O::I,  N,         N,         N,         false, false},
  {Op::ISpaceSize,   Slot::Spu,   "ispace_size",   O::I,  N,         N,         N,         false, false},
  {Op::Loop,         Slot::Spu,   "loop",          O::S,  O::S,      O::Label,  N,         false, true},
  {Op::Jmp,          Slot::Spu,   "jmp",           N,     N,         O::Label,  N,         false, false},
  {Op::Halt,         Slot::Spu,   "halt",          N,     N,         N,         N,         false, false},

  // --- VPU ---
  {Op::VMov,         Slot::Vpu,   "mov",           O::V,  O::VorS,   N,         N,         true,  false},
  {Op::VAdd,         Slot::Vpu,   "add",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VSub,         Slot::Vpu,   "sub",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VMul,         Slot::Vpu,   "mul",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VMac,         Slot::Vpu,   "mac",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VMin,         Slot::Vpu,   "min",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VMax,         Slot::Vpu,   "max",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VAbs,         Slot::Vpu,   "abs",           O::V,  O::V,      N,         N,         true,  false},
  {Op::VNeg,         Slot::Vpu,   "neg",           O::V,  O::V,      N,         N,         true,  false},
  {Op::VAnd,         Slot::Vpu,   "and",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VOr,          Slot::Vpu,   "or",            O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VXor,         Slot::Vpu,   "xor",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VNot,         Slot::Vpu,   "not",           O::V,  O::V,      N,         N,         true,  false},
  {Op::VShl,         Slot::Vpu,   "shl",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VShr,         Slot::Vpu,   "shr",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VCmp,         Slot::Vpu,   "cmp",           O::VP, O::V,      O::VorS,   N,         true,  true},
  {Op::VSel,         Slot::Vpu,   "sel",           O::V,  O::V,      O::VorS,   O::VP,     true,  false},
  {Op::VConvert,     Slot::Vpu,   "convert",       O::V,  O::V,      N,         N,         true,  true},
  {Op::VReduce,      Slot::Vpu,   "reduce",        O::V,  O::V,      N,         N,         true,  true},
  {Op::VShuffle,     Slot::Vpu,   "shuffle",       O::V,  O::V,      O::V,      N,         true,  false},
  {Op::VSpecial,     Slot::Vpu,   "special",       O::V,  O::V,      N,         N,         true,  true},
  {Op::VDiv,         Slot::Vpu,   "div",           O::V,  O::V,      O::VorS,   N,         true,  false},
  {Op::VLaneId,      Slot::Vpu,   "lane_id",       O::V,  N,         N,         N,         true,  false},
  {Op::VPMov,        Slot::Vpu,   "pmov",          O::VP, O::VP,     N,         N,         false, true},
  {Op::VPNot,        Slot::Vpu,   "pnot",          O::VP, O::VP,     N,         N,         false, false},
  {Op::VPAnd,        Slot::Vpu,   "pand",          O::VP, O::VP,     O::VP,     N,         false, false},
  {Op::VPOr,         Slot::Vpu,   "por",           O::VP, O::VP,     O::VP,     N,         false, false},

  // --- Load ---
  {Op::LdTnsr,       Slot::Load,  "ld_tnsr",       O::V,  O::I,      N,         O::Tensor, false, false},
  {Op::LdTnsrS,      Slot::Load,  "ld_tnsr_s",     O::S,  O::I,      N,         O::Tensor, false, false},
  {Op::LdSlm,        Slot::Load,  "ld_slm",        O::S,  O::SorImm, N,         N,         false, false},
  {Op::LdVlm,        Slot::Load,  "ld_vlm",        O::V,  O::SorImm, N,         N,         true,  false},
  {Op::LdMov,        Slot::Load,  "ld_mov",        O::V,  O::V,      N,         N,         true,  false},
  {Op::LdSMov,       Slot::Load,  "ld_smov",       O::S,  O::SorImm, N,         N,         false, false},
  {Op::Prefetch,     Slot::Load,  "prefetch",      N,     O::I,      N,         O::Tensor, false, false},

  // --- Store ---
  {Op::StTnsr,       Slot::Store, "st_tnsr",       N,     O::I,      O::V,      O::Tensor, false, false},
  {Op::StTnsrS,      Slot::Store, "st_tnsr_s",     N,     O::I,      O::S,      O::Tensor, false, false},
  {Op::StSlm,        Slot::Store, "st_slm",        N,     O::SorImm, O::S,      N,         false, false},
  {Op::StVlm,        Slot::Store, "st_vlm",        N,     O::SorImm, O::V,      N,         false, false},
};
// clang-format on

// Opcode value -> table row (nullptr: undefined).
std::array<const OpInfo*, 256> build_index() {
  std::array<const OpInfo*, 256> index{};
  index[0] = &kNop;
  for (const OpInfo& info : kTable) index[static_cast<uint8_t>(info.op)] = &info;
  return index;
}

const std::array<const OpInfo*, 256>& op_index() {
  static const std::array<const OpInfo*, 256> index = build_index();
  return index;
}

}  // namespace

// Op::Nop's row says Slot::Load but NOP is opcode 0 in every slot; op_info(slot, "nop") finds it
// for any slot.
const OpInfo* op_info(Op op) { return op_index()[static_cast<uint8_t>(op)]; }

const OpInfo* op_info(Slot slot, const std::string& mnemonic) {
  if (mnemonic == kNop.mnemonic) return &kNop;
  for (const OpInfo& info : kTable) {
    if (info.slot == slot && mnemonic == info.mnemonic) return &info;
  }
  return nullptr;
}

}  // namespace hpusim::tpc
