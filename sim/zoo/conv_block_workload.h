// The zoo's conv block (sim/zoo/conv_block_workload.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/zoo/workload.h"
#include "synapse/zoo_reference/conv_block.h"

namespace hpusim::zoo {

// Throws std::invalid_argument for an odd height or width, or SGD dampening other than 0 (the
// one step graph runs the kernel's steady-state formula from a zero buffer, which equals
// PyTorch's first step only without dampening).
std::unique_ptr<Workload> make_conv_block_workload(const synapse::zoo_reference::ConvBlockConfig& config);

// The NHWC input of step `step`: values in [-1, 1) with 24-bit fractions (seeded, the same on
// every machine).
std::vector<float> conv_block_batch(uint32_t seed, uint32_t step,
                                    const synapse::zoo_reference::ConvBlockConfig& config);

}  // namespace hpusim::zoo
