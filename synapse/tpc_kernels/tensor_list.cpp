// The tensor-list GUIDs: one node over a list of tensors (a parameter group), instantiated as
// several kernel launches (KernelPart), as the real stack's multi-tensor optimizer kernels.
//
//   fused_adam_f32 / fused_adamw_f32 (scalars beta1, beta2, eps, weight_decay, bias_correction 0 / 1):
//                                     inputs  state, then per parameter: param, grad, exp_avg, exp_avg_sq
//                                     outputs state, then per parameter: param, exp_avg, exp_avg_sq
//   fused_sgd_f32 (scalars momentum, dampening, weight_decay, nesterov 0 / 1):
//                                     inputs  state, then per parameter: param, grad [, momentum_buffer]
//                                     outputs state, then per parameter: param [, momentum_buffer]
//   fused_clip_norm_f32:              inputs  the gradients; outputs the gradients, total_norm [1],
//                                     scratch [64 * n + 1]
//
// The optimizers' state is two f32 elements: the steps taken so far and the learning rate. Their
// kernels read both on the core, so a training loop (and a learning-rate schedule) keeps one graph;
// the last part adds one to the step count once every update has run.
#include <cmath>
#include <sstream>
#include <vector>

#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

constexpr uint32_t kNormChunks = 64;   // partial sums per gradient in the first pass of a norm

// An entry's tensors, each viewed as one long row (flattened) when every one of them is dense, so
// that the prefetch runs ahead across rows; otherwise as they are.
std::vector<TensorParams> as_runs(std::vector<TensorParams> entry) {
  for (const TensorParams& t : entry)
    if (flattened(t).shape.size() != 1) return entry;
  for (TensorParams& t : entry) t = flattened(t);
  return entry;
}

struct Layout {
  size_t per_input = 0, per_output = 0;   // tensors per list entry
  size_t fixed_inputs = 0, fixed_outputs = 0;
  std::vector<std::string> scalar_names;
};

Layout layout_of(const std::string& guid, const std::vector<float>& scalars) {
  if (guid == "fused_sgd_f32") {
    const bool momentum = !scalars.empty() && scalars[0] != 0.0f;
    return {momentum ? 3u : 2u, momentum ? 2u : 1u, 1, 1, {"momentum", "dampening", "weight_decay", "nesterov"}};
  }
  if (guid == "fused_clip_norm_f32") return {1, 1, 0, 2, {"max_norm"}};
  return {4, 3, 1, 1, {"beta1", "beta2", "eps", "weight_decay", "bias_correction"}};
}

std::string entry_names(const std::string& guid, bool inputs, bool momentum) {
  if (guid == "fused_sgd_f32")
    return inputs ? (momentum ? "param, grad, momentum_buffer" : "param, grad") : (momentum ? "param, momentum_buffer" : "param");
  if (guid == "fused_clip_norm_f32") return "grad";
  return inputs ? "param, grad, exp_avg, exp_avg_sq" : "param, exp_avg, exp_avg_sq";
}

AccessPatternDim vector_dim0(unsigned lanes) {
  const int32_t l = static_cast<int32_t>(lanes);
  return {0, l, 0, l - 1};
}

// Every element of the tensor at every index-space step.
TensorAccessPattern whole_tensor(const std::array<uint32_t, kMaxDims>& size) {
  TensorAccessPattern pat;
  for (unsigned d = 0; d < kMaxDims; ++d) pat[d] = {static_cast<uint8_t>(d), 0, 0, static_cast<int32_t>(size[d]) - 1};
  return pat;
}

DescriptorTemplate flat(uint64_t elements) {
  DescriptorTemplate d;
  d.dims = 1;
  d.size = {static_cast<uint32_t>(elements), 1, 1, 1, 1};
  d.stride = {1, static_cast<int64_t>(elements), static_cast<int64_t>(elements), static_cast<int64_t>(elements),
              static_cast<int64_t>(elements)};
  return d;
}

// [1, m]: a vector store at (0, j) writes element j only.
DescriptorTemplate one_per_row(uint64_t m) {
  DescriptorTemplate d;
  d.dims = 2;
  d.size = {1, static_cast<uint32_t>(m), 1, 1, 1};
  d.stride = {1, 1, static_cast<int64_t>(m), static_cast<int64_t>(m), static_cast<int64_t>(m)};
  return d;
}


}  // namespace

bool KernelLibrary::is_tensor_list(const std::string& guid) {
  for (const char* g : kTensorListGuids)
    if (guid == g) return true;
  return false;
}

std::optional<KernelLibrary::OptimizerLayout> KernelLibrary::optimizer_layout(const std::string& guid,
                                                                             const std::vector<float>& scalars) {
  if (!is_tensor_list(guid) || guid == "fused_clip_norm_f32") return std::nullopt;
  const Layout lay = layout_of(guid, scalars);
  return OptimizerLayout{lay.per_input, lay.per_output};
}

InstantiateResult KernelLibrary::instantiate_tensor_list(const std::string& guid, const KernelParams& p) {
  InstantiateResult result;
  auto fail = [&](GlueStatus status, const std::string& message) {
    result.status = status;
    result.message = guid + ": " + message;
    return result;
  };
  const Layout lay = layout_of(guid, p.scalars);
  const bool optimizer = guid != "fused_clip_norm_f32";
  const bool momentum = guid == "fused_sgd_f32" && lay.per_input == 3;

  // ---- validation ----
  if (p.scalars.size() != lay.scalar_names.size()) {
    std::string names;
    for (const std::string& n : lay.scalar_names) names += (names.empty() ? "" : ", ") + n;
    return fail(GlueStatus::IncompatibleScalarParams, "takes " + std::to_string(lay.scalar_names.size()) +
                                                          " scalar parameters (" + names + "), got " +
                                                          std::to_string(p.scalars.size()));
  }
  for (size_t k = 0; k < p.scalars.size(); ++k)
    if (!std::isfinite(p.scalars[k]))
      return fail(GlueStatus::IncompatibleScalarParams,
                  "scalar " + std::to_string(k) + " (" + lay.scalar_names[k] + ") must be finite");
  const size_t list_inputs = p.inputs.size() >= lay.fixed_inputs ? p.inputs.size() - lay.fixed_inputs : 0;
  const size_t n = list_inputs / lay.per_input;
  if (n == 0 || list_inputs % lay.per_input != 0)
    return fail(GlueStatus::IncompatibleInputCount,
                "takes " + std::string(optimizer ? "the state, then " : "") + "one or more groups of (" +
                    entry_names(guid, true, momentum) + "): " + std::to_string(lay.fixed_inputs) + " + " +
                    std::to_string(lay.per_input) + " * n inputs, got " + std::to_string(p.inputs.size()));
  // An optimizer node without the state output updates its entries only and leaves the step
  // count to the node that has it (the compiler splits a parameter group this way).
  const bool counts = !optimizer || p.outputs.size() != n * lay.per_output;
  const size_t fixed_outputs = counts ? lay.fixed_outputs : 0;
  if (p.outputs.size() != fixed_outputs + n * lay.per_output)
    return fail(GlueStatus::IncompatibleOutputCount,
                "takes " + std::to_string(lay.fixed_outputs + n * lay.per_output) + " outputs for " +
                    std::to_string(n) + " list entries (" +
                    (optimizer ? "the state, then (" + entry_names(guid, false, momentum) + ") each; or only the (" +
                                     entry_names(guid, false, momentum) + ") to leave the step count alone"
                               : std::string("the gradients, total_norm, scratch")) +
                    "), got " + std::to_string(p.outputs.size()));
  auto check = [&](const TensorParams& t, bool input, size_t index) -> std::optional<std::string> {
    const std::string label = std::string(input ? "input " : "output ") + std::to_string(index);
    if (t.dtype != DType::F32) return label + ": dtype " + tpc::dtype_name(t.dtype) + ", but " + guid + " takes f32";
    if (t.shape.size() > kMaxDims) return label + ": more than 5 dims";
    for (uint32_t d : t.shape)
      if (d == 0 || d > 0x7FFFFFFFu) return label + ": shape " + shape_text(t.shape) + " has an empty or huge dim";
    if (!t.strides.empty()) return label + ": must be dense (no strides)";
    return std::nullopt;
  };
  for (size_t k = 0; k < p.inputs.size(); ++k)
    if (auto m = check(p.inputs[k], true, k))
      return fail(m->find("dtype") != std::string::npos ? GlueStatus::IncompatibleDataType : GlueStatus::IncompatibleInputSize, *m);
  for (size_t k = 0; k < p.outputs.size(); ++k)
    if (auto m = check(p.outputs[k], false, k))
      return fail(m->find("dtype") != std::string::npos ? GlueStatus::IncompatibleDataType : GlueStatus::IncompatibleOutputSize, *m);
  if (optimizer) {
    if (elements(p.inputs[0]) != 2 || (counts && elements(p.outputs[0]) != 2))
      return fail(GlueStatus::IncompatibleInputSize,
                  counts ? "the state (input 0 and output 0) must have 2 elements (steps taken, lr), got " +
                               shape_text(p.inputs[0].shape) + " and " + shape_text(p.outputs[0].shape)
                         : "the state (input 0) must have 2 elements (steps taken, lr), got " +
                               shape_text(p.inputs[0].shape));
  } else {
    if (elements(p.outputs[n]) != 1)
      return fail(GlueStatus::IncompatibleOutputSize,
                  "output " + std::to_string(n) + " (total_norm) must have 1 element, got " + shape_text(p.outputs[n].shape));
    if (elements(p.outputs[n + 1]) != uint64_t{kNormChunks} * n + 1)
      return fail(GlueStatus::IncompatibleOutputSize,
                  "output " + std::to_string(n + 1) + " (scratch) must have 64 * " + std::to_string(n) + " + 1 = " +
                      std::to_string(kNormChunks * n + 1) + " elements, got " + shape_text(p.outputs[n + 1].shape));
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t first = lay.fixed_inputs + i * lay.per_input;
    const TensorParams& param = p.inputs[first];
    auto same = [&](const TensorParams& t, bool input, size_t index) -> std::optional<std::string> {
      if (padded(t.shape) == padded(param.shape) && elements(t) == elements(param)) return std::nullopt;
      return std::string(input ? "input " : "output ") + std::to_string(index) + ": shape " + shape_text(t.shape) +
             " differs from input " + std::to_string(first) + "'s " + shape_text(param.shape) + " (entry " +
             std::to_string(i) + ")";
    };
    for (size_t k = 1; k < lay.per_input; ++k)
      if (auto m = same(p.inputs[first + k], true, first + k)) return fail(GlueStatus::IncompatibleInputSize, *m);
    const size_t out_first = optimizer ? fixed_outputs + i * lay.per_output : i;
    for (size_t k = 0; k < lay.per_output; ++k)
      if (auto m = same(p.outputs[out_first + k], false, out_first + k)) return fail(GlueStatus::IncompatibleOutputSize, *m);
  }
  const std::vector<float>& s = p.scalars;
  if (guid == "fused_sgd_f32") {
    if (s[3] != 0.0f && s[3] != 1.0f)
      return fail(GlueStatus::IncompatibleScalarParams, "scalar 3 (nesterov) must be 0 or 1");
    if (s[3] != 0.0f && (s[0] <= 0.0f || s[1] != 0.0f))
      return fail(GlueStatus::IncompatibleScalarParams, "Nesterov momentum requires a momentum and zero dampening");
  } else if (optimizer) {
    for (size_t k = 0; k < 2; ++k)
      if (!(s[k] >= 0.0f && s[k] < 1.0f))
        return fail(GlueStatus::IncompatibleScalarParams, "scalar " + std::to_string(k) + " (" + lay.scalar_names[k] +
                                                              ") must be in [0, 1)");
    if (s[2] < 0.0f) return fail(GlueStatus::IncompatibleScalarParams, "scalar 2 (eps) must be >= 0");
    if (s[4] != 0.0f && s[4] != 1.0f)
      return fail(GlueStatus::IncompatibleScalarParams, "scalar 4 (bias_correction) must be 0 or 1");
  }

  // ---- the parts ----
  const unsigned lanes = lanes_of(DType::F32);
  const std::string lanes_equ = ".equ LANES " + std::to_string(lanes) + "\n";
  const std::string prelude = width_prelude() + lanes_equ;
  // The update and scaling kernels stream their tensors along dim 0: prefetched (kernels/nest.inc).
  std::vector<unsigned> streamed(lay.per_input);
  for (unsigned k = 0; k < lay.per_input; ++k) streamed[k] = k;
  auto assemble = [&](Instantiation& inst, const std::string& source) {
    std::string error;
    inst.program = program_for(source, inst.guid, &error);
    if (!inst.program) {
      result.status = GlueStatus::InternalError;
      result.message = guid + ": " + error;
      return false;
    }
    return true;
  };
  auto elementwise_geometry = [&](const TensorParams& t) {
    const auto px = padded(t.shape);
    return std::array<int32_t, kMaxDims>{static_cast<int32_t>((px[0] + lanes - 1) / lanes), static_cast<int32_t>(px[1]),
                                         static_cast<int32_t>(px[2]), static_cast<int32_t>(px[3]),
                                         static_cast<int32_t>(px[4])};
  };

  if (optimizer) {
    const size_t nstates = lay.per_input - 2;
    const size_t nin = lay.per_input + 1;   // the part's inputs: param, grad, states, state tensor
    const bool adam = guid != "fused_sgd_f32";
    const bool decoupled = guid == "fused_adamw_f32";
    const float wd = adam ? s[3] : s[2];
    // A step covers glue::kOptimStepVectors vectors (LANES covers them all; optim_step.cpp).
    const unsigned step = glue::kOptimStepVectors * lanes;
    std::ostringstream src;
    src << width_prelude(streamed, UINT32_MAX, glue::kOptimStepVectors) << ".equ LANES " << step << "\n.equ NIN " << nin << "\n.equ STATE_T "
        << nin - 1 << "\n"
        << glue::optim_bank_macros(nstates, nin, wd != 0.0f && !decoupled ? (adam ? "S7" : "S3") : "", decoupled ? "V27" : "")
        << ".macro PRE_NEST\n        imov I3, 0\n        ld_tnsr_s S16, I3, STATE_T\n        imov_dim I3, 1 dim=0\n"
        << "        ld_tnsr_s S17, I3, STATE_T\n";
    Instantiation inst;
    inst.guid = guid;
    const auto set = [&](unsigned r, double v) { inst.srf[r] = f32_bits(static_cast<float>(v)); };
    if (adam) {
      // The step-dependent values, once per core: V30 = t (this step), V31 = -lr / (1 - beta1^t),
      // V28 = sqrt(1 - beta2^t), V27 = 1 - lr * wd.
      src << "        add.f32 S16, S16, 1.0\n        mov.f32 V30, S16\n        mov.f32 V29, S17\n"
          << "        ONE_MINUS_POW V31, S9\n        div.f32 V31, V29, V31\n        mul.f32 V31, V31, -1.0\n"
          << "        ONE_MINUS_POW V28, S10\n        special.sqrt.f32 V28, V28\n"
          << "        mul.f32 V27, V29, S7\n        mul.f32 V27, V27, -1.0\n        add.f32 V27, V27, 1.0\n"
          << ".endm\n.macro OPT_STEP\n        OPT_ADAM V31, V28\n.endm\n";
      const double b1 = s[0], b2 = s[1];
      set(0, b1);
      set(1, 1.0 - b1);
      set(2, b2);
      set(3, 1.0 - b2);
      set(6, s[2]);
      set(7, s[3]);
      // ln(beta) for the bias corrections; without them -inf, so 1 - beta^t is 1.
      set(9, s[4] != 0.0f ? std::log(b1) : -INFINITY);
      set(10, s[4] != 0.0f ? std::log(b2) : -INFINITY);
      inst.variant = std::string("tensor-list ") + (decoupled ? "adamw" : "adam") + (wd != 0.0f ? " wd" : "");
    } else {
      // V31 = -lr; VP5: the first step (no momentum yet: buf = g).
      src << "        mov.f32 V30, S16\n        cmp.eq.f32 VP5, V30, 0.0\n        mov.f32 V31, S17\n"
          << "        mul.f32 V31, V31, -1.0\n.endm\n.macro OPT_STEP\n        ";
      if (!momentum) src << "OPT_SGD_PLAIN V31\n";
      else if (s[3] != 0.0f) src << "OPT_SGD_NESTEROV V31, VP5\n";
      else src << "OPT_SGD V31, VP5\n";
      src << ".endm\n";
      set(1, s[0]);
      set(2, 1.0 - static_cast<double>(s[1]));
      set(3, s[2]);
      inst.variant = std::string("tensor-list sgd") + (momentum ? (s[3] != 0.0f ? " nesterov" : " momentum") : "") +
                     (wd != 0.0f ? " wd" : "");
    }
    const std::string kernel = glue::optim_step_kernel(src.str());
    if (kernel.empty()) return fail(GlueStatus::InternalError, guid + ": the optimizer step's macros are incomplete");
    if (!assemble(inst, src.str() + kernel)) return result;
    for (size_t i = 0; i < n; ++i) {
      KernelPart part;
      part.inst = inst;
      const size_t first = lay.fixed_inputs + i * lay.per_input;
      std::vector<TensorParams> entry(p.inputs.begin() + static_cast<std::ptrdiff_t>(first),
                                      p.inputs.begin() + static_cast<std::ptrdiff_t>(first + lay.per_input));
      for (size_t k = 0; k < lay.per_output; ++k) entry.push_back(p.outputs[fixed_outputs + i * lay.per_output + k]);
      const std::vector<TensorParams> runs = as_runs(std::move(entry));
      const TensorParams& param = runs[0];
      const auto px = padded(param.shape);
      part.inst.ispace_geometry = elementwise_geometry(param);
      part.inst.ispace_geometry[0] = static_cast<int32_t>((px[0] + step - 1) / step);
      for (size_t k = 0; k < lay.per_input; ++k) {
        part.inst.inputs.push_back(descriptor_of(runs[k]));
        part.inst.input_patterns.push_back(pattern_of(vector_dim0(step), px, false));
        part.tensors.push_back(static_cast<uint32_t>(first + k));
      }
      part.inst.inputs.push_back(descriptor_of(p.inputs[0]));
      part.inst.input_patterns.push_back(whole_tensor(padded(p.inputs[0].shape)));
      part.tensors.push_back(0);
      for (size_t k = 0; k < lay.per_output; ++k) {
        const size_t out = fixed_outputs + i * lay.per_output + k;
        part.inst.outputs.push_back(descriptor_of(runs[lay.per_input + k]));
        part.inst.output_patterns.push_back(pattern_of(vector_dim0(step), px, false));
        part.tensors.push_back(static_cast<uint32_t>(p.inputs.size() + out));
      }
      result.parts.push_back(std::move(part));
    }
    if (!counts) return result;
    KernelPart count;
    count.inst.guid = guid;
    count.inst.variant = "tensor-list step count";
    if (!assemble(count.inst, prelude + ".include \"optim_step_count.s\"\n")) return result;
    count.inst.ispace_geometry = {1, 1, 1, 1, 1};
    count.inst.inputs = {descriptor_of(p.inputs[0])};
    count.inst.outputs = {descriptor_of(p.outputs[0])};
    count.inst.input_patterns = {whole_tensor(padded(p.inputs[0].shape))};
    count.inst.output_patterns = {whole_tensor(padded(p.outputs[0].shape))};
    count.tensors = {0, static_cast<uint32_t>(p.inputs.size())};
    count.phase = 1;
    result.parts.push_back(std::move(count));
    return result;
  }

  // ---- fused_clip_norm_f32: sums of squares, the norm and coefficient, the scaling ----
  const uint64_t partials = uint64_t{kNormChunks} * n;
  const uint32_t scratch = static_cast<uint32_t>(p.inputs.size() + n + 1);
  const uint32_t norm = static_cast<uint32_t>(p.inputs.size() + n);
  Instantiation sumsq;
  sumsq.guid = guid;
  sumsq.variant = "tensor-list sum of squares";
  if (!assemble(sumsq, prelude + ".equ AHEAD " + std::to_string(prefetch_ahead(1)) + "\n.include \"sumsq_partial.s\"\n"))
    return result;
  Instantiation scale;
  scale.guid = guid;
  scale.variant = "tensor-list scale";
  constexpr unsigned kScaleVectors = 2;   // scale_by_tensor.s's step
  if (!assemble(scale, width_prelude({0}, UINT32_MAX, kScaleVectors) + ".equ LANES " + std::to_string(kScaleVectors * lanes) +
                           "\n.include \"scale_by_tensor.s\"\n"))
    return result;
  Instantiation coef;
  coef.guid = guid;
  coef.variant = "tensor-list clip coefficient";
  if (!assemble(coef, prelude + ".include \"clip_coef.s\"\n")) return result;

  for (size_t i = 0; i < n; ++i) {
    const uint64_t count = elements(p.inputs[i]);
    const uint64_t vectors = (count + lanes - 1) / lanes;
    const uint64_t per_chunk = ((vectors + kNormChunks - 1) / kNormChunks + 3) / 4 * 4;
    KernelPart part;
    part.inst = sumsq;
    part.inst.ispace_geometry = {static_cast<int32_t>(kNormChunks), 1, 1, 1, 1};
    part.inst.inputs = {flat(count)};
    part.inst.outputs = {one_per_row(partials + 1)};
    part.inst.input_patterns = {whole_tensor(part.inst.inputs[0].size)};
    part.inst.output_patterns = {whole_tensor(part.inst.outputs[0].size)};
    part.inst.srf[0] = static_cast<uint32_t>(per_chunk);
    part.inst.srf[1] = static_cast<uint32_t>(kNormChunks * i);
    part.tensors = {static_cast<uint32_t>(i), scratch};
    result.parts.push_back(std::move(part));
  }
  KernelPart total;
  total.inst = coef;
  total.inst.ispace_geometry = {1, 1, 1, 1, 1};
  total.inst.inputs = {flat(partials)};
  total.inst.outputs = {descriptor_of(p.outputs[n]), one_per_row(partials + 1)};
  total.inst.input_patterns = {whole_tensor(total.inst.inputs[0].size)};
  total.inst.output_patterns = {whole_tensor(total.inst.outputs[0].size), whole_tensor(total.inst.outputs[1].size)};
  total.inst.srf[0] = static_cast<uint32_t>((partials + lanes - 1) / lanes);
  total.inst.srf[1] = f32_bits(s[0]);
  total.inst.srf[2] = static_cast<uint32_t>(partials);
  total.tensors = {scratch, norm, scratch};
  total.phase = 1;
  result.parts.push_back(std::move(total));
  for (size_t i = 0; i < n; ++i) {
    KernelPart part;
    part.inst = scale;
    const std::vector<TensorParams> runs = as_runs({p.inputs[i], p.outputs[i]});
    const TensorParams& x = runs[0];
    const auto px = padded(x.shape);
    part.inst.ispace_geometry = elementwise_geometry(x);
    part.inst.ispace_geometry[0] = static_cast<int32_t>((px[0] + kScaleVectors * lanes - 1) / (kScaleVectors * lanes));
    part.inst.inputs = {descriptor_of(x), one_per_row(partials + 1)};
    part.inst.outputs = {descriptor_of(runs[1])};
    part.inst.input_patterns = {pattern_of(vector_dim0(kScaleVectors * lanes), px, false),
                                whole_tensor(part.inst.inputs[1].size)};
    part.inst.output_patterns = {pattern_of(vector_dim0(kScaleVectors * lanes), px, false)};
    part.inst.srf[0] = static_cast<uint32_t>(partials);
    part.tensors = {static_cast<uint32_t>(i), scratch, static_cast<uint32_t>(p.inputs.size() + i)};
    part.phase = 2;
    result.parts.push_back(std::move(part));
  }
  return result;
}

}  // namespace hpusim::synapse::tpc_kernels
