// Golden device and host times of the BERT layer's steps (modeled host time: deterministic), at a
// smaller size than hpusim run's default (BERT-base takes about 30 s per step to simulate),
// through the same runner. Rewrite with HPUSIM_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/zoo/bert_layer_workload.h"
#include "tests/support/zoo_testing.h"

namespace hpusim::zoo {
namespace {

TEST(ZooBertLayerGolden, StepTimesOnHl205) {
  synapse::zoo_reference::BertLayerConfig config;
  config.batch = 2;
  config.seq = 64;
  config.hidden = 256;
  config.heads = 4;   // head_dim 64, as BERT-base
  config.ffn = 1024;
  RunOptions options;
  options.workload = "bert-layer";
  options.steps = 3;
  std::ostringstream log;
  const std::vector<StepRecord> steps = run_workload(options, make_bert_layer_workload(config), log);
  ASSERT_EQ(steps.size(), 3u);
  testing::check_step_goldens("zoo_bert_layer_steps.txt", "bert_layer_hl205", steps);
}

}  // namespace
}  // namespace hpusim::zoo
