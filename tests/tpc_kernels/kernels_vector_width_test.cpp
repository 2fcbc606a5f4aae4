// The kernel library at every TPC vector width a preset may name (tpc.vector_bits): each kind of
// kernel, run on cores of that width, gives what it gives at 2048 bits (where the other kernel
// tests check it against references): bit for bit where the kernel's arithmetic order does not
// depend on the lane count, within the references' tolerances where a row is summed across lanes
// (reductions over dim 0, softmax, layernorm).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/tpc_kernels/kernel_test_util.h"

namespace hpusim::synapse::tpc_kernels::testing {
namespace {

struct WidthCase {
  std::string guid;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;   // shapes; filled by the run
  std::vector<float> scalars;
  bool lane_order_sums = false;      // the result sums a row across lanes: compare with a tolerance
};

HostTensor random_tensor(DType t, std::vector<uint32_t> shape, float lo, float hi, uint32_t seed) {
  HostTensor x(t, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  fill(x, [&] { return dist(rng); });
  return x;
}

HostTensor indices(std::vector<uint32_t> shape, int lo, int hi, uint32_t seed) {
  HostTensor x(DType::I32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  for (uint32_t& v : x.data) v = static_cast<uint32_t>(dist(rng));
  return x;
}

// Every kind of kernel of the library, on shapes that end mid-vector at every width.
std::vector<WidthCase> cases() {
  std::vector<WidthCase> all;
  for (DType t : {DType::F32, DType::BF16}) {
    const std::string sfx = t == DType::F32 ? "_f32" : "_bf16";
    auto x = [&](std::vector<uint32_t> shape, uint32_t seed, float lo = -3, float hi = 5) {
      return random_tensor(t, std::move(shape), lo, hi, seed);
    };
    auto out = [&](std::vector<uint32_t> shape) { return HostTensor(t, std::move(shape)); };
    all.push_back({"add_fwd" + sfx, {x({150, 3, 4}, 1), x({1, 3, 1}, 2)}, {out({150, 3, 4})}, {}});
    all.push_back({"mul_fwd" + sfx, {x({300, 5}, 3), x({300, 1}, 4)}, {out({300, 5})}, {}});
    all.push_back({"tanh_fwd" + sfx, {x({1000, 3}, 5)}, {out({1000, 3})}, {}});
    all.push_back({"fill" + sfx, {}, {out({77, 3})}, {2.5f}});
    all.push_back({"gelu_tanh_bwd" + sfx, {x({333, 2}, 6), x({333, 2}, 7)}, {out({333, 2})}, {}});
    all.push_back({"addcdiv_fwd" + sfx, {x({129, 4}, 8), x({129, 1}, 9), x({1, 4}, 10, 1, 2)}, {out({129, 4})}, {0.5f}});
    all.push_back({"reduce_sum_fwd" + sfx, {x({500, 6}, 11)}, {out({1, 6})}, {0}, true});
    all.push_back({"reduce_max_fwd" + sfx, {x({500, 6}, 12)}, {out({1, 6})}, {0}});
    all.push_back({"reduce_mean_fwd" + sfx, {x({70, 9, 3}, 13)}, {out({70, 1, 3})}, {1}});
    // Split into chunks of rows (row_chunks.h), a step's block of columns as wide as the width allows.
    all.push_back({"reduce_sum_fwd" + sfx, {x({150, 520}, 40)}, {out({150, 1})}, {1}});
    all.push_back({"reduce_min_fwd" + sfx, {x({150, 520}, 41)}, {out({150, 1})}, {1}});
    all.push_back({"softmax_fwd" + sfx, {x({300, 4}, 14, -10, 10)}, {out({300, 4})}, {}, true});
    all.push_back({"log_softmax_bwd" + sfx, {x({300, 4}, 15), x({300, 4}, 16, -8, 0)}, {out({300, 4})}, {}, true});
    HostTensor mean(DType::F32, {1, 5}), rstd(DType::F32, {1, 5});
    all.push_back({"layernorm_fwd" + sfx, {x({200, 5}, 17), x({200}, 18, 0.5, 1.5), x({200}, 19)},
                   {out({200, 5}), mean, rstd}, {1e-5f}, true});
    all.push_back({"layernorm_bwd_gamma_beta" + sfx,
                   {x({200, 5}, 20), x({200, 5}, 21), random_tensor(DType::F32, {1, 5}, -1, 1, 22),
                    random_tensor(DType::F32, {1, 5}, 0.5, 2, 23)},
                   {out({200}), out({200})}, {}});
    all.push_back({"nll_loss_bwd" + sfx,
                   {x({1}, 24), indices({9}, 0, 99, 25), random_tensor(t, {1}, 9, 9, 26)},
                   {out({100, 9})}, {}});
    all.push_back({"dropout_fwd" + sfx, {x({700, 3}, 27)}, {out({700, 3}), out({700, 3})}, {0.3f, 1234}});
    all.push_back({"permute" + sfx, {x({130, 3, 5}, 28)}, {out({130, 5, 3})}, {0, 2, 1}});
    all.push_back({"permute" + sfx, {x({65, 3}, 29)}, {out({3, 65})}, {1, 0}});
    all.push_back({"embedding_fwd" + sfx, {x({300, 50}, 30), indices({7, 2}, -1, 51, 31)}, {out({300, 7, 2})}, {}});
    all.push_back({"embedding_bwd" + sfx, {x({129, 40}, 32), indices({40}, 0, 599, 33)}, {out({129, 600})}, {}});
  }
  all.push_back({"cast_f32_to_bf16", {random_tensor(DType::F32, {300, 3}, -3, 5, 34)},
                 {HostTensor(DType::BF16, {300, 3})}, {}});
  all.push_back({"cast_bf16_to_f32", {random_tensor(DType::BF16, {300, 3}, -3, 5, 35)},
                 {HostTensor(DType::F32, {300, 3})}, {}});
  auto f32 = [](std::vector<uint32_t> shape, uint32_t seed, float lo = -1, float hi = 1) {
    return random_tensor(DType::F32, std::move(shape), lo, hi, seed);
  };
  all.push_back({"adam_f32", {f32({1000}, 36), f32({1000}, 37), f32({1000}, 38), f32({1000}, 39, 0, 1)},
                 {HostTensor(DType::F32, {1000}), HostTensor(DType::F32, {1000}), HostTensor(DType::F32, {1000})},
                 {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3}});
  return all;
}

class KernelsAtVectorWidth : public ::testing::TestWithParam<unsigned> {};

TEST_P(KernelsAtVectorWidth, EveryKindOfKernelGivesWhatItGivesAt2048Bits) {
  const unsigned bits = GetParam();
  for (const WidthCase& c : cases()) {
    SCOPED_TRACE(c.guid + " at " + std::to_string(bits) + " bits");
    std::vector<HostTensor> wide = c.outputs, narrow = c.outputs;
    const RunOutcome reference = run_kernel(c.guid, c.inputs, wide, 3, c.scalars, {}, 2048);
    ASSERT_TRUE(reference.ok) << reference.error;
    const RunOutcome got = run_kernel(c.guid, c.inputs, narrow, 3, c.scalars, {}, bits);
    ASSERT_TRUE(got.ok) << got.error;
    EXPECT_TRUE(got.gaps_ok) << "a store wrote past an output's end";
    for (size_t k = 0; k < wide.size(); ++k) {
      const HostTensor& want = wide[k];
      const HostTensor& have = narrow[k];
      size_t bad = 0;
      for (size_t i = 0; i < want.data.size(); ++i) {
        if (!c.lane_order_sums) {
          bad += want.data[i] != have.data[i];
          continue;
        }
        const double a = have.at(i), b = want.at(i);
        const double rtol = want.dtype == DType::F32 ? 1e-5 : 1.0 / 64, atol = want.dtype == DType::F32 ? 1e-5 : 1e-2;
        bad += !(std::fabs(a - b) <= rtol * std::fabs(b) + atol);
      }
      EXPECT_EQ(bad, 0u) << "output " << k << ": " << bad << " of " << want.data.size() << " elements differ";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, KernelsAtVectorWidth, ::testing::Values(256u, 512u, 1024u, 4096u),
                         [](const ::testing::TestParamInfo<unsigned>& info) {
                           return std::to_string(info.param) + "Bits";
                         });

TEST(KernelLibraryWidth, LaneCountsFollowTheWidth) {
  EXPECT_EQ(KernelLibrary::instance(512).lanes_of(DType::F32), 16u);
  EXPECT_EQ(KernelLibrary::instance(512).lanes_of(DType::BF16), 32u);
  KernelParams p;
  p.inputs = {{DType::F32, {100}, {}}};
  p.outputs = {{DType::F32, {100}, {}}};
  const InstantiateResult r = KernelLibrary::instance(512).instantiate("relu_fwd_f32", p);
  ASSERT_TRUE(r.ok()) << r.message;
  // Elementwise kernels step two vectors at a time.
  EXPECT_EQ(r.inst->ispace_geometry[0], 4);   // ceil(100 / (2 x 16))
  EXPECT_EQ(KernelLibrary::instance().instantiate("relu_fwd_f32", p).inst->ispace_geometry[0], 1);   // 2 x 64 lanes
}

TEST(KernelLibraryWidth, AWidthTheLibraryCannotTakeIsRefused) {
  for (unsigned bits : {0u, 128u, 768u, 32768u}) {
    try {
      KernelLibrary library(bits);
      ADD_FAILURE() << bits << " bits was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("vector_bits must be a power of two in 256 .. 16384, not " +
                                           std::to_string(bits)),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace hpusim::synapse::tpc_kernels::testing
