// One BERT encoder layer (post-layernorm) on the device's arithmetic:
//   attn = Wo (softmax((Q K^T) * scale) V) + bo per head, Q/K/V = x Wq/Wk/Wv^T + b, scale = 1/sqrt(head_dim)
//   y1 = LN1(x + attn),  y = LN2(y1 + W2 gelu_tanh(W1 y1 + b1) + b2)
// no dropout, no mask; loss = mean(y * r) for the fixed tensor r (loss_weights). Forward,
// backward for every parameter (not dx) and one Adam step. Activations are [batch, seq, hidden]
// row-major (graph shape {hidden, seq, batch}); weights are PyTorch's [out, in].
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "synapse/zoo_reference/optim.h"

namespace hpusim::synapse::zoo_reference {

struct BertLayerConfig {
  size_t batch = 8, seq = 128, hidden = 768, heads = 12, ffn = 3072;
  float layernorm_eps = 1e-12f;   // BERT's layer_norm_eps
  AdamConfig optimizer;           // lr 1e-4, betas (0.9, 0.999), eps 1e-8
  size_t tokens() const { return batch * seq; }
  size_t head_dim() const { return hidden / heads; }
  // 1 / sqrt(head_dim) in double rounded to f32 (0.125 for 64), applied as a multiplication.
  float attention_scale() const;
};

template <class T>
struct BertLayerParams {
  std::vector<T> wq, bq, wk, bk, wv, bv, wo, bo;   // [hidden, hidden], [hidden]
  std::vector<T> ln1_gamma, ln1_beta;              // [hidden]
  std::vector<T> w1, b1;                           // [ffn, hidden], [ffn]
  std::vector<T> w2, b2;                           // [hidden, ffn], [hidden]
  std::vector<T> ln2_gamma, ln2_beta;              // [hidden]
  static constexpr std::array<const char*, 16> kNames{"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo",
                                                      "ln1_gamma", "ln1_beta", "w1", "b1", "w2", "b2",
                                                      "ln2_gamma", "ln2_beta"};
  std::array<std::vector<T>*, 16> tensors() {
    return {&wq, &bq, &wk, &bk, &wv, &bv, &wo, &bo, &ln1_gamma, &ln1_beta, &w1, &b1, &w2, &b2, &ln2_gamma, &ln2_beta};
  }
  std::array<const std::vector<T>*, 16> tensors() const {
    return {&wq, &bq, &wk, &bk, &wv, &bv, &wo, &bo, &ln1_gamma, &ln1_beta, &w1, &b1, &w2, &b2, &ln2_gamma, &ln2_beta};
  }
};

template <class T>
struct BertLayerActivations {
  std::vector<T> q, k, v;              // [tokens, hidden]
  std::vector<T> probs;                // [batch][heads][seq (query)][seq (key)]
  std::vector<T> context;              // [tokens, hidden], head h in columns h * head_dim ..
  std::vector<T> h1, mean1, rstd1, y1; // x + attn, LN1's statistics (per token), LN1's output
  std::vector<T> ffn_pre, ffn_act;     // [tokens, ffn]: W1 y1 + b1, its gelu
  std::vector<T> h2, mean2, rstd2, y;  // y1 + ffn output, LN2's statistics, the layer output
  T loss = T(0);
};

// x and loss_weights are [batch, seq, hidden].
template <class T>
BertLayerActivations<T> bert_layer_forward(const BertLayerConfig& cfg, const BertLayerParams<T>& params,
                                           const float* x, const float* loss_weights);

struct BertLayer {
  BertLayerConfig config;
  BertLayerParams<float> params;
  BertLayerParams<float> grads;
  BertLayerParams<float> exp_avg, exp_avg_sq;   // Adam's state
  std::vector<float> loss_weights;              // r, [batch, seq, hidden]
  uint32_t steps = 0;

  explicit BertLayer(const BertLayerConfig& cfg = {}) : config(cfg) {}
  // From UniformSource(seed): the weight matrices (wq, wk, wv, wo, w1, w2, in that order) uniform
  // with BERT's std 0.02 (bound 0.02 sqrt 3), then r uniform in [-1, 1). Biases 0, gamma 1, beta 0.
  void init(uint32_t seed);
  float compute_gradients(const float* x);
  // compute_gradients, then one Adam step (step count steps + 1). Returns the loss before the step.
  float step(const float* x);
};

}  // namespace hpusim::synapse::zoo_reference
