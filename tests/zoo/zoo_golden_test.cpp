// Golden device and host times of the MLP's steps (modeled host time: deterministic), through
// hpusim run's runner. A change to any layer's timing shows here; rewrite with
// HPUSIM_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/zoo_testing.h"

namespace hpusim::zoo {
namespace {

TEST(ZooGolden, MlpStepTimesOnHl205) {
  RunOptions options;
  options.workload = "mlp";
  options.steps = 3;
  std::ostringstream log;
  const std::vector<StepRecord> steps = run_workload(options, log);
  ASSERT_EQ(steps.size(), 3u);
  testing::check_step_goldens("zoo_steps.txt", "mlp_hl205", steps);
  EXPECT_GT(steps[0].mme_utilisation, 0.0);
}

// The same on the Gaudi 2 and 3 class presets, each in a file of its own (a rewrite of one never
// touches another's). Both are built on the Gaudi 1 engine map for now (hw/card/README.md).
TEST(ZooGolden, MlpStepTimesOnHl225) {
  RunOptions options;
  options.workload = "mlp";
  options.preset = "hl225";
  options.steps = 3;
  std::ostringstream log;
  const std::vector<StepRecord> steps = run_workload(options, log);
  ASSERT_EQ(steps.size(), 3u);
  testing::check_step_goldens("zoo_steps_hl225.txt", "mlp_hl225", steps);
}

TEST(ZooGolden, MlpStepTimesOnHl325) {
  RunOptions options;
  options.workload = "mlp";
  options.preset = "hl325";
  options.steps = 3;
  std::ostringstream log;
  const std::vector<StepRecord> steps = run_workload(options, log);
  ASSERT_EQ(steps.size(), 3u);
  testing::check_step_goldens("zoo_steps_hl325.txt", "mlp_hl325", steps);
}

}  // namespace
}  // namespace hpusim::zoo
