// The tensor-list GUIDs (fused_adam[w]_f32, fused_sgd_f32, fused_clip_norm_f32): every part run
// in order on simulated cores, against double-precision references of PyTorch's formulas, over
// several steps (the step count and lr are read from the state tensor).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

// The node's tensors in memory: input k at in[k]; output k at the address of input
// `alias[k]`, or fresh when alias[k] < 0. Runs every part on `cores` cores, phase by phase.
struct ListRun {
  SimMemory mem;
  std::vector<uint64_t> in_bases, out_bases;
  std::string error;
  size_t parts = 0;
};

void run_list(ListRun& run, const std::string& guid, const std::vector<HostTensor>& inputs,
              const std::vector<HostTensor>& outputs, const std::vector<int>& alias, const std::vector<float>& scalars,
              unsigned cores, unsigned vector_bits = KernelLibrary::kDefaultVectorBits) {
  KernelParams p;
  for (const HostTensor& t : inputs) p.inputs.push_back(t.params());
  for (const HostTensor& t : outputs) p.outputs.push_back(t.params());
  p.scalars = scalars;
  const InstantiateResult r = KernelLibrary::instance(vector_bits).instantiate(guid, p);
  if (!r.ok()) {
    run.error = r.message;
    return;
  }
  ASSERT_FALSE(r.inst.has_value());
  if (run.in_bases.empty()) {
    for (const HostTensor& t : inputs) run.in_bases.push_back(run.mem.alloc(t.span() * t.elem_bytes()));
    for (size_t k = 0; k < outputs.size(); ++k)
      run.out_bases.push_back(alias[k] >= 0 ? run.in_bases[static_cast<size_t>(alias[k])]
                                            : run.mem.alloc(outputs[k].span() * outputs[k].elem_bytes()));
    for (size_t k = 0; k < inputs.size(); ++k) store_tensor(run.mem, run.in_bases[k], inputs[k]);
  }
  std::vector<uint64_t> bases = run.in_bases;
  bases.insert(bases.end(), run.out_bases.begin(), run.out_bases.end());
  uint32_t phase = 0;
  for (const KernelPart& part : r.parts) {
    EXPECT_GE(part.phase, phase);
    phase = part.phase;
    std::vector<uint64_t> in, out;
    for (size_t k = 0; k < part.tensors.size(); ++k)
      (k < part.inst.inputs.size() ? in : out).push_back(bases.at(part.tensors[k]));
    for (const CoreSlice& s : partition_index_space(part.inst.ispace_geometry, cores)) {
      tpc::TpcCoreConfig config;
      config.vector_bits = vector_bits;
      tpc::TpcExecutor ex(config);
      ex.set_global_memory(&run.mem);
      ex.launch(part.inst.launch_context(in, out, s.offset, s.size));
      const tpc::RunResult res = ex.run(part.inst.program->bundles, 100'000'000);
      if (res.status != tpc::CoreStatus::Halted) {
        run.error = part.inst.variant + ": " + ex.state().fault.message;
        return;
      }
    }
  }
  run.parts = r.parts.size();
}

HostTensor read(ListRun& run, uint64_t base, const HostTensor& like) {
  HostTensor t = like;
  load_tensor(run.mem, base, t);
  return t;
}

HostTensor random_tensor(std::vector<uint32_t> shape, uint32_t seed, float lo, float hi) {
  HostTensor t(DType::F32, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  fill(t, [&] { return dist(gen); });
  return t;
}

HostTensor state_tensor(float steps, float lr) {
  HostTensor t(DType::F32, {2});
  t.data = {bits_of(steps), bits_of(lr)};
  return t;
}

void expect_close(float got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), rel * std::fabs(want) + 1e-12) << what << ": got " << got << ", want " << want;
}

const std::vector<std::vector<uint32_t>> kShapes = {{1}, {300}, {65, 3}, {64, 2, 2}};

TEST(TpcKernelTensorList, AdamAndAdamWOverSteps) {
  for (const std::string guid : {"fused_adamw_f32", "fused_adam_f32"}) {
    for (const float wd : {0.0f, 0.01f}) {
      const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
      std::vector<HostTensor> in{state_tensor(0.0f, lr)}, out{state_tensor(0.0f, lr)};
      std::vector<int> alias{0};
      uint32_t seed = 11;
      for (const auto& shape : kShapes) {
        const size_t first = in.size();
        in.push_back(random_tensor(shape, seed++, -1.0f, 1.0f));
        in.push_back(random_tensor(shape, seed++, -1.0f, 1.0f));
        in.push_back(HostTensor(DType::F32, shape));
        in.push_back(HostTensor(DType::F32, shape));
        for (size_t k : {0, 2, 3}) {
          out.push_back(in[first + k]);
          alias.push_back(static_cast<int>(first + k));
        }
      }
      // The reference in double, as PyTorch's single-tensor Adam(W) with a constant gradient.
      std::vector<std::vector<double>> p, m, v;
      for (size_t e = 0; e < kShapes.size(); ++e) {
        const HostTensor& pt = in[1 + 4 * e];
        p.emplace_back(pt.count());
        m.emplace_back(pt.count(), 0.0);
        v.emplace_back(pt.count(), 0.0);
        for (size_t i = 0; i < pt.count(); ++i) p[e][i] = pt.at(i);
      }
      ListRun run;
      for (int step = 1; step <= 3; ++step) {
        run_list(run, guid, in, out, alias, {b1, b2, eps, wd, 1.0f}, step == 2 ? 1 : 8);
        ASSERT_TRUE(run.error.empty()) << run.error;
        EXPECT_EQ(run.parts, kShapes.size() + 1);
        const double bc1 = 1.0 - std::pow(double{b1}, step), bc2 = 1.0 - std::pow(double{b2}, step);
        for (size_t e = 0; e < kShapes.size(); ++e) {
          const HostTensor& g = in[2 + 4 * e];
          for (size_t i = 0; i < g.count(); ++i) {
            double grad = g.at(i);
            if (guid == "fused_adamw_f32") p[e][i] *= 1.0 - double{lr} * wd;
            else grad += wd * p[e][i];
            m[e][i] = m[e][i] * b1 + (1.0 - b1) * grad;
            v[e][i] = v[e][i] * b2 + (1.0 - b2) * grad * grad;
            p[e][i] -= (lr / bc1) * m[e][i] / (std::sqrt(v[e][i]) / std::sqrt(bc2) + eps);
          }
          const HostTensor got_p = read(run, run.in_bases[1 + 4 * e], in[1 + 4 * e]);
          const HostTensor got_m = read(run, run.in_bases[3 + 4 * e], in[3 + 4 * e]);
          for (size_t i = 0; i < g.count(); i += 7) {
            const std::string what = guid + " wd " + std::to_string(wd) + " step " + std::to_string(step) + " entry " +
                                     std::to_string(e) + " elem " + std::to_string(i);
            expect_close(got_p.at(i), p[e][i], 2e-6, what + " param");
            expect_close(got_m.at(i), m[e][i], 2e-6, what + " exp_avg");
          }
        }
        const HostTensor state = read(run, run.in_bases[0], in[0]);
        EXPECT_EQ(state.at(0), static_cast<float>(step)) << "the step count";
        EXPECT_EQ(state.at(1), lr) << "lr stays";
      }
    }
  }
}

TEST(TpcKernelTensorList, WithoutTheStateOutputAnOptimizerUpdatesItsEntriesAndLeavesTheStepCount) {
  // The compiler splits a parameter group into such nodes plus one with the state output; each
  // entry must come out bit for bit as the whole node makes it, and the count moves once.
  const std::vector<float> scalars{0.9f, 0.999f, 1e-8f, 0.01f, 1.0f};
  std::vector<HostTensor> in{state_tensor(4.0f, 1e-3f)}, out{state_tensor(0.0f, 1e-3f)}, update_out;
  std::vector<int> alias{0}, update_alias;
  uint32_t seed = 5;
  for (const auto& shape : kShapes) {
    const size_t first = in.size();
    in.push_back(random_tensor(shape, seed++, -1.0f, 1.0f));
    in.push_back(random_tensor(shape, seed++, -1.0f, 1.0f));
    in.push_back(random_tensor(shape, seed++, -0.1f, 0.1f));
    in.push_back(random_tensor(shape, seed++, 0.0f, 0.01f));
    for (size_t k : {0, 2, 3}) {
      out.push_back(in[first + k]);
      alias.push_back(static_cast<int>(first + k));
      update_out.push_back(in[first + k]);
      update_alias.push_back(static_cast<int>(first + k));
    }
  }
  ListRun whole, update;
  run_list(whole, "fused_adamw_f32", in, out, alias, scalars, 8);
  ASSERT_TRUE(whole.error.empty()) << whole.error;
  run_list(update, "fused_adamw_f32", in, update_out, update_alias, scalars, 8);
  ASSERT_TRUE(update.error.empty()) << update.error;
  EXPECT_EQ(whole.parts, kShapes.size() + 1);
  EXPECT_EQ(update.parts, kShapes.size()) << "no step-count part";
  for (size_t k = 1; k < in.size(); ++k)
    EXPECT_EQ(read(update, update.in_bases[k], in[k]).data, read(whole, whole.in_bases[k], in[k]).data) << "input " << k;
  EXPECT_EQ(read(update, update.in_bases[0], in[0]).at(0), 4.0f) << "the step count stays";
  EXPECT_EQ(read(whole, whole.in_bases[0], in[0]).at(0), 5.0f);
}

TEST(TpcKernelTensorList, SgdPlainMomentumNesterov) {
  struct Case {
    float momentum, dampening, wd, nesterov;
  };
  for (const Case c : {Case{0.0f, 0.0f, 0.0f, 0.0f}, Case{0.9f, 0.0f, 1e-4f, 0.0f}, Case{0.9f, 0.1f, 0.0f, 0.0f},
                       Case{0.9f, 0.0f, 1e-2f, 1.0f}}) {
    const bool has_buf = c.momentum != 0.0f;
    const float lr = 0.05f;
    std::vector<HostTensor> in{state_tensor(0.0f, lr)}, out{state_tensor(0.0f, lr)};
    std::vector<int> alias{0};
    uint32_t seed = 3;
    for (const auto& shape : kShapes) {
      const size_t first = in.size();
      in.push_back(random_tensor(shape, seed++, -1.0f, 1.0f));
      in.push_back(random_tensor(shape, seed++, -1.0f, 1.0f));
      out.push_back(in[first]);
      alias.push_back(static_cast<int>(first));
      if (has_buf) {
        in.push_back(random_tensor(shape, seed++, -5.0f, 5.0f));   // ignored at the first step
        out.push_back(in[first + 2]);
        alias.push_back(static_cast<int>(first + 2));
      }
    }
    const size_t per = has_buf ? 3 : 2;
    std::vector<std::vector<float>> p, buf;
    for (size_t e = 0; e < kShapes.size(); ++e) {
      const HostTensor& pt = in[1 + per * e];
      p.emplace_back(pt.count());
      buf.emplace_back(pt.count(), 0.0f);
      for (size_t i = 0; i < pt.count(); ++i) p[e][i] = pt.at(i);
    }
    ListRun run;
    for (int step = 1; step <= 2; ++step) {
      run_list(run, "fused_sgd_f32", in, out, alias, {c.momentum, c.dampening, c.wd, c.nesterov}, 8);
      ASSERT_TRUE(run.error.empty()) << run.error;
      for (size_t e = 0; e < kShapes.size(); ++e) {
        const HostTensor& g = in[2 + per * e];
        const HostTensor got = read(run, run.in_bases[1 + per * e], in[1 + per * e]);
        for (size_t i = 0; i < g.count(); ++i) {
          // PyTorch's single-tensor SGD, in f32 as the kernel computes it.
          float d = g.at(i);
          if (c.wd != 0.0f) d = d + p[e][i] * c.wd;
          if (has_buf) {
            buf[e][i] = step == 1 ? d : buf[e][i] * c.momentum + d * (1.0f - c.dampening);
            d = c.nesterov != 0.0f ? d + buf[e][i] * c.momentum : buf[e][i];
          }
          p[e][i] = p[e][i] + d * -lr;
          ASSERT_EQ(got.data[i], bits_of(p[e][i])) << "momentum " << c.momentum << " nesterov " << c.nesterov << " step "
                                                   << step << " entry " << e << " elem " << i;
        }
      }
    }
  }
}

TEST(TpcKernelTensorList, ClipNormScalesEveryGradient) {
  for (const unsigned bits : {2048u, 512u, 4096u}) {
    for (const float max_norm : {1.0f, 1e6f}) {
      std::vector<HostTensor> in, out;
      std::vector<int> alias;
      const std::vector<std::vector<uint32_t>> shapes = {{1}, {5000}, {65, 7}};
      uint32_t seed = 21;
      for (const auto& shape : shapes) in.push_back(random_tensor(shape, seed++, -1.0f, 1.0f));
      for (size_t i = 0; i < in.size(); ++i) {
        out.push_back(in[i]);
        alias.push_back(static_cast<int>(i));
      }
      out.push_back(HostTensor(DType::F32, {1}));
      out.push_back(HostTensor(DType::F32, {static_cast<uint32_t>(64 * shapes.size() + 1)}));
      alias.push_back(-1);
      alias.push_back(-1);
      ListRun run;
      run_list(run, "fused_clip_norm_f32", in, out, alias, {max_norm}, 8, bits);
      ASSERT_TRUE(run.error.empty()) << run.error;
      double sum = 0.0;
      for (const HostTensor& g : in)
        for (size_t i = 0; i < g.count(); ++i) sum += double{g.at(i)} * g.at(i);
      const double norm = std::sqrt(sum);
      const HostTensor got_norm = read(run, run.out_bases[shapes.size()], out[shapes.size()]);
      expect_close(got_norm.at(0), norm, 1e-6, "total norm at " + std::to_string(bits) + " bits");
      const float coef = std::min(max_norm / (got_norm.at(0) + 1e-6f), 1.0f);
      for (size_t k = 0; k < in.size(); ++k) {
        const HostTensor got = read(run, run.in_bases[k], in[k]);
        for (size_t i = 0; i < got.count(); ++i)
          ASSERT_EQ(got.data[i], bits_of(in[k].at(i) * coef)) << "grad " << k << " elem " << i << " max_norm " << max_norm;
      }
    }
  }
}

TensorParams f32(std::vector<uint32_t> shape) { return {DType::F32, std::move(shape), {}}; }

TEST(TpcKernelTensorList, ValidationNamesTheProblem) {
  KernelLibrary& lib = KernelLibrary::instance();
  auto expect = [](const InstantiateResult& r, GlueStatus status, const std::string& text) {
    EXPECT_EQ(r.status, status) << r.message;
    EXPECT_NE(r.message.find(text), std::string::npos) << r.message;
  };
  const std::vector<float> adam{0.9f, 0.999f, 1e-8f, 0.0f, 1.0f};
  expect(lib.instantiate("fused_adamw_f32", {{f32({2}), f32({8}), f32({8}), f32({8})}, {f32({2})}, adam}),
         GlueStatus::IncompatibleInputCount, "one or more groups of (param, grad, exp_avg, exp_avg_sq)");
  expect(lib.instantiate("fused_adamw_f32", {{f32({3}), f32({8}), f32({8}), f32({8}), f32({8})},
                                             {f32({3}), f32({8}), f32({8}), f32({8})}, adam}),
         GlueStatus::IncompatibleInputSize, "must have 2 elements (steps taken, lr)");
  expect(lib.instantiate("fused_adamw_f32", {{f32({2}), f32({8}), f32({8}), f32({7}), f32({8})},
                                             {f32({2}), f32({8}), f32({8}), f32({8})}, adam}),
         GlueStatus::IncompatibleInputSize, "input 3: shape [7] differs from input 1's [8]");
  expect(lib.instantiate("fused_adamw_f32", {{f32({2}), f32({8}), f32({8}), f32({8}), f32({8})},
                                             {f32({2}), f32({8}), f32({8}), f32({8})}, {1.0f, 0.999f, 1e-8f, 0.0f, 1.0f}}),
         GlueStatus::IncompatibleScalarParams, "scalar 0 (beta1) must be in [0, 1)");
  expect(lib.instantiate("fused_adam_f32", {{f32({2}), f32({8}), f32({8}), f32({8}), f32({8})}, {f32({2}), f32({8})}, adam}),
         GlueStatus::IncompatibleOutputCount,
         "takes 4 outputs for 1 list entries (the state, then (param, exp_avg, exp_avg_sq) each; or only the (param, "
         "exp_avg, exp_avg_sq) to leave the step count alone), got 2");
  EXPECT_TRUE(lib.instantiate("fused_adam_f32", {{f32({2}), f32({8}), f32({8}), f32({8}), f32({8})},
                                                 {f32({8}), f32({8}), f32({8})}, adam})
                  .ok())
      << "the update-only form";
  expect(lib.instantiate("fused_adam_f32", {{f32({3}), f32({8}), f32({8}), f32({8}), f32({8})},
                                            {f32({8}), f32({8}), f32({8})}, adam}),
         GlueStatus::IncompatibleInputSize, "the state (input 0) must have 2 elements (steps taken, lr), got [3]");
  expect(lib.instantiate("fused_sgd_f32", {{f32({2}), f32({8}), f32({8}), f32({8})}, {f32({2}), f32({8}), f32({8})},
                                           {0.9f, 0.5f, 0.0f, 1.0f}}),
         GlueStatus::IncompatibleScalarParams, "Nesterov momentum requires a momentum and zero dampening");
  expect(lib.instantiate("fused_clip_norm_f32", {{f32({8})}, {f32({8}), f32({1}), f32({64})}, {1.0f}}),
         GlueStatus::IncompatibleOutputSize, "output 2 (scratch) must have 64 * 1 + 1 = 65 elements");
  expect(lib.instantiate("fused_clip_norm_f32", {{{DType::BF16, {8}, {}}}, {f32({8}), f32({1}), f32({65})}, {1.0f}}),
         GlueStatus::IncompatibleDataType, "input 0: dtype bf16");
  EXPECT_TRUE(lib.has_guid("fused_clip_norm_f32"));
  const auto all = lib.guids();
  EXPECT_NE(std::find(all.begin(), all.end(), "fused_sgd_f32"), all.end());
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
