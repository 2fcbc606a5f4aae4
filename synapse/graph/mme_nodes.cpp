#include "synapse/graph/mme_nodes.h"

#include <algorithm>
#include <limits>

namespace hpusim::synapse::graph {
namespace {

struct OpDef {
  std::string guid;
  mme::MmeOp op;
  bool batched;
  std::vector<std::string> inputs;   // slot names
  std::string output;
  std::vector<std::string> attributes;
};

const std::vector<OpDef>& op_defs() {
  static const std::vector<std::string> gemm_attrs = {"transpose_a", "transpose_b"};
  static const std::vector<std::string> conv_attrs = {"stride_h", "stride_w", "pad_h", "pad_w", "dil_h", "dil_w"};
  static const std::vector<OpDef> defs = {
      {"gemm", mme::MmeOp::Gemm, false, {"A", "B"}, "O", gemm_attrs},
      {"batch_gemm", mme::MmeOp::Gemm, true, {"A", "B"}, "O", gemm_attrs},
      {"spatial_convolution", mme::MmeOp::ConvForward, false, {"x", "w"}, "y", conv_attrs},
      {"dedx", mme::MmeOp::ConvBackwardData, false, {"dy", "w"}, "dx", conv_attrs},
      {"dedw", mme::MmeOp::ConvBackwardWeight, false, {"dy", "x"}, "dw", conv_attrs},
  };
  return defs;
}

const OpDef* find_def(const std::string& guid) {
  for (const OpDef& d : op_defs())
    if (d.guid == guid) return &d;
  return nullptr;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// A tensor of the node by its slot: inputs 0 .. n-1, then output 0.
struct Slot {
  bool input = true;
  size_t index = 0;
};

class Checker {
 public:
  Checker(const Graph& g, const NodeDesc& n, const OpDef& def) : g_(g), n_(n), def_(def) {}

  const TensorDesc& tensor(Slot s) const { return g_.tensor(s.input ? n_.inputs[s.index] : n_.outputs[s.index]); }
  const std::vector<uint32_t>& shape(Slot s) const { return tensor(s).shape; }
  std::string label(Slot s) const {
    return std::string(s.input ? "input " : "output ") + std::to_string(s.index) + " (" +
           (s.input ? def_.inputs[s.index] : def_.output) + ")";
  }
  Result node_error(const std::string& what) const {
    return Result::error(Status::InvalidArgument, "node '" + n_.name + "': " + def_.guid + ": " + what);
  }
  // "node 'fc1': gemm takes ...", the kernel library's form for counts and parameters.
  Result node_takes(const std::string& what) const {
    return Result::error(Status::InvalidArgument, "node '" + n_.name + "': " + def_.guid + " takes " + what);
  }
  Result tensor_error(Slot s, const std::string& what) const {
    return Result::error(Status::InvalidArgument,
                         "node '" + n_.name + "': tensor '" + tensor(s).name + "': " + def_.guid + ": " + label(s) + ": " + what);
  }
  int64_t attribute(const std::string& name, int64_t fallback) const {
    auto it = n_.params.attributes.find(name);
    return it == n_.params.attributes.end() ? fallback : it->second;
  }

  std::optional<Result> check_counts_and_params() const {
    const size_t n_in = def_.inputs.size();
    if (n_.inputs.size() != n_in) {
      return node_takes(std::to_string(n_in) + " inputs (" + join(def_.inputs) + "), got " +
                        std::to_string(n_.inputs.size()));
    }
    if (n_.outputs.size() != 1) {
      return node_takes("1 output (" + def_.output + "), got " + std::to_string(n_.outputs.size()));
    }
    if (!n_.params.scalars.empty()) {
      return node_takes("no scalar parameters, got " + std::to_string(n_.params.scalars.size()));
    }
    for (const auto& [name, value] : n_.params.attributes) {
      if (std::find(def_.attributes.begin(), def_.attributes.end(), name) == def_.attributes.end()) {
        return node_error("unknown attribute '" + name + "' (" + def_.guid + " takes " + join(def_.attributes) + ")");
      }
      int64_t lo = 0, hi = 0xFFFF;
      if (name == "transpose_a" || name == "transpose_b") hi = 1;
      if (name.rfind("stride", 0) == 0 || name.rfind("dil", 0) == 0) lo = 1;
      if (value < lo || value > hi) {
        return node_error("attribute " + name + " is " + std::to_string(value) + ", must be " + std::to_string(lo) +
                          (hi == 1 ? " or " : " .. ") + std::to_string(hi));
      }
    }
    return std::nullopt;
  }

  // Ranks (every slot in order), then dtypes: inputs bf16 / f32 and equal, the output bf16 / f32.
  std::optional<Result> check_ranks_and_dtypes(const std::vector<std::string>& layouts) const {
    std::vector<Slot> slots;
    for (size_t i = 0; i < n_.inputs.size(); ++i) slots.push_back({true, i});
    slots.push_back({false, 0});
    for (size_t k = 0; k < slots.size(); ++k) {
      const size_t rank = shape(slots[k]).size();
      const bool ok = def_.batched ? rank >= 3 && rank <= kMaxDims : rank == (def_.op == mme::MmeOp::Gemm ? 2u : 4u);
      if (!ok) {
        const std::string want = def_.batched ? "3 to 5" : def_.op == mme::MmeOp::Gemm ? "2" : "4";
        return tensor_error(slots[k], std::to_string(rank) + " dims, " + def_.guid + " takes " + want + " (" + layouts[k] + ")");
      }
    }
    for (const Slot& s : slots) {
      const DType t = tensor(s).dtype;
      if (t != DType::BF16 && t != DType::F32) {
        return tensor_error(s, std::string("dtype ") + tpc::dtype_name(t) + ", but " + def_.guid +
                                   (s.input ? " takes" : " writes") + " bf16 or f32");
      }
    }
    if (tensor({true, 1}).dtype != tensor({true, 0}).dtype) {
      return tensor_error({true, 1}, std::string("dtype ") + tpc::dtype_name(tensor({true, 1}).dtype) + ", but " +
                                         label({true, 0}) + " is " + tpc::dtype_name(tensor({true, 0}).dtype) +
                                         " (the MME takes one input type)");
    }
    return std::nullopt;
  }

  std::optional<Result> check_job(const mme::MmeJob& job) const {
    const std::string error = mme::validate(job, 1);
    if (!error.empty()) return node_error("MME job: " + error);
    return std::nullopt;
  }

  std::optional<Result> expect_shape(Slot s, const std::string& layout, const std::vector<uint32_t>& want) const {
    if (shape(s) == want) return std::nullopt;
    return tensor_error(s, "shape " + shape_text(shape(s)) + ", expected " + layout + " = " + shape_text(want));
  }

  Result gemm(mme::MmeJob* out) const {
    const bool ta = attribute("transpose_a", 0) != 0, tb = attribute("transpose_b", 0) != 0;
    const std::string batch = def_.batched ? ", batch..." : "";
    const std::string la = (ta ? "[M, K" : "[K, M") + batch + "]";
    const std::string lb = (tb ? "[K, N" : "[N, K") + batch + "]";
    const std::string lo = "[N, M" + batch + "]";
    if (auto r = check_ranks_and_dtypes({la, lb, lo})) return *r;
    const Slot a{true, 0}, b{true, 1}, o{false, 0};
    const auto& sa = shape(a);
    const auto& sb = shape(b);
    const uint32_t m = ta ? sa[0] : sa[1], k = ta ? sa[1] : sa[0];
    const uint32_t n = tb ? sb[1] : sb[0], kb = tb ? sb[0] : sb[1];
    if (kb != k) {
      return tensor_error(b, "K is " + std::to_string(kb) + " (shape " + shape_text(sb) + " as " + lb + "), but " +
                                 label(a) + " has K " + std::to_string(k));
    }
    const std::vector<uint32_t> batch_a(sa.begin() + 2, sa.end()), batch_b(sb.begin() + 2, sb.end());
    if (batch_b != batch_a) {
      return tensor_error(b, "batch dims " + shape_text(batch_b) + " differ from " + label(a) + "'s " + shape_text(batch_a));
    }
    std::vector<uint32_t> want_o = {n, m};
    want_o.insert(want_o.end(), batch_a.begin(), batch_a.end());
    if (auto r = expect_shape(o, lo, want_o)) return *r;
    uint64_t batches = 1;
    for (uint32_t d : batch_a) batches *= d;
    if (batches > std::numeric_limits<uint32_t>::max()) {
      return node_error("batch " + std::to_string(batches) + " (the product of the batch dims) exceeds 2^32-1");
    }
    mme::MmeJob job;
    job.op = mme::MmeOp::Gemm;
    job.in = tensor(a).dtype == DType::BF16 ? mme::MmeType::Bf16 : mme::MmeType::F32;
    job.out = tensor(o).dtype == DType::BF16 ? mme::MmeType::Bf16 : mme::MmeType::F32;
    job.transpose_a = ta;
    job.transpose_b = tb;
    job.m = m;
    job.n = n;
    job.k = k;
    job.batch = static_cast<uint32_t>(batches);
    job.lda = ta ? m : k;
    job.ldb = tb ? k : n;
    job.ldo = n;
    job.batch_stride_a = uint64_t{m} * k;
    job.batch_stride_b = uint64_t{k} * n;
    job.batch_stride_o = uint64_t{m} * n;
    if (auto r = check_job(job)) return *r;
    if (out) *out = job;
    return Result::success();
  }

  Result conv(mme::MmeJob* out) const {
    // The activation, weight and output-gradient (or output) roles of the node's slots.
    Slot x{true, 0}, w{true, 1}, y{false, 0};
    if (def_.op == mme::MmeOp::ConvBackwardData) x = {false, 0}, w = {true, 1}, y = {true, 0};
    if (def_.op == mme::MmeOp::ConvBackwardWeight) x = {true, 1}, w = {false, 0}, y = {true, 0};
    const std::string lx = "[C, W, H, N]", lw = "[K, C, S, R]", ly = "[K, Q, P, N]";
    const auto layout_of = [&](Slot s) {
      if (s.input == x.input && s.index == x.index) return lx;
      if (s.input == w.input && s.index == w.index) return lw;
      return ly;
    };
    if (auto r = check_ranks_and_dtypes({layout_of({true, 0}), layout_of({true, 1}), layout_of({false, 0})})) return *r;
    const auto& sx = shape(x);
    const auto& sw = shape(w);
    if (sw[1] != sx[0]) {
      return tensor_error(w, "C is " + std::to_string(sw[1]) + " (shape " + shape_text(sw) + " as " + lw + "), but " +
                                 label(x) + " has C " + std::to_string(sx[0]));
    }
    mme::MmeJob job;
    job.op = def_.op;
    job.in = tensor({true, 0}).dtype == DType::BF16 ? mme::MmeType::Bf16 : mme::MmeType::F32;
    job.out = tensor({false, 0}).dtype == DType::BF16 ? mme::MmeType::Bf16 : mme::MmeType::F32;
    mme::ConvShape& c = job.conv;
    c.c = sx[0], c.w = sx[1], c.h = sx[2], c.n = sx[3];
    c.k = sw[0], c.s = sw[2], c.r = sw[3];
    c.stride_h = static_cast<uint32_t>(attribute("stride_h", 1));
    c.stride_w = static_cast<uint32_t>(attribute("stride_w", 1));
    c.pad_h = static_cast<uint32_t>(attribute("pad_h", 0));
    c.pad_w = static_cast<uint32_t>(attribute("pad_w", 0));
    c.dil_h = static_cast<uint32_t>(attribute("dil_h", 1));
    c.dil_w = static_cast<uint32_t>(attribute("dil_w", 1));
    if (auto r = check_job(job)) return *r;
    const std::vector<uint32_t> want_y = {c.k, static_cast<uint32_t>(c.out_w()), static_cast<uint32_t>(c.out_h()), c.n};
    if (auto r = expect_shape(y, ly, want_y)) return *r;
    if (out) *out = job;
    return Result::success();
  }

 private:
  const Graph& g_;
  const NodeDesc& n_;
  const OpDef& def_;
};

}  // namespace

const std::vector<std::string>& mme_guids() {
  static const std::vector<std::string> guids = [] {
    std::vector<std::string> v;
    for (const OpDef& d : op_defs()) v.push_back(d.guid);
    return v;
  }();
  return guids;
}

bool is_mme_guid(const std::string& guid) { return find_def(guid) != nullptr; }

Result mme_job_for(const Graph& graph, NodeId id, mme::MmeJob* job) {
  const NodeDesc& node = graph.node(id);
  const OpDef* def = find_def(node.guid);
  if (!def) return Result::error(Status::Unsupported, "node '" + node.name + "': '" + node.guid + "' is not an MME GUID");
  const Checker check(graph, node, *def);
  if (auto r = check.check_counts_and_params()) return *r;
  return def->op == mme::MmeOp::Gemm ? check.gemm(job) : check.conv(job);
}

}  // namespace hpusim::synapse::graph
