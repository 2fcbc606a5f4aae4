// The seeds' MNIST MLP (784-128-10, relu, dropout 0.5, log_softmax, nll_loss) at batch 200: its
// forward, backward and Adadelta step as one graph. Shapes are the graph's (dim 0 innermost): a
// row-major [rows, cols] matrix is {cols, rows}; PyTorch's weight [out, in] is {in, out}.
#include <random>

#include "sim/zoo/api_graph.h"
#include "sim/zoo/workload.h"
#include "synapse/zoo_reference/mlp.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;

constexpr uint32_t kDropoutSeed = 1234;   // a scalar of the kernel: fixed per graph (README.md)

class MlpWorkload : public Workload {
 public:
  std::string name() const override { return "mlp"; }

  void setup(synDeviceId device, uint32_t seed) override {
    seed_ = seed;
    ref::Mlp init(config_);
    init.init(seed);
    build();
    tensors_ = std::make_unique<DeviceTensors>(device, graph_);
    const auto up = [&](const std::string& name, const std::vector<float>& v) { tensors_->upload(name, v); };
    const std::vector<float> zeros1(init.params.w1.size()), zerob1(init.params.b1.size()),
        zeros2(init.params.w2.size()), zerob2(init.params.b2.size());
    up("w1", init.params.w1);
    up("b1", init.params.b1);
    up("w2", init.params.w2);
    up("b2", init.params.b2);
    for (const char* state : {"sq", "acc"}) {
      up(std::string(state) + "_w1", zeros1);
      up(std::string(state) + "_b1", zerob1);
      up(std::string(state) + "_w2", zeros2);
      up(std::string(state) + "_b2", zerob2);
    }
    tensors_->synchronize();
  }

  float step(uint32_t step) override {
    std::vector<float> x;
    std::vector<int32_t> target;
    mlp_batch(seed_, step, config_.batch, config_.inputs, config_.classes, &x, &target);
    synRecipeHandle recipe = graph_.compile("mlp_step");
    tensors_->upload("x", x.data(), x.size() * 4);
    tensors_->upload("target", target.data(), target.size() * 4);
    return tensors_->launch_for_loss(recipe);
  }

  std::vector<NamedTensor> parameters() override {
    return tensors_->download_all(ref::MlpParams<float>::kNames);
  }

 private:
  void build() {
    const unsigned b = static_cast<unsigned>(config_.batch), in = static_cast<unsigned>(config_.inputs),
                   h = static_cast<unsigned>(config_.hidden), c = static_cast<unsigned>(config_.classes);
    ApiGraph& g = graph_;
    const synDataType f32 = syn_type_single;
    synTensor x = g.persistent("x", f32, {in, b});
    synTensor target = g.persistent("target", syn_type_int32, {b});
    synTensor w1 = g.persistent("w1", f32, {in, h}), b1 = g.persistent("b1", f32, {h, 1});
    synTensor w2 = g.persistent("w2", f32, {h, c}), b2 = g.persistent("b2", f32, {c, 1});
    synTensor loss = g.persistent("loss", f32, {1});

    const hpusim_GemmParams nt{0, 1}, tn{1, 0}, nn{0, 0};
    // forward
    synTensor z1 = g.temp("z1", f32, {h, b}), a1 = g.temp("a1", f32, {h, b}), r1 = g.temp("r1", f32, {h, b});
    synTensor d1 = g.temp("d1", f32, {h, b}), mask = g.temp("mask", f32, {h, b});
    synTensor z2 = g.temp("z2", f32, {c, b}), a2 = g.temp("a2", f32, {c, b}), logp = g.temp("logp", f32, {c, b});
    synTensor total = g.temp("total_weight", f32, {1});
    g.node("gemm", "fc1", {x, w1}, {z1}, &nt, sizeof nt);
    g.node("add_fwd_f32", "fc1_bias", {z1, b1}, {a1}, {});
    g.node("relu_fwd_f32", "relu", {a1}, {r1}, {});
    g.node("dropout_fwd_f32", "dropout", {r1}, {d1, mask}, {config_.dropout_p, static_cast<float>(kDropoutSeed)});
    g.node("gemm", "fc2", {d1, w2}, {z2}, &nt, sizeof nt);
    g.node("add_fwd_f32", "fc2_bias", {z2, b2}, {a2}, {});
    g.node("log_softmax_fwd_f32", "log_softmax", {a2}, {logp}, {});
    g.node("nll_loss_fwd_f32", "nll_loss", {logp, target}, {loss, total}, {});
    // backward
    synTensor one = g.temp("one", f32, {1});
    synTensor dlogp = g.temp("dlogp", f32, {c, b}), dz2 = g.temp("dz2", f32, {c, b});
    synTensor dw2 = g.temp("dw2", f32, {h, c}), db2 = g.temp("db2", f32, {c, 1});
    synTensor dd1 = g.temp("dd1", f32, {h, b}), dr1 = g.temp("dr1", f32, {h, b}), dz1 = g.temp("dz1", f32, {h, b});
    synTensor dw1 = g.temp("dw1", f32, {in, h}), db1 = g.temp("db1", f32, {h, 1});
    g.node("fill_f32", "loss_grad", {}, {one}, {1.0f});
    g.node("nll_loss_bwd_f32", "nll_loss_bwd", {one, target, total}, {dlogp}, {});
    g.node("log_softmax_bwd_f32", "log_softmax_bwd", {dlogp, logp}, {dz2}, {});
    g.node("reduce_sum_fwd_f32", "fc2_bias_grad", {dz2}, {db2}, {1.0f});
    g.node("gemm", "fc2_weight_grad", {dz2, d1}, {dw2}, &tn, sizeof tn);
    g.node("gemm", "fc2_input_grad", {dz2, w2}, {dd1}, &nn, sizeof nn);
    g.node("dropout_bwd_f32", "dropout_bwd", {dd1, mask}, {dr1}, {config_.dropout_p});
    // From relu's result, as torch's relu backward is (threshold_backward on the result): the
    // same mask as from its input, and the bias add then has relu as its one reader (one kernel).
    g.node("relu_bwd_f32", "relu_bwd", {dr1, r1}, {dz1}, {});
    g.node("reduce_sum_fwd_f32", "fc1_bias_grad", {dz1}, {db1}, {1.0f});
    g.node("gemm", "fc1_weight_grad", {dz1, x}, {dw1}, &tn, sizeof tn);
    // Adadelta, in place: each new value at its old value's place (same section)
    const ref::AdadeltaConfig& o = config_.optimizer;
    const std::vector<float> scalars = {o.lr, o.rho, o.eps, o.weight_decay};
    const auto adadelta = [&](const std::string& p, synTensor param, synTensor grad, std::vector<unsigned> shape) {
      synTensor sq = g.persistent("sq_" + p, f32, shape), acc = g.persistent("acc_" + p, f32, shape);
      synTensor param_out = g.persistent(p + "_new", f32, shape, p);
      synTensor sq_out = g.persistent("sq_" + p + "_new", f32, shape, "sq_" + p);
      synTensor acc_out = g.persistent("acc_" + p + "_new", f32, shape, "acc_" + p);
      g.node("adadelta_f32", "adadelta_" + p, {param, grad, sq, acc}, {param_out, sq_out, acc_out}, scalars);
    };
    adadelta("w1", w1, dw1, {in, h});
    adadelta("b1", b1, db1, {h, 1});
    adadelta("w2", w2, dw2, {h, c});
    adadelta("b2", b2, db2, {c, 1});
  }

  ref::MlpConfig config_;
  uint32_t seed_ = 0;
  ApiGraph graph_;
  std::unique_ptr<DeviceTensors> tensors_;
};

}  // namespace

void mlp_batch(uint32_t seed, uint32_t step, size_t batch, size_t inputs, size_t classes, std::vector<float>* x,
               std::vector<int32_t>* target) {
  std::mt19937 engine(seed * 7919u + step);
  x->resize(batch * inputs);
  target->resize(batch);
  // 24-bit fractions: the same floats on every standard library.
  for (float& v : *x) v = static_cast<float>(engine() >> 8) * (1.0f / 16777216.0f);
  for (int32_t& t : *target) t = static_cast<int32_t>(engine() % classes);
}

std::unique_ptr<Workload> make_mlp_workload() { return std::make_unique<MlpWorkload>(); }

}  // namespace hpusim::zoo
