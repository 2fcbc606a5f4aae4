#include "arch/tpc/isa.h"

namespace hpusim::tpc {

unsigned dtype_bits(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: case DType::U32: return 32;
    case DType::BF16: case DType::I16: case DType::U16: return 16;
    case DType::I8: case DType::U8: return 8;
  }
  return 32;
}

bool dtype_is_float(DType t) { return t == DType::F32 || t == DType::BF16; }

bool dtype_is_signed(DType t) { return t == DType::I32 || t == DType::I16 || t == DType::I8 || dtype_is_float(t); }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I16: return "i16";
    case DType::I8: return "i8";
    case DType::U32: return "u32";
    case DType::U16: return "u16";
    case DType::U8: return "u8";
  }
  return "?";
}

std::optional<DType> dtype_from_name(const std::string& name) {
  for (uint8_t i = 0; i < 8; ++i) {
    const auto t = static_cast<DType>(i);
    if (name == dtype_name(t)) return t;
  }
  return std::nullopt;
}

bool SlotInstr::operator==(const SlotInstr& o) const {
  return op == o.op && dst == o.dst && src0 == o.src0 && src1 == o.src1 && src2 == o.src2 && dtype == o.dtype &&
         pred == o.pred && pred_vector == o.pred_vector && pred_invert == o.pred_invert && use_imm == o.use_imm &&
         switches == o.switches;
}

}  // namespace hpusim::tpc
