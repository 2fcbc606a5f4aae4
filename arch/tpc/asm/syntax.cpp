#include "arch/tpc/asm/syntax.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hpusim::tpc::syntax {

const std::vector<std::string> kCmpNames = {"eq", "ne", "lt", "le", "gt", "ge"};
const std::vector<std::string> kReduceNames = {"add", "max", "min"};
const std::vector<std::string> kSpecialNames = {"exp", "log", "rsqrt", "rcp", "sqrt", "tanh", "sigmoid"};
const std::vector<std::string> kRoundingNames = {"rne", "rz", "rd", "ru"};

std::optional<unsigned> find_name(const std::vector<std::string>& names, const std::string& name) {
  for (unsigned i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return std::nullopt;
}

SwitchKind switch_kind(Op op) {
  switch (op) {
    case Op::SCmp: case Op::VCmp: return SwitchKind::Cmp;
    case Op::VReduce: return SwitchKind::Reduce;
    case Op::VSpecial: return SwitchKind::Special;
    case Op::SConvert: case Op::VConvert: return SwitchKind::Convert;
    case Op::IMovDim: case Op::IAddDim: case Op::IGetDim: return SwitchKind::Dim;
    case Op::Loop: return SwitchKind::LoopStep;
    case Op::SPMov: case Op::VPMov: return SwitchKind::PredMov;
    default: return SwitchKind::None;
  }
}

const char* slot_name(Slot slot) {
  switch (slot) {
    case Slot::Load: return "Load";
    case Slot::Spu: return "SPU";
    case Slot::Vpu: return "VPU";
    case Slot::Store: return "Store";
  }
  return "?";
}

std::vector<Field> text_operands(const OpInfo& info) {
  std::vector<Field> fields;
  if (info.dst != Operand::None) fields.push_back({"dst", info.dst});
  if (info.src0 != Operand::None) fields.push_back({"src0", info.src0});
  if (info.src2 == Operand::Tensor) {
    fields.push_back({"src2", info.src2});
    if (info.src1 != Operand::None) fields.push_back({"src1", info.src1});
  } else {
    if (info.src1 != Operand::None) fields.push_back({"src1", info.src1});
    if (info.src2 != Operand::None) fields.push_back({"src2", info.src2});
  }
  return fields;
}

uint8_t field_value(const SlotInstr& s, const char* field) {
  if (std::strcmp(field, "dst") == 0) return s.dst;
  if (std::strcmp(field, "src0") == 0) return s.src0;
  if (std::strcmp(field, "src1") == 0) return s.src1;
  return s.src2;
}

void set_field(SlotInstr& s, const char* field, uint8_t value) {
  if (std::strcmp(field, "dst") == 0) s.dst = value;
  else if (std::strcmp(field, "src0") == 0) s.src0 = value;
  else if (std::strcmp(field, "src1") == 0) s.src1 = value;
  else s.src2 = value;
}

namespace {
bool any_operand(const OpInfo& info, bool (*pred)(Operand)) {
  return pred(info.dst) || pred(info.src0) || pred(info.src1) || pred(info.src2);
}
}  // namespace

bool has_imm_operand(const OpInfo& info) {
  return any_operand(info, [](Operand k) {
    return k == Operand::SorImm || k == Operand::VorS || k == Operand::IorImm || k == Operand::Label;
  });
}

bool has_vors_operand(const OpInfo& info) {
  return any_operand(info, [](Operand k) { return k == Operand::VorS; });
}

bool has_label_operand(const OpInfo& info) {
  return any_operand(info, [](Operand k) { return k == Operand::Label; });
}

ImmStyle imm_style(const OpInfo& info, DType dtype) {
  // Load / Store immediates are addresses; the dtype of ld_vlm / ld_mov only sizes lanes.
  if (!info.takes_dtype || info.slot == Slot::Load || info.slot == Slot::Store) return ImmStyle::Plain;
  if (dtype_is_float(dtype)) return ImmStyle::Float;
  return dtype_is_signed(dtype) ? ImmStyle::Signed : ImmStyle::Unsigned;
}

std::optional<std::string> format_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  if (!std::isfinite(f)) return std::nullopt;
  char text[64];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, static_cast<double>(f));
    float back = std::strtof(text, nullptr);
    uint32_t back_bits;
    std::memcpy(&back_bits, &back, 4);
    if (back_bits == bits) break;
  }
  std::string out = text;
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string format_imm(uint32_t value, ImmStyle style) {
  char text[32];
  switch (style) {
    case ImmStyle::Float:
      if (auto f = format_float(value)) return *f;
      break;
    case ImmStyle::Unsigned:
      if (value <= 65536) return std::to_string(value);
      break;
    case ImmStyle::Signed:
    case ImmStyle::Plain: {
      const int32_t v = static_cast<int32_t>(value);
      if (v >= -65536 && v <= 65536) return std::to_string(v);
      break;
    }
  }
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

std::string type_problem(Slot slot, const SlotInstr& s) {
  const DType t = s.dtype;
  const std::string name = dtype_name(t);
  const bool is_float = dtype_is_float(t);
  switch (s.op) {
    case Op::SAdd: case Op::SSub: case Op::SMul: case Op::SMac: case Op::SMin: case Op::SMax: case Op::SAbs:
    case Op::SNeg: case Op::SAnd: case Op::SOr: case Op::SXor: case Op::SNot: case Op::SShl: case Op::SShr:
    case Op::SDiv: case Op::SCmp:
      if (t != DType::F32 && t != DType::I32 && t != DType::U32) return "SPU arithmetic takes f32, i32 or u32, not " + name;
      if ((s.op == Op::SShl || s.op == Op::SShr) && is_float) return "shifts take an integer type, not " + name;
      return "";
    case Op::VShl: case Op::VShr:
      return is_float ? "shifts take an integer type, not " + name : "";
    case Op::VDiv:
      return is_float ? "" : "vector div takes f32 or bf16, not " + name;
    case Op::VSpecial:
      return is_float ? "" : "special functions take f32 or bf16, not " + name;
    case Op::VLaneId:
      return is_float ? "lane_id takes an integer type, not " + name : "";
    case Op::VConvert: {
      const unsigned from = dtype_bits(t), to = dtype_bits(static_cast<DType>(s.switches & 7));
      const unsigned ratio = from > to ? from / to : to / from;
      const unsigned part = (s.switches >> kConvertPartShift) & 3;
      if (part >= ratio) {
        return "part=" + std::to_string(part) + " is beyond convert." + name + "." +
               dtype_name(static_cast<DType>(s.switches & 7)) + " (parts 0.." + std::to_string(ratio - 1) + ")";
      }
      return "";
    }
    case Op::LdTnsrS: case Op::LdSlm: case Op::LdSMov:
      return s.pred_vector && slot == Slot::Load ? "a vector predicate can't predicate a scalar load" : "";
    default:
      return "";
  }
}

const char* register_prefix(Operand kind) {
  switch (kind) {
    case Operand::V: return "V";
    case Operand::S: return "S";
    case Operand::I: return "I";
    case Operand::SP: return "SP";
    case Operand::VP: return "VP";
    default: return nullptr;
  }
}

unsigned register_count(Operand kind) {
  switch (kind) {
    case Operand::V: return kVectorRegs;
    case Operand::S: return kScalarRegs;
    case Operand::I: return kIndexRegs;
    case Operand::SP: return kScalarPreds;
    case Operand::VP: return kVectorPreds;
    case Operand::Tensor: return kMaxTensors;
    default: return 0;
  }
}

std::optional<RegisterName> parse_register(const std::string& text) {
  static const std::pair<const char*, Operand> prefixes[] = {
      {"VP", Operand::VP}, {"SP", Operand::SP}, {"V", Operand::V}, {"S", Operand::S}, {"I", Operand::I}};
  for (const auto& [prefix, kind] : prefixes) {
    const size_t n = std::strlen(prefix);
    if (text.size() <= n) continue;
    bool match = true;
    for (size_t i = 0; i < n; ++i) match = match && std::toupper(static_cast<unsigned char>(text[i])) == prefix[i];
    if (!match) continue;
    unsigned number = 0;
    for (size_t i = n; i < text.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
      number = number >= 1000000 ? 1000000 : number * 10 + static_cast<unsigned>(text[i] - '0');
    }
    return RegisterName{kind, number};
  }
  return std::nullopt;
}

std::string describe(Operand kind) {
  switch (kind) {
    case Operand::None: return "nothing";
    case Operand::V: return "a vector register (V0..V39)";
    case Operand::S: return "a scalar register (S0..S35)";
    case Operand::I: return "an index register (I0..I7)";
    case Operand::SP: return "a scalar predicate (SP0..SP15)";
    case Operand::VP: return "a vector predicate (VP0..VP7)";
    case Operand::SorImm: return "a scalar register or an immediate";
    case Operand::VorS: return "a vector register, a scalar register or an immediate";
    case Operand::Tensor: return "a tensor number (0..15)";
    case Operand::Label: return "a label or bundle number";
    case Operand::IorImm: return "an index register or an immediate";
  }
  return "?";
}

bool valid_symbol_name(const std::string& name) {
  if (name.empty()) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  if (parse_register(name)) return false;
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower != "true" && lower != "false";
}

}  // namespace hpusim::tpc::syntax
