#include "arch/tpc/asm/disassembler.h"

#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "arch/tpc/asm/syntax.h"

namespace hpusim::tpc {
namespace {

using namespace syntax;

// Resolves a label operand (a bundle number) to its text.
using LabelText = std::function<std::string(uint32_t)>;

std::string number_label(uint32_t target) { return std::to_string(target); }

// The register file an immediate-capable or register field names in this instruction.
Operand resolved_kind(Operand kind, const SlotInstr& s) {
  switch (kind) {
    case Operand::SorImm: return Operand::S;
    case Operand::IorImm: return Operand::I;
    case Operand::VorS: return (s.switches & kSwScalarSrc) ? Operand::S : Operand::V;
    default: return kind;
  }
}

bool is_imm_kind(Operand kind) {
  return kind == Operand::SorImm || kind == Operand::VorS || kind == Operand::IorImm;
}

// Why the slot has no instruction form the assembler would produce ("" when it has one).
// `index` is the bundle's number when known (a loop must end after itself).
std::string slot_problem(Slot slot, const SlotInstr& s, uint32_t imm, std::optional<size_t> index) {
  if (s.op == Op::Nop) return s == SlotInstr{} ? "" : "a NOP with fields set";
  const OpInfo* info = op_info(s.op);
  if (info == nullptr || info->slot != slot) return "opcode " + std::to_string(static_cast<unsigned>(s.op)) + " is not defined in this slot";
  const std::string name = std::string("'") + info->mnemonic + "'";
  if (!info->takes_dtype && s.dtype != DType::F32) return name + " with a data type";
  if (s.use_imm && !has_imm_operand(*info)) return name + " with the imm flag";
  if (!s.use_imm && has_label_operand(*info)) return name + " without the imm flag";
  const SwitchKind sk = switch_kind(s.op);
  const bool pred_const = sk == SwitchKind::PredMov && (s.switches & kPredConst);
  const std::pair<const char*, Operand> fields[] = {
      {"dst", info->dst}, {"src0", info->src0}, {"src1", info->src1}, {"src2", info->src2}};
  for (const auto& [field, kind] : fields) {
    const uint8_t value = field_value(s, field);
    const bool unused = kind == Operand::None || kind == Operand::Label || (is_imm_kind(kind) && s.use_imm) ||
                        (pred_const && std::string(field) == "src0");
    if (unused) {
      if (value != 0) return name + " with unused field " + field + " = " + std::to_string(value);
      continue;
    }
    if (value >= register_count(resolved_kind(kind, s))) return name + " with " + field + " out of range";
  }
  uint8_t sw = s.switches;
  if (has_vors_operand(*info)) {
    if ((sw & kSwScalarSrc) && s.use_imm) return name + " with both a scalar source and the immediate";
    sw &= static_cast<uint8_t>(~kSwScalarSrc);
  }
  bool ok = true;
  switch (sk) {
    case SwitchKind::None: ok = sw == 0; break;
    case SwitchKind::Cmp: ok = sw < kCmpNames.size(); break;
    case SwitchKind::Reduce: ok = sw < kReduceNames.size(); break;
    case SwitchKind::Special: ok = sw < kSpecialNames.size(); break;
    case SwitchKind::Convert: ok = (sw & 0x80) == 0 && (s.op == Op::VConvert || (sw >> kConvertPartShift) == 0); break;
    case SwitchKind::Dim: ok = sw < kDims; break;
    case SwitchKind::LoopStep: ok = sw != 0; break;
    case SwitchKind::PredMov: ok = sw == 0 || sw == kPredConst || sw == (kPredConst | kPredConstTrue); break;
  }
  if (!ok) return name + " with switches " + std::to_string(s.switches);
  if (s.pred_vector && (slot == Slot::Spu || slot == Slot::Store)) return "a vector predicate in this slot";
  if (s.pred_vector && s.pred >= kVectorPreds) return "predicate out of range";
  if (s.op == Op::Loop && index && imm <= *index) return "a loop whose body ends before it";
  return type_problem(slot, s);
}

std::string bundle_problem(const Bundle& b, std::optional<size_t> index) {
  bool uses_imm = false;
  for (unsigned i = 0; i < kSlots; ++i) {
    const std::string problem = slot_problem(static_cast<Slot>(i), b.slot[i], b.imm, index);
    if (!problem.empty()) return std::string(slot_name(static_cast<Slot>(i))) + " slot: " + problem;
    uses_imm = uses_imm || b.slot[i].use_imm;
  }
  if (!uses_imm && b.imm != 0) return "an immediate no slot reads";
  return "";
}

std::string slot_text(Slot slot, const SlotInstr& s, uint32_t imm, const LabelText& label) {
  if (s.op == Op::Nop) return "";
  const OpInfo* info = op_info(s.op);
  if (info == nullptr || info->slot != slot) return "";
  const SwitchKind sk = switch_kind(s.op);
  const uint8_t sw = s.switches;
  const uint8_t named = static_cast<uint8_t>(sw & ~kSwScalarSrc);
  std::string out = info->mnemonic;
  if (sk == SwitchKind::Cmp && named < kCmpNames.size()) out += "." + kCmpNames[named];
  if (sk == SwitchKind::Reduce && named < kReduceNames.size()) out += "." + kReduceNames[named];
  if (sk == SwitchKind::Special && named < kSpecialNames.size()) out += "." + kSpecialNames[named];
  if (info->takes_dtype) out += std::string(".") + dtype_name(s.dtype);
  if (sk == SwitchKind::Convert) out += std::string(".") + dtype_name(static_cast<DType>(sw & 7));

  const ImmStyle style = imm_style(*info, s.dtype);
  const auto fields = text_operands(*info);
  for (size_t i = 0; i < fields.size(); ++i) {
    const Operand kind = fields[i].kind;
    const uint8_t value = field_value(s, fields[i].name);
    std::string operand;
    if (sk == SwitchKind::PredMov && std::string(fields[i].name) == "src0" && (sw & kPredConst)) {
      operand = (sw & kPredConstTrue) ? "true" : "false";
    } else if (kind == Operand::Label) {
      operand = label(imm);
    } else if (kind == Operand::Tensor) {
      operand = std::to_string(value);
    } else if (is_imm_kind(kind) && s.use_imm) {
      operand = format_imm(imm, style);
    } else {
      const char* prefix = register_prefix(resolved_kind(kind, s));
      operand = std::string(prefix ? prefix : "?") + std::to_string(value);
    }
    out += (i ? ", " : " ") + operand;
  }
  if (sk == SwitchKind::Convert) {
    const unsigned rnd = (sw >> kConvertRoundShift) & 3, part = (sw >> kConvertPartShift) & 3;
    if (rnd != 0) out += " rnd=" + kRoundingNames[rnd];
    if (part != 0) out += " part=" + std::to_string(part);
  }
  if (sk == SwitchKind::Dim) out += " dim=" + std::to_string(sw);
  if (sk == SwitchKind::LoopStep && static_cast<int8_t>(sw) != 1) out += " step=" + std::to_string(static_cast<int8_t>(sw));
  if (s.pred != 0 || s.pred_vector || s.pred_invert) {
    out += std::string(" @") + (s.pred_invert ? "!" : "") + (s.pred_vector ? "VP" : "SP") + std::to_string(s.pred);
  }
  return out;
}

std::string raw_line(const Bundle& b, const std::string& why) {
  std::array<uint8_t, kBundleBytes> bytes;
  try {
    bytes = encode(b);
  } catch (const std::invalid_argument& e) {
    return std::string("// cannot encode: ") + e.what();
  }
  std::string out = ".bundle ";
  char text[32];
  for (unsigned s = 0; s < kSlots; ++s) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 7; ++i) v |= uint64_t{bytes[s * 7 + i]} << (8 * i);
    std::snprintf(text, sizeof text, "0x%014llx, ", static_cast<unsigned long long>(v));
    out += text;
  }
  std::snprintf(text, sizeof text, "0x%08x", b.imm);
  return out + text + "  // " + why;
}

std::string bundle_text(const Bundle& b, std::optional<size_t> index, const LabelText& label) {
  const std::string problem = bundle_problem(b, index);
  if (!problem.empty()) return raw_line(b, problem);
  std::string out;
  for (unsigned i = 0; i < kSlots; ++i) {
    const std::string slot = slot_text(static_cast<Slot>(i), b.slot[i], b.imm, label);
    if (slot.empty()) continue;
    out += (out.empty() ? "" : "; ") + slot;
  }
  return out.empty() ? "nop" : out;
}

}  // namespace

std::string format_slot(Slot slot, const SlotInstr& instr, uint32_t imm) {
  return slot_text(slot, instr, imm, number_label);
}

std::string format_bundle(const Bundle& bundle) { return bundle_text(bundle, std::nullopt, number_label); }

std::string disassemble(const Program& program, const DisassemblyOptions& options) {
  const size_t count = program.bundles.size();
  std::map<size_t, std::vector<std::string>> names;   // bundle -> labels there
  std::set<std::string> taken;
  for (const auto& [name, index] : program.labels) {
    if (!valid_symbol_name(name) || index > count) continue;
    names[index].push_back(name);
    taken.insert(name);
  }
  std::vector<std::string> problems(count);
  for (size_t i = 0; i < count; ++i) {
    const Bundle& b = program.bundles[i];
    problems[i] = bundle_problem(b, i);
    if (!problems[i].empty()) continue;
    for (unsigned s = 0; s < kSlots; ++s) {
      const OpInfo* info = op_info(b.slot[s].op);
      if (b.slot[s].op == Op::Nop || info == nullptr || !has_label_operand(*info)) continue;
      if (b.imm > count || names.count(b.imm)) continue;
      std::string name = "L" + std::to_string(b.imm);
      while (taken.count(name)) name += "_";
      taken.insert(name);
      names[b.imm].push_back(name);
    }
  }
  const LabelText label = [&](uint32_t target) {
    auto it = names.find(target);
    return it == names.end() ? std::to_string(target) : it->second.front();
  };

  std::string out;
  if (options.header) out += "// hpusim TPC program: " + std::to_string(count) + " bundles\n";
  for (size_t i = 0; i <= count; ++i) {
    if (auto it = names.find(i); it != names.end()) {
      for (const std::string& name : it->second) out += name + ":\n";
    }
    if (i == count) break;
    const Bundle& b = program.bundles[i];
    out += "    " + (problems[i].empty() ? bundle_text(b, i, label) : raw_line(b, problems[i]));
    if (options.bundle_numbers) out += "  // " + std::to_string(i);
    out += "\n";
  }
  return out;
}

}  // namespace hpusim::tpc
