#include "synapse/compiler/tensor_size.h"

namespace hpusim::synapse::compiler {

bool is_power_of_two(uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

std::optional<uint64_t> tensor_bytes(const graph::TensorDesc& tensor) {
  uint64_t bytes = tpc::dtype_bits(tensor.dtype) / 8;
  for (uint32_t dim : tensor.shape)
    if (__builtin_mul_overflow(bytes, uint64_t{dim}, &bytes)) return std::nullopt;
  return bytes;
}

std::optional<uint64_t> align_up(uint64_t bytes, uint64_t alignment) {
  uint64_t padded;
  if (__builtin_add_overflow(bytes, alignment - 1, &padded)) return std::nullopt;
  return padded & ~(alignment - 1);
}

}  // namespace hpusim::synapse::compiler
