// The 256-bit bundle encoding of ISA.md ("Bundles and encoding"): four 56-bit slots at bits
// 0, 56, 112 and 168 (so each slot is 7 whole bytes, little-endian) and the 32-bit immediate in
// bytes 28..31.
#include <sstream>
#include <stdexcept>

#include "arch/tpc/isa.h"

namespace hpusim::tpc {
namespace {

constexpr unsigned kSlotBytes = 7;
constexpr unsigned kImmOffset = 28;

// Bit positions inside a slot.
constexpr unsigned kDstShift = 8, kSrc0Shift = 14, kSrc1Shift = 20, kSrc2Shift = 26, kDtypeShift = 32,
                   kPredShift = 35, kPredVectorBit = 39, kPredInvertBit = 40, kImmBit = 41, kSwitchShift = 42,
                   kReservedShift = 50;

const char* slot_name(Slot slot) {
  switch (slot) {
    case Slot::Load: return "Load";
    case Slot::Spu: return "SPU";
    case Slot::Vpu: return "VPU";
    case Slot::Store: return "Store";
  }
  return "?";
}

void require_fits(uint64_t value, unsigned bits, const char* field) {
  if (value >> bits) {
    throw std::invalid_argument(std::string("tpc::encode: ") + field + " = " + std::to_string(value) +
                                " does not fit its " + std::to_string(bits) + "-bit field");
  }
}

uint64_t encode_slot(const SlotInstr& s) {
  require_fits(s.dst, 6, "dst");
  require_fits(s.src0, 6, "src0");
  require_fits(s.src1, 6, "src1");
  require_fits(s.src2, 6, "src2");
  require_fits(static_cast<uint8_t>(s.dtype), 3, "dtype");
  require_fits(s.pred, 4, "pred");
  uint64_t v = static_cast<uint8_t>(s.op);
  v |= uint64_t{s.dst} << kDstShift;
  v |= uint64_t{s.src0} << kSrc0Shift;
  v |= uint64_t{s.src1} << kSrc1Shift;
  v |= uint64_t{s.src2} << kSrc2Shift;
  v |= uint64_t{static_cast<uint8_t>(s.dtype)} << kDtypeShift;
  v |= uint64_t{s.pred} << kPredShift;
  v |= uint64_t{s.pred_vector} << kPredVectorBit;
  v |= uint64_t{s.pred_invert} << kPredInvertBit;
  v |= uint64_t{s.use_imm} << kImmBit;
  v |= uint64_t{s.switches} << kSwitchShift;
  return v;
}

unsigned bits(uint64_t v, unsigned shift, unsigned width) { return static_cast<unsigned>((v >> shift) & ((1u << width) - 1)); }

struct RegisterFile {
  unsigned size;
  const char* prefix;
  const char* what;
};

// The register file an operand field names, or nullptr when the field is not a register
// (None, Label, or an immediate-capable operand whose slot takes the immediate).
const RegisterFile* file_of(Operand kind, const SlotInstr& s) {
  static const RegisterFile v{kVectorRegs, "V", "vector registers"};
  static const RegisterFile sc{kScalarRegs, "S", "scalar registers"};
  static const RegisterFile ix{kIndexRegs, "I", "index registers"};
  static const RegisterFile sp{kScalarPreds, "SP", "scalar predicates"};
  static const RegisterFile vp{kVectorPreds, "VP", "vector predicates"};
  static const RegisterFile tn{kMaxTensors, "", "tensor descriptors"};
  switch (kind) {
    case Operand::None: case Operand::Label: return nullptr;
    case Operand::V: return &v;
    case Operand::S: return &sc;
    case Operand::I: return &ix;
    case Operand::SP: return &sp;
    case Operand::VP: return &vp;
    case Operand::Tensor: return &tn;
    case Operand::SorImm: return s.use_imm ? nullptr : &sc;
    case Operand::IorImm: return s.use_imm ? nullptr : &ix;
    case Operand::VorS: return s.use_imm ? nullptr : (s.switches & kSwScalarSrc) ? &sc : &v;
  }
  return nullptr;
}

bool fail(std::string* error, const std::string& message) {
  if (error) *error = message;
  return false;
}

bool decode_slot(uint64_t v, Slot slot, SlotInstr& s, std::string* error) {
  const std::string where = std::string(slot_name(slot)) + " slot, ";
  s.op = static_cast<Op>(bits(v, 0, 8));
  s.dst = static_cast<uint8_t>(bits(v, kDstShift, 6));
  s.src0 = static_cast<uint8_t>(bits(v, kSrc0Shift, 6));
  s.src1 = static_cast<uint8_t>(bits(v, kSrc1Shift, 6));
  s.src2 = static_cast<uint8_t>(bits(v, kSrc2Shift, 6));
  s.dtype = static_cast<DType>(bits(v, kDtypeShift, 3));
  s.pred = static_cast<uint8_t>(bits(v, kPredShift, 4));
  s.pred_vector = bits(v, kPredVectorBit, 1);
  s.pred_invert = bits(v, kPredInvertBit, 1);
  s.use_imm = bits(v, kImmBit, 1);
  s.switches = static_cast<uint8_t>(bits(v, kSwitchShift, 8));

  const unsigned reserved = bits(v, kReservedShift, 6);
  if (reserved != 0) {
    std::ostringstream m;
    m << where << "reserved bits 55:50: 0x" << std::hex << reserved << " (must be 0)";
    return fail(error, m.str());
  }
  const unsigned opcode = static_cast<uint8_t>(s.op);
  const OpInfo* info = op_info(s.op);
  if (opcode != 0 && (info == nullptr || info->slot != slot)) {
    return fail(error, where + "opcode: " + std::to_string(opcode) + " is not defined in the " + slot_name(slot) +
                           " slot" + (info ? std::string(" (it is '") + info->mnemonic + "' of the " +
                                                 slot_name(info->slot) + " slot)"
                                           : std::string()));
  }
  if (s.pred_vector && (slot == Slot::Spu || slot == Slot::Store)) {
    return fail(error, where + "predicate: a vector predicate (bit 39) is not allowed in the " + slot_name(slot) +
                           " slot");
  }
  if (s.pred_vector && s.pred >= kVectorPreds) {
    return fail(error, where + "predicate: VP" + std::to_string(s.pred) + " is beyond the vector predicates VP0..VP" +
                           std::to_string(kVectorPreds - 1));
  }
  if (opcode == 0) return true;
  const std::pair<const char*, std::pair<Operand, uint8_t>> fields[] = {
      {"dst", {info->dst, s.dst}}, {"src0", {info->src0, s.src0}}, {"src1", {info->src1, s.src1}},
      {"src2", {info->src2, s.src2}}};
  for (const auto& [name, field] : fields) {
    const RegisterFile* file = file_of(field.first, s);
    if (file != nullptr && field.second >= file->size) {
      return fail(error, where + name + ": " + (file->prefix[0] ? file->prefix : "tensor ") +
                             std::to_string(field.second) + " is beyond the " + file->what + " (" + file->prefix +
                             "0.." + file->prefix + std::to_string(file->size - 1) + ") of '" + info->mnemonic + "'");
    }
  }
  return true;
}

}  // namespace

std::array<uint8_t, kBundleBytes> encode(const Bundle& bundle) {
  std::array<uint8_t, kBundleBytes> out{};
  for (unsigned i = 0; i < kSlots; ++i) {
    const uint64_t v = encode_slot(bundle.slot[i]);
    for (unsigned b = 0; b < kSlotBytes; ++b) out[i * kSlotBytes + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  for (unsigned b = 0; b < 4; ++b) out[kImmOffset + b] = static_cast<uint8_t>(bundle.imm >> (8 * b));
  return out;
}

std::optional<Bundle> decode(const uint8_t* bytes, std::string* error) {
  Bundle bundle;
  for (unsigned i = 0; i < kSlots; ++i) {
    uint64_t v = 0;
    for (unsigned b = 0; b < kSlotBytes; ++b) v |= uint64_t{bytes[i * kSlotBytes + b]} << (8 * b);
    if (!decode_slot(v, static_cast<Slot>(i), bundle.slot[i], error)) return std::nullopt;
  }
  bundle.imm = 0;
  for (unsigned b = 0; b < 4; ++b) bundle.imm |= uint32_t{bytes[kImmOffset + b]} << (8 * b);
  return bundle;
}

}  // namespace hpusim::tpc
