// Golden device and host times of the conv block's steps (modeled host time: deterministic),
// through hpusim run's runner. A change to any layer's timing shows here; rewrite with
// HPUSIM_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "sim/zoo/run_workload.h"
#include "tests/support/golden.h"

namespace hpusim::zoo {
namespace {

TEST(ZooConvBlockGolden, StepTimesOnHl205) {
  RunOptions options;
  options.workload = "conv-block";
  options.steps = 3;
  std::ostringstream log;
  const std::vector<StepRecord> steps = run_workload(options, log);
  ASSERT_EQ(steps.size(), 3u);
  testing::GoldenFile golden("zoo_conv_block_steps.txt");
  for (const StepRecord& r : steps) {
    const std::string key = "conv_block_hl205.step" + std::to_string(r.step);
    golden.check(key + ".device_ns", r.device_ns);
    golden.check(key + ".step_ns", r.step_ns);
    uint32_t loss_bits;
    std::memcpy(&loss_bits, &r.loss, 4);
    golden.check(key + ".loss_bits", loss_bits);
  }
  EXPECT_EQ(steps[0].compiles, 1u);
  EXPECT_EQ(steps[1].compiles, 0u);
  EXPECT_EQ(steps[1].cache_hits, 1u);
  EXPECT_GT(steps[0].tpc_utilisation, 0.0);
  EXPECT_GT(steps[0].mme_utilisation, 0.0);
  EXPECT_LE(steps[0].tpc_utilisation, 1.0);
}

}  // namespace
}  // namespace hpusim::zoo
