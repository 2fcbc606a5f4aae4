// Golden device and host times of the BERT layer's steps (modeled host time: deterministic) at a
// small size on hl205, measured as hpusim run measures them (the default config, BERT-base, takes
// minutes per step to simulate). A change to any layer's timing shows here; rewrite with
// HPUSIM_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstring>

#include "sim/zoo/api_graph.h"
#include "sim/zoo/bert_layer_workload.h"
#include "tests/support/golden.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;

uint64_t host_ns() {
  uint64_t ns = 0;
  check(hpusim_hostTimeNs(&ns), "hpusim_hostTimeNs");
  return ns;
}

hpusim_CompileCounters counters() {
  hpusim_CompileCounters c{};
  check(hpusim_compileCounters(&c), "hpusim_compileCounters");
  return c;
}

TEST(ZooBertLayerGolden, StepTimesOnHl205) {
  ref::BertLayerConfig config;
  config.batch = 2;
  config.seq = 64;
  config.hidden = 256;
  config.heads = 4;   // head_dim 64, as BERT-base
  config.ffn = 1024;
  check(synInitialize(), "synInitialize");
  synDeviceId device = 0;
  check(hpusim_deviceAcquireWithPreset(&device, "hl205", ""), "hpusim_deviceAcquireWithPreset");
  auto workload = make_bert_layer_workload(config);
  workload->setup(device, 7);
  testing::GoldenFile golden("zoo_bert_layer_steps.txt");
  for (uint32_t step = 0; step < 3; ++step) {
    const hpusim_CompileCounters before = counters();
    const uint64_t start = host_ns();
    const float loss = workload->step(step);
    const uint64_t step_ns = host_ns() - start;
    const hpusim_CompileCounters after = counters();
    uint64_t submitted = 0, completed = 0;
    check(hpusim_lastLaunchWindowNs(&submitted, &completed), "hpusim_lastLaunchWindowNs");
    const std::string key = "bert_layer_hl205.step" + std::to_string(step);
    golden.check(key + ".device_ns", completed - submitted);
    golden.check(key + ".step_ns", step_ns);
    uint32_t loss_bits;
    std::memcpy(&loss_bits, &loss, 4);
    golden.check(key + ".loss_bits", loss_bits);
    EXPECT_EQ(after.compiles - before.compiles, step == 0 ? 1u : 0u) << "step " << step;
    EXPECT_EQ(after.cacheHits - before.cacheHits, step == 0 ? 0u : 1u) << "step " << step;
  }
  workload.reset();
  synDestroy();
}

}  // namespace
}  // namespace hpusim::zoo
