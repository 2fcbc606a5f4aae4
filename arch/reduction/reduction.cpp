#include "arch/reduction/reduction.h"

#include <cstring>

#include "arch/tpc/numerics.h"

namespace hpusim::reduction {
namespace {

float combine(float a, float b, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Min: return tpc::f32_min(a, b);
    case ReduceOp::Max: return tpc::f32_max(a, b);
  }
  return a;
}

}  // namespace

const char* name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

const char* name(ReduceType type) { return type == ReduceType::F32 ? "f32" : "bf16"; }

bool valid_op(uint32_t code) { return code <= static_cast<uint32_t>(ReduceOp::Max); }
bool valid_type(uint32_t code) { return code <= static_cast<uint32_t>(ReduceType::Bf16); }

void reduce_into(uint8_t* acc, const uint8_t* x, size_t bytes, ReduceOp op, ReduceType type) {
  if (type == ReduceType::F32) {
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float a, b;
      std::memcpy(&a, acc + i, 4);
      std::memcpy(&b, x + i, 4);
      const float r = combine(a, b, op);
      std::memcpy(acc + i, &r, 4);
    }
    return;
  }
  for (size_t i = 0; i + 2 <= bytes; i += 2) {
    uint16_t a, b;
    std::memcpy(&a, acc + i, 2);
    std::memcpy(&b, x + i, 2);
    const float r = combine(tpc::bf16_to_f32(a), tpc::bf16_to_f32(b), op);
    const uint16_t out = tpc::f32_to_bf16(r);   // exact for min and max: r is one of the inputs
    std::memcpy(acc + i, &out, 2);
  }
}

}  // namespace hpusim::reduction
