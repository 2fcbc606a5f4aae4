// A convolution block on the device's arithmetic: conv2d (3x3, stride 1, padding 1, no bias;
// NHWC x, RSCK weight) -> layernorm over the output channels (dim 0 of NPQK) with gamma / beta ->
// relu -> 2x2 average pool (stride 2) -> loss = the mean of every pooled element. Forward,
// backward (dweight, dgamma, dbeta; no dx: the block is a first layer) and one SGD step.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "synapse/zoo_reference/conv.h"
#include "synapse/zoo_reference/optim.h"

namespace hpusim::synapse::zoo_reference {

struct ConvBlockConfig {
  size_t batch = 8, height = 16, width = 16, in_channels = 16, out_channels = 32;
  float layernorm_eps = 1e-5f;
  SgdConfig optimizer;   // lr 0.1, no momentum
  // The convolution's geometry (3x3, stride 1, padding 1: the output is height x width, which
  // must both be even for the pooling; std::invalid_argument otherwise).
  ConvGeometry conv() const;
};

template <class T>
struct ConvBlockParams {
  std::vector<T> weight;        // RSCK [3][3][in_channels][out_channels]
  std::vector<T> gamma, beta;   // [out_channels]
  static constexpr std::array<const char*, 3> kNames{"weight", "gamma", "beta"};
  std::array<std::vector<T>*, 3> tensors() { return {&weight, &gamma, &beta}; }
  std::array<const std::vector<T>*, 3> tensors() const { return {&weight, &gamma, &beta}; }
};

template <class T>
struct ConvBlockActivations {
  std::vector<T> conv;           // NPQK
  std::vector<T> mean, rstd;     // layernorm's, one per (n, p, q)
  std::vector<T> normalized;     // layernorm output, NPQK
  std::vector<T> pooled;         // [n][p/2][q/2][k]
  T loss = T(0);
};

// x is NHWC [batch][height][width][in_channels].
template <class T>
ConvBlockActivations<T> conv_block_forward(const ConvBlockConfig& cfg, const ConvBlockParams<T>& params,
                                           const float* x);

struct ConvBlock {
  ConvBlockConfig config;
  ConvBlockParams<float> params;
  ConvBlockParams<float> grads;
  ConvBlockParams<float> momentum_buffer;   // SGD's state
  uint32_t steps = 0;

  explicit ConvBlock(const ConvBlockConfig& cfg = {}) : config(cfg) {}
  // weight from UniformSource(seed) with PyTorch Conv2d's bound 1/sqrt(in_channels * 9);
  // gamma = 1, beta = 0 (PyTorch LayerNorm's); zero optimizer state.
  void init(uint32_t seed);
  float compute_gradients(const float* x);
  // compute_gradients, then one SGD step (the first one sets the momentum buffer). Returns the
  // loss before the step.
  float step(const float* x);
};

}  // namespace hpusim::synapse::zoo_reference
