// Which GEMM and consumer pairs the compiler slices into row chunks (find_gemm_slices), and how.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "synapse/compiler/memory_plan.h"
#include "synapse/compiler/slicing.h"
#include "synapse/graph/validate.h"
#include "synapse/tpc_kernels/kernel_library.h"

namespace hpusim::synapse::compiler {
namespace {

using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::TensorId;

struct Built {
  Graph graph;
  TensorId tensor(const std::string& name, std::vector<uint32_t> shape, bool persistent = false) {
    TensorId id;
    EXPECT_TRUE(graph.add_tensor({name, DType::F32, std::move(shape), persistent}, &id).ok());
    return id;
  }
  void node(const std::string& name, const std::string& guid, std::vector<TensorId> in, std::vector<TensorId> out) {
    EXPECT_TRUE(graph.add_node({name, guid, std::move(in), std::move(out), {}}).ok());
  }
  // The slices with the kernel library's per_element and every consumer fitting (unless told).
  std::map<size_t, GemmSlice> slices(bool consumers_fit = true, SliceOptions options = {}) {
    std::vector<NodeId> order;
    EXPECT_TRUE(graph::validate(graph, &order).ok());
    MemoryPlan plan;
    EXPECT_TRUE(plan_memory(graph, order, &plan).ok());
    const auto& library = tpc_kernels::KernelLibrary::instance();
    const auto per_element = [&](size_t step) { return library.per_element(graph.node(order[step]).guid); };
    return find_gemm_slices(graph, order, plan, per_element, [&](const GemmSlice&) { return consumers_fit; }, options);
  }
};

// x [K, M] times w [N, K] into y [N, M] (M rows), then `consumer` reading y (and `other`).
Built gemm_then(uint32_t m, const std::string& consumer, std::vector<uint32_t> other_shape = {}) {
  Built b;
  const uint32_t n = 64, k = 32;
  const TensorId x = b.tensor("x", {k, m}, true), w = b.tensor("w", {n, k}, true);
  const TensorId y = b.tensor("y", {n, m}), out = b.tensor("out", {n, m}, true);
  b.node("fc", "gemm", {x, w}, {y});
  std::vector<TensorId> inputs = {y};
  if (!other_shape.empty()) inputs.push_back(b.tensor("other", other_shape, true));
  b.node("consumer", consumer, inputs, {out});
  return b;
}

TEST(SynapseSlicing, AGemmAndItsPerElementReaderAreCutIntoChunksOfTheSuperTileRows) {
  Built b = gemm_then(1000, "add_fwd_f32", {64, 1});   // a bias row, read whole by every chunk
  const auto slices = b.slices();
  ASSERT_EQ(slices.size(), 1u);
  const GemmSlice& s = slices.begin()->second;
  EXPECT_EQ(s.gemm_step, 0u);
  EXPECT_EQ(s.consumer_step, 1u);
  EXPECT_EQ(s.rows, 1000u);
  EXPECT_EQ(s.chunks, 4u);   // four super-tiles of 256 rows, the last one short
  EXPECT_EQ(s.chunk_rows, 256u);
  EXPECT_EQ(s.chunk_size(3), 1000u - 768u);
  EXPECT_EQ(s.cut, (std::vector<bool>{true, false, true}));

  // At most max_chunks, each a whole number of super-tile rows.
  Built big = gemm_then(4096, "relu_fwd_f32");
  const auto many = big.slices();
  ASSERT_EQ(many.size(), 1u);
  EXPECT_EQ(many.begin()->second.chunks, 8u);
  EXPECT_EQ(many.begin()->second.chunk_rows, 512u);

  // Super-tiles of 320 rows (hl205's): 1024 rows take four passes over B either way, so the rows
  // are shared out evenly, in 64-row tiles: 4 x 256, not 320, 320, 320 and a short 64.
  SliceOptions hl205;
  hl205.chunk_row_unit = 320;
  Built even = gemm_then(1024, "relu_fwd_f32");
  const auto shared = even.slices(true, hl205);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared.begin()->second.chunks, 4u);
  EXPECT_EQ(shared.begin()->second.chunk_rows, 256u);
  EXPECT_EQ(shared.begin()->second.chunk_size(3), 256u);
  Built odd = gemm_then(1000, "relu_fwd_f32");
  const GemmSlice& uneven = odd.slices(true, hl205).begin()->second;
  EXPECT_EQ(uneven.chunks, 4u);
  EXPECT_EQ(uneven.chunk_rows, 256u);   // 250 rounded up to whole 64-row tiles
  EXPECT_EQ(uneven.chunk_size(3), 1000u - 768u);
}

TEST(SynapseSlicing, PairsThatCannotRunChunkByChunkAreLeftWhole) {
  // Too few rows for two chunks per engine (three super-tiles).
  EXPECT_TRUE(gemm_then(768, "relu_fwd_f32").slices().empty());
  // A card that reports no super-tile.
  SliceOptions none;
  none.chunk_row_unit = 0;
  EXPECT_TRUE(gemm_then(4096, "relu_fwd_f32").slices(true, none).empty());
  // A row kernel's reader (softmax over dim 0 is per row, not per element).
  EXPECT_TRUE(gemm_then(1024, "softmax_fwd_f32").slices().empty());
  // An input of another layout: a column broadcast along the rows' dim 0, not a bias row.
  EXPECT_TRUE(gemm_then(1024, "add_fwd_f32", {1, 1024}).slices().empty());
  // The lowering's check of the chunk kernels says no.
  EXPECT_TRUE(gemm_then(1024, "relu_fwd_f32").slices(false).empty());

  // Two readers of the GEMM's output.
  Built two = gemm_then(1024, "relu_fwd_f32");
  const TensorId y = *two.graph.find_tensor("y");
  two.node("second", "neg_fwd_f32", {y}, {two.tensor("out2", {64, 1024}, true)});
  EXPECT_TRUE(two.slices().empty());
}

}  // namespace
}  // namespace hpusim::synapse::compiler
