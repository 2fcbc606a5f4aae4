#include "synapse/compiler/tensor_size.h"

#include <algorithm>

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

bool share_memory(const graph::Graph& g, graph::TensorId a, graph::TensorId b) {
  if (a == b) return true;
  const graph::TensorDesc& x = g.tensor(a);
  const graph::TensorDesc& y = g.tensor(b);
  if (!x.persistent || !y.persistent || !x.section || !y.section || x.section->id != y.section->id) return false;
  const uint64_t x_end = x.section->offset + std::max<uint64_t>(tensor_bytes(x).value_or(1), 1);
  const uint64_t y_end = y.section->offset + std::max<uint64_t>(tensor_bytes(y).value_or(1), 1);
  return x.section->offset < y_end && y.section->offset < x_end;
}

}  // namespace hpusim::synapse::compiler
