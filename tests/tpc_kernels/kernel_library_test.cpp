// The kernel library's glue: GUIDs, validation errors and their messages, index-space geometry,
// access patterns, descriptor templates, the program cache, and the partitioning rule.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "arch/tpc/tpc_launch.h"
#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

TensorParams f32(std::vector<uint32_t> shape) { return {DType::F32, std::move(shape), {}}; }
TensorParams bf16(std::vector<uint32_t> shape) { return {DType::BF16, std::move(shape), {}}; }

KernelParams binary(TensorParams a, TensorParams b, TensorParams c) {
  KernelParams p;
  p.inputs = {std::move(a), std::move(b)};
  p.outputs = {std::move(c)};
  return p;
}

TEST(TpcKernelLibrary, ListsEveryGuid) {
  const auto guids = KernelLibrary::instance().guids();
  const std::set<std::string> have(guids.begin(), guids.end());
  std::vector<std::string> want = {"cast_f32_to_bf16", "cast_bf16_to_f32", "cast_f32_to_i32", "cast_i32_to_f32"};
  for (const char* t : {"f32", "bf16"}) {
    for (const char* op : {"add", "sub", "mul", "div", "max", "min", "relu", "tanh", "sigmoid", "exp", "log", "sqrt",
                           "rsqrt", "abs", "neg"})
      want.push_back(std::string(op) + "_fwd_" + t);
    for (const char* op : {"relu", "tanh", "sigmoid", "gelu_tanh", "softmax", "log_softmax"})
      want.push_back(std::string(op) + "_bwd_" + t);
    for (const char* op : {"gelu_tanh", "softmax", "log_softmax", "addcmul", "addcdiv", "reduce_sum", "reduce_mean",
                           "reduce_max"})
      want.push_back(std::string(op) + "_fwd_" + t);
    want.push_back(std::string("fill_") + t);
    for (const char* g : {"layernorm_fwd_", "layernorm_bwd_", "layernorm_bwd_gamma_beta_", "nll_loss_fwd_", "nll_loss_bwd_",
                          "dropout_fwd_", "dropout_bwd_", "permute_", "transpose_", "embedding_fwd_", "embedding_bwd_"})
      want.push_back(g + std::string(t));
  }
  for (const char* g : {"sgd_momentum_f32", "adam_f32", "adamw_f32", "adadelta_f32"}) want.push_back(g);
  for (const char* g : {"add_fwd_i32", "sub_fwd_i32", "mul_fwd_i32", "max_fwd_i32", "min_fwd_i32", "fill_i32"})
    want.push_back(g);
  // Batch 5 (kernels_batch5_test.cpp).
  for (const char* t : {"f32", "bf16", "i32"}) {
    for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "where", "gather"})
      want.push_back(std::string(op) + "_fwd_" + t);
  }
  for (const char* t : {"f32", "bf16"})
    for (const char* g : {"reduce_min_fwd_", "random_uniform_fwd_", "random_normal_fwd_", "silu_fwd_", "silu_bwd_",
                          "gelu_fwd_", "gelu_bwd_"})
      want.push_back(g + std::string(t));
  for (const char* g : {"range_fwd_f32", "range_fwd_i32", "cast_f32_to_u8", "cast_u8_to_f32", "cast_i32_to_u8", "cast_u8_to_i32"})
    want.push_back(g);
  // Batch 6 (kernels_strided_test.cpp).
  for (const char* t : {"f32", "bf16", "i32", "u8"})
    for (const char* g : {"strided_view_", "strided_insert_"}) want.push_back(g + std::string(t));
  // Tensor lists (kernels_tensor_list_test.cpp).
  for (const char* g : {"fused_adam_f32", "fused_adamw_f32", "fused_sgd_f32", "fused_clip_norm_f32"}) want.push_back(g);
  EXPECT_EQ(want.size(), 152u);
  for (const std::string& g : want) EXPECT_TRUE(have.count(g)) << g;
  EXPECT_EQ(have.size(), want.size());
  EXPECT_TRUE(std::is_sorted(guids.begin(), guids.end()));
}

bool batch3_guid(const std::string& g) {
  for (const char* prefix : {"layernorm_", "nll_loss_", "dropout_", "sgd_", "adam", "adadelta_", "permute_", "transpose_",
                             "embedding_"})
    if (g.rfind(prefix, 0) == 0) return true;
  // Batch 5's that the loop below cannot describe (kernels_batch5_test.cpp instantiates each).
  for (const char* prefix : {"equal_", "not_equal_", "less_", "greater_", "where_", "gather_", "range_", "random_"})
    if (g.rfind(prefix, 0) == 0) return true;
  // Batch 6's: a flat X and one stride per dim of the view (kernels_strided_test.cpp instantiates
  // each, in both variants).
  if (g.rfind("strided_", 0) == 0) return true;
  // The tensor-list GUIDs (kernels_tensor_list_test.cpp runs each).
  if (KernelLibrary::is_tensor_list(g)) return true;
  return g.find("u8") != std::string::npos;
}

TEST(TpcKernelLibrary, EveryGuidAndVariantAssembles) {
  KernelLibrary lib;
  for (const std::string& g : lib.guids()) {
    if (batch3_guid(g)) continue;   // kernels_batch3/4/5_test.cpp instantiate each of them
    KernelParams p;
    const DType in = g == "cast_bf16_to_f32" || (g.find("bf16") != std::string::npos && g != "cast_f32_to_bf16")
                         ? DType::BF16
                     : g == "cast_i32_to_f32" || (g.find("_i32") == g.size() - 4 && g != "cast_f32_to_i32") ? DType::I32
                                                                                 : DType::F32;
    const DType out = g == "cast_f32_to_bf16"   ? DType::BF16
                      : g == "cast_f32_to_i32" ? DType::I32
                      : g.rfind("cast_", 0) == 0 ? DType::F32 : in;
    const bool is_binary = g.find("_bwd_") != std::string::npos ||
                           g.rfind("add_", 0) == 0 || g.rfind("sub", 0) == 0 || g.rfind("mul", 0) == 0 ||
                           g.rfind("div", 0) == 0 || g.rfind("max", 0) == 0 || g.rfind("min", 0) == 0;
    const bool is_ternary = g.rfind("addc", 0) == 0;
    std::vector<uint32_t> out_shape = {100, 2};
    if (g.rfind("fill", 0) == 0) p.scalars = {1.0f};
    else if (is_ternary) p.inputs = {{in, {100, 2}, {}}, {in, {100, 2}, {}}, {in, {100, 2}, {}}}, p.scalars = {0.5f};
    else if (is_binary) p.inputs = {{in, {100, 2}, {}}, {in, {100, 2}, {}}};
    else p.inputs = {{in, {100, 2}, {}}};
    if (g.rfind("reduce_", 0) == 0) {
      p.scalars = {1.0f};
      out_shape = {100, 1};
    }
    p.outputs = {{out, out_shape, {}}};
    const InstantiateResult r = lib.instantiate(g, p);
    ASSERT_TRUE(r.ok()) << g << ": " << r.message;
    EXPECT_EQ(r.inst->guid, g);
    EXPECT_FALSE(r.inst->program->bundles.empty());
  }
  // The dim-0 broadcast variants of the binary kernels.
  for (const char* t : {"f32", "bf16"}) {
    const DType d = std::string(t) == "f32" ? DType::F32 : DType::BF16;
    for (int k = 0; k < 2; ++k) {
      KernelParams p = binary({d, {k == 0 ? 1u : 70u, 3}, {}}, {d, {k == 1 ? 1u : 70u, 3}, {}}, {d, {70, 3}, {}});
      const InstantiateResult r = lib.instantiate(std::string("mul_fwd_") + t, p);
      ASSERT_TRUE(r.ok()) << r.message;
      EXPECT_NE(r.inst->variant.find(k == 0 ? "bcast-a0" : "bcast-b0"), std::string::npos) << r.inst->variant;
    }
  }
}

TEST(TpcKernelLibrary, CachesAssembledPrograms) {
  KernelLibrary lib;
  EXPECT_EQ(lib.assembled_count(), 0u);
  const auto r1 = lib.instantiate("add_fwd_f32", binary(f32({100}), f32({100}), f32({100})));
  const auto r2 = lib.instantiate("add_fwd_f32", binary(f32({70, 3, 2}), f32({70, 1, 2}), f32({70, 3, 2})));
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1.inst->program.get(), r2.inst->program.get());   // same variant (rows of 2 vectors), one assembly
  EXPECT_EQ(lib.assembled_count(), 1u);
  const auto r3 = lib.instantiate("add_fwd_f32", binary(f32({1, 3}), f32({70, 3}), f32({70, 3})));
  ASSERT_TRUE(r3.ok());
  EXPECT_NE(r1.inst->program.get(), r3.inst->program.get());   // the dim-0 broadcast variant
  EXPECT_EQ(lib.assembled_count(), 2u);
  // Rows of another length up to the prefetch distance: another prefetch schedule, another variant.
  const auto r4 = lib.instantiate("add_fwd_f32", binary(f32({7, 3}), f32({7, 3}), f32({7, 3})));
  ASSERT_TRUE(r4.ok());
  EXPECT_NE(r1.inst->program.get(), r4.inst->program.get());
  EXPECT_EQ(lib.assembled_count(), 3u);
}

TEST(TpcKernelLibrary, GeometryPatternsAndDescriptors) {
  KernelLibrary lib;
  const auto r = lib.instantiate("add_fwd_bf16", binary(bf16({300, 1, 4}), bf16({1, 5, 1}), bf16({300, 5, 4})));
  ASSERT_TRUE(r.ok()) << r.message;
  const Instantiation& inst = *r.inst;
  // Two vectors of 128 per step (eltwise_binary.s): ceil(300 / 256).
  EXPECT_EQ(inst.ispace_geometry, (std::array<int32_t, 5>{2, 5, 4, 1, 1}));
  // Output: dim 0 two vectors of 128 per step, the others one element.
  EXPECT_EQ(inst.output_patterns[0][0], (AccessPatternDim{0, 256, 0, 255}));
  EXPECT_EQ(inst.output_patterns[0][1], (AccessPatternDim{1, 1, 0, 0}));
  // A broadcasts along dim 1: a = 0, stride 0, the output's size.
  EXPECT_EQ(inst.input_patterns[0][1], (AccessPatternDim{1, 0, 0, 0}));
  EXPECT_EQ(inst.inputs[0].size[1], 5u);
  EXPECT_EQ(inst.inputs[0].stride[1], 0);
  EXPECT_EQ(inst.inputs[0].stride[2], 300);
  // B broadcasts along dims 0 and 2.
  EXPECT_EQ(inst.input_patterns[1][0], (AccessPatternDim{0, 0, 0, 0}));
  EXPECT_EQ(inst.input_patterns[1][1], (AccessPatternDim{1, 1, 0, 0}));
  EXPECT_EQ(inst.input_patterns[1][2], (AccessPatternDim{2, 0, 0, 0}));
  EXPECT_EQ(inst.inputs[1].size[0], 1u);
  EXPECT_EQ(inst.inputs[1].size[2], 4u);
  EXPECT_EQ(inst.inputs[1].stride[2], 0);
  EXPECT_EQ(inst.outputs[0].dims, 3);
  EXPECT_EQ(inst.outputs[0].stride[1], 300);
  EXPECT_EQ(inst.outputs[0].stride[2], 1500);
  const tpc::LaunchContext ctx = inst.launch_context({0x1000, 0x2000}, {0x3000}, {1, 0, 0, 0, 0}, {2, 5, 4, 1, 1});
  EXPECT_EQ(ctx.tensors[0].base, 0x1000u);
  EXPECT_EQ(ctx.tensors[2].base, 0x3000u);
  EXPECT_EQ(ctx.tensors[2].dtype, DType::BF16);
  EXPECT_EQ(ctx.ispace_offset[0], 1);
  EXPECT_EQ(ctx.tensors[3].dims, 0);   // unused descriptors stay unset

  KernelParams fill;
  fill.outputs = {f32({10})};
  fill.scalars = {2.5f};
  const auto rf = lib.instantiate("fill_f32", fill);
  ASSERT_TRUE(rf.ok());
  EXPECT_EQ(rf.inst->srf[0], bits_of(2.5f));
  const auto rc = lib.instantiate("cast_f32_to_bf16", KernelParams{{f32({200})}, {bf16({200})}, {}});
  ASSERT_TRUE(rc.ok()) << rc.message;
  EXPECT_EQ(rc.inst->ispace_geometry[0], 2);   // casts step 128 elements
  EXPECT_EQ(rc.inst->input_patterns[0][0], (AccessPatternDim{0, 128, 0, 127}));
}

// ---- Validation ----

void expect_error(const InstantiateResult& r, GlueStatus status, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.status, status) << glue_status_name(r.status) << ": " << r.message;
  EXPECT_FALSE(r.inst.has_value());
  for (const std::string& p : parts) EXPECT_NE(r.message.find(p), std::string::npos) << "'" << p << "' not in: " << r.message;
}

TEST(TpcKernelGlue, RejectsAnUnknownGuid) {
  KernelLibrary lib;
  const auto r = lib.instantiate("add_fwd_f16", binary(f32({4}), f32({4}), f32({4})));
  expect_error(r, GlueStatus::UnsupportedGuid, {"unknown GUID 'add_fwd_f16'"});
  EXPECT_STREQ(glue_status_name(r.status), "GLUE_NODE_NOT_FOUND");
}

TEST(TpcKernelGlue, RejectsWrongTensorCounts) {
  KernelLibrary lib;
  KernelParams p;
  p.inputs = {f32({4})};
  p.outputs = {f32({4})};
  expect_error(lib.instantiate("add_fwd_f32", p), GlueStatus::IncompatibleInputCount,
               {"add_fwd_f32 takes 2 inputs (A, B), got 1"});
  p.inputs = {f32({4}), f32({4})};
  p.outputs = {};
  expect_error(lib.instantiate("relu_bwd_f32", p), GlueStatus::IncompatibleOutputCount,
               {"relu_bwd_f32 takes 1 output (dx), got 0"});
  p.outputs = {f32({4}), f32({4})};
  expect_error(lib.instantiate("sub_fwd_f32", p), GlueStatus::IncompatibleOutputCount, {"got 2"});
  EXPECT_STREQ(glue_status_name(GlueStatus::IncompatibleInputCount), "GLUE_INCOMPATIBLE_INPUT_COUNT");
}

TEST(TpcKernelGlue, RejectsShapesThatDoNotBroadcast) {
  KernelLibrary lib;
  expect_error(lib.instantiate("add_fwd_f32", binary(f32({5, 3}), f32({4, 3}), f32({5, 3}))),
               GlueStatus::IncompatibleInputSize, {"input 1 (B)", "dim 0 has size 4", "output's 5"});
  expect_error(lib.instantiate("max_fwd_bf16", binary(bf16({5, 3, 2}), bf16({5, 2, 2}), bf16({5, 3, 2}))),
               GlueStatus::IncompatibleInputSize, {"input 1 (B)", "dim 1"});
  // The output must be the broadcast of the inputs.
  expect_error(lib.instantiate("add_fwd_f32", binary(f32({1, 3}), f32({1, 3}), f32({5, 3}))),
               GlueStatus::IncompatibleOutputSize, {"output 0 (C)", "dim 0 has size 5"});
  // An input of higher rank than the output.
  expect_error(lib.instantiate("add_fwd_f32", binary(f32({5, 3}), f32({5, 3}), f32({5}))),
               GlueStatus::IncompatibleInputSize, {"input 0 (A)", "2 dims"});
  // Unary and backward kernels do not broadcast.
  expect_error(lib.instantiate("exp_fwd_f32", KernelParams{{f32({5, 3})}, {f32({5, 1})}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "[5, 1]", "[5, 3]"});
  expect_error(lib.instantiate("tanh_bwd_f32", binary(f32({5, 3}), f32({1, 3}), f32({5, 3}))),
               GlueStatus::IncompatibleInputSize, {"input 1 (y)", "[1, 3]"});
}

TEST(TpcKernelGlue, RejectsBadShapesAndStrides) {
  KernelLibrary lib;
  expect_error(lib.instantiate("neg_fwd_f32", KernelParams{{f32({2, 2, 2, 2, 2, 2})}, {f32({2, 2, 2, 2, 2, 2})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X)", "6 dims, at most 5"});
  expect_error(lib.instantiate("neg_fwd_f32", KernelParams{{f32({4, 0})}, {f32({4, 0})}, {}}),
               GlueStatus::IncompatibleInputSize, {"input 0 (X)", "dim 1 has size 0"});
  TensorParams strided = f32({4, 4});
  strided.strides = {2, 8};
  expect_error(lib.instantiate("neg_fwd_f32", KernelParams{{f32({4, 4})}, {strided}, {}}),
               GlueStatus::IncompatibleOutputSize, {"output 0 (Y)", "dim 0 stride 2", "contiguous"});
  strided.strides = {1};
  expect_error(lib.instantiate("neg_fwd_f32", KernelParams{{strided}, {f32({4, 4})}, {}}),
               GlueStatus::IncompatibleInputSize, {"1 strides for 2 dims"});
}

TEST(TpcKernelGlue, RejectsUnsupportedDataTypes) {
  KernelLibrary lib;
  expect_error(lib.instantiate("add_fwd_f32", binary(f32({4}), bf16({4}), f32({4}))),
               GlueStatus::IncompatibleDataType, {"input 1 (B): dtype bf16, but add_fwd_f32 takes f32"});
  expect_error(lib.instantiate("relu_fwd_bf16", KernelParams{{{DType::I32, {4}, {}}}, {bf16({4})}, {}}),
               GlueStatus::IncompatibleDataType, {"input 0 (X): dtype i32"});
  expect_error(lib.instantiate("cast_f32_to_bf16", KernelParams{{f32({4})}, {f32({4})}, {}}),
               GlueStatus::IncompatibleDataType, {"output 0 (Y): dtype f32, but cast_f32_to_bf16 takes bf16"});
  EXPECT_STREQ(glue_status_name(GlueStatus::IncompatibleDataType), "GLUE_INCOMPATIBLE_DATA_TYPE");
}

TEST(TpcKernelGlue, RejectsWrongScalarParameters) {
  KernelLibrary lib;
  expect_error(lib.instantiate("fill_bf16", KernelParams{{}, {bf16({4})}, {}}), GlueStatus::IncompatibleScalarParams,
               {"fill_bf16 takes 1 scalar parameter (the fill value), got 0"});
  expect_error(lib.instantiate("abs_fwd_f32", KernelParams{{f32({4})}, {f32({4})}, {1.0f}}),
               GlueStatus::IncompatibleScalarParams, {"takes 0 scalar parameters, got 1"});
}

// ---- Partitioning ----

TEST(TpcKernelPartition, SplitsTheOutermostDimLargeEnough) {
  auto s = partition_index_space({10, 8, 3, 1, 1}, 8);
  ASSERT_EQ(s.size(), 8u);
  for (size_t c = 0; c < 8; ++c) {
    EXPECT_EQ(s[c].offset, (std::array<int32_t, 5>{0, static_cast<int32_t>(c), 0, 0, 0}));
    EXPECT_EQ(s[c].size, (std::array<int32_t, 5>{10, 1, 3, 1, 1}));
  }
  s = partition_index_space({100, 3, 2, 1, 1}, 8);   // only dim 0 has >= 8 steps
  ASSERT_EQ(s.size(), 8u);
  int32_t next = 0;
  for (size_t c = 0; c < 8; ++c) {
    EXPECT_EQ(s[c].offset[0], next);
    EXPECT_EQ(s[c].size[0], c < 4 ? 13 : 12);   // 100 = 4 x 13 + 4 x 12
    EXPECT_EQ(s[c].size[1], 3);
    next += s[c].size[0];
  }
  EXPECT_EQ(next, 100);
  s = partition_index_space({3, 4, 1, 1, 1}, 8);   // none large enough: the largest, one step each
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[3].offset[1], 3);
  EXPECT_EQ(s[3].size, (std::array<int32_t, 5>{3, 1, 1, 1, 1}));
  s = partition_index_space({1, 1, 1, 1, 1}, 8);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(partition_index_space({0, 1, 1, 1, 1}, 8).empty());
  EXPECT_EQ(partition_index_space({5, 5, 5, 5, 5}, 1).size(), 1u);
  // Equal largest dims: the innermost is split, as the launch builder does for the compiler.
  s = partition_index_space({4, 4, 1, 1, 1}, 8);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[2].offset, (std::array<int32_t, 5>{2, 0, 0, 0, 0}));
  EXPECT_EQ(s[2].size, (std::array<int32_t, 5>{1, 4, 1, 1, 1}));
  // 12 steps of dim 1 on 8 cores would leave four idle half the time: dim 0 shares its 64 evenly
  // in slices of 8; 16 (slices of 2) is too short a walk, and dim 1 stays split.
  s = partition_index_space({64, 12, 1, 1, 1}, 8);
  ASSERT_EQ(s.size(), 8u);
  for (size_t c = 0; c < 8; ++c) {
    EXPECT_EQ(s[c].offset, (std::array<int32_t, 5>{static_cast<int32_t>(8 * c), 0, 0, 0, 0}));
    EXPECT_EQ(s[c].size, (std::array<int32_t, 5>{8, 12, 1, 1, 1}));
  }
  s = partition_index_space({16, 12, 1, 1, 1}, 8);
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(s[0].size, (std::array<int32_t, 5>{16, 2, 1, 1, 1}));
  EXPECT_EQ(s[7].size, (std::array<int32_t, 5>{16, 1, 1, 1, 1}));
}

// The kernel library and the launch builder split an index space the same way, for any geometry.
TEST(TpcKernelPartition, IsTheLaunchBuildersSplit) {
  std::mt19937 rng(5);
  for (int i = 0; i < 500; ++i) {
    std::array<int32_t, 5> geometry{};
    for (auto& g : geometry) g = 1 + static_cast<int32_t>(rng() % 12);
    const unsigned cores = 1 + rng() % 8;
    tpc::TpcLaunchSpec spec;
    spec.tpcs = cores;
    std::copy(geometry.begin(), geometry.end(), spec.index_space.begin());
    spec.granule.fill(1);
    const auto ranges = tpc::partition_index_space(spec);
    const auto slices = partition_index_space(geometry, cores);
    ASSERT_EQ(slices.size(), ranges.size());
    for (size_t c = 0; c < slices.size(); ++c) {
      for (unsigned d = 0; d < 5; ++d) {
        ASSERT_EQ(slices[c].offset[d], ranges[c].offset[d]);
        ASSERT_EQ(slices[c].size[d], ranges[c].size[d]);
      }
    }
  }
}

TEST(TpcKernelPartition, TouchedRangesFollowTheAccessPatterns) {
  CoreSlice s;
  s.offset = {2, 1, 0, 0, 0};
  s.size = {3, 2, 1, 1, 1};
  EXPECT_EQ(touched_range({0, 64, 0, 63}, s), (std::pair<int64_t, int64_t>{128, 319}));
  EXPECT_EQ(touched_range({1, 1, 0, 0}, s), (std::pair<int64_t, int64_t>{1, 2}));
  EXPECT_EQ(touched_range({1, 0, 0, 0}, s), (std::pair<int64_t, int64_t>{0, 0}));
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
