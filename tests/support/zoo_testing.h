// What the zoo's device tests share: a fixture with a simulated hl205 acquired through the API,
// the check that a workload's parameters equal its reference's bit for bit, and the golden
// values of a run's steps.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sim/zoo/api_graph.h"
#include "sim/zoo/run_workload.h"
#include "sim/zoo/workload.h"
#include "tests/support/golden.h"

namespace hpusim::zoo::testing {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

class ZooDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    check(synInitialize(), "synInitialize");
    check(hpusim_deviceAcquireWithPreset(&device, "hl205", "hbm.refresh_enabled=false"), "acquire");
  }
  void TearDown() override { synDestroy(); }
  synDeviceId device = 0;
};

// `got` (a workload's parameters()) against the reference's tensors, named `names`, bit for bit;
// a failure says how many elements differ, the first, and by how much at most.
template <class Names>
void expect_parameters_equal(const std::vector<NamedTensor>& got, const std::vector<const std::vector<float>*>& want,
                             const Names& names) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, names[i]);
    const std::vector<float>& w = *want[i];
    ASSERT_EQ(got[i].values.size(), w.size()) << got[i].name;
    size_t differ = 0, first = 0;
    double max_diff = 0;
    for (size_t j = 0; j < w.size(); ++j) {
      if (float_bits(got[i].values[j]) == float_bits(w[j])) continue;
      if (differ++ == 0) first = j;
      max_diff = std::max(max_diff, std::abs(static_cast<double>(got[i].values[j]) - w[j]));
    }
    EXPECT_EQ(differ, 0u) << got[i].name << ": " << differ << " of " << w.size() << " elements differ, the first at "
                          << first << ", by up to " << max_diff;
  }
}

// `steps` training steps of `workload` (set up from `seed`) and of `reference` (initialised from
// it), feeding both `input(step)` (the reference takes `step_args(input)`): every loss, then
// every parameter, bit for bit; one compile, then cache hits.
template <class Reference, class Input, class Step, class Names>
void expect_steps_match_reference(synDeviceId device, Workload& workload, Reference& reference, uint32_t seed,
                                  uint32_t steps, Input input, Step reference_step, const Names& names) {
  workload.setup(device, seed);
  reference.init(seed);
  for (uint32_t step = 0; step < steps; ++step) {
    const auto in = input(step);
    const float want = reference_step(reference, in);
    const float got = workload.step(step);
    EXPECT_EQ(float_bits(got), float_bits(want)) << "loss of step " << step << ": " << got << " vs " << want;
  }
  const auto want = reference.params.tensors();
  expect_parameters_equal(workload.parameters(), std::vector<const std::vector<float>*>(want.begin(), want.end()),
                          names);
  hpusim_CompileCounters counters{};
  check(hpusim_compileCounters(&counters), "hpusim_compileCounters");
  EXPECT_EQ(counters.compiles, 1u);
  EXPECT_EQ(counters.cacheHits, steps - 1);
}

// The device and step times and the loss bits of every step against tests/golden/`file`, keys
// "<prefix>.step<N>.<field>"; the first step compiles, the others hit the cache.
inline void check_step_goldens(const std::string& file, const std::string& prefix,
                               const std::vector<StepRecord>& steps) {
  hpusim::testing::GoldenFile golden(file);
  for (const StepRecord& r : steps) {
    const std::string key = prefix + ".step" + std::to_string(r.step);
    golden.check(key + ".device_ns", r.device_ns);
    golden.check(key + ".step_ns", r.step_ns);
    golden.check(key + ".loss_bits", float_bits(r.loss));
    EXPECT_EQ(r.compiles, r.step == 0 ? 1u : 0u) << key;
    EXPECT_EQ(r.cache_hits, r.step == 0 ? 0u : 1u) << key;
    EXPECT_GT(r.tpc_utilisation, 0.0) << key;
    EXPECT_LE(r.tpc_utilisation, 1.0) << key;
    EXPECT_LE(r.mme_utilisation, 1.0) << key;
  }
}

}  // namespace hpusim::zoo::testing
