#include "synapse/compiler/caching_compiler.h"

#include <chrono>

#include "synapse/compiler/lowering.h"
#include "synapse/graph/structural_hash.h"
#include "synapse/recipe/recipe_file.h"
#include "synapse/recipe_cache/fnv1a.h"

namespace hpusim::synapse::compiler {

CachingCompiler::CachingCompiler(std::unique_ptr<recipe_cache::RecipeCache> cache) : cache_(std::move(cache)) {}

uint64_t CachingCompiler::key(const graph::Graph& graph, const CompileTarget& target) {
  const uint64_t hash = graph::structural_hash(graph);
  const std::string target_text = target.describe();
  return hash ^ (recipe_cache::fnv1a64(target_text.data(), target_text.size()) * 0x9E3779B97F4A7C15ull);
}

graph::Result CachingCompiler::compile(const graph::Graph& graph, const CompileTarget& target,
                                       std::shared_ptr<const recipe::Recipe>* recipe, bool* hit) {
  const uint64_t k = key(graph, target);
  if (std::shared_ptr<const std::string> bytes = cache_->lookup(k)) {
    auto parsed = std::make_shared<recipe::Recipe>();
    std::string error;
    if (recipe::deserialize(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), parsed.get(), &error) &&
        parsed->target() == target.describe()) {
      ++hits_;
      *recipe = std::move(parsed);
      if (hit) *hit = true;
      return graph::Result::success();
    }
    ++corrupt_;
  } else {
    ++misses_;
  }
  const auto start = std::chrono::steady_clock::now();
  auto compiled = std::make_shared<recipe::Recipe>();
  graph::Result r = compile_graph(graph, target, compiled.get());
  compile_ns_ += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  if (!r.ok()) return r;
  ++compiles_;
  compiled_nodes_ += graph.node_count();
  const std::vector<uint8_t> bytes = recipe::serialize(*compiled);
  cache_->store(k, std::string(bytes.begin(), bytes.end()));
  *recipe = std::move(compiled);
  if (hit) *hit = false;
  return graph::Result::success();
}

CompileCounters CachingCompiler::counters() const {
  CompileCounters c;
  c.compiles = compiles_;
  c.cache_hits = hits_;
  c.cache_misses = misses_;
  c.corrupt = corrupt_;
  c.compile_ns = compile_ns_;
  c.compiled_nodes = compiled_nodes_;
  return c;
}

}  // namespace hpusim::synapse::compiler
