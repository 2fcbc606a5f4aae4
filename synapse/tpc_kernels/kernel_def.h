// The kernel library's table entry (kernel_library.cpp's kernel_table), shared by its glue files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels {

// How a GUID's variants are built (kernel_library.cpp says which kernel file each kind uses).
enum class Kind : uint8_t {
  Binary, Backward, Unary, Fill, Cast, UnaryF32, Ternary, Reduce, Softmax, SoftmaxBwd,
  LayerNormFwd, LayerNormBwd, LayerNormBwdGB, NllFwd, NllBwd, DropoutFwd, DropoutBwd, Optim,
  Permute, EmbeddingFwd, EmbeddingBwd, Where, Gather, Range, RandomUniform, RandomNormal,
  StridedView, StridedInsert
};

struct KernelLibrary::KernelDef {
  std::string guid;
  Kind kind;
  std::string op_macro;   // ops.inc macro (Binary, Backward, Unary, Fill) or kernel file (Cast)
  DType in;               // the inputs' dtype (Fill: unused)
  DType out;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  // Batch 3: per-tensor dtypes (empty: `in` / `out` for every tensor), the fewest inputs (optional
  // trailing inputs: gamma / beta), the scalar parameters' names and how many may be left off.
  std::vector<DType> in_types = {};
  std::vector<DType> out_types = {};
  size_t min_inputs = 0;
  std::vector<std::string> scalar_names = {};
  size_t optional_scalars = 0;
};

}  // namespace hpusim::synapse::tpc_kernels
