// Random TPC bundles for the encoding and assembler tests: every field random but within what
// decode() accepts (so unused fields and switches may hold anything).
#pragma once

#include <random>
#include <vector>

#include "arch/tpc/isa.h"

namespace hpusim::tpc::testing {

inline std::vector<const OpInfo*> ops_of(Slot slot) {
  std::vector<const OpInfo*> ops;
  for (unsigned v = 1; v < 256; ++v) {
    const OpInfo* info = op_info(static_cast<Op>(v));
    if (info != nullptr && info->slot == slot) ops.push_back(info);
  }
  return ops;
}

// How many values a field of this kind may hold in this instruction (64: anything).
inline unsigned field_limit(Operand kind, const SlotInstr& s) {
  switch (kind) {
    case Operand::V: return kVectorRegs;
    case Operand::S: return kScalarRegs;
    case Operand::I: return kIndexRegs;
    case Operand::SP: return kScalarPreds;
    case Operand::VP: return kVectorPreds;
    case Operand::Tensor: return kMaxTensors;
    case Operand::SorImm: return s.use_imm ? 64 : kScalarRegs;
    case Operand::IorImm: return s.use_imm ? 64 : kIndexRegs;
    case Operand::VorS: return s.use_imm ? 64 : (s.switches & kSwScalarSrc) ? kScalarRegs : kVectorRegs;
    case Operand::None: case Operand::Label: return 64;
  }
  return 64;
}

inline SlotInstr random_valid_slot(std::mt19937& rng, Slot slot) {
  static const std::vector<const OpInfo*> ops[kSlots] = {ops_of(Slot::Load), ops_of(Slot::Spu), ops_of(Slot::Vpu),
                                                          ops_of(Slot::Store)};
  auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
  SlotInstr s;
  const auto& list = ops[static_cast<unsigned>(slot)];
  const OpInfo* info = pick(8) == 0 ? nullptr : list[pick(static_cast<unsigned>(list.size()))];
  s.op = info ? info->op : Op::Nop;
  s.dtype = static_cast<DType>(pick(8));
  s.switches = static_cast<uint8_t>(pick(256));
  s.use_imm = pick(2);
  s.pred_invert = pick(2);
  s.pred_vector = (slot == Slot::Vpu || slot == Slot::Load) && pick(2);
  s.pred = static_cast<uint8_t>(pick(s.pred_vector ? kVectorPreds : kScalarPreds));
  const Operand none = Operand::None;
  s.dst = static_cast<uint8_t>(pick(field_limit(info ? info->dst : none, s)));
  s.src0 = static_cast<uint8_t>(pick(field_limit(info ? info->src0 : none, s)));
  s.src1 = static_cast<uint8_t>(pick(field_limit(info ? info->src1 : none, s)));
  s.src2 = static_cast<uint8_t>(pick(field_limit(info ? info->src2 : none, s)));
  return s;
}

inline Bundle random_valid_bundle(std::mt19937& rng) {
  Bundle b;
  for (unsigned i = 0; i < kSlots; ++i) b.slot[i] = random_valid_slot(rng, static_cast<Slot>(i));
  b.imm = static_cast<uint32_t>(rng());
  return b;
}

}  // namespace hpusim::tpc::testing
