// Element-wise reductions as the engines that reduce on the way to memory perform them (the DMA
// core's reduction mode, hw/dma) and as host references check them: acc = op(acc, x), one element
// at a time. f32 sums round once per addition; bf16 sums add in f32 and round the result to bf16
// (nearest even), once per addition. min and max are IEEE 754-2019 minimum / maximum (a NaN gives a
// NaN, -0 < +0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hpusim::reduction {

enum class ReduceOp : uint8_t { Sum = 0, Min = 1, Max = 2 };
enum class ReduceType : uint8_t { F32 = 0, Bf16 = 1 };

constexpr uint32_t element_bytes(ReduceType type) { return type == ReduceType::F32 ? 4 : 2; }
const char* name(ReduceOp op);
const char* name(ReduceType type);
// True for the codes the DMA core's REDUCE_CFG fields take.
bool valid_op(uint32_t code);
bool valid_type(uint32_t code);

// acc[i] = op(acc[i], x[i]) over `bytes` (a multiple of the element size) of little-endian elements.
// The buffers need no alignment and may be the same.
void reduce_into(uint8_t* acc, const uint8_t* x, size_t bytes, ReduceOp op, ReduceType type);

}  // namespace hpusim::reduction
