// The PyTorch MNIST example's MLP on the device's arithmetic: x [batch, inputs] -> fc1 -> relu ->
// dropout(p) -> fc2 -> log_softmax -> nll_loss (mean) against integer targets, its backward, and
// one Adadelta step. Matrices are row-major ([rows, cols] is the graph shape {cols, rows}); the
// weights are PyTorch's [out, in].
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "synapse/zoo_reference/optim.h"

namespace hpusim::synapse::zoo_reference {

struct MlpConfig {
  size_t batch = 200, inputs = 784, hidden = 128, classes = 10;
  float dropout_p = 0.5f;
  AdadeltaConfig optimizer;
};

template <class T>
struct MlpParams {
  std::vector<T> w1, b1, w2, b2;   // w1 [hidden, inputs], b1 [hidden], w2 [classes, hidden], b2 [classes]
  static constexpr std::array<const char*, 4> kNames{"w1", "b1", "w2", "b2"};
  std::array<std::vector<T>*, 4> tensors() { return {&w1, &b1, &w2, &b2}; }
  std::array<const std::vector<T>*, 4> tensors() const { return {&w1, &b1, &w2, &b2}; }
};

// The forward pass's tensors (what the backward reads), row-major [batch, features].
template <class T>
struct MlpActivations {
  std::vector<T> z1;          // fc1 output [batch, hidden]
  std::vector<T> dropped;     // dropout(relu(z1)) [batch, hidden]
  std::vector<float> mask;    // the dropout mask (1 kept, 0 dropped)
  std::vector<T> logp;        // log_softmax(fc2) [batch, classes]
  T loss = T(0);
  T total_weight = T(0);      // nll_loss's sample count
};

// The forward pass (float: the reference; double: the gradient checks' loss).
template <class T>
MlpActivations<T> mlp_forward(const MlpConfig& cfg, const MlpParams<T>& params, const float* x,
                              const int32_t* target, uint32_t dropout_seed);

struct Mlp {
  MlpConfig config;
  MlpParams<float> params;
  MlpParams<float> grads;
  MlpParams<float> square_avg, acc_delta;   // Adadelta's state

  explicit Mlp(const MlpConfig& cfg = {}) : config(cfg) {}
  // PyTorch's nn.Linear init (bounds 1/sqrt(fan_in) for weight and bias) from UniformSource(seed),
  // in the order w1, b1, w2, b2; zero optimizer state.
  void init(uint32_t seed);
  // Forward and backward: fills grads, returns the loss. x [batch, inputs], target [batch].
  float compute_gradients(const float* x, const int32_t* target, uint32_t dropout_seed);
  // compute_gradients, then one Adadelta step on every parameter. Returns the loss before the step.
  float step(const float* x, const int32_t* target, uint32_t dropout_seed);
};

}  // namespace hpusim::synapse::zoo_reference
