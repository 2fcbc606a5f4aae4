// The Synapse layer's recipe cache: compiled graphs ("recipes", opaque serialized bytes) by the
// 64-bit structural hash of their graph, in memory and, when configured, in a directory on disk
// that survives the process and may be shared by several processes (README.md):
//
//   RecipeCache cache(disk_cache_config_from_environment(), [](const std::string& line) { ... });
//   if (std::shared_ptr<const std::string> recipe = cache.lookup(key)) { /* launch it */ }
//   else cache.store(key, compile(graph));   // returns at once; the disk write runs behind
//
// Thread-safe. Errors on disk are counted and logged, never thrown.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "synapse/recipe_cache/background_worker.h"
#include "synapse/recipe_cache/cache_counters.h"
#include "synapse/recipe_cache/cache_log.h"
#include "synapse/recipe_cache/disk_cache_config.h"
#include "synapse/recipe_cache/disk_store.h"
#include "synapse/recipe_cache/recipe_key.h"

namespace hpusim::synapse::recipe_cache {

class RecipeCache {
 public:
  // Memory only without a disk configuration. With one, the directory is created (and cleared,
  // if asked) now; throws std::runtime_error naming it if it cannot be created or written.
  explicit RecipeCache(std::optional<DiskCacheConfig> disk = std::nullopt, RecipeCacheLogger logger = {});
  ~RecipeCache();   // flushes
  RecipeCache(const RecipeCache&) = delete;
  RecipeCache& operator=(const RecipeCache&) = delete;

  // Memory first, then disk (a disk hit is put into memory). nullptr on a miss.
  std::shared_ptr<const std::string> lookup(RecipeKey key);

  // Into memory now; onto disk (evicting as needed) on the background thread.
  void store(RecipeKey key, std::string recipe);

  // Waits for the disk work queued so far.
  void flush();

  RecipeCacheCounters counters() const { return counters_.snapshot(); }
  bool has_disk() const { return disk_.has_value(); }

 private:
  std::shared_ptr<const std::string> find_in_memory(RecipeKey key);
  void put_in_memory(RecipeKey key, std::shared_ptr<const std::string> recipe);

  AtomicCacheCounters counters_;
  CacheLog log_;
  std::mutex memory_mutex_;
  std::unordered_map<RecipeKey, std::shared_ptr<const std::string>> memory_;
  std::optional<DiskStore> disk_;
  std::optional<BackgroundWorker> worker_;   // last: destroyed (drained) first
};

}  // namespace hpusim::synapse::recipe_cache
