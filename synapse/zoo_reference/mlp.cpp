#include "synapse/zoo_reference/mlp.h"

#include <cmath>

#include "synapse/zoo_reference/gemm.h"
#include "synapse/zoo_reference/ops.h"
#include "synapse/zoo_reference/params.h"
#include "synapse/zoo_reference/random.h"

namespace hpusim::synapse::zoo_reference {

template <class T>
MlpActivations<T> mlp_forward(const MlpConfig& cfg, const MlpParams<T>& params, const float* x,
                              const int32_t* target, uint32_t dropout_seed) {
  const size_t b = cfg.batch, hidden = cfg.hidden, classes = cfg.classes;
  MlpActivations<T> act;
  const std::vector<T> input(x, x + b * cfg.inputs);
  act.z1.resize(b * hidden);
  linear(input.data(), params.w1.data(), params.b1.data(), act.z1.data(), b, cfg.inputs, hidden);
  std::vector<T> h(b * hidden);
  relu(act.z1.data(), h.data(), h.size());
  act.mask = dropout_mask(h.size(), cfg.dropout_p, dropout_seed);
  act.dropped.resize(h.size());
  dropout(h.data(), act.mask.data(), dropout_scale(cfg.dropout_p), act.dropped.data(), h.size());
  std::vector<T> z2(b * classes);
  linear(act.dropped.data(), params.w2.data(), params.b2.data(), z2.data(), b, hidden, classes);
  act.logp.resize(z2.size());
  log_softmax(z2.data(), act.logp.data(), b, classes);
  act.loss = nll_loss(act.logp.data(), target, b, classes, &act.total_weight);
  return act;
}

void Mlp::init(uint32_t seed) {
  UniformSource source(seed);
  const float bound1 = 1.0f / std::sqrt(static_cast<float>(config.inputs));
  const float bound2 = 1.0f / std::sqrt(static_cast<float>(config.hidden));
  params.w1.resize(config.hidden * config.inputs);
  params.b1.resize(config.hidden);
  params.w2.resize(config.classes * config.hidden);
  params.b2.resize(config.classes);
  source.fill(params.w1, bound1);
  source.fill(params.b1, bound1);
  source.fill(params.w2, bound2);
  source.fill(params.b2, bound2);
  grads = zeros_like(params);
  square_avg = zeros_like(params);
  acc_delta = zeros_like(params);
}

float Mlp::compute_gradients(const float* x, const int32_t* target, uint32_t dropout_seed) {
  const size_t b = config.batch, hidden = config.hidden, classes = config.classes;
  const MlpActivations<float> act = mlp_forward(config, params, x, target, dropout_seed);
  grads = zeros_like(params);

  std::vector<float> dlogp(b * classes), dz2(b * classes);
  nll_loss_bwd(1.0f, target, act.total_weight, dlogp.data(), b, classes);
  log_softmax_bwd(dlogp.data(), act.logp.data(), dz2.data(), b, classes);

  std::vector<float> ddropped(b * hidden), dh(b * hidden), dz1(b * hidden);
  linear_bwd(dz2.data(), act.dropped.data(), params.w2.data(), ddropped.data(), grads.w2.data(), grads.b2.data(), b,
             hidden, classes);
  dropout_bwd(ddropped.data(), act.mask.data(), dropout_scale(config.dropout_p), dh.data(), dh.size());
  relu_bwd(dh.data(), act.z1.data(), dz1.data(), dz1.size());
  const std::vector<float> input(x, x + b * config.inputs);
  linear_bwd(dz1.data(), input.data(), params.w1.data(), nullptr, grads.w1.data(), grads.b1.data(), b, config.inputs,
             hidden);
  return act.loss;
}

float Mlp::step(const float* x, const int32_t* target, uint32_t dropout_seed) {
  const float loss = compute_gradients(x, target, dropout_seed);
  auto p = params.tensors();
  auto g = grads.tensors();
  auto sq = square_avg.tensors();
  auto acc = acc_delta.tensors();
  for (size_t i = 0; i < p.size(); ++i)
    adadelta_step(config.optimizer, p[i]->data(), g[i]->data(), sq[i]->data(), acc[i]->data(), p[i]->size());
  return loss;
}

template MlpActivations<float> mlp_forward<float>(const MlpConfig&, const MlpParams<float>&, const float*,
                                                  const int32_t*, uint32_t);
template MlpActivations<double> mlp_forward<double>(const MlpConfig&, const MlpParams<double>&, const float*,
                                                    const int32_t*, uint32_t);

}  // namespace hpusim::synapse::zoo_reference
