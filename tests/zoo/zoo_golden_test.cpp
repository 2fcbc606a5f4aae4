// Golden device and host times of the MLP's steps (modeled host time: deterministic), through
// hpusim run's runner. A change to any layer's timing shows here; rewrite with
// HPUSIM_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/zoo_testing.h"

namespace hpusim::zoo {
namespace {

// Three MLP steps on `preset`, against the golden file `file` (one per preset, so a rewrite of one
// never touches another's).
std::vector<StepRecord> expect_mlp_goldens(const std::string& preset, const std::string& file) {
  RunOptions options;
  options.workload = "mlp";
  options.preset = preset;
  options.steps = 3;
  std::ostringstream log;
  const std::vector<StepRecord> steps = run_workload(options, log);
  EXPECT_EQ(steps.size(), 3u);
  testing::check_step_goldens(file, "mlp_" + preset, steps);
  return steps;
}

TEST(ZooGolden, MlpStepTimesOnHl205) {
  const auto steps = expect_mlp_goldens("hl205", "zoo_steps.txt");
  ASSERT_FALSE(steps.empty());
  EXPECT_GT(steps[0].mme_utilisation, 0.0);
}

// The Gaudi 2 and 3 class presets are built on the Gaudi 1 engine map for now (hw/card/README.md).
TEST(ZooGolden, MlpStepTimesOnHl225) { expect_mlp_goldens("hl225", "zoo_steps_hl225.txt"); }
TEST(ZooGolden, MlpStepTimesOnHl325) { expect_mlp_goldens("hl325", "zoo_steps_hl325.txt"); }

}  // namespace
}  // namespace hpusim::zoo
