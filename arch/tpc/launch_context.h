// What a TPC launch hands one core: its tensor descriptors, its slice of the index space and the
// scalar registers (ISA.md, "Tensor accessors" and "Launch"). The launch builder
// (tpc_launch.h) writes these as CFG registers; the core (hw/tpc) reads them back. Pure C++.
#pragma once

#include <array>
#include <cstdint>

#include "arch/tpc/isa.h"

namespace hpusim::tpc {

// One tensor accessor (ISA.md §Tensor accessors). Sizes and strides are in elements.
struct TensorDescriptor {
  uint64_t base = 0;
  DType dtype = DType::F32;
  uint8_t dims = 0;                          // 1..5 valid dims; 0 = not set by the launch
  std::array<uint32_t, kDims> size{};
  std::array<int64_t, kDims> stride{};       // stride[0] is ignored: dim 0 is contiguous
  uint32_t padding = 0;
};

// What a launch gives one core.
struct LaunchContext {
  std::array<TensorDescriptor, kMaxTensors> tensors{};
  std::array<int32_t, kDims> ispace_offset{};   // this core's slice of the index space
  std::array<int32_t, kDims> ispace_size{};
  std::array<uint32_t, 32> srf{};               // S0..S31
};

}  // namespace hpusim::tpc
