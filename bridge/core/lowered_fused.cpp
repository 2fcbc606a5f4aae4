// The hpex fused operators (habana_frameworks.torch.hpex), as torch.ops.hpu ops:
//   fused_adam_ / fused_sgd_ / fused_clip_norm_: one tensor-list Synapse node per parameter group
//     (synapse/tpc_kernels/tensor_list.cpp); the optimizers' step count and lr live in a two-element
//     device tensor the kernels read, so a training loop keeps one graph;
//   sdpa_fwd / sdpa_bwd: scaled dot-product attention as one recorded op each, lowered to MME
//     batch GEMMs and TPC softmax / dropout kernels (the probabilities kept for the backward, or
//     recomputed there).
// Each op also has a CPU kernel with PyTorch's unfused math: the CPU fallback, and what the op does
// on CPU tensors.
#include <torch/library.h>

#include <cmath>
#include <string>
#include <vector>

#include "bridge/core/lowering.h"

namespace hpusim::bridge {
namespace {

using L = Lowering;
using C = LoweredCall;

void require_f32(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors)
    if (t.scalar_type() != at::kFloat) throw CannotLower("the fused optimizer kernels take f32 tensors");
}

void check_lengths(const char* op, size_t n, std::initializer_list<size_t> others) {
  for (size_t m : others)
    TORCH_CHECK(m == n, "hpu::", op, ": the tensor lists must have the same length (", n, " params, got a list of ", m, ")");
}

// ---- optimizers ----

void fused_adam(L& l, const C& c) {
  const auto params = c.args[0].toTensorVector(), grads = c.args[1].toTensorVector();
  const auto exp_avgs = c.args[2].toTensorVector(), exp_avg_sqs = c.args[3].toTensorVector();
  const at::Tensor& state = c.tensor(4);
  if (params.empty() || grads.size() != params.size() || exp_avgs.size() != params.size() ||
      exp_avg_sqs.size() != params.size())
    throw CannotLower("list lengths: the CPU kernel reports them");
  for (const auto* list : {&params, &grads, &exp_avgs, &exp_avg_sqs}) require_f32(*list);
  require_f32({state});
  std::vector<ValueId> in{l.input(state)}, out;
  for (size_t i = 0; i < params.size(); ++i) {
    for (const at::Tensor* t : {&params[i], &grads[i], &exp_avgs[i], &exp_avg_sqs[i]}) in.push_back(l.input(*t));
  }
  out.push_back(l.output(state));
  for (size_t i = 0; i < params.size(); ++i) {
    for (const at::Tensor* t : {&params[i], &exp_avgs[i], &exp_avg_sqs[i]}) out.push_back(l.output(*t));
  }
  const bool decoupled = c.args[10].toBool();
  l.node(decoupled ? "fused_adamw_f32" : "fused_adam_f32", in, out,
         {static_cast<float>(c.args[5].toDouble()), static_cast<float>(c.args[6].toDouble()),
          static_cast<float>(c.args[7].toDouble()), static_cast<float>(c.args[8].toDouble()),
          c.args[9].toBool() ? 1.0f : 0.0f});
}

void fused_adam_cpu(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                    const at::Tensor& state, double beta1, double beta2, double eps, double weight_decay,
                    bool bias_correction, bool decoupled) {
  check_lengths("fused_adam_", params.size(), {grads.size(), exp_avgs.size(), exp_avg_sqs.size()});
  TORCH_CHECK(state.numel() == 2, "hpu::fused_adam_: the state must have 2 elements (steps taken, lr)");
  const at::Tensor s = state.to(at::kDouble);
  const double step = s[0].item<double>() + 1.0, lr = s[1].item<double>();
  const double bc1 = bias_correction ? 1.0 - std::pow(beta1, step) : 1.0;
  const double bc2 = bias_correction ? 1.0 - std::pow(beta2, step) : 1.0;
  for (size_t i = 0; i < params.size(); ++i) {
    at::Tensor p = params[i], g = grads[i], m = exp_avgs[i], v = exp_avg_sqs[i];
    if (decoupled) {
      p.mul_(1.0 - lr * weight_decay);
    } else if (weight_decay != 0.0) {
      g = g.add(p, weight_decay);
    }
    m.lerp_(g, 1.0 - beta1);
    v.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
    const at::Tensor denom = (v.sqrt() / std::sqrt(bc2)).add_(eps);
    p.addcdiv_(m, denom, -lr / bc1);
  }
  state.select(0, 0).add_(1);
}

void fused_sgd(L& l, const C& c) {
  const auto params = c.args[0].toTensorVector(), grads = c.args[1].toTensorVector();
  const auto buffers = c.args[2].toTensorVector();
  const at::Tensor& state = c.tensor(3);
  const double momentum = c.args[4].toDouble();
  if (params.empty() || grads.size() != params.size() || buffers.size() != (momentum != 0.0 ? params.size() : 0))
    throw CannotLower("list lengths: the CPU kernel reports them");
  for (const auto* list : {&params, &grads, &buffers}) require_f32(*list);
  require_f32({state});
  std::vector<ValueId> in{l.input(state)}, out{};
  for (size_t i = 0; i < params.size(); ++i) {
    in.push_back(l.input(params[i]));
    in.push_back(l.input(grads[i]));
    if (momentum != 0.0) in.push_back(l.input(buffers[i]));
  }
  out.push_back(l.output(state));
  for (size_t i = 0; i < params.size(); ++i) {
    out.push_back(l.output(params[i]));
    if (momentum != 0.0) out.push_back(l.output(buffers[i]));
  }
  l.node("fused_sgd_f32", in, out,
         {static_cast<float>(momentum), static_cast<float>(c.args[5].toDouble()),
          static_cast<float>(c.args[6].toDouble()), c.args[7].toBool() ? 1.0f : 0.0f});
}

void fused_sgd_cpu(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers, const at::Tensor& state,
                   double momentum, double dampening, double weight_decay, bool nesterov) {
  check_lengths("fused_sgd_", params.size(), {grads.size()});
  TORCH_CHECK(momentum == 0.0 || momentum_buffers.size() == params.size(),
              "hpu::fused_sgd_: with momentum, one momentum buffer per param (", params.size(), " params, ",
              momentum_buffers.size(), " buffers)");
  TORCH_CHECK(state.numel() == 2, "hpu::fused_sgd_: the state must have 2 elements (steps taken, lr)");
  TORCH_CHECK(!nesterov || (momentum > 0.0 && dampening == 0.0), "Nesterov momentum requires a momentum and zero dampening");
  const at::Tensor s = state.to(at::kDouble);
  const bool first = s[0].item<double>() == 0.0;
  const double lr = s[1].item<double>();
  for (size_t i = 0; i < params.size(); ++i) {
    at::Tensor p = params[i], d = grads[i];
    if (weight_decay != 0.0) d = d.add(p, weight_decay);
    if (momentum != 0.0) {
      at::Tensor buf = momentum_buffers[i];
      if (first) buf.copy_(d);
      else buf.mul_(momentum).add_(d, 1.0 - dampening);
      d = nesterov ? d.add(buf, momentum) : buf;
    }
    p.add_(d, -lr);
  }
  state.select(0, 0).add_(1);
}

// ---- gradient clipping ----

constexpr int64_t kNormChunks = 64;   // tensor_list.cpp's partial sums per gradient

void fused_clip_norm(L& l, const C& c) {
  const auto grads = c.args[0].toTensorVector();
  if (grads.empty()) throw CannotLower("no gradients");
  require_f32(grads);
  std::vector<ValueId> in, out;
  for (const at::Tensor& g : grads) in.push_back(l.input(g));
  for (const at::Tensor& g : grads) out.push_back(l.output(g));
  out.push_back(l.output(c.outputs.at(0)));
  out.push_back(l.temp(at::kFloat, {static_cast<uint32_t>(kNormChunks * static_cast<int64_t>(grads.size()) + 1)}));
  l.node("fused_clip_norm_f32", in, out, {static_cast<float>(c.args[1].toDouble())});
}

at::Tensor fused_clip_norm_cpu(at::TensorList grads, double max_norm) {
  if (grads.empty()) return at::zeros({});
  std::vector<at::Tensor> norms;
  for (const at::Tensor& g : grads) norms.push_back(at::linalg_vector_norm(g, 2.0));
  const at::Tensor total = at::linalg_vector_norm(at::stack(norms), 2.0);
  const at::Tensor coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
  for (const at::Tensor& g : grads) g.mul_(coef);
  return total;
}

// ---- scaled dot-product attention ----

struct Attention {
  at::ScalarType dtype;
  std::string sfx;
  std::vector<int64_t> scores;   // torch shape: batch dims, L, S
};

Attention attention_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const at::ScalarType dt = q.scalar_type();
  if ((dt != at::kFloat && dt != at::kBFloat16) || k.scalar_type() != dt || v.scalar_type() != dt)
    throw CannotLower("attention operands other than one f32 or bf16 dtype");
  if (q.dim() < 3 || q.dim() > 5 || k.dim() != q.dim() || v.dim() != q.dim())
    throw CannotLower("attention operands of 3 to 5 dims each");
  for (int64_t d = 0; d + 2 < q.dim(); ++d)
    if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) throw CannotLower("batch dims that differ");
  if (k.size(-1) != q.size(-1) || v.size(-2) != k.size(-2)) throw CannotLower("mismatched head sizes");
  std::vector<int64_t> scores(q.sizes().begin(), q.sizes().end());
  scores.back() = k.size(-2);
  return {dt, guid_suffix(dt), scores};
}

void batch_gemm(L& l, ValueId a, bool transpose_a, ValueId b, bool transpose_b, ValueId out) {
  const hpusim_GemmParams params{static_cast<uint8_t>(transpose_a), static_cast<uint8_t>(transpose_b)};
  l.node_params("batch_gemm", {a, b}, {out}, &params, sizeof params);
}

// softmax(q k^T * scale + bias) into `probs`.
void attention_probs(L& l, const Attention& a, ValueId q, ValueId k, const c10::IValue& bias, double scale,
                     ValueId probs) {
  const std::vector<uint32_t> shape = synapse_shape(a.scores);
  const ValueId scores = l.temp(a.dtype, shape);
  batch_gemm(l, q, false, k, true, scores);
  ValueId s = scaled(l, scores, scale, a.dtype);
  if (!bias.isNone()) {
    const at::Tensor& b = bias.toTensor();
    if (b.scalar_type() != a.dtype) throw CannotLower("an attention bias of another dtype than q");
    const ValueId biased = l.temp(a.dtype, shape);
    l.node("add_fwd" + a.sfx, {s, l.broadcast_input(b.expand(a.scores))}, {biased});
    s = biased;
  }
  l.node("softmax_fwd" + a.sfx, {s}, {probs});
}

// sdpa_fwd(q, k, v, bias?, dropout_p, scale, save_probs) -> (out, probs, seed)
void sdpa_fwd(L& l, const C& c) {
  const at::Tensor &q = c.tensor(0), &k = c.tensor(1), &v = c.tensor(2);
  const Attention a = attention_of(q, k, v);
  const double p = c.args[4].toDouble(), scale = c.args[5].toDouble();
  const bool save = c.args[6].toBool();
  const std::vector<uint32_t> shape = synapse_shape(a.scores);
  const ValueId probs = save ? l.output(c.outputs.at(1)) : l.temp(a.dtype, shape);
  attention_probs(l, a, l.input(q), l.input(k), c.args[3], scale, probs);
  ValueId kept_probs = probs;
  if (p > 0.0) {
    kept_probs = l.temp(a.dtype, shape);
    l.node("dropout_fwd" + a.sfx, {probs, seed_input_into(l, c.outputs.at(2), std::nullopt)},
           {kept_probs, l.temp(a.dtype, shape)}, {static_cast<float>(p)});
  }
  batch_gemm(l, kept_probs, false, l.input(v), false, l.output(c.outputs.at(0)));
}

std::vector<at::Tensor> sdpa_fwd_outputs(const std::vector<c10::IValue>& args) {
  const at::Tensor &q = args[0].toTensor(), &k = args[1].toTensor(), &v = args[2].toTensor();
  const auto options = q.options();
  std::vector<int64_t> out(q.sizes().begin(), q.sizes().end()), scores = out;
  out.back() = v.size(-1);
  scores.back() = k.size(-2);
  return {at::empty(out, options), args[6].toBool() ? at::empty(scores, options) : at::empty({0}, options),
          at::empty({1}, options.dtype(at::kInt))};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> sdpa_fwd_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                            const std::optional<at::Tensor>& bias, double dropout_p,
                                                            double scale, bool save_probs) {
  TORCH_CHECK(dropout_p == 0.0, "hpu::sdpa_fwd on the CPU takes dropout_p = 0 (the card's dropout draws from its own ",
              "generator), got ", dropout_p);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  if (bias.has_value()) scores = scores + *bias;
  const at::Tensor probs = at::softmax(scores, -1);
  return {at::matmul(probs, v), save_probs ? probs : at::empty({0}, q.options()), at::zeros({1}, q.options().dtype(at::kInt))};
}

// sdpa_bwd(grad, q, k, v, bias?, probs, seed, dropout_p, scale) -> (dq, dk, dv); an empty probs:
// recomputed from q, k and the bias.
void sdpa_bwd(L& l, const C& c) {
  const at::Tensor &q = c.tensor(1), &k = c.tensor(2), &v = c.tensor(3), &probs = c.tensor(5);
  const Attention a = attention_of(q, k, v);
  if (c.tensor(0).scalar_type() != a.dtype) throw CannotLower("a gradient of another dtype");
  const double p = c.args[7].toDouble(), scale = c.args[8].toDouble();
  const std::vector<uint32_t> shape = synapse_shape(a.scores);
  const ValueId qv = l.input(q), kv = l.input(k), dout = l.input(c.tensor(0));
  ValueId P = 0;
  if (probs.numel() == 0) {
    P = l.temp(a.dtype, shape);
    attention_probs(l, a, qv, kv, c.args[4], scale, P);
  } else {
    P = l.input(probs);
  }
  ValueId kept_probs = P, kept = 0;
  if (p > 0.0) {
    kept_probs = l.temp(a.dtype, shape);
    kept = l.temp(a.dtype, shape);
    l.node("dropout_fwd" + a.sfx, {P, l.input(c.tensor(6))}, {kept_probs, kept}, {static_cast<float>(p)});
  }
  batch_gemm(l, kept_probs, true, dout, false, l.output(c.outputs.at(2)));   // dv = P^T dO
  ValueId dP = l.temp(a.dtype, shape);
  batch_gemm(l, dout, false, l.input(v), true, dP);                        // dO v^T
  if (p > 0.0) {
    const ValueId undropped = l.temp(a.dtype, shape);
    l.node("dropout_bwd" + a.sfx, {dP, kept}, {undropped}, {static_cast<float>(p)});
    dP = undropped;
  }
  const ValueId dS = l.temp(a.dtype, shape);
  l.node("softmax_bwd" + a.sfx, {dP, P}, {dS});
  const ValueId dSs = scaled(l, dS, scale, a.dtype);
  batch_gemm(l, dSs, false, kv, false, l.output(c.outputs.at(0)));   // dq = dS k * scale
  batch_gemm(l, dSs, true, qv, false, l.output(c.outputs.at(1)));    // dk = dS^T q * scale
}

std::vector<at::Tensor> sdpa_bwd_outputs(const std::vector<c10::IValue>& args) {
  return {at::empty_like(args[1].toTensor()), at::empty_like(args[2].toTensor()), at::empty_like(args[3].toTensor())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> sdpa_bwd_cpu(const at::Tensor& grad, const at::Tensor& q,
                                                            const at::Tensor& k, const at::Tensor& v,
                                                            const std::optional<at::Tensor>& bias,
                                                            const at::Tensor& probs, const at::Tensor& /*seed*/,
                                                            double dropout_p, double scale) {
  TORCH_CHECK(dropout_p == 0.0, "hpu::sdpa_bwd on the CPU takes dropout_p = 0, got ", dropout_p);
  at::Tensor P = probs;
  if (P.numel() == 0) {
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale;
    if (bias.has_value()) scores = scores + *bias;
    P = at::softmax(scores, -1);
  }
  const at::Tensor dv = at::matmul(P.transpose(-2, -1), grad);
  const at::Tensor dP = at::matmul(grad, v.transpose(-2, -1));
  const at::Tensor dS = at::_softmax_backward_data(dP, P, -1, P.scalar_type()) * scale;
  return {at::matmul(dS, k), at::matmul(dS.transpose(-2, -1), q), dv};
}

// Meta kernels: the shapes, for dynamo's fake tensors (torch.compile traces the ops into its graphs).
void fused_adam_meta(at::TensorList, at::TensorList, at::TensorList, at::TensorList, const at::Tensor&, double, double,
                     double, double, bool, bool) {}
void fused_sgd_meta(at::TensorList, at::TensorList, at::TensorList, const at::Tensor&, double, double, double, bool) {}
at::Tensor fused_clip_norm_meta(at::TensorList grads, double) {
  return at::empty({}, grads.empty() ? at::TensorOptions().dtype(at::kFloat).device(at::kMeta) : grads[0].options());
}
std::tuple<at::Tensor, at::Tensor, at::Tensor> sdpa_fwd_meta(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                             const std::optional<at::Tensor>&, double, double, bool save) {
  const auto outputs = sdpa_fwd_outputs({q, k, v, c10::IValue(), 0.0, 1.0, save});
  return {outputs[0], outputs[1], outputs[2]};
}
std::tuple<at::Tensor, at::Tensor, at::Tensor> sdpa_bwd_meta(const at::Tensor&, const at::Tensor& q, const at::Tensor& k,
                                                             const at::Tensor& v, const std::optional<at::Tensor>&,
                                                             const at::Tensor&, const at::Tensor&, double, double) {
  return {at::empty_like(q), at::empty_like(k), at::empty_like(v)};
}

}  // namespace
}  // namespace hpusim::bridge

TORCH_LIBRARY(hpu, m) {
  m.def("fused_adam_(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] exp_avg_sqs, "
        "Tensor(d!) state, float beta1, float beta2, float eps, float weight_decay, bool bias_correction, "
        "bool decoupled) -> ()");
  m.def("fused_sgd_(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] momentum_buffers, Tensor(c!) state, "
        "float momentum, float dampening, float weight_decay, bool nesterov) -> ()");
  m.def("fused_clip_norm_(Tensor(a!)[] grads, float max_norm) -> Tensor");
  m.def("sdpa_fwd(Tensor q, Tensor k, Tensor v, Tensor? bias, float dropout_p, float scale, bool save_probs) "
        "-> (Tensor, Tensor, Tensor)");
  m.def("sdpa_bwd(Tensor grad, Tensor q, Tensor k, Tensor v, Tensor? bias, Tensor probs, Tensor seed, "
        "float dropout_p, float scale) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(hpu, CPU, m) {
  using namespace hpusim::bridge;
  m.impl("fused_adam_", TORCH_FN(fused_adam_cpu));
  m.impl("fused_sgd_", TORCH_FN(fused_sgd_cpu));
  m.impl("fused_clip_norm_", TORCH_FN(fused_clip_norm_cpu));
  m.impl("sdpa_fwd", TORCH_FN(sdpa_fwd_cpu));
  m.impl("sdpa_bwd", TORCH_FN(sdpa_bwd_cpu));
}

TORCH_LIBRARY_IMPL(hpu, Meta, m) {
  using namespace hpusim::bridge;
  m.impl("fused_adam_", TORCH_FN(fused_adam_meta));
  m.impl("fused_sgd_", TORCH_FN(fused_sgd_meta));
  m.impl("fused_clip_norm_", TORCH_FN(fused_clip_norm_meta));
  m.impl("sdpa_fwd", TORCH_FN(sdpa_fwd_meta));
  m.impl("sdpa_bwd", TORCH_FN(sdpa_bwd_meta));
}

TORCH_LIBRARY_IMPL(hpu, HPU, m) {
  using namespace hpusim::bridge;
  const auto nothing = [](const std::vector<c10::IValue>&) { return std::vector<at::Tensor>{}; };
  register_lowering(m, "hpu::fused_adam_", &fused_adam, nothing);
  register_lowering(m, "hpu::fused_sgd_", &fused_sgd, nothing);
  register_lowering(m, "hpu::fused_clip_norm_", &fused_clip_norm, [](const std::vector<c10::IValue>& args) {
    const auto grads = args[0].toTensorVector();
    const auto options = grads.empty() ? at::TensorOptions().dtype(at::kFloat) : grads[0].options();
    return std::vector<at::Tensor>{at::empty({}, options)};
  });
  register_lowering(m, "hpu::sdpa_fwd", &sdpa_fwd, &sdpa_fwd_outputs);
  register_lowering(m, "hpu::sdpa_bwd", &sdpa_bwd, &sdpa_bwd_outputs);
}
