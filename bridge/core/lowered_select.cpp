// The comparing and selecting ops: comparisons and logical ops (bool results, held as u8),
// where / masked_fill, max / min / argmax / argmin over a dim (values and indices), gather.
// Comparisons compute in f32 (bf16 widens exactly) or int32 and cast the 0 / 1 result to u8.
#include <torch/library.h>

#include <string>

#include "bridge/core/lowering.h"

namespace hpusim::bridge {
namespace {

bool is_integer(at::ScalarType t) { return t == at::kInt || t == at::kLong; }

// The dtype two operands compare in: int32 for integers, f32 for floats (bf16 widens exactly).
at::ScalarType compare_dtype(const c10::IValue& a, const c10::IValue& b) {
  const at::ScalarType promoted = b.isTensor() ? at::result_type(a.toTensor(), b.toTensor())
                                               : at::result_type(a.toTensor(), b.toScalar());
  if (is_integer(promoted)) return at::kInt;
  if (promoted == at::kFloat || promoted == at::kBFloat16) return at::kFloat;
  throw CannotLower(std::string("a comparison in ") + c10::toString(promoted));
}

std::string compute_suffix(at::ScalarType compute) { return compute == at::kInt ? "_i32" : "_f32"; }

// A 0 / 1 tensor of `compute` dtype into the bool output `out`.
void to_bool(Lowering& l, ValueId truth, at::ScalarType compute, ValueId out) {
  l.node(compute == at::kInt ? "cast_i32_to_u8" : "cast_f32_to_u8", {truth}, {out});
}

void compare(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& out = c.outputs.at(0);
  if (out.scalar_type() != at::kBool) throw CannotLower("a comparison into a non-bool tensor");
  const at::ScalarType dt = compare_dtype(c.args[0], c.args[1]);
  const ValueId truth = l.temp(dt, synapse_shape(out.sizes()));
  l.node(kernel + compute_suffix(dt), covering(l, {operand(l, c.args[0], dt), operand(l, c.args[1], dt)}, out, dt, 0),
         {truth});
  to_bool(l, truth, dt, l.output(out));
}

// A tensor as f32 0 / 1: its truth value (nonzero, NaN included, is true).
ValueId truth_of(Lowering& l, const at::Tensor& t) {
  if (t.scalar_type() == at::kBool) return l.input_as(t, at::kFloat);
  const at::ScalarType compute = is_integer(t.scalar_type()) ? at::kInt : at::kFloat;
  const ValueId x = l.input_as(t, compute);
  const ValueId truth = l.temp(compute, l.value(x).region.shape);
  l.node("not_equal_fwd" + compute_suffix(compute), {x, l.constant(0.0, compute)}, {truth});
  if (compute == at::kFloat) return truth;
  const ValueId as_float = l.temp(at::kFloat, l.value(x).region.shape);
  l.node("cast_i32_to_f32", {truth}, {as_float});
  return as_float;
}

// logical_and / or / xor: min / max / != of the truth values; logical_not: == 0.
void logical(Lowering& l, const LoweredCall& c, const std::string& kernel) {
  const at::Tensor& out = c.outputs.at(0);
  if (out.scalar_type() != at::kBool) throw CannotLower("a logical op into a non-bool tensor");
  const ValueId truth = l.temp(at::kFloat, synapse_shape(out.sizes()));
  const ValueId a = truth_of(l, c.tensor(0));
  const ValueId b = kernel == "equal_fwd" ? l.constant(0.0, at::kFloat) : truth_of(l, c.tensor(1));
  l.node(kernel + "_f32", covering(l, {a, b}, out, at::kFloat, 0), {truth});
  to_bool(l, truth, at::kFloat, l.output(out));
}

// The condition of where / masked_fill: a bool (u8) tensor, broadcasting.
ValueId condition(Lowering& l, const at::Tensor& t) {
  if (t.scalar_type() != at::kBool && t.scalar_type() != at::kByte) throw CannotLower("a non-bool condition");
  return l.broadcast_input(t);
}

std::string select_suffix(at::ScalarType dt) { return is_integer(dt) ? "_i32" : guid_suffix(dt); }

void where(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  const at::ScalarType dt = out.scalar_type();
  l.node("where_fwd" + select_suffix(dt),
         covering(l, {condition(l, c.tensor(0)), operand(l, c.args[1], dt), operand(l, c.args[2], dt)}, out, dt, 1),
         {l.output(out)});
}

// self.masked_fill_(mask, value): where(mask, value, self), in place.
void masked_fill(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.outputs.at(0);
  const at::ScalarType dt = self.scalar_type();
  if (c.args[2].isTensor() && c.args[2].toTensor().dim() != 0) throw CannotLower("a masked_fill value with dims");
  const ValueId value = c.args[2].isTensor() && c.args[2].toTensor().is_hpu() ? l.input_as(c.args[2].toTensor(), dt)
                                                                               : l.constant(scalar_of(c.args[2]), dt);
  l.node("where_fwd" + select_suffix(dt),
         covering(l, {condition(l, c.tensor(1)), value, l.input_as(c.tensor(0), dt)}, self, dt, 2), {l.output(self)});
}

// max / min over `dim` with the index of the first extreme element (of the first NaN when there
// is one, as PyTorch): the extreme m by reduction, then the smallest index i whose element equals
// m or is NaN, from where(x == m or x != x, i, 2^24) reduced by min. f32 throughout (bf16 widens
// exactly, so the values written back are exact).
struct Extremes {
  ValueId values;    // keepdim shape, f32
  ValueId indices;   // keepdim shape, f32 (exact integers)
};

Extremes extremes(Lowering& l, const at::Tensor& x, int64_t dim, bool maximum) {
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kBFloat16) throw CannotLower("max / min of integers");
  if (x.size(dim) >= (1 << 24)) throw CannotLower("a dim of 2^24 elements or more");
  const std::vector<uint32_t> shape = synapse_shape(x.sizes());
  std::vector<int64_t> kept(x.sizes().begin(), x.sizes().end());
  kept[dim] = 1;
  const std::vector<uint32_t> kept_shape = synapse_shape(kept);
  const auto axis = static_cast<float>(x.dim() - 1 - dim);
  const ValueId v = whole_input(l, x, at::kFloat);
  Extremes e{l.temp(at::kFloat, kept_shape), l.temp(at::kFloat, kept_shape)};
  l.node(maximum ? "reduce_max_fwd_f32" : "reduce_min_fwd_f32", {v}, {e.values}, {axis});
  const ValueId equal = l.temp(at::kFloat, shape), nan = l.temp(at::kFloat, shape), hit = l.temp(at::kFloat, shape);
  l.node("equal_fwd_f32", {v, e.values}, {equal});
  l.node("not_equal_fwd_f32", {v, v}, {nan});
  l.node("max_fwd_f32", {equal, nan}, {hit});
  const ValueId hit_mask = l.temp(at::kBool, shape);
  l.node("cast_f32_to_u8", {hit}, {hit_mask});
  std::vector<uint32_t> index_shape(shape.size(), 1);
  index_shape[static_cast<size_t>(axis)] = shape[static_cast<size_t>(axis)];
  const ValueId index = l.temp(at::kFloat, index_shape), candidates = l.temp(at::kFloat, shape);
  const float n = static_cast<float>(x.size(dim));
  l.node("range_fwd_f32", {}, {index}, {0.0f, 1.0f, n - 1.0f, n});
  l.node("where_fwd_f32", {hit_mask, index, l.constant(16777216.0, at::kFloat)}, {candidates});
  l.node("reduce_min_fwd_f32", {candidates}, {e.indices}, {axis});
  return e;
}

std::vector<int64_t> keepdim_sizes(const at::Tensor& x, int64_t dim) {
  std::vector<int64_t> kept(x.sizes().begin(), x.sizes().end());
  kept[dim] = 1;
  return kept;
}

// The values (f32) into `out` of its own dtype.
void write_values(Lowering& l, ValueId values, const at::Tensor& out, at::IntArrayRef sizes) {
  const ValueId y = l.output_as(out, sizes);
  if (out.scalar_type() == at::kFloat) {
    l.node("memcpy", {values}, {y});
  } else if (out.scalar_type() == at::kBFloat16) {
    l.node("cast_f32_to_bf16", {values}, {y});
  } else {
    throw CannotLower("values of another dtype");
  }
}

void write_indices(Lowering& l, ValueId indices, const at::Tensor& out, at::IntArrayRef sizes) {
  if (!is_integer(out.scalar_type())) throw CannotLower("indices of another dtype");
  l.node("cast_f32_to_i32", {indices}, {l.output_as(out, sizes)});
}

// max.dim_max / min.dim_min: (self, dim, keepdim) -> values, indices.
void extreme_dim(Lowering& l, const LoweredCall& c, bool maximum) {
  const at::Tensor& x = c.tensor(0);
  if (x.dim() == 0) throw CannotLower("max of a scalar");
  const int64_t dim = c10::maybe_wrap_dim(c.args[1].toInt(), x.dim());
  const Extremes e = extremes(l, x, dim, maximum);
  const std::vector<int64_t> kept = keepdim_sizes(x, dim);
  write_values(l, e.values, c.outputs.at(0), kept);
  write_indices(l, e.indices, c.outputs.at(1), kept);
}

// argmax.out / argmin.out: (self, dim?, keepdim); no dim: over the flattened tensor.
void arg_extreme(Lowering& l, const LoweredCall& c, bool maximum) {
  const at::Tensor& x = c.tensor(0);
  const at::Tensor& out = c.outputs.at(0);
  const bool flat = c.args[1].isNone();
  if (flat && !x.is_contiguous()) throw CannotLower("argmax over a strided tensor's elements");
  const at::Tensor source = flat || x.dim() == 0 ? x.reshape({x.numel()}) : x;
  const int64_t dim = flat || x.dim() == 0 ? 0 : c10::maybe_wrap_dim(c.args[1].toInt(), x.dim());
  const Extremes e = extremes(l, source, dim, maximum);
  write_indices(l, e.indices, out, keepdim_sizes(source, dim));
}

void gather(Lowering& l, const LoweredCall& c) {
  const at::Tensor& x = c.tensor(0);
  const at::Tensor& out = c.outputs.at(0);
  if (c.args[3].toBool()) throw CannotLower("a sparse gradient");
  if (x.dim() == 0) throw CannotLower("gather from a scalar");
  const int64_t dim = c10::maybe_wrap_dim(c.args[1].toInt(), x.dim());
  const at::ScalarType dt = x.scalar_type();
  l.node("gather_fwd" + select_suffix(dt), {whole_input(l, x, dt), class_indices(l, c.tensor(2))}, {l.output(out)},
         {static_cast<float>(x.dim() - 1 - dim)});
}

// scatter.src_out where the index has one element along `dim` and self's shape elsewhere (max /
// min backward's form): out = where(i == index, src, self) along dim, i the position in dim.
void scatter_one(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.tensor(0);
  const at::Tensor& index = c.tensor(2);
  const at::Tensor& src = c.tensor(3);
  const at::Tensor& out = c.outputs.at(0);
  if (self.dim() == 0 || index.dim() != self.dim()) throw CannotLower("scatter of this form");
  const int64_t dim = c10::maybe_wrap_dim(c.args[1].toInt(), self.dim());
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == dim ? index.size(d) != 1 : index.size(d) != self.size(d)) throw CannotLower("scatter of this form");
    if (src.size(d) < index.size(d)) throw CannotLower("scatter of this form");
  }
  if (src.sizes() != index.sizes()) throw CannotLower("a scatter source larger than its index");
  const at::ScalarType dt = out.scalar_type();
  const std::vector<uint32_t> shape = synapse_shape(self.sizes());
  const auto axis = static_cast<size_t>(self.dim() - 1 - dim);
  std::vector<uint32_t> position_shape(shape.size(), 1);
  position_shape[axis] = shape[axis];
  const ValueId position = l.temp(at::kInt, position_shape), hit = l.temp(at::kInt, shape);
  const auto n = static_cast<float>(self.size(dim));
  l.node("range_fwd_i32", {}, {position}, {0.0f, 1.0f, n - 1.0f, n});
  l.node("equal_fwd_i32", {position, l.input(index)}, {hit});
  const ValueId mask = l.temp(at::kBool, shape);
  l.node("cast_i32_to_u8", {hit}, {mask});
  l.node("where_fwd" + select_suffix(dt), {mask, l.input_as(src, dt), whole_input(l, self, dt)}, {l.output(out)});
}

}  // namespace
}  // namespace hpusim::bridge

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace hpusim::bridge;
  using L = Lowering;
  using C = LoweredCall;
  const std::pair<const char*, const char*> comparisons[] = {
      {"eq", "equal_fwd"}, {"ne", "not_equal_fwd"}, {"lt", "less_fwd"},
      {"le", "less_equal_fwd"}, {"gt", "greater_fwd"}, {"ge", "greater_equal_fwd"}};
  for (const auto& [op, kernel] : comparisons) {
    const std::string k = kernel;
    for (const char* overload : {".Scalar_out", ".Tensor_out"}) {
      const std::string name = std::string(op) + overload;
      register_elementwise_lowering(m, name.c_str(), [k](L& l, const C& c) { compare(l, c, k); });
    }
  }
  register_elementwise_lowering(m, "logical_and.out", [](L& l, const C& c) { logical(l, c, "min_fwd"); });
  register_elementwise_lowering(m, "logical_or.out", [](L& l, const C& c) { logical(l, c, "max_fwd"); });
  register_elementwise_lowering(m, "logical_xor.out", [](L& l, const C& c) { logical(l, c, "not_equal_fwd"); });
  register_elementwise_lowering(m, "logical_not.out", [](L& l, const C& c) { logical(l, c, "equal_fwd"); });
  // On bool tensors the bitwise ops are the logical ones (mask & mask, ~mask).
  const std::pair<const char*, const char*> bitwise[] = {
      {"bitwise_and.Tensor_out", "min_fwd"}, {"bitwise_or.Tensor_out", "max_fwd"},
      {"bitwise_xor.Tensor_out", "not_equal_fwd"}, {"bitwise_not.out", "equal_fwd"}};
  for (const auto& [op, kernel] : bitwise) {
    const std::string k = kernel;
    register_elementwise_lowering(m, op, [k](L& l, const C& c) {
      for (const c10::IValue& v : c.args)
        if (v.isTensor() && v.toTensor().scalar_type() != at::kBool) throw CannotLower("bitwise ops on integers");
      logical(l, c, k);
    });
  }
  register_elementwise_lowering(m, "where.self_out", &where);
  register_lowering(m, "where.self", &where);
  register_elementwise_lowering(m, "masked_fill_.Scalar", &masked_fill);
  register_elementwise_lowering(m, "masked_fill_.Tensor", &masked_fill);
  register_lowering(m, "max.dim_max", [](L& l, const C& c) { extreme_dim(l, c, true); });
  register_lowering(m, "min.dim_min", [](L& l, const C& c) { extreme_dim(l, c, false); });
  register_lowering(m, "argmax.out", [](L& l, const C& c) { arg_extreme(l, c, true); });
  register_lowering(m, "argmin.out", [](L& l, const C& c) { arg_extreme(l, c, false); });
  register_lowering(m, "gather.out", &gather);
  register_lowering(m, "scatter.src_out", &scatter_one);
}
