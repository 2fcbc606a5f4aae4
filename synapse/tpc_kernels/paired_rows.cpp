// Softmax and its backward over short f32 rows, two rows a step (BERT's attention rows: 128
// elements). softmax_short.s keeps a row in registers, but its chain (max, exp, sum, scale) has
// little to overlap within one row; two rows side by side give the list schedule
// (body_schedule.h) two independent chains. The tensors are viewed as rows of two rows each;
// every row runs softmax_short.s's / softmax_bwd_short.s's operations in their order, so the
// results are bit-identical.
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"
#include "synapse/tpc_kernels/kernel_library.h"

#include <sstream>

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

// The body of one step: rows 0 and 1 of the pair, `vectors` f32 vectors each.
std::vector<std::string> paired_body(bool backward, bool log, unsigned vectors) {
  std::vector<std::string> b;
  unsigned next = 10;
  auto reg = [&]() { return "V" + std::to_string(next == 24 ? (next = 30, next++) : next++); };
  // The coordinates of the pair's vectors: I2 (the step's), then F32_LANES apart in I3.. .
  std::vector<std::string> at{"I2"};
  for (unsigned k = 1; k < 2 * vectors; ++k) {
    at.push_back("I" + std::to_string(2 + k));
    b.push_back("imov " + at[k] + ", I2");
    b.push_back("iadd_dim " + at[k] + ", (" + std::to_string(k) + " * F32_LANES) dim=0");
  }
  for (unsigned row = 0; row < 2; ++row) {
    std::vector<std::string> x, e, out;
    for (unsigned r = 0; r < vectors; ++r) {
      x.push_back(reg());
      e.push_back(reg());
      out.push_back(reg());
      b.push_back("ld_tnsr " + x[r] + ", " + at[row * vectors + r] + ", 0");
      if (backward) b.push_back("ld_tnsr " + e[r] + ", " + at[row * vectors + r] + ", 1");
    }
    const std::string acc = reg(), m = reg(), s = reg(), t = reg();
    if (backward) {   // x = grad, e = y: softmax_bwd_short.s
      b.push_back("mov.f32 " + acc + ", 0.0");
      for (unsigned r = 0; r < vectors; ++r) {
        if (log) {
          b.push_back("add.f32 " + acc + ", " + acc + ", " + x[r]);
        } else {
          b.push_back("mul.f32 " + t + ", " + x[r] + ", " + e[r]);
          b.push_back("add.f32 " + acc + ", " + acc + ", " + t);
        }
      }
      b.push_back("reduce.add.f32 " + acc + ", " + acc);
      b.push_back("shuffle.f32 " + s + ", " + acc + ", V8");
      for (unsigned r = 0; r < vectors; ++r) {
        const std::string u = reg();
        if (log) {
          b.push_back("special.exp.f32 " + u + ", " + e[r]);
          b.push_back("mul.f32 " + u + ", " + u + ", " + s);
          b.push_back("sub.f32 " + out[r] + ", " + x[r] + ", " + u);
        } else {
          b.push_back("sub.f32 " + u + ", " + x[r] + ", " + s);
          b.push_back("mul.f32 " + out[r] + ", " + e[r] + ", " + u);
        }
        b.push_back("st_tnsr " + at[row * vectors + r] + ", 2, " + out[r]);
      }
      continue;
    }
    b.push_back("mov.f32 " + acc + ", 0xFF800000");   // softmax_short.s
    for (unsigned r = 0; r < vectors; ++r) b.push_back("max.f32 " + acc + ", " + acc + ", " + x[r]);
    b.push_back("reduce.max.f32 " + acc + ", " + acc);
    b.push_back("shuffle.f32 " + m + ", " + acc + ", V8");
    for (unsigned r = 0; r < vectors; ++r) b.push_back("sub.f32 " + e[r] + ", " + x[r] + ", " + m);
    for (unsigned r = 0; r < vectors; ++r) b.push_back("special.exp.f32 " + e[r] + ", " + e[r]);
    const std::string sum = reg();
    b.push_back("mov.f32 " + sum + ", 0.0");
    for (unsigned r = 0; r < vectors; ++r) b.push_back("add.f32 " + sum + ", " + sum + ", " + e[r]);
    b.push_back("reduce.add.f32 " + sum + ", " + sum);
    b.push_back("shuffle.f32 " + s + ", " + sum + ", V8");
    if (log) b.push_back("special.log.f32 " + s + ", " + s);
    for (unsigned r = 0; r < vectors; ++r) {
      if (log) {
        b.push_back("sub.f32 " + out[r] + ", " + x[r] + ", " + m);
        b.push_back("sub.f32 " + out[r] + ", " + out[r] + ", " + s);
      } else {
        b.push_back("div.f32 " + out[r] + ", " + e[r] + ", " + s);
      }
      b.push_back("st_tnsr " + at[row * vectors + r] + ", 1, " + out[r]);
    }
  }
  return b;
}

}  // namespace

std::optional<InstantiateResult> KernelLibrary::instantiate_paired_rows(const std::string& guid, const KernelParams& p) {
  const auto it = defs_.find(guid);
  if (it == defs_.end()) return std::nullopt;
  const KernelDef& def = *it->second;
  const bool backward = def.kind == Kind::SoftmaxBwd;
  if ((def.kind != Kind::Softmax && !backward) || def.in != DType::F32 || def.out != DType::F32 || !p.scalars.empty() ||
      p.inputs.size() != (backward ? 2u : 1u) || p.outputs.size() != 1)
    return std::nullopt;
  const auto shape = padded(p.outputs[0].shape);
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const TensorParams& t : *list)
      if (t.dtype != DType::F32 || padded(t.shape) != shape || flattened(t).shape.size() != 1) return std::nullopt;
  const unsigned lanes = lanes_of(DType::F32);
  const uint64_t rows = elements(p.outputs[0]) / shape[0];
  const unsigned vectors = shape[0] / lanes;
  // Whole vectors (a vector never spans two rows), rows of at most two vectors, rows in pairs.
  if (shape[0] % lanes != 0 || vectors == 0 || vectors > 2 || rows < 2 || rows % 2 != 0 || rows / 2 > INT32_MAX)
    return std::nullopt;
  const bool log = def.op_macro == "log_softmax";

  Instantiation inst;
  inst.guid = def.guid;
  const uint32_t pair = 2 * shape[0];
  inst.ispace_geometry = {1, static_cast<int32_t>(rows / 2), 1, 1, 1};
  const TensorParams view{DType::F32, {pair, static_cast<uint32_t>(rows / 2)}, {}};
  TensorAccessPattern pattern = pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(pair) - 1}, padded(view.shape), false);
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    DescriptorTemplate d = descriptor_of(view);
    if (!backward) d.padding = 0xFF800000u;   // as softmax's X (no lane reads it: whole vectors)
    inst.inputs.push_back(d);
    inst.input_patterns.push_back(pattern);
  }
  inst.outputs.push_back(descriptor_of(view));
  inst.output_patterns.push_back(pattern);
  inst.srf[0] = shape[0];

  std::vector<unsigned> prefetched;
  for (size_t k = 0; k < p.inputs.size(); ++k) prefetched.push_back(static_cast<unsigned>(k));
  const std::vector<std::string> bundles = schedule::list_schedule(paired_body(backward, log, vectors), "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  std::ostringstream src;
  src << "// " << def.guid << ": two rows of " << vectors << " f32 vectors a step\n"
      << width_prelude(prefetched, 2 * vectors, 1) << ".equ LANES " << lanes << "\n"
      << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n        mov.f32 V8, 0.0\n        NEST_BEGIN\n";
  for (size_t i = 0; i < bundles.size(); ++i) src << (i + 1 == bundles.size() ? "end_d0: " : "        ") << bundles[i] << "\n";
  src << "        NEST_END\n";
  inst.variant = def.op_macro + (backward ? " bwd" : " fwd") + " f32 paired rows " + std::to_string(vectors);
  return assembled(std::move(inst), src.str(), def.guid);
}

}  // namespace hpusim::synapse::tpc_kernels
