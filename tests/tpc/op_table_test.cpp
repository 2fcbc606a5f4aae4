// The opcode table: one row per Op, in the slot its opcode range says, mnemonics unique per slot,
// and operand kinds that follow the field conventions the encoder and assembler rely on.
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <set>
#include <string>

#include "arch/tpc/isa.h"

namespace hpusim::tpc {
namespace {

Slot slot_of_opcode(unsigned v) {
  return v < 64 ? Slot::Spu : v < 128 ? Slot::Vpu : v < 192 ? Slot::Load : Slot::Store;
}

TEST(TpcOpTable, EveryOpcodeHasOneRowInItsSlotRange) {
  std::map<Slot, int> per_slot;
  for (unsigned v = 1; v < 256; ++v) {
    const OpInfo* info = op_info(static_cast<Op>(v));
    if (info == nullptr) continue;
    EXPECT_EQ(static_cast<unsigned>(info->op), v);
    EXPECT_EQ(info->slot, slot_of_opcode(v)) << info->mnemonic;
    ++per_slot[info->slot];
  }
  // The enum in isa.h: SPU SMov..Halt, VPU VMov..VPOr, Load LdTnsr..Prefetch, Store StTnsr..StVlm.
  EXPECT_EQ(per_slot[Slot::Spu], static_cast<int>(Op::Halt) - static_cast<int>(Op::SMov) + 1);
  EXPECT_EQ(per_slot[Slot::Vpu], static_cast<int>(Op::VPOr) - static_cast<int>(Op::VMov) + 1);
  EXPECT_EQ(per_slot[Slot::Load], static_cast<int>(Op::Prefetch) - static_cast<int>(Op::LdTnsr) + 1);
  EXPECT_EQ(per_slot[Slot::Store], static_cast<int>(Op::StVlm) - static_cast<int>(Op::StTnsr) + 1);
  EXPECT_EQ(op_info(static_cast<Op>(33)), nullptr);
  EXPECT_EQ(op_info(static_cast<Op>(255)), nullptr);
}

TEST(TpcOpTable, NopIsInEverySlot) {
  const OpInfo* nop = op_info(Op::Nop);
  ASSERT_NE(nop, nullptr);
  EXPECT_STREQ(nop->mnemonic, "nop");
  for (unsigned s = 0; s < kSlots; ++s) EXPECT_EQ(op_info(static_cast<Slot>(s), "nop"), nop);
}

TEST(TpcOpTable, MnemonicsAreLowerCaseAndUniqueWithinASlot) {
  std::set<std::pair<Slot, std::string>> seen;
  for (unsigned v = 1; v < 256; ++v) {
    const OpInfo* info = op_info(static_cast<Op>(v));
    if (info == nullptr) continue;
    const std::string m = info->mnemonic;
    ASSERT_FALSE(m.empty());
    for (char c : m) EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) || c == '_') << m;
    EXPECT_TRUE(seen.insert({info->slot, m}).second) << "duplicate " << m;
    EXPECT_EQ(op_info(info->slot, m), info) << m;
  }
  EXPECT_EQ(op_info(Slot::Spu, "ld_tnsr"), nullptr);
  EXPECT_EQ(op_info(Slot::Vpu, "no_such_op"), nullptr);
  // Shared mnemonics are distinct ops in distinct slots.
  EXPECT_EQ(op_info(Slot::Spu, "mov")->op, Op::SMov);
  EXPECT_EQ(op_info(Slot::Vpu, "mov")->op, Op::VMov);
}

TEST(TpcOpTable, OperandKindsFollowTheFieldConventions) {
  auto is_imm = [](Operand k) {
    return k == Operand::SorImm || k == Operand::VorS || k == Operand::IorImm || k == Operand::Label;
  };
  for (unsigned v = 1; v < 256; ++v) {
    const OpInfo* info = op_info(static_cast<Op>(v));
    if (info == nullptr) continue;
    const Operand kinds[] = {info->dst, info->src0, info->src1, info->src2};
    int imm_operands = 0;
    for (Operand k : kinds) imm_operands += is_imm(k);
    EXPECT_LE(imm_operands, 1) << info->mnemonic << ": one bundle immediate, one operand may use it";
    EXPECT_TRUE(info->dst != Operand::Tensor && info->src0 != Operand::Tensor && info->src1 != Operand::Tensor)
        << info->mnemonic << ": tensor numbers live in src2";
    EXPECT_TRUE(info->dst != Operand::Label && info->src0 != Operand::Label && info->src2 != Operand::Label)
        << info->mnemonic << ": a label is written where src1 would be";
    EXPECT_FALSE(is_imm(info->dst)) << info->mnemonic;
    if (info->slot == Slot::Store) {
      EXPECT_EQ(info->dst, Operand::None) << info->mnemonic;
    }
    if (info->slot == Slot::Vpu && info->dst != Operand::VP) {
      EXPECT_EQ(info->dst, Operand::V) << info->mnemonic;
    }
  }
  EXPECT_EQ(op_info(Op::Loop)->src1, Operand::Label);
  EXPECT_EQ(op_info(Op::Jmp)->src1, Operand::Label);
  EXPECT_EQ(op_info(Op::IMov)->src0, Operand::IorImm);
  EXPECT_EQ(op_info(Op::VMov)->src0, Operand::VorS);
  EXPECT_EQ(op_info(Op::VAdd)->src1, Operand::VorS);
  EXPECT_EQ(op_info(Op::LdTnsr)->src2, Operand::Tensor);
  EXPECT_TRUE(op_info(Op::VCmp)->takes_switches);
  EXPECT_TRUE(op_info(Op::VAdd)->takes_dtype);
  EXPECT_FALSE(op_info(Op::SMov)->takes_dtype);
  EXPECT_FALSE(op_info(Op::LdTnsr)->takes_dtype);   // the tensor descriptor has the type
}

}  // namespace
}  // namespace hpusim::tpc
