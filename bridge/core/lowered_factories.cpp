// Tensors made on the card: arange and linspace (the range kernel), and the random fills behind
// rand / randn / randint / uniform_ / normal_ / random_ (the counter-based generator, its seed a
// one-element device tensor from the HPU generator so a loop's graph does not change).
#include <torch/library.h>

#include <cmath>
#include <string>

#include "bridge/core/lowering.h"

namespace hpusim::bridge {
namespace {

constexpr double kExactIntegers = 16777216.0;   // 2^24: integers f32 holds exactly

bool is_integer(at::ScalarType t) { return t == at::kInt || t == at::kLong; }

void need_integer(double v, const char* what) {
  if (!(v == std::floor(v) && std::fabs(v) <= kExactIntegers)) throw CannotLower(std::string(what) + " beyond 2^24");
}

// out[i] = i < halfway ? start + step * i : end - step * (n - 1 - i).
void range(Lowering& l, const at::Tensor& out, double start, double step, double end, int64_t halfway) {
  const at::ScalarType dt = out.scalar_type();
  if (out.numel() > static_cast<int64_t>(kExactIntegers)) throw CannotLower("a range of more than 2^24 elements");
  std::string sfx;
  if (dt == at::kFloat) {
    sfx = "_f32";
  } else if (is_integer(dt)) {
    for (double v : {start, step, end}) need_integer(v, "an integer range bound");
    sfx = "_i32";
  } else {
    throw CannotLower(std::string("a range of ") + c10::toString(dt));
  }
  l.node("range_fwd" + sfx, {}, {l.output(out)},
         {static_cast<float>(start), static_cast<float>(step), static_cast<float>(end), static_cast<float>(halfway)});
}

// arange.start_out(start, end, step, out): start + step * i, as PyTorch's float kernel.
void arange(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  const double start = scalar_of(c.args[0]), step = scalar_of(c.args[2]);
  if (out.dim() != 1) throw CannotLower("an arange output with dims");
  range(l, out, start, step, 0.0, out.numel());
}

// linspace.out(start, end, steps, out): PyTorch's rule, both halves (exact ends).
void linspace(Lowering& l, const LoweredCall& c) {
  const at::Tensor& out = c.outputs.at(0);
  if (out.scalar_type() != at::kFloat) throw CannotLower("linspace of another dtype");
  const double start = scalar_of(c.args[0]), end = scalar_of(c.args[1]);
  const int64_t steps = c.args[2].toInt();
  if (steps == 1) return range(l, out, start, 0.0, start, 1);
  // PyTorch computes the step in the output's dtype.
  const float step = (static_cast<float>(end) - static_cast<float>(start)) / static_cast<float>(steps - 1);
  range(l, out, static_cast<float>(start), step, static_cast<float>(end), steps / 2);
}

std::string random_suffix(at::ScalarType dt) {
  if (dt != at::kFloat && dt != at::kBFloat16) throw CannotLower(std::string("random floats of ") + c10::toString(dt));
  return guid_suffix(dt);
}

// uniform_(self, from, to, generator): from + u * (to - from), u in [0, 1).
void uniform(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.outputs.at(0);
  const std::string sfx = random_suffix(self.scalar_type());
  const ValueId seed = seed_input(l, c.args[3].toOptional<at::Generator>());
  l.node("random_uniform_fwd" + sfx, {seed}, {l.output(self)},
         {static_cast<float>(c.args[1].toDouble()), static_cast<float>(c.args[2].toDouble())});
}

// normal_(self, mean, std, generator).
void normal(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.outputs.at(0);
  const std::string sfx = random_suffix(self.scalar_type());
  const double std_dev = c.args[2].toDouble();
  if (!(std_dev >= 0.0)) throw CannotLower("a negative std: the CPU reports it");
  const ValueId seed = seed_input(l, c.args[3].toOptional<at::Generator>());
  l.node("random_normal_fwd" + sfx, {seed}, {l.output(self)},
         {static_cast<float>(c.args[1].toDouble()), static_cast<float>(std_dev)});
}

// random_.from(self, from, to, generator): integers from .. to - 1 (randint): floor(u * range)
// (at most range - 1), then + from, in int32.
void random_integers(Lowering& l, const LoweredCall& c) {
  const at::Tensor& self = c.outputs.at(0);
  if (!is_integer(self.scalar_type())) throw CannotLower("random_ into a non-integer tensor");
  if (c.args[2].isNone()) throw CannotLower("random_ without an upper bound");
  const double from = static_cast<double>(c.args[1].toInt()), to = static_cast<double>(c.args[2].toInt());
  need_integer(from, "a random_ bound");
  need_integer(to, "a random_ bound");
  if (!(to > from) || to - from > kExactIntegers) throw CannotLower("a random_ range the CPU reports or beyond 2^24");
  const std::vector<uint32_t> shape = synapse_shape(self.sizes());
  const ValueId seed = seed_input(l, c.args[3].toOptional<at::Generator>());
  const ValueId u = l.temp(at::kFloat, shape), capped = l.temp(at::kFloat, shape), offsets = l.temp(at::kInt, shape);
  l.node("random_uniform_fwd_f32", {seed}, {u}, {0.0f, static_cast<float>(to - from)});
  l.node("min_fwd_f32", {u, l.constant(to - from - 1.0, at::kFloat)}, {capped});
  l.node("cast_f32_to_i32", {capped}, {offsets});
  l.node("add_fwd_i32", {offsets, l.constant(from, at::kInt)}, {l.output(self)});
}

}  // namespace
}  // namespace hpusim::bridge

TORCH_LIBRARY_IMPL(aten, HPU, m) {
  using namespace hpusim::bridge;
  register_lowering(m, "arange.start_out", &arange);
  register_lowering(m, "linspace.out", &linspace);
  register_lowering(m, "uniform_", &uniform);
  register_lowering(m, "normal_", &normal);
  register_lowering(m, "random_.from", &random_integers);
}
