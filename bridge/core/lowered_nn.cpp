// The neural-network layers lowered to the card: convolution on the MME (NHWC activations and
// RSCK weights through permutes), batch_norm composed from reductions and elementwise kernels,
// max and average pooling over non-overlapping windows.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <string>

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

}  // namespace
}  // namespace hpusim::bridge

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace hpusim::bridge;
  register_lowering(m, "convolution_overrideable", &convolution, &convolution_outputs,
                    [](const c10::OperatorHandle& op, torch::jit::Stack* s) { convolution_on_cpu(op, s, false); });
  register_lowering(m, "convolution_backward_overrideable", &convolution_backward, &convolution_backward_outputs,
                    [](const c10::OperatorHandle& op, torch::jit::Stack* s) { convolution_on_cpu(op, s, true); });
}
