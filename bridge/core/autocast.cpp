// torch.autocast('hpu'): the AutocastHPU key with upstream autocast's op lists (gemm and
// convolution in the lower precision, bf16 on the card; the numerically sensitive ops in f32;
// the rest as they come), as the CUDA backend registers them.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

#define KERNEL_HPU(...) KERNEL(c10::DeviceType::HPU, __VA_ARGS__)
#define KERNEL_HPU_LOWER_PRECISION_FP(...) KERNEL_HPU(__VA_ARGS__, lower_precision_fp)
#define KERNEL_HPU_FP32(...) KERNEL_HPU(__VA_ARGS__, fp32)
#define KERNEL_HPU_FP32_SET_OPT_DTYPE(...) KERNEL_HPU(__VA_ARGS__, fp32_set_opt_dtype)
#define KERNEL_HPU_PROMOTE(...) KERNEL_HPU(__VA_ARGS__, promote)
#define KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_HPU(REDISPATCH_FUNC, REGISTER_NAME, REGISTER_SIGNATURE, \
                                                  REDISPATCH_SIGNATURE, POLICY)                     \
  KERNEL_DIFFERENT_REDISPATCH_SIGNATURE(c10::DeviceType::HPU, REDISPATCH_FUNC, REGISTER_NAME,      \
                                        REGISTER_SIGNATURE, REDISPATCH_SIGNATURE, POLICY)

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastHPU, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastHPU, m) {
  using at::IntArrayRef;
  using at::Scalar;
  using at::ScalarType;
  using at::Tensor;
  AT_FORALL_LOWER_PRECISION_FP(KERNEL_HPU_LOWER_PRECISION_FP)
  AT_FORALL_FP32(KERNEL_HPU_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(KERNEL_HPU_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_HPU)
  AT_FORALL_PROMOTE(KERNEL_HPU_PROMOTE)
}
