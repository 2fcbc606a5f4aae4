// The neural-network layers lowered to the card: convolution on the MME (NHWC activations and
// RSCK weights through permutes), batch_norm composed from reductions and elementwise kernels,
// max and average pooling over non-overlapping windows.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "bridge/core/card.h"
#include "bridge/core/fallback.h"
#include "bridge/core/lowering.h"

namespace hpusim::bridge {
namespace {

// t.permute(perm) read as a dense tensor.
ValueId permuted(Lowering& l, const at::Tensor& t, at::IntArrayRef perm) { return l.input(t.permute(perm)); }

// Writes `out` from `src`, which holds out.permute(perm) densely.
void permute_into(Lowering& l, ValueId src, const at::Tensor& out, const std::vector<int64_t>& perm) {
  const int64_t r = out.dim();
  std::vector<float> synapse_perm(static_cast<size_t>(r));
  for (int64_t k = 0; k < r; ++k) {
    const int64_t torch_dim = r - 1 - k;
    const int64_t j = std::find(perm.begin(), perm.end(), torch_dim) - perm.begin();
    synapse_perm[static_cast<size_t>(k)] = static_cast<float>(r - 1 - j);
  }
  l.node("permute" + guid_suffix(out.scalar_type()), {src}, {l.output(out)}, synapse_perm);
}

std::vector<uint32_t> shape_of(const at::Tensor& t, const std::vector<int64_t>& perm) {
  std::vector<int64_t> sizes;
  for (int64_t d : perm) sizes.push_back(t.size(d));
  return synapse_shape(sizes);
}

hpusim_ConvolutionParams conv_params(const std::vector<c10::IValue>& a, size_t first) {
  const auto stride = a[first].toIntVector(), padding = a[first + 1].toIntVector(), dilation = a[first + 2].toIntVector();
  if (stride.size() != 2 || padding.size() != 2 || dilation.size() != 2) throw CannotLower("a convolution that is not 2-D");
  if (a[first + 3].toBool()) throw CannotLower("a transposed convolution");
  if (a[first + 5].toInt() != 1) throw CannotLower("a grouped convolution");
  return {stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1]};
}

void check_conv_types(const at::Tensor& x, const at::Tensor& w) {
  if (x.dim() != 4 || w.dim() != 4) throw CannotLower("a convolution that is not 2-D");
  if (x.scalar_type() != w.scalar_type()) throw CannotLower("input and weight of different dtypes");
  guid_suffix(x.scalar_type());
}

const std::vector<int64_t> kNhwc{0, 2, 3, 1}, kRsck{2, 3, 1, 0};

// convolution_overrideable(input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups)
void convolution(Lowering& l, const LoweredCall& c) {
  const at::Tensor &x = c.tensor(0), &w = c.tensor(1);
  check_conv_types(x, w);
  const hpusim_ConvolutionParams params = conv_params(c.args, 3);
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  ValueId y = l.temp(dt, shape_of(out, kNhwc));
  l.node_params("spatial_convolution", {permuted(l, x, kNhwc), permuted(l, w, kRsck)}, {y}, &params, sizeof params);
  if (c.has(2) && c.tensor(2).defined()) {
    const ValueId biased = l.temp(dt, shape_of(out, kNhwc));
    l.node("add_fwd" + guid_suffix(dt), {y, l.input_as(c.tensor(2), dt)}, {biased});
    y = biased;
  }
  permute_into(l, y, out, kNhwc);
}

int64_t conv_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil) {
  return (in + 2 * pad - dil * (kernel - 1) - 1) / stride + 1;
}

std::vector<at::Tensor> convolution_outputs(const std::vector<c10::IValue>& a) {
  const at::Tensor &x = a[0].toTensor(), &w = a[1].toTensor();
  TORCH_CHECK(x.dim() == 4 && w.dim() == 4, "convolution on 'hpu': 4-D input and weight expected, got ", x.dim(),
              "-D and ", w.dim(), "-D");
  const auto s = a[3].toIntVector(), p = a[4].toIntVector(), d = a[5].toIntVector();
  TORCH_CHECK(s.size() == 2 && p.size() == 2 && d.size() == 2, "convolution on 'hpu': 2-D stride, padding, dilation");
  const int64_t groups = a[8].toInt();
  std::vector<int64_t> sizes{x.size(0), a[6].toBool() ? w.size(1) * groups : w.size(0),
                             conv_size(x.size(2), w.size(2), s[0], p[0], d[0]),
                             conv_size(x.size(3), w.size(3), s[1], p[1], d[1])};
  return {at::empty(sizes, x.options())};
}

// convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation,
// transposed, output_padding, groups, output_mask)
void convolution_backward(Lowering& l, const LoweredCall& c) {
  const at::Tensor &dy = c.tensor(0), &x = c.tensor(1), &w = c.tensor(2);
  check_conv_types(x, w);
  const hpusim_ConvolutionParams params = conv_params(c.args, 3);
  const auto mask = c.args[9].toBoolList();
  const at::ScalarType dt = x.scalar_type();
  const ValueId grad = permuted(l, dy, kNhwc);
  if (mask[0]) {
    const at::Tensor& dx = c.outputs.at(0);
    const ValueId t = l.temp(dt, shape_of(dx, kNhwc));
    l.node_params("dedx", {grad, permuted(l, w, kRsck)}, {t}, &params, sizeof params);
    permute_into(l, t, dx, kNhwc);
  }
  if (mask[1]) {
    const at::Tensor& dw = c.outputs.at(1);
    const ValueId t = l.temp(dt, shape_of(dw, kRsck));
    l.node_params("dedw", {grad, permuted(l, x, kNhwc)}, {t}, &params, sizeof params);
    permute_into(l, t, dw, kRsck);
  }
  if (mask[2]) {
    // Over N, P, Q of dy's [K, Q, P, N].
    std::vector<uint32_t> shape = shape_of(dy, kNhwc);
    ValueId current = grad;
    for (int d : {1, 2, 3}) {
      shape[static_cast<size_t>(d)] = 1;
      const at::Tensor& db = c.outputs.at(2);
      const ValueId next = d == 3 ? l.output_as(db, {1, 1, 1, db.size(0)}) : l.temp(dt, shape);
      l.node("reduce_sum_fwd" + guid_suffix(dt), {current}, {next}, {static_cast<float>(d)});
      current = next;
    }
  }
}

std::vector<at::Tensor> convolution_backward_outputs(const std::vector<c10::IValue>& a) {
  const at::Tensor &x = a[1].toTensor(), &w = a[2].toTensor();
  const auto mask = a[9].toBoolList();
  return {mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor(),
          mask[1] ? at::empty(w.sizes(), w.options()) : at::Tensor(),
          mask[2] ? at::empty({w.size(0)}, w.options()) : at::Tensor()};
}

// The CPU runs what the card does not (a grouped or transposed convolution): at::convolution and
// at::convolution_backward, which the overrideable ops stand for.
void convolution_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack, bool backward) {
  count_fallback(op.schema().operator_name());
  Card::get().host_work(HPUSIM_HOST_CPU_FALLBACK_OP, 1, ("cpu fallback " + op.schema().name()).c_str());
  const Card::FallbackScope copies_are_the_fallbacks;
  const size_t n = op.schema().arguments().size();
  std::vector<c10::IValue> a(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
  const auto cpu = [](const c10::IValue& v) { return v.isTensor() && v.toTensor().defined() ? v.toTensor().cpu() : at::Tensor(); };
  const auto back = [](const at::Tensor& t) { return t.defined() ? t.to(c10::Device(c10::DeviceType::HPU, 0)) : t; };
  torch::jit::drop(*stack, n);
  if (!backward) {
    at::Tensor bias = cpu(a[2]);
    stack->push_back(back(at::convolution(cpu(a[0]), cpu(a[1]), bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt,
                                          a[3].toIntVector(), a[4].toIntVector(), a[5].toIntVector(), a[6].toBool(),
                                          a[7].toIntVector(), a[8].toInt())));
    return;
  }
  const auto mask = a[9].toBoolList();
  const at::Tensor w = cpu(a[2]);
  auto [dx, dw, db] = at::convolution_backward(cpu(a[0]), cpu(a[1]), w, std::vector<int64_t>{w.size(0)},
                                               a[3].toIntVector(), a[4].toIntVector(), a[5].toIntVector(), a[6].toBool(),
                                               a[7].toIntVector(), a[8].toInt(), {mask[0], mask[1], mask[2]});
  stack->push_back(back(dx));
  stack->push_back(back(dw));
  stack->push_back(back(db));
}

// ---- batch_norm: x as [S, C, N] (S the spatial size), statistics as [1, C, 1] ----

std::vector<int64_t> nc_s(const at::Tensor& x) {
  if (x.dim() < 2) throw CannotLower("batch_norm of fewer than 2 dims");
  int64_t spatial = 1;
  for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  return {x.size(0), x.size(1), spatial};
}

// Sums (or means) of v [S, C, N] over S and N into `last` ([1, C, 1]); a temp when last is unset.
ValueId over_batch(Lowering& l, ValueId v, at::ScalarType dt, const std::string& kernel, std::optional<ValueId> last = {}) {
  std::vector<uint32_t> shape = l.value(v).region.shape;
  shape[0] = 1;
  const ValueId partial = l.temp(dt, shape);
  l.node(kernel + guid_suffix(dt), {v}, {partial}, {0.0f});
  shape[2] = 1;
  const ValueId result = last ? *last : l.temp(dt, shape);
  l.node(kernel + guid_suffix(dt), {partial}, {result}, {2.0f});
  return result;
}

ValueId binary_node(Lowering& l, const std::string& op, ValueId a, ValueId b, at::ScalarType dt,
                    std::optional<ValueId> into = {}) {
  std::vector<uint32_t> shape = l.value(a).region.shape, other = l.value(b).region.shape;
  shape.resize(std::max(shape.size(), other.size()), 1);
  for (size_t d = 0; d < other.size(); ++d) shape[d] = std::max(shape[d], other[d]);
  const ValueId y = into ? *into : l.temp(dt, shape);
  l.node(op + "_fwd" + guid_suffix(dt), {a, b}, {y});
  return y;
}

bool defined_arg(const LoweredCall& c, size_t i) { return c.has(i) && c.tensor(i).defined(); }

ValueId as_f32(Lowering& l, ValueId v, at::ScalarType dt) {
  if (dt == at::kFloat) return v;
  if (dt != at::kBFloat16) throw CannotLower("a dtype other than f32 and bf16");
  const ValueId y = l.temp(at::kFloat, l.value(v).region.shape);
  l.node("cast_bf16_to_f32", {v}, {y});
  return y;
}

// batch_norm computes in f32 whatever the tensors' dtypes (bf16 activations with f32 statistics
// under autocast), as torch's kernels accumulate: reads widen, results narrow on the way out.
class F32Io {
 public:
  explicit F32Io(Lowering& l) : l_(l) {}
  ValueId read(const at::Tensor& t, at::IntArrayRef shape) {
    return as_f32(l_, l_.input_as_shape(t.contiguous(), shape), t.scalar_type());
  }
  ValueId write(const at::Tensor& t, at::IntArrayRef shape) {
    if (t.scalar_type() == at::kFloat) return l_.output_as(t, shape);
    guid_suffix(t.scalar_type());
    const ValueId v = l_.temp(at::kFloat, synapse_shape(shape));
    narrow_.push_back({v, t, std::vector<int64_t>(shape.begin(), shape.end())});
    return v;
  }
  // The narrowing casts of the written results, after the nodes computing them.
  void finish() {
    for (const auto& [v, t, shape] : narrow_) l_.node("cast_f32_to_bf16", {v}, {l_.output_as(t, shape)});
  }

 private:
  Lowering& l_;
  std::vector<std::tuple<ValueId, at::Tensor, std::vector<int64_t>>> narrow_;
};

// native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
void batch_norm(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(0);
  const at::ScalarType f = at::kFloat;
  const std::vector<int64_t> shape = nc_s(x), stat{1, shape[1], 1};
  const bool training = c.args[5].toBool();
  const double momentum = c.args[6].toDouble(), eps = c.args[7].toDouble();
  F32Io io(l);
  const ValueId input = io.read(x, shape);
  const at::Tensor &save_mean = c.outputs.at(1), &save_invstd = c.outputs.at(2);
  ValueId mean, invstd;
  if (training) {
    mean = over_batch(l, input, f, "reduce_mean_fwd",
                      save_mean.numel() ? std::optional<ValueId>(io.write(save_mean, stat)) : std::nullopt);
    const ValueId centered = binary_node(l, "sub", input, mean, f);
    const ValueId var = over_batch(l, binary_node(l, "mul", centered, centered, f), f, "reduce_mean_fwd");
    const ValueId shifted = binary_node(l, "add", var, l.constant(eps, f), f);
    invstd = save_invstd.numel() ? io.write(save_invstd, stat) : l.temp(f, synapse_shape(stat));
    l.node("rsqrt_fwd_f32", {shifted}, {invstd});
    if (defined_arg(c, 3) && defined_arg(c, 4)) {
      const double n = static_cast<double>(shape[0] * shape[2]);
      const auto update = [&](const at::Tensor& running, ValueId batch) {
        const ValueId kept = scaled(l, io.read(running, stat), 1.0 - momentum, f);
        l.node("addcmul_fwd_f32", {kept, batch, l.constant(1.0, f)}, {io.write(running, stat)},
               {static_cast<float>(momentum)});
      };
      update(c.tensor(3), mean);
      update(c.tensor(4), scaled(l, var, n > 1 ? n / (n - 1) : 1.0, f));
    }
  } else {
    if (!defined_arg(c, 3) || !defined_arg(c, 4)) throw CannotLower("eval batch_norm without running statistics");
    mean = io.read(c.tensor(3), stat);
    invstd = l.temp(f, synapse_shape(stat));
    l.node("rsqrt_fwd_f32", {binary_node(l, "add", io.read(c.tensor(4), stat), l.constant(eps, f), f)}, {invstd});
  }
  const bool weight = defined_arg(c, 1), bias = defined_arg(c, 2);
  const ValueId out = io.write(c.outputs.at(0), shape);
  ValueId y = binary_node(l, "mul", binary_node(l, "sub", input, mean, f), invstd, f,
                          weight || bias ? std::nullopt : std::optional<ValueId>(out));
  if (weight) y = binary_node(l, "mul", y, io.read(c.tensor(1), stat), f, bias ? std::nullopt : std::optional<ValueId>(out));
  if (bias) binary_node(l, "add", y, io.read(c.tensor(2), stat), f, out);
  io.finish();
}

// native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
// save_invstd, train, eps, output_mask)
void batch_norm_backward(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(1);
  const at::ScalarType f = at::kFloat;
  const std::vector<int64_t> shape = nc_s(x), stat{1, shape[1], 1};
  const auto mask = c.args[9].toBoolList();
  const bool train = c.args[7].toBool();
  F32Io io(l);
  const ValueId grad = io.read(c.tensor(0), shape), input = io.read(x, shape);
  ValueId mean, invstd;
  if (train) {
    if (!defined_arg(c, 5) || !defined_arg(c, 6)) throw CannotLower("training batch_norm backward without saved statistics");
    mean = io.read(c.tensor(5), stat);
    invstd = io.read(c.tensor(6), stat);
  } else {
    if (!defined_arg(c, 3) || !defined_arg(c, 4)) throw CannotLower("eval batch_norm backward without running statistics");
    mean = io.read(c.tensor(3), stat);
    invstd = l.temp(f, synapse_shape(stat));
    l.node("rsqrt_fwd_f32", {binary_node(l, "add", io.read(c.tensor(4), stat), l.constant(c.args[8].toDouble(), f), f)},
           {invstd});
  }
  const ValueId xhat = binary_node(l, "mul", binary_node(l, "sub", input, mean, f), invstd, f);
  const auto into = [&](size_t k) { return mask[k] ? std::optional<ValueId>(io.write(c.outputs.at(k), stat)) : std::nullopt; };
  const ValueId sum_dy = over_batch(l, grad, f, "reduce_sum_fwd", into(2));
  const ValueId sum_dy_xhat = over_batch(l, binary_node(l, "mul", grad, xhat, f), f, "reduce_sum_fwd", into(1));
  if (mask[0]) {
    const ValueId scale = defined_arg(c, 2) ? binary_node(l, "mul", invstd, io.read(c.tensor(2), stat), f) : invstd;
    const ValueId dx = io.write(c.outputs.at(0), shape);
    if (!train) {
      binary_node(l, "mul", grad, scale, f, dx);
    } else {
      const double inv_n = 1.0 / static_cast<double>(shape[0] * shape[2]);
      const ValueId mean_dy = scaled(l, sum_dy, inv_n, f), mean_dy_xhat = scaled(l, sum_dy_xhat, inv_n, f);
      const ValueId t = binary_node(l, "sub", binary_node(l, "sub", grad, mean_dy, f),
                                    binary_node(l, "mul", xhat, mean_dy_xhat, f), f);
      binary_node(l, "mul", t, scale, f, dx);
    }
  }
  io.finish();
}

// ---- pooling over non-overlapping windows: x (N, C, H, W) as (N*C, H/kh, kh, W/kw, kw) ----

struct Windows {
  int64_t nc, h, w, kh, kw;
  std::vector<int64_t> input() const { return {nc, h / kh, kh, w / kw, kw}; }
  std::vector<int64_t> output() const { return {nc, h / kh, 1, w / kw, 1}; }
};

Windows windows(const at::Tensor& x, const c10::IValue& kernel, const c10::IValue& stride, const c10::IValue& padding,
                const c10::IValue* dilation) {
  if (x.dim() != 4) throw CannotLower("pooling of a tensor that is not NCHW");
  auto k = kernel.toIntVector(), s = stride.toIntVector(), p = padding.toIntVector();
  if (k.size() == 1) k.push_back(k[0]);
  if (s.empty()) s = k;
  if (s.size() == 1) s.push_back(s[0]);
  if (p.size() == 1) p.push_back(p[0]);
  if (k.size() != 2 || s != k || p != std::vector<int64_t>{0, 0}) throw CannotLower("overlapping or padded pooling windows");
  if (dilation) {
    auto d = dilation->toIntVector();
    for (int64_t v : d)
      if (v != 1) throw CannotLower("dilated pooling");
  }
  if (x.size(2) % k[0] != 0 || x.size(3) % k[1] != 0) throw CannotLower("pooling windows that do not tile the input");
  return {x.size(0) * x.size(1), x.size(2), x.size(3), k[0], k[1]};
}

// Reduces v over the window dims (0 and 2 of [kw, W/kw, kh, H/kh, NC]) into `into`.
void over_windows(Lowering& l, ValueId v, at::ScalarType dt, const std::string& kernel, ValueId into) {
  std::vector<uint32_t> shape = l.value(v).region.shape;
  shape[0] = 1;
  const ValueId partial = l.temp(dt, shape);
  l.node(kernel + guid_suffix(dt), {v}, {partial}, {0.0f});
  l.node(kernel + guid_suffix(dt), {partial}, {into}, {2.0f});
}

// Each input element's index in its H x W plane (f32, exact below 2^24), as [kw, W/kw, kh, H/kh, 1]:
// a device tensor made once per geometry.
ValueId plane_indices(Lowering& l, const Windows& g) {
  // Never destroyed: device tensors must not outlive the allocator at exit.
  static auto* cache = new std::map<std::vector<int64_t>, at::Tensor>();
  const std::vector<int64_t> key{g.h, g.w, g.kh, g.kw};
  at::Tensor& t = (*cache)[key];
  if (!t.defined()) {
    if (g.h * g.w > (1 << 24)) throw CannotLower("a plane too large for f32 indices");
    at::Tensor host = at::arange(g.h * g.w, at::TensorOptions().dtype(at::kFloat)).view({1, g.h / g.kh, g.kh, g.w / g.kw, g.kw});
    t = host.to(c10::Device(c10::DeviceType::HPU, 0));
  }
  return l.input(t);
}

// 1 where v == 0, 0 elsewhere (v >= 0 or |v| taken first), in f32: min(|v| * 2^126 * 2^126, 1) is
// 1 for any non-zero v, denormals included.
ValueId is_zero(Lowering& l, ValueId v) {
  const at::ScalarType f = at::kFloat;
  const std::vector<uint32_t> shape = l.value(v).region.shape;
  const ValueId a = l.temp(f, shape);
  l.node("abs_fwd_f32", {v}, {a});
  const ValueId big = scaled(l, scaled(l, a, 0x1p126, f), 0x1p126, f);
  const ValueId nonzero = binary_node(l, "min", big, l.constant(1.0, f), f);
  return binary_node(l, "sub", l.constant(1.0, f), nonzero, f);
}

// max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
void max_pool(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(0);
  const at::ScalarType dt = x.scalar_type();
  guid_suffix(dt);
  const Windows g = windows(x, c.args[1], c.args[2], c.args[3], &c.args[4]);
  const ValueId input = l.input_as_shape(x.contiguous(), g.input());
  const ValueId out = l.output_as(c.outputs.at(0), g.output());
  over_windows(l, input, dt, "reduce_max_fwd", out);
  // The index of each window's first maximum: the smallest plane index where x == max.
  const ValueId gap = binary_node(l, "sub", as_f32(l, out, dt), as_f32(l, input, dt), at::kFloat);
  const ValueId not_max = binary_node(l, "sub", l.constant(1.0, at::kFloat), is_zero(l, gap), at::kFloat);
  const ValueId candidate = l.temp(at::kFloat, l.value(input).region.shape);
  l.node("addcmul_fwd_f32", {plane_indices(l, g), not_max, l.constant(1.0, at::kFloat)}, {candidate}, {0x1p24f});
  const ValueId negated = l.temp(at::kFloat, l.value(input).region.shape);
  l.node("neg_fwd_f32", {candidate}, {negated});
  const ValueId first = l.temp(at::kFloat, synapse_shape(g.output()));
  over_windows(l, negated, at::kFloat, "reduce_max_fwd", first);
  const ValueId index = l.temp(at::kFloat, synapse_shape(g.output()));
  l.node("neg_fwd_f32", {first}, {index});
  l.node("cast_f32_to_i32", {index}, {l.output_as(c.outputs.at(1), g.output())});
}

// max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
// ceil_mode, indices): the gradient goes to each window's element at the saved index.
void max_pool_backward(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(1);
  const at::ScalarType dt = x.scalar_type();
  guid_suffix(dt);
  const Windows g = windows(x, c.args[2], c.args[3], c.args[4], &c.args[5]);
  const ValueId index = l.temp(at::kFloat, synapse_shape(g.output()));
  l.node("cast_i32_to_f32", {l.input_as_shape(c.tensor(7).contiguous(), g.output())}, {index});
  ValueId chosen = is_zero(l, binary_node(l, "sub", plane_indices(l, g), index, at::kFloat));
  if (dt != at::kFloat) {
    const ValueId narrow = l.temp(dt, l.value(chosen).region.shape);
    l.node("cast_f32_to_bf16", {chosen}, {narrow});
    chosen = narrow;
  }
  binary_node(l, "mul", chosen, l.input_as_shape(c.tensor(0).contiguous(), g.output()), dt,
              l.output_as(c.outputs.at(0), g.input()));
}

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
void avg_pool(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(0);
  const at::ScalarType dt = x.scalar_type();
  guid_suffix(dt);
  if (!c.args[6].isNone()) throw CannotLower("divisor_override");
  const Windows g = windows(x, c.args[1], c.args[2], c.args[3], nullptr);
  over_windows(l, l.input_as_shape(x.contiguous(), g.input()), dt, "reduce_mean_fwd", l.output_as(c.outputs.at(0), g.output()));
}

// avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override)
void avg_pool_backward(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(1);
  const at::ScalarType dt = x.scalar_type();
  guid_suffix(dt);
  if (!c.args[7].isNone()) throw CannotLower("divisor_override");
  const Windows g = windows(x, c.args[2], c.args[3], c.args[4], nullptr);
  const ValueId spread = expand_to(l, l.input_as_shape(c.tensor(0).contiguous(), g.output()), synapse_shape(g.input()), dt);
  binary_node(l, "div", spread, l.constant(static_cast<double>(g.kh * g.kw), dt), dt, l.output_as(c.outputs.at(0), g.input()));
}

}  // namespace
}  // namespace hpusim::bridge

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace hpusim::bridge;
  register_lowering(m, "convolution_overrideable", &convolution, &convolution_outputs,
                    [](const c10::OperatorHandle& op, torch::jit::Stack* s) { convolution_on_cpu(op, s, false); });
  register_lowering(m, "convolution_backward_overrideable", &convolution_backward, &convolution_backward_outputs,
                    [](const c10::OperatorHandle& op, torch::jit::Stack* s) { convolution_on_cpu(op, s, true); });
  register_lowering(m, "native_batch_norm", &batch_norm);
  register_lowering(m, "native_batch_norm_backward", &batch_norm_backward);
  register_lowering(m, "max_pool2d_with_indices.out", &max_pool);
  register_lowering(m, "max_pool2d_with_indices_backward.grad_input", &max_pool_backward);
  register_lowering(m, "avg_pool2d.out", &avg_pool);
  register_lowering(m, "avg_pool2d_backward.grad_input", &avg_pool_backward);
}
