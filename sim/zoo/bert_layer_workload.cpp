// One post-LN BERT encoder layer (synapse/zoo_reference/bert_layer.h): its forward, backward and
// Adam step as one graph. Shapes are the graph's (dim 0 innermost): activations [tokens, features]
// are {features, tokens}, tokens = seq x batch with seq the faster; PyTorch's weight [out, in] is
// {in, out}.
//
// Heads: a [tokens, hidden] tensor is, byte for byte, {head_dim, heads, seq, batch}; a memcpy
// gives it that shape and a permute (dim 0 stays: the vector copy) swaps heads and seq, so each
// (head, batch) pair is a dense {head_dim, seq} matrix for batch_gemm. The way back is the same
// permute, then a memcpy to {hidden, tokens}.
//
// Adam is one fused_adam_f32 node over every parameter (a tensor-list kernel): it reads the step
// count and lr from a two-element state tensor and advances the count, so the graph is the same
// at every step and nothing is uploaded for the optimizer.
#include "sim/zoo/bert_layer_workload.h"

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "sim/zoo/api_graph.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;

class BertLayerWorkload : public Workload {
 public:
  explicit BertLayerWorkload(const ref::BertLayerConfig& config) : config_(config) {}

  std::string name() const override { return "bert-layer"; }

  void setup(synDeviceId device, uint32_t seed) override {
    seed_ = seed;
    ref::BertLayer init(config_);
    init.init(seed);
    build();
    tensors_ = std::make_unique<DeviceTensors>(device, graph_);
    const auto up = [&](const std::string& name, const std::vector<float>& v) { tensors_->upload(name, v); };
    const auto params = init.params.tensors();
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string name = ref::BertLayerParams<float>::kNames[i];
      const std::vector<float> zeros(params[i]->size());
      up(name, *params[i]);
      up("exp_avg_" + name, zeros);
      up("exp_avg_sq_" + name, zeros);
    }
    up("loss_weights", init.loss_weights);
    up("adam_state", {0.0f, config_.optimizer.lr});   // steps taken, lr: fused_adam_f32 reads and advances it
    tensors_->synchronize();
  }

  float step(uint32_t step) override {
    const std::vector<float> x = bert_layer_batch(seed_, step, config_);
    synRecipeHandle recipe = graph_.compile("bert_layer_step");
    tensors_->upload("x", x.data(), x.size() * 4);
    return tensors_->launch_for_loss(recipe);
  }

  std::vector<NamedTensor> parameters() override {
    return tensors_->download_all(ref::BertLayerParams<float>::kNames);
  }

 private:
  using Shape = std::vector<unsigned>;

  void build() {
    const unsigned b = static_cast<unsigned>(config_.batch), s = static_cast<unsigned>(config_.seq),
                   h = static_cast<unsigned>(config_.hidden), nh = static_cast<unsigned>(config_.heads),
                   f = static_cast<unsigned>(config_.ffn), d = h / nh, t = b * s;
    ApiGraph& g = graph_;
    const synDataType f32 = syn_type_single;
    const hpusim_GemmParams nt{0, 1}, tn{1, 0}, nn{0, 0};
    const Shape act{h, t}, heads{d, s, nh, b}, split{d, nh, s, b}, scores_shape{s, s, nh, b};
    const std::vector<float> swap_seq_heads{0, 2, 1, 3};

    synTensor x = g.persistent("x", f32, act), r = g.persistent("loss_weights", f32, act);
    synTensor loss = g.persistent("loss", f32, {1});
    shapes_ = {{"wq", {h, h}},        {"bq", {h, 1}},       {"wk", {h, h}}, {"bk", {h, 1}},
               {"wv", {h, h}},        {"bv", {h, 1}},       {"wo", {h, h}}, {"bo", {h, 1}},
               {"ln1_gamma", {h}},    {"ln1_beta", {h}},    {"w1", {h, f}}, {"b1", {f, 1}},
               {"w2", {f, h}},        {"b2", {h, 1}},       {"ln2_gamma", {h}}, {"ln2_beta", {h}}};
    std::map<std::string, synTensor> p;
    for (const char* name : ref::BertLayerParams<float>::kNames) p[name] = g.persistent(name, f32, shapes_.at(name));

    // y = x W^T + bias, {out, tokens}
    const auto linear = [&](const std::string& n, synTensor in, const std::string& w, const std::string& bias,
                            unsigned out) {
      synTensor mm = g.temp(n + "_mm", f32, {out, t}), y = g.temp(n, f32, {out, t});
      g.node("gemm", n + "_gemm", {in, p.at(w)}, {mm}, &nt, sizeof nt);
      g.node("add_fwd_f32", n + "_bias", {mm, p.at(bias)}, {y}, {});
      return y;
    };
    const auto to_heads = [&](const std::string& n, synTensor in) {
      synTensor sp = g.temp(n + "_split", f32, split), out = g.temp(n + "_heads", f32, heads);
      g.node("memcpy", n + "_split", {in}, {sp});
      g.node("permute_f32", n + "_to_heads", {sp}, {out}, swap_seq_heads);
      return out;
    };
    const auto from_heads = [&](const std::string& n, synTensor in) {
      synTensor sp = g.temp(n + "_split", f32, split), out = g.temp(n, f32, act);
      g.node("permute_f32", n + "_from_heads", {in}, {sp}, swap_seq_heads);
      g.node("memcpy", n + "_merge", {sp}, {out});
      return out;
    };
    // {1} constants
    const auto constant = [&](const std::string& n, float value) {
      synTensor c = g.temp(n, f32, {1});
      g.node("fill_f32", n, {}, {c}, {value});
      return c;
    };
    const auto layernorm = [&](const std::string& n, synTensor in, const std::string& gamma, const std::string& beta,
                               synTensor* mean, synTensor* rstd) {
      synTensor y = g.temp(n, f32, act);
      *mean = g.temp(n + "_mean", f32, {1, t});
      *rstd = g.temp(n + "_rstd", f32, {1, t});
      g.node("layernorm_fwd_f32", n, {in, p.at(gamma), p.at(beta)}, {y, *mean, *rstd}, {config_.layernorm_eps});
      return y;
    };

    // ---- forward ----
    synTensor q = linear("q", x, "wq", "bq", h), k = linear("k", x, "wk", "bk", h), v = linear("v", x, "wv", "bv", h);
    synTensor qh = to_heads("q", q), kh = to_heads("k", k), vh = to_heads("v", v);
    synTensor scores = g.temp("scores", f32, scores_shape), scaled = g.temp("scores_scaled", f32, scores_shape);
    synTensor probs = g.temp("probs", f32, scores_shape), ctxh = g.temp("context_heads", f32, heads);
    synTensor scale = constant("attention_scale", config_.attention_scale());
    g.node("batch_gemm", "attention_scores", {qh, kh}, {scores}, &nt, sizeof nt);
    g.node("mul_fwd_f32", "attention_scale_mul", {scores, scale}, {scaled}, {});
    g.node("softmax_fwd_f32", "attention_softmax", {scaled}, {probs}, {});
    g.node("batch_gemm", "attention_context", {probs, vh}, {ctxh}, &nn, sizeof nn);
    synTensor ctx = from_heads("context", ctxh);
    synTensor attn = linear("attn", ctx, "wo", "bo", h);
    synTensor h1 = g.temp("h1", f32, act);
    g.node("add_fwd_f32", "residual1", {x, attn}, {h1}, {});
    synTensor mean1, rstd1, mean2, rstd2;
    synTensor y1 = layernorm("ln1", h1, "ln1_gamma", "ln1_beta", &mean1, &rstd1);
    synTensor ffn_pre = linear("ffn_pre", y1, "w1", "b1", f);
    synTensor ffn_act = g.temp("ffn_act", f32, {f, t});
    g.node("gelu_tanh_fwd_f32", "gelu", {ffn_pre}, {ffn_act}, {});
    synTensor ffn_out = linear("ffn_out", ffn_act, "w2", "b2", h);
    synTensor h2 = g.temp("h2", f32, act);
    g.node("add_fwd_f32", "residual2", {y1, ffn_out}, {h2}, {});
    synTensor y = layernorm("ln2", h2, "ln2_gamma", "ln2_beta", &mean2, &rstd2);
    // loss = mean(y * r), one dim-0 reduction over every element
    synTensor weighted = g.temp("weighted", f32, act), flat = g.temp("weighted_flat", f32, {h * t});
    g.node("mul_fwd_f32", "loss_weights_mul", {y, r}, {weighted}, {});
    g.node("memcpy", "loss_flatten", {weighted}, {flat});
    g.node("reduce_mean_fwd_f32", "loss_mean", {flat}, {loss}, {0.0f});

    // ---- backward ----
    std::map<std::string, synTensor> grad;
    const auto param_grad = [&](const std::string& name) {
      return grad[name] = g.temp("d" + name, f32, shapes_.at(name));
    };
    // dW = dy^T in, db = dy summed over the tokens, din = dy W (unless in_features is 0)
    const auto linear_bwd = [&](const std::string& n, synTensor dy, synTensor in, const std::string& w,
                                const std::string& bias, unsigned in_features) {
      g.node("gemm", n + "_weight_grad", {dy, in}, {param_grad(w)}, &tn, sizeof tn);
      g.node("reduce_sum_fwd_f32", n + "_bias_grad", {dy}, {param_grad(bias)}, {1.0f});
      if (in_features == 0) return synTensor{};
      synTensor din = g.temp("d" + n + "_in", f32, {in_features, t});
      g.node("gemm", n + "_input_grad", {dy, p.at(w)}, {din}, &nn, sizeof nn);
      return din;
    };
    const auto layernorm_bwd = [&](const std::string& n, synTensor dy, synTensor in, synTensor mean, synTensor rstd,
                                   const std::string& gamma, const std::string& beta) {
      synTensor dx = g.temp("d" + n + "_in", f32, act);
      g.node("layernorm_bwd_gamma_beta_f32", n + "_gamma_beta_grad", {dy, in, mean, rstd},
             {param_grad(gamma), param_grad(beta)}, {});
      g.node("layernorm_bwd_f32", n + "_input_grad", {dy, in, mean, rstd, p.at(gamma)}, {dx}, {});
      return dx;
    };
    const float inv_count = 1.0f / static_cast<float>(h * t);
    synTensor dy = g.temp("dy", f32, act);
    g.node("mul_fwd_f32", "loss_grad", {r, constant("loss_grad_scale", inv_count)}, {dy}, {});
    synTensor dh2 = layernorm_bwd("ln2", dy, h2, mean2, rstd2, "ln2_gamma", "ln2_beta");
    synTensor dffn_act = linear_bwd("ffn_out", dh2, ffn_act, "w2", "b2", f);
    synTensor dffn_pre = g.temp("dffn_pre", f32, {f, t});
    g.node("gelu_tanh_bwd_f32", "gelu_bwd", {dffn_act, ffn_pre}, {dffn_pre}, {});
    synTensor dy1_ffn = linear_bwd("ffn_pre", dffn_pre, y1, "w1", "b1", h);
    synTensor dy1 = g.temp("dy1", f32, act);
    g.node("add_fwd_f32", "residual2_grad", {dh2, dy1_ffn}, {dy1}, {});
    synTensor dh1 = layernorm_bwd("ln1", dy1, h1, mean1, rstd1, "ln1_gamma", "ln1_beta");
    synTensor dctx = linear_bwd("attn", dh1, ctx, "wo", "bo", h);
    synTensor dctxh = to_heads("dcontext", dctx);
    synTensor dprobs = g.temp("dprobs", f32, scores_shape), dsoft = g.temp("dscores_softmax", f32, scores_shape);
    synTensor dscores = g.temp("dscores", f32, scores_shape);
    synTensor dqh = g.temp("dq_heads", f32, heads), dkh = g.temp("dk_heads", f32, heads);
    synTensor dvh = g.temp("dv_heads", f32, heads);
    g.node("batch_gemm", "attention_probs_grad", {dctxh, vh}, {dprobs}, &nt, sizeof nt);
    g.node("batch_gemm", "attention_v_grad", {probs, dctxh}, {dvh}, &tn, sizeof tn);
    g.node("softmax_bwd_f32", "attention_softmax_bwd", {dprobs, probs}, {dsoft}, {});
    g.node("mul_fwd_f32", "attention_scale_grad", {dsoft, scale}, {dscores}, {});
    g.node("batch_gemm", "attention_q_grad", {dscores, kh}, {dqh}, &nn, sizeof nn);
    g.node("batch_gemm", "attention_k_grad", {dscores, qh}, {dkh}, &tn, sizeof tn);
    linear_bwd("q", from_heads("dq", dqh), x, "wq", "bq", 0);
    linear_bwd("k", from_heads("dk", dkh), x, "wk", "bk", 0);
    linear_bwd("v", from_heads("dv", dvh), x, "wv", "bv", 0);

    // ---- Adam, in place: one tensor-list node over every parameter, each new value at its old
    // value's place (same section); the step count and lr in the state tensor it reads and
    // advances. Created last, so every reader of a parameter comes before its update. ----
    const ref::AdamConfig& o = config_.optimizer;
    std::vector<synTensor> adam_in{g.persistent("adam_state", f32, {2})};
    std::vector<synTensor> adam_out{g.persistent("adam_state_new", f32, {2}, "adam_state")};
    for (const char* name : ref::BertLayerParams<float>::kNames) {
      const std::string n = name, m_name = "exp_avg_" + n, v_name = "exp_avg_sq_" + n;
      const Shape& shape = shapes_.at(n);
      adam_in.insert(adam_in.end(), {p.at(n), grad.at(n), g.persistent(m_name, f32, shape), g.persistent(v_name, f32, shape)});
      adam_out.insert(adam_out.end(), {g.persistent(n + "_new", f32, shape, n), g.persistent(m_name + "_new", f32, shape, m_name),
                                       g.persistent(v_name + "_new", f32, shape, v_name)});
    }
    g.node("fused_adam_f32", "adam", adam_in, adam_out, {o.beta1, o.beta2, o.eps, o.weight_decay, 1.0f});
  }

  ref::BertLayerConfig config_;
  uint32_t seed_ = 0;
  ApiGraph graph_;
  std::unique_ptr<DeviceTensors> tensors_;
  std::map<std::string, Shape> shapes_;
};

}  // namespace

std::vector<float> bert_layer_batch(uint32_t seed, uint32_t step, const ref::BertLayerConfig& config) {
  std::mt19937 engine(seed * 7919u + step);
  std::vector<float> x(config.tokens() * config.hidden);
  // 24-bit fractions, then 2u - 1: exact, the same floats on every standard library.
  for (float& v : x) v = 2.0f * (static_cast<float>(engine() >> 8) * (1.0f / 16777216.0f)) - 1.0f;
  return x;
}

std::unique_ptr<Workload> make_bert_layer_workload(const ref::BertLayerConfig& config) {
  if (config.heads == 0 || config.hidden % config.heads != 0) {
    throw std::invalid_argument("bert-layer: hidden " + std::to_string(config.hidden) + " is not a multiple of heads " +
                                std::to_string(config.heads));
  }
  return std::make_unique<BertLayerWorkload>(config);
}

}  // namespace hpusim::zoo
