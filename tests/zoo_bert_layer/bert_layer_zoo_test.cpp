// The zoo's BERT encoder layer, run through the Synapse API on a simulated hl205 for 5 steps at a
// small size, against the C++ reference on the same parameters, loss weights and inputs. The
// graph computes every operation the reference does, in its order (GEMM k order, bias adds after
// the GEMMs, dim-0 lane sums, the scale as a multiplication, Adam's operations one by one), and
// the heads' permutes and reshapes only move values, so the stated tolerance is zero: the losses
// and every updated parameter are equal bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "sim/zoo/api_graph.h"
#include "sim/zoo/bert_layer_workload.h"

namespace hpusim::zoo {
namespace {

namespace ref = synapse::zoo_reference;

constexpr uint32_t kSeed = 7;

ref::BertLayerConfig small_config() {
  ref::BertLayerConfig c;
  c.batch = 2;
  c.seq = 16;
  c.hidden = 64;
  c.heads = 4;
  c.ffn = 128;
  return c;
}

class ZooBertLayerOnDevice : public ::testing::Test {
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

// `steps` steps of the workload and the reference from the same seed: the losses, then every
// updated parameter, bit for bit.
void expect_steps_match(synDeviceId device, const ref::BertLayerConfig& config, uint32_t steps) {
  auto workload = make_bert_layer_workload(config);
  ASSERT_TRUE(workload);
  EXPECT_EQ(workload->name(), "bert-layer");
  workload->setup(device, kSeed);
  ref::BertLayer reference(config);
  reference.init(kSeed);
  for (uint32_t step = 0; step < steps; ++step) {
    const std::vector<float> x = bert_layer_batch(kSeed, step, config);
    const float want = reference.step(x.data());
    const float got = workload->step(step);
    EXPECT_EQ(bits(got), bits(want)) << "loss of step " << step << ": " << got << " vs " << want;
  }
  const auto params = workload->parameters();
  const auto want = reference.params.tensors();
  ASSERT_EQ(params.size(), want.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].name, ref::BertLayerParams<float>::kNames[i]);
    const std::vector<float>& w = *want[i];
    ASSERT_EQ(params[i].values.size(), w.size()) << params[i].name;
    size_t differ = 0, first = 0;
    double max_diff = 0;
    for (size_t j = 0; j < w.size(); ++j) {
      if (bits(params[i].values[j]) == bits(w[j])) continue;
      if (differ++ == 0) first = j;
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(params[i].values[j]) - w[j]));
    }
    EXPECT_EQ(differ, 0u) << params[i].name << ": " << differ << " of " << w.size()
                          << " elements differ, the first at " << first << ", by up to " << max_diff;
  }
  hpusim_CompileCounters counters{};
  check(hpusim_compileCounters(&counters), "counters");
  EXPECT_EQ(counters.compiles, 1u);
  EXPECT_EQ(counters.cacheHits, steps - 1);
}

TEST_F(ZooBertLayerOnDevice, FiveStepsMatchTheReference) { expect_steps_match(device, small_config(), 5); }

// Sizes that are not multiples of the 64 f32 lanes (rows with padding lanes in softmax, layernorm
// and the reductions), an odd batch, head_dim 32 (attention scale 1/sqrt(32), not a power of 2)
// and Adam's weight decay.
TEST_F(ZooBertLayerOnDevice, OddSizesAndWeightDecayMatchTheReference) {
  ref::BertLayerConfig config;
  config.batch = 3;
  config.seq = 20;
  config.hidden = 96;
  config.heads = 3;
  config.ffn = 200;
  config.optimizer.weight_decay = 0.01f;
  expect_steps_match(device, config, 3);
}

TEST(ZooBertLayerWorkload, HiddenMustSplitIntoHeads) {
  ref::BertLayerConfig config = small_config();
  config.heads = 5;
  EXPECT_THROW(make_bert_layer_workload(config), std::invalid_argument);
}

TEST(ZooBertLayerWorkload, BatchesAreSeededAndInRange) {
  const ref::BertLayerConfig config = small_config();
  const std::vector<float> a = bert_layer_batch(kSeed, 0, config), b = bert_layer_batch(kSeed, 0, config);
  const std::vector<float> c = bert_layer_batch(kSeed, 1, config);
  ASSERT_EQ(a.size(), config.tokens() * config.hidden);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
}

}  // namespace
}  // namespace hpusim::zoo
