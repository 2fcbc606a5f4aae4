// The ops lowered to Synapse nodes, each with its lowering: which kernels of the library or MME
// GUIDs compute it, and what it refuses (CannotLower: the call takes the CPU fallback).
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "bridge/core/card.h"
#include "bridge/core/generator.h"
#include "bridge/core/hpu_graph.h"
#include "bridge/core/lazy.h"
#include "bridge/core/lowering.h"

namespace hpusim::bridge {

double scalar_of(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().item<double>();   // a CPU scalar tensor (a wrapped number)
  return v.toScalar().toDouble();
}

// An operand of an elementwise op in `dtype`: an HPU tensor (broadcasting), or a Python number
// or CPU scalar tensor as a one-element constant.
ValueId operand(Lowering& l, const c10::IValue& v, at::ScalarType dtype) {
  if (v.isTensor() && v.toTensor().is_hpu()) return l.input_as(v.toTensor(), dtype);
  if (v.isTensor() && v.toTensor().dim() != 0) throw CannotLower("a CPU tensor operand");
  return l.constant(scalar_of(v), dtype);
}

// x broadcast to `shape`: x + (-0), the -0 filling `shape` (x + -0 is x for every x, -0 and NaN
// included). For an output larger than every input along some dim (an expanded tensor's only
// operand), which the kernels' broadcasting does not produce.
ValueId expand_to(Lowering& l, ValueId x, const std::vector<uint32_t>& shape, at::ScalarType dtype) {
  const std::string sfx = guid_suffix(dtype);
  const ValueId zeros = l.temp(dtype, shape), y = l.temp(dtype, shape);
  l.node("fill" + sfx, {}, {zeros}, {-0.0f});
  l.node("add_fwd" + sfx, {x, zeros}, {y});
  return y;
}

// The inputs of an elementwise node writing `out`: the first is broadcast to out's shape when
// the inputs together do not cover it.
std::vector<ValueId> covering(Lowering& l, std::vector<ValueId> inputs, const at::Tensor& out) {
  return covering(l, std::move(inputs), out, out.scalar_type(), 0);
}

std::vector<ValueId> covering(Lowering& l, std::vector<ValueId> inputs, const at::Tensor& out, at::ScalarType dtype,
                              size_t which) {
  const std::vector<uint32_t> want = synapse_shape(out.sizes());
  std::vector<uint32_t> have(want.size(), 1);
  for (ValueId v : inputs) {
    const std::vector<uint32_t>& shape = l.value(v).region.shape;
    for (size_t d = 0; d < shape.size() && d < have.size(); ++d) have[d] = std::max(have[d], shape[d]);
  }
  if (have != want) inputs[which] = expand_to(l, inputs[which], want, dtype);
  return inputs;
}

ValueId whole_input(Lowering& l, const at::Tensor& t, at::ScalarType dtype) {
  const ValueId v = l.input_as(t, dtype);
  const std::vector<uint32_t> shape = synapse_shape(t.sizes());
  return l.value(v).region.shape == shape ? v : expand_to(l, v, shape, dtype);
}

ValueId seed_input(Lowering& l, const std::optional<at::Generator>& generator) {
  return seed_input_into(l, at::empty({1}, at::TensorOptions().dtype(at::kInt).device(c10::DeviceType::HPU)), generator);
}

ValueId seed_input_into(Lowering& l, const at::Tensor& seed_tensor, const std::optional<at::Generator>& generator) {
  if (HpuGraph* graph = Lazy::get().capturing()) {
    // A capture runs nothing: each replay draws the seed, so the draws follow the replays.
    graph->add_seed(seed_tensor, generator.has_value() ? *generator : default_hpu_generator());
    return l.input(seed_tensor);
  }
  HpuGenerator* hpu = hpu_generator(generator);
  uint32_t seed = 0;
  {
    const std::lock_guard<std::mutex> lock(hpu->mutex_);
    seed = hpu->next_kernel_seed();
  }
  Card::get().to_device(&seed, reinterpret_cast<uintptr_t>(seed_tensor.data_ptr()), sizeof seed);
  return l.input(seed_tensor);
}

// value * x as a new temporary (x itself when value is 1).
ValueId scaled(Lowering& l, ValueId x, double value, at::ScalarType dtype) {
  if (value == 1.0) return x;
  const ValueId y = l.temp(dtype, l.value(x).region.shape);
  l.node("mul_fwd" + arithmetic_suffix(dtype), {x, l.constant(value, dtype)}, {y});
  return y;
}

ValueId class_indices(Lowering& l, const at::Tensor& target) {
  if (target.scalar_type() != at::kLong && target.scalar_type() != at::kInt)
    throw CannotLower("class indices of another dtype");
  return l.input(target);
}

namespace {

void binary(Lowering& l, const LoweredCall& c, const std::string& kernel, bool alpha) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  const ValueId a = operand(l, c.args[0], dt);
  ValueId b = operand(l, c.args[1], dt);
  if (alpha) b = scaled(l, b, scalar_of(c.args[2]), dt);
  const std::string sfx = kernel == "div_fwd" ? guid_suffix(dt) : arithmetic_suffix(dt);
  l.node(kernel + sfx, covering(l, {a, b}, out), {l.output(out)});
}

void unary(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& out = c.outputs.at(0);
  l.node(kernel + guid_suffix(out.scalar_type()), covering(l, {l.input_as(c.tensor(0), out.scalar_type())}, out),
         {l.output(out)});
}

// grad, saved -> dx kernels (relu_bwd, tanh_bwd, sigmoid_bwd, gelu, silu). Not all of them
// broadcast: an expanded input (the gradient of a sum) is spread out.
void backward(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  if (c.tensor(0).sizes() != out.sizes() || c.tensor(1).sizes() != out.sizes()) throw CannotLower("a broadcast backward");
  l.node(kernel + guid_suffix(dt), {whole_input(l, c.tensor(0), dt), whole_input(l, c.tensor(1), dt)}, {l.output(out)});
}

void fill(Lowering& l, const at::Tensor& self, double value) {
  const bool integer = self.scalar_type() == at::kInt || self.scalar_type() == at::kLong;
  if (integer && !(value == std::floor(value) && std::fabs(value) <= 16777216.0))
    throw CannotLower("an integer fill value beyond 2^24");
  l.node("fill" + arithmetic_suffix(self.scalar_type()), {}, {l.output(self)}, {static_cast<float>(value)});
}

// A GEMM operand of torch shape (rows, cols) [batch dims first]: read in place, transposed in
// place (a dense block with the last two dims swapped), or through a permute.
struct GemmOperand {
  ValueId value;
  bool transposed;
};

GemmOperand gemm_operand(Lowering& l, const at::Tensor& t) {
  if (t.is_contiguous()) return {l.input(t), false};
  const int64_t r = t.dim();
  const int64_t rows = t.size(r - 2), cols = t.size(r - 1);
  bool swapped = t.stride(r - 2) == 1 && t.stride(r - 1) == rows;
  for (int64_t d = r - 3, expected = rows * cols; swapped && d >= 0; expected *= t.size(d), --d)
    swapped = t.size(d) == 1 || t.stride(d) == expected;
  if (swapped) {
    std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    std::swap(sizes[r - 2], sizes[r - 1]);
    const auto strides = c10::contiguous_strides(sizes);
    return {l.input(t.as_strided(sizes, strides, t.storage_offset())), true};
  }
  return {l.input(t), false};
}

void matmul(Lowering& l, const at::Tensor& a, const at::Tensor& b, ValueId out, bool batched) {
  if (a.scalar_type() != b.scalar_type() || (a.scalar_type() != at::kFloat && a.scalar_type() != at::kBFloat16))
    throw CannotLower("gemm operands of other dtypes");
  const GemmOperand x = gemm_operand(l, a), w = gemm_operand(l, b);
  const hpusim_GemmParams params{static_cast<uint8_t>(x.transposed), static_cast<uint8_t>(w.transposed)};
  l.node_params(batched ? "batch_gemm" : "gemm", {x.value, w.value}, {out}, &params, sizeof params);
}

void addmm(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  const double beta = scalar_of(c.args[3]), alpha = scalar_of(c.args[4]);
  if (beta == 0.0 && alpha == 1.0) return matmul(l, c.tensor(1), c.tensor(2), l.output(out), false);
  const ValueId product = l.temp(dt, synapse_shape(out.sizes()));
  matmul(l, c.tensor(1), c.tensor(2), product, false);
  const ValueId scaled_product = scaled(l, product, alpha, dt);
  if (beta == 0.0) {
    l.node("memcpy", {scaled_product}, {l.output(out)});
    return;
  }
  const ValueId bias = scaled(l, l.input_as(c.tensor(0), dt), beta, dt);
  l.node("add_fwd" + guid_suffix(dt), {scaled_product, bias}, {l.output(out)});
}

// softmax / log_softmax over `dim`: the kernels work on the last (innermost) dim, so another dim
// is read and written through its transpose with the last (permute nodes around the kernel).
void softmax(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& x = c.tensor(0);
  const at::Tensor& out = c.outputs.at(0);
  if (c.args[2].toBool()) throw CannotLower("half_to_float");
  const int64_t dim = x.dim() == 0 ? 0 : c10::maybe_wrap_dim(c.args[1].toInt(), x.dim());
  const at::ScalarType dt = out.scalar_type();
  const auto last = [&](const at::Tensor& t) { return t.dim() == 0 ? t : t.transpose(dim, -1); };
  l.node(kernel + guid_suffix(dt), {whole_input(l, last(x), dt)}, {l.output(last(out))});
}

void softmax_backward(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& out = c.outputs.at(0);
  const int64_t dim = out.dim() == 0 ? 0 : c10::maybe_wrap_dim(c.args[2].toInt(), out.dim());
  const at::ScalarType dt = out.scalar_type();
  const auto last = [&](const at::Tensor& t) { return t.dim() == 0 ? t : t.transpose(dim, -1); };
  l.node(kernel + guid_suffix(dt), {whole_input(l, last(c.tensor(0)), dt), whole_input(l, last(c.tensor(1)), dt)},
         {l.output(last(out))});
}

void nll_loss_forward(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.tensor(0);
  if (c.has(2) && c.tensor(2).defined()) throw CannotLower("class weights");
  if (c.args[3].toInt() != at::Reduction::Mean) throw CannotLower("a reduction other than mean");
  if (self.dim() > 2) throw CannotLower("K-dim nll_loss");
  const at::ScalarType dt = self.scalar_type();
  const ValueId loss = l.output_as(c.outputs.at(0), {});
  const ValueId total = l.output_as(c.outputs.at(1), {});
  l.node("nll_loss_fwd" + guid_suffix(dt), {l.input(self), class_indices(l, c.tensor(1))}, {loss, total},
         {static_cast<float>(c.args[4].toInt())});
}

void nll_loss_backward(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.tensor(1);
  if (c.has(3) && c.tensor(3).defined()) throw CannotLower("class weights");
  if (c.args[4].toInt() != at::Reduction::Mean) throw CannotLower("a reduction other than mean");
  if (self.dim() > 2) throw CannotLower("K-dim nll_loss");
  const at::ScalarType dt = self.scalar_type();
  l.node("nll_loss_bwd" + guid_suffix(dt),
         {l.input_as_shape(c.tensor(0), {}), class_indices(l, c.tensor(2)), l.input_as_shape(c.tensor(6), {})},
         {l.output(c.outputs.at(0))}, {static_cast<float>(c.args[5].toInt())});
}

// sum / mean / amax / amin over dims (none: all), one reduce node per dim, keepdim shapes in between.
void reduce(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& x = c.tensor(0);
  const at::Tensor& out = c.outputs.at(0);
  if (out.scalar_type() != x.scalar_type()) throw CannotLower("a reduction to another dtype");
  if (x.dim() == 0) throw CannotLower("a reduction of a scalar");
  std::vector<int64_t> dims;
  if (c.args.size() < 2 || c.args[1].isNone() || c.args[1].toIntList().empty()) {
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  } else {
    for (int64_t d : c.args[1].toIntList()) dims.push_back(c10::maybe_wrap_dim(d, x.dim()));
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  const at::ScalarType dt = x.scalar_type();
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  ValueId current = l.input(x);
  for (size_t i = 0; i < dims.size(); ++i) {
    sizes[dims[i]] = 1;
    const ValueId next = i + 1 == dims.size() ? l.output_as(out, sizes) : l.temp(dt, synapse_shape(sizes));
    l.node(kernel + guid_suffix(dt), {current}, {next}, {static_cast<float>(x.dim() - 1 - dims[i])});
    current = next;
  }
}

// clamp: max with the lower bound, then min with the upper (so a lower bound above the upper one
// gives the upper, and a NaN anywhere gives NaN, as PyTorch). Bounds are numbers or tensors.
void clamp(Lowering& l, const LoweredCall& c, const c10::IValue& low, const c10::IValue& high) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  const std::string sfx = arithmetic_suffix(dt);
  if (low.isNone() && high.isNone()) throw CannotLower("clamp without bounds");
  ValueId current = l.input_as(c.tensor(0), dt);
  if (!low.isNone()) {
    const ValueId next = high.isNone() ? l.output(out) : l.temp(dt, synapse_shape(out.sizes()));
    l.node("max_fwd" + sfx, covering(l, {current, operand(l, low, dt)}, out), {next});
    current = next;
  }
  if (!high.isNone()) l.node("min_fwd" + sfx, covering(l, {current, operand(l, high, dt)}, out), {l.output(out)});
}

// x ** exponent for a number exponent, as PyTorch's CPU kernel computes the common ones: 2 and 3
// by multiplication, 0.5 / -0.5 by sqrt / rsqrt, -1 / -2 by division; other integers up to 4
// by multiplication; any other exponent of a float x as exp(exponent * log(x)) (NaN below 0, as
// std::pow for a non-integer exponent).
void pow_scalar(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  const double e = scalar_of(c.args[1]);
  const bool integer = dt == at::kInt || dt == at::kLong;
  const std::string sfx = integer ? arithmetic_suffix(dt) : guid_suffix(dt);
  const std::vector<uint32_t> shape = synapse_shape(out.sizes());
  const ValueId x = covering(l, {l.input_as(c.tensor(0), dt)}, out)[0];
  const ValueId y = l.output(out);
  const auto product = [&](int n, ValueId into) {   // x^n, n >= 1, into `into`
    ValueId acc = x;
    for (int k = 2; k <= n; ++k) {
      const ValueId next = k == n ? into : l.temp(dt, shape);
      l.node("mul_fwd" + sfx, {acc, x}, {next});
      acc = next;
    }
    if (n == 1) l.node("memcpy", {x}, {into});
  };
  if (e == 0.0) {
    l.node("fill" + sfx, {}, {y}, {1.0f});
  } else if (e == std::floor(e) && e >= 1.0 && e <= 4.0) {
    product(static_cast<int>(e), y);
  } else if (integer) {
    throw CannotLower("an integer power other than 0 .. 4");
  } else if (e == 0.5) {
    l.node("sqrt_fwd" + sfx, {x}, {y});
  } else if (e == -0.5) {
    l.node("rsqrt_fwd" + sfx, {x}, {y});
  } else if (e == std::floor(e) && e >= -4.0 && e <= -1.0) {
    const ValueId denominator = e == -1.0 ? x : l.temp(dt, shape);
    if (e != -1.0) product(static_cast<int>(-e), denominator);
    l.node("div_fwd" + sfx, {l.constant(1.0, dt), denominator}, {y});
  } else {
    const ValueId log = l.temp(dt, shape), scaled_log = l.temp(dt, shape);
    l.node("log_fwd" + sfx, {x}, {log});
    l.node("mul_fwd" + sfx, {log, l.constant(e, dt)}, {scaled_log});
    l.node("exp_fwd" + sfx, {scaled_log}, {y});
  }
}

void addc(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  l.node(kernel + guid_suffix(dt),
         covering(l, {operand(l, c.args[0], dt), operand(l, c.args[1], dt), operand(l, c.args[2], dt)}, out),
         {l.output(out)}, {static_cast<float>(scalar_of(c.args[3]))});
}

// self.bernoulli_(p): the dropout kernel's mask over ones, its seed a fresh one-element device
// tensor (so the graph is the same at every step) from the HPU generator.
void bernoulli(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.outputs.at(0);
  const at::ScalarType dt = self.scalar_type();
  const std::string sfx = guid_suffix(dt);
  const double p = c.args[1].toDouble();
  if (!(p >= 0.0 && p <= 1.0)) throw CannotLower("p outside [0, 1]: the CPU reports it");
  const std::vector<uint32_t> shape = synapse_shape(self.sizes());
  if (!self.is_contiguous()) throw CannotLower("a strided output");
  const ValueId seed = seed_input(l, c.args[2].toOptional<at::Generator>());
  const ValueId ones = l.temp(dt, shape), scaled = l.temp(dt, shape);
  l.node("fill" + sfx, {}, {ones}, {1.0f});
  l.node("dropout_fwd" + sfx, {ones, seed}, {scaled, l.output(self)}, {static_cast<float>(1.0 - p)});
}

// native_dropout(input, p, train) -> (output, mask): the dropout kernel (y = (x * mask) * scale,
// as PyTorch), its 1 / 0 mask cast to the bool mask; in eval, a copy and an all-true mask.
void native_dropout(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(0);
  const at::Tensor& out = c.outputs.at(0);
  const at::Tensor& mask = c.outputs.at(1);
  const at::ScalarType dt = out.scalar_type();
  const std::string sfx = guid_suffix(dt);
  const double p = c.args[1].toDouble();
  const bool train = c.args[2].isNone() || c.args[2].toBool();
  if (!(p >= 0.0 && p <= 1.0)) throw CannotLower("p outside [0, 1]: the CPU reports it");
  if (!train || p == 0.0) {
    l.node("memcpy", {whole_input(l, x, dt)}, {l.output(out)});
    const ValueId ones = l.temp(at::kFloat, synapse_shape(mask.sizes()));
    l.node("fill_f32", {}, {ones}, {1.0f});
    l.node("cast_f32_to_u8", {ones}, {l.output(mask)});
    return;
  }
  const ValueId kept = l.temp(dt, synapse_shape(mask.sizes()));
  l.node("dropout_fwd" + sfx, {whole_input(l, x, dt), seed_input(l, std::nullopt)}, {l.output(out), kept},
         {static_cast<float>(p)});
  const ValueId kept_f32 = dt == at::kFloat ? kept : l.temp(at::kFloat, synapse_shape(mask.sizes()));
  if (dt != at::kFloat) l.node("cast_bf16_to_f32", {kept}, {kept_f32});
  l.node("cast_f32_to_u8", {kept_f32}, {l.output(mask)});
}

// native_dropout_backward(grad, mask, scale): (grad * mask) * scale, as PyTorch.
void native_dropout_backward(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  const std::vector<uint32_t> shape = synapse_shape(out.sizes());
  const ValueId masked = l.temp(dt, shape);
  l.node("mul_fwd" + guid_suffix(dt), covering(l, {l.input_as(c.tensor(0), dt), l.input_as(c.tensor(1), dt)}, out),
         {masked});
  l.node("mul_fwd" + guid_suffix(dt), {masked, l.constant(scalar_of(c.args[2]), dt)}, {l.output(out)});
}

// native_layer_norm over the trailing dims (collapsed into one: the kernel's dim 0).
std::vector<int64_t> rows_of(const at::Tensor& x, size_t normalized_dims) {
  const int64_t outer = x.dim() - static_cast<int64_t>(normalized_dims);
  if (outer < 0) throw CannotLower("normalized_shape longer than the input");
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().begin() + outer);
  int64_t row = 1;
  for (int64_t d = outer; d < x.dim(); ++d) row *= x.size(d);
  sizes.push_back(row);
  return sizes;
}

std::vector<int64_t> stat_sizes(std::vector<int64_t> rows) {
  rows.back() = 1;
  return rows;
}

void layer_norm(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(0);
  const at::ScalarType dt = x.scalar_type();
  const std::string sfx = guid_suffix(dt);
  const std::vector<int64_t> rows = rows_of(x, c.args[1].toIntList().size());
  const at::Tensor& mean = c.outputs.at(1);
  if (mean.scalar_type() != at::kFloat || c.outputs.at(2).scalar_type() != at::kFloat)
    throw CannotLower("mean / rstd in a dtype other than f32");
  std::vector<ValueId> inputs{l.input_as_shape(x.contiguous(), rows)};
  const bool has_weight = c.has(2) && c.tensor(2).defined(), has_bias = c.has(3) && c.tensor(3).defined();
  if (has_weight || has_bias) {
    const std::vector<uint32_t> row{static_cast<uint32_t>(rows.back())};
    const auto param = [&](bool defined, size_t arg, float value) {
      if (defined) return l.input_as_shape(c.tensor(arg), {rows.back()});
      const ValueId v = l.temp(dt, row);
      l.node("fill" + sfx, {}, {v}, {value});
      return v;
    };
    inputs.push_back(param(has_weight, 2, 1.0f));
    inputs.push_back(param(has_bias, 3, 0.0f));
  }
  const std::vector<int64_t> stats = stat_sizes(rows);
  l.node("layernorm_fwd" + sfx, inputs,
         {l.output_as(c.outputs.at(0), rows), l.output_as(mean, stats), l.output_as(c.outputs.at(2), stats)},
         {static_cast<float>(c.args[4].toDouble())});
}

void layer_norm_backward(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(1);
  const at::ScalarType dt = x.scalar_type();
  const std::string sfx = guid_suffix(dt);
  const std::vector<int64_t> rows = rows_of(x, c.args[2].toIntList().size());
  const std::vector<int64_t> stats = stat_sizes(rows);
  const ValueId grad = l.input_as_shape(c.tensor(0).contiguous(), rows), input = l.input_as_shape(x.contiguous(), rows);
  const ValueId mean = l.input_as_shape(c.tensor(3), stats), rstd = l.input_as_shape(c.tensor(4), stats);
  const auto mask = c.args[7].toBoolList();
  if (mask[0]) {
    std::vector<ValueId> in{grad, input, mean, rstd};
    if (c.has(5) && c.tensor(5).defined()) in.push_back(l.input_as_shape(c.tensor(5), {rows.back()}));
    l.node("layernorm_bwd" + sfx, in, {l.output_as(c.outputs.at(0), rows)});
  }
  if (mask[1] || mask[2]) {
    const std::vector<uint32_t> row{static_cast<uint32_t>(rows.back())};
    const ValueId dgamma = mask[1] ? l.output_as(c.outputs.at(1), {rows.back()}) : l.temp(dt, row);
    const ValueId dbeta = mask[2] ? l.output_as(c.outputs.at(2), {rows.back()}) : l.temp(dt, row);
    l.node("layernorm_bwd_gamma_beta" + sfx, {grad, input, mean, rstd}, {dgamma, dbeta});
  }
}

void embedding(Lowering& l, const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& out) {
  if (weight.dim() != 2) throw CannotLower("an embedding table that is not 2-D");
  l.node("embedding_fwd" + guid_suffix(weight.scalar_type()), {l.input(weight), class_indices(l, indices)},
         {l.output(out)});
}

void embedding_backward(Lowering& l, const LoweredCall& c) {
  if (c.args[4].toBool()) throw CannotLower("scale_grad_by_freq");
  const at::Tensor& out = c.outputs.at(0);
  const int64_t padding = c.args[3].toInt();
  std::vector<float> scalars;
  if (padding != -1) scalars.push_back(static_cast<float>(padding));
  l.node("embedding_bwd" + guid_suffix(out.scalar_type()),
         {l.input_as(c.tensor(0), out.scalar_type()), class_indices(l, c.tensor(1))}, {l.output(out)}, scalars);
}

// lerp: self + w * (end - self) for w < 0.5, end - (end - self) * (1 - w) otherwise (torch's).
void lerp(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  const std::string sfx = guid_suffix(dt);
  const double w = scalar_of(c.args[2]);
  const ValueId self = operand(l, c.args[0], dt), end = operand(l, c.args[1], dt);
  const ValueId diff = l.temp(dt, synapse_shape(out.sizes()));
  l.node("sub_fwd" + sfx, covering(l, {end, self}, out), {diff});
  const bool low = std::abs(w) < 0.5;
  l.node("addcmul_fwd" + sfx, covering(l, {low ? self : end, diff, l.constant(1.0, dt)}, out), {l.output(out)},
         {static_cast<float>(low ? w : -(1.0 - w))});
}

// cat along a dim whose slices of the output are dense (the outermost one with a size above 1, or
// an earlier one): each input is copied into its part of the output.
// cat: each input copied into its part of the output (a dense run when the parts before the dim
// are size 1, a strided_insert into the output otherwise).
void cat(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  const auto inputs = c.args[0].toTensorList();
  const int64_t dim = c10::maybe_wrap_dim(c.args[1].toInt(), out.dim());
  if (!out.is_contiguous()) throw CannotLower("cat into a strided output");
  int64_t offset = 0;
  for (const at::Tensor& t : inputs) {
    if (t.numel() == 0) continue;   // torch's legacy empty inputs
    if (t.scalar_type() != out.scalar_type()) throw CannotLower("cat of mixed dtypes");
    l.node("memcpy", {l.input(t)}, {l.output(out.narrow(dim, offset, t.size(dim)))});
    offset += t.size(dim);
  }
}

}  // namespace

bool record_copy(const at::Tensor& src, const at::Tensor& dst) {
  return record("aten::copy_", [&](Lowering& l) {
    const at::ScalarType dt = dst.scalar_type();
    if (src.scalar_type() == dt && src.is_contiguous() && src.sizes() == dst.sizes()) {
      l.node("memcpy", {l.input(src)}, {l.output(dst)});
      return;
    }
    const ValueId v = l.input_as(src, dt);
    if (region_bytes(l.value(v).region.type, l.value(v).region.shape) == dst.numel() * device_element_bytes(dt)) {
      l.node("memcpy", {v}, {l.output(dst)});
      return;
    }
    // A broadcast source.
    l.node("memcpy", {expand_to(l, v, synapse_shape(dst.sizes()), dt)}, {l.output(dst)});
  });
}

}  // namespace hpusim::bridge

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace hpusim::bridge;
  using L = Lowering;
  using C = LoweredCall;
  for (const char* op : {"add.out", "sub.out"}) {
    const std::string kernel = std::string(op).substr(0, 3) + "_fwd";
    register_elementwise_lowering(m, op, [kernel](L& l, const C& c) { binary(l, c, kernel, true); });
  }
  const std::pair<const char*, const char*> binaries[] = {
      {"mul.out", "mul_fwd"}, {"maximum.out", "max_fwd"}, {"minimum.out", "min_fwd"}};
  for (const auto& [op, kernel] : binaries) {
    const std::string k = kernel;
    register_elementwise_lowering(m, op, [k](L& l, const C& c) { binary(l, c, k, false); });
  }
  register_elementwise_lowering(m, "div.out", [](L& l, const C& c) { binary(l, c, "div_fwd", false); });
  const std::pair<const char*, const char*> unaries[] = {
      {"relu", "relu_fwd"},   {"tanh.out", "tanh_fwd"}, {"sigmoid.out", "sigmoid_fwd"}, {"exp.out", "exp_fwd"},
      {"log.out", "log_fwd"}, {"sqrt.out", "sqrt_fwd"}, {"rsqrt.out", "rsqrt_fwd"},     {"abs.out", "abs_fwd"},
      {"neg.out", "neg_fwd"}};
  for (const auto& [op, kernel] : unaries) {
    const std::string k = kernel;
    register_elementwise_lowering(m, op, [k](L& l, const C& c) { unary(l, c, k); });
  }
  register_elementwise_lowering(m, "threshold_backward.grad_input", [](L& l, const C& c) {
    if (scalar_of(c.args[2]) != 0.0) throw CannotLower("a threshold other than 0");
    backward(l, c, "relu_bwd");
  });
  register_elementwise_lowering(m, "tanh_backward.grad_input", [](L& l, const C& c) { backward(l, c, "tanh_bwd"); });
  register_elementwise_lowering(m, "sigmoid_backward.grad_input", [](L& l, const C& c) { backward(l, c, "sigmoid_bwd"); });
  register_elementwise_lowering(m, "addcmul.out", [](L& l, const C& c) { addc(l, c, "addcmul_fwd"); });
  register_elementwise_lowering(m, "addcdiv.out", [](L& l, const C& c) { addc(l, c, "addcdiv_fwd"); });
  register_elementwise_lowering(m, "fill_.Scalar", [](L& l, const C& c) { fill(l, c.outputs.at(0), scalar_of(c.args[1])); });
  register_elementwise_lowering(m, "zero_", [](L& l, const C& c) { fill(l, c.outputs.at(0), 0.0); });
  register_lowering(m, "mm.out", [](L& l, const C& c) { matmul(l, c.tensor(0), c.tensor(1), l.output(c.outputs.at(0)), false); });
  register_lowering(m, "bmm.out", [](L& l, const C& c) { matmul(l, c.tensor(0), c.tensor(1), l.output(c.outputs.at(0)), true); });
  register_lowering(m, "addmm.out", &addmm);
  register_lowering(m, "_log_softmax.out", [](L& l, const C& c) { softmax(l, c, "log_softmax_fwd"); });
  register_lowering(m, "_softmax.out", [](L& l, const C& c) { softmax(l, c, "softmax_fwd"); });
  register_lowering(m, "_log_softmax_backward_data.out", [](L& l, const C& c) { softmax_backward(l, c, "log_softmax_bwd"); });
  register_lowering(m, "_softmax_backward_data.out", [](L& l, const C& c) { softmax_backward(l, c, "softmax_bwd"); });
  register_lowering(m, "nll_loss_forward.output", &nll_loss_forward);
  register_lowering(m, "nll_loss_backward.grad_input", &nll_loss_backward);
  register_lowering(m, "sum.IntList_out", [](L& l, const C& c) { reduce(l, c, "reduce_sum_fwd"); });
  register_lowering(m, "mean.out", [](L& l, const C& c) { reduce(l, c, "reduce_mean_fwd"); });
  register_lowering(m, "amax.out", [](L& l, const C& c) { reduce(l, c, "reduce_max_fwd"); });
  register_lowering(m, "max", [](L& l, const C& c) { reduce(l, c, "reduce_max_fwd"); });
  register_lowering(m, "amin.out", [](L& l, const C& c) { reduce(l, c, "reduce_min_fwd"); });
  register_lowering(m, "min", [](L& l, const C& c) { reduce(l, c, "reduce_min_fwd"); });
  register_lowering(m, "bernoulli_.float", &bernoulli);
  register_lowering(m, "native_dropout", &native_dropout);
  register_lowering(m, "native_dropout_backward", &native_dropout_backward);
  register_lowering(m, "native_layer_norm", &layer_norm);
  register_lowering(m, "native_layer_norm_backward", &layer_norm_backward);
  register_elementwise_lowering(m, "gelu.out", [](L& l, const C& c) {
    unary(l, c, c.args[1].toStringRef() == "tanh" ? "gelu_tanh_fwd" : "gelu_fwd");
  });
  register_elementwise_lowering(m, "gelu_backward.grad_input", [](L& l, const C& c) {
    backward(l, c, c.args[2].toStringRef() == "tanh" ? "gelu_tanh_bwd" : "gelu_bwd");
  });
  register_elementwise_lowering(m, "silu.out", [](L& l, const C& c) { unary(l, c, "silu_fwd"); });
  register_elementwise_lowering(m, "silu_backward.grad_input", [](L& l, const C& c) { backward(l, c, "silu_bwd"); });
  register_lowering(m, "embedding", [](L& l, const C& c) { embedding(l, c.tensor(0), c.tensor(1), c.outputs.at(0)); });
  register_lowering(m, "embedding_dense_backward", &embedding_backward);
  register_lowering(m, "index_select", [](L& l, const C& c) {
    const at::Tensor& self = c.tensor(0);
    if (c.args[1].toInt() != 0 || self.dim() > 2 || c.tensor(2).dim() != 1) throw CannotLower("index_select of this form");
    const at::Tensor table = self.dim() == 2 ? self : self.view({self.size(0), 1});
    const at::Tensor& out = c.outputs.at(0);
    embedding(l, table, c.tensor(2), out.dim() == 2 ? out : out.view({out.size(0), 1}));
  });
  register_elementwise_lowering(m, "lerp.Scalar_out", &lerp);
  register_elementwise_lowering(m, "clamp.out", [](L& l, const C& c) { clamp(l, c, c.args[1], c.args[2]); });
  register_elementwise_lowering(m, "clamp.Tensor_out", [](L& l, const C& c) { clamp(l, c, c.args[1], c.args[2]); });
  register_elementwise_lowering(m, "clamp_min.out", [](L& l, const C& c) { clamp(l, c, c.args[1], c10::IValue()); });
  register_elementwise_lowering(m, "clamp_max.out", [](L& l, const C& c) { clamp(l, c, c10::IValue(), c.args[1]); });
  register_elementwise_lowering(m, "pow.Tensor_Scalar_out", &pow_scalar);
  register_lowering(m, "cat.out", &cat);
}
