#include "synapse/zoo_reference/optim.h"

#include <cmath>
#include <initializer_list>

#include "synapse/zoo_reference/ops.h"

namespace hpusim::synapse::zoo_reference {

namespace {
float to_f32(double v) { return static_cast<float>(v); }

// WD_GRAD: g = g + p * wd, only when wd != 0 (the glue leaves the operation out otherwise).
float decayed_grad(float g, float p, float wd) { return wd != 0.0f ? g + p * wd : g; }
}  // namespace

void adadelta_step(const AdadeltaConfig& cfg, float* param, const float* grad, float* square_avg, float* acc_delta,
                   size_t count) {
  const float neg_lr = to_f32(-static_cast<double>(cfg.lr));
  const float rho = cfg.rho;
  const float one_minus_rho = to_f32(1.0 - static_cast<double>(cfg.rho));
  const float eps = cfg.eps;
  for (size_t i = 0; i < count; ++i) {
    const float g = decayed_grad(grad[i], param[i], cfg.weight_decay);
    float sq = square_avg[i] * rho;
    sq = sq + (g * one_minus_rho) * g;
    const float std_sq = special_sqrt(sq + eps);
    const float delta = (special_sqrt(acc_delta[i] + eps) / std_sq) * g;
    acc_delta[i] = acc_delta[i] * rho + (delta * one_minus_rho) * delta;
    square_avg[i] = sq;
    param[i] = param[i] + delta * neg_lr;
  }
}

namespace {
// 1 - beta^t as the kernel's ONE_MINUS_POW: x = t ln(beta) in f32; -expm1(x) from its series
// (Horner, f32) where |x| < 0.5, else 1 - exp(x) (exp rounded from double, as the VPU's).
float one_minus_pow(float t, float ln_beta) {
  const float x = t * ln_beta;
  const float by_exp = static_cast<float>(std::exp(static_cast<double>(x))) * -1.0f + 1.0f;
  float d = 2.7557319e-6f;
  for (float c : {2.4801587e-5f, 1.9841270e-4f, 1.3888889e-3f, 8.3333333e-3f, 4.1666667e-2f, 0.16666667f, 0.5f, 1.0f}) {
    d = d * x;
    d = d + c;
  }
  d = d * x;
  d = d * -1.0f;
  return std::fabs(x) < 0.5f ? d : by_exp;
}
}  // namespace

AdamFactors adam_factors_on_host(const AdamConfig& cfg, uint32_t step) {
  const double lr = cfg.lr, t = step;
  return {to_f32(-(lr / (1.0 - std::pow(static_cast<double>(cfg.beta1), t)))),
          to_f32(std::sqrt(1.0 - std::pow(static_cast<double>(cfg.beta2), t)))};
}

AdamFactors adam_factors_on_card(const AdamConfig& cfg, uint32_t step) {
  const float t = static_cast<float>(step);
  const float lr = cfg.lr;
  AdamFactors f;
  f.neg_step_size = (lr / one_minus_pow(t, to_f32(std::log(static_cast<double>(cfg.beta1))))) * -1.0f;
  f.sqrt_bc2 = special_sqrt(one_minus_pow(t, to_f32(std::log(static_cast<double>(cfg.beta2)))));
  return f;
}

void adam_step(const AdamConfig& cfg, const AdamFactors& factors, float* param, const float* grad, float* exp_avg,
               float* exp_avg_sq, size_t count) {
  const double b1 = cfg.beta1, b2 = cfg.beta2;
  const float beta1 = cfg.beta1, beta2 = cfg.beta2;
  const float one_minus_b1 = to_f32(1.0 - b1);
  const float one_minus_b2 = to_f32(1.0 - b2);
  const float neg_step_size = factors.neg_step_size, sqrt_bc2 = factors.sqrt_bc2;
  const float eps = cfg.eps;
  for (size_t i = 0; i < count; ++i) {
    const float g = decayed_grad(grad[i], param[i], cfg.weight_decay);
    const float m = exp_avg[i] * beta1 + g * one_minus_b1;
    const float v = exp_avg_sq[i] * beta2 + (g * one_minus_b2) * g;
    const float denom = special_sqrt(v) / sqrt_bc2 + eps;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = param[i] + (m * neg_step_size) / denom;
  }
}

void sgd_step(const SgdConfig& cfg, bool first_step, float* param, const float* grad, float* momentum_buffer,
              size_t count) {
  const float neg_lr = to_f32(-static_cast<double>(cfg.lr));
  const float momentum = cfg.momentum;
  const float one_minus_dampening = to_f32(1.0 - static_cast<double>(cfg.dampening));
  for (size_t i = 0; i < count; ++i) {
    const float g = decayed_grad(grad[i], param[i], cfg.weight_decay);
    const float buf = first_step ? g : momentum_buffer[i] * momentum + g * one_minus_dampening;
    momentum_buffer[i] = buf;
    param[i] = param[i] + buf * neg_lr;
  }
}

}  // namespace hpusim::synapse::zoo_reference
