// The TPC disassembler: Program -> assembly text (arch/tpc/ASSEMBLY.md) that assembles back to the
// same bundles. Label operands use the program's labels, or generated names "L<bundle>"; a bundle
// that has no instruction form (fields the assembler never sets, such as a register number in an
// unused field or an immediate no slot reads) is written as a `.bundle` line of raw slot values.
#pragma once

#include <string>

#include "arch/tpc/asm/program.h"

namespace hpusim::tpc {

struct DisassemblyOptions {
  bool header = true;            // a first comment line with the bundle count
  bool bundle_numbers = false;   // a "// N" comment after each bundle
};

std::string disassemble(const Program& program, const DisassemblyOptions& options = {});

// One bundle on one line ("ld_tnsr V1, I2, 0; add.f32 V3, V1, V2"), label operands as bundle
// numbers; "nop" for an empty bundle; the `.bundle` form when it has no instruction form. For
// traces and error messages.
std::string format_bundle(const Bundle& bundle);

// One slot's instruction ("" for a NOP), reading the bundle immediate `imm` where it uses it.
std::string format_slot(Slot slot, const SlotInstr& instr, uint32_t imm);

}  // namespace hpusim::tpc
