#include "synapse/zoo_reference/bert_layer.h"

#include <cmath>

#include "synapse/zoo_reference/gemm.h"
#include "synapse/zoo_reference/ops.h"
#include "synapse/zoo_reference/params.h"
#include "synapse/zoo_reference/random.h"

namespace hpusim::synapse::zoo_reference {

namespace {

// One head's [seq, head_dim] block of a [tokens, hidden] tensor, contiguous (the graph's permute).
template <class T>
std::vector<T> head_slice(const BertLayerConfig& cfg, const std::vector<T>& t, size_t b, size_t h) {
  const size_t dh = cfg.head_dim();
  std::vector<T> out(cfg.seq * dh);
  for (size_t i = 0; i < cfg.seq; ++i)
    for (size_t d = 0; d < dh; ++d) out[i * dh + d] = t[(b * cfg.seq + i) * cfg.hidden + h * dh + d];
  return out;
}

template <class T>
void put_head_slice(const BertLayerConfig& cfg, const std::vector<T>& slice, size_t b, size_t h, std::vector<T>& t) {
  const size_t dh = cfg.head_dim();
  for (size_t i = 0; i < cfg.seq; ++i)
    for (size_t d = 0; d < dh; ++d) t[(b * cfg.seq + i) * cfg.hidden + h * dh + d] = slice[i * dh + d];
}

template <class T>
void scale_in_place(std::vector<T>& v, float scale) {
  for (T& e : v) e = e * T(scale);
}

// probs = softmax((Q K^T) * scale) per (batch, head), context = probs V.
template <class T>
void attention_forward(const BertLayerConfig& cfg, BertLayerActivations<T>& act) {
  const size_t s = cfg.seq, dh = cfg.head_dim();
  act.probs.resize(cfg.batch * cfg.heads * s * s);
  act.context.resize(cfg.tokens() * cfg.hidden);
  std::vector<T> scores(s * s), ctx(s * dh);
  for (size_t b = 0; b < cfg.batch; ++b)
    for (size_t h = 0; h < cfg.heads; ++h) {
      const std::vector<T> q = head_slice(cfg, act.q, b, h), k = head_slice(cfg, act.k, b, h);
      const std::vector<T> v = head_slice(cfg, act.v, b, h);
      gemm(q.data(), k.data(), scores.data(), s, s, dh, false, true);
      scale_in_place(scores, cfg.attention_scale());
      T* probs = act.probs.data() + (b * cfg.heads + h) * s * s;
      softmax(scores.data(), probs, s, s);
      gemm(probs, v.data(), ctx.data(), s, dh, s, false, false);
      put_head_slice(cfg, ctx, b, h, act.context);
    }
}

// dq, dk, dv [tokens, hidden] from dcontext.
void attention_backward(const BertLayerConfig& cfg, const BertLayerActivations<float>& act,
                        const std::vector<float>& dcontext, std::vector<float>& dq, std::vector<float>& dk,
                        std::vector<float>& dv) {
  const size_t s = cfg.seq, dh = cfg.head_dim();
  dq.assign(cfg.tokens() * cfg.hidden, 0.0f);
  dk.assign(dq.size(), 0.0f);
  dv.assign(dq.size(), 0.0f);
  std::vector<float> dprobs(s * s), dscores(s * s), dq_h(s * dh), dk_h(s * dh), dv_h(s * dh);
  for (size_t b = 0; b < cfg.batch; ++b)
    for (size_t h = 0; h < cfg.heads; ++h) {
      const std::vector<float> q = head_slice(cfg, act.q, b, h), k = head_slice(cfg, act.k, b, h);
      const std::vector<float> v = head_slice(cfg, act.v, b, h), dctx = head_slice(cfg, dcontext, b, h);
      const float* probs = act.probs.data() + (b * cfg.heads + h) * s * s;
      gemm(dctx.data(), v.data(), dprobs.data(), s, s, dh, false, true);
      gemm(probs, dctx.data(), dv_h.data(), s, dh, s, true, false);
      softmax_bwd(dprobs.data(), probs, dscores.data(), s, s);
      scale_in_place(dscores, cfg.attention_scale());
      gemm(dscores.data(), k.data(), dq_h.data(), s, dh, s, false, false);
      gemm(dscores.data(), q.data(), dk_h.data(), s, dh, s, true, false);
      put_head_slice(cfg, dq_h, b, h, dq);
      put_head_slice(cfg, dk_h, b, h, dk);
      put_head_slice(cfg, dv_h, b, h, dv);
    }
}

}  // namespace

float BertLayerConfig::attention_scale() const {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim())));
}

template <class T>
BertLayerActivations<T> bert_layer_forward(const BertLayerConfig& cfg, const BertLayerParams<T>& params,
                                           const float* x, const float* loss_weights) {
  const size_t tokens = cfg.tokens(), hidden = cfg.hidden, ffn = cfg.ffn;
  const std::vector<T> input(x, x + tokens * hidden);
  BertLayerActivations<T> act;
  act.q.resize(tokens * hidden);
  act.k.resize(tokens * hidden);
  act.v.resize(tokens * hidden);
  linear(input.data(), params.wq.data(), params.bq.data(), act.q.data(), tokens, hidden, hidden);
  linear(input.data(), params.wk.data(), params.bk.data(), act.k.data(), tokens, hidden, hidden);
  linear(input.data(), params.wv.data(), params.bv.data(), act.v.data(), tokens, hidden, hidden);
  attention_forward(cfg, act);

  std::vector<T> attn(tokens * hidden);
  linear(act.context.data(), params.wo.data(), params.bo.data(), attn.data(), tokens, hidden, hidden);
  act.h1.resize(tokens * hidden);
  add(input.data(), attn.data(), act.h1.data(), act.h1.size());
  act.y1.resize(act.h1.size());
  act.mean1.resize(tokens);
  act.rstd1.resize(tokens);
  layernorm(act.h1.data(), params.ln1_gamma.data(), params.ln1_beta.data(), act.y1.data(), act.mean1.data(),
            act.rstd1.data(), tokens, hidden, cfg.layernorm_eps);

  act.ffn_pre.resize(tokens * ffn);
  act.ffn_act.resize(tokens * ffn);
  linear(act.y1.data(), params.w1.data(), params.b1.data(), act.ffn_pre.data(), tokens, hidden, ffn);
  gelu_tanh(act.ffn_pre.data(), act.ffn_act.data(), act.ffn_act.size());
  std::vector<T> ffn_out(tokens * hidden);
  linear(act.ffn_act.data(), params.w2.data(), params.b2.data(), ffn_out.data(), tokens, ffn, hidden);
  act.h2.resize(tokens * hidden);
  add(act.y1.data(), ffn_out.data(), act.h2.data(), act.h2.size());
  act.y.resize(act.h2.size());
  act.mean2.resize(tokens);
  act.rstd2.resize(tokens);
  layernorm(act.h2.data(), params.ln2_gamma.data(), params.ln2_beta.data(), act.y.data(), act.mean2.data(),
            act.rstd2.data(), tokens, hidden, cfg.layernorm_eps);

  const std::vector<T> r(loss_weights, loss_weights + act.y.size());
  std::vector<T> weighted(act.y.size());
  mul(act.y.data(), r.data(), weighted.data(), weighted.size());
  act.loss = mean_dim0(weighted.data(), weighted.size());
  return act;
}

void BertLayer::init(uint32_t seed) {
  const size_t hidden = config.hidden, ffn = config.ffn;
  UniformSource source(seed);
  const float bound = 0.02f * std::sqrt(3.0f);
  for (std::vector<float>* w : {&params.wq, &params.wk, &params.wv, &params.wo}) {
    w->resize(hidden * hidden);
    source.fill(*w, bound);
  }
  params.w1.resize(ffn * hidden);
  source.fill(params.w1, bound);
  params.w2.resize(hidden * ffn);
  source.fill(params.w2, bound);
  for (std::vector<float>* b : {&params.bq, &params.bk, &params.bv, &params.bo, &params.b2, &params.ln1_beta,
                                &params.ln2_beta})
    b->assign(hidden, 0.0f);
  params.b1.assign(ffn, 0.0f);
  params.ln1_gamma.assign(hidden, 1.0f);
  params.ln2_gamma.assign(hidden, 1.0f);
  loss_weights.resize(config.tokens() * hidden);
  source.fill(loss_weights, 1.0f);
  grads = zeros_like(params);
  exp_avg = zeros_like(params);
  exp_avg_sq = zeros_like(params);
  steps = 0;
}

float BertLayer::compute_gradients(const float* x) {
  const size_t tokens = config.tokens(), hidden = config.hidden, ffn = config.ffn;
  const BertLayerActivations<float> act = bert_layer_forward(config, params, x, loss_weights.data());
  grads = zeros_like(params);
  BertLayerParams<float>& g = grads;

  // d(mean)/d(y * r) is 1 / count (f32 division), then mul's backward: dy = that * r.
  const float inv_count = 1.0f / static_cast<float>(act.y.size());
  std::vector<float> dy(act.y.size());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = inv_count * loss_weights[i];

  std::vector<float> dh2(dy.size());
  layernorm_bwd_gamma_beta(dy.data(), act.h2.data(), act.mean2.data(), act.rstd2.data(), g.ln2_gamma.data(),
                           g.ln2_beta.data(), tokens, hidden);
  layernorm_bwd(dy.data(), act.h2.data(), act.mean2.data(), act.rstd2.data(), params.ln2_gamma.data(), dh2.data(),
                tokens, hidden);

  std::vector<float> dffn_act(tokens * ffn), dffn_pre(tokens * ffn), dy1_ffn(tokens * hidden), dy1(tokens * hidden);
  linear_bwd(dh2.data(), act.ffn_act.data(), params.w2.data(), dffn_act.data(), g.w2.data(), g.b2.data(), tokens, ffn,
             hidden);
  gelu_tanh_bwd(dffn_act.data(), act.ffn_pre.data(), dffn_pre.data(), dffn_pre.size());
  linear_bwd(dffn_pre.data(), act.y1.data(), params.w1.data(), dy1_ffn.data(), g.w1.data(), g.b1.data(), tokens,
             hidden, ffn);
  add(dh2.data(), dy1_ffn.data(), dy1.data(), dy1.size());

  std::vector<float> dh1(dy1.size());
  layernorm_bwd_gamma_beta(dy1.data(), act.h1.data(), act.mean1.data(), act.rstd1.data(), g.ln1_gamma.data(),
                           g.ln1_beta.data(), tokens, hidden);
  layernorm_bwd(dy1.data(), act.h1.data(), act.mean1.data(), act.rstd1.data(), params.ln1_gamma.data(), dh1.data(),
                tokens, hidden);

  std::vector<float> dcontext(tokens * hidden), dq, dk, dv;
  linear_bwd(dh1.data(), act.context.data(), params.wo.data(), dcontext.data(), g.wo.data(), g.bo.data(), tokens,
             hidden, hidden);
  attention_backward(config, act, dcontext, dq, dk, dv);
  linear_bwd(dq.data(), x, params.wq.data(), nullptr, g.wq.data(), g.bq.data(), tokens, hidden, hidden);
  linear_bwd(dk.data(), x, params.wk.data(), nullptr, g.wk.data(), g.bk.data(), tokens, hidden, hidden);
  linear_bwd(dv.data(), x, params.wv.data(), nullptr, g.wv.data(), g.bv.data(), tokens, hidden, hidden);
  return act.loss;
}

float BertLayer::step(const float* x) {
  const float loss = compute_gradients(x);
  ++steps;
  auto p = params.tensors();
  auto gr = grads.tensors();
  auto m = exp_avg.tensors();
  auto v = exp_avg_sq.tensors();
  for (size_t i = 0; i < p.size(); ++i)
    adam_step(config.optimizer, adam_factors_on_card(config.optimizer, steps), p[i]->data(), gr[i]->data(), m[i]->data(), v[i]->data(), p[i]->size());
  return loss;
}

template BertLayerActivations<float> bert_layer_forward<float>(const BertLayerConfig&, const BertLayerParams<float>&,
                                                               const float*, const float*);
template BertLayerActivations<double> bert_layer_forward<double>(const BertLayerConfig&,
                                                                 const BertLayerParams<double>&, const float*,
                                                                 const float*);

}  // namespace hpusim::synapse::zoo_reference
