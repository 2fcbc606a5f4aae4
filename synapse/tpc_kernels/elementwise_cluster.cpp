// Elementwise clusters (kernel_library.h): one kernel for a DAG of f32 elementwise ops. The glue
// writes the body for nest.inc's loop: a step is two vectors (lo at I2, hi one vector on at I4);
// the streamed inputs are loaded first, then each op's ops.inc macro runs on lo and on hi into
// registers of its own, and each output is stored as soon as its value is known. Inputs of one
// element and fill constants sit in a register set once per core, before the loop.
#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>

#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

bool clusterable(const KernelLibrary::KernelDef& def) {
  switch (def.kind) {
    case Kind::Binary:
    case Kind::Unary:
    case Kind::Backward:
    case Kind::UnaryF32:
    case Kind::Ternary:
      return def.in == DType::F32 && def.out == DType::F32;
    case Kind::Fill:
      return def.out == DType::F32;
    default:
      return false;
  }
}

// The value registers: ops.inc's macros use V4..V8 as scratch, their hi copies V24..V28
// (body_schedule.h), and the _PAIR macros V24..V29.
constexpr const char* kValueRegisters[] = {"V9",  "V10", "V11", "V12", "V13", "V14", "V15", "V16", "V17",
                                           "V18", "V19", "V20", "V21", "V22", "V23", "V30", "V31", "V32",
                                           "V33", "V34", "V35", "V36", "V37", "V38", "V39"};
static_assert(std::size(kValueRegisters) == KernelLibrary::kClusterRegisters);

std::string hex(uint32_t bits) {
  std::ostringstream s;
  s << "0x" << std::hex << bits;
  return s.str();
}

// The kernel's code, or why there is none.
struct ClusterCode {
  std::string error;
  bool out_of_registers = false;
  unsigned registers = 0;     // the most value registers in use at once
  std::string setup;          // before the loop nest (once per core)
  std::string body;           // one step; its last bundle steps I2 (end_d0)
  std::optional<uint32_t> s0; // the S0 every ternary op takes, when they all take one value
};

// Plans the registers and writes the code. `inputs`: the kernel's input count; `one_element[k]`:
// input k is one element (held in a register, not streamed).
ClusterCode cluster_code(const std::map<std::string, const KernelLibrary::KernelDef*>& defs,
                         const ElementwiseCluster& cluster, size_t inputs, const std::vector<bool>& one_element) {
  ClusterCode code;
  const size_t values = inputs + cluster.ops.size();
  std::vector<const KernelLibrary::KernelDef*> op_defs;
  for (size_t k = 0; k < cluster.ops.size(); ++k) {
    const ClusterOp& op = cluster.ops[k];
    const std::string label = "op " + std::to_string(k) + " (" + op.guid + ")";
    const auto it = defs.find(op.guid);
    if (it == defs.end() || !clusterable(*it->second)) {
      code.error = label + ": not an f32 elementwise GUID a cluster can hold";
      return code;
    }
    const KernelLibrary::KernelDef& def = *it->second;
    if (op.operands.size() != def.input_names.size()) {
      code.error = label + ": takes " + std::to_string(def.input_names.size()) + " operands, got " +
                   std::to_string(op.operands.size());
      return code;
    }
    for (uint32_t v : op.operands)
      if (v >= inputs + k) {
        code.error = label + ": operand value " + std::to_string(v) + " is not an input or an earlier op's result";
        return code;
      }
    const size_t scalars = def.kind == Kind::Fill || def.kind == Kind::Ternary ? 1 : 0;
    if (op.scalars.size() != scalars) {
      code.error = label + ": takes " + std::to_string(scalars) + " scalar parameters, got " +
                   std::to_string(op.scalars.size());
      return code;
    }
    op_defs.push_back(&def);
  }
  if (cluster.outputs.empty()) {
    code.error = "a cluster without outputs";
    return code;
  }
  for (uint32_t v : cluster.outputs)
    if (v < inputs || v >= values || op_defs[v - inputs]->kind == Kind::Fill) {
      code.error = "output value " + std::to_string(v) + " is not the result of a computing op";
      return code;
    }

  // The last op reading each value (an output is also read by its store, right after its op).
  std::vector<int64_t> last_use(values, -1);
  for (size_t k = 0; k < cluster.ops.size(); ++k)
    for (uint32_t v : cluster.ops[k].operands) last_use[v] = static_cast<int64_t>(k);
  std::vector<std::vector<size_t>> stored_as(values);
  for (size_t j = 0; j < cluster.outputs.size(); ++j) stored_as[cluster.outputs[j]].push_back(j);

  std::vector<std::string> free_registers(std::begin(kValueRegisters), std::end(kValueRegisters));
  std::reverse(free_registers.begin(), free_registers.end());   // pop_back takes the lowest
  unsigned in_use = 0;
  auto take = [&]() -> std::string {
    ++in_use;
    code.registers = std::max(code.registers, in_use);
    if (free_registers.empty()) {   // counted on, to say how many the cluster needs
      code.out_of_registers = true;
      return "V0";
    }
    std::string r = free_registers.back();
    free_registers.pop_back();
    return r;
  };
  auto give_back = [&](const std::string& r) {
    --in_use;
    free_registers.push_back(r);
    std::sort(free_registers.begin(), free_registers.end(), [](const std::string& a, const std::string& b) {
      return std::stoi(a.substr(1)) > std::stoi(b.substr(1));
    });
  };
  std::vector<std::string> lo(values), hi(values);
  std::vector<bool> pinned(values, false);
  std::ostringstream setup;

  // Once per core: inputs of one element, and the constants (one register per distinct value).
  std::map<uint32_t, std::string> constants;
  for (size_t k = 0; k < inputs; ++k)
    if (one_element[k] && last_use[k] >= 0) {
      lo[k] = hi[k] = take();
      pinned[k] = true;
      setup << "        imov I3, 0\n        ld_tnsr_s S16, I3, " << k << "\n        mov.f32 " << lo[k] << ", S16\n";
    }
  std::vector<uint32_t> s0_values;
  for (size_t k = 0; k < cluster.ops.size(); ++k) {
    const uint32_t bits = op_defs[k]->kind == Kind::Fill || op_defs[k]->kind == Kind::Ternary
                              ? f32_bits(cluster.ops[k].scalars[0]) : 0;
    if (op_defs[k]->kind == Kind::Ternary && std::find(s0_values.begin(), s0_values.end(), bits) == s0_values.end())
      s0_values.push_back(bits);
    if (op_defs[k]->kind != Kind::Fill) continue;
    const size_t v = inputs + k;
    auto [it, added] = constants.emplace(bits, std::string());
    if (added) {
      it->second = take();
      setup << "        mov.f32 " << it->second << ", " << hex(bits) << "\n";
    }
    lo[v] = hi[v] = it->second;
    pinned[v] = true;
  }
  if (s0_values.size() == 1) code.s0 = s0_values[0];

  // A step: the streamed inputs, then the ops (ops.inc's macros expanded, the hi vector's copy on
  // scratch of its own), each output stored when known; then list-scheduled (body_schedule.h).
  std::vector<std::string> lines{"imov I4, I2", "iadd_dim I4, F32_LANES dim=0"};
  for (size_t k = 0; k < inputs; ++k)
    if (!one_element[k] && last_use[k] >= 0) {
      lo[k] = take();
      hi[k] = take();
      lines.push_back("ld_tnsr " + lo[k] + ", I2, " + std::to_string(k));
      lines.push_back("ld_tnsr " + hi[k] + ", I4, " + std::to_string(k));
    }
  for (size_t k = 0; k < cluster.ops.size(); ++k) {
    const KernelLibrary::KernelDef& def = *op_defs[k];
    if (def.kind == Kind::Fill) continue;
    const ClusterOp& op = cluster.ops[k];
    const size_t v = inputs + k;
    lo[v] = take();
    hi[v] = take();
    if (def.kind == Kind::Ternary && s0_values.size() > 1) lines.push_back("mov S0, " + hex(f32_bits(op.scalars[0])));
    for (const bool second : {false, true}) {
      const auto& regs = second ? hi : lo;
      std::vector<std::string> args{"f32", regs[v]};
      for (uint32_t operand : op.operands) args.push_back(regs[operand]);
      const std::vector<std::string> expanded = schedule::expand_op(def.op_macro, args, second);
      if (expanded.empty()) {
        code.error = "op " + std::to_string(k) + " (" + op.guid + "): ops.inc has no macro " + def.op_macro;
        return code;
      }
      lines.insert(lines.end(), expanded.begin(), expanded.end());
    }
    for (uint32_t operand : op.operands)
      if (last_use[operand] == static_cast<int64_t>(k) && !pinned[operand] && !lo[operand].empty()) {
        give_back(lo[operand]);
        give_back(hi[operand]);
        lo[operand].clear();   // an operand given twice is given back once
      }
    for (size_t j : stored_as[v]) {
      lines.push_back("st_tnsr I2, " + std::to_string(inputs + j) + ", " + lo[v]);
      lines.push_back("st_tnsr I4, " + std::to_string(inputs + j) + ", " + hi[v]);
    }
    if (last_use[v] <= static_cast<int64_t>(k)) {
      give_back(lo[v]);
      give_back(hi[v]);
    }
  }
  // The step's last bundle steps I2 (nest.inc).
  const std::vector<std::string> bundles = schedule::list_schedule(lines, "iadd_dim I2, LANES dim=0");
  std::string text;
  for (size_t i = 0; i < bundles.size(); ++i) text += (i + 1 == bundles.size() ? "end_d0: " : "        ") + bundles[i] + "\n";
  if (code.out_of_registers) {
    code.error = "the cluster needs more than the " + std::to_string(KernelLibrary::kClusterRegisters) +
                 " vector registers the kernel has for values";
    return code;
  }
  code.setup = setup.str();
  code.body = text;
  return code;
}

bool is_one_element(const TensorParams& t) { return elements(t) == 1; }

// Checks the tensors; on success fills `one_element` (per input) and returns "".
std::string check_tensors(const KernelParams& p, std::vector<bool>* one_element) {
  if (p.inputs.size() + p.outputs.size() > tpc::kMaxTensors)
    return "a cluster of " + std::to_string(p.inputs.size()) + " inputs and " + std::to_string(p.outputs.size()) +
           " outputs: a kernel takes at most " + std::to_string(tpc::kMaxTensors) + " tensors";
  if (p.outputs.empty()) return "a cluster without outputs";
  const auto po = padded(p.outputs[0].shape);
  for (size_t j = 0; j < p.outputs.size(); ++j) {
    if (p.outputs[j].dtype != DType::F32) return "output " + std::to_string(j) + " is not f32";
    if (padded(p.outputs[j].shape) != po)
      return "output " + std::to_string(j) + " " + shape_text(p.outputs[j].shape) + " differs from output 0 " +
             shape_text(p.outputs[0].shape);
  }
  one_element->assign(p.inputs.size(), false);
  const bool scalar_output = po == std::array<uint32_t, kMaxDims>{1, 1, 1, 1, 1};
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const TensorParams& in = p.inputs[k];
    if (in.dtype != DType::F32) return "input " + std::to_string(k) + " is not f32";
    (*one_element)[k] = is_one_element(in) && !scalar_output;
    if ((*one_element)[k]) continue;
    const auto pi = padded(in.shape);
    for (unsigned d = 0; d < kMaxDims; ++d)
      if (pi[d] != po[d] && (pi[d] != 1 || d == 0))
        return "input " + std::to_string(k) + " " + shape_text(in.shape) + " does not broadcast to the outputs' " +
               shape_text(p.outputs[0].shape) + " along dims >= 1";
  }
  return "";
}

// Dense tensors of the outputs' shape streamed as one long row (one-element inputs stay).
KernelParams as_one_run(const KernelParams& p, const std::vector<bool>& one_element) {
  const auto po = padded(p.outputs[0].shape);
  for (size_t k = 0; k < p.inputs.size(); ++k)
    if (!one_element[k] && (padded(p.inputs[k].shape) != po || flattened(p.inputs[k]).shape.size() != 1)) return p;
  for (const TensorParams& t : p.outputs)
    if (flattened(t).shape.size() != 1) return p;
  KernelParams run = p;
  for (size_t k = 0; k < run.inputs.size(); ++k)
    if (!one_element[k]) run.inputs[k] = flattened(run.inputs[k]);
  for (TensorParams& t : run.outputs) t = flattened(t);
  return run;
}

}  // namespace

bool KernelLibrary::can_cluster(const std::string& guid) const {
  const auto it = defs_.find(guid);
  return it != defs_.end() && clusterable(*it->second);
}

std::optional<unsigned> KernelLibrary::cluster_registers(const ElementwiseCluster& cluster,
                                                         const KernelParams& params) const {
  std::vector<bool> one_element;
  if (!check_tensors(params, &one_element).empty()) return std::nullopt;
  const ClusterCode code = cluster_code(defs_, cluster, params.inputs.size(), one_element);
  if (!code.error.empty() && !code.out_of_registers) return std::nullopt;
  return code.registers;
}

InstantiateResult KernelLibrary::instantiate_cluster(const ElementwiseCluster& cluster, const KernelParams& given) {
  InstantiateResult result;
  std::vector<bool> one_element;
  std::string error = check_tensors(given, &one_element);
  if (error.empty() && cluster.outputs.size() != given.outputs.size())
    error = "the cluster names " + std::to_string(cluster.outputs.size()) + " outputs, the params " +
            std::to_string(given.outputs.size());
  ClusterCode code;
  if (error.empty()) {
    code = cluster_code(defs_, cluster, given.inputs.size(), one_element);
    error = code.error;
  }
  if (!error.empty()) {
    result.status = GlueStatus::IncompatibleInputSize;
    result.message = "elementwise cluster: " + error;
    return result;
  }
  const KernelParams params = as_one_run(given, one_element);
  const unsigned f32_lanes = lanes_of(DType::F32);
  const unsigned lanes = 2 * f32_lanes;
  const TensorParams& out = params.outputs[0];
  const auto po = padded(out.shape);
  const uint8_t rank = static_cast<uint8_t>(std::max<size_t>(out.shape.size(), 1));

  Instantiation inst;
  inst.guid = "elementwise_cluster";
  inst.ispace_geometry = {static_cast<int32_t>((po[0] + lanes - 1) / lanes), static_cast<int32_t>(po[1]),
                          static_cast<int32_t>(po[2]), static_cast<int32_t>(po[3]), static_cast<int32_t>(po[4])};
  TensorAccessPattern dense;
  for (unsigned d = 0; d < kMaxDims; ++d)
    dense[d] = d == 0 ? AccessPatternDim{0, static_cast<int32_t>(lanes), 0, static_cast<int32_t>(lanes) - 1}
                      : AccessPatternDim{static_cast<uint8_t>(d), 1, 0, 0};
  std::vector<unsigned> streamed;
  for (size_t k = 0; k < params.inputs.size(); ++k) {
    const TensorParams& in = params.inputs[k];
    const auto pi = padded(in.shape);
    DescriptorTemplate desc;
    desc.dtype = DType::F32;
    desc.dims = static_cast<uint8_t>(std::max<size_t>(rank, std::max<size_t>(in.shape.size(), 1)));
    desc.stride = strides_of(in);
    TensorAccessPattern pattern = dense;
    for (unsigned d = 0; d < kMaxDims; ++d) {
      desc.size[d] = pi[d];
      if (pi[d] == 1 && po[d] != 1) {   // broadcast along d
        pattern[d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, 0};
        if (d > 0) {
          desc.size[d] = po[d];
          desc.stride[d] = 0;
        }
      }
    }
    inst.inputs.push_back(desc);
    inst.input_patterns.push_back(pattern);
    if (!one_element[k]) streamed.push_back(static_cast<unsigned>(k));
  }
  for (const TensorParams& o : params.outputs) {
    DescriptorTemplate desc;
    desc.dtype = DType::F32;
    desc.dims = rank;
    desc.size = po;
    desc.stride = strides_of(o);
    inst.outputs.push_back(desc);
    inst.output_patterns.push_back(dense);
  }
  if (code.s0) inst.srf[0] = *code.s0;

  std::ostringstream variant, src;
  variant << "cluster";
  for (const ClusterOp& op : cluster.ops) {
    variant << " " << op.guid << "(";
    for (size_t i = 0; i < op.operands.size(); ++i) variant << (i ? "," : "") << op.operands[i];
    for (float s : op.scalars) variant << (op.operands.empty() ? "" : ";") << s;
    variant << ")";
  }
  variant << " ->";
  for (uint32_t v : cluster.outputs) variant << " " << v;
  const uint32_t row_vectors = (po[0] + f32_lanes - 1) / f32_lanes;
  src << "// elementwise cluster: " << variant.str() << "\n"
      << width_prelude(streamed, row_vectors, 2) << ".equ LANES " << lanes << "\n"
      << ".macro ROW_SETUP\n.endm\n.include \"nest.inc\"\n.include \"ops.inc\"\n"
      << code.setup << "        NEST_BEGIN\n" << code.body << "        NEST_END\n";
  inst.variant = variant.str();
  return assembled(std::move(inst), src.str(), "elementwise_cluster");
}

// A standalone kernel's body runs one op's chain two vectors a step in the order written, so a
// long chain (gelu's erf polynomial, the backward kernels) waits on its own latencies; the list
// schedule interleaves the two vectors' chains. One-instruction ops stream at the same speed
// either way and keep their kernels.
std::optional<InstantiateResult> KernelLibrary::instantiate_scheduled_single(const std::string& guid,
                                                                              const KernelParams& params) {
  const auto it = defs_.find(guid);
  if (it == defs_.end() || !clusterable(*it->second) || it->second->kind == Kind::Fill) return std::nullopt;
  if (params.outputs.size() != 1 || !params.outputs[0].strides.empty()) return std::nullopt;
  if (params.inputs.size() != it->second->input_names.size()) return std::nullopt;
  for (const TensorParams& in : params.inputs)
    if (in.shape != params.outputs[0].shape || !in.strides.empty() || in.dtype != DType::F32) return std::nullopt;
  std::vector<std::string> args{"f32", "V0"};
  for (size_t k = 0; k < params.inputs.size(); ++k) args.push_back("V" + std::to_string(1 + k));
  if (schedule::expand_op(it->second->op_macro, args, false).size() < 2) return std::nullopt;
  ElementwiseCluster cluster;
  ClusterOp op{guid, {}, params.scalars};
  for (uint32_t k = 0; k < params.inputs.size(); ++k) op.operands.push_back(k);
  cluster.ops.push_back(std::move(op));
  cluster.outputs.push_back(static_cast<uint32_t>(params.inputs.size()));
  InstantiateResult result = instantiate_cluster(cluster, params);
  if (!result.ok()) return std::nullopt;   // the kernel's own glue reports what is wrong
  result.inst->guid = guid;
  return result;
}

}  // namespace hpusim::synapse::tpc_kernels
