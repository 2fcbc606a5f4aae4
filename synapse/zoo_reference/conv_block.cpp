#include "synapse/zoo_reference/conv_block.h"

#include <cmath>
#include <stdexcept>

#include "synapse/zoo_reference/ops.h"
#include "synapse/zoo_reference/params.h"
#include "synapse/zoo_reference/random.h"

namespace hpusim::synapse::zoo_reference {

namespace {
constexpr size_t kFilter = 3;

// 2x2 average pool, stride 2, as reduce_sum over the pair along W, then along H, then * 0.25
// (the same bits as two reduce_means: the scalings are powers of two).
template <class T>
void avg_pool_2x2(const T* x, T* y, size_t n, size_t h, size_t w, size_t c) {
  const size_t oh = h / 2, ow = w / 2;
  auto at = [&](size_t b, size_t i, size_t j, size_t k) { return x[((b * h + i) * w + j) * c + k]; };
  for (size_t b = 0; b < n; ++b)
    for (size_t i = 0; i < oh; ++i)
      for (size_t j = 0; j < ow; ++j)
        for (size_t k = 0; k < c; ++k) {
          const T top = at(b, 2 * i, 2 * j, k) + at(b, 2 * i, 2 * j + 1, k);
          const T bottom = at(b, 2 * i + 1, 2 * j, k) + at(b, 2 * i + 1, 2 * j + 1, k);
          y[((b * oh + i) * ow + j) * c + k] = (top + bottom) * T(0.25f);
        }
}

// Its backward: every input of a window gets dy * 0.25.
void avg_pool_2x2_bwd(const float* dy, float* dx, size_t n, size_t h, size_t w, size_t c) {
  const size_t oh = h / 2, ow = w / 2;
  for (size_t b = 0; b < n; ++b)
    for (size_t i = 0; i < h; ++i)
      for (size_t j = 0; j < w; ++j)
        for (size_t k = 0; k < c; ++k)
          dx[((b * h + i) * w + j) * c + k] = dy[((b * oh + i / 2) * ow + j / 2) * c + k] * 0.25f;
}
}  // namespace

ConvGeometry ConvBlockConfig::conv() const {
  if (height % 2 != 0 || width % 2 != 0)
    throw std::invalid_argument("conv_block: height and width must be even for the 2x2 pooling");
  ConvGeometry g;
  g.n = batch;
  g.h = height;
  g.w = width;
  g.c = in_channels;
  g.k = out_channels;
  g.r = g.s = kFilter;
  g.stride = 1;
  g.pad = 1;
  return g;
}

template <class T>
ConvBlockActivations<T> conv_block_forward(const ConvBlockConfig& cfg, const ConvBlockParams<T>& params,
                                           const float* x) {
  const ConvGeometry g = cfg.conv();
  const size_t pixels = g.n * g.out_h() * g.out_w();
  ConvBlockActivations<T> act;
  const std::vector<T> input(x, x + g.n * g.h * g.w * g.c);
  act.conv.resize(pixels * g.k);
  conv2d(g, input.data(), params.weight.data(), act.conv.data());
  act.normalized.resize(act.conv.size());
  act.mean.resize(pixels);
  act.rstd.resize(pixels);
  layernorm(act.conv.data(), params.gamma.data(), params.beta.data(), act.normalized.data(), act.mean.data(),
            act.rstd.data(), pixels, g.k, cfg.layernorm_eps);
  std::vector<T> relu_out(act.normalized.size());
  relu(act.normalized.data(), relu_out.data(), relu_out.size());
  act.pooled.resize(relu_out.size() / 4);
  avg_pool_2x2(relu_out.data(), act.pooled.data(), g.n, g.out_h(), g.out_w(), g.k);
  act.loss = mean_dim0(act.pooled.data(), act.pooled.size());
  return act;
}

void ConvBlock::init(uint32_t seed) {
  UniformSource source(seed);
  params.weight.resize(kFilter * kFilter * config.in_channels * config.out_channels);
  source.fill(params.weight, 1.0f / std::sqrt(static_cast<float>(config.in_channels * kFilter * kFilter)));
  params.gamma.assign(config.out_channels, 1.0f);
  params.beta.assign(config.out_channels, 0.0f);
  grads = zeros_like(params);
  momentum_buffer = zeros_like(params);
  steps = 0;
}

float ConvBlock::compute_gradients(const float* x) {
  const ConvGeometry g = config.conv();
  const size_t pixels = g.n * g.out_h() * g.out_w();
  const ConvBlockActivations<float> act = conv_block_forward(config, params, x);
  grads = zeros_like(params);

  // d(mean)/d(pooled): fill with 1 / count (f32 division), as mean's backward.
  const std::vector<float> dpooled(act.pooled.size(), 1.0f / static_cast<float>(act.pooled.size()));
  std::vector<float> drelu(act.normalized.size()), dnormalized(act.normalized.size()), dconv(act.conv.size());
  avg_pool_2x2_bwd(dpooled.data(), drelu.data(), g.n, g.out_h(), g.out_w(), g.k);
  relu_bwd(drelu.data(), act.normalized.data(), dnormalized.data(), dnormalized.size());
  layernorm_bwd_gamma_beta(dnormalized.data(), act.conv.data(), act.mean.data(), act.rstd.data(), grads.gamma.data(),
                           grads.beta.data(), pixels, g.k);
  layernorm_bwd(dnormalized.data(), act.conv.data(), act.mean.data(), act.rstd.data(), params.gamma.data(),
                dconv.data(), pixels, g.k);
  conv2d_dedw(g, x, dconv.data(), grads.weight.data());
  return act.loss;
}

float ConvBlock::step(const float* x) {
  const float loss = compute_gradients(x);
  auto p = params.tensors();
  auto gr = grads.tensors();
  auto buf = momentum_buffer.tensors();
  for (size_t i = 0; i < p.size(); ++i)
    sgd_step(config.optimizer, steps == 0, p[i]->data(), gr[i]->data(), buf[i]->data(), p[i]->size());
  ++steps;
  return loss;
}

template ConvBlockActivations<float> conv_block_forward<float>(const ConvBlockConfig&, const ConvBlockParams<float>&,
                                                               const float*);
template ConvBlockActivations<double> conv_block_forward<double>(const ConvBlockConfig&,
                                                                 const ConvBlockParams<double>&, const float*);

}  // namespace hpusim::synapse::zoo_reference
