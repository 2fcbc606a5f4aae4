// The kernel library's glue: the GUID table, validation, index-space geometry, access patterns,
// descriptor templates, and the assembly (on first use, cached) of the kernel variants.
#include "synapse/tpc_kernels/kernel_library.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "arch/tpc/asm/assembler.h"
#include "synapse/tpc_kernels/embedded_sources.h"
#include "synapse/tpc_kernels/body_schedule.h"
#include "synapse/tpc_kernels/glue_util.h"
#include "synapse/tpc_kernels/kernel_def.h"

namespace hpusim::synapse::tpc_kernels {

using namespace glue;

namespace {

// Binary / Unary / Fill / Cast: the first batch's elementwise kernels (ops in the dtype).
// Backward, UnaryF32, Ternary: eltwise_f32.s (computed in f32, bf16 rounded once). Backward and
// UnaryF32 take same-shape tensors; Ternary (addcmul / addcdiv) broadcasts like Binary.
// Reduce: reduce_dim0.s / reduce_outer.s. Softmax / SoftmaxBwd: softmax_fwd.s / softmax_bwd.s (rows of
// at most kShortRowVectors vectors: softmax_short.s / softmax_bwd_short.s).
// Batch 3 (instantiate_batch3): LayerNorm* (layernorm_*.s), Nll* (nll_loss_*.s), Dropout*
// (dropout_fwd.s; the backward is eltwise_f32.s), Optim (optim.s), Permute (permute / transpose:
// permute_view.s, permute_rows.s or permute_gather.s), Embedding* (embedding_fwd.s / embedding_bwd.s;
// a large backward goes by buckets, embedding_buckets.cpp).
// Batch 5: the comparisons are Binary (ops.inc's OP_EQ ...), silu / gelu (erf) UnaryF32 / Backward, the
// u8 casts Cast, reduce_min Reduce; through instantiate_batch3: Where (where_fwd.s), Gather
// (gather_fwd.s), Range (range_fwd.s), RandomUniform / RandomNormal (random_fwd.s).
// Batch 6, through instantiate_batch3: StridedView / StridedInsert (strided_copy.s, or per element
// strided_gather.s / strided_scatter.s).
bool is_strided(Kind k) { return k == Kind::StridedView || k == Kind::StridedInsert; }
bool is_batch3(Kind k) { return k >= Kind::LayerNormFwd; }

}  // namespace

namespace {

using KernelDef = KernelLibrary::KernelDef;

const std::vector<KernelDef>& kernel_table() {
  static const std::vector<KernelDef> table = [] {
    std::vector<KernelDef> t;
    const std::pair<const char*, const char*> binary[] = {
        {"add", "OP_ADD"}, {"sub", "OP_SUB"}, {"mul", "OP_MUL"},
        {"div", "OP_DIV"}, {"max", "OP_MAX"}, {"min", "OP_MIN"}};
    const std::pair<const char*, const char*> unary[] = {
        {"relu", "OP_RELU"}, {"tanh", "OP_TANH"}, {"sigmoid", "OP_SIGMOID"}, {"exp", "OP_EXP"},
        {"log", "OP_LOG"},   {"sqrt", "OP_SQRT"}, {"rsqrt", "OP_RSQRT"},     {"abs", "OP_ABS"},
        {"neg", "OP_NEG"}};
    struct Bwd {
      const char* name;
      const char* macro;
      const char* fwd_tensor;
    };
    const Bwd backward[] = {{"relu", "OP_RELU_BWD", "x"},
                            {"tanh", "OP_TANH_BWD", "y"},
                            {"sigmoid", "OP_SIGMOID_BWD", "y"},
                            {"gelu_tanh", "OP_GELU_TANH_BWD", "x"}};
    // Batch 5: comparisons (C = 1 where the comparison holds, else 0, in A's dtype).
    const std::pair<const char*, const char*> compare[] = {
        {"equal", "OP_EQ"}, {"not_equal", "OP_NE"},   {"less", "OP_LT"},
        {"less_equal", "OP_LE"}, {"greater", "OP_GT"}, {"greater_equal", "OP_GE"}};
    // Integer arithmetic (wrapping) and fill, for index and counter tensors (int64 is held as int32).
    for (const auto& [name, macro] : binary)
      if (std::string(name) != "div") t.push_back({name + std::string("_fwd_i32"), Kind::Binary, macro, DType::I32, DType::I32, {"A", "B"}, {"C"}});
    t.push_back({"fill_i32", Kind::Fill, "FILL", DType::I32, DType::I32, {}, {"Y"}});
    for (DType d : {DType::F32, DType::BF16}) {
      const std::string sfx = std::string("_") + tpc::dtype_name(d);
      for (const auto& [name, macro] : binary)
        t.push_back({name + std::string("_fwd") + sfx, Kind::Binary, macro, d, d, {"A", "B"}, {"C"}});
      for (const auto& [name, macro] : unary)
        t.push_back({name + std::string("_fwd") + sfx, Kind::Unary, macro, d, d, {"X"}, {"Y"}});
      for (const Bwd& b : backward)
        t.push_back({b.name + std::string("_bwd") + sfx, Kind::Backward, b.macro, d, d,
                     {"grad", b.fwd_tensor}, {"dx"}});
      t.push_back({"fill" + sfx, Kind::Fill, "FILL", d, d, {}, {"Y"}});
      t.push_back({"gelu_tanh_fwd" + sfx, Kind::UnaryF32, "OP_GELU_TANH", d, d, {"X"}, {"Y"}});
      t.push_back({"addcmul_fwd" + sfx, Kind::Ternary, "OP_ADDCMUL", d, d, {"A", "B", "C"}, {"Y"}});
      t.push_back({"addcdiv_fwd" + sfx, Kind::Ternary, "OP_ADDCDIV", d, d, {"A", "B", "C"}, {"Y"}});
      for (const char* r : {"sum", "mean", "max"})
        t.push_back({"reduce_" + std::string(r) + "_fwd" + sfx, Kind::Reduce, r, d, d, {"X"}, {"Y"}});
      for (const char* r : {"softmax", "log_softmax"}) {
        t.push_back({r + std::string("_fwd") + sfx, Kind::Softmax, r, d, d, {"X"}, {"Y"}});
        t.push_back({r + std::string("_bwd") + sfx, Kind::SoftmaxBwd, r, d, d, {"grad", "y"}, {"dx"}});
      }
    }
    for (DType d : {DType::F32, DType::BF16}) {
      const std::string sfx = std::string("_") + tpc::dtype_name(d);
      const DType f = DType::F32, i = DType::I32;
      t.push_back({"layernorm_fwd" + sfx, Kind::LayerNormFwd, "", d, d, {"X", "gamma", "beta"},
                   {"Y", "mean", "rstd"}, {d, d, d}, {d, f, f}, 1, {"eps"}, 0});
      t.push_back({"layernorm_bwd" + sfx, Kind::LayerNormBwd, "", d, d, {"grad", "x", "mean", "rstd", "gamma"},
                   {"dx"}, {d, d, f, f, d}, {d}, 4, {}, 0});
      t.push_back({"layernorm_bwd_gamma_beta" + sfx, Kind::LayerNormBwdGB, "", d, d, {"grad", "x", "mean", "rstd"},
                   {"dgamma", "dbeta"}, {d, d, f, f}, {d, d}, 4, {}, 0});
      t.push_back({"nll_loss_fwd" + sfx, Kind::NllFwd, "", d, d, {"logp", "target"}, {"loss", "total_weight"},
                   {d, i}, {d, d}, 2, {"ignore_index"}, 1});
      t.push_back({"nll_loss_bwd" + sfx, Kind::NllBwd, "", d, d, {"grad", "target", "total_weight"}, {"dx"},
                   {d, i, d}, {d}, 3, {"ignore_index"}, 1});
      // The seed as a scalar (a graph constant), or as an optional i32 tensor of one element (one
      // graph for every step of a training loop), then without the seed scalar.
      t.push_back({"dropout_fwd" + sfx, Kind::DropoutFwd, "", d, d, {"X", "seed"}, {"Y", "mask"}, {d, DType::I32}, {}, 1,
                   {"p", "seed"}, 1});
      t.push_back({"dropout_bwd" + sfx, Kind::DropoutBwd, "OP_DROPOUT_BWD", d, d, {"grad", "mask"}, {"dx"}, {}, {}, 2,
                   {"p"}, 0});
      // Permute: scalars = the permutation, one per dim of X (Y's dim k is X's dim perm[k]).
      t.push_back({"permute" + sfx, Kind::Permute, "permute", d, d, {"X"}, {"Y"}, {}, {}, 1,
                   {"perm[0]", "perm[1]", "perm[2]", "perm[3]", "perm[4]"}, 5});
      t.push_back({"transpose" + sfx, Kind::Permute, "transpose", d, d, {"X"}, {"Y"}, {}, {}, 1, {"dim0", "dim1"}, 0});
      t.push_back({"embedding_fwd" + sfx, Kind::EmbeddingFwd, "", d, d, {"weight", "indices"}, {"Y"}, {d, i}, {d}, 2,
                   {}, 0});
      t.push_back({"embedding_bwd" + sfx, Kind::EmbeddingBwd, "", d, d, {"grad", "indices"}, {"grad_weight"}, {d, i},
                   {d}, 2, {"padding_idx"}, 1});
    }
    t.push_back({"sgd_momentum_f32", Kind::Optim, "OPT_SGD", DType::F32, DType::F32, {"param", "grad", "momentum_buffer"},
                 {"param", "momentum_buffer"}, {}, {}, 3, {"lr", "momentum", "dampening", "weight_decay", "first_step"}, 0});
    for (const char* a : {"adam_f32", "adamw_f32"})
      t.push_back({a, Kind::Optim, "OPT_ADAM", DType::F32, DType::F32, {"param", "grad", "exp_avg", "exp_avg_sq"},
                   {"param", "exp_avg", "exp_avg_sq"}, {}, {}, 4, {"lr", "beta1", "beta2", "eps", "weight_decay", "step"}, 0});
    t.push_back({"adadelta_f32", Kind::Optim, "OPT_ADADELTA", DType::F32, DType::F32,
                 {"param", "grad", "square_avg", "acc_delta"}, {"param", "square_avg", "acc_delta"}, {}, {}, 4,
                 {"lr", "rho", "eps", "weight_decay"}, 0});
    t.push_back({"cast_f32_to_bf16", Kind::Cast, "cast_f32_to_bf16.s", DType::F32, DType::BF16, {"X"}, {"Y"}});
    t.push_back({"cast_bf16_to_f32", Kind::Cast, "cast_bf16_to_f32.s", DType::BF16, DType::F32, {"X"}, {"Y"}});
    t.push_back({"cast_f32_to_i32", Kind::Cast, "cast_f32_to_i32.s", DType::F32, DType::I32, {"X"}, {"Y"}});
    t.push_back({"cast_i32_to_f32", Kind::Cast, "cast_i32_to_f32.s", DType::I32, DType::F32, {"X"}, {"Y"}});
    // ---- Batch 5 ----
    for (DType d : {DType::F32, DType::BF16, DType::I32}) {
      const std::string sfx = std::string("_") + tpc::dtype_name(d);
      for (const auto& [name, macro] : compare)
        t.push_back({name + std::string("_fwd") + sfx, Kind::Binary, macro, d, d, {"A", "B"}, {"C"}});
      t.push_back({"where_fwd" + sfx, Kind::Where, "", d, d, {"cond", "A", "B"}, {"Y"}, {DType::U8, d, d}, {d}, 3, {}, 0});
      t.push_back({"gather_fwd" + sfx, Kind::Gather, "", d, d, {"X", "index"}, {"Y"}, {d, DType::I32}, {d}, 2, {"dim"}, 0});
    }
    for (DType d : {DType::F32, DType::I32})
      t.push_back({"range_fwd_" + std::string(tpc::dtype_name(d)), Kind::Range, "", d, d, {}, {"Y"}, {}, {d}, 0,
                   {"start", "step", "end", "halfway"}, 0});
    for (DType d : {DType::F32, DType::BF16}) {
      const std::string sfx = std::string("_") + tpc::dtype_name(d);
      t.push_back({"reduce_min_fwd" + sfx, Kind::Reduce, "min", d, d, {"X"}, {"Y"}});
      // The seed as a scalar or as an optional i32 tensor of one element, as dropout_fwd.
      t.push_back({"random_uniform_fwd" + sfx, Kind::RandomUniform, "DRAW_UNIFORM", d, d, {"seed"}, {"Y"}, {DType::I32},
                   {d}, 0, {"low", "high", "seed"}, 1});
      t.push_back({"random_normal_fwd" + sfx, Kind::RandomNormal, "DRAW_NORMAL", d, d, {"seed"}, {"Y"}, {DType::I32},
                   {d}, 0, {"mean", "std", "seed"}, 1});
      t.push_back({"silu_fwd" + sfx, Kind::UnaryF32, "OP_SILU", d, d, {"X"}, {"Y"}});
      t.push_back({"silu_bwd" + sfx, Kind::Backward, "OP_SILU_BWD", d, d, {"grad", "x"}, {"dx"}});
      t.push_back({"gelu_fwd" + sfx, Kind::UnaryF32, "OP_GELU", d, d, {"X"}, {"Y"}});
      t.push_back({"gelu_bwd" + sfx, Kind::Backward, "OP_GELU_BWD", d, d, {"grad", "x"}, {"dx"}});
    }
    t.push_back({"cast_f32_to_u8", Kind::Cast, "cast_f32_to_u8.s", DType::F32, DType::U8, {"X"}, {"Y"}});
    t.push_back({"cast_u8_to_f32", Kind::Cast, "cast_u8_to_f32.s", DType::U8, DType::F32, {"X"}, {"Y"}});
    t.push_back({"cast_i32_to_u8", Kind::Cast, "cast_i32_to_u8.s", DType::I32, DType::U8, {"X"}, {"Y"}});
    t.push_back({"cast_u8_to_i32", Kind::Cast, "cast_u8_to_i32.s", DType::U8, DType::I32, {"X"}, {"Y"}});
    // ---- Batch 6: strided views of a flat tensor (one stride per dim of the view, elements) ----
    for (DType d : {DType::F32, DType::BF16, DType::I32, DType::U8}) {
      const std::string sfx = std::string("_") + tpc::dtype_name(d);
      const std::vector<std::string> strides = {"stride[0]", "stride[1]", "stride[2]", "stride[3]", "stride[4]"};
      t.push_back({"strided_view" + sfx, Kind::StridedView, "", d, d, {"X"}, {"Y"}, {}, {}, 1, strides, 5});
      t.push_back({"strided_insert" + sfx, Kind::StridedInsert, "", d, d, {"X", "S"}, {"Y"}, {}, {}, 2, strides, 5});
    }
    return t;
  }();
  return table;
}




struct Failure {
  GlueStatus status;
  std::string message;
};

// "input 1 (B)" / "output 0 (C)".
std::string tensor_label(bool is_input, size_t index, const std::vector<std::string>& names) {
  std::string s = std::string(is_input ? "input " : "output ") + std::to_string(index);
  if (index < names.size()) s += " (" + names[index] + ")";
  return s;
}

std::optional<Failure> check_tensor(const TensorParams& t, bool is_input, const std::string& label,
                                    const KernelDef& def, size_t index = 0) {
  const GlueStatus size_status = is_input ? GlueStatus::IncompatibleInputSize : GlueStatus::IncompatibleOutputSize;
  const std::vector<DType>& types = is_input ? def.in_types : def.out_types;
  const DType want = index < types.size() ? types[index] : is_input ? def.in : def.out;
  if (t.dtype != want)
    return Failure{GlueStatus::IncompatibleDataType, label + ": dtype " + tpc::dtype_name(t.dtype) + ", but " +
                                                         def.guid + " takes " + tpc::dtype_name(want)};
  if (t.shape.size() > kMaxDims)
    return Failure{size_status, label + ": " + std::to_string(t.shape.size()) + " dims, at most " +
                                    std::to_string(kMaxDims) + " are supported"};
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] == 0 || t.shape[d] > 0x7FFFFFFFu)
      return Failure{size_status, label + ": dim " + std::to_string(d) + " has size " + std::to_string(t.shape[d]) +
                                      " (must be 1 .. 2^31-1)"};
  }
  if (!t.strides.empty()) {
    if (t.strides.size() != t.shape.size())
      return Failure{size_status, label + ": " + std::to_string(t.strides.size()) + " strides for " +
                                      std::to_string(t.shape.size()) + " dims"};
    if (t.strides[0] != 1)
      return Failure{size_status, label + ": dim 0 stride " + std::to_string(t.strides[0]) +
                                      ", but dim 0 must be contiguous (stride 1)"};
  }
  return std::nullopt;
}

std::optional<Failure> check_same_shape(const TensorParams& t, const std::string& label, const TensorParams& ref,
                                        const std::string& ref_label, GlueStatus status) {
  if (padded(t.shape) == padded(ref.shape) && std::max<size_t>(t.shape.size(), 1) == std::max<size_t>(ref.shape.size(), 1))
    return std::nullopt;
  return Failure{status, label + ": shape " + shape_text(t.shape) + " differs from " + ref_label + "'s " +
                             shape_text(ref.shape) + " (" + "no broadcasting in this kernel)"};
}

// numpy broadcasting of the inputs to the output, dims aligned at dim 0 (the innermost).
std::optional<Failure> check_broadcast(const KernelParams& p, const KernelDef& def) {
  const TensorParams& out = p.outputs[0];
  const auto po = padded(out.shape);
  const std::string out_label = tensor_label(false, 0, def.output_names);
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const TensorParams& in = p.inputs[k];
    const std::string label = tensor_label(true, k, def.input_names);
    if (in.shape.size() > std::max<size_t>(out.shape.size(), 1))
      return Failure{GlueStatus::IncompatibleInputSize, label + ": " + std::to_string(in.shape.size()) +
                                                            " dims, more than the output's " +
                                                            std::to_string(out.shape.size())};
    const auto pi = padded(in.shape);
    for (unsigned d = 0; d < kMaxDims; ++d) {
      if (pi[d] != po[d] && pi[d] != 1)
        return Failure{GlueStatus::IncompatibleInputSize,
                       label + ": dim " + std::to_string(d) + " has size " + std::to_string(pi[d]) +
                           ", which does not broadcast to the output's " + std::to_string(po[d]) +
                           " (shapes " + shape_text(in.shape) + " and " + shape_text(out.shape) +
                           "; a dim must be equal or 1)"};
    }
  }
  for (unsigned d = 0; d < kMaxDims; ++d) {
    if (po[d] == 1) continue;
    bool found = false;
    for (const TensorParams& in : p.inputs) found = found || padded(in.shape)[d] == po[d];
    if (!found)
      return Failure{GlueStatus::IncompatibleOutputSize,
                     out_label + ": dim " + std::to_string(d) + " has size " + std::to_string(po[d]) +
                         ", but the inputs broadcast to 1 there (shape " + shape_text(out.shape) + ")"};
  }
  return std::nullopt;
}

std::optional<Failure> validate_batch3(const KernelDef& def, const KernelParams& p);

std::optional<Failure> validate(const KernelDef& def, const KernelParams& p) {
  if (is_batch3(def.kind)) return validate_batch3(def, p);
  const size_t n_in = def.input_names.size(), n_out = def.output_names.size();
  auto names = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  if (p.inputs.size() != n_in)
    return Failure{GlueStatus::IncompatibleInputCount,
                   def.guid + " takes " + std::to_string(n_in) + " input" + (n_in == 1 ? "" : "s") +
                       (n_in ? " (" + names(def.input_names) + ")" : "") + ", got " +
                       std::to_string(p.inputs.size())};
  if (p.outputs.size() != n_out)
    return Failure{GlueStatus::IncompatibleOutputCount,
                   def.guid + " takes " + std::to_string(n_out) + " output (" + names(def.output_names) +
                       "), got " + std::to_string(p.outputs.size())};
  const size_t n_scalars = def.kind == Kind::Fill || def.kind == Kind::Ternary || def.kind == Kind::Reduce ? 1 : 0;
  const char* scalar_what = def.kind == Kind::Fill ? " (the fill value)"
                            : def.kind == Kind::Ternary ? " (value)"
                                                        : " (the dim to reduce)";
  if (p.scalars.size() != n_scalars)
    return Failure{GlueStatus::IncompatibleScalarParams,
                   def.guid + " takes " + std::to_string(n_scalars) + " scalar parameter" +
                       (n_scalars == 1 ? scalar_what : "s") + ", got " + std::to_string(p.scalars.size())};
  for (size_t k = 0; k < p.inputs.size(); ++k)
    if (auto f = check_tensor(p.inputs[k], true, tensor_label(true, k, def.input_names), def)) return f;
  for (size_t k = 0; k < p.outputs.size(); ++k)
    if (auto f = check_tensor(p.outputs[k], false, tensor_label(false, k, def.output_names), def)) return f;
  switch (def.kind) {
    case Kind::Binary:
    case Kind::Ternary:
      return check_broadcast(p, def);
    case Kind::Backward:
    case Kind::SoftmaxBwd:
      if (auto f = check_same_shape(p.inputs[1], tensor_label(true, 1, def.input_names), p.inputs[0],
                                    tensor_label(true, 0, def.input_names), GlueStatus::IncompatibleInputSize))
        return f;
      [[fallthrough]];
    case Kind::Unary:
    case Kind::UnaryF32:
    case Kind::Cast:
    case Kind::Softmax:
      return check_same_shape(p.outputs[0], tensor_label(false, 0, def.output_names), p.inputs[0],
                              tensor_label(true, 0, def.input_names), GlueStatus::IncompatibleOutputSize);
    case Kind::Reduce: {
      // scalars[0] = the dim (an integer 0 .. rank-1); Y = X's shape with size 1 there (keepdim).
      const float dim = p.scalars[0];
      const size_t rank = std::max<size_t>(p.inputs[0].shape.size(), 1);
      if (!(dim >= 0.0f) || dim != std::floor(dim) || dim >= static_cast<float>(rank))
        return Failure{GlueStatus::IncompatibleScalarParams,
                       "the dim to reduce (scalar 0) is " + std::to_string(dim) + ", must be an integer 0 .. " +
                           std::to_string(rank - 1) + " (input 0 (X) has " + std::to_string(rank) + " dims)"};
      TensorParams want = p.inputs[0];
      if (want.shape.empty()) want.shape = {1};
      want.shape[static_cast<size_t>(dim)] = 1;
      const TensorParams& y = p.outputs[0];
      const bool same_rank = std::max<size_t>(y.shape.size(), 1) == want.shape.size();
      if (!same_rank || padded(y.shape) != padded(want.shape))
        return Failure{GlueStatus::IncompatibleOutputSize,
                       tensor_label(false, 0, def.output_names) + ": shape " + shape_text(y.shape) + ", but reducing " +
                           shape_text(p.inputs[0].shape) + " over dim " + std::to_string(static_cast<int>(dim)) +
                           " gives " + shape_text(want.shape) + " (size 1 in the reduced dim, keepdim)"};
      return std::nullopt;
    }
    case Kind::Fill:
      if (def.out == DType::I32 && !(p.scalars[0] == std::floor(p.scalars[0]) && std::fabs(p.scalars[0]) <= 16777216.0f))
        return Failure{GlueStatus::IncompatibleScalarParams,
                       "the fill value (scalar 0) is " + std::to_string(p.scalars[0]) +
                           ", must be an integer of magnitude at most 2^24 (exact in the f32 scalar)"};
      return std::nullopt;
    default:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// ---- Batch 3: validation ----

bool same_shape(const TensorParams& a, const std::vector<uint32_t>& shape) {
  return padded(a.shape) == padded(shape) && std::max<size_t>(a.shape.size(), 1) == std::max<size_t>(shape.size(), 1);
}
// X's shape with size 1 in dim 0: the shape of layernorm's mean / rstd.
std::vector<uint32_t> stat_shape(const TensorParams& x) {
  std::vector<uint32_t> s = x.shape.empty() ? std::vector<uint32_t>{1} : x.shape;
  s[0] = 1;
  return s;
}
bool is_integer(float v) { return std::isfinite(v) && v == std::floor(v); }

// The permutation of a permute / transpose kernel, the identity past X's rank (after validation):
// Y's dim k is X's dim perm[k].
std::array<unsigned, kMaxDims> permutation_of(const KernelDef& def, const KernelParams& p) {
  std::array<unsigned, kMaxDims> perm{0, 1, 2, 3, 4};
  if (def.op_macro == "transpose")
    std::swap(perm[static_cast<unsigned>(p.scalars[0])], perm[static_cast<unsigned>(p.scalars[1])]);
  else
    for (size_t k = 0; k < p.scalars.size() && k < kMaxDims; ++k) perm[k] = static_cast<unsigned>(p.scalars[k]);
  return perm;
}

std::optional<Failure> validate_batch3(const KernelDef& def, const KernelParams& p) {
  const size_t n_in = def.input_names.size(), n_out = def.output_names.size();
  const bool in_ok = def.kind == Kind::LayerNormFwd ? p.inputs.size() == 1 || p.inputs.size() == 3
                                                    : p.inputs.size() >= def.min_inputs && p.inputs.size() <= n_in;
  auto names = [](const std::vector<std::string>& v, size_t n) {
    std::string s;
    for (size_t i = 0; i < n && i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  if (!in_ok) {
    std::string want = std::to_string(n_in) + " inputs (" + names(def.input_names, n_in) + ")";
    if (n_in == 0) want = "no inputs";
    if (def.kind == Kind::LayerNormFwd) want = "1 input (X) or 3 (X, gamma, beta)";
    else if (def.min_inputs < n_in) want = std::to_string(def.min_inputs) + " or " + want;
    return Failure{GlueStatus::IncompatibleInputCount, def.guid + " takes " + want + ", got " + std::to_string(p.inputs.size())};
  }
  if (p.outputs.size() != n_out)
    return Failure{GlueStatus::IncompatibleOutputCount, def.guid + " takes " + std::to_string(n_out) + " output" +
                                                            (n_out == 1 ? "" : "s") + " (" + names(def.output_names, n_out) +
                                                            "), got " + std::to_string(p.outputs.size())};
  const size_t n_sc = def.scalar_names.size();
  const bool by_rank = def.kind == Kind::Permute && def.op_macro == "permute";   // one scalar per dim of X
  const size_t x_rank = p.inputs.empty() ? 0 : p.inputs[0].shape.size();
  if (by_rank && x_rank <= kMaxDims && p.scalars.size() != x_rank)
    return Failure{GlueStatus::IncompatibleScalarParams,
                   def.guid + " takes one scalar parameter per dim of input 0 (X), " + std::to_string(x_rank) +
                       " (the permutation: Y's dim k is X's dim perm[k]), got " + std::to_string(p.scalars.size())};
  // strided_view / strided_insert: one stride per dim of the view (Y / S).
  const bool strided = is_strided(def.kind);
  const size_t view_rank = !strided ? 0 : def.kind == Kind::StridedView ? p.outputs[0].shape.size() : p.inputs[1].shape.size();
  if (strided && (view_rank <= kMaxDims ? p.scalars.size() != view_rank : p.scalars.size() > kMaxDims))
    return Failure{GlueStatus::IncompatibleScalarParams,
                   def.guid + " takes one scalar parameter per dim of " +
                       (def.kind == Kind::StridedView ? "output 0 (Y), " : "input 1 (S), ") + std::to_string(view_rank) +
                       " (the view's strides in elements, stride[0] first), got " + std::to_string(p.scalars.size())};
  if (!by_rank && !strided && (p.scalars.size() > n_sc || p.scalars.size() + def.optional_scalars < n_sc))
    return Failure{GlueStatus::IncompatibleScalarParams,
                   def.guid + " takes " + (def.optional_scalars ? std::to_string(n_sc - def.optional_scalars) + " or " : "") +
                       std::to_string(n_sc) + " scalar parameter" + (n_sc == 1 ? "" : "s") +
                       (n_sc ? " (" + names(def.scalar_names, n_sc) + ")" : "") + ", got " + std::to_string(p.scalars.size())};
  auto bad_scalar = [&](size_t k, const std::string& why) {
    return Failure{GlueStatus::IncompatibleScalarParams, "scalar " + std::to_string(k) + " (" + def.scalar_names[k] +
                                                             ") is " + std::to_string(p.scalars[k]) + ", " + why};
  };
  for (size_t k = 0; k < p.scalars.size(); ++k)
    if (!std::isfinite(p.scalars[k])) return bad_scalar(k, "must be finite");
  switch (def.kind) {
    case Kind::LayerNormFwd:
      if (p.scalars[0] < 0.0f) return bad_scalar(0, "must be >= 0");
      break;
    case Kind::NllFwd:
    case Kind::NllBwd:
      if (!p.scalars.empty() && !is_integer(p.scalars[0])) return bad_scalar(0, "must be an integer");
      break;
    case Kind::DropoutFwd:
    case Kind::DropoutBwd:
      if (def.kind == Kind::DropoutFwd) {
        const bool seed_tensor = p.inputs.size() == 2;
        if (p.scalars.size() != (seed_tensor ? 1u : 2u))
          return Failure{GlueStatus::IncompatibleScalarParams,
                         def.guid + (seed_tensor ? " with a seed tensor takes 1 scalar parameter (p), got "
                                                 : " without a seed tensor takes 2 scalar parameters (p, seed), got ") +
                             std::to_string(p.scalars.size())};
      }
      if (!(p.scalars[0] >= 0.0f && p.scalars[0] <= 1.0f)) return bad_scalar(0, "must be in [0, 1]");
      if (def.kind == Kind::DropoutFwd && p.scalars.size() == 2 &&
          !(is_integer(p.scalars[1]) && p.scalars[1] >= 0.0f && p.scalars[1] <= 16777216.0f))
        return bad_scalar(1, "must be an integer 0 .. 2^24");
      break;
    case Kind::Optim:
      if (def.op_macro == "OPT_SGD" && p.scalars[4] != 0.0f && p.scalars[4] != 1.0f)
        return bad_scalar(4, "must be 0 or 1");
      if (def.op_macro == "OPT_ADAM" && !(is_integer(p.scalars[5]) && p.scalars[5] >= 1.0f))
        return bad_scalar(5, "must be an integer >= 1");
      break;
    case Kind::Permute: {
      if (x_rank > kMaxDims) break;   // the tensor check reports it
      const size_t limit = by_rank ? x_rank : std::max<size_t>(x_rank, 1);
      for (size_t k = 0; k < p.scalars.size(); ++k) {
        if (!is_integer(p.scalars[k]) || p.scalars[k] < 0.0f || p.scalars[k] >= static_cast<float>(limit))
          return bad_scalar(k, "must be an integer 0 .. " + std::to_string(limit - 1) + " (input 0 (X) has " +
                                   std::to_string(x_rank) + " dims)");
        for (size_t j = 0; by_rank && j < k; ++j)
          if (p.scalars[j] == p.scalars[k])
            return bad_scalar(k, "repeats " + def.scalar_names[j] + " (a permutation names each dim once)");
      }
      break;
    }
    case Kind::EmbeddingBwd:
      if (!p.scalars.empty() && !is_integer(p.scalars[0])) return bad_scalar(0, "must be an integer");
      break;
    case Kind::StridedView:
    case Kind::StridedInsert:
      for (size_t k = 0; k < p.scalars.size(); ++k)
        if (!is_integer(p.scalars[k]) || p.scalars[k] < 0.0f || p.scalars[k] >= 2147483648.0f)
          return bad_scalar(k, "must be an integer 0 .. 2^31-1 (a stride in elements)");
      break;
    case Kind::Gather: {
      if (x_rank > kMaxDims) break;   // the tensor check reports it
      const size_t rank = std::max<size_t>(x_rank, 1);
      if (!is_integer(p.scalars[0]) || p.scalars[0] < 0.0f || p.scalars[0] >= static_cast<float>(rank))
        return bad_scalar(0, "must be an integer 0 .. " + std::to_string(rank - 1) + " (input 0 (X) has " +
                                 std::to_string(x_rank) + " dims)");
      break;
    }
    case Kind::Range:
      if (def.out == DType::I32) {
        for (size_t k = 0; k < 3; ++k)
          if (!(is_integer(p.scalars[k]) && p.scalars[k] >= -2147483648.0f && p.scalars[k] < 2147483648.0f))
            return bad_scalar(k, "must be an integer -2^31 .. 2^31-1 (" + def.guid + " computes in i32)");
        if (!is_integer(p.scalars[3])) return bad_scalar(3, "must be an integer");
      }
      break;
    case Kind::RandomUniform:
    case Kind::RandomNormal: {
      const bool seed_tensor = p.inputs.size() == 1;
      if (p.scalars.size() != (seed_tensor ? 2u : 3u))
        return Failure{GlueStatus::IncompatibleScalarParams,
                       def.guid + (seed_tensor ? " with a seed tensor takes 2 scalar parameters (" + names(def.scalar_names, 2) + "), got "
                                               : " without a seed tensor takes 3 scalar parameters (" + names(def.scalar_names, 3) + "), got ") +
                           std::to_string(p.scalars.size())};
      if (def.kind == Kind::RandomUniform) {
        if (!(p.scalars[1] >= p.scalars[0])) return bad_scalar(1, "must be >= low (scalar 0, " + std::to_string(p.scalars[0]) + ")");
        const float range = p.scalars[1] - p.scalars[0];
        if (!std::isfinite(range)) return bad_scalar(1, "makes high - low overflow f32");
      } else if (p.scalars[1] < 0.0f) {
        return bad_scalar(1, "must be >= 0");
      }
      if (!seed_tensor && !(is_integer(p.scalars[2]) && p.scalars[2] >= 0.0f && p.scalars[2] <= 16777216.0f))
        return bad_scalar(2, "must be an integer 0 .. 2^24");
      break;
    }
    default:
      break;
  }
  for (size_t k = 0; k < p.inputs.size(); ++k)
    if (auto f = check_tensor(p.inputs[k], true, tensor_label(true, k, def.input_names), def, k)) return f;
  for (size_t k = 0; k < p.outputs.size(); ++k)
    if (auto f = check_tensor(p.outputs[k], false, tensor_label(false, k, def.output_names), def, k)) return f;

  // Shapes against each other.
  auto want_shape = [&](bool is_input, size_t k, const std::vector<uint32_t>& shape, const std::string& what) -> std::optional<Failure> {
    const TensorParams& t = is_input ? p.inputs[k] : p.outputs[k];
    if (same_shape(t, shape)) return std::nullopt;
    return Failure{is_input ? GlueStatus::IncompatibleInputSize : GlueStatus::IncompatibleOutputSize,
                   tensor_label(is_input, k, is_input ? def.input_names : def.output_names) + ": shape " +
                       shape_text(t.shape) + ", but " + what + " " + shape_text(shape)};
  };
  auto one_element = [&](bool is_input, size_t k) -> std::optional<Failure> {
    const TensorParams& t = is_input ? p.inputs[k] : p.outputs[k];
    if (elements(t) == 1) return std::nullopt;
    return Failure{is_input ? GlueStatus::IncompatibleInputSize : GlueStatus::IncompatibleOutputSize,
                   tensor_label(is_input, k, is_input ? def.input_names : def.output_names) + ": shape " +
                       shape_text(t.shape) + ", must hold one element"};
  };
  const TensorParams& x = p.inputs.empty() ? p.outputs[0] : p.inputs[0];
  const std::vector<uint32_t> xs = x.shape.empty() ? std::vector<uint32_t>{1} : x.shape;
  const std::vector<uint32_t> row = {xs[0]};
  switch (def.kind) {
    case Kind::LayerNormFwd:
      for (size_t k = 1; k < p.inputs.size(); ++k)
        if (auto f = want_shape(true, k, row, "gamma and beta must have X's dim 0 only:")) return f;
      if (auto f = want_shape(false, 0, x.shape, "it must have X's shape")) return f;
      for (size_t k = 1; k < 3; ++k)
        if (auto f = want_shape(false, k, stat_shape(x), "it must have X's shape with size 1 in dim 0:")) return f;
      break;
    case Kind::LayerNormBwd:
    case Kind::LayerNormBwdGB:
      if (auto f = want_shape(true, 1, x.shape, "it must have grad's shape")) return f;
      for (size_t k = 2; k < 4; ++k)
        if (auto f = want_shape(true, k, stat_shape(x), "it must have grad's shape with size 1 in dim 0:")) return f;
      if (p.inputs.size() == 5)
        if (auto f = want_shape(true, 4, row, "gamma must have grad's dim 0 only:")) return f;
      for (size_t k = 0; k < p.outputs.size(); ++k)
        if (auto f = def.kind == Kind::LayerNormBwd ? want_shape(false, k, x.shape, "it must have grad's shape")
                                                    : want_shape(false, k, row, "it must have grad's dim 0 only:"))
          return f;
      break;
    case Kind::NllFwd:
    case Kind::NllBwd: {
      const TensorParams& logp = def.kind == Kind::NllFwd ? p.inputs[0] : p.outputs[0];
      const bool is_in = def.kind == Kind::NllFwd;
      if (logp.shape.size() > 2)
        return Failure{is_in ? GlueStatus::IncompatibleInputSize : GlueStatus::IncompatibleOutputSize,
                       tensor_label(is_in, 0, is_in ? def.input_names : def.output_names) + ": shape " +
                           shape_text(logp.shape) + ", must be [C, N] or [C] (dim 0 = classes)"};
      const uint32_t n = padded(logp.shape)[1];
      const TensorParams& target = p.inputs[1];
      if (target.shape.size() > 1 || elements(target) != n)
        return Failure{GlueStatus::IncompatibleInputSize,
                       tensor_label(true, 1, def.input_names) + ": shape " + shape_text(target.shape) + ", must be [" +
                           std::to_string(n) + "] (one class index per sample of " + shape_text(logp.shape) + ")"};
      if (is_in) {
        for (size_t k = 0; k < 2; ++k)
          if (auto f = one_element(false, k)) return f;
      } else {
        for (size_t k : {size_t{0}, size_t{2}})
          if (auto f = one_element(true, k)) return f;
      }
      break;
    }
    case Kind::Permute: {
      const auto perm = permutation_of(def, p);
      std::vector<uint32_t> want(x.shape.size());
      for (size_t d = 0; d < want.size(); ++d) want[d] = x.shape[perm[d]];
      if (auto f = want_shape(false, 0, want, "permuting X's shape " + shape_text(x.shape) + " gives")) return f;
      break;
    }
    case Kind::EmbeddingFwd:
    case Kind::EmbeddingBwd: {
      const bool fwd = def.kind == Kind::EmbeddingFwd;
      const TensorParams& idx = p.inputs[1];
      if (idx.shape.size() > 4)
        return Failure{GlueStatus::IncompatibleInputSize,
                       tensor_label(true, 1, def.input_names) + ": " + std::to_string(idx.shape.size()) +
                           " dims, at most 4 (the " + (fwd ? "output" : "grad") + " [D, indices' shape...] has at most 5)"};
      const TensorParams& table = fwd ? p.inputs[0] : p.outputs[0];
      if (table.shape.size() != 2)
        return Failure{fwd ? GlueStatus::IncompatibleInputSize : GlueStatus::IncompatibleOutputSize,
                       tensor_label(fwd, 0, fwd ? def.input_names : def.output_names) + ": shape " +
                           shape_text(table.shape) + ", must be [D, V] (dim 0 = the embedding dim D, dim 1 = V rows)"};
      std::vector<uint32_t> rows = {table.shape[0]};
      rows.insert(rows.end(), idx.shape.begin(), idx.shape.end());
      if (fwd) {
        if (auto f = want_shape(false, 0, rows, "gathering weight's rows by indices gives [D, indices' shape...] =")) return f;
      } else {
        if (auto f = want_shape(true, 0, rows, "it must be [D, indices' shape...] with grad_weight's D:")) return f;
        const float v = static_cast<float>(table.shape[1]);
        if (!p.scalars.empty() && (p.scalars[0] < -v || p.scalars[0] >= v))
          return bad_scalar(0, "must be in -V .. V-1 (V = " + std::to_string(table.shape[1]) + ", grad_weight's dim 1)");
      }
      break;
    }
    case Kind::Where:
      return check_broadcast(p, def);
    case Kind::StridedView:
    case Kind::StridedInsert: {
      const bool view = def.kind == Kind::StridedView;
      if (x.shape.size() > 1)
        return Failure{GlueStatus::IncompatibleInputSize,
                       tensor_label(true, 0, def.input_names) + ": shape " + shape_text(x.shape) +
                           ", must be 1-D (the flat span of elements the view addresses)"};
      if (!view)
        if (auto f = want_shape(false, 0, x.shape, "it must have input 0 (X)'s shape (Y is X's memory, updated in place):"))
          return f;
      // The view's last element, sum over d of (size[d] - 1) * stride[d], must lie inside X (each
      // term is below 2^62; the sum saturates rather than wrap).
      const TensorParams& v = view ? p.outputs[0] : p.inputs[1];
      const auto pv = padded(v.shape);
      const uint64_t n = elements(x);
      uint64_t last = 0;
      bool overflow = false;
      std::string strides;
      for (size_t d = 0; d < p.scalars.size(); ++d) {
        const uint64_t term = static_cast<uint64_t>(pv[d] - 1) * static_cast<uint64_t>(p.scalars[d]);
        strides += (d ? ", " : "") + std::to_string(static_cast<uint64_t>(p.scalars[d]));
        if (last > UINT64_MAX - term) overflow = true;
        else last += term;
      }
      if (overflow || last >= n)
        return Failure{GlueStatus::IncompatibleInputSize,
                       tensor_label(true, 0, def.input_names) + ": shape " + shape_text(x.shape) + " holds " +
                           std::to_string(n) + " elements, but the view (" +
                           (view ? tensor_label(false, 0, def.output_names) : tensor_label(true, 1, def.input_names)) +
                           "'s shape " + shape_text(v.shape) + " with strides [" + strides + "]) reaches element " +
                           (overflow ? std::string("2^64 or more") : std::to_string(last)) +
                           " (the sum of (size[d] - 1) * stride[d]), past X's last, " + std::to_string(n - 1)};
      break;
    }
    case Kind::Gather: {
      const TensorParams& idx = p.inputs[1];
      const size_t rank = std::max<size_t>(x.shape.size(), 1);
      if (std::max<size_t>(idx.shape.size(), 1) != rank)
        return Failure{GlueStatus::IncompatibleInputSize,
                       tensor_label(true, 1, def.input_names) + ": " + std::to_string(idx.shape.size()) +
                           " dims, but input 0 (X) has " + std::to_string(x.shape.size()) + " (gather takes an index of X's rank)"};
      const unsigned dim = static_cast<unsigned>(p.scalars[0]);
      const auto pxs = padded(x.shape), pis = padded(idx.shape);
      for (unsigned d = 0; d < rank; ++d)
        if (d != dim && pis[d] > pxs[d])
          return Failure{GlueStatus::IncompatibleInputSize,
                         tensor_label(true, 1, def.input_names) + ": dim " + std::to_string(d) + " has size " +
                             std::to_string(pis[d]) + ", more than input 0 (X)'s " + std::to_string(pxs[d]) +
                             " (gather needs index.size(d) <= X.size(d) for every d != dim, here dim " + std::to_string(dim) + ")"};
      if (auto f = want_shape(false, 0, idx.shape, "it must have input 1 (index)'s shape")) return f;
      break;
    }
    case Kind::Range: {
      const uint64_t n = elements(p.outputs[0]);
      const bool f32 = def.out == DType::F32;
      if (n > (f32 ? (uint64_t{1} << 24) : uint64_t{0x7FFFFFFF}))
        return Failure{GlueStatus::IncompatibleOutputSize,
                       tensor_label(false, 0, def.output_names) + ": shape " + shape_text(p.outputs[0].shape) + " has " +
                           std::to_string(n) + " elements, at most " +
                           (f32 ? "2^24 (each element's index must be exact in f32)" : "2^31-1 (the index is an i32)")};
      break;
    }
    case Kind::RandomUniform:
    case Kind::RandomNormal:
      if (p.inputs.size() == 1)
        if (auto f = one_element(true, 0)) return f;
      break;
    case Kind::DropoutFwd:
    case Kind::DropoutBwd:
    case Kind::Optim:
      if (def.kind == Kind::DropoutFwd && p.inputs.size() == 2) {
        if (auto f = one_element(true, 1)) return f;
      } else {
        for (size_t k = 1; k < p.inputs.size(); ++k)
          if (auto f = want_shape(true, k, x.shape, "it must have input 0's shape")) return f;
      }
      for (size_t k = 0; k < p.outputs.size(); ++k)
        if (auto f = want_shape(false, k, x.shape, "it must have input 0's shape")) return f;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// The row macros of softmax_short.s / softmax_bwd_short.s for rows of `vectors` (1..4) vectors,
// one macro line per vector (the assembler has no repetition directive). Registers as the kernel
// files list them: x or g in V30.. (lo) / V34.. (hi), e or y in V22.. / V26..; the results rotate
// over four lo / hi pairs so consecutive vectors do not wait on each other.
// layernorm_fwd_short.s's row macros for rows of `vectors` vectors (x in V24.. lo, V30.. hi).
std::string layernorm_row_macros(uint32_t vectors) {
  auto lo = [](unsigned r) { return "V" + std::to_string(24 + r); };
  auto hi = [](unsigned r) { return "V" + std::to_string(30 + r); };
  std::ostringstream m;
  m << ".macro ROW_LOAD\n        imov I3, I2\n";
  for (unsigned r = 0; r < vectors; ++r) {
    if (r) m << "        iadd_dim I3, LANES dim=0\n";
    m << "        LDW " << lo(r) << ", " << hi(r) << ", I3, 0\n";
  }
  m << ".endm\n.macro ROW_SUM\n        mov.f32 V10, 0.0\n        mov.f32 V20, 0.0\n";
  for (unsigned r = 0; r < vectors; ++r) m << "        EACH3 add.f32, V10, V10, " << lo(r) << ", V20, V20, " << hi(r) << "\n";
  // Pass 2: every x - mean first (independent), then per vector the masked square and the sum.
  m << ".endm\n.macro ROW_VAR\n";
  for (unsigned r = 0; r < vectors; ++r)
    m << "        EACH3 sub.f32, " << lo(r) << ", " << lo(r) << ", V14, " << hi(r) << ", " << hi(r) << ", V14\n";
  m << "        mov.f32 V10, 0.0\n        mov.f32 V20, 0.0\n";
  for (unsigned r = 0; r < vectors; ++r)
    m << "        sub.i32 S18, S0, LANES * " << r << "\n        cmp.lt.i32 VP2, V16, S18\n        cmp.lt.i32 VP3, V17, S18\n"
      << "        EACH3 mul.f32, V11, " << lo(r) << ", " << lo(r) << ", V21, " << hi(r) << ", " << hi(r) << "\n"
      << "        EACH4 sel.f32, V11, V11, 0.0, VP2, V21, V21, 0.0, VP3\n"
      << "        EACH3 add.f32, V10, V10, V11, V20, V20, V21\n";
  m << ".endm\n.macro ROW_STORE\n        imov I3, I2\n";
  for (unsigned r = 0; r < vectors; ++r)
    m << "        EACH3 mul.f32, V13, " << lo(r) << ", V15, V23, " << hi(r) << ", V15\n        LN_AFFINE V13, V23\n"
      << "        NARROW V13, V23\n        st_tnsr I3, OUT_Y, V9; iadd_dim I3, LANES dim=0\n";
  m << ".endm\n";
  return m.str();
}

// Elementwise work over tensors of one shape, all dense, is one long run of elements: the kernel
// sees each tensor flattened to one dim, so its prefetching streams ahead across what were rows
// and no row pays the nest's set-up. Otherwise (broadcasting, strides) the parameters as given.
KernelParams as_one_run(const KernelParams& p) {
  std::vector<uint32_t> shape;
  bool first = true;
  for (const auto* list : {&p.inputs, &p.outputs})
    for (const TensorParams& t : *list) {
      if (first) shape = t.shape;
      first = false;
      if (glue::padded(t.shape) != glue::padded(shape) || glue::flattened(t).shape.size() != 1) return p;
    }
  KernelParams run = p;
  for (auto* list : {&run.inputs, &run.outputs})
    for (TensorParams& t : *list) t = glue::flattened(t);
  return run;
}

// layernorm_bwd_short.s's row macros for rows of `vectors` vectors: dxhat and xhat in the 24
// registers no other part of the kernel uses (f32: lo only; bf16: hi six registers on).
std::string layernorm_bwd_row_macros(uint32_t vectors, bool bf16) {
  static const char* const kFree[24] = {"V0",  "V1",  "V2",  "V3",  "V4",  "V5",  "V6",  "V7",
                                        "V16", "V17", "V19", "V24", "V25", "V26", "V27", "V29",
                                        "V32", "V33", "V34", "V35", "V36", "V37", "V38", "V39"};
  const unsigned half = bf16 ? 6 : 0;   // f32: hi names the lo register (unused by io_f32.inc)
  auto g = [&](unsigned r) { return std::string(kFree[r]) + ", " + kFree[r + half]; };
  auto x = [&](unsigned r) { return std::string(kFree[12 + r]) + ", " + kFree[12 + r + half]; };
  auto lo = [](const std::string& pair) { return pair.substr(0, pair.find(',')); };
  auto hi = [](const std::string& pair) { return pair.substr(pair.find(',') + 2); };
  std::ostringstream m;
  m << ".macro ROW_LOAD\n        imov I3, I2\n";
  for (unsigned r = 0; r < vectors; ++r) {
    if (r) m << "        iadd_dim I3, LANES dim=0\n";
    m << "        LDW " << g(r) << ", I3, 0\n        LDW " << x(r) << ", I3, 1\n        LN_GAMMA " << g(r) << "\n";
  }
  m << ".endm\n.macro ROW_ACC\n        mov.f32 V10, 0.0\n        mov.f32 V20, 0.0\n        mov.f32 V18, 0.0\n"
    << "        mov.f32 V28, 0.0\n";
  for (unsigned r = 0; r < vectors; ++r) {
    const std::string G = g(r), X = x(r);
    m << "        EACH3 sub.f32, " << lo(X) << ", " << lo(X) << ", V14, " << hi(X) << ", " << hi(X) << ", V14\n"
      << "        EACH3 mul.f32, " << lo(X) << ", " << lo(X) << ", V15, " << hi(X) << ", " << hi(X) << ", V15\n"
      << "        EACH3 add.f32, V10, V10, " << lo(G) << ", V20, V20, " << hi(G) << "\n"
      << "        EACH3 mul.f32, V12, " << lo(X) << ", " << lo(G) << ", V22, " << hi(X) << ", " << hi(G) << "\n"
      << "        EACH3 add.f32, V18, V18, V12, V28, V28, V22\n";
  }
  m << ".endm\n.macro ROW_STORE\n        imov I3, I2\n";
  for (unsigned r = 0; r < vectors; ++r) {
    const std::string G = g(r), X = x(r);
    m << "        EACH3 mul.f32, V12, " << lo(X) << ", V31, V22, " << hi(X) << ", V31\n"
      << "        EACH3 sub.f32, " << lo(G) << ", " << lo(G) << ", V30, " << hi(G) << ", " << hi(G) << ", V30\n"
      << "        EACH3 sub.f32, " << lo(G) << ", " << lo(G) << ", V12, " << hi(G) << ", " << hi(G) << ", V22\n"
      << "        EACH3 mul.f32, V13, " << lo(G) << ", V15, V23, " << hi(G) << ", V15\n"
      << "        NARROW V13, V23\n        st_tnsr I3, OUT_T, V9; iadd_dim I3, LANES dim=0\n";
  }
  m << ".endm\n";
  return m.str();
}

// eltwise_binary_row.s's KERNEL_SETUP and ROW_BODY for rows of `vectors` vectors, input `row`
// the bias row (V16..), the other streamed (V30..V33) into C (V34..V37), software pipelined.
std::string binary_row_macros(uint32_t vectors, int row) {
  auto v = [](unsigned n) { return "V" + std::to_string(n); };
  const int streamed = 1 - row;
  std::ostringstream m;
  m << ".macro KERNEL_SETUP\n        imov I3, 0\n";
  for (unsigned r = 0; r < vectors; ++r) {
    m << "        ld_tnsr " << v(16 + r) << ", I3, " << row;
    m << (r + 1 < vectors ? "; iadd_dim I3, LANES dim=0\n" : "\n");
  }
  m << ".endm\n.macro ROW_BODY\n        imov I4, I2\n        imov I5, I2\n";
  for (unsigned s = 0; s < vectors + 2; ++s) {
    if (s < vectors) m << "        ld_tnsr " << v(30 + s % 4) << ", I4, " << streamed << "; iadd_dim I4, LANES dim=0\n";
    if (s >= 1 && s <= vectors) {
      const unsigned r = s - 1;
      const std::string a = v(30 + r % 4), b = v(16 + r);
      m << "        OP " << v(34 + r % 4) << ", " << (row == 1 ? a : b) << ", " << (row == 1 ? b : a) << "\n";
    }
    if (s >= 2) m << "        st_tnsr I5, 2, " << v(34 + (s - 2) % 4) << "; iadd_dim I5, LANES dim=0\n";
  }
  m << ".endm\n";
  return m.str();
}

std::string short_row_macros(uint32_t vectors, bool backward) {
  auto v = [](unsigned n) { return "V" + std::to_string(n); };
  const char* out_lo[] = {"V11", "V12", "V13", "V16"};
  const char* out_hi[] = {"V17", "V18", "V19", "V21"};
  std::ostringstream m;
  m << ".macro ROW_LOAD\n        imov I3, I2\n";
  for (unsigned r = 0; r < vectors; ++r) {
    if (r) m << "        iadd_dim I3, LANES dim=0\n";
    m << "        LDW " << v(30 + r) << ", " << v(34 + r) << ", I3, 0\n";
    if (backward) m << "        LDW " << v(22 + r) << ", " << v(26 + r) << ", I3, 1\n";
  }
  m << ".endm\n";
  if (backward) {
    m << ".macro ROW_ACC\n        mov.f32 V10, 0.0\n        mov.f32 V20, 0.0\n";
    for (unsigned r = 0; r < vectors; ++r)
      m << "        EACH3 SMB_ACC, V10, " << v(30 + r) << ", " << v(22 + r) << ", V20, " << v(34 + r) << ", " << v(26 + r) << "\n";
    m << ".endm\n";
  } else {
    m << ".macro ROW_MAX\n        mov.f32 V10, 0xFF800000\n        mov.f32 V20, 0xFF800000\n";
    for (unsigned r = 0; r < vectors; ++r)
      m << "        EACH3 max.f32, V10, V10, " << v(30 + r) << ", V20, V20, " << v(34 + r) << "\n";
    m << ".endm\n.macro ROW_EXP\n";
    for (unsigned r = 0; r < vectors; ++r)
      m << "        EACH3 sub.f32, " << v(22 + r) << ", " << v(30 + r) << ", V14, " << v(26 + r) << ", " << v(34 + r) << ", V14\n";
    for (unsigned r = 0; r < vectors; ++r)
      m << "        EACH2 special.exp.f32, " << v(22 + r) << ", " << v(22 + r) << ", " << v(26 + r) << ", " << v(26 + r) << "\n";
    m << "        mov.f32 V10, 0.0\n        mov.f32 V20, 0.0\n";
    for (unsigned r = 0; r < vectors; ++r)
      m << "        EACH3 add.f32, V10, V10, " << v(22 + r) << ", V20, V20, " << v(26 + r) << "\n";
    m << ".endm\n";
  }
  m << ".macro ROW_STORE\n";
  for (unsigned r = 0; r < vectors; ++r)
    m << "        EACH3 " << (backward ? "SMB_OUT" : "SMS_OUT") << ", " << out_lo[r] << ", " << v(30 + r) << ", " << v(22 + r) << ", "
      << out_hi[r] << ", " << v(34 + r) << ", " << v(26 + r) << "\n";
  m << "        imov I3, I2\n";
  for (unsigned r = 0; r < vectors; ++r)
    m << "        NARROW " << out_lo[r] << ", " << out_hi[r] << "\n        st_tnsr I3, " << (backward ? 2 : 1)
      << ", V9; iadd_dim I3, LANES dim=0\n";
  m << ".endm\n";
  return m.str();
}

}  // namespace

// Each macro for bank A (V10.., at I2) and bank B (V14.., at I3).
std::string glue::optim_bank_macros(size_t states, size_t out_base, const std::string& wd, const std::string& decay) {
  std::ostringstream m;
  m << ".macro WD_GRAD\n";
  if (!wd.empty())
    m << "        mul.f32 V4, V10, " << wd << "\n        mul.f32 V18, V14, " << wd << "\n        add.f32 V11, V11, V4\n"
      << "        add.f32 V15, V15, V18\n";
  m << ".endm\n.macro DECOUPLED_WD\n";
  if (!decay.empty()) m << "        mul.f32 V10, V10, " << decay << "\n        mul.f32 V14, V14, " << decay << "\n";
  m << ".endm\n.macro LOAD_STATES\n";
  for (size_t k = 2; k < 2 + states; ++k)
    m << "        ld_tnsr V" << 10 + k << ", I2, " << k << "\n        ld_tnsr V" << 14 + k << ", I3, " << k << "\n";
  m << ".endm\n.macro STORE_STATES\n";
  for (size_t k = 2; k < 2 + states; ++k) m << "        st_tnsr I2, " << out_base + k - 1 << ", V" << 10 + k << "\n";
  for (size_t k = 2; k + 1 < 2 + states; ++k) m << "        st_tnsr I3, " << out_base + k - 1 << ", V" << 14 + k << "\n";
  m << ".endm\n.macro STORE_LAST\n        ";
  if (states > 0) m << "st_tnsr I3, " << out_base + states << ", V" << 15 + states << "; ";
  m << "iadd_dim I2, LANES dim=0\n.endm\n";
  return m.str();
}

namespace {

uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

}  // namespace

// Whether layernorm_bwd takes the list-scheduled row kernel (glue::layernorm_bwd_scheduled).
bool KernelLibrary::scheduled_layernorm_bwd(const KernelDef& def, const KernelParams& p, bool kernel_file) const {
  const uint32_t n0 = padded((p.inputs.empty() ? p.outputs[0] : p.inputs[0]).shape)[0];
  const unsigned halves = def.out == DType::BF16 ? 2 : 1;   // f32 vectors a vector of the tensors holds
  return def.kind == Kind::LayerNormBwd && !kernel_file && (def.out == DType::F32 || def.out == DType::BF16) &&
         (n0 + lanes_of(def.out) - 1) / lanes_of(def.out) * halves <= kShortRowRegisters;
}

InstantiateResult KernelLibrary::instantiate_batch3(const KernelDef& def, const KernelParams& p, bool kernel_file,
                                                    bool f32_partials) {
  InstantiateResult result;
  Instantiation inst;
  inst.guid = def.guid;
  const unsigned lanes = lanes_of(def.out);
  const std::string t = tpc::dtype_name(def.out);
  // f32 dropout steps two vectors at a time (two interleaved banks; io_f32x2.inc); the forward's
  // list-scheduled body (dropout_scheduled.cpp) four f32 vectors (two bf16).
  const bool dropout = def.kind == Kind::DropoutFwd || def.kind == Kind::DropoutBwd;
  const bool scheduled_dropout = def.kind == Kind::DropoutFwd && !kernel_file;
  // random numbers and ranges: four f32 vectors a step (two bf16; generator_scheduled.cpp).
  const bool scheduled_random =
      (def.kind == Kind::RandomUniform || def.kind == Kind::RandomNormal || def.kind == Kind::Range) && !kernel_file;
  // where with no input broadcast along dim 0 steps one u8 vector of cond (where_scheduled.cpp).
  const bool scheduled_where = def.kind == Kind::Where && !kernel_file && [&] {
    for (const TensorParams& in : p.inputs)
      if (padded(in.shape)[0] != padded(p.outputs[0].shape)[0]) return false;
    return true;
  }();
  // optim.s (the kernel file) steps two vectors; the library's optimizers four (optim_step.cpp).
  // layernorm_bwd_gamma_beta steps kGammaBetaColumns f32 vectors (layernorm_gamma_beta.cpp; bf16
  // half as many vectors, two columns each).
  const bool gamma_beta_columns = def.kind == Kind::LayerNormBwdGB && !kernel_file;
  const unsigned unroll = def.kind == Kind::Optim ? (kernel_file ? 2 : glue::kOptimStepVectors)
                          : scheduled_dropout || scheduled_random ? (def.out == DType::BF16 ? 2 : 4)
                          : scheduled_where               ? lanes_of(DType::U8) / lanes_of(def.out)
                          : dropout && def.out == DType::F32 ? 2
                          : gamma_beta_columns             ? glue::kGammaBetaColumns / (def.out == DType::BF16 ? 2 : 1)
                                                           : 1;
  const char* io = def.out == DType::BF16 ? "io_bf16.inc" : dropout && unroll == 2 ? "io_f32x2.inc" : "io_f32.inc";
  const TensorParams& x = p.inputs.empty() ? p.outputs[0] : p.inputs[0];
  const auto px = padded(x.shape);
  const int32_t L = static_cast<int32_t>(lanes);
  const AccessPatternDim vec0{0, L, 0, L - 1};
  const AccessPatternDim row0{0, 0, 0, static_cast<int32_t>(px[0]) - 1};
  const AccessPatternDim first0{0, 0, 0, 0};
  auto vectors = [&](uint32_t n) { return static_cast<int32_t>((n + lanes - 1) / lanes); };
  for (const TensorParams& tp : p.inputs) inst.inputs.push_back(descriptor_of(tp));
  for (const TensorParams& tp : p.outputs) inst.outputs.push_back(descriptor_of(tp));
  inst.input_patterns.resize(p.inputs.size());
  inst.output_patterns.resize(p.outputs.size());
  std::ostringstream src, variant;
  std::vector<std::string> step_prefetches;   // a list-scheduled body's own PREFETCH_STEP
  // What the kernel streams along dim 0 is prefetched (kernels/nest.inc): every optimizer input,
  // layernorm's X (and its backward's grad), a permute view's X.
  std::vector<unsigned> prefetched;
  if (def.kind == Kind::Optim)
    for (size_t k = 0; k < p.inputs.size(); ++k) prefetched.push_back(static_cast<unsigned>(k));
  // (gamma and beta too, read with every row, where they are not kept in VLM. The backward's row
  // statistics are prefetched a few rows ahead by the scheduled kernel itself: with PREFETCH_ROW's
  // vectors the stride-0 gamma reads of the rows ahead fell into one buffer entry and missed.)
  if (def.kind == Kind::LayerNormFwd) prefetched = p.inputs.size() == 3 ? std::vector<unsigned>{0, 1, 2} : std::vector<unsigned>{0};
  // The scheduled backward (layernorm_rows.cpp) keeps gamma in VLM: not prefetched with each row.
  if (def.kind == Kind::LayerNormBwd)
    prefetched = p.inputs.size() == 5 && !scheduled_layernorm_bwd(def, p, kernel_file) ? std::vector<unsigned>{0, 1, 4}
                                                                                      : std::vector<unsigned>{0, 1};
  if (def.kind == Kind::Permute && permutation_of(def, p)[0] == 0) prefetched = {0};
  if (def.kind == Kind::DropoutFwd) prefetched = {0};
  if (def.kind == Kind::DropoutBwd) prefetched = {0, 1};
  // where's inputs unless broadcast along dim 0.
  // (The scheduled where prefetches cond itself, a u8 vector a step, as far ahead as A's and B's
  // `where_ahead` vectors: a / unroll entries of the budget, 2a + a / unroll in all.)
  if (def.kind == Kind::Where)
    for (unsigned k = scheduled_where ? 1 : 0; k < 3; ++k)
      if (padded(p.inputs[k].shape)[0] != 1 || padded(p.outputs[0].shape)[0] == 1) prefetched.push_back(k);
  const unsigned where_ahead = scheduled_where ? prefetch_budget() * unroll / (2 * unroll + 1) : 0;
  src << "// " << def.guid << ": the glue's prelude for the kernel file included at the end\n"
      << width_prelude(prefetched,
                       static_cast<uint32_t>((padded(p.inputs.empty() ? p.outputs[0].shape : p.inputs[0].shape)[0] +
                                              lanes_of(def.out) - 1) / lanes_of(def.out)),
                       unroll, scheduled_dropout || scheduled_where ? &step_prefetches : nullptr,
                       scheduled_where ? prefetch_budget() - 2 * where_ahead : 0);
  if (def.kind != Kind::Permute && def.kind != Kind::Gather && !is_strided(def.kind))
    src << ".equ LANES " << lanes * unroll << "\n";   // per variant
  // gamma / beta ([N0]) repeated along X's dims 1..4 with stride 0.
  auto repeat_row = [&](DescriptorTemplate& d) {
    d.dims = static_cast<uint8_t>(std::max<size_t>(x.shape.size(), 1));
    for (unsigned k = 1; k < kMaxDims; ++k) {
      d.size[k] = px[k];
      d.stride[k] = 0;
    }
  };
  switch (def.kind) {
    case Kind::LayerNormFwd:
    case Kind::LayerNormBwd: {
      const bool fwd = def.kind == Kind::LayerNormFwd;
      const bool affine = p.inputs.size() == (fwd ? 3u : 5u);
      inst.ispace_geometry = {1, static_cast<int32_t>(px[1]), static_cast<int32_t>(px[2]), static_cast<int32_t>(px[3]),
                              static_cast<int32_t>(px[4])};
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        const bool stat = !fwd && (k == 2 || k == 3);
        const bool param = (fwd && k >= 1) || (!fwd && k == 4);
        inst.input_patterns[k] = pattern_of(stat ? first0 : row0, px, false);
        if (param) {
          repeat_row(inst.inputs[k]);
          for (unsigned d = 1; d < kMaxDims; ++d) inst.input_patterns[k][d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, 0};
        }
      }
      for (size_t k = 0; k < p.outputs.size(); ++k) inst.output_patterns[k] = pattern_of(k == 0 ? row0 : first0, px, false);
      inst.srf[0] = px[0];
      inst.srf[1] = f32_bits(static_cast<float>(px[0]));
      variant << (fwd ? "layernorm fwd " : "layernorm bwd ") << t << (affine ? " affine" : "");
      src << ".include \"" << io << "\"\n";
      if (fwd) {
        inst.srf[2] = f32_bits(p.scalars[0]);
        src << ".equ OUT_Y " << p.inputs.size() << "\n.macro LN_AFFINE d, D\n";
        if (affine)
          src << "        LDW V12, V22, I3, 1\n        EACH3 mul.f32, \\d, \\d, V12, \\D, \\D, V22\n"
              << "        LDW V12, V22, I3, 2\n        EACH3 add.f32, \\d, \\d, V12, \\D, \\D, V22\n";
        src << ".endm\n";
        const uint32_t row_vectors = static_cast<uint32_t>((px[0] + lanes - 1) / lanes);
        if (row_vectors <= (def.out == DType::BF16 ? kShortRowRegisters / 2 : kShortRowRegisters)) {
          variant << " short " << row_vectors;
          src << layernorm_row_macros(row_vectors) << ".include \"layernorm_fwd_short.s\"\n";
        } else {
          src << ".include \"layernorm_fwd.s\"\n";
        }
      } else {
        src << ".equ OUT_T " << p.inputs.size() << "\n.macro LN_GAMMA d, D\n";
        if (affine) src << "        LDW V13, V23, I3, 4\n        EACH3 mul.f32, \\d, \\d, V13, \\D, \\D, V23\n";
        src << ".endm\n";
        const uint32_t row_vectors = static_cast<uint32_t>((px[0] + lanes - 1) / lanes);
        if (scheduled_layernorm_bwd(def, p, kernel_file)) {
          variant << " scheduled " << row_vectors;
          src << layernorm_bwd_scheduled(def.out == DType::BF16 ? 2 * row_vectors : row_vectors, affine, p.inputs.size(),
                                         def.out == DType::BF16);
        } else if (row_vectors <= (def.out == DType::BF16 ? kShortRowRegisters / 2 : kShortRowRegisters)) {
          variant << " short " << row_vectors;
          src << layernorm_bwd_row_macros(row_vectors, def.out == DType::BF16) << ".include \"layernorm_bwd_short.s\"\n";
        } else {
          src << ".include \"layernorm_bwd.s\"\n";
        }
      }
      break;
    }
    case Kind::LayerNormBwdGB: {
      const int32_t step_lanes = L * static_cast<int32_t>(unroll);
      const AccessPatternDim step0{0, step_lanes, 0, step_lanes - 1};
      inst.ispace_geometry = {static_cast<int32_t>((px[0] + step_lanes - 1) / step_lanes), 1, 1, 1, 1};
      for (size_t k = 0; k < 4; ++k) inst.input_patterns[k] = pattern_of(k < 2 ? step0 : first0, px, true);
      for (size_t k = 0; k < 2; ++k) inst.output_patterns[k] = pattern_of(step0, padded({px[0]}), false);
      for (unsigned d = 1; d < kMaxDims; ++d) inst.srf[3 + d] = px[d];
      variant << "layernorm bwd gamma beta " << t;
      if (gamma_beta_columns) {
        // A row's prefetches: every vector of grad and x, and its mean and rstd.
        const unsigned rows_ahead = std::clamp(prefetch_budget() / (2 * unroll + 2), 1u, 16u);
        const bool bf16 = def.out == DType::BF16;
        variant << " " << glue::kGammaBetaColumns << " columns scheduled";
        if (bf16 && f32_partials) {
          for (DescriptorTemplate& d : inst.outputs) d.dtype = DType::F32;
          variant << " f32 partials";
        }
        inst.srf[3] = 1;   // column steps per dim-4 step (a split's row chunks set more)
        src << glue::layernorm_gamma_beta_columns(glue::kGammaBetaColumns, rows_ahead, bf16, f32_partials);
        break;
      }
      const std::string block = glue::layernorm_gamma_beta_block(embedded_source(io).value_or(""));
      if (block.empty()) {
        result.status = GlueStatus::InternalError;
        result.message = def.guid + ": " + io + " lacks a macro the row block calls";
        return result;
      }
      if (f32_partials && def.out == DType::BF16) {
        // The sums unrounded: lo at the step's first element, hi F32_LANES on.
        for (DescriptorTemplate& d : inst.outputs) d.dtype = DType::F32;
        variant << " f32 partials";
        src << ".macro STORE_SUMS\n        imov I3, I2\n        iadd_dim I3, F32_LANES dim=0\n"
            << "        st_tnsr I2, 4, V10\n        st_tnsr I3, 4, V20\n        st_tnsr I2, 5, V18\n"
            << ".endm\n.macro STORE_LAST\n        st_tnsr I3, 5, V28; iadd_dim I2, LANES dim=0\n.endm\n";
      } else {
        src << ".macro STORE_SUMS\n        NARROW V10, V20\n        st_tnsr I2, 4, V9\n        NARROW V18, V28\n"
            << ".endm\n.macro STORE_LAST\n        st_tnsr I2, 5, V9; iadd_dim I2, LANES dim=0\n.endm\n";
      }
      src << ".include \"" << io << "\"\n" << block << ".include \"layernorm_bwd_gb.s\"\n";
      break;
    }
    case Kind::NllFwd:
    case Kind::NllBwd: {
      const bool fwd = def.kind == Kind::NllFwd;
      const TensorParams& logp = fwd ? p.inputs[0] : p.outputs[0];
      const auto pl = padded(logp.shape);
      TensorAccessPattern scalar_pat;
      for (unsigned d = 0; d < kMaxDims; ++d) scalar_pat[d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, 0};
      const bool ignore = !p.scalars.empty();
      const int32_t ignore_index = ignore ? static_cast<int32_t>(p.scalars[0]) : 0;
      // The target viewed as [1, N] (with_unit_dim0).
      inst.inputs[1] = with_unit_dim0(inst.inputs[1]);
      // Samples prefetched ahead: the target and (forward) the logp row of each.
      src << ".equ AHEAD " << std::min(prefetch_ahead(fwd ? 2 : 1), kNllPrefetchSamples) << "\n";
      if (fwd) {
        inst.ispace_geometry = {1, 1, 1, 1, 1};
        TensorAccessPattern all = scalar_pat;
        all[0].end_b = static_cast<int32_t>(pl[0]) - 1;
        all[1].end_b = static_cast<int32_t>(pl[1]) - 1;
        inst.input_patterns[0] = all;
        inst.input_patterns[1] = scalar_pat;
        inst.input_patterns[1][1].end_b = static_cast<int32_t>(pl[1]) - 1;
        inst.output_patterns = {scalar_pat, scalar_pat};
        inst.inputs[0].padding = def.out == DType::BF16 ? 0x7FC0u : 0x7FC00000u;   // NaN: a bad target
        inst.srf[0] = pl[1];
        inst.srf[1] = static_cast<uint32_t>(ignore_index);
        inst.srf[2] = ignore ? 1 : 0;
        variant << "nll_loss fwd " << t;
        src << ".include \"nll_loss_fwd.s\"\n";
      } else {
        inst.ispace_geometry = {vectors(pl[0]), static_cast<int32_t>(pl[1]), 1, 1, 1};
        inst.input_patterns = {scalar_pat, scalar_pat, scalar_pat};
        inst.input_patterns[1][1] = AccessPatternDim{1, 1, 0, 0};   // target[n] for dx's row n
        inst.output_patterns[0] = pattern_of(vec0, pl, false);
        inst.srf[0] = static_cast<uint32_t>(ignore_index);
        inst.srf[1] = ignore ? 1 : 0;
        variant << "nll_loss bwd " << t;
        src << ".include \"" << io << "\"\n.include \"nll_loss_bwd.s\"\n";
      }
      break;
    }
    case Kind::Permute: {
      const auto perm = permutation_of(def, p);
      std::array<unsigned, kMaxDims> inv{};
      for (unsigned d = 0; d < kMaxDims; ++d) inv[perm[d]] = d;
      const auto py = padded(p.outputs[0].shape);
      const auto xs = strides_of(x);
      const bool gather = perm[0] != 0;
      inst.ispace_geometry = {gather ? static_cast<int32_t>(py[0]) : vectors(py[0]), static_cast<int32_t>(py[1]),
                              static_cast<int32_t>(py[2]), static_cast<int32_t>(py[3]), static_cast<int32_t>(py[4])};
      // X's dim k is walked by the index space's dim inv[k] (Y's dim inv[k]).
      for (unsigned k = 0; k < kMaxDims; ++k)
        inst.input_patterns[0][k] = AccessPatternDim{static_cast<uint8_t>(inv[k]), 1, 0, 0};
      inst.output_patterns[0] = pattern_of(AccessPatternDim{0, 1, 0, 0}, py, false);
      if (!gather) {
        // A view of X in Y's coordinates: Y's dim d reads X's dim perm[d] (dim 0 stays contiguous).
        DescriptorTemplate& view = inst.inputs[0];
        view.dims = inst.outputs[0].dims;
        for (unsigned d = 0; d < kMaxDims; ++d) {
          view.size[d] = py[d];
          view.stride[d] = xs[perm[d]];
        }
        inst.input_patterns[0][0] = vec0;
        inst.output_patterns[0][0] = vec0;
        if (vectors(py[0]) == 1 && py[1] > 1) {
          variant << "permute rows " << t;
          src << ".equ LANES " << lanes << "\n.equ ROWS_AHEAD " << prefetch_budget() << "\n.include \"permute_rows.s\"\n";
        } else {
          variant << "permute view " << t;
          src << ".equ LANES " << lanes << "\n.macro ROW_SETUP\n.endm\n.include \"permute_view.s\"\n";
        }
      } else if (!kernel_file && ((tpc::dtype_bits(def.out) == 32 && lanes <= 64) ||
                                  (tpc::dtype_bits(def.out) == 16 && lanes <= 128))) {
        // Tiles transposed in registers (tile_transpose.cpp), as raw bits.
        const DType raw = tpc::dtype_bits(def.out) == 16 ? DType::U16 : DType::U32;
        const unsigned q = inv[0];
        const int32_t L = static_cast<int32_t>(lanes);
        inst.ispace_geometry[0] = vectors(py[0]);
        inst.ispace_geometry[q] = static_cast<int32_t>((py[q] + lanes - 1) / lanes);
        inst.inputs[0].dtype = raw;
        inst.outputs[0].dtype = raw;
        inst.input_patterns[0][0] = AccessPatternDim{static_cast<uint8_t>(q), L, 0, L - 1};
        inst.input_patterns[0][perm[0]] = vec0;
        inst.output_patterns[0][0] = vec0;
        inst.output_patterns[0][q] = AccessPatternDim{static_cast<uint8_t>(q), L, 0, L - 1};
        variant << "permute tiles " << t << " perm";
        for (unsigned d = 0; d < kMaxDims; ++d) variant << " " << perm[d];
        src << ".equ LANES " << lanes << "\n" << glue::tile_transpose_kernel(perm, lanes, tpc::dtype_bits(def.out));
      } else {
        // Raw bits through the scalar moves: the unsigned type of the element's width.
        const DType raw = def.out == DType::BF16 ? DType::U16 : DType::U32;
        inst.inputs[0].dtype = raw;
        inst.outputs[0].dtype = raw;
        variant << "permute gather " << t << " perm";
        for (unsigned d = 0; d < kMaxDims; ++d) variant << " " << perm[d];
        src << ".equ LANES 1\n.equ XDIM0 " << perm[0] << "\n.macro ROW_SETUP\n";
        for (unsigned d = 0; d < kMaxDims; ++d)
          src << "        iget_dim S16, I2 dim=" << d << "\n        imov_dim I3, S16 dim=" << perm[d] << "\n";
        src << ".endm\n.include \"permute_gather.s\"\n";
      }
      break;
    }
    case Kind::EmbeddingFwd: {
      const auto py = padded(p.outputs[0].shape);
      const auto pw = padded(p.inputs[0].shape);
      const uint32_t row_vectors = static_cast<uint32_t>(vectors(py[0]));
      const uint64_t n = elements(p.inputs[1]);
      const auto dense = [](const TensorParams& tp) { return flattened(tp).shape.size() <= 1; };
      // Groups of rows as many as the vector registers (one a vector of a group) and the prefetch
      // budget allow: a group's rows for each of the groups ahead and the one loading, and the
      // indices of kEmbeddingIndicesAhead + 1 groups.
      const unsigned group_rows =
          row_vectors == 0 ? 0
                           : std::min({kEmbeddingGroupRows, kEmbeddingRowVectors / row_vectors,
                                       prefetch_budget() / (kEmbeddingRowsAhead * row_vectors + kEmbeddingIndicesAhead + 1)});
      if (!kernel_file && row_vectors <= kEmbeddingRowVectors && group_rows > 0 && dense(p.inputs[1]) &&
          dense(p.outputs[0]) && n > 0 && n <= INT32_MAX) {
        // Software-pipelined groups of rows (embedding_rows.cpp): the indices viewed as [1, N] (a
        // read at (0, n) is index n alone, what its prefetch brings), Y as [D, N].
        const unsigned step_rows = group_rows * (kEmbeddingRowsAhead + 1);
        const uint32_t steps = static_cast<uint32_t>((n + step_rows - 1) / step_rows);
        const TensorParams index_view{p.inputs[1].dtype, {1, static_cast<uint32_t>(n)}, {}};
        const TensorParams y_view{p.outputs[0].dtype, {py[0], static_cast<uint32_t>(n)}, {}};
        inst.inputs[1] = descriptor_of(index_view);
        inst.outputs[0] = descriptor_of(y_view);
        inst.ispace_geometry = {1, static_cast<int32_t>(steps), 1, 1, 1};
        const int32_t R = static_cast<int32_t>(step_rows);
        inst.input_patterns[0] = pattern_of(vec0, pw, true);
        inst.input_patterns[1] = pattern_of(AccessPatternDim{0, 0, 0, 0}, padded(index_view.shape), false);
        inst.input_patterns[1][1] = AccessPatternDim{1, R, 0, R - 1};
        inst.output_patterns[0] = pattern_of(row0, padded(y_view.shape), false);
        inst.output_patterns[0][1] = AccessPatternDim{1, R, 0, R - 1};
        variant << "embedding fwd " << t << " groups of " << group_rows << " rows";
        src << glue::embedding_fwd_pipelined(group_rows, row_vectors, kEmbeddingRowsAhead, kEmbeddingIndicesAhead);
        break;
      }
      inst.ispace_geometry = {vectors(py[0]), static_cast<int32_t>(py[1]), static_cast<int32_t>(py[2]),
                              static_cast<int32_t>(py[3]), static_cast<int32_t>(py[4])};
      // weight: any row (data-dependent); indices: dim k is walked by the index space's dim k + 1.
      inst.input_patterns[0] = pattern_of(vec0, pw, true);
      for (unsigned k = 0; k < kMaxDims; ++k)
        inst.input_patterns[1][k] = k < 4 ? AccessPatternDim{static_cast<uint8_t>(k + 1), 1, 0, 0}
                                          : AccessPatternDim{static_cast<uint8_t>(k), 0, 0, 0};
      inst.output_patterns[0] = pattern_of(vec0, py, false);
      variant << "embedding fwd " << t;
      src << ".include \"embedding_fwd.s\"\n";
      break;
    }
    case Kind::EmbeddingBwd: {
      const auto pg = padded(p.inputs[0].shape);
      const auto pi = padded(p.inputs[1].shape);
      const auto pw = padded(p.outputs[0].shape);
      // Chunks of rows accumulated in VLM (64 KB of the 80), one f32 vector per row (two for
      // bf16: a bf16 vector widens into lo / hi).
      const bool bf = def.out == DType::BF16;
      const int32_t row_bytes = static_cast<int32_t>((bf ? 2 : 1) * vector_bits_ / 8);
      const int32_t rows = static_cast<int32_t>(kEmbeddingBwdVlmBytes) / row_bytes;
      inst.ispace_geometry = {vectors(pw[0]), static_cast<int32_t>((pw[1] + rows - 1) / rows), 1, 1, 1};
      inst.input_patterns[0] = pattern_of(vec0, pg, true);
      inst.input_patterns[1] = pattern_of(AccessPatternDim{0, 0, 0, static_cast<int32_t>(pi[0]) - 1}, pi, true);
      inst.output_patterns[0] = pattern_of(vec0, pw, false);
      inst.output_patterns[0][1] = AccessPatternDim{1, rows, 0, rows - 1};
      const bool has_pad = !p.scalars.empty();
      int32_t pad = has_pad ? static_cast<int32_t>(p.scalars[0]) : 0;
      if (pad < 0) pad += static_cast<int32_t>(pw[1]);   // PyTorch's negative padding_idx
      inst.srf[0] = pw[1];
      inst.srf[1] = static_cast<uint32_t>(pad);
      inst.srf[2] = has_pad ? 1 : 0;
      for (unsigned d = 0; d < 4; ++d) inst.srf[4 + d] = pi[d];
      // The indices viewed as [1, their dims...]: a read at (0, n, ...) is index n alone, what its
      // prefetch brings (the walk prefetches kNllPrefetchSamples indices ahead).
      inst.inputs[1] = with_unit_dim0(inst.inputs[1]);
      for (unsigned d = kMaxDims - 1; d > 0; --d) inst.input_patterns[1][d] = inst.input_patterns[1][d - 1];
      inst.input_patterns[1][0] = AccessPatternDim{0, 0, 0, 0};
      for (unsigned d = 1; d < kMaxDims; ++d) inst.input_patterns[1][d].ispace_dim = static_cast<uint8_t>(d);
      src << ".macro INDICES_AHEAD\n";
      for (unsigned k = 0; k < kNllPrefetchSamples; ++k) src << "        prefetch I6, 1; iadd_dim I6, 1 dim=1\n";
      src << ".endm\n";
      variant << "embedding bwd " << t;
      src << ".include \"" << io << "\"\n.equ ROWS " << rows << "\n.equ ROWB " << row_bytes << "\n"
          << ".macro VLD lo, hi, addr\n        ld_vlm.f32 \\lo, \\addr\n";
      if (bf) src << "        add.i32 S18, \\addr, VECTOR_BYTES\n        ld_vlm.f32 \\hi, S18\n";
      src << ".endm\n.macro VST addr, lo, hi\n        st_vlm \\addr, \\lo\n";
      if (bf) src << "        add.i32 S18, \\addr, VECTOR_BYTES\n        st_vlm S18, \\hi\n";
      src << ".endm\n.include \"embedding_bwd.s\"\n";
      break;
    }
    case Kind::Where: {
      // Broadcasting as the binary kernels: stride 0 along dims >= 1, a variant per dim-0 broadcast input.
      const auto py = padded(p.outputs[0].shape);
      const size_t rank = std::max<size_t>(p.outputs[0].shape.size(), 1);
      // The scheduled kernel's step: one u8 vector of cond, `unroll` vectors of A, B and Y.
      const int32_t S = L * static_cast<int32_t>(unroll);
      const AccessPatternDim step0 = scheduled_where ? AccessPatternDim{0, S, 0, S - 1} : vec0;
      inst.ispace_geometry = {scheduled_where ? static_cast<int32_t>((py[0] + S - 1) / S) : vectors(py[0]),
                              static_cast<int32_t>(py[1]), static_cast<int32_t>(py[2]), static_cast<int32_t>(py[3]),
                              static_cast<int32_t>(py[4])};
      const DType raw = def.out == DType::BF16 ? DType::U16 : DType::U32;   // raw bits through sel
      const std::string rt = tpc::dtype_name(raw);
      // cond's load reads a whole u8 vector at the step's coordinate (the first L lanes are used).
      const int32_t cond_lanes = static_cast<int32_t>(lanes_of(DType::U8));
      bool bcast0[3] = {false, false, false};
      for (size_t k = 0; k < 3; ++k) {
        const auto pi = padded(p.inputs[k].shape);
        DescriptorTemplate& desc = inst.inputs[k];
        desc.dims = static_cast<uint8_t>(std::max<size_t>(rank, std::max<size_t>(p.inputs[k].shape.size(), 1)));
        if (k > 0) desc.dtype = raw;
        TensorAccessPattern pat =
            pattern_of(k == 0 ? AccessPatternDim{0, S, 0, cond_lanes - 1} : step0, py, false);
        for (unsigned d = 0; d < kMaxDims; ++d) {
          if (pi[d] != 1 || py[d] == 1) continue;
          pat[d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, 0};
          if (d == 0) {
            bcast0[k] = true;
          } else {
            desc.size[d] = py[d];
            desc.stride[d] = 0;
          }
        }
        inst.input_patterns[k] = pat;
      }
      inst.outputs[0].dtype = raw;
      inst.output_patterns[0] = pattern_of(step0, py, false);
      if (scheduled_where) {
        variant << "where " << t << " scheduled";
        src << glue::where_fwd_scheduled(rt, unroll, std::max(1u, where_ahead / unroll), step_prefetches);
        break;
      }
      variant << "where " << t;
      for (size_t k = 0; k < 3; ++k)
        if (bcast0[k]) variant << " bcast-" << k << "0";
      src << ".macro LOAD_C\n";
      if (!bcast0[0]) src << "        ld_tnsr V1, I2, 0\n        cmp.ne.u8 VP2, V1, 0\n";
      src << ".endm\n.macro LOAD_A\n";
      if (!bcast0[1]) src << "        ld_tnsr V2, I2, 1\n";
      src << ".endm\n.macro LOAD_B\n";
      if (!bcast0[2]) src << "        ld_tnsr V3, I2, 2\n";
      src << ".endm\n.macro ROW_SETUP\n";
      if (bcast0[0]) src << "        BCAST_ROW V1, 0, u8\n        cmp.ne.u8 VP2, V1, 0\n";
      if (bcast0[1]) src << "        BCAST_ROW V2, 1, " << rt << "\n";
      if (bcast0[2]) src << "        BCAST_ROW V3, 2, " << rt << "\n";
      src << ".endm\n.macro WHERE_SEL d\n        sel." << rt << " \\d, V2, V3, VP2\n.endm\n.include \"where_fwd.s\"\n";
      break;
    }
    case Kind::Gather: {
      // kGatherStepElements elements of dim 0 a step (the index space is Y's (= index's) shape,
      // dim 0 in those), the next step's indices read while this one's elements are: a step waits
      // about one memory latency instead of two per element.
      const unsigned gdim = static_cast<unsigned>(p.scalars[0]);
      const auto py = padded(p.outputs[0].shape);
      const int32_t k = static_cast<int32_t>(kGatherStepElements);
      inst.ispace_geometry = {static_cast<int32_t>((py[0] + k - 1) / k), static_cast<int32_t>(py[1]),
                              static_cast<int32_t>(py[2]), static_cast<int32_t>(py[3]), static_cast<int32_t>(py[4])};
      const DType raw = def.out == DType::BF16 ? DType::U16 : DType::U32;
      inst.inputs[0].dtype = raw;
      inst.outputs[0].dtype = raw;
      const AccessPatternDim step0{0, k, 0, k - 1};
      inst.output_patterns[0] = pattern_of(step0, py, false);
      inst.input_patterns[1] = pattern_of(step0, py, false);
      inst.input_patterns[0] = pattern_of(step0, py, false);
      // X along dim: any element (data-dependent).
      inst.input_patterns[0][gdim] = AccessPatternDim{static_cast<uint8_t>(gdim), 0, 0, static_cast<int32_t>(px[gdim]) - 1};
      variant << "gather " << t << " dim " << gdim << " " << k << " a step";
      src << ".equ LANES " << k << "\n.equ GDIM " << gdim << "\n" << glue::gather_step(kGatherStepElements, gdim)
          << ".include \"gather_fwd.s\"\n";
      break;
    }
    case Kind::StridedView:
    case Kind::StridedInsert: {
      // The index space is the view's (strided_view: Y, strided_insert: S); the flat tensor (X of
      // the view, Y of the insert) is described in the view's coordinates: size[d] = the view's,
      // stride[d] = scalars[d] for d >= 1, dim 0 contiguous. The vector variant (stride[0] == 1,
      // or a view one element wide in dim 0) copies vectors at the same coordinates; otherwise one
      // element per step, the flat tensor's dim-0 coordinate c0 * stride[0] (S0).
      const bool view = def.kind == Kind::StridedView;
      const TensorParams& vt = view ? p.outputs[0] : p.inputs[1];
      const auto pv = padded(vt.shape);
      std::array<int64_t, kMaxDims> st{};
      for (size_t d = 0; d < p.scalars.size() && d < kMaxDims; ++d) st[d] = static_cast<int64_t>(p.scalars[d]);
      const bool element = st[0] != 1 && pv[0] != 1;
      inst.ispace_geometry = {element ? static_cast<int32_t>(pv[0]) : vectors(pv[0]), static_cast<int32_t>(pv[1]),
                              static_cast<int32_t>(pv[2]), static_cast<int32_t>(pv[3]), static_cast<int32_t>(pv[4])};
      DescriptorTemplate flat;
      flat.dtype = def.out;
      flat.dims = static_cast<uint8_t>(std::max<size_t>(vt.shape.size(), 1));
      for (unsigned d = 0; d < kMaxDims; ++d) {
        flat.size[d] = pv[d];
        flat.stride[d] = d == 0 ? 1 : st[d];
      }
      if (element) flat.size[0] = static_cast<uint32_t>((pv[0] - 1) * st[0] + 1);   // < n: validated
      // The flat tensor's pattern: any element (the whole 1-D tensor, conservative); the view's:
      // a vector (or an element) of dim 0 per step, one element of dims 1..4.
      const int32_t n = static_cast<int32_t>(px[0]);
      TensorAccessPattern whole_flat;
      whole_flat[0] = AccessPatternDim{0, 0, 0, n - 1};
      for (unsigned d = 1; d < kMaxDims; ++d) whole_flat[d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, 0};
      const TensorAccessPattern dense = pattern_of(element ? AccessPatternDim{0, 1, 0, 0} : vec0, pv, false);
      // Raw bits through the scalar moves: the unsigned type of the element's width.
      const DType raw = tpc::dtype_bits(def.out) == 32 ? DType::U32 : tpc::dtype_bits(def.out) == 16 ? DType::U16 : DType::U8;
      if (element) flat.dtype = raw;
      if (view) {
        inst.inputs[0] = flat;
        inst.input_patterns[0] = whole_flat;
        inst.output_patterns[0] = dense;
        if (element) inst.outputs[0].dtype = raw;
      } else {
        inst.outputs[0] = flat;
        inst.output_patterns[0] = whole_flat;
        inst.input_patterns[0] = whole_flat;   // X: not read; its memory is Y's
        inst.input_patterns[1] = dense;
        if (element) inst.inputs[1].dtype = raw;
      }
      inst.srf[0] = static_cast<uint32_t>(st[0]);
      variant << (view ? "strided view " : "strided insert ") << (element ? "element " : "vector ") << t;
      if (element)
        src << ".equ LANES 1\n.include \"" << (view ? "strided_gather.s" : "strided_scatter.s") << "\"\n";
      else
        src << ".equ LANES " << lanes << "\n.equ SRC " << (view ? 0 : 1) << "\n.equ DST " << (view ? 1 : 2)
            << "\n.macro ROW_SETUP\n.endm\n.include \"strided_copy.s\"\n";
      break;
    }
    case Kind::Range: {
      const auto py = padded(p.outputs[0].shape);
      const int32_t step = L * static_cast<int32_t>(unroll);
      inst.ispace_geometry = {static_cast<int32_t>((py[0] + step - 1) / step), static_cast<int32_t>(py[1]),
                              static_cast<int32_t>(py[2]), static_cast<int32_t>(py[3]), static_cast<int32_t>(py[4])};
      inst.output_patterns[0] = pattern_of(AccessPatternDim{0, step, 0, step - 1}, py, false);
      const uint64_t n = elements(p.outputs[0]);
      const bool f32 = def.out == DType::F32;
      for (unsigned k = 0; k < 3; ++k)
        inst.srf[k] = f32 ? f32_bits(p.scalars[k]) : static_cast<uint32_t>(static_cast<int32_t>(p.scalars[k]));
      // i < halfway <=> i < ceil(halfway) for an integer i; clamped to 0 .. n.
      const double h = std::min(std::max(std::ceil(static_cast<double>(p.scalars[3])), 0.0), static_cast<double>(n));
      inst.srf[3] = static_cast<uint32_t>(h);
      inst.srf[4] = static_cast<uint32_t>(n - 1);
      for (unsigned d = 0; d < 4; ++d) inst.srf[5 + d] = py[d];
      variant << "range " << t;
      src << ".macro VALUES d\n        RANGE_VALUES " << t << ", " << (f32 ? "convert.i32.f32" : "mov.i32")
          << ", \\d\n.endm\n";
      if (!scheduled_random) {
        src << ".include \"range_fwd.s\"\n";
        break;
      }
      // range_fwd.s's lines for one vector, four vectors a step (generator_scheduled.cpp).
      const std::string kernel = embedded_source("range_fwd.s").value_or("");
      glue::GeneratorBody g;
      g.definitions = kernel + src.str();
      g.step = {"iget_dim S10, I2 dim=0", "add.i32 S10, S10, S9"};
      g.per_vector = {"add.i32 V1, V16, S10", "sub.i32 V2, V17, V1", "cmp.lt.i32 VP2, V1, S3", "VALUES V5"};
      g.value = "V5";
      const std::string cvt = f32 ? "convert.i32.f32" : "mov.i32";
      if (h >= static_cast<double>(n)) {
        // Every element is below the halfway mark (arange): RANGE_VALUES's first value, which its
        // select would pick in every lane.
        g.per_vector = {"add.i32 V1, V16, S10", cvt + " V3, V1", "mul." + t + " V3, V3, S1", "add." + t + " V3, V3, S0"};
        g.value = "V3";
      } else if (h <= 0.0) {
        // None is (every element counted back from the end): the second value alone.
        g.per_vector = {"add.i32 V1, V16, S10", "sub.i32 V2, V17, V1", cvt + " V4, V2", "mul." + t + " V4, V4, S1",
                        "sub." + t + " V4, V18, V4"};
        g.value = "V4";
      }
      g.shared = {"V17", "V18"};
      const std::optional<glue::GeneratorCode> code = glue::generator_scheduled(g, false, 0);
      const std::optional<std::vector<std::string>> row_base = schedule::expand_macro(kernel, "ROW_SETUP");
      if (!code || !row_base) {
        result.status = GlueStatus::InternalError;
        result.message = def.guid + ": the scheduled body does not fit the registers";
        return result;
      }
      variant << " scheduled";
      src << ".macro ROW_SETUP\n";
      for (const std::string& line : *row_base) src << "        " << line << "\n";
      src << code->row_setup << ".endm\n.include \"nest.inc\"\n        lane_id.i32 V16\n        mov.i32 V17, S4\n"
          << "        mov.i32 V18, S2\n" << code->setup << "        NEST_BEGIN\n" << code->body << "        NEST_END\n";
      break;
    }
    case Kind::RandomUniform:
    case Kind::RandomNormal: {
      const bool uniform = def.kind == Kind::RandomUniform;
      const bool seed_tensor = p.inputs.size() == 1;
      const auto py = padded(p.outputs[0].shape);
      const int32_t step = L * static_cast<int32_t>(unroll);
      inst.ispace_geometry = {static_cast<int32_t>((py[0] + step - 1) / step), static_cast<int32_t>(py[1]),
                              static_cast<int32_t>(py[2]), static_cast<int32_t>(py[3]), static_cast<int32_t>(py[4])};
      inst.output_patterns[0] = pattern_of(AccessPatternDim{0, step, 0, step - 1}, py, false);
      if (seed_tensor)
        for (unsigned d = 0; d < kMaxDims; ++d) inst.input_patterns[0][d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, 0};
      const float a = p.scalars[0], b = p.scalars[1];
      const float range = b - a;   // f32, checked finite
      inst.srf[0] = f32_bits(a);
      inst.srf[1] = f32_bits(uniform ? range : b);
      for (unsigned d = 0; d < 4; ++d) inst.srf[3 + d] = py[d];
      variant << (uniform ? "random uniform " : "random normal ") << t << (seed_tensor ? " seed tensor" : "");
      src << ".include \"" << io << "\"\n.equ Y_T " << p.inputs.size() << "\n";
      if (seed_tensor) {
        // The key from the seed tensor's element, on the core (V30 in every lane), as dropout_fwd.
        src << ".macro KEY_SETUP\n";
        for (int d = 0; d < 5; ++d) src << "        imov_dim I3, 0 dim=" << d << "\n";
        src << "        ld_tnsr_s S16, I3, 0\n        mov.i32 V30, S16\n        xor.u32 V30, V30, 0x9e3779b9\n"
            << "        MIX32 V30\n.endm\n.macro XOR_KEY d, a\n        xor.u32 \\d, \\a, V30\n.endm\n";
      } else {
        inst.srf[2] = mix32(static_cast<uint32_t>(p.scalars[2]) ^ 0x9e3779b9u);
        src << ".macro KEY_SETUP\n.endm\n.macro XOR_KEY d, a\n        xor.u32 \\d, \\a, S2\n.endm\n";
      }
      src << ".macro DRAW d, h\n        " << def.op_macro << " \\d, \\h\n.endm\n";
      if (!scheduled_random) {
        src << ".include \"random_fwd.s\"\n";
        break;
      }
      // random_fwd.s's lines for one vector, four vectors a step (generator_scheduled.cpp).
      const std::string kernel = embedded_source("random_fwd.s").value_or("");
      std::string constants;   // its .equ lines (the normal's polynomial)
      std::istringstream lines(kernel);
      for (std::string line; std::getline(lines, line);)
        if (line.rfind(".equ ", 0) == 0) constants += line + "\n";
      glue::GeneratorBody g;
      g.definitions = embedded_source("rng.inc").value_or("") + kernel + src.str();
      g.step = {"iget_dim S9, I2 dim=0", "add.i32 S9, S9, S8"};
      g.per_vector = {"add.i32 V11, V16, S9", "HASH V11, V11", "DRAW V13, V11"};
      g.value = "V13";
      if (seed_tensor) g.shared = {"V30"};
      const std::optional<glue::GeneratorCode> code = glue::generator_scheduled(g, def.out == DType::BF16, p.inputs.size());
      if (!code) {
        result.status = GlueStatus::InternalError;
        result.message = def.guid + ": the scheduled body does not fit the registers";
        return result;
      }
      variant << " scheduled";
      src << ".include \"rng.inc\"\n" << constants << ".macro ROW_SETUP\n        DENSE_ROW_BASE\n" << code->row_setup
          << ".endm\n.include \"nest.inc\"\n        KEY_SETUP\n        lane_id.i32 V16\n" << code->setup
          << "        NEST_BEGIN\n" << code->body << "        NEST_END\n";
      break;
    }
    case Kind::DropoutFwd:
    case Kind::DropoutBwd:
    case Kind::Optim: {
      const int32_t step = L * static_cast<int32_t>(unroll);
      const AccessPatternDim step0{0, step, 0, step - 1};
      inst.ispace_geometry = {static_cast<int32_t>((px[0] + step - 1) / step), static_cast<int32_t>(px[1]),
                              static_cast<int32_t>(px[2]), static_cast<int32_t>(px[3]), static_cast<int32_t>(px[4])};
      for (auto& pat : inst.input_patterns) pat = pattern_of(step0, px, false);
      for (auto& pat : inst.output_patterns) pat = pattern_of(step0, px, false);
      if (def.kind == Kind::DropoutFwd || def.kind == Kind::DropoutBwd) {
        const float prob = p.scalars[0];
        const float scale = dropout_scale(prob);
        if (def.kind == Kind::DropoutFwd && scheduled_dropout) {
          const bool seed_tensor = p.inputs.size() == 2;
          inst.srf[0] = glue::dropout_keep_threshold(prob);
          inst.srf[1] = f32_bits(scale);
          if (!seed_tensor) inst.srf[2] = mix32(static_cast<uint32_t>(p.scalars[1]) ^ 0x9e3779b9u);
          for (unsigned d = 0; d < 4; ++d) inst.srf[3 + d] = px[d];
          if (seed_tensor)
            for (auto& dim : inst.input_patterns[1]) dim = AccessPatternDim{dim.ispace_dim, 0, 0, 0};
          variant << "dropout fwd " << t << " scheduled" << (seed_tensor ? " seed tensor" : "");
          src << glue::dropout_fwd_scheduled(def.out == DType::BF16, seed_tensor, p.inputs.size(), step_prefetches);
        } else if (def.kind == Kind::DropoutFwd) {
          const bool seed_tensor = p.inputs.size() == 2;
          inst.srf[0] = f32_bits(prob);
          inst.srf[1] = f32_bits(scale);
          for (unsigned d = 0; d < 4; ++d) inst.srf[3 + d] = px[d];
          variant << "dropout fwd " << t << (seed_tensor ? " seed tensor" : "");
          src << ".include \"" << io << "\"\n.equ Y_T " << p.inputs.size() << "\n.equ MASK_T " << p.inputs.size() + 1 << "\n";
          if (seed_tensor) {
            // The key from the seed tensor's element, on the core (V30 in every lane).
            for (auto& dim : inst.input_patterns[1]) dim = AccessPatternDim{dim.ispace_dim, 0, 0, 0};
            src << ".macro KEY_SETUP\n";
            for (int d = 0; d < 5; ++d) src << "        imov_dim I3, 0 dim=" << d << "\n";
            src << "        ld_tnsr_s S16, I3, 1\n        mov.i32 V30, S16\n        xor.u32 V30, V30, 0x9e3779b9\n"
                << "        MIX32 V30\n.endm\n.macro XOR_KEY v\n        xor.u32 \\v, \\v, V30\n.endm\n";
          } else {
            inst.srf[2] = mix32(static_cast<uint32_t>(p.scalars[1]) ^ 0x9e3779b9u);
            src << ".macro KEY_SETUP\n.endm\n.macro XOR_KEY v\n        xor.u32 \\v, \\v, S2\n.endm\n";
          }
          // Y stored with I2 where it was (the mask's STW_BODY / STW_LAST step it).
          src << ".macro STORE_Y lo, hi\n";
          if (unroll == 2)
            src << "        st_tnsr I2, Y_T, \\lo; iadd_dim I2, F32_LANES dim=0\n"
                << "        st_tnsr I2, Y_T, \\hi; iadd_dim I2, -F32_LANES dim=0\n";
          else
            src << "        NARROW \\lo, \\hi\n        st_tnsr I2, Y_T, V9\n";
          src << ".endm\n.include \"dropout_fwd.s\"\n";
        } else {
          inst.srf[0] = f32_bits(scale);
          variant << "backward " << def.op_macro << " " << t;
          src << ".include \"" << io << "\"\n.equ OUT_T 2\n.macro OP d, a, b, c\n        " << def.op_macro
              << " f32, \\d, \\a, \\b\n.endm\n.macro LOAD_0\n        LDW V10, V20, I2, 0\n.endm\n"
              << ".macro LOAD_1\n        LDW V11, V21, I2, 1\n.endm\n.macro LOAD_2\n.endm\n.macro ROW_SETUP\n.endm\n"
              << ".macro OPS\n        EACH4 OP, V13, V10, V11, V12, V23, V20, V21, V22\n.endm\n"
              << ".include \"eltwise_f32.s\"\n";
        }
        break;
      }
      // Optimizers: scalars host-computed in double and rounded to f32 (as PyTorch's Python floats).
      const std::vector<float>& s = p.scalars;
      auto set = [&](unsigned r, double v) { inst.srf[r] = f32_bits(static_cast<float>(v)); };
      int wd_reg = -1;
      bool decoupled = false;
      if (def.op_macro == "OPT_SGD") {
        set(0, -static_cast<double>(s[0]));
        set(1, s[1]);
        set(2, 1.0 - static_cast<double>(s[2]));
        set(3, s[3]);
        inst.srf[15] = s[4] != 0.0f ? 1 : 0;
        if (s[3] != 0.0f) wd_reg = 3;
      } else if (def.op_macro == "OPT_ADAM") {
        const double lr = s[0], b1 = s[1], b2 = s[2], step = s[5];
        set(0, b1);
        set(1, 1.0 - b1);
        set(2, b2);
        set(3, 1.0 - b2);
        set(4, -(lr / (1.0 - std::pow(b1, step))));
        set(5, std::sqrt(1.0 - std::pow(b2, step)));
        set(6, s[3]);
        set(7, s[4]);
        set(8, 1.0 - lr * static_cast<double>(s[4]));
        decoupled = def.guid == "adamw_f32";
        if (s[4] != 0.0f && !decoupled) wd_reg = 7;
      } else {
        set(0, -static_cast<double>(s[0]));
        set(1, s[1]);
        set(2, 1.0 - static_cast<double>(s[1]));
        set(3, s[2]);
        set(4, s[3]);
        if (s[3] != 0.0f) wd_reg = 4;
      }
      const size_t nin = p.inputs.size();
      variant << "optim " << def.op_macro << (decoupled ? " decoupled-wd" : "") << (wd_reg >= 0 ? " wd" : "");
      src << ".equ NIN " << nin << "\n"
          << optim_bank_macros(nin - 2, nin, wd_reg >= 0 ? "S" + std::to_string(wd_reg) : std::string(), decoupled ? "S8" : "")
          << ".macro PRE_NEST\n        cmp.ne.i32 SP5, S15, 0\n.endm\n.macro OPT_STEP\n        " << def.op_macro
          << (def.op_macro == "OPT_SGD" ? " S0, SP5" : def.op_macro == "OPT_ADAM" ? " S4, S5" : "") << "\n.endm\n";
      if (kernel_file) {
        src << ".include \"optim.s\"\n";
      } else {
        const std::string step = glue::optim_step_kernel(src.str());
        if (step.empty()) {
          result.status = GlueStatus::InternalError;
          result.message = def.guid + ": the optimizer step's macros are incomplete";
          return result;
        }
        src << step;
        variant << " x" << glue::kOptimStepVectors << " scheduled";
      }
      break;
    }
    default:
      break;
  }
  inst.variant = variant.str();
  return assembled(std::move(inst), src.str(), def.guid);
}

namespace {

}  // namespace

const char* glue_status_name(GlueStatus status) {
  switch (status) {
    case GlueStatus::Success: return "GLUE_SUCCESS";
    case GlueStatus::UnsupportedGuid: return "GLUE_NODE_NOT_FOUND";
    case GlueStatus::IncompatibleInputCount: return "GLUE_INCOMPATIBLE_INPUT_COUNT";
    case GlueStatus::IncompatibleOutputCount: return "GLUE_INCOMPATIBLE_OUTPUT_COUNT";
    case GlueStatus::IncompatibleInputSize: return "GLUE_INCOMPATIBLE_INPUT_SIZE";
    case GlueStatus::IncompatibleOutputSize: return "GLUE_INCOMPATIBLE_OUTPUT_SIZE";
    case GlueStatus::IncompatibleDataType: return "GLUE_INCOMPATIBLE_DATA_TYPE";
    case GlueStatus::IncompatibleScalarParams: return "GLUE_UNSUPPORTED_LAYER_CONFIGURATION";
    case GlueStatus::InternalError: return "GLUE_FAILED";
  }
  return "?";
}

tpc::TensorDescriptor DescriptorTemplate::make(uint64_t base) const {
  tpc::TensorDescriptor d;
  d.base = base;
  d.dtype = dtype;
  d.dims = dims;
  d.size = size;
  d.stride = stride;
  d.padding = padding;
  return d;
}

tpc::LaunchContext Instantiation::launch_context(const std::vector<uint64_t>& input_bases,
                                                 const std::vector<uint64_t>& output_bases,
                                                 const std::array<int32_t, kMaxDims>& ispace_offset,
                                                 const std::array<int32_t, kMaxDims>& ispace_size) const {
  tpc::LaunchContext ctx;
  size_t t = 0;
  for (size_t k = 0; k < inputs.size(); ++k) ctx.tensors[t++] = inputs[k].make(k < input_bases.size() ? input_bases[k] : 0);
  for (size_t k = 0; k < outputs.size(); ++k)
    ctx.tensors[t++] = outputs[k].make(k < output_bases.size() ? output_bases[k] : 0);
  ctx.ispace_offset = ispace_offset;
  ctx.ispace_size = ispace_size;
  ctx.srf = srf;
  return ctx;
}

KernelLibrary::KernelLibrary(unsigned vector_bits, unsigned prefetch_entries)
    : vector_bits_(vector_bits), prefetch_entries_(prefetch_entries) {
  if (!valid_vector_bits(vector_bits)) {
    throw std::invalid_argument("KernelLibrary: vector_bits must be a power of two in " +
                                std::to_string(kMinVectorBits) + " .. " + std::to_string(kMaxVectorBits) + ", not " +
                                std::to_string(vector_bits));
  }
  for (const KernelDef& def : kernel_table()) {
    defs_[def.guid] = &def;
    guid_list_.push_back(def.guid);
  }
  for (const char* guid : kTensorListGuids) guid_list_.push_back(guid);
  std::sort(guid_list_.begin(), guid_list_.end());
}

KernelLibrary& KernelLibrary::instance(unsigned vector_bits, unsigned prefetch_entries) {
  static std::mutex mutex;
  static std::map<std::pair<unsigned, unsigned>, std::unique_ptr<KernelLibrary>> libraries;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<KernelLibrary>& lib = libraries[{vector_bits, prefetch_entries}];
  if (!lib) lib = std::make_unique<KernelLibrary>(vector_bits, prefetch_entries);
  return *lib;
}

bool KernelLibrary::valid_vector_bits(unsigned bits) {
  return bits >= kMinVectorBits && bits <= kMaxVectorBits && (bits & (bits - 1)) == 0;
}

unsigned KernelLibrary::lanes_of(DType t) const { return vector_bits_ / tpc::dtype_bits(t); }

unsigned KernelLibrary::prefetch_ahead(size_t streamed_inputs) const {
  const unsigned fit = prefetch_budget() / static_cast<unsigned>(std::max<size_t>(1, streamed_inputs));
  return std::clamp(fit, kMinPrefetchAheadVectors, kPrefetchAheadVectors);
}

std::string KernelLibrary::width_prelude(const std::vector<unsigned>& prefetched, uint32_t row_vectors,
                                         unsigned unroll, std::vector<std::string>* step_lines,
                                         unsigned reserved_entries) const {
  const unsigned ahead_vectors =
      reserved_entries == 0
          ? prefetch_ahead(prefetched.size())
          : std::clamp((prefetch_budget() - std::min(reserved_entries, prefetch_budget())) /
                           static_cast<unsigned>(std::max<size_t>(1, prefetched.size())),
                       kMinPrefetchAheadVectors, kPrefetchAheadVectors);
  std::string text = ".equ F32_LANES " + std::to_string(lanes_of(DType::F32)) + "\n.equ VECTOR_BYTES " +
                     std::to_string(vector_bits_ / 8) + "\n";
  // One vector of every prefetched input at \ireg, then \ireg one vector on (with the last prefetch).
  // (A step of `unroll` vectors: LANES covers them all, each prefetch one.)
  const std::string vector_lanes = unroll == 1 ? "LANES" : "(LANES / " + std::to_string(unroll) + ")";
  std::string step;
  for (size_t k = 0; k < prefetched.size(); ++k) {
    step += "        prefetch \\ireg, " + std::to_string(prefetched[k]);
    step += k + 1 == prefetched.size() ? "; iadd_dim \\ireg, " + vector_lanes + " dim=0\n" : "\n";
  }
  // Short rows: the rows between the first and the one PREFETCH_ROW reaches ahead, once at the
  // start (else each of them waits a memory latency while the prefetch-ahead fills).
  std::string start;
  text += ".macro PREFETCH_ROW\n";
  if (!prefetched.empty()) {
    std::string row_step = step;
    for (size_t at = row_step.find("\\ireg"); at != std::string::npos; at = row_step.find("\\ireg")) row_step.replace(at, 5, "I7");
    const unsigned first = std::min(ahead_vectors, row_vectors);
    text += "        imov I7, I2\n";
    for (unsigned v = 0; v < first; ++v) text += row_step;
    // Short rows: the row `ahead` rows on along dim 1 too (the one this core takes that many rows
    // later), so about ahead_vectors vectors stay in flight across rows, but at most kMaxRowsAhead
    // rows on (further was slower for rows of one vector through this nest; permute_rows.s has its
    // own, longer prefetch); a row already prefetched that way is not read again.
    if (row_vectors <= ahead_vectors) {
      const unsigned ahead = std::clamp(ahead_vectors / std::max(1u, row_vectors), 1u, kMaxRowsAhead);
      text += "        imov I7, I2\n        iadd_dim I7, " + std::to_string(ahead) + " dim=1\n";
      for (unsigned v = 0; v < first; ++v) text += row_step;
      for (unsigned row = 1; row < ahead; ++row) {
        start += "        imov I7, I2\n        iadd_dim I7, " + std::to_string(row) + " dim=1\n";
        for (unsigned v = 0; v < first; ++v) start += row_step;
      }
    }
  }
  text += ".endm\n.macro PREFETCH_START\n" + start;
  std::string steps;
  if (row_vectors > ahead_vectors) {
    for (unsigned u = 0; u < unroll && step_lines != nullptr; ++u)
      for (size_t k = 0; k < prefetched.size(); ++k) {
        step_lines->push_back("prefetch I7, " + std::to_string(prefetched[k]));
        if (k + 1 == prefetched.size()) step_lines->push_back("iadd_dim I7, " + vector_lanes + " dim=0");
      }
    for (unsigned u = 0; u < unroll && step_lines == nullptr; ++u) steps += step;
  }
  text += ".endm\n.macro PREFETCH_STEP ireg\n" + steps + ".endm\n";
  return text;
}

std::vector<std::string> KernelLibrary::guids() const { return guid_list_; }

bool KernelLibrary::has_guid(const std::string& guid) const { return defs_.count(guid) != 0 || is_tensor_list(guid); }

bool KernelLibrary::per_element(const std::string& guid) const {
  const auto it = defs_.find(guid);
  if (it == defs_.end()) return false;
  switch (it->second->kind) {
    case Kind::Binary:
    case Kind::Backward:
    case Kind::Unary:
    case Kind::UnaryF32:
    case Kind::Ternary:
    case Kind::Cast:
    case Kind::Where:
    case Kind::Optim:
      return true;
    default:
      return false;
  }
}

size_t KernelLibrary::assembled_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.size();
}

std::optional<std::string> KernelLibrary::embedded_source(const std::string& name) {
  for (const EmbeddedSource& s : embedded_sources())
    if (name == s.name) return std::string(s.text);
  return std::nullopt;
}

InstantiateResult KernelLibrary::assembled(Instantiation inst, const std::string& source, const std::string& key) {
  InstantiateResult result;
  std::string error;
  inst.program = program_for(source, key, &error);
  if (!inst.program) {
    result.status = GlueStatus::InternalError;
    result.message = key + ": " + error;
    return result;
  }
  result.inst = std::move(inst);
  return result;
}

std::shared_ptr<const tpc::Program> KernelLibrary::program_for(const std::string& variant_source,
                                                               const std::string& key, std::string* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(variant_source);
  if (it != cache_.end()) return it->second;
  tpc::AssembleOptions options;
  options.read_file = [](const std::string& path) { return embedded_source(base_name(path)); };
  tpc::AssembleResult r = tpc::assemble(variant_source, key + ".prelude.s", options);
  if (!r.ok()) {
    *error = "kernel variant '" + key + "' does not assemble:\n" + r.error_text();
    return nullptr;
  }
  auto program = std::make_shared<const tpc::Program>(std::move(r.program));
  cache_.emplace(variant_source, program);
  return program;
}

InstantiateResult KernelLibrary::instantiate(const std::string& guid, const KernelParams& params) {
  if (is_tensor_list(guid)) return instantiate_tensor_list(guid, params);
  if (auto split = instantiate_split_gamma_beta(guid, params)) return std::move(*split);
  if (auto split = instantiate_split_dim0_reduction(guid, params)) return std::move(*split);
  if (auto split = instantiate_split_outer_reduction(guid, params)) return std::move(*split);
  if (auto buckets = instantiate_bucketed_embedding_bwd(guid, params)) return std::move(*buckets);
  if (auto short_reduce = instantiate_short_outer_reduction(guid, params)) return std::move(*short_reduce);
  if (auto paired = instantiate_paired_rows(guid, params)) return std::move(*paired);
  if (auto scheduled = instantiate_scheduled_single(guid, params)) return std::move(*scheduled);
  if (auto scheduled = instantiate_scheduled_layernorm(guid, params)) return std::move(*scheduled);
  if (auto rows = instantiate_row_reduction(guid, params)) return std::move(*rows);
  return instantiate_impl(guid, params, {});
}

bool KernelLibrary::can_fuse(const std::string& producer, const std::string& unary) const {
  const auto p = defs_.find(producer);
  const auto u = defs_.find(unary);
  if (p == defs_.end() || u == defs_.end()) return false;
  const KernelDef& pd = *p->second;
  const KernelDef& ud = *u->second;
  return (pd.kind == Kind::Binary || pd.kind == Kind::Unary) && ud.kind == Kind::Unary && ud.in == pd.out &&
         ud.out == pd.out;
}

InstantiateResult KernelLibrary::instantiate_fused(const std::string& guid, const KernelParams& params,
                                                   const std::vector<std::string>& then) {
  std::vector<const KernelDef*> epilogue;
  for (const std::string& next : then) {
    if (!can_fuse(guid, next)) {
      InstantiateResult result;
      result.status = GlueStatus::UnsupportedGuid;
      result.message = guid + ": cannot be fused with '" + next +
                       "' (fusion takes a binary or unary elementwise kernel followed by unary elementwise "
                       "kernels of the same dtype)";
      return result;
    }
    epilogue.push_back(defs_.at(next));
  }
  return instantiate_impl(guid, params, epilogue);
}

InstantiateResult KernelLibrary::instantiate_impl(const std::string& guid, const KernelParams& given,
                                                  const std::vector<const KernelDef*>& epilogue, bool kernel_file,
                                                  bool f32_partials) {
  InstantiateResult result;
  auto it = defs_.find(guid);
  if (it != defs_.end() && is_batch3(it->second->kind) && !validate(*it->second, given))
    return instantiate_batch3(*it->second,
                              it->second->kind == Kind::Optim || (it->second->kind == Kind::Where && !kernel_file)
                                  ? as_one_run(given)
                                  : given,
                              kernel_file, f32_partials);
  const bool elementwise = it != defs_.end() && (it->second->kind == Kind::Binary || it->second->kind == Kind::Unary ||
                                                 it->second->kind == Kind::Backward || it->second->kind == Kind::UnaryF32 ||
                                                 it->second->kind == Kind::Ternary || it->second->kind == Kind::Cast ||
                                                 it->second->kind == Kind::Fill);
  const KernelParams params = elementwise && !validate(*it->second, given) ? as_one_run(given) : given;
  if (it == defs_.end()) {
    result.status = GlueStatus::UnsupportedGuid;
    result.message = "unknown GUID '" + guid + "' (KernelLibrary::guids() lists the " +
                     std::to_string(guid_list_.size()) + " kernels)";
    return result;
  }
  const KernelDef& def = *it->second;
  if (auto f = validate(def, params)) {
    result.status = f->status;
    result.message = def.guid + ": " + f->message;
    return result;
  }

  const TensorParams& out = params.outputs[0];
  // A cast step is one vector of the narrower type (bf16: two f32 vectors; u8: four).
  const unsigned vector_lanes = def.kind == Kind::Cast ? std::max(lanes_of(def.in), lanes_of(def.out)) : lanes_of(def.out);
  // Elementwise kernels step two vectors at a time (eltwise_binary.s, eltwise_unary.s, and
  // eltwise_f32.s through io_f32x2.inc for f32; a bf16 vector is already two f32 halves there).
  // Reductions over an outer dim make two output vectors a step the same way (reduce_outer.s).
  const bool outer_reduce = def.kind == Kind::Reduce && static_cast<int>(params.scalars[0]) > 0;
  const bool f32_kind = def.kind == Kind::Backward || def.kind == Kind::UnaryF32 || def.kind == Kind::Ternary || outer_reduce;
  // A binary op whose input `bias_row` is one row broadcast over every outer dim, with rows that
  // fit in registers: eltwise_binary_row.s, one row a step (the bias row loaded once per core).
  int bias_row = -1;
  uint32_t bias_row_vectors = 0;
  if (def.kind == Kind::Binary && params.inputs.size() == 2) {
    const auto p_out = padded(out.shape);
    bias_row_vectors = (p_out[0] + lanes_of(def.out) - 1) / lanes_of(def.out);
    const bool rows = uint64_t{p_out[1]} * p_out[2] * p_out[3] * p_out[4] > 1;
    for (int k = 0; k < 2; ++k) {
      const auto row = padded(params.inputs[k].shape), other = padded(params.inputs[1 - k].shape);
      if (rows && bias_row_vectors <= kBiasRowVectors && row[0] == p_out[0] && row[1] == 1 && row[2] == 1 && row[3] == 1 &&
          row[4] == 1 && other == p_out)
        bias_row = k;
    }
  }
  const unsigned unroll =
      bias_row < 0 && (def.kind == Kind::Binary || def.kind == Kind::Unary || (f32_kind && def.out != DType::BF16)) ? 2 : 1;
  const unsigned lanes = vector_lanes * unroll;   // elements of dim 0 per index-space step
  const uint8_t rank = static_cast<uint8_t>(std::max<size_t>(out.shape.size(), 1));
  const auto po = padded(out.shape);
  // Row kernels (softmax, reductions over dim 0) take a whole dim-0 row per index-space step.
  const int reduce_dim = def.kind == Kind::Reduce ? static_cast<int>(params.scalars[0]) : -1;
  const bool row_kernel = def.kind == Kind::Softmax || def.kind == Kind::SoftmaxBwd || reduce_dim == 0 || bias_row >= 0;
  const uint32_t n0_in = params.inputs.empty() ? po[0] : padded(params.inputs[0].shape)[0];

  Instantiation inst;
  inst.guid = def.guid;
  inst.ispace_geometry = {row_kernel ? 1 : static_cast<int32_t>((po[0] + lanes - 1) / lanes),
                          static_cast<int32_t>(po[1]), static_cast<int32_t>(po[2]), static_cast<int32_t>(po[3]),
                          static_cast<int32_t>(po[4])};
  // The dense access pattern: dim 0 a vector of `lanes` per step, the other dims one element.
  // Row kernels: dim 0 is the whole row (a = 0).
  TensorAccessPattern dense;
  for (unsigned d = 0; d < kMaxDims; ++d)
    dense[d] = d == 0 ? AccessPatternDim{0, static_cast<int32_t>(lanes), 0, static_cast<int32_t>(lanes) - 1}
                      : AccessPatternDim{static_cast<uint8_t>(d), 1, 0, 0};
  if (row_kernel) dense[0] = AccessPatternDim{0, 0, 0, static_cast<int32_t>(po[0]) - 1};

  DescriptorTemplate out_desc;
  out_desc.dtype = out.dtype;
  out_desc.dims = rank;
  out_desc.size = po;
  out_desc.stride = strides_of(out);
  inst.outputs.push_back(out_desc);
  inst.output_patterns.push_back(dense);

  // Inputs: broadcast dims >= 1 get the output's size and stride 0; a dim-0 broadcast is a
  // kernel variant (bcast0[k]). A reduction's input instead covers the reduced dim whole.
  bool bcast0[3] = {false, false, false};
  bool scalar[3] = {false, false, false};   // one element broadcast over everything: loaded once per core
  for (size_t k = 0; k < params.inputs.size(); ++k) {
    const TensorParams& in = params.inputs[k];
    const auto pi = padded(in.shape);
    if (k < 3) scalar[k] = pi == std::array<uint32_t, kMaxDims>{1, 1, 1, 1, 1} && po[0] != 1;
    DescriptorTemplate desc;
    desc.dtype = in.dtype;
    desc.dims = static_cast<uint8_t>(std::max<size_t>(rank, std::max<size_t>(in.shape.size(), 1)));
    desc.stride = strides_of(in);
    TensorAccessPattern pattern = dense;
    for (unsigned d = 0; d < kMaxDims; ++d) {
      desc.size[d] = pi[d];
      if (static_cast<int>(d) == reduce_dim) {
        pattern[d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, static_cast<int32_t>(pi[d]) - 1};
      } else if (pi[d] == 1 && po[d] != 1) {   // broadcast along d
        pattern[d] = AccessPatternDim{static_cast<uint8_t>(d), 0, 0, 0};
        if (d == 0) {
          bcast0[k] = true;
        } else {
          desc.size[d] = po[d];
          desc.stride[d] = 0;
        }
      }
    }
    // Padding past a row's end: -inf where a max runs over it, else 0.
    const bool neg_inf = def.kind == Kind::Softmax || (def.kind == Kind::Reduce && def.op_macro == "max");
    if (neg_inf) desc.padding = in.dtype == DType::BF16 ? 0xFF80u : 0xFF800000u;
    if (def.kind == Kind::Reduce && def.op_macro == "min") desc.padding = in.dtype == DType::BF16 ? 0x7F80u : 0x7F800000u;
    inst.inputs.push_back(desc);
    inst.input_patterns.push_back(pattern);
  }
  if (reduce_dim >= 0) {   // Y has size 1 in the reduced dim
    inst.output_patterns[0][reduce_dim] = AccessPatternDim{static_cast<uint8_t>(reduce_dim), 0, 0, 0};
    const uint32_t n = padded(params.inputs[0].shape)[reduce_dim];
    const float nf = static_cast<float>(n);
    inst.srf[0] = n;
    std::memcpy(&inst.srf[1], &nf, 4);
  }
  if (def.kind == Kind::Softmax || def.kind == Kind::SoftmaxBwd) inst.srf[0] = n0_in;

  if (def.kind == Kind::Fill || def.kind == Kind::Ternary) {
    uint32_t bits;
    std::memcpy(&bits, &params.scalars[0], 4);
    if (def.out == DType::I32) bits = static_cast<uint32_t>(static_cast<int32_t>(params.scalars[0]));
    inst.srf[0] = bits;
  }

  // The variant's source: a prelude of macros, then the kernel file.
  const std::string t = tpc::dtype_name(def.out);
  std::ostringstream src;
  std::ostringstream variant;
  // The kernels prefetch the inputs they stream along dim 0 (not a dim-0 broadcast; reductions over
  // an outer dim prefetch along it themselves, reduce_outer.s).
  std::vector<unsigned> prefetched;
  if (def.kind != Kind::Fill && !(def.kind == Kind::Reduce && reduce_dim != 0))
    for (size_t k = 0; k < params.inputs.size(); ++k)
      if (k >= 3 || (!bcast0[k] && static_cast<int>(k) != bias_row)) prefetched.push_back(static_cast<unsigned>(k));
  const uint32_t row_vectors = static_cast<uint32_t>(((row_kernel ? n0_in : po[0]) + vector_lanes - 1) / vector_lanes);
  // A cast to a narrower type loads several vectors of its input a step (cast_f32_to_bf16.s: two),
  // so it prefetches as many: one a step left every other vector to a full memory latency.
  const unsigned input_vectors = def.kind == Kind::Cast ? std::max(1u, lanes / lanes_of(def.in)) : 1;
  src << "// " << def.guid << ": the glue's prelude for the kernel file included at the end\n"
      << width_prelude(prefetched, row_vectors * input_vectors, unroll * input_vectors) << ".equ LANES " << lanes
      << "\n";
  const char* io = def.out == DType::BF16 ? "io_bf16.inc" : unroll == 2 ? "io_f32x2.inc" : "io_f32.inc";
  if (def.kind == Kind::Cast) {
    variant << "cast " << def.op_macro;
    src << ".include \"" << def.op_macro << "\"\n";
  } else {
    switch (def.kind) {
      case Kind::Binary:
        variant << "binary " << def.op_macro << " " << t;
        src << ".macro OP d, a, b\n        " << def.op_macro << " " << t << ", \\d, \\a, \\b\n";
        for (const KernelDef* e : epilogue) {
          variant << " then " << e->op_macro;
          src << "        " << e->op_macro << " " << t << ", \\d, \\d\n";
        }
        src << ".endm\n";
        if (bias_row >= 0) {
          variant << " bias-row " << bias_row << " " << bias_row_vectors;
          src << binary_row_macros(bias_row_vectors, bias_row) << ".macro ROW_SETUP\n.endm\n.include \"eltwise_binary_row.s\"\n";
          break;
        }
        for (int k = 0; k < 2; ++k) {
          src << ".macro LOAD_" << (k ? 'B' : 'A') << " v, i\n";
          if (!bcast0[k]) src << "        ld_tnsr \\v, \\i, " << k << "\n";
          src << ".endm\n";
          if (bcast0[k]) variant << (k ? " bcast-b0" : " bcast-a0");
        }
        // A dim-0 broadcast is loaded at each row's start, a scalar once per core.
        src << ".macro ROW_SETUP\n";
        for (int k = 0; k < 2; ++k)
          if (bcast0[k] && !scalar[k])
            src << "        BCAST_ROW V" << (k + 1) << ", " << k << ", " << t << "\n        mov." << t << " V" << (k + 11) << ", V"
                << (k + 1) << "\n";
        src << ".endm\n.macro KERNEL_SETUP\n";
        for (int k = 0; k < 2; ++k)
          if (scalar[k]) {
            variant << (k ? " scalar-b" : " scalar-a");
            src << "        imov I3, 0\n        ld_tnsr_s S16, I3, " << k << "\n        mov." << t << " V" << (k + 1) << ", S16\n        mov."
                << t << " V" << (k + 11) << ", V" << (k + 1) << "\n";
          }
        src << ".endm\n.include \"eltwise_binary.s\"\n";
        break;
      case Kind::Backward:
      case Kind::UnaryF32:
      case Kind::Ternary: {
        const size_t nin = params.inputs.size();
        variant << (def.kind == Kind::Backward ? "backward " : def.kind == Kind::UnaryF32 ? "unary-f32 " : "ternary ")
                << def.op_macro << " " << t;
        src << ".include \"" << io << "\"\n.equ OUT_T " << nin << "\n";
        src << ".macro OP d, a, b, c\n        " << def.op_macro << " f32, \\d, \\a";
        if (nin >= 2) src << ", \\b";
        if (nin >= 3) src << ", \\c";
        src << "\n.endm\n";
        for (size_t k = 0; k < 3; ++k) {
          src << ".macro LOAD_" << k << "\n";
          if (k < nin && !bcast0[k]) src << "        LDW V1" << k << ", V2" << k << ", I2, " << k << "\n";
          src << ".endm\n";
          if (k < nin && bcast0[k]) variant << " bcast-" << k << "0";
        }
        src << ".macro ROW_SETUP\n";
        for (size_t k = 0; k < nin; ++k)
          if (bcast0[k])
            src << "        BCAST_ROW V1" << k << ", " << k << ", f32\n        mov.f32 V2" << k << ", V1" << k << "\n";
        // Ops with a _PAIR form (ops.inc) run on the two values interleaved.
        src << ".endm\n.macro OPS\n";
        if (def.op_macro == "OP_GELU_TANH") src << "        OP_GELU_TANH_PAIR f32, V13, V10, V23, V20\n";
        else if (def.op_macro == "OP_GELU_TANH_BWD") src << "        OP_GELU_TANH_BWD_PAIR f32, V13, V10, V11, V23, V20, V21\n";
        else src << "        EACH4 OP, V13, V10, V11, V12, V23, V20, V21, V22\n";
        src << ".endm\n.include \"eltwise_f32.s\"\n";
        break;
      }
      case Kind::Reduce: {
        const bool is_max = def.op_macro == "max", is_min = def.op_macro == "min";
        const char* op = is_max ? "max" : is_min ? "min" : "add";
        variant << "reduce " << def.op_macro << " dim " << reduce_dim << " " << t;
        src << ".include \"" << io << "\"\n";
        if (reduce_dim > 0) {
          // An f32 step streams two vectors a row (io_f32x2.inc), a bf16 one.
          const unsigned per_row = def.out == DType::BF16 ? 1 : 2;
          const unsigned ahead = std::max(16u, prefetch_budget() / per_row / 16 * 16);
          src << ".equ RDIM " << reduce_dim << "\n.equ RAHEAD " << ahead << "\n";
        }
        src << ".equ RINIT " << (is_max ? "0xFF800000" : is_min ? "0x7F800000" : "0.0") << "\n";
        src << ".macro RACC d, a, b\n        " << op << ".f32 \\d, \\a, \\b\n.endm\n";
        src << ".macro RLANES d, a\n        reduce." << op << ".f32 \\d, \\a\n.endm\n";
        src << ".macro RFINISH d, a\n";
        if (def.op_macro == "mean") src << "        div.f32 \\d, \\a, S1\n";
        src << ".endm\n.include \"" << (reduce_dim == 0 ? "reduce_dim0.s" : "reduce_outer.s") << "\"\n";
        break;
      }
      case Kind::Softmax: {
        const bool log = def.op_macro == "log_softmax";
        variant << def.op_macro << " fwd " << t;
        src << ".include \"" << io << "\"\n.macro SM_ROW s\n";
        if (log) src << "        special.log.f32 \\s, \\s\n";
        src << ".endm\n";
        if (row_vectors <= kShortRowVectors) {
          variant << " short " << row_vectors;
          src << ".macro SMS_OUT d, x, e\n";
          if (log) src << "        sub.f32 \\d, \\x, V14\n        sub.f32 \\d, \\d, V15\n";
          else src << "        div.f32 \\d, \\e, V15\n";
          src << ".endm\n" << short_row_macros(row_vectors, false) << ".include \"softmax_short.s\"\n";
          break;
        }
        src << ".macro SM_OUT d, a\n        sub.f32 \\d, \\a, V14\n";
        if (log) src << "        sub.f32 \\d, \\d, V15\n";
        else src << "        special.exp.f32 \\d, \\d\n        div.f32 \\d, \\d, V15\n";
        src << ".endm\n.include \"softmax_fwd.s\"\n";
        break;
      }
      case Kind::SoftmaxBwd: {
        const bool log = def.op_macro == "log_softmax";
        variant << def.op_macro << " bwd " << t;
        src << ".include \"" << io << "\"\n.macro SMB_ACC acc, g, y\n";
        if (log) src << "        add.f32 \\acc, \\acc, \\g\n";
        else src << "        mul.f32 V4, \\g, \\y\n        add.f32 \\acc, \\acc, V4\n";
        src << ".endm\n.macro SMB_OUT d, g, y\n";
        if (log) src << "        special.exp.f32 V4, \\y\n        mul.f32 V4, V4, V15\n        sub.f32 \\d, \\g, V4\n";
        else src << "        sub.f32 V4, \\g, V15\n        mul.f32 \\d, \\y, V4\n";
        src << ".endm\n";
        if (row_vectors <= kShortRowVectors) {
          variant << " short " << row_vectors;
          src << short_row_macros(row_vectors, true) << ".include \"softmax_bwd_short.s\"\n";
        } else {
          src << ".include \"softmax_bwd.s\"\n";
        }
        break;
      }
      case Kind::Unary:
        variant << "unary " << def.op_macro << " " << t;
        src << ".macro OP d, a\n        " << def.op_macro << " " << t << ", \\d, \\a\n";
        for (const KernelDef* e : epilogue) {
          variant << " then " << e->op_macro;
          src << "        " << e->op_macro << " " << t << ", \\d, \\d\n";
        }
        src << ".endm\n.macro ROW_SETUP\n.endm\n.include \"eltwise_unary.s\"\n";
        break;
      case Kind::Fill:
        variant << "fill " << t;
        src << ".macro OP d\n        FILL " << t << ", \\d\n.endm\n"
            << ".macro ROW_SETUP\n.endm\n.include \"fill.s\"\n";
        break;
      case Kind::Cast:
      default:
        break;
    }
  }
  inst.variant = variant.str();
  return assembled(std::move(inst), src.str(), def.guid);
}

}  // namespace hpusim::synapse::tpc_kernels
