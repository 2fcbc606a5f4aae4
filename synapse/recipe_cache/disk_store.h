// The disk half of the recipe cache: a directory of verified recipe files, shared with other
// processes, kept within its size limit by evicting the oldest recipes first.
//
// Errors are counted and logged, never thrown, except by the constructor: a directory that
// cannot be created or written is the caller's configuration error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "synapse/recipe_cache/cache_counters.h"
#include "synapse/recipe_cache/cache_log.h"
#include "synapse/recipe_cache/disk_cache_config.h"
#include "synapse/recipe_cache/recipe_key.h"

namespace hpusim::synapse::recipe_cache {

class DiskStore {
 public:
  // Creates the directory if needed and, with clear_at_start, removes its recipe files. Throws
  // std::runtime_error naming the directory if it cannot be created or is not writable.
  DiskStore(const DiskCacheConfig& config, AtomicCacheCounters& counters, CacheLog& log);

  // The verified recipe, or nullopt. A file that does not verify is removed and counted.
  // Counts disk hits and errors, not misses (the cache decides what a miss is).
  std::optional<std::string> load(RecipeKey key);

  // Under the eviction lock: removes the oldest recipe files until this one fits within
  // 0.99 x the limit, then writes it. A recipe that can never fit is only logged.
  void save(RecipeKey key, const std::string& payload);

  const std::filesystem::path& directory() const { return directory_; }
  uint64_t budget_bytes() const { return budget_bytes_; }

 private:
  void prepare_directory();
  void clear();
  void remove_stale_temp_files();
  bool make_room(uint64_t needed_bytes);
  void remove_corrupt(const std::filesystem::path& path, RecipeKey key, uint64_t device, uint64_t inode,
                      const std::string& problem);
  void disk_error(const std::string& what);

  std::filesystem::path directory_;
  bool clear_at_start_;
  uint64_t budget_bytes_;
  AtomicCacheCounters& counters_;
  CacheLog& log_;
};

}  // namespace hpusim::synapse::recipe_cache
