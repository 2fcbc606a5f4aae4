// Tensor sizes in bytes and their alignment, with overflow reported rather than wrapped; which
// tensors share memory before the plan.
#pragma once

#include <cstdint>
#include <optional>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::compiler {

bool is_power_of_two(uint64_t value);

// Elements x dtype bytes (dense), or nullopt when that does not fit 64 bits.
std::optional<uint64_t> tensor_bytes(const graph::TensorDesc& tensor);

// `bytes` rounded up to `alignment` (a power of two), or nullopt when that does not fit 64 bits.
std::optional<uint64_t> align_up(uint64_t bytes, uint64_t alignment);

// Whether two tensors share memory before the memory plan exists: the same tensor, or persistent
// tensors of one section whose byte ranges overlap (an optimizer's updated weight at the weight's
// own offset is the weight). Workspace tensors get their memory from the plan, so they conflict
// only with themselves.
bool share_memory(const graph::Graph& graph, graph::TensorId a, graph::TensorId b);

}  // namespace hpusim::synapse::compiler
