// The MME GUIDs: shape conventions, the jobs they lower to, and their errors.
#include <gtest/gtest.h>

#include "synapse/graph/mme_nodes.h"
#include "synapse/graph/validate.h"
#include "tests/synapse_graph/graph_spec.h"

namespace hpusim::synapse::graph {
namespace {

using testing::build;
using testing::GraphSpec;
using testing::mlp_spec;

// One MME node over persistent inputs.
GraphSpec one_node(const std::string& guid, std::vector<TensorDesc> inputs, TensorDesc output,
                   std::map<std::string, int64_t> attributes = {}) {
  GraphSpec s;
  testing::NodeSpec n{"op", guid, {}, {output.name}, {{}, std::move(attributes)}};
  for (TensorDesc& t : inputs) {
    t.persistent = true;
    n.inputs.push_back(t.name);
    s.tensors.push_back(t);
  }
  s.tensors.push_back(output);
  s.nodes.push_back(n);
  return s;
}

Result check(const GraphSpec& spec, mme::MmeJob* job = nullptr) {
  const Graph g = build(spec);
  const Result v = validate(g);
  const Result r = mme_job_for(g, NodeId{0}, job);
  EXPECT_EQ(v.status, r.status);
  EXPECT_EQ(v.message, r.message);
  return r;
}

TEST(SynapseGraphMme, GemmLowersToARowMajorJob) {
  // A [K, M] is row-major M x K: dim 0 (K) is contiguous.
  mme::MmeJob job;
  const GraphSpec spec = one_node("gemm", {{"a", DType::BF16, {96, 40}}, {"b", DType::BF16, {24, 96}}},
                                  {"o", DType::F32, {24, 40}});
  ASSERT_TRUE(check(spec, &job).ok());
  EXPECT_EQ(job.op, mme::MmeOp::Gemm);
  EXPECT_EQ(job.in, mme::MmeType::Bf16);
  EXPECT_EQ(job.out, mme::MmeType::F32);
  EXPECT_EQ(job.m, 40u);
  EXPECT_EQ(job.n, 24u);
  EXPECT_EQ(job.k, 96u);
  EXPECT_EQ(job.batch, 1u);
  EXPECT_EQ(job.lda, 96u);
  EXPECT_EQ(job.ldb, 24u);
  EXPECT_EQ(job.ldo, 24u);
  EXPECT_FALSE(job.transpose_a);
  EXPECT_FALSE(job.transpose_b);
  EXPECT_EQ(mme::validate(job, 1), "");
}

TEST(SynapseGraphMme, GemmTransposesSwapTheOperandDims) {
  mme::MmeJob job;
  // transpose_a: A stored K x M, shape [M, K]; transpose_b: B stored N x K, shape [K, N].
  const GraphSpec spec = one_node("gemm", {{"a", DType::F32, {40, 96}}, {"b", DType::F32, {96, 24}}},
                                  {"o", DType::BF16, {24, 40}}, {{"transpose_a", 1}, {"transpose_b", 1}});
  ASSERT_TRUE(check(spec, &job).ok());
  EXPECT_TRUE(job.transpose_a);
  EXPECT_TRUE(job.transpose_b);
  EXPECT_EQ(job.in, mme::MmeType::F32);
  EXPECT_EQ(job.out, mme::MmeType::Bf16);
  EXPECT_EQ(job.m, 40u);
  EXPECT_EQ(job.n, 24u);
  EXPECT_EQ(job.k, 96u);
  EXPECT_EQ(job.lda, 40u);
  EXPECT_EQ(job.ldb, 96u);
}

TEST(SynapseGraphMme, BatchGemmMultipliesTheBatchDims) {
  mme::MmeJob job;
  const GraphSpec spec = one_node("batch_gemm", {{"a", DType::BF16, {64, 16, 3, 2}}, {"b", DType::BF16, {32, 64, 3, 2}}},
                                  {"o", DType::BF16, {32, 16, 3, 2}});
  ASSERT_TRUE(check(spec, &job).ok());
  EXPECT_EQ(job.batch, 6u);
  EXPECT_EQ(job.batch_stride_a, 16u * 64u);
  EXPECT_EQ(job.batch_stride_b, 64u * 32u);
  EXPECT_EQ(job.batch_stride_o, 16u * 32u);
}

TEST(SynapseGraphMme, BadGemmDimsNameNodeAndTensor) {
  GraphSpec spec = mlp_spec();
  spec.tensor("w2").shape = {10, 64};
  Result r = validate(build(spec));
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message, "node 'fc2': tensor 'w2': gemm: input 1 (B): K is 64 (shape [10, 64] as [N, K]), but input 0 (A) has K 128");

  spec = mlp_spec();
  spec.tensor("logits").shape = {10, 16};
  r = validate(build(spec));
  EXPECT_EQ(r.message, "node 'fc2': tensor 'logits': gemm: output 0 (O): shape [10, 16], expected [N, M] = [10, 32]");

  spec = mlp_spec();
  spec.tensor("x").shape = {256, 32, 1};
  r = validate(build(spec));
  EXPECT_EQ(r.message, "node 'fc1': tensor 'x': gemm: input 0 (A): 3 dims, gemm takes 2 ([K, M])");

  spec = mlp_spec();
  spec.node("fc1").params.attributes = {{"transpose_b", 1}};   // B is then [K, N]
  r = validate(build(spec));
  EXPECT_EQ(r.message, "node 'fc1': tensor 'w1': gemm: input 1 (B): K is 128 (shape [128, 256] as [K, N]), but input 0 (A) has K 256");

  spec = mlp_spec();
  spec.tensor("w1").dtype = DType::BF16;
  r = validate(build(spec));
  EXPECT_EQ(r.message, "node 'fc1': tensor 'w1': gemm: input 1 (B): dtype bf16, but input 0 (A) is f32 (the MME takes one input type)");

  spec = mlp_spec();
  spec.tensor("x").dtype = DType::I32;
  r = validate(build(spec));
  EXPECT_EQ(r.message, "node 'fc1': tensor 'x': gemm: input 0 (A): dtype i32, but gemm takes bf16 or f32");

  spec = mlp_spec();
  spec.tensor("h").dtype = DType::I16;
  r = validate(build(spec));
  EXPECT_EQ(r.message, "node 'fc1': tensor 'h': gemm: output 0 (O): dtype i16, but gemm writes bf16 or f32");
}

TEST(SynapseGraphMme, GemmNodeErrors) {
  GraphSpec spec = mlp_spec();
  spec.node("fc1").inputs = {"x"};
  EXPECT_EQ(validate(build(spec)).message, "node 'fc1': gemm takes 2 inputs (A, B), got 1");
  spec = mlp_spec();
  spec.node("fc1").params.scalars = {1.0f};
  EXPECT_EQ(validate(build(spec)).message, "node 'fc1': gemm takes no scalar parameters, got 1");
  spec = mlp_spec();
  spec.node("fc1").params.attributes = {{"transpose", 1}};
  EXPECT_EQ(validate(build(spec)).message,
            "node 'fc1': gemm: unknown attribute 'transpose' (gemm takes transpose_a, transpose_b)");
  spec = mlp_spec();
  spec.node("fc1").params.attributes = {{"transpose_a", 2}};
  EXPECT_EQ(validate(build(spec)).message, "node 'fc1': gemm: attribute transpose_a is 2, must be 0 or 1");

  // The MME job's own limit: an operand of more than 2^28 elements.
  spec = one_node("gemm", {{"a", DType::BF16, {32768, 16384}}, {"b", DType::BF16, {16, 32768}}},
                  {"o", DType::F32, {16, 16384}});
  EXPECT_EQ(check(spec).message, "node 'op': gemm: MME job: an operand of M 16384, N 16, K 32768 exceeds 2^28 elements");

  spec = one_node("batch_gemm", {{"a", DType::BF16, {8, 4, 3}}, {"b", DType::BF16, {5, 8, 2}}},
                  {"o", DType::BF16, {5, 4, 3}});
  EXPECT_EQ(check(spec).message, "node 'op': tensor 'b': batch_gemm: input 1 (B): batch dims [2] differ from input 0 (A)'s [3]");
  spec = one_node("batch_gemm", {{"a", DType::BF16, {8, 4}}, {"b", DType::BF16, {5, 8}}}, {"o", DType::BF16, {5, 4}});
  EXPECT_EQ(check(spec).message,
            "node 'op': tensor 'a': batch_gemm: input 0 (A): 2 dims, batch_gemm takes 3 to 5 ([K, M, batch...])");
}

// x [C, W, H, N] = [3, 8, 8, 2], w [K, C, S, R] = [4, 3, 3, 3], stride 2, pad 1: P = Q = 4.
const std::map<std::string, int64_t> kStride2Pad1 = {{"stride_h", 2}, {"stride_w", 2}, {"pad_h", 1}, {"pad_w", 1}};

TEST(SynapseGraphMme, ConvolutionsLowerToTheirImplicitGemms) {
  mme::MmeJob job;
  ASSERT_TRUE(check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 8, 8, 2}}, {"w", DType::BF16, {4, 3, 3, 3}}},
                             {"y", DType::BF16, {4, 4, 4, 2}}, kStride2Pad1),
                    &job)
                  .ok());
  EXPECT_EQ(job.op, mme::MmeOp::ConvForward);
  EXPECT_EQ(job.conv.n, 2u);
  EXPECT_EQ(job.conv.h, 8u);
  EXPECT_EQ(job.conv.w, 8u);
  EXPECT_EQ(job.conv.c, 3u);
  EXPECT_EQ(job.conv.k, 4u);
  EXPECT_EQ(job.conv.r, 3u);
  EXPECT_EQ(job.conv.s, 3u);
  EXPECT_EQ(job.conv.stride_h, 2u);
  EXPECT_EQ(job.conv.pad_w, 1u);
  EXPECT_EQ(job.conv.dil_h, 1u);
  const mme::GemmDims fwd = mme::gemm_dims(job);
  EXPECT_EQ(fwd.m, 2u * 4 * 4);
  EXPECT_EQ(fwd.n, 4u);
  EXPECT_EQ(fwd.k, 3u * 3 * 3);

  ASSERT_TRUE(check(one_node("dedx", {{"dy", DType::F32, {4, 4, 4, 2}}, {"w", DType::F32, {4, 3, 3, 3}}},
                             {"dx", DType::F32, {3, 8, 8, 2}}, kStride2Pad1),
                    &job)
                  .ok());
  EXPECT_EQ(job.op, mme::MmeOp::ConvBackwardData);
  EXPECT_EQ(job.in, mme::MmeType::F32);
  EXPECT_EQ(mme::gemm_dims(job).m, 2u * 8 * 8);

  ASSERT_TRUE(check(one_node("dedw", {{"dy", DType::BF16, {4, 4, 4, 2}}, {"x", DType::BF16, {3, 8, 8, 2}}},
                             {"dw", DType::F32, {4, 3, 3, 3}}, kStride2Pad1),
                    &job)
                  .ok());
  EXPECT_EQ(job.op, mme::MmeOp::ConvBackwardWeight);
  EXPECT_EQ(job.out, mme::MmeType::F32);
  EXPECT_EQ(mme::gemm_dims(job).k, 2u * 4 * 4);

  // Dilation 2 without padding: P = (8 - 2 * 2 - 1) / 1 + 1 = 4, Q likewise with S = 3.
  ASSERT_TRUE(check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 8, 8, 1}}, {"w", DType::BF16, {5, 3, 3, 3}}},
                             {"y", DType::F32, {5, 4, 4, 1}}, {{"dil_h", 2}, {"dil_w", 2}}))
                  .ok());
}

TEST(SynapseGraphMme, BadConvolutionsNameNodeAndTensor) {
  // Output shape: stride 1 gives 8 x 8, not 4 x 4.
  Result r = check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 8, 8, 2}}, {"w", DType::BF16, {4, 3, 3, 3}}},
                            {"y", DType::BF16, {4, 4, 4, 2}}, {{"pad_h", 1}, {"pad_w", 1}}));
  EXPECT_EQ(r.status, Status::InvalidArgument);
  EXPECT_EQ(r.message,
            "node 'op': tensor 'y': spatial_convolution: output 0 (y): shape [4, 4, 4, 2], expected [K, Q, P, N] = [4, 8, 8, 2]");
  // Channels of the weights against the activations.
  r = check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 8, 8, 2}}, {"w", DType::BF16, {4, 5, 3, 3}}},
                     {"y", DType::BF16, {4, 6, 6, 2}}));
  EXPECT_EQ(r.message,
            "node 'op': tensor 'w': spatial_convolution: input 1 (w): C is 5 (shape [4, 5, 3, 3] as [K, C, S, R]), but "
            "input 0 (x) has C 3");
  // dedx: the weights against dx (the output), dy checked last.
  r = check(one_node("dedx", {{"dy", DType::BF16, {4, 4, 4, 2}}, {"w", DType::BF16, {4, 3, 3, 3}}},
                     {"dx", DType::BF16, {2, 8, 8, 2}}, kStride2Pad1));
  EXPECT_EQ(r.message,
            "node 'op': tensor 'w': dedx: input 1 (w): C is 3 (shape [4, 3, 3, 3] as [K, C, S, R]), but output 0 (dx) "
            "has C 2");
  r = check(one_node("dedx", {{"dy", DType::BF16, {4, 5, 4, 2}}, {"w", DType::BF16, {4, 3, 3, 3}}},
                     {"dx", DType::BF16, {3, 8, 8, 2}}, kStride2Pad1));
  EXPECT_EQ(r.message,
            "node 'op': tensor 'dy': dedx: input 0 (dy): shape [4, 5, 4, 2], expected [K, Q, P, N] = [4, 4, 4, 2]");
  r = check(one_node("dedw", {{"dy", DType::BF16, {4, 4, 4, 2}}, {"x", DType::BF16, {3, 8, 8, 2}}},
                     {"dw", DType::BF16, {4, 3, 3}}, kStride2Pad1));
  EXPECT_EQ(r.message, "node 'op': tensor 'dw': dedw: output 0 (dw): 3 dims, dedw takes 4 ([K, C, S, R])");
  // The filter does not fit: mme::validate's message.
  r = check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 2, 2, 1}}, {"w", DType::BF16, {4, 3, 5, 5}}},
                     {"y", DType::BF16, {4, 1, 1, 1}}));
  EXPECT_EQ(r.message,
            "node 'op': spatial_convolution: MME job: the filter does not fit the padded input (output would be empty)");
  r = check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 8, 8, 2}}, {"w", DType::F32, {4, 3, 3, 3}}},
                     {"y", DType::BF16, {4, 6, 6, 2}}));
  EXPECT_EQ(r.message,
            "node 'op': tensor 'w': spatial_convolution: input 1 (w): dtype f32, but input 0 (x) is bf16 (the MME "
            "takes one input type)");
  r = check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 8, 8, 2}}, {"w", DType::BF16, {4, 3, 3, 3}}},
                     {"y", DType::BF16, {4, 6, 6, 2}}, {{"stride_h", 0}}));
  EXPECT_EQ(r.message, "node 'op': spatial_convolution: attribute stride_h is 0, must be 1 .. 65535");
  r = check(one_node("spatial_convolution", {{"x", DType::BF16, {3, 8, 8, 2}}, {"w", DType::BF16, {4, 3, 3, 3}}},
                     {"y", DType::BF16, {4, 6, 6, 2}}, {{"padding", 1}}));
  EXPECT_EQ(r.message,
            "node 'op': spatial_convolution: unknown attribute 'padding' (spatial_convolution takes stride_h, stride_w, "
            "pad_h, pad_w, dil_h, dil_w)");
}

TEST(SynapseGraphMme, GuidsAreKnown) {
  EXPECT_EQ(mme_guids(), (std::vector<std::string>{"gemm", "batch_gemm", "spatial_convolution", "dedx", "dedw"}));
  EXPECT_TRUE(is_mme_guid("dedw"));
  EXPECT_FALSE(is_mme_guid("add_fwd_f32"));
  const Graph g = build(mlp_spec());
  const Result r = mme_job_for(g, *g.find_node("relu1"));
  EXPECT_EQ(r.status, Status::Unsupported);
  EXPECT_EQ(r.message, "node 'relu1': 'relu_fwd_f32' is not an MME GUID");
}

}  // namespace
}  // namespace hpusim::synapse::graph
