// The conv block of synapse/zoo_reference/conv_block.h (conv 3x3 -> layernorm over channels ->
// relu -> 2x2 average pool -> mean loss), its backward and one SGD step as one graph. Shapes are
// the graph's (dim 0 innermost): x NHWC is {C, W, H, N}, the RSCK weight {K, C, S, R}, the
// conv output NPQK {K, Q, P, N}.
//
// The pool has no kernel: the conv output is copied (memcpy) into the 5-D view
// {K, 2, Q/2, 2, P/2 * N}, whose dim 1 is a window's column and dim 3 its row (P/2 and N merge,
// being adjacent and dense). Layernorm (over dim 0) and relu work on that view unchanged; then
// reduce_sum over dim 1 gives each row's pair, reduce_sum over dim 3 adds the two pairs and a
// multiply by 0.25 finishes the reference's ((x00 + x01) + (x10 + x11)) * 0.25 (the dims >= 1
// sums start from +0, which adds nothing: relu never outputs -0). The backward broadcasts
// dpooled * 0.25 back over dims 1 and 3 in one mul, and a memcpy turns layernorm's dx back into
// {K, Q, P, N} for dedw.
#include "sim/zoo/conv_block_workload.h"

#include <random>
#include <stdexcept>

#include "sim/zoo/api_graph.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;

class ConvBlockWorkload : public Workload {
 public:
  explicit ConvBlockWorkload(const ref::ConvBlockConfig& config) : config_(config) {
    config_.conv();   // rejects an odd height or width
    if (config_.optimizer.dampening != 0.0f)
      throw std::invalid_argument("conv-block: SGD dampening must be 0 (one graph serves every step)");
  }

  std::string name() const override { return "conv-block"; }

  void setup(synDeviceId device, uint32_t seed) override {
    seed_ = seed;
    ref::ConvBlock init(config_);
    init.init(seed);
    build();
    tensors_ = std::make_unique<DeviceTensors>(device, graph_);
    const auto up = [&](const std::string& name, const std::vector<float>& v) { tensors_->upload(name, v); };
    const auto params = init.params.tensors();
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string name = ref::ConvBlockParams<float>::kNames[i];
      up(name, *params[i]);
      up("momentum_" + name, std::vector<float>(params[i]->size()));
    }
    tensors_->synchronize();
  }

  float step(uint32_t step) override {
    const std::vector<float> x = conv_block_batch(seed_, step, config_);
    synRecipeHandle recipe = graph_.compile("conv_block_step");
    tensors_->upload("x", x.data(), x.size() * 4);
    return tensors_->launch_for_loss(recipe);
  }

  std::vector<NamedTensor> parameters() override {
    return tensors_->download_all(ref::ConvBlockParams<float>::kNames);
  }

 private:
  void build() {
    const auto u = [](size_t v) { return static_cast<unsigned>(v); };
    const unsigned n = u(config_.batch), h = u(config_.height), w = u(config_.width);
    const unsigned c = u(config_.in_channels), k = u(config_.out_channels);
    const unsigned pooled_count = k * (w / 2) * (h / 2) * n;
    const std::vector<unsigned> nhwk = {k, w, h, n};
    const std::vector<unsigned> windows = {k, 2, w / 2, 2, h / 2 * n};
    const std::vector<unsigned> rows = {1, 2, w / 2, 2, h / 2 * n};   // layernorm's mean / rstd
    const std::vector<unsigned> pooled_shape = {k, 1, w / 2, 1, h / 2 * n};
    ApiGraph& g = graph_;
    const synDataType f32 = syn_type_single;

    synTensor x = g.persistent("x", f32, {c, w, h, n});
    synTensor weight = g.persistent("weight", f32, {k, c, 3, 3});
    synTensor gamma = g.persistent("gamma", f32, {k}), beta = g.persistent("beta", f32, {k});
    synTensor loss = g.persistent("loss", f32, {1});
    const hpusim_ConvolutionParams conv{1, 1, 1, 1, 1, 1};

    // forward
    synTensor conv_out = g.temp("conv", f32, nhwk), conv5 = g.temp("conv_windows", f32, windows);
    synTensor normalized = g.temp("normalized", f32, windows);
    synTensor mean = g.temp("ln_mean", f32, rows), rstd = g.temp("ln_rstd", f32, rows);
    synTensor activated = g.temp("relu", f32, windows);
    synTensor row_pairs = g.temp("row_pairs", f32, {k, 1, w / 2, 2, h / 2 * n});
    synTensor window_sums = g.temp("window_sums", f32, pooled_shape);
    synTensor quarter = g.temp("quarter", f32, {1});
    synTensor pooled = g.temp("pooled", f32, pooled_shape), pooled_flat = g.temp("pooled_flat", f32, {pooled_count});
    g.node("spatial_convolution", "conv", {x, weight}, {conv_out}, &conv, sizeof conv);
    g.node("memcpy", "conv_to_windows", {conv_out}, {conv5});
    g.node("layernorm_fwd_f32", "layernorm", {conv5, gamma, beta}, {normalized, mean, rstd}, {config_.layernorm_eps});
    g.node("relu_fwd_f32", "relu", {normalized}, {activated}, {});
    g.node("reduce_sum_fwd_f32", "pool_columns", {activated}, {row_pairs}, {1.0f});
    g.node("reduce_sum_fwd_f32", "pool_rows", {row_pairs}, {window_sums}, {3.0f});
    g.node("fill_f32", "pool_scale", {}, {quarter}, {0.25f});
    g.node("mul_fwd_f32", "pool_average", {window_sums, quarter}, {pooled}, {});
    g.node("memcpy", "pooled_flatten", {pooled}, {pooled_flat});
    g.node("reduce_mean_fwd_f32", "mean_loss", {pooled_flat}, {loss}, {0.0f});

    // backward
    synTensor dpooled = g.temp("dpooled", f32, pooled_shape);
    synTensor window_quarter = g.temp("window_quarter", f32, {1, 2, 1, 2, 1});
    synTensor dactivated = g.temp("drelu", f32, windows), dnormalized = g.temp("dnormalized", f32, windows);
    synTensor dconv5 = g.temp("dconv_windows", f32, windows), dconv = g.temp("dconv", f32, nhwk);
    synTensor dweight = g.temp("dweight", f32, {k, c, 3, 3});
    synTensor dgamma = g.temp("dgamma", f32, {k}), dbeta = g.temp("dbeta", f32, {k});
    g.node("fill_f32", "mean_loss_bwd", {}, {dpooled}, {1.0f / static_cast<float>(pooled_count)});
    g.node("fill_f32", "pool_bwd_scale", {}, {window_quarter}, {0.25f});
    g.node("mul_fwd_f32", "pool_bwd", {dpooled, window_quarter}, {dactivated}, {});
    g.node("relu_bwd_f32", "relu_bwd", {dactivated, normalized}, {dnormalized}, {});
    g.node("layernorm_bwd_gamma_beta_f32", "layernorm_bwd_gamma_beta", {dnormalized, conv5, mean, rstd},
           {dgamma, dbeta}, {});
    g.node("layernorm_bwd_f32", "layernorm_bwd", {dnormalized, conv5, mean, rstd, gamma}, {dconv5}, {});
    g.node("memcpy", "dconv_from_windows", {dconv5}, {dconv});
    g.node("dedw", "conv_weight_grad", {dconv, x}, {dweight}, &conv, sizeof conv);

    // SGD in place. first_step = 0 from a zero buffer: buf = 0 * momentum + g * 1 is g, as the
    // reference's first step (no gradient here is -0: every one is a sum from +0).
    const ref::SgdConfig& o = config_.optimizer;
    const std::vector<float> scalars = {o.lr, o.momentum, o.dampening, o.weight_decay, 0.0f};
    const auto sgd = [&](const std::string& p, synTensor param, synTensor grad, std::vector<unsigned> shape) {
      synTensor buf = g.persistent("momentum_" + p, f32, shape);
      synTensor param_out = g.persistent(p + "_new", f32, shape, p);
      synTensor buf_out = g.persistent("momentum_" + p + "_new", f32, shape, "momentum_" + p);
      g.node("sgd_momentum_f32", "sgd_" + p, {param, grad, buf}, {param_out, buf_out}, scalars);
    };
    sgd("weight", weight, dweight, {k, c, 3, 3});
    sgd("gamma", gamma, dgamma, {k});
    sgd("beta", beta, dbeta, {k});
  }

  ref::ConvBlockConfig config_;
  uint32_t seed_ = 0;
  ApiGraph graph_;
  std::unique_ptr<DeviceTensors> tensors_;
};

}  // namespace

std::vector<float> conv_block_batch(uint32_t seed, uint32_t step, const ref::ConvBlockConfig& config) {
  std::mt19937 engine(seed * 104729u + step);
  std::vector<float> x(config.batch * config.height * config.width * config.in_channels);
  // 2u - 1 of a 24-bit fraction u is exact in f32.
  for (float& v : x) v = static_cast<float>(engine() >> 8) * (1.0f / 8388608.0f) - 1.0f;
  return x;
}

std::unique_ptr<Workload> make_conv_block_workload(const ref::ConvBlockConfig& config) {
  return std::make_unique<ConvBlockWorkload>(config);
}

}  // namespace hpusim::zoo
