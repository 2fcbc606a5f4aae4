// The optimizer kernels' steps (synapse/tpc_kernels/kernels/optim_ops.inc), elementwise in f32
// and in place, with the host scalars (-lr, 1 - rho...) computed in double from the f32
// hyperparameters and rounded to f32, as the glue does; Adam's bias corrections as the fused
// kernel computes them on the core.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hpusim::synapse::zoo_reference {

// PyTorch Adadelta's defaults.
struct AdadeltaConfig {
  float lr = 1.0f, rho = 0.9f, eps = 1e-6f, weight_decay = 0.0f;
};
// sq = sq * rho + (g * (1 - rho)) * g; delta = (sqrt(acc + eps) / sqrt(sq + eps)) * g;
// acc = acc * rho + (delta * (1 - rho)) * delta; p = p + delta * (-lr).
void adadelta_step(const AdadeltaConfig& cfg, float* param, const float* grad, float* square_avg, float* acc_delta,
                   size_t count);

// PyTorch Adam's defaults except lr (BERT's 1e-4).
struct AdamConfig {
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
};
// Adam's step-dependent factors -lr / (1 - beta1^t) and sqrt(1 - beta2^t) for step t (from 1):
// as adam_f32's glue computes them (in double on the host, rounded to f32), or as the tensor-list
// kernel fused_adam_f32 computes them on the core from the step count (in f32, with
// 1 - beta^t = -expm1(t ln beta) from its series near 0; synapse/tpc_kernels/README.md).
struct AdamFactors {
  float neg_step_size = 0.0f, sqrt_bc2 = 0.0f;
};
AdamFactors adam_factors_on_host(const AdamConfig& cfg, uint32_t step);
AdamFactors adam_factors_on_card(const AdamConfig& cfg, uint32_t step);
// m = m * beta1 + g * (1 - beta1); v = v * beta2 + (g * (1 - beta2)) * g;
// p = p + (m * -step_size) / (sqrt(v) / sqrt(bc2) + eps), with the given factors.
void adam_step(const AdamConfig& cfg, const AdamFactors& factors, float* param, const float* grad, float* exp_avg,
               float* exp_avg_sq, size_t count);

// PyTorch SGD (nesterov off). The kernel always keeps a momentum buffer; with momentum 0 it
// still computes buf = buf * 0 + g * (1 - dampening), which is g for finite values.
struct SgdConfig {
  float lr = 0.1f, momentum = 0.0f, dampening = 0.0f, weight_decay = 0.0f;
};
// first_step: buf = g; else buf = buf * momentum + g * (1 - dampening). p = p + buf * (-lr).
void sgd_step(const SgdConfig& cfg, bool first_step, float* param, const float* grad, float* momentum_buffer,
              size_t count);

}  // namespace hpusim::synapse::zoo_reference
