// The compile step as the API runs it: a recipe cache lookup by the graph's key, a compile on a
// miss (the recipe stored back, the disk write in the background), and the counters.
//
// The key is the graph's structural hash mixed with the compile target, so recipes for another
// card are never taken. A cached recipe that does not parse or fails its checks is dropped and
// the graph recompiled (counted as corrupt).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "synapse/compiler/compile_target.h"
#include "synapse/graph/graph.h"
#include "synapse/recipe/recipe.pb.h"
#include "synapse/recipe_cache/recipe_cache.h"

namespace hpusim::synapse::compiler {

struct CompileCounters {
  uint64_t compiles = 0;        // graphs compiled (misses and corrupt entries)
  uint64_t cache_hits = 0;      // recipes taken from the cache (memory or disk)
  uint64_t cache_misses = 0;
  uint64_t corrupt = 0;         // cached recipes that failed to parse or check
  uint64_t compile_ns = 0;      // wall time spent compiling (measured)
  uint64_t compiled_nodes = 0;  // nodes of the graphs compiled
};

class CachingCompiler {
 public:
  explicit CachingCompiler(std::unique_ptr<recipe_cache::RecipeCache> cache);

  // *recipe is shared with the cache's other users; *hit says whether it came from the cache.
  graph::Result compile(const graph::Graph& graph, const CompileTarget& target,
                        std::shared_ptr<const recipe::Recipe>* recipe, bool* hit = nullptr);

  CompileCounters counters() const;
  recipe_cache::RecipeCache& cache() { return *cache_; }

  static uint64_t key(const graph::Graph& graph, const CompileTarget& target);

 private:
  std::unique_ptr<recipe_cache::RecipeCache> cache_;
  std::atomic<uint64_t> compiles_{0}, hits_{0}, misses_{0}, corrupt_{0}, compile_ns_{0}, compiled_nodes_{0};
};

}  // namespace hpusim::synapse::compiler
