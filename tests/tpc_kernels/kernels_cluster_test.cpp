// Elementwise clusters (KernelLibrary::instantiate_cluster): a DAG of f32 elementwise ops as one
// kernel gives, bit for bit, what its ops give launched one by one, on one core and on eight, with
// one-element inputs, broadcasts along dims >= 1, constants and several outputs; malformed
// clusters and ones past the kernel's limits are refused with a message naming the problem.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels {
namespace {

using testing::HostTensor;

HostTensor random_tensor(std::vector<uint32_t> shape, uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
  HostTensor h(DType::F32, std::move(shape));
  testing::fill_uniform(h, seed, lo, hi);
  return h;
}

// The cluster's outputs computed op by op with the library's own kernels (a fill makes a
// one-element tensor, as the fill nodes a cluster absorbs do).
std::vector<HostTensor> op_by_op(const ElementwiseCluster& cluster, const std::vector<HostTensor>& inputs,
                                 const std::vector<uint32_t>& shape) {
  std::vector<HostTensor> values = inputs;
  for (const ClusterOp& op : cluster.ops) {
    std::vector<HostTensor> operands;
    for (uint32_t v : op.operands) operands.push_back(values.at(v));
    std::vector<HostTensor> result{HostTensor(DType::F32, op.operands.empty() ? std::vector<uint32_t>{1} : shape)};
    KernelParams params;
    for (const HostTensor& t : operands) params.inputs.push_back(t.params());
    params.outputs.push_back(result[0].params());
    params.scalars = op.scalars;
    const auto r = testing::run_instantiated(KernelLibrary::instance().instantiate_own_kernel(op.guid, params), operands,
                                             result, 1, KernelLibrary::kDefaultVectorBits);
    EXPECT_TRUE(r.ok) << op.guid << ": " << r.error;
    values.push_back(result[0]);
  }
  std::vector<HostTensor> outputs;
  for (uint32_t v : cluster.outputs) outputs.push_back(values.at(v));
  return outputs;
}

void expect_cluster_equals_op_by_op(const ElementwiseCluster& cluster, const std::vector<HostTensor>& inputs,
                                    const std::vector<uint32_t>& shape) {
  const std::vector<HostTensor> expected = op_by_op(cluster, inputs, shape);
  KernelParams params;
  for (const HostTensor& t : inputs) params.inputs.push_back(t.params());
  for (size_t j = 0; j < cluster.outputs.size(); ++j) params.outputs.push_back({DType::F32, shape, {}});
  const InstantiateResult inst = KernelLibrary::instance().instantiate_cluster(cluster, params);
  ASSERT_TRUE(inst.ok()) << inst.message;
  for (unsigned cores : {1u, 8u}) {
    SCOPED_TRACE(std::to_string(cores) + " cores");
    std::vector<HostTensor> outputs(cluster.outputs.size(), HostTensor(DType::F32, shape));
    const auto r = testing::run_instantiated(inst, inputs, outputs, cores, KernelLibrary::kDefaultVectorBits);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.gaps_ok);
    for (size_t j = 0; j < outputs.size(); ++j)
      for (size_t i = 0; i < outputs[j].data.size(); ++i)
        ASSERT_EQ(outputs[j].data[i], expected[j].data[i]) << "output " << j << ", element " << i;
  }
}

// torch.optim.Adadelta's single-tensor step as the bridge records it (rho 0.9, eps 1e-6, lr 0.1):
// inputs square_avg, grad, acc_delta, param; outputs the three updated tensors.
ElementwiseCluster adadelta_step() {
  ElementwiseCluster c;
  c.ops = {
      {"fill_f32", {}, {0.9f}},                 // 4
      {"mul_fwd_f32", {0, 4}, {}},              // 5: square_avg * rho
      {"addcmul_fwd_f32", {5, 1, 1}, {0.1f}},   // 6: + (1 - rho) * grad * grad
      {"fill_f32", {}, {1e-6f}},                // 7
      {"add_fwd_f32", {6, 7}, {}},              // 8
      {"sqrt_fwd_f32", {8}, {}},                // 9: std
      {"add_fwd_f32", {2, 7}, {}},              // 10
      {"sqrt_fwd_f32", {10}, {}},               // 11
      {"div_fwd_f32", {11, 9}, {}},             // 12
      {"mul_fwd_f32", {12, 1}, {}},             // 13: delta
      {"mul_fwd_f32", {2, 4}, {}},              // 14
      {"addcmul_fwd_f32", {14, 13, 13}, {0.1f}},   // 15: acc_delta
      {"fill_f32", {}, {-0.1f}},                // 16
      {"mul_fwd_f32", {13, 16}, {}},            // 17
      {"add_fwd_f32", {3, 17}, {}},             // 18: param
  };
  c.outputs = {6, 15, 18};
  return c;
}

TEST(TpcKernelCluster, TorchsAdadeltaStepIsBitIdenticalToItsOps) {
  for (const std::vector<uint32_t>& shape : {std::vector<uint32_t>{100352}, {1000}, {128, 10}, {37}}) {
    SCOPED_TRACE(std::to_string(shape[0]) + (shape.size() > 1 ? " x " + std::to_string(shape[1]) : ""));
    expect_cluster_equals_op_by_op(adadelta_step(),
                                   {random_tensor(shape, 1, 0.0f, 2.0f), random_tensor(shape, 2),
                                    random_tensor(shape, 3, 0.0f, 2.0f), random_tensor(shape, 4)},
                                   shape);
  }
}

TEST(TpcKernelCluster, BroadcastsOneElementInputsAndSeveralOutputs) {
  // y = relu(a * s + b) (s one element, b broadcast along dim 1), z = (y == 0), w = tanh_bwd(a, y)
  // + 0.5 * a / (a * s + b); outputs y, z, w.
  ElementwiseCluster c;
  c.ops = {
      {"mul_fwd_f32", {0, 1}, {}},      // 3: a * s (s one element)
      {"add_fwd_f32", {3, 2}, {}},      // 4: + b (broadcast along dim 1)
      {"relu_fwd_f32", {4}, {}},        // 5
      {"fill_f32", {}, {0.0f}},         // 6
      {"equal_fwd_f32", {5, 6}, {}},    // 7
      {"tanh_bwd_f32", {0, 5}, {}},     // 8
      {"addcdiv_fwd_f32", {8, 0, 4}, {0.5f}},   // 9
  };
  c.outputs = {5, 7, 9};
  const std::vector<uint32_t> shape{150, 7, 2};
  const std::vector<HostTensor> inputs{random_tensor(shape, 5), random_tensor({1}, 6), random_tensor({150, 1, 2}, 7)};
  expect_cluster_equals_op_by_op(c, inputs, shape);
}

TEST(TpcKernelCluster, LongMacrosInterleavedStayBitIdentical) {
  // The ops with the longest ops.inc sequences (gelu in both forms, their backward, silu, sigmoid
  // and tanh backward, comparisons): the list schedule interleaves the two vectors' copies and
  // independent ops, and the values do not move.
  ElementwiseCluster c;
  c.ops = {
      {"add_fwd_f32", {0, 1}, {}},               // 3: x = a + bias (a 3072-wide row)
      {"gelu_tanh_fwd_f32", {3}, {}},            // 4
      {"gelu_fwd_f32", {3}, {}},                 // 5: erf form
      {"gelu_tanh_bwd_f32", {2, 3}, {}},         // 6
      {"gelu_bwd_f32", {2, 3}, {}},              // 7
      {"silu_bwd_f32", {6, 7}, {}},              // 8
      {"sigmoid_bwd_f32", {8, 4}, {}},           // 9
      {"less_fwd_f32", {9, 5}, {}},              // 10
      {"relu_bwd_f32", {10, 9}, {}},             // 11
  };
  c.outputs = {4, 5, 11};
  const std::vector<uint32_t> shape{3072, 3};
  const std::vector<HostTensor> inputs{random_tensor(shape, 8), random_tensor({3072, 1}, 9), random_tensor(shape, 10)};
  expect_cluster_equals_op_by_op(c, inputs, shape);
}

// A long f32 elementwise op launched on its own runs as a cluster of one (its chain list-scheduled,
// the step's vectors interleaved): the same bits as its own kernel, on 1 and 8 cores. One-instruction ops
// and broadcasts keep their own kernels.
TEST(TpcKernelCluster, LongOpsAloneRunScheduledAndBitIdentical) {
  KernelLibrary& library = KernelLibrary::instance();
  const std::vector<uint32_t> shape{1000, 3};
  for (const std::string guid : {"gelu_fwd_f32", "gelu_bwd_f32", "silu_fwd_f32", "silu_bwd_f32", "tanh_bwd_f32",
                                 "gelu_tanh_bwd_f32", "addcdiv_fwd_f32"}) {
    SCOPED_TRACE(guid);
    const size_t arity = guid == "addcdiv_fwd_f32" ? 3 : guid.find("_bwd") != std::string::npos ? 2 : 1;
    std::vector<HostTensor> inputs;
    for (size_t k = 0; k < arity; ++k) inputs.push_back(random_tensor(shape, 20 + static_cast<uint32_t>(k), 0.5f, 3.0f));
    const std::vector<float> scalars = guid == "addcdiv_fwd_f32" ? std::vector<float>{0.25f} : std::vector<float>{};
    ElementwiseCluster alone;
    alone.ops.push_back({guid, {}, scalars});
    for (uint32_t k = 0; k < arity; ++k) alone.ops[0].operands.push_back(k);
    alone.outputs.push_back(static_cast<uint32_t>(arity));
    const std::vector<HostTensor> expected = op_by_op(alone, inputs, shape);   // the GUID's own kernel
    KernelParams params;
    for (const HostTensor& t : inputs) params.inputs.push_back(t.params());
    params.outputs.push_back({DType::F32, shape, {}});
    params.scalars = scalars;
    const InstantiateResult scheduled = library.instantiate(guid, params);
    ASSERT_TRUE(scheduled.ok()) << scheduled.message;
    EXPECT_EQ(scheduled.inst->guid, guid);
    const InstantiateResult own = library.instantiate_own_kernel(guid, params);
    ASSERT_TRUE(own.ok()) << own.message;
    EXPECT_NE(scheduled.inst->variant, own.inst->variant) << "expected the scheduled cluster of one, not the kernel file";
    for (unsigned cores : {1u, 8u}) {
      std::vector<HostTensor> outputs{HostTensor(DType::F32, shape)};
      const auto r = testing::run_instantiated(scheduled, inputs, outputs, cores, KernelLibrary::kDefaultVectorBits);
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_TRUE(r.gaps_ok);
      ASSERT_EQ(outputs[0].data, expected[0].data) << cores << " cores";
    }
  }
  const auto same_kernel = [&](const std::string& guid, const KernelParams& params) {
    const InstantiateResult chosen = library.instantiate(guid, params);
    const InstantiateResult own = library.instantiate_own_kernel(guid, params);
    ASSERT_TRUE(chosen.ok() && own.ok()) << chosen.message << own.message;
    EXPECT_EQ(chosen.inst->variant, own.inst->variant) << guid;
  };
  same_kernel("add_fwd_f32", {{{DType::F32, shape, {}}, {DType::F32, shape, {}}}, {{DType::F32, shape, {}}}, {}});
  same_kernel("addcdiv_fwd_f32", {{{DType::F32, shape, {}}, {DType::F32, {1000, 1}, {}}, {DType::F32, shape, {}}},
                                  {{DType::F32, shape, {}}}, {0.5f}});
}

// A bf16 op computed in f32 (the backward kernels, gelu, silu, addcmul / addcdiv) launched alone
// runs as a cluster of one: each bf16 vector widened into two f32 copies, the copies' chains
// list-scheduled, each result rounded once. The same bits as its kernel file (io_bf16.inc), on 1
// and 8 cores and on a row that ends inside a vector, in 30 % fewer issue cycles at least; even
// the two-instruction relu_bwd, whose kernel file waits on one vector's widen, op and narrow.
TEST(TpcKernelCluster, Bf16OpsComputedInF32RunScheduledAndBitIdentical) {
  KernelLibrary& library = KernelLibrary::instance();
  const uint32_t lanes = KernelLibrary::kDefaultVectorBits / 16;
  for (const std::string guid : {"gelu_fwd_bf16", "gelu_bwd_bf16", "relu_bwd_bf16", "silu_fwd_bf16",
                                 "gelu_tanh_bwd_bf16", "addcmul_fwd_bf16"}) {
    for (const std::vector<uint32_t>& shape : {std::vector<uint32_t>{lanes * 64}, std::vector<uint32_t>{1000, 3}}) {
      SCOPED_TRACE(guid + " on " + std::to_string(shape[0]) + "-wide rows");
      const size_t arity = guid == "addcmul_fwd_bf16" ? 3 : guid.find("_bwd") != std::string::npos ? 2 : 1;
      std::vector<HostTensor> inputs;
      for (size_t k = 0; k < arity; ++k) {
        inputs.emplace_back(DType::BF16, shape);
        testing::fill_uniform(inputs.back(), 60 + static_cast<uint32_t>(k), -3.0f, 3.0f);
      }
      KernelParams params;
      for (const HostTensor& t : inputs) params.inputs.push_back(t.params());
      params.outputs.push_back({DType::BF16, shape, {}});
      if (guid == "addcmul_fwd_bf16") params.scalars = {0.375f};
      const InstantiateResult scheduled = library.instantiate(guid, params);
      const InstantiateResult own = library.instantiate_own_kernel(guid, params);
      ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
      EXPECT_EQ(scheduled.inst->guid, guid);
      EXPECT_NE(scheduled.inst->variant, own.inst->variant) << "expected the scheduled cluster of one";
      std::vector<HostTensor> want{HostTensor(DType::BF16, shape)};
      const auto r_own = testing::run_instantiated(own, inputs, want, 1, KernelLibrary::kDefaultVectorBits);
      ASSERT_TRUE(r_own.ok) << r_own.error;
      for (unsigned cores : {1u, 8u}) {
        std::vector<HostTensor> got{HostTensor(DType::BF16, shape)};
        const auto r = testing::run_instantiated(scheduled, inputs, got, cores, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(r.ok) << r.error;
        EXPECT_TRUE(r.gaps_ok);
        ASSERT_EQ(got[0].data, want[0].data) << cores << " cores";
        if (cores == 1) {
          EXPECT_LT(r.issue_cycles * 10, r_own.issue_cycles * 7)
              << "the kernel file's " << r_own.issue_cycles << " issue cycles, less 30 % at least";
        }
      }
    }
  }
  // A chain of bf16 ops rounds after each op, so a cluster holds one.
  ElementwiseCluster chain;
  chain.ops = {{"gelu_fwd_bf16", {0}, {}}, {"gelu_fwd_bf16", {1}, {}}};
  chain.outputs = {2};
  const InstantiateResult refused =
      library.instantiate_cluster(chain, {{{DType::BF16, {256}, {}}}, {{DType::BF16, {256}, {}}}, {}});
  EXPECT_EQ(refused.message, "elementwise cluster: a bf16 cluster holds one op (a chain of bf16 ops rounds after each op)");
}

// Dropout's backward (grad * mask * 1 / (1 - p), the scale in S0) launched alone runs as a cluster
// of one, f32 and bf16: the same bits as its kernel file, and for f32 the formula's, f32 rounding
// after each product. bf16 in 30 % fewer issue cycles at least. In a cluster beside a ternary op
// each op sets its own S0.
TEST(TpcKernelCluster, DropoutBackwardRunsScheduledWithItsScaleInS0) {
  KernelLibrary& library = KernelLibrary::instance();
  std::mt19937 rng(7);
  for (const DType dtype : {DType::F32, DType::BF16}) {
    const std::string guid = dtype == DType::F32 ? "dropout_bwd_f32" : "dropout_bwd_bf16";
    const uint32_t lanes = KernelLibrary::kDefaultVectorBits / tpc::dtype_bits(dtype);
    for (const std::vector<uint32_t>& shape : {std::vector<uint32_t>{lanes * 64}, std::vector<uint32_t>{1000, 3}}) {
      HostTensor grad(dtype, shape), mask(dtype, shape);
      testing::fill_uniform(grad, 70, -3.0f, 3.0f);
      const uint32_t one_bits = dtype == DType::F32 ? 0x3f800000u : 0x3f80u;
      for (uint32_t& bits : mask.data) bits = rng() % 4 == 0 ? 0u : one_bits;
      for (const float p : {0.25f, 0.5f, 1.0f}) {
        SCOPED_TRACE(guid + " on " + std::to_string(shape[0]) + "-wide rows, p " + std::to_string(p));
        const KernelParams params{{grad.params(), mask.params()}, {{dtype, shape, {}}}, {p}};
        const InstantiateResult scheduled = library.instantiate(guid, params);
        const InstantiateResult own = library.instantiate_own_kernel(guid, params);
        ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
        EXPECT_EQ(scheduled.inst->guid, guid);
        EXPECT_NE(scheduled.inst->variant, own.inst->variant) << "expected the scheduled cluster of one";
        std::vector<HostTensor> want{HostTensor(dtype, shape)};
        const auto r_own = testing::run_instantiated(own, {grad, mask}, want, 1, KernelLibrary::kDefaultVectorBits);
        ASSERT_TRUE(r_own.ok) << r_own.error;
        if (dtype == DType::F32) {
          const float scale = p == 1.0f ? 0.0f : static_cast<float>(1.0 / (1.0 - static_cast<double>(p)));
          for (size_t i = 0; i < want[0].data.size(); ++i) {
            const float product = grad.at(i) * mask.at(i);
            ASSERT_EQ(want[0].at(i), product * scale) << "element " << i;
          }
        }
        for (unsigned cores : {1u, 8u}) {
          std::vector<HostTensor> got{HostTensor(dtype, shape)};
          const auto r = testing::run_instantiated(scheduled, {grad, mask}, got, cores, KernelLibrary::kDefaultVectorBits);
          ASSERT_TRUE(r.ok) << r.error;
          EXPECT_TRUE(r.gaps_ok);
          ASSERT_EQ(got[0].data, want[0].data) << cores << " cores";
          if (cores == 1 && dtype == DType::BF16) {
            EXPECT_LT(r.issue_cycles * 10, r_own.issue_cycles * 7)
                << "the kernel file's " << r_own.issue_cycles << " issue cycles, less 30 % at least";
          }
        }
      }
    }
  }
  // Dropout's backward fused with a ternary op of another S0, then relu's backward.
  ElementwiseCluster c;
  c.ops = {
      {"dropout_bwd_f32", {0, 1}, {0.5f}},         // 3: S0 = 2
      {"addcmul_fwd_f32", {3, 0, 2}, {0.375f}},    // 4: S0 = 0.375
      {"relu_bwd_f32", {4, 2}, {}},                // 5
  };
  c.outputs = {5};
  const std::vector<uint32_t> shape{1000, 3};
  HostTensor mask(DType::F32, shape);
  for (uint32_t& bits : mask.data) bits = rng() % 2 == 0 ? 0u : 0x3f800000u;
  expect_cluster_equals_op_by_op(c, {random_tensor(shape, 71), mask, random_tensor(shape, 72)}, shape);
  const KernelParams one{{{DType::F32, {64}, {}}, {DType::F32, {64}, {}}}, {{DType::F32, {64}, {}}}, {}};
  EXPECT_EQ(library.instantiate_cluster({{{"dropout_bwd_f32", {0, 1}, {1.5f}}}, {2}}, one).message,
            "elementwise cluster: op 0 (dropout_bwd_f32): p must be in [0, 1]");
}

// A long chain steps four vectors when they fit the registers, with the stream's prefetches issued
// beside the chain: gelu_tanh_bwd (19 VPU operations a vector) within two bundles a vector of its
// VPU work, against the kernel file's 2 vectors a step with the prefetches in bundles of their own.
TEST(TpcKernelCluster, LongChainsStepFourVectorsWithThePrefetchesBesideThem) {
  KernelLibrary& library = KernelLibrary::instance();
  const uint32_t lanes = KernelLibrary::kDefaultVectorBits / 32, vectors = 512;
  const std::vector<uint32_t> shape{lanes * vectors};
  const std::vector<HostTensor> inputs{random_tensor(shape, 40), random_tensor(shape, 41)};
  KernelParams params{{inputs[0].params(), inputs[1].params()}, {{DType::F32, shape, {}}}, {}};
  const InstantiateResult scheduled = library.instantiate("gelu_tanh_bwd_f32", params);
  const InstantiateResult own = library.instantiate_own_kernel("gelu_tanh_bwd_f32", params);
  ASSERT_TRUE(scheduled.ok() && own.ok()) << scheduled.message << own.message;
  EXPECT_EQ(scheduled.inst->ispace_geometry[0], static_cast<int32_t>(vectors / 4)) << "four vectors a step";
  std::vector<HostTensor> got{HostTensor(DType::F32, shape)}, want{HostTensor(DType::F32, shape)};
  const auto r = testing::run_instantiated(scheduled, inputs, got, 1, KernelLibrary::kDefaultVectorBits);
  const auto r_own = testing::run_instantiated(own, inputs, want, 1, KernelLibrary::kDefaultVectorBits);
  ASSERT_TRUE(r.ok && r_own.ok) << r.error << r_own.error;
  ASSERT_EQ(got[0].data, want[0].data);
  EXPECT_LT(r.bundles, uint64_t{21} * vectors) << "19 VPU operations a vector, and little beside them";
  EXPECT_GT(r_own.bundles, uint64_t{23} * vectors);
}

// A row broadcast over every outer dim (BERT's bias before gelu) is read once per core into VLM and
// taken from there: the kernel declares it reads the whole row, and the values are the ops' own,
// with four vectors a step (3072-wide rows) and two (320-wide rows, where four would pad a row's
// five vectors to eight).
TEST(TpcKernelCluster, BiasRowsAreReadOnceIntoVlm) {
  ElementwiseCluster c;
  c.ops = {{"add_fwd_f32", {0, 1}, {}}, {"gelu_tanh_fwd_f32", {2}, {}}};
  c.outputs = {3};
  for (const auto& [width, per_step] : {std::pair<uint32_t, uint32_t>{3072, 4}, {320, 2}}) {
    SCOPED_TRACE(std::to_string(width) + " wide");
    const std::vector<uint32_t> shape{width, 13};
    const std::vector<HostTensor> inputs{random_tensor(shape, 42), random_tensor({width, 1}, 43)};
    KernelParams params{{inputs[0].params(), inputs[1].params()}, {{DType::F32, shape, {}}}, {}};
    const InstantiateResult inst = KernelLibrary::instance().instantiate_cluster(c, params);
    ASSERT_TRUE(inst.ok()) << inst.message;
    const uint32_t step = per_step * KernelLibrary::kDefaultVectorBits / 32;
    EXPECT_EQ(inst.inst->ispace_geometry[0], static_cast<int32_t>((width + step - 1) / step));
    EXPECT_EQ(inst.inst->input_patterns[1][0], (AccessPatternDim{0, 0, 0, static_cast<int32_t>(width) - 1}));
    EXPECT_EQ(inst.inst->input_patterns[0][0].a, static_cast<int32_t>(step)) << "x streams";
    expect_cluster_equals_op_by_op(c, inputs, shape);
  }
}

// The streams' lookahead fits the TPC's prefetch buffer (the preset's tpc.prefetch_entries, which
// the device reports): an eighth of the buffer kept free, the rest shared by the streamed inputs,
// within 8 .. 128 vectors; the kernels prefetch that far and compute the same bits.
TEST(TpcKernelCluster, TheLookaheadFitsThePrefetchBuffer) {
  const unsigned bits = KernelLibrary::kDefaultVectorBits;
  EXPECT_EQ(KernelLibrary::instance(bits, 128).prefetch_ahead(4), 28u);   // 112 / 4
  EXPECT_EQ(KernelLibrary::instance(bits, 256).prefetch_ahead(4), 56u);   // 224 / 4
  EXPECT_EQ(KernelLibrary::instance(bits, 512).prefetch_ahead(1), 128u);  // 448, at most 128
  EXPECT_EQ(KernelLibrary::instance(bits, 64).prefetch_ahead(4), 14u);    // 56 / 4
  EXPECT_EQ(KernelLibrary::instance(bits, 64).prefetch_ahead(1), 56u);
  EXPECT_EQ(KernelLibrary::instance(bits, 32).prefetch_ahead(2), 14u);
  EXPECT_EQ(KernelLibrary::instance(bits, 0).prefetch_ahead(1), 8u);      // a buffer of none: the least
  const std::vector<uint32_t> shape{64 * 400};
  const std::vector<HostTensor> inputs{random_tensor(shape, 50), random_tensor(shape, 51), random_tensor(shape, 52, 0.5f, 2.0f)};
  KernelParams params{{inputs[0].params(), inputs[1].params(), inputs[2].params()}, {{DType::F32, shape, {}}}, {0.25f}};
  std::vector<HostTensor> want{HostTensor(DType::F32, shape)};
  const InstantiateResult usual = KernelLibrary::instance(bits, 128).instantiate("addcdiv_fwd_f32", params);
  ASSERT_TRUE(usual.ok()) << usual.message;
  ASSERT_TRUE(testing::run_instantiated(usual, inputs, want, 8, bits).ok);
  for (unsigned entries : {0u, 64u, 256u}) {
    SCOPED_TRACE(std::to_string(entries) + " entries");
    const InstantiateResult r = KernelLibrary::instance(bits, entries).instantiate("addcdiv_fwd_f32", params);
    ASSERT_TRUE(r.ok()) << r.message;
    EXPECT_NE(r.inst->program->bundles, usual.inst->program->bundles) << "the lookahead is part of the program";
    std::vector<HostTensor> got{HostTensor(DType::F32, shape)};
    ASSERT_TRUE(testing::run_instantiated(r, inputs, got, 8, bits).ok);
    EXPECT_EQ(got[0].data, want[0].data);
  }
}

TEST(TpcKernelCluster, RefusesWhatOneKernelCannotBe) {
  KernelLibrary& library = KernelLibrary::instance();
  const KernelParams one{{{DType::F32, {64}, {}}}, {{DType::F32, {64}, {}}}, {}};
  auto message = [&](const ElementwiseCluster& c, const KernelParams& p) {
    const InstantiateResult r = library.instantiate_cluster(c, p);
    EXPECT_FALSE(r.ok());
    return r.message;
  };
  EXPECT_EQ(message({{{"relu_fwd_f32", {1}, {}}}, {1}}, one),
            "elementwise cluster: op 0 (relu_fwd_f32): operand value 1 is not an input or an earlier op's result");
  EXPECT_EQ(message({{{"softmax_fwd_f32", {0}, {}}}, {1}}, one),
            "elementwise cluster: op 0 (softmax_fwd_f32): not an f32 elementwise GUID a cluster can hold");
  EXPECT_EQ(message({{{"relu_fwd_bf16", {0}, {}}}, {1}}, one),
            "elementwise cluster: op 0 (relu_fwd_bf16): not an f32 elementwise GUID a cluster can hold");
  EXPECT_EQ(message({{{"add_fwd_f32", {0}, {}}}, {1}}, one),
            "elementwise cluster: op 0 (add_fwd_f32): takes 2 operands, got 1");
  EXPECT_EQ(message({{{"fill_f32", {}, {1.0f}}}, {1}}, one),
            "elementwise cluster: output value 1 is not the result of a computing op");
  KernelParams wide = one;
  wide.inputs.push_back({DType::F32, {64, 2}, {}});
  EXPECT_EQ(message({{{"add_fwd_f32", {0, 1}, {}}}, {2}}, wide),
            "elementwise cluster: input 1 [64, 2] does not broadcast to the outputs' [64] along dims >= 1");
  KernelParams many = one;
  many.inputs.assign(16, {DType::F32, {64}, {}});
  EXPECT_EQ(message({{{"relu_fwd_f32", {0}, {}}}, {16}}, many),
            "elementwise cluster: a cluster of 16 inputs and 1 outputs: a kernel takes at most 16 tensors");
  // Thirteen streamed inputs (two registers each) and a result need 28: said by cluster_registers,
  // refused here.
  ElementwiseCluster live;
  KernelParams thirteen = one;
  thirteen.inputs.assign(13, {DType::F32, {64}, {}});
  uint32_t sum = 0;
  for (uint32_t k = 1; k < 13; ++k) {
    live.ops.push_back({"add_fwd_f32", {k == 1 ? 0u : sum, k}, {}});
    sum = 13 + k - 1;
  }
  live.outputs = {sum};
  EXPECT_EQ(library.cluster_registers(live, thirteen), 28u);
  EXPECT_EQ(message(live, thirteen),
            "elementwise cluster: the cluster needs more than the 25 vector registers the kernel has for values");
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels
