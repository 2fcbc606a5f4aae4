// Elementwise clusters (kernel_library.h): one kernel for a DAG of f32 elementwise ops. The glue
// writes the body for nest.inc's loop: a step is four vectors (at I2, I4, I5, I6) when the values
// fit the registers four copies leave and a row wastes little on the wider step, else two (at I2,
// I4); the streamed inputs are loaded first, then each op's ops.inc macro runs on every copy into
// registers of its own, and each output is stored as soon as its value is known. Inputs of one
// element and fill constants sit in a register set once per core, before the loop; inputs that are
// one row broadcast over every outer dim (a bias) are read once per core into VLM and taken from
// there (streamed, the same row at every step shared a prefetch-buffer entry with the reads ahead,
// and the row came from HBM again at every outer step).
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

// Ops whose macro reads S0: the ternary ops (S0 their scalar) and dropout's backward (S0 the
// scale of the kept elements, from its scalar p).
bool takes_s0(const KernelLibrary::KernelDef& def) { return def.kind == Kind::Ternary || def.kind == Kind::DropoutBwd; }

// A GUID a cluster of `io` tensors can hold. f32: every elementwise kind (each op's instructions
// in f32, as its kernel runs them). bf16: only the kinds whose kernel computes in f32 and rounds
// once on store (eltwise_f32.s), and only alone (instantiate_scheduled_single): a chain of bf16
// ops rounds after each op, which a cluster's registers would not.
bool clusterable(const KernelLibrary::KernelDef& def, DType io = DType::F32) {
  if (io == DType::BF16)
    return def.in == DType::BF16 && def.out == DType::BF16 &&
           (def.kind == Kind::Backward || def.kind == Kind::UnaryF32 || takes_s0(def));
  switch (def.kind) {
    case Kind::Binary:
    case Kind::Unary:
    case Kind::Backward:
    case Kind::UnaryF32:
    case Kind::Ternary:
    case Kind::DropoutBwd:
      return def.in == DType::F32 && def.out == DType::F32;
    case Kind::Fill:
      return def.out == DType::F32;
    default:
      return false;
  }
}

// The value registers: ops.inc's macros use V4..V8 as scratch, their second copies V24..V28
// (body_schedule.h), and the _PAIR macros V24..V29. Four copies a step take V30..V39 as scratch of
// the third and fourth copy (V29 is free for values then).
constexpr const char* kValueRegisters[] = {"V9",  "V10", "V11", "V12", "V13", "V14", "V15", "V16", "V17",
                                           "V18", "V19", "V20", "V21", "V22", "V23", "V30", "V31", "V32",
                                           "V33", "V34", "V35", "V36", "V37", "V38", "V39"};
static_assert(std::size(kValueRegisters) == KernelLibrary::kClusterRegisters);
constexpr const char* kValueRegistersOfFourCopies[] = {"V9",  "V10", "V11", "V12", "V13", "V14", "V15", "V16",
                                                       "V17", "V18", "V19", "V20", "V21", "V22", "V23", "V29"};
// Where a cluster's inputs come from: for each input, the VLM byte address of its row (inputs
// broadcast over every outer dim), or nullopt (streamed, or one element).
struct RowsInVlm {
  std::vector<std::optional<uint32_t>> base;
  uint32_t vector_bytes = 0;
  uint32_t row_vectors = 0;   // the row's vectors (every row input has the outputs' dim 0)
};

// Before the nest: each VLM row read once, all of it prefetched first so its reads overlap.
std::string rows_to_vlm(const RowsInVlm& rows) {
  std::string src;
  for (size_t k = 0; k < rows.base.size(); ++k) {
    if (!rows.base[k]) continue;
    const std::string t = std::to_string(k), n = std::to_string(rows.row_vectors);
    src += "        imov I3, 0\n        mov S17, 0\n        mov S18, " + n + "\n        loop S17, S18, vlm_prefetch_" + t +
           "\nvlm_prefetch_" + t + ": prefetch I3, " + t + "; iadd_dim I3, F32_LANES dim=0\n";
    src += "        imov I3, 0\n        mov S17, 0\n        mov S19, " + std::to_string(*rows.base[k]) +
           "\n        loop S17, S18, vlm_row_" + t + "\n        ld_tnsr V4, I3, " + t +
           "; iadd_dim I3, F32_LANES dim=0\nvlm_row_" + t + ": st_vlm S19, V4; add.i32 S19, S19, " +
           std::to_string(rows.vector_bytes) + "\n";
  }
  return src;
}

// The index registers of a step's vectors: nest.inc's I2 and vectors one, two, three on.
constexpr const char* kCopyIndex[] = {"I2", "I4", "I5", "I6"};
static_assert(std::size(kCopyIndex) == schedule::kOpCopies);

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
  std::string row_setup;      // at each row's start: the copies' index registers
  std::string body;           // one step; its last bundle steps I2 (end_d0)
  std::optional<uint32_t> s0; // the S0 every op reading it takes, when they all take one value
};

// Plans the registers and writes the code for a step of `copies` f32 vectors (2 or 4). `inputs`: the
// kernel's input count; `one_element[k]`: input k is one element (held in a register, not streamed).
// `io` bf16: the tensors are bf16, a bf16 vector widening into copies 2j and 2j + 1 (io_bf16.inc's
// halves) and each output rounded once into one bf16 vector (every tensor streamed).
ClusterCode cluster_code(const std::map<std::string, const KernelLibrary::KernelDef*>& defs,
                         const ElementwiseCluster& cluster, size_t inputs, const std::vector<bool>& one_element,
                         unsigned copies, const RowsInVlm& rows = {},
                         const std::vector<std::string>& step_prefetches = {}, DType io = DType::F32) {
  const bool bf16 = io == DType::BF16;
  ClusterCode code;
  const size_t values = inputs + cluster.ops.size();
  std::vector<const KernelLibrary::KernelDef*> op_defs;
  for (size_t k = 0; k < cluster.ops.size(); ++k) {
    const ClusterOp& op = cluster.ops[k];
    const std::string label = "op " + std::to_string(k) + " (" + op.guid + ")";
    const auto it = defs.find(op.guid);
    if (it == defs.end() || !clusterable(*it->second, io)) {
      code.error = label + (bf16 ? ": not a bf16 GUID computed in f32" : ": not an f32 elementwise GUID a cluster can hold");
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
    const size_t scalars = def.kind == Kind::Fill || takes_s0(def) ? 1 : 0;
    if (op.scalars.size() != scalars) {
      code.error = label + ": takes " + std::to_string(scalars) + " scalar parameters, got " +
                   std::to_string(op.scalars.size());
      return code;
    }
    if (def.kind == Kind::DropoutBwd && !(op.scalars[0] >= 0.0f && op.scalars[0] <= 1.0f)) {
      code.error = label + ": p must be in [0, 1]";
      return code;
    }
    op_defs.push_back(&def);
  }
  if (cluster.outputs.empty()) {
    code.error = "a cluster without outputs";
    return code;
  }
  if (bf16 && cluster.ops.size() != 1) {
    code.error = "a bf16 cluster holds one op (a chain of bf16 ops rounds after each op)";
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

  std::vector<std::string> free_registers = copies == 4 ? std::vector<std::string>(std::begin(kValueRegistersOfFourCopies),
                                                                                  std::end(kValueRegistersOfFourCopies))
                                                        : std::vector<std::string>(std::begin(kValueRegisters),
                                                                                  std::end(kValueRegisters));
  const size_t capacity = free_registers.size();
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
  // reg[c][v]: value v's register in copy c (one register for every copy of a pinned value).
  std::vector<std::vector<std::string>> reg(copies, std::vector<std::string>(values));
  auto take_all = [&](size_t v) {
    for (auto& copy : reg) copy[v] = take();
  };
  auto give_back_all = [&](size_t v) {
    for (auto& copy : reg) give_back(copy[v]);
    for (auto& copy : reg) copy[v].clear();
  };
  auto pin = [&](size_t v, const std::string& r) {
    for (auto& copy : reg) copy[v] = r;
  };
  std::vector<bool> pinned(values, false);
  std::ostringstream setup;

  // Once per core: inputs of one element, and the constants (one register per distinct value).
  std::map<uint32_t, std::string> constants;
  for (size_t k = 0; k < inputs; ++k)
    if (one_element[k] && last_use[k] >= 0) {
      pin(k, take());
      pinned[k] = true;
      setup << "        imov I3, 0\n        ld_tnsr_s S16, I3, " << k << "\n        mov.f32 " << reg[0][k] << ", S16\n";
    }
  // The scalar an op holds in a register (a fill) or in S0.
  const auto scalar_bits = [&](size_t k) -> uint32_t {
    if (op_defs[k]->kind == Kind::DropoutBwd) return f32_bits(dropout_scale(cluster.ops[k].scalars[0]));
    return op_defs[k]->kind == Kind::Fill || takes_s0(*op_defs[k]) ? f32_bits(cluster.ops[k].scalars[0]) : 0;
  };
  std::vector<uint32_t> s0_values;
  for (size_t k = 0; k < cluster.ops.size(); ++k) {
    const uint32_t bits = scalar_bits(k);
    if (takes_s0(*op_defs[k]) && std::find(s0_values.begin(), s0_values.end(), bits) == s0_values.end())
      s0_values.push_back(bits);
    if (op_defs[k]->kind != Kind::Fill) continue;
    const size_t v = inputs + k;
    auto [it, added] = constants.emplace(bits, std::string());
    if (added) {
      it->second = take();
      setup << "        mov.f32 " << it->second << ", " << hex(bits) << "\n";
    }
    pin(v, it->second);
    pinned[v] = true;
  }
  if (s0_values.size() == 1) code.s0 = s0_values[0];

  // A step: the streamed inputs, then the ops (ops.inc's macros expanded, each copy on scratch of
  // its own), each output stored when known; then list-scheduled (body_schedule.h). The copies'
  // index registers are set at a row's start and step with I2, so the loads need not wait for them.
  std::vector<std::string> lines;
  for (unsigned c = 1; c < copies; ++c) {
    if (bf16 && c % 2 == 1) continue;   // a bf16 vector's hi half is read with its lo
    code.row_setup += std::string("        imov ") + kCopyIndex[c] + ", I2\n        iadd_dim " + kCopyIndex[c] + ", " +
                      (c == 1 ? "F32_LANES" : "(" + std::to_string(c) + " * F32_LANES)") + " dim=0\n";
  }
  // A VLM row's vector at the step's dim-0 coordinate: S16 its byte offset, S17..S19 the copies'
  // addresses in turn.
  unsigned vlm_address = 0;
  // bf16: each loaded vector's register, free again once every input is widened (not at once, so
  // that the loads need not wait for each other's converts).
  std::vector<std::string> loaded_bf16;
  for (size_t k = 0; k < inputs; ++k) {
    if (one_element[k] || last_use[k] < 0) continue;
    take_all(k);
    if (bf16) {
      for (unsigned j = 0; j < copies / 2; ++j) {
        const std::string wide = loaded_bf16.emplace_back(take());
        lines.push_back("ld_tnsr " + wide + ", " + kCopyIndex[2 * j] + ", " + std::to_string(k));
        lines.push_back("convert.bf16.f32 " + reg[2 * j][k] + ", " + wide + " part=0");
        lines.push_back("convert.bf16.f32 " + reg[2 * j + 1][k] + ", " + wide + " part=1");
      }
      continue;
    }
    const bool in_vlm = k < rows.base.size() && rows.base[k];
    if (in_vlm && vlm_address == 0) lines.insert(lines.end(), {"iget_dim S16, I2 dim=0", "shl.i32 S16, S16, 2"});
    for (unsigned c = 0; c < copies; ++c) {
      if (!in_vlm) {
        lines.push_back("ld_tnsr " + reg[c][k] + ", " + kCopyIndex[c] + ", " + std::to_string(k));
        continue;
      }
      const std::string address = "S" + std::to_string(17 + vlm_address++ % 3);
      lines.push_back("add.i32 " + address + ", S16, " + std::to_string(*rows.base[k] + c * rows.vector_bytes));
      lines.push_back("ld_vlm.f32 " + reg[c][k] + ", " + address);
    }
  }
  for (const std::string& r : loaded_bf16) give_back(r);
  for (size_t k = 0; k < cluster.ops.size(); ++k) {
    const KernelLibrary::KernelDef& def = *op_defs[k];
    if (def.kind == Kind::Fill) continue;
    const ClusterOp& op = cluster.ops[k];
    const size_t v = inputs + k;
    take_all(v);
    if (takes_s0(def) && s0_values.size() > 1) lines.push_back("mov S0, " + hex(scalar_bits(k)));
    for (unsigned c = 0; c < copies; ++c) {
      std::vector<std::string> args{"f32", reg[c][v]};
      for (uint32_t operand : op.operands) args.push_back(reg[c][operand]);
      const std::vector<std::string> expanded = schedule::expand_op(def.op_macro, args, c);
      if (expanded.empty()) {
        code.error = "op " + std::to_string(k) + " (" + op.guid + "): ops.inc has no macro " + def.op_macro;
        return code;
      }
      lines.insert(lines.end(), expanded.begin(), expanded.end());
    }
    for (uint32_t operand : op.operands)
      if (last_use[operand] == static_cast<int64_t>(k) && !pinned[operand] && !reg[0][operand].empty())
        give_back_all(operand);   // an operand given twice is given back once
    for (size_t j : stored_as[v]) {
      for (unsigned c = 0; c < copies && !bf16; ++c)
        lines.push_back(std::string("st_tnsr ") + kCopyIndex[c] + ", " + std::to_string(inputs + j) + ", " + reg[c][v]);
      for (unsigned c = 0; c < copies && bf16; c += 2) {
        const std::string narrow = take();
        lines.push_back("convert.f32.bf16 " + narrow + ", " + reg[c][v] + " part=0");
        lines.push_back("convert.f32.bf16 " + narrow + ", " + reg[c + 1][v] + " part=1");
        lines.push_back(std::string("st_tnsr ") + kCopyIndex[c] + ", " + std::to_string(inputs + j) + ", " + narrow);
        give_back(narrow);
      }
    }
    if (last_use[v] <= static_cast<int64_t>(k)) give_back_all(v);
  }
  lines.insert(lines.end(), step_prefetches.begin(), step_prefetches.end());
  for (unsigned c = 1; c < copies; ++c)
    if (!bf16 || c % 2 == 0) lines.push_back(std::string("iadd_dim ") + kCopyIndex[c] + ", LANES dim=0");
  // The step's last bundle steps I2 (nest.inc).
  // Every streamed load finds its prefetch (nest.inc's PREFETCH_ROW and the step's own).
  const std::vector<std::string> bundles = schedule::list_schedule(lines, "iadd_dim I2, LANES dim=0", schedule::kPrefetchHitLatency);
  const std::string text = schedule::loop_body(bundles);
  if (code.out_of_registers) {
    code.error = "the cluster needs more than the " + std::to_string(capacity) +
                 " vector registers the kernel has for values";
    return code;
  }
  code.setup = setup.str() + rows_to_vlm(rows);
  code.body = text;
  return code;
}

bool is_one_element(const TensorParams& t) { return elements(t) == 1; }

// Checks the tensors; on success fills `one_element` (per input) and returns "". Every tensor is
// f32, or every one bf16 (`io`: the outputs' dtype) with no input of one element.
std::string check_tensors(const KernelParams& p, std::vector<bool>* one_element) {
  if (p.inputs.size() + p.outputs.size() > tpc::kMaxTensors)
    return "a cluster of " + std::to_string(p.inputs.size()) + " inputs and " + std::to_string(p.outputs.size()) +
           " outputs: a kernel takes at most " + std::to_string(tpc::kMaxTensors) + " tensors";
  if (p.outputs.empty()) return "a cluster without outputs";
  const DType io = p.outputs[0].dtype;
  const char* io_name = io == DType::BF16 ? "bf16" : "f32";
  if (io != DType::F32 && io != DType::BF16) return "output 0 is neither f32 nor bf16";
  const auto po = padded(p.outputs[0].shape);
  for (size_t j = 0; j < p.outputs.size(); ++j) {
    if (p.outputs[j].dtype != io) return "output " + std::to_string(j) + " is not " + io_name + " as output 0";
    if (padded(p.outputs[j].shape) != po)
      return "output " + std::to_string(j) + " " + shape_text(p.outputs[j].shape) + " differs from output 0 " +
             shape_text(p.outputs[0].shape);
  }
  one_element->assign(p.inputs.size(), false);
  const bool scalar_output = po == std::array<uint32_t, kMaxDims>{1, 1, 1, 1, 1};
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const TensorParams& in = p.inputs[k];
    if (in.dtype != io) return "input " + std::to_string(k) + " is not " + io_name + " as the outputs";
    (*one_element)[k] = is_one_element(in) && !scalar_output;
    if ((*one_element)[k] && io == DType::BF16) return "input " + std::to_string(k) + " is one bf16 element";
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
  const ClusterCode code =
      cluster_code(defs_, cluster, params.inputs.size(), one_element, 2, {}, {}, params.outputs[0].dtype);
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
  const auto refuse = [&](const std::string& why) {
    result.status = GlueStatus::IncompatibleInputSize;
    result.message = "elementwise cluster: " + why;
    return result;
  };
  if (!error.empty()) return refuse(error);
  const KernelParams params = as_one_run(given, one_element);
  const unsigned f32_lanes = lanes_of(DType::F32);
  const TensorParams& out = params.outputs[0];
  const DType io = out.dtype;
  // A step's vectors of the tensors: bf16 ones each hold two of the f32 copies.
  const unsigned copies_per_vector = io == DType::BF16 ? 2 : 1;
  const auto po = padded(out.shape);
  const uint32_t row_vectors = (po[0] + f32_lanes - 1) / f32_lanes;
  const uint32_t row_io_vectors = (po[0] + lanes_of(io) - 1) / lanes_of(io);
  // Rows broadcast over every outer dim go to VLM, padded to a step of four vectors, when they fit
  // kVlmRowBytes together.
  RowsInVlm rows{std::vector<std::optional<uint32_t>>(params.inputs.size()), vector_bits_ / 8, row_vectors};
  {
    const bool outer = po[1] * po[2] * po[3] * po[4] > 1;
    const uint32_t row_bytes = (row_vectors + 3) / 4 * 4 * rows.vector_bytes;
    uint32_t used = 0;
    for (size_t k = 0; k < params.inputs.size() && outer && io == DType::F32; ++k) {
      const auto pi = padded(params.inputs[k].shape);
      if (one_element[k] || pi[0] != po[0] || pi[1] * pi[2] * pi[3] * pi[4] != 1) continue;
      if (used + row_bytes > kVlmRowBytes) break;
      rows.base[k] = used;
      used += row_bytes;
    }
  }
  std::vector<unsigned> streamed;
  for (size_t k = 0; k < params.inputs.size(); ++k)
    if (!one_element[k] && !rows.base[k]) streamed.push_back(static_cast<unsigned>(k));
  // The code of a step of `copies` vectors, with the stream's prefetches scheduled in its body.
  std::string prelude;
  const auto plan = [&](unsigned copies, std::string* prelude_out) {
    std::vector<std::string> prefetches;
    *prelude_out = width_prelude(streamed, row_io_vectors, copies / copies_per_vector, &prefetches);
    return cluster_code(defs_, cluster, given.inputs.size(), one_element, copies, rows, prefetches, io);
  };
  ClusterCode code = plan(2, &prelude);
  if (!code.error.empty()) return refuse(code.error);
  // Four vectors a step hide twice the latency of a long chain; taken when the values fit and a
  // row's vectors padded to a step of four exceed those padded to two by at most an eighth (bf16:
  // two bf16 vectors a step against one).
  unsigned copies = 2;
  const uint32_t wide = 4 / copies_per_vector, narrow = 2 / copies_per_vector;
  if (8 * ((row_io_vectors + wide - 1) / wide * wide - (row_io_vectors + narrow - 1) / narrow * narrow) <=
      row_io_vectors) {
    std::string prelude_four;
    ClusterCode four = plan(4, &prelude_four);
    if (four.error.empty()) {
      code = std::move(four);
      prelude = std::move(prelude_four);
      copies = 4;
    }
  }
  const unsigned lanes = copies * f32_lanes;
  const uint8_t rank = static_cast<uint8_t>(std::max<size_t>(out.shape.size(), 1));

  Instantiation inst;
  inst.guid = "elementwise_cluster";
  inst.ispace_geometry = {static_cast<int32_t>((po[0] + lanes - 1) / lanes), static_cast<int32_t>(po[1]),
                          static_cast<int32_t>(po[2]), static_cast<int32_t>(po[3]), static_cast<int32_t>(po[4])};
  TensorAccessPattern dense;
  for (unsigned d = 0; d < kMaxDims; ++d)
    dense[d] = d == 0 ? AccessPatternDim{0, static_cast<int32_t>(lanes), 0, static_cast<int32_t>(lanes) - 1}
                      : AccessPatternDim{static_cast<uint8_t>(d), 1, 0, 0};
  for (size_t k = 0; k < params.inputs.size(); ++k) {
    const TensorParams& in = params.inputs[k];
    const auto pi = padded(in.shape);
    DescriptorTemplate desc;
    desc.dtype = io;
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
    if (rows.base[k]) pattern[0] = AccessPatternDim{0, 0, 0, static_cast<int32_t>(po[0]) - 1};   // all of it, once
    inst.inputs.push_back(desc);
    inst.input_patterns.push_back(pattern);
  }
  for (const TensorParams& o : params.outputs) {
    DescriptorTemplate desc;
    desc.dtype = io;
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
  src << "// elementwise cluster: " << variant.str() << "\n"
      << prelude << ".equ LANES " << lanes << "\n"
      << ".macro ROW_SETUP\n" << code.row_setup << ".endm\n.include \"nest.inc\"\n.include \"ops.inc\"\n"
      << code.setup << "        NEST_BEGIN\n" << code.body << "        NEST_END\n";
  inst.variant = variant.str();
  return assembled(std::move(inst), src.str(), "elementwise_cluster");
}

// A standalone kernel's body runs one op's chain two vectors a step in the order written, so a
// long chain (gelu's erf polynomial, the backward kernels) waits on its own latencies; the list
// schedule of a cluster interleaves the chains of its step's vectors. One-instruction f32 ops
// stream at the same speed either way and keep their kernels. A bf16 op computed in f32 always
// takes the cluster: its kernel file widens, computes and narrows one vector a step through one
// scratch register, each step's chain waiting on the last.
std::optional<InstantiateResult> KernelLibrary::instantiate_scheduled_single(const std::string& guid,
                                                                              const KernelParams& params) {
  const auto it = defs_.find(guid);
  if (it == defs_.end() || it->second->kind == Kind::Fill) return std::nullopt;
  const DType io = it->second->out;
  if (!clusterable(*it->second, io)) return std::nullopt;
  if (params.outputs.size() != 1 || !params.outputs[0].strides.empty() || params.outputs[0].dtype != io)
    return std::nullopt;
  if (params.inputs.size() != it->second->input_names.size()) return std::nullopt;
  for (const TensorParams& in : params.inputs)
    if (in.shape != params.outputs[0].shape || !in.strides.empty() || in.dtype != io) return std::nullopt;
  std::vector<std::string> args{"f32", "V0"};
  for (size_t k = 0; k < params.inputs.size(); ++k) args.push_back("V" + std::to_string(1 + k));
  if (io == DType::F32 && schedule::expand_op(it->second->op_macro, args, 0).size() < 2) return std::nullopt;
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
