// Graphs compiled to recipes and launched through the driver on a simulated hl205: values
// against C++ references, the patching of persistent addresses between launches, split GEMMs,
// recipes through their serialised form, and compile errors that submit nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "arch/packets/packets.h"
#include "arch/regs/gaudi1_map.h"
#include "hw/card/card.h"
#include "hw/mme/mme_compute.h"
#include "synapse/compiler/lowering.h"
#include "synapse/recipe/recipe_file.h"
#include "synapse/runtime/runtime.h"
#include "tests/support/test_device.h"

namespace hpusim::synapse::runtime {
namespace {

using graph::DType;
using graph::Graph;
using graph::TensorId;
using hw::Picoseconds;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// out = relu(x w + bias): x is M x K, w is K x N, bias N, all row-major f32.
struct DenseReluGraph {
  uint32_t m, n, k;
  Graph graph;
  DenseReluGraph(uint32_t m_, uint32_t n_, uint32_t k_) : m(m_), n(n_), k(k_) {
    TensorId x, w, bias, y, z, out;
    EXPECT_TRUE(graph.add_tensor({"x", DType::F32, {k, m}, true}, &x).ok());
    EXPECT_TRUE(graph.add_tensor({"w", DType::F32, {n, k}, true}, &w).ok());
    EXPECT_TRUE(graph.add_tensor({"bias", DType::F32, {n, 1}, true}, &bias).ok());
    EXPECT_TRUE(graph.add_tensor({"y", DType::F32, {n, m}}, &y).ok());
    EXPECT_TRUE(graph.add_tensor({"z", DType::F32, {n, m}}, &z).ok());
    EXPECT_TRUE(graph.add_tensor({"out", DType::F32, {n, m}, true}, &out).ok());
    EXPECT_TRUE(graph.add_node({"fc", "gemm", {x, w}, {y}, {}}).ok());
    EXPECT_TRUE(graph.add_node({"bias_add", "add_fwd_f32", {y, bias}, {z}, {}}).ok());
    EXPECT_TRUE(graph.add_node({"act", "relu_fwd_f32", {z}, {out}, {}}).ok());
  }
  std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& bias) const {
    std::vector<float> y(uint64_t{m} * n);
    mme::gemm_f32_reference(x.data(), k, w.data(), n, y.data(), n, m, n, k);
    for (uint32_t i = 0; i < m; ++i) {
      for (uint32_t j = 0; j < n; ++j) {
        const float z = y[uint64_t{i} * n + j] + bias[j];
        y[uint64_t{i} * n + j] = z <= 0.0f ? 0.0f : z;
      }
    }
    return y;
  }
};

class SynapseLaunchTest : public ::testing::Test {
 protected:
  virtual std::vector<std::string> extra_overrides() const { return {}; }
  virtual uint64_t cs_timeout_us() const { return 2000000; }
  void SetUp() override {
    platform::PlatformOptions options;
    options.overrides.push_back("hbm.refresh_enabled=false");
    for (const std::string& o : extra_overrides()) options.overrides.push_back(o);
    options.driver.cs_timeout_us = cs_timeout_us();
    device = std::make_unique<testing::TestDevice>(options);
    ASSERT_EQ(device->open(), 0);
    rt = std::make_unique<Runtime>(device->fd());
  }

  uint64_t malloc(uint64_t bytes) {
    uint64_t address = 0;
    EXPECT_TRUE(rt->device_malloc(bytes, &address).ok());
    return address;
  }
  void upload(const std::vector<float>& host, uint64_t address) {
    uint64_t seq = 0;
    ASSERT_TRUE(rt->copy_to_device(host.data(), address, host.size() * 4, &seq).ok());
  }
  std::vector<float> download(uint64_t address, size_t count) {
    std::vector<float> host(count, -123.0f);
    uint64_t seq = 0;
    EXPECT_TRUE(rt->copy_to_host(address, host.data(), count * 4, &seq).ok());
    EXPECT_TRUE(rt->wait(seq).ok());
    return host;
  }

  // Runs a recipe of one persistent input "x" and one output: `x` uploaded, `outputs` floats read
  // back after the launch (fresh buffers and workspace).
  std::vector<float> run_x_to_y(const recipe::Recipe& recipe, const std::shared_ptr<LoadedRecipe>& loaded,
                                const std::vector<float>& x, size_t outputs) {
    const uint64_t dx = malloc(x.size() * 4), dy = malloc(std::max<size_t>(outputs * 4, 64));
    const uint64_t ws = recipe.workspace_bytes() ? malloc(recipe.workspace_bytes()) : 0;
    upload(x, dx);
    std::vector<uint64_t> addresses(recipe.persistent_size());
    for (int i = 0; i < recipe.persistent_size(); ++i) addresses[i] = recipe.persistent(i).name() == "x" ? dx : dy;
    uint64_t seq = 0;
    EXPECT_TRUE(rt->launch(*loaded, addresses, ws, &seq).ok());
    return download(dy, outputs);
  }

  // Compiles, loads and runs the dense graph once with fresh buffers; returns the output.
  struct Run {
    std::vector<float> x, w, bias, out;
  };
  Run run_dense(const DenseReluGraph& g, const std::shared_ptr<LoadedRecipe>& loaded, uint32_t seed) {
    Run r;
    r.x = random_floats(uint64_t{g.m} * g.k, seed);
    r.w = random_floats(uint64_t{g.k} * g.n, seed + 1);
    r.bias = random_floats(g.n, seed + 2);
    const recipe::Recipe& recipe = loaded->recipe();
    std::vector<uint64_t> addresses(recipe.persistent_size());
    std::map<std::string, const std::vector<float>*> inputs = {{"x", &r.x}, {"w", &r.w}, {"bias", &r.bias}};
    uint64_t out_address = 0;
    for (int i = 0; i < recipe.persistent_size(); ++i) {
      addresses[i] = malloc(recipe.persistent(i).bytes());
      const std::string& name = recipe.persistent(i).name();
      if (inputs.count(name)) upload(*inputs[name], addresses[i]);
      if (name == "out") out_address = addresses[i];
    }
    const uint64_t workspace = recipe.workspace_bytes() ? malloc(recipe.workspace_bytes()) : 0;
    uint64_t seq = 0;
    EXPECT_TRUE(rt->launch(*loaded, addresses, workspace, &seq).ok());
    r.out = download(out_address, uint64_t{g.m} * g.n);
    return r;
  }

  std::shared_ptr<LoadedRecipe> compile_and_load(const Graph& graph, recipe::Recipe* recipe_out = nullptr) {
    recipe::Recipe recipe;
    const graph::Result r = compiler::compile_graph(graph, rt->target(), &recipe);
    EXPECT_TRUE(r.ok()) << r.message;
    std::shared_ptr<LoadedRecipe> loaded;
    const graph::Result l = rt->load(recipe, &loaded);
    EXPECT_TRUE(l.ok()) << l.message;
    if (recipe_out) *recipe_out = recipe;
    return loaded;
  }

  static void expect_equal_bits(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(bits(got[i]), bits(want[i])) << "element " << i;
  }

  std::unique_ptr<testing::TestDevice> device;
  std::unique_ptr<Runtime> rt;
};

TEST_F(SynapseLaunchTest, GemmBiasReluMatchesTheReferenceBitForBit) {
  const DenseReluGraph g(96, 64, 80);
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g.graph, &recipe);
  ASSERT_TRUE(loaded);
  // The bias add and the relu are one fused launch: z is never written.
  ASSERT_EQ(recipe.nodes_size(), 2);
  EXPECT_EQ(recipe.nodes(0).engine(), "mme");
  EXPECT_EQ(recipe.nodes(1).engine(), "tpc");
  EXPECT_EQ(recipe.nodes(1).name(), "bias_add+act");
  EXPECT_EQ(recipe.nodes(1).guid(), "add_fwd_f32+relu_fwd_f32");
  EXPECT_EQ(recipe.persistent_size(), 4);   // x, w, bias, out
  const Run r = run_dense(g, loaded, 1);
  expect_equal_bits(r.out, g.reference(r.x, r.w, r.bias));
  for (const std::string& line : device->log()) {
    EXPECT_EQ(line.find("error"), std::string::npos) << line;
    EXPECT_EQ(line.find("timed out"), std::string::npos) << line;
  }
}

TEST_F(SynapseLaunchTest, FusionCanBeTurnedOffAndTheRecipeRecordsTheTarget) {
  const DenseReluGraph g(96, 64, 80);
  compiler::CompileTarget target = rt->target();
  target.fuse_elementwise = false;
  recipe::Recipe recipe;
  ASSERT_TRUE(compiler::compile_graph(g.graph, target, &recipe).ok());
  EXPECT_EQ(recipe.nodes_size(), 3);
  // A recipe for another target is refused by load (the runtime's target fuses).
  std::shared_ptr<LoadedRecipe> refused;
  EXPECT_EQ(rt->load(recipe, &refused).status, graph::Status::DeviceTypeMismatch);
}

// Descriptor reuse: on a TPC queue, a node writes only the QM descriptor registers that differ from
// what the node before left there, and writes them before waiting for its dependencies (the
// descriptor set is storage until TPC_EXECUTE latches it), so the writes overlap the kernels that
// still run. Unfused, the bias add and the relu are two TPC nodes on every queue.
TEST_F(SynapseLaunchTest, TpcNodesWriteOnlyChangedDescriptorsAndWriteThemBeforeTheirWaits) {
  const DenseReluGraph g(96, 64, 80);
  compiler::CompileTarget target = rt->target();
  target.fuse_elementwise = false;
  recipe::Recipe recipe;
  ASSERT_TRUE(compiler::compile_graph(g.graph, target, &recipe).ok());
  ASSERT_EQ(recipe.nodes_size(), 3);
  namespace tc = regs::tpc_cfg;
  const uint32_t tpc0 = static_cast<uint32_t>(regs::make_queue(regs::QueueKind::Tpc, 0, 0));
  std::string events;   // per packet: D a descriptor write, F a fence, X TPC_EXECUTE
  std::vector<unsigned> descriptor_writes(1, 0);
  for (const recipe::QueueJob& job : recipe.jobs()) {
    if (job.queue_id() != tpc0) continue;
    const std::string& cb = job.command_buffer();
    for (size_t at = 0; at < cb.size();) {
      const qman::DecodeResult d = qman::decode(reinterpret_cast<const uint8_t*>(cb.data()) + at, cb.size() - at);
      ASSERT_TRUE(d.ok()) << d.message;
      if (const auto* w = std::get_if<qman::Wreg32>(&d.packet)) {
        if (w->reg_offset >= tc::kQmDesc && w->reg_offset < tc::kQmDesc + tc::kDescSize) {
          events += 'D';
          ++descriptor_writes.back();
        } else if (w->reg_offset == tc::kTpcExecute) {
          events += 'X';
          descriptor_writes.push_back(0);
        }
      } else if (std::holds_alternative<qman::Fence>(d.packet)) {
        events += 'F';
      }
      at += d.size;
    }
  }
  ASSERT_EQ(descriptor_writes.size(), 3u) << events;   // two launches, then nothing
  // The second node's tensors, sizes and strides that match the first's are not written again.
  EXPECT_GT(descriptor_writes[0], 0u);
  EXPECT_GT(descriptor_writes[1], 0u);
  EXPECT_LT(descriptor_writes[1], descriptor_writes[0]) << events;
  // Each node: its descriptor writes, then its waits, then the launch (the first node's job may
  // open with the launch's own wait).
  const size_t second = events.find('X') + 1;
  for (const std::string part : {events.substr(0, second), events.substr(second)}) {
    ASSERT_FALSE(part.empty());
    EXPECT_EQ(part.back(), 'X') << events;
    EXPECT_LT(part.find_last_of('D'), part.find_last_of('F')) << events;
  }
  EXPECT_EQ(events[second], 'D') << events;
}

// A card other than the default: a dense graph compiled for the card the runtime found gives a
// recipe whose target names `field` and exact values, and the same graph compiled for a card
// differing as `other_card` says is refused at load.
class SynapseLaunchCardTest : public SynapseLaunchTest {
 protected:
  void expect_compiled_for_the_card(const std::string& field,
                                    const std::function<void(compiler::CompileTarget&)>& other_card) {
    const DenseReluGraph g(96, 64, 80);
    recipe::Recipe recipe;
    const auto loaded = compile_and_load(g.graph, &recipe);
    ASSERT_TRUE(loaded);
    EXPECT_NE(recipe.target().find(" " + field + " "), std::string::npos) << recipe.target();
    const Run r = run_dense(g, loaded, 3);
    expect_equal_bits(r.out, g.reference(r.x, r.w, r.bias));
    compiler::CompileTarget other = rt->target();
    other_card(other);
    recipe::Recipe other_recipe;
    ASSERT_TRUE(compiler::compile_graph(g.graph, other, &other_recipe).ok());
    std::shared_ptr<LoadedRecipe> refused;
    EXPECT_EQ(rt->load(other_recipe, &refused).status, graph::Status::DeviceTypeMismatch);
  }
};

// A card whose TPCs have 512-bit vectors: the runtime learns the width from the device (the
// firmware's INFO through HW_IP_INFO), the kernels are assembled for it, and the recipe records
// it, so a recipe compiled for another width is refused.
class SynapseLaunchNarrowTpcTest : public SynapseLaunchCardTest {
 protected:
  std::vector<std::string> extra_overrides() const override { return {"tpc.vector_bits=512"}; }
};

// A card whose TPCs have twice hl205's prefetch buffer: the runtime learns it from the device, the
// kernels prefetch further (the library's lookahead fits the buffer), the recipe records it and the
// values do not move.
class SynapseLaunchLargePrefetchTest : public SynapseLaunchCardTest {
 protected:
  std::vector<std::string> extra_overrides() const override { return {"tpc.prefetch_entries=512"}; }
};

TEST_F(SynapseLaunchLargePrefetchTest, TheRuntimeCompilesForTheCardsPrefetchBuffer) {
  EXPECT_EQ(rt->target().tpc_prefetch_entries, 512u);
  expect_compiled_for_the_card("prefetch=512", [](compiler::CompileTarget& t) { t.tpc_prefetch_entries = 256; });
}

TEST_F(SynapseLaunchNarrowTpcTest, TheRuntimeCompilesForTheCardsVectorWidth) {
  EXPECT_EQ(rt->target().tpc_vector_bits, 512u);
  expect_compiled_for_the_card("vector=512", [](compiler::CompileTarget& t) { t.tpc_vector_bits = 2048; });
  compiler::CompileTarget wide = rt->target();
  wide.tpc_vector_bits = 768;
  recipe::Recipe other;
  const graph::Result bad = compiler::compile_graph(DenseReluGraph(96, 64, 80).graph, wide, &other);
  EXPECT_EQ(bad.status, graph::Status::InvalidArgument);
  EXPECT_NE(bad.message.find("a TPC vector width of 768 bits"), std::string::npos) << bad.message;
}

TEST_F(SynapseLaunchTest, IntermediatesInSramOrInTheWorkspaceGiveTheSameBits) {
  const DenseReluGraph g(96, 64, 80);
  recipe::Recipe in_sram;
  const auto a = compile_and_load(g.graph, &in_sram);
  ASSERT_TRUE(a);
  EXPECT_EQ(in_sram.workspace_bytes(), 0u);
  EXPECT_GT(in_sram.sram_bytes(), 0u);
  const Run first = run_dense(g, a, 4);
  expect_equal_bits(first.out, g.reference(first.x, first.w, first.bias));

  rt->limit_sram(0);
  recipe::Recipe in_hbm;
  const auto b = compile_and_load(g.graph, &in_hbm);
  ASSERT_TRUE(b);
  EXPECT_GT(in_hbm.workspace_bytes(), 0u);
  EXPECT_EQ(in_hbm.sram_bytes(), 0u);
  const Run second = run_dense(g, b, 4);
  expect_equal_bits(second.out, first.out);
}

TEST_F(SynapseLaunchTest, ASecondLaunchWithOtherBuffersIsPatchedAgain) {
  const DenseReluGraph g(64, 32, 48);
  const auto loaded = compile_and_load(g.graph);
  ASSERT_TRUE(loaded);
  const Run first = run_dense(g, loaded, 10);
  const Run second = run_dense(g, loaded, 20);   // new data in new allocations
  expect_equal_bits(first.out, g.reference(first.x, first.w, first.bias));
  expect_equal_bits(second.out, g.reference(second.x, second.w, second.bias));
  EXPECT_EQ(loaded->launches(), 2u);
}

TEST_F(SynapseLaunchTest, ALargeGemmIsSplitAcrossBothMmeEngines) {
  const DenseReluGraph g(512, 64, 64);
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g.graph, &recipe);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(recipe.nodes(0).jobs(), 2u);
  size_t mme_jobs = 0;
  for (const auto& job : recipe.jobs()) {
    const auto q = static_cast<regs::QueueId>(job.queue_id());
    if (q == regs::QueueId::MME_0_0 || q == regs::QueueId::MME_1_0) ++mme_jobs;
  }
  EXPECT_EQ(mme_jobs, 2u);
  const Run r = run_dense(g, loaded, 3);
  expect_equal_bits(r.out, g.reference(r.x, r.w, r.bias));
}

// The first TPC kernel that started after `after_ps`, and the last MME job's end after it.
struct EngineTimes {
  Picoseconds first_tpc_start = UINT64_MAX, last_mme_end = 0;
};
EngineTimes engine_times_after(hw::Card& card, Picoseconds after_ps) {
  EngineTimes t;
  for (unsigned n = 0; n < card.mme_numbers(); ++n)
    if (hw::MmeEngine* mme = card.mme_engine(n))
      for (const auto& job : mme->jobs())
        if (job.start_ps >= after_ps) t.last_mme_end = std::max(t.last_mme_end, job.end_ps);
  for (unsigned n = 0; hw::TpcCore* tpc = card.tpc_core(n); ++n)
    for (const auto& kernel : tpc->kernels())
      if (kernel.start_ps >= after_ps) t.first_tpc_start = std::min(t.first_tpc_start, kernel.start_ps);
  return t;
}
// When the last MME job or TPC kernel so far ended: a later launch's start after it.
Picoseconds engines_done(hw::Card& card) {
  Picoseconds done = 0;
  for (unsigned n = 0; n < card.mme_numbers(); ++n)
    if (hw::MmeEngine* mme = card.mme_engine(n))
      for (const auto& job : mme->jobs()) done = std::max(done, job.end_ps);
  for (unsigned n = 0; hw::TpcCore* tpc = card.tpc_core(n); ++n)
    for (const auto& kernel : tpc->kernels()) done = std::max(done, kernel.end_ps);
  return done;
}

TEST_F(SynapseLaunchTest, AGemmAndItsConsumerRunAsAPipelineOfRowChunks) {
  // The GEMM's 1024 rows in chunks of the MME's super-tile rows (320 on hl205: 320, 320, 320, 64),
  // two per engine;
  // its only reader (bias_add+relu, fused) one launch per chunk, each waiting for its own chunk.
  // K = 1024 makes each chunk take longer than the consumer's launch, so a launch that did not
  // wait for its own chunk would read rows not yet written.
  EXPECT_EQ(rt->target().mme_super_tile_rows, 320u);
  const DenseReluGraph g(1024, 64, 1024);
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g.graph, &recipe);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(recipe.nodes_size(), 2);
  EXPECT_EQ(recipe.nodes(0).jobs(), 4u);
  EXPECT_EQ(recipe.nodes(1).jobs(), 4 * rt->target().tpcs) << "a launch over every TPC per chunk";
  EXPECT_EQ(recipe.sob_count(), 4u) << "one per node, the start object, and the second engine's chunks";
  EXPECT_NE(recipe.target().find(" slice=320 "), std::string::npos) << recipe.target();
  hw::Card& card = device->platform().card();
  const Picoseconds before = engines_done(card);
  const Run sliced = run_dense(g, loaded, 5);
  expect_equal_bits(sliced.out, g.reference(sliced.x, sliced.w, sliced.bias));
  const EngineTimes pipelined = engine_times_after(card, before);
  EXPECT_LT(pipelined.first_tpc_start, pipelined.last_mme_end) << "the TPCs start on the first chunk";

  // A card that reports no super-tile gets no slicing: the GEMM split in halves, one launch.
  compiler::CompileTarget whole_target = rt->target();
  whole_target.mme_super_tile_rows = 0;
  recipe::Recipe whole;
  ASSERT_TRUE(compiler::compile_graph(g.graph, whole_target, &whole).ok());
  EXPECT_EQ(whole.nodes(0).jobs(), 2u);
  EXPECT_EQ(whole.nodes(1).jobs(), rt->target().tpcs);
  EXPECT_EQ(whole.sob_count(), 3u);
  // The chunks' launches keep the kernel's descriptors (a chunk is a range of its index space):
  // what the slices add to the host's patching is the waits (a monitor's address each) and the
  // two chunk jobs more, not the tensors' addresses again.
  const auto patches = [](const recipe::Recipe& r) {
    size_t n = 0;
    for (const auto& job : r.jobs()) n += static_cast<size_t>(job.patches_size());
    return n;
  };
  // Writing the consumer's three tensor addresses (two halves each) again for each later chunk
  // on each TPC would add 3 x 2 x 3 x 8 = 144 (measured: 200 against 135).
  EXPECT_LT(patches(recipe), patches(whole) + 3 * 2 * 3 * rt->target().tpcs);

  // 512 rows make one chunk per engine: not sliced, the TPCs start after the GEMM.
  const DenseReluGraph half(512, 64, 64);
  recipe::Recipe half_recipe;
  const auto half_loaded = compile_and_load(half.graph, &half_recipe);
  ASSERT_TRUE(half_loaded);
  EXPECT_EQ(half_recipe.nodes(0).jobs(), 2u);
  const Picoseconds again = engines_done(card);
  const Run r = run_dense(half, half_loaded, 6);
  expect_equal_bits(r.out, half.reference(r.x, r.w, r.bias));
  const EngineTimes serial = engine_times_after(card, again);
  EXPECT_GT(serial.first_tpc_start, serial.last_mme_end);
}

TEST_F(SynapseLaunchTest, ASlicedConsumerUpdatesAPersistentTensorInPlaceChunkByChunk) {
  // A gradient (1024 rows) accumulated into a persistent buffer in place (the output at its
  // input's section offset): each chunk's launch reads and writes only its own rows. The add's
  // kernel sees its tensors flat (one index per 128 elements), so a chunk is an element range.
  // K = 1024: a launch not waiting for its own chunk would read rows not yet written.
  const uint32_t m = 1024, n = 64, k = 1024;
  Graph g;
  TensorId x, w, grad, acc, acc_out;
  ASSERT_TRUE(g.add_tensor({"x", DType::F32, {k, m}, true}, &x).ok());
  ASSERT_TRUE(g.add_tensor({"w", DType::F32, {n, k}, true}, &w).ok());
  ASSERT_TRUE(g.add_tensor({"grad", DType::F32, {n, m}}, &grad).ok());
  ASSERT_TRUE(g.add_tensor({"acc", DType::F32, {n, m}, true, graph::Section{1, 0}}, &acc).ok());
  ASSERT_TRUE(g.add_tensor({"acc_out", DType::F32, {n, m}, true, graph::Section{1, 0}}, &acc_out).ok());
  ASSERT_TRUE(g.add_node({"wgrad", "gemm", {x, w}, {grad}, {}}).ok());
  ASSERT_TRUE(g.add_node({"accumulate", "add_fwd_f32", {grad, acc}, {acc_out}, {}}).ok());
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g, &recipe);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(recipe.nodes_size(), 2);
  EXPECT_EQ(recipe.nodes(0).jobs(), 4u) << "sliced";
  EXPECT_EQ(recipe.nodes(1).jobs(), 4 * rt->target().tpcs);

  const std::vector<float> hx = random_floats(uint64_t{m} * k, 31), hw = random_floats(uint64_t{k} * n, 32);
  const std::vector<float> ha = random_floats(uint64_t{m} * n, 33);
  const uint64_t dx = malloc(hx.size() * 4), dw = malloc(hw.size() * 4), da = malloc(ha.size() * 4);
  upload(hx, dx);
  upload(hw, dw);
  upload(ha, da);
  std::vector<uint64_t> addresses(recipe.persistent_size());
  for (int i = 0; i < recipe.persistent_size(); ++i) {
    const std::string& name = recipe.persistent(i).name();
    addresses[i] = name == "x" ? dx : name == "w" ? dw : da;   // acc and acc_out: one buffer
  }
  const uint64_t workspace = recipe.workspace_bytes() ? malloc(recipe.workspace_bytes()) : 0;
  uint64_t seq = 0;
  ASSERT_TRUE(rt->launch(*loaded, addresses, workspace, &seq).ok());

  std::vector<float> want(uint64_t{m} * n);
  mme::gemm_f32_reference(hx.data(), k, hw.data(), n, want.data(), n, m, n, k);
  for (size_t i = 0; i < want.size(); ++i) want[i] += ha[i];
  expect_equal_bits(download(da, want.size()), want);
}

TEST_F(SynapseLaunchTest, ARecipeRunsTheSameAfterSerialisation) {
  const DenseReluGraph g(64, 64, 64);
  recipe::Recipe recipe;
  ASSERT_TRUE(compiler::compile_graph(g.graph, rt->target(), &recipe).ok());
  const std::vector<uint8_t> bytes = recipe::serialize(recipe);
  recipe::Recipe back;
  std::string error;
  ASSERT_TRUE(recipe::deserialize(bytes.data(), bytes.size(), &back, &error)) << error;
  std::shared_ptr<LoadedRecipe> loaded;
  ASSERT_TRUE(rt->load(back, &loaded).ok());
  const Run r = run_dense(g, loaded, 5);
  expect_equal_bits(r.out, g.reference(r.x, r.w, r.bias));

  std::vector<uint8_t> corrupt = bytes;
  corrupt[corrupt.size() / 2] ^= 0x40;
  EXPECT_FALSE(recipe::deserialize(corrupt.data(), corrupt.size(), &back, &error));
  EXPECT_EQ(error, "recipe: checksum mismatch (file is corrupt or truncated)");
  EXPECT_FALSE(recipe::deserialize(bytes.data(), bytes.size() - 3, &back, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

// Every sync object a recipe uses is a patch point of its launch's range, and a patch that points
// outside the recipe's range is refused.
TEST_F(SynapseLaunchTest, SyncObjectsAreRelocatedPerLaunchAndCheckedInTheRecipe) {
  const DenseReluGraph g(64, 64, 64);
  recipe::Recipe recipe;
  ASSERT_TRUE(compiler::compile_graph(g.graph, rt->target(), &recipe).ok());
  EXPECT_EQ(recipe.sob_count(), 3u);   // two nodes (gemm, the fused add + relu) and the start object
  size_t objects = 0, groups = 0;
  for (const auto& job : recipe.jobs()) {
    for (const auto& patch : job.patches()) {
      objects += patch.section() == recipe::SECTION_SYNC_OBJECTS;
      groups += patch.section() == recipe::SECTION_SYNC_GROUPS;
    }
  }
  EXPECT_GT(objects, 0u);
  EXPECT_GT(groups, 0u);
  EXPECT_EQ(recipe::check_recipe(recipe), "");
  recipe::Recipe bad = recipe;
  for (auto& job : *bad.mutable_jobs()) {
    for (auto& patch : *job.mutable_patches()) {
      if (patch.section() == recipe::SECTION_SYNC_OBJECTS) {
        patch.set_addend(recipe::sync_object_address(3));
        break;
      }
    }
  }
  EXPECT_NE(recipe::check_recipe(bad).find("is outside the recipe's 3 sync objects"), std::string::npos)
      << recipe::check_recipe(bad);
}

// The last job (on the external queue) waits for the nodes, then clears every sync object of the
// launch with posted messages: no barrier on any clear, so they issue back to back rather than
// one message round trip each; the driver's completion message, behind its message barrier, lands
// after them (launches reusing a range run right: LaunchesAfterATimedOutLaunchRunThroughEverySyncRange).
TEST_F(SynapseLaunchTest, TheLastJobClearsTheSyncObjectsWithPostedMessages) {
  const DenseReluGraph g(64, 64, 64);
  recipe::Recipe recipe;
  ASSERT_TRUE(compiler::compile_graph(g.graph, rt->target(), &recipe).ok());
  ASSERT_GT(recipe.jobs_size(), 0);
  const recipe::QueueJob& last = recipe.jobs(recipe.jobs_size() - 1);
  EXPECT_EQ(last.queue_id(), static_cast<uint32_t>(rt->target().external_queue));
  const std::string& cb = last.command_buffer();
  std::vector<qman::MsgLong> after_waits;
  for (size_t at = 0; at < cb.size();) {
    const qman::DecodeResult d = qman::decode(reinterpret_cast<const uint8_t*>(cb.data()) + at, cb.size() - at);
    ASSERT_TRUE(d.ok()) << d.message;
    if (std::holds_alternative<qman::Fence>(d.packet)) after_waits.clear();
    if (const auto* m = std::get_if<qman::MsgLong>(&d.packet)) after_waits.push_back(*m);
    at += d.size;
  }
  ASSERT_EQ(after_waits.size(), recipe.sob_count());
  for (const qman::MsgLong& clear : after_waits) {
    EXPECT_EQ(clear.value, qman::sob_write_value(0, false));
    EXPECT_EQ(clear.barriers, qman::Barriers{});
  }
}

// y = x + x, a TPC-only graph.
struct DoubleGraph {
  Graph graph;
  explicit DoubleGraph(uint32_t n) {
    TensorId x, y;
    EXPECT_TRUE(graph.add_tensor({"in", DType::F32, {n}, true}, &x).ok());
    EXPECT_TRUE(graph.add_tensor({"twice", DType::F32, {n}, true}, &y).ok());
    EXPECT_TRUE(graph.add_node({"double", "add_fwd_f32", {x, x}, {y}, {}}).ok());
  }
};

// Launches of different recipes go in flight together: the second is submitted while the first
// runs (the host does not wait for it), each holds its own sync objects, and the device runs them
// in order: the second reads what the first wrote.
TEST_F(SynapseLaunchTest, LaunchesOfDifferentRecipesPipelineAndRunInOrder) {
  const DenseReluGraph dense(96, 64, 80);
  const DoubleGraph twice(96 * 64);
  const auto first = compile_and_load(dense.graph);
  const auto second = compile_and_load(twice.graph);
  ASSERT_TRUE(first && second);
  const std::vector<float> x = random_floats(96 * 80, 11), w = random_floats(80 * 64, 12), bias = random_floats(64, 13);
  const uint64_t dx = malloc(x.size() * 4), dw = malloc(w.size() * 4), db = malloc(bias.size() * 4);
  const uint64_t out = malloc(96 * 64 * 4), doubled = malloc(96 * 64 * 4);
  upload(x, dx);
  upload(w, dw);
  upload(bias, db);
  ASSERT_TRUE(rt->wait(rt->last_submission()).ok());
  // Persistent tensors by the recipes' ordinals.
  auto addresses_of = [](const recipe::Recipe& r, const std::map<std::string, uint64_t>& by_name) {
    std::vector<uint64_t> a;
    for (const auto& t : r.persistent()) a.push_back(by_name.at(t.name()));
    return a;
  };
  const uint64_t before_ps = rt->host_now_ps();
  uint64_t first_seq = 0, second_seq = 0;
  ASSERT_TRUE(rt->launch(*first, addresses_of(first->recipe(), {{"x", dx}, {"w", dw}, {"bias", db}, {"out", out}}), 0,
                         &first_seq)
                  .ok());
  ASSERT_TRUE(rt->launch(*second, addresses_of(second->recipe(), {{"in", out}, {"twice", doubled}}), 0, &second_seq).ok());
  const uint64_t submitted_ps = rt->host_now_ps();
  const auto first_range = rt->sync_range(first_seq), second_range = rt->sync_range(second_seq);
  ASSERT_TRUE(first_range && second_range) << "both launches are in flight";
  EXPECT_TRUE(first_range->first + first_range->count <= second_range->first ||
              second_range->first + second_range->count <= first_range->first)
      << "sync objects " << first_range->first << "+" << first_range->count << " and " << second_range->first << "+"
      << second_range->count;
  EXPECT_EQ(first_range->first % 8, 0u);
  ASSERT_TRUE(rt->wait(second_seq).ok());
  uint64_t first_done = 0, second_done = 0;
  ASSERT_TRUE(rt->completion_time_ps(first_seq, &first_done).ok());
  ASSERT_TRUE(rt->completion_time_ps(second_seq, &second_done).ok());
  // Completion times are the device's (the interrupt as an idle core would handle it): the first
  // may finish while the host still prepares the second, which the runtime still sees in flight.
  EXPECT_LT(before_ps, first_done);
  EXPECT_LT(submitted_ps, second_done);
  EXPECT_LT(before_ps, submitted_ps);
  EXPECT_LT(first_done, second_done);
  std::vector<float> want = dense.reference(x, w, bias);
  for (float& v : want) v = v + v;
  expect_equal_bits(download(doubled, want.size()), want);
}

// One recipe launched again and again without a wait: each launch patches command buffers no
// launch in flight reads, so every launch computes from its own buffers.
TEST_F(SynapseLaunchTest, OneRecipeLaunchedRepeatedlyInFlightKeepsEachLaunchsBuffers) {
  const DenseReluGraph g(64, 48, 40);
  const auto loaded = compile_and_load(g.graph);
  ASSERT_TRUE(loaded);
  struct Launch {
    std::vector<float> x, w, bias;
    uint64_t out = 0;
    uint64_t seq = 0;
  };
  std::vector<Launch> launches(5);
  std::vector<std::vector<uint64_t>> addresses(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    Launch& l = launches[i];
    l.x = random_floats(64 * 40, 100 + static_cast<uint32_t>(i));
    l.w = random_floats(40 * 48, 200 + static_cast<uint32_t>(i));
    l.bias = random_floats(48, 300 + static_cast<uint32_t>(i));
    std::map<std::string, uint64_t> by_name = {{"x", malloc(l.x.size() * 4)}, {"w", malloc(l.w.size() * 4)},
                                               {"bias", malloc(l.bias.size() * 4)}, {"out", malloc(64 * 48 * 4)}};
    upload(l.x, by_name["x"]);
    upload(l.w, by_name["w"]);
    upload(l.bias, by_name["bias"]);
    l.out = by_name["out"];
    for (const auto& t : loaded->recipe().persistent()) addresses[i].push_back(by_name.at(t.name()));
  }
  ASSERT_TRUE(rt->wait(rt->last_submission()).ok());
  // Back to back: later launches are patched while earlier ones still wait on the engines' queues.
  for (size_t i = 0; i < launches.size(); ++i) ASSERT_TRUE(rt->launch(*loaded, addresses[i], 0, &launches[i].seq).ok());
  size_t in_flight = 0;
  for (const Launch& l : launches) in_flight += rt->sync_range(l.seq).has_value();
  EXPECT_GT(in_flight, 1u) << "the launches did not overlap";
  for (const Launch& l : launches) {
    expect_equal_bits(download(l.out, 64 * 48), g.reference(l.x, l.w, l.bias));
  }
}

// A launch the driver times out (TDR: the device is reset, every sync object cleared) leaves no
// sync-object range or command-buffer set held: the launches after it run, through more than a
// full turn of the ranges.
class SynapseLaunchTdrTest : public SynapseLaunchTest {
 protected:
  uint64_t cs_timeout_us() const override { return 100; }
};

TEST_F(SynapseLaunchTdrTest, LaunchesAfterATimedOutLaunchRunThroughEverySyncRange) {
  const DenseReluGraph big(2048, 2048, 2048);
  const auto slow = compile_and_load(big.graph);
  ASSERT_TRUE(slow);
  std::map<std::string, uint64_t> by_name = {{"x", malloc(2048 * 2048 * 4)}, {"w", malloc(2048 * 2048 * 4)},
                                             {"bias", malloc(2048 * 4)}, {"out", malloc(2048 * 2048 * 4)}};
  std::vector<uint64_t> addresses;
  for (const auto& t : slow->recipe().persistent()) addresses.push_back(by_name.at(t.name()));
  uint64_t seq = 0;
  ASSERT_TRUE(rt->launch(*slow, addresses, 0, &seq).ok());
  EXPECT_FALSE(rt->wait(seq).ok()) << "a launch of a 2048^3 GEMM should take longer than 100 us";

  const DoubleGraph twice(64);
  const auto fast = compile_and_load(twice.graph);
  ASSERT_TRUE(fast);
  const uint64_t in = malloc(64 * 4), out = malloc(64 * 4);
  std::vector<uint64_t> fast_addresses;
  for (const auto& t : fast->recipe().persistent()) fast_addresses.push_back(t.name() == "in" ? in : out);
  const std::vector<float> x = random_floats(64, 21);
  upload(x, in);
  // 1536 sync objects in ranges of 8: 192 ranges; go round them once more.
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(rt->launch(*fast, fast_addresses, 0, &seq).ok()) << "launch " << i;
    ASSERT_TRUE(rt->wait(seq).ok()) << "launch " << i;
  }
  std::vector<float> want = x;
  for (float& v : want) v = v + v;
  expect_equal_bits(download(out, 64), want);
}

// x (persistent, `in` shape) -> relu -> r -> memcpy "reshape" -> m (`out` shape) -> neg -> y.
Graph relu_copy_neg(const std::vector<uint32_t>& in, const std::vector<uint32_t>& out) {
  Graph g;
  TensorId x, r, m, y;
  EXPECT_TRUE(g.add_tensor({"x", DType::F32, in, true}, &x).ok());
  EXPECT_TRUE(g.add_tensor({"r", DType::F32, in}, &r).ok());
  EXPECT_TRUE(g.add_tensor({"m", DType::F32, out}, &m).ok());
  EXPECT_TRUE(g.add_tensor({"y", DType::F32, out, true}, &y).ok());
  EXPECT_TRUE(g.add_node({"act", "relu_fwd_f32", {x}, {r}, {}}).ok());
  EXPECT_TRUE(g.add_node({"reshape", "memcpy", {r}, {m}, {}}).ok());
  EXPECT_TRUE(g.add_node({"flip", "neg_fwd_f32", {m}, {y}, {}}).ok());
  return g;
}

// x (persistent, `in` shape) -> relu -> r -> memcpy -> y (persistent, `out` shape).
Graph relu_copy(const std::vector<uint32_t>& in, const std::vector<uint32_t>& out) {
  Graph g;
  TensorId x, r, y;
  EXPECT_TRUE(g.add_tensor({"x", DType::F32, in, true}, &x).ok());
  EXPECT_TRUE(g.add_tensor({"r", DType::F32, in}, &r).ok());
  EXPECT_TRUE(g.add_tensor({"y", DType::F32, out, true}, &y).ok());
  EXPECT_TRUE(g.add_node({"act", "relu_fwd_f32", {x}, {r}, {}}).ok());
  EXPECT_TRUE(g.add_node({"reshape", "memcpy", {r}, {y}, {}}).ok());
  return g;
}

bool has_job_on(const recipe::Recipe& recipe, const std::vector<regs::QueueId>& queues) {
  for (const auto& job : recipe.jobs())
    for (regs::QueueId q : queues)
      if (job.queue_id() == regs::to_index(q)) return true;
  return false;
}

TEST_F(SynapseLaunchTest, MemcpyIntoAPersistentTensorCopiesThroughAnInternalDma) {
  // x [96, 10] -> relu -> r (workspace) -> memcpy -> y [32, 30] (persistent).
  const Graph g = relu_copy({96, 10}, {32, 30});
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g, &recipe);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(recipe.nodes(1).engine(), "dma");
  EXPECT_EQ(recipe.nodes(1).jobs(), 1u);
  EXPECT_TRUE(has_job_on(recipe, {regs::QueueId::DMA_2_0}));

  const std::vector<float> host = random_floats(960, 9);
  const std::vector<float> out = run_x_to_y(recipe, loaded, host, 960);
  for (size_t i = 0; i < host.size(); ++i) {
    const float want = host[i] <= 0.0f ? 0.0f : host[i];
    ASSERT_EQ(bits(out[i]), bits(want)) << "element " << i;
  }

  compiler::CompileTarget no_dma = rt->target();
  no_dma.dma_queues.clear();
  recipe::Recipe none;
  const graph::Result refused = compiler::compile_graph(g, no_dma, &none);
  EXPECT_EQ(refused.status, graph::Status::InvalidArgument);
  EXPECT_EQ(refused.message, "node 'reshape': the target has no DMA queue for a copy");
}

TEST_F(SynapseLaunchTest, AReshapeBetweenWorkspaceTensorsIsAViewWithNoCopy) {
  // x [96, 10] -> relu -> r (workspace) -> memcpy -> m [32, 30] (workspace) -> neg -> y: m is
  // planned on r's bytes, the copy has no jobs (no DMA queue at all), neg waits for relu.
  const Graph g = relu_copy_neg({96, 10}, {32, 30});
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g, &recipe);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(recipe.nodes(1).engine(), "view");
  EXPECT_EQ(recipe.nodes(1).jobs(), 0u);
  EXPECT_FALSE(has_job_on(recipe, rt->target().dma_queues));
  ASSERT_EQ(recipe.nodes(2).waits_for_size(), 1);
  EXPECT_EQ(recipe.nodes(2).waits_for(0), 0u);
  EXPECT_EQ(recipe.workspace_bytes() + recipe.sram_bytes(), 3840u) << "one tensor's bytes: the view has none of its own";

  const std::vector<float> host = random_floats(960, 9);
  const std::vector<float> out = run_x_to_y(recipe, loaded, host, 960);
  for (size_t i = 0; i < host.size(); ++i) {
    const float want = -(host[i] <= 0.0f ? 0.0f : host[i]);
    ASSERT_EQ(bits(out[i]), bits(want)) << "element " << i;
  }

  // Needing no copy, it compiles for a target without DMA queues.
  compiler::CompileTarget no_dma = rt->target();
  no_dma.dma_queues.clear();
  recipe::Recipe without;
  EXPECT_TRUE(compiler::compile_graph(g, no_dma, &without).ok());

  Graph bad;
  TensorId a, b;
  ASSERT_TRUE(bad.add_tensor({"a", DType::F32, {96, 10}, true}, &a).ok());
  ASSERT_TRUE(bad.add_tensor({"b", DType::F32, {32, 31}, true}, &b).ok());
  ASSERT_TRUE(bad.add_node({"reshape", "memcpy", {a}, {b}, {}}).ok());
  recipe::Recipe none;
  const graph::Result err = compiler::compile_graph(bad, rt->target(), &none);
  EXPECT_EQ(err.status, graph::Status::InvalidArgument);
  EXPECT_EQ(err.message, "node 'reshape': memcpy: output 0 'b' has 992 elements, input 0 'a' has 960");
}

TEST_F(SynapseLaunchTest, ALossOverALongRowSumsItsChunksOnEveryTpcThenThePartials) {
  // mean over 131072 elements into one: 16 chunks of 8192 (phase 0, over the TPCs), then the 16
  // partials (phase 1). The recipe names both kernels (traces label each by the node's GUID).
  const uint32_t n = 131072;
  Graph g;
  TensorId x, y;
  ASSERT_TRUE(g.add_tensor({"x", DType::F32, {n}, true}, &x).ok());
  ASSERT_TRUE(g.add_tensor({"y", DType::F32, {1}, true}, &y).ok());
  ASSERT_TRUE(g.add_node({"loss", "reduce_mean_fwd_f32", {x}, {y}, {{0.0f}}}).ok());
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g, &recipe);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(recipe.nodes(0).jobs(), rt->target().tpcs + 1) << "every TPC, then one for the partials";
  ASSERT_EQ(recipe.nodes(0).part_program_offsets_size(), 1);
  EXPECT_NE(recipe.nodes(0).part_program_offsets(0), recipe.nodes(0).program_offset());
  EXPECT_GE(recipe.workspace_bytes(), 16u * 4) << "the partials' scratch";

  const std::vector<float> host = random_floats(n, 13);
  const std::vector<float> out = run_x_to_y(recipe, loaded, host, 1);
  double exact = 0;
  for (float v : host) exact += v;
  exact /= n;
  EXPECT_NEAR(out[0], exact, 1e-5 * (std::fabs(exact) + 1.0));
}

TEST_F(SynapseLaunchTest, ALargeCopyIsSpreadOverTheInternalDmaChannels) {
  // 1.5 MB: six pieces of 256 KB, one per internal DMA queue (DMA2..7 on hl205), each signalling
  // the node; the launch's last job waits for all six.
  const uint32_t n = 1536 * 256;
  const Graph g = relu_copy({1536, 256}, {256, 1536});
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g, &recipe);
  ASSERT_TRUE(loaded);
  ASSERT_EQ(rt->target().dma_queues.size(), 6u);
  EXPECT_EQ(recipe.nodes(1).jobs(), 6u);
  std::set<uint32_t> dma_queues;
  for (const auto& job : recipe.jobs())
    for (regs::QueueId q : rt->target().dma_queues)
      if (job.queue_id() == regs::to_index(q)) dma_queues.insert(job.queue_id());
  EXPECT_EQ(dma_queues.size(), 6u);

  const std::vector<float> host = random_floats(n, 11);
  const std::vector<float> out = run_x_to_y(recipe, loaded, host, n);
  for (size_t i = 0; i < host.size(); ++i) {
    const float want = host[i] <= 0.0f ? 0.0f : host[i];
    ASSERT_EQ(bits(out[i]), bits(want)) << "element " << i;
  }
}

// A tensor-list node runs as several launches in phases: clip the gradients of two parameters
// by their total norm (sums of squares, then the norm, then the scaling), then one SGD node over
// both; launched twice, so the step count in the state tensor reaches 2.
TEST_F(SynapseLaunchTest, TensorListNodesRunTheirPartsInPhases) {
  Graph g;
  const uint32_t n1 = 1000, n2 = 70;
  TensorId state_in, state_out, p1, p2, p1_out, p2_out, g1, g2, c1, c2, norm, scratch;
  ASSERT_TRUE(g.add_tensor({"state_in", DType::F32, {2}, true}, &state_in).ok());
  ASSERT_TRUE(g.add_tensor({"state_out", DType::F32, {2}, true}, &state_out).ok());
  ASSERT_TRUE(g.add_tensor({"p1", DType::F32, {n1}, true}, &p1).ok());
  ASSERT_TRUE(g.add_tensor({"p2", DType::F32, {n2}, true}, &p2).ok());
  ASSERT_TRUE(g.add_tensor({"p1_out", DType::F32, {n1}, true}, &p1_out).ok());
  ASSERT_TRUE(g.add_tensor({"p2_out", DType::F32, {n2}, true}, &p2_out).ok());
  ASSERT_TRUE(g.add_tensor({"g1", DType::F32, {n1}, true}, &g1).ok());
  ASSERT_TRUE(g.add_tensor({"g2", DType::F32, {n2}, true}, &g2).ok());
  ASSERT_TRUE(g.add_tensor({"c1", DType::F32, {n1}}, &c1).ok());
  ASSERT_TRUE(g.add_tensor({"c2", DType::F32, {n2}}, &c2).ok());
  ASSERT_TRUE(g.add_tensor({"norm", DType::F32, {1}, true}, &norm).ok());
  ASSERT_TRUE(g.add_tensor({"scratch", DType::F32, {129}}, &scratch).ok());
  ASSERT_TRUE(g.add_node({"clip", "fused_clip_norm_f32", {g1, g2}, {c1, c2, norm, scratch}, {{0.5f}}}).ok());
  ASSERT_TRUE(g.add_node({"sgd", "fused_sgd_f32", {state_in, p1, c1, p2, c2}, {state_out, p1_out, p2_out},
                          {{0.0f, 0.0f, 0.0f, 0.0f}}})
                  .ok());
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g, &recipe);
  ASSERT_TRUE(loaded);
  // clip: 2 sum-of-squares launches over the 8 TPCs (64 chunks each), the norm on one, the two
  // scalings, two vectors a step (1000 elements: 8 steps over 8 TPCs; 70: 1 step); sgd steps four
  // vectors at a time: 4 + 1, the count 1.
  EXPECT_EQ(recipe.nodes(0).jobs(), 8u + 8u + 1u + 8u + 1u);
  EXPECT_EQ(recipe.nodes(1).jobs(), 4u + 1u + 1u);

  const std::vector<float> h1 = random_floats(n1, 3), h2 = random_floats(n2, 4);
  const std::vector<float> hp1 = random_floats(n1, 5), hp2 = random_floats(n2, 6);
  const float lr = 0.1f;
  std::map<std::string, uint64_t> at;
  for (const char* name : {"state", "p1", "p2", "g1", "g2", "norm"}) at[name] = malloc(4096);
  upload({0.0f, lr}, at["state"]);
  upload(hp1, at["p1"]);
  upload(hp2, at["p2"]);
  upload(h1, at["g1"]);
  upload(h2, at["g2"]);
  std::vector<uint64_t> addresses(recipe.persistent_size());
  for (int i = 0; i < recipe.persistent_size(); ++i) {
    std::string name = recipe.persistent(i).name();
    if (name.find('_') != std::string::npos) name = name.substr(0, name.find('_'));
    addresses[i] = at.at(name);
  }
  const uint64_t ws = recipe.workspace_bytes() ? malloc(recipe.workspace_bytes()) : 0;
  double sum = 0.0;
  for (float v : h1) sum += double{v} * v;
  for (float v : h2) sum += double{v} * v;
  std::vector<float> want1 = hp1, want2 = hp2;
  for (int launch = 1; launch <= 2; ++launch) {
    uint64_t seq = 0;
    ASSERT_TRUE(rt->launch(*loaded, addresses, ws, &seq).ok());
    const float got_norm = download(at["norm"], 1)[0];
    EXPECT_NEAR(got_norm, std::sqrt(sum), 1e-6 * std::sqrt(sum));
    const float coef = std::min(0.5f / (got_norm + 1e-6f), 1.0f);
    for (uint32_t i = 0; i < n1; ++i) want1[i] = want1[i] + (h1[i] * coef) * -lr;
    for (uint32_t i = 0; i < n2; ++i) want2[i] = want2[i] + (h2[i] * coef) * -lr;
    expect_equal_bits(download(at["p1"], n1), want1);
    expect_equal_bits(download(at["p2"], n2), want2);
    EXPECT_EQ(download(at["state"], 2), (std::vector<float>{static_cast<float>(launch), lr}));
  }
}

TEST_F(SynapseLaunchTest, ALargeEmbeddingBackwardBucketsItsIndicesThenAccumulatesEachChunk) {
  // 300 x 1100 f32, 200 indices: embedding_bwd.s would take 5 x 5 (vector, chunk) steps, so the
  // node is five launches (the indices' entries; their counts, offsets and lists; the chunks'
  // rows), the lists in the node's scratch. The second launch's scratch still holds the first's.
  const uint32_t d = 300, v = 1100, n = 200;
  Graph g;
  TensorId grad, idx, gw;
  ASSERT_TRUE(g.add_tensor({"grad", DType::F32, {d, n}, true}, &grad).ok());
  ASSERT_TRUE(g.add_tensor({"idx", DType::I32, {n}, true}, &idx).ok());
  ASSERT_TRUE(g.add_tensor({"gw", DType::F32, {d, v}, true}, &gw).ok());
  ASSERT_TRUE(g.add_node({"embedding_grad", "embedding_bwd_f32", {grad, idx}, {gw}, {}}).ok());
  recipe::Recipe recipe;
  const auto loaded = compile_and_load(g, &recipe);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(recipe.nodes(0).part_program_offsets_size(), 4) << "five kernels";
  EXPECT_GE(recipe.workspace_bytes(), (2u * n + (v + 63) / 64 * n) * 4) << "the entries and the lists";
  std::map<std::string, uint64_t> at = {{"grad", malloc(uint64_t{d} * n * 4)}, {"idx", malloc(n * 4)},
                                        {"gw", malloc(uint64_t{d} * v * 4)}};
  std::vector<uint64_t> addresses(recipe.persistent_size());
  for (int i = 0; i < recipe.persistent_size(); ++i) addresses[i] = at.at(recipe.persistent(i).name());
  const uint64_t ws = malloc(recipe.workspace_bytes());
  for (uint32_t launch = 0; launch < 2; ++launch) {
    const std::vector<float> host_grad = random_floats(uint64_t{d} * n, 40 + launch);
    std::vector<int32_t> rows(n);
    std::mt19937 rng(50 + launch);
    for (int32_t& r : rows) r = std::uniform_int_distribution<int32_t>(-2, launch ? 40 : static_cast<int32_t>(v))(rng);
    std::vector<float> idx_bits(n);
    std::memcpy(idx_bits.data(), rows.data(), n * 4);
    upload(host_grad, at["grad"]);
    upload(idx_bits, at["idx"]);
    std::vector<float> want(uint64_t{d} * v, 0.0f);
    for (uint32_t k = 0; k < n; ++k)
      if (rows[k] >= 0 && rows[k] < static_cast<int32_t>(v))
        for (uint32_t j = 0; j < d; ++j) want[uint64_t{rows[k]} * d + j] += host_grad[uint64_t{k} * d + j];
    uint64_t seq = 0;
    ASSERT_TRUE(rt->launch(*loaded, addresses, ws, &seq).ok());
    expect_equal_bits(download(at["gw"], want.size()), want);
  }
}

TEST_F(SynapseLaunchTest, InvalidGraphsFailAtCompileAndSubmitNothing) {
  const uint64_t before = rt->last_submission();
  struct Case {
    const char* what;
    std::function<void(Graph&)> build;
    graph::Status status;
    const char* message_part;
  };
  const std::vector<Case> cases = {
      {"shape mismatch",
       [](Graph& g) {
         TensorId a, b, c;
         g.add_tensor({"a", DType::F32, {64, 8}, true}, &a);
         g.add_tensor({"b", DType::F32, {32, 8}, true}, &b);
         g.add_tensor({"c", DType::F32, {64, 8}, true}, &c);
         g.add_node({"sum", "add_fwd_f32", {a, b}, {c}, {}});
       },
       graph::Status::InvalidArgument, "node 'sum'"},
      {"unknown GUID",
       [](Graph& g) {
         TensorId a, c;
         g.add_tensor({"a", DType::F32, {64}, true}, &a);
         g.add_tensor({"c", DType::F32, {64}, true}, &c);
         g.add_node({"mystery", "frobnicate_f32", {a}, {c}, {}});
       },
       graph::Status::Unsupported, "frobnicate_f32"},
      {"wrong dtype",
       [](Graph& g) {
         TensorId a, c;
         g.add_tensor({"a", DType::BF16, {64}, true}, &a);
         g.add_tensor({"c", DType::F32, {64}, true}, &c);
         g.add_node({"act", "relu_fwd_f32", {a}, {c}, {}});
       },
       graph::Status::InvalidArgument, "node 'act'"},
      {"dangling tensor",
       [](Graph& g) {
         TensorId a, c;
         g.add_tensor({"a", DType::F32, {64}}, &a);   // not persistent, written by nobody
         g.add_tensor({"c", DType::F32, {64}, true}, &c);
         g.add_node({"act", "relu_fwd_f32", {a}, {c}, {}});
       },
       graph::Status::InvalidArgument, "tensor 'a'"},
  };
  for (const Case& c : cases) {
    Graph g;
    c.build(g);
    recipe::Recipe recipe;
    const graph::Result r = compiler::compile_graph(g, rt->target(), &recipe);
    EXPECT_EQ(r.status, c.status) << c.what << ": " << r.message;
    EXPECT_NE(r.message.find(c.message_part), std::string::npos) << c.what << ": " << r.message;
    EXPECT_EQ(recipe.jobs_size(), 0) << c.what;
  }
  EXPECT_EQ(rt->last_submission(), before);
}

TEST_F(SynapseLaunchTest, LaunchRefusesMissingOrForeignBuffers) {
  const DenseReluGraph g(64, 32, 32);
  const auto loaded = compile_and_load(g.graph);
  ASSERT_TRUE(loaded);
  const uint64_t before = rt->last_submission();
  std::vector<uint64_t> addresses(loaded->recipe().persistent_size(), 0);
  graph::Result r = rt->launch(*loaded, addresses, 0, nullptr);
  EXPECT_EQ(r.status, graph::Status::InvalidArgument);
  EXPECT_NE(r.message.find("has no address"), std::string::npos) << r.message;
  r = rt->launch(*loaded, {1, 2}, 0, nullptr);
  EXPECT_NE(r.message.find("persistent tensor addresses"), std::string::npos) << r.message;
  for (auto& a : addresses) a = malloc(16);   // too small for any of them
  r = rt->launch(*loaded, addresses, 0, nullptr);
  EXPECT_NE(r.message.find("not inside a device allocation"), std::string::npos) << r.message;
  EXPECT_EQ(rt->last_submission(), before);
}

}  // namespace
}  // namespace hpusim::synapse::runtime
