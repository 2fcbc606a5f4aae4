// What the recipe cache has done: a snapshot for callers, and the atomic counters behind it,
// updated by callers' threads and by the background thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace hpusim::synapse::recipe_cache {

struct RecipeCacheCounters {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;               // found on disk (and then put into memory)
  uint64_t misses = 0;                  // neither; a corrupt or unreadable file is a miss too
  uint64_t stores = 0;                  // store() calls
  uint64_t disk_writes = 0;             // recipe files written (renamed into place)
  uint64_t evictions = 0;               // recipe files removed to make room
  uint64_t corrupt_files_removed = 0;   // files that did not verify, removed
  uint64_t disk_errors = 0;             // failed reads, writes, removals, locks, listings
  uint64_t oversized_recipes = 0;       // recipes larger than the disk budget, kept in memory only
};

struct AtomicCacheCounters {
  std::atomic<uint64_t> memory_hits{0};
  std::atomic<uint64_t> disk_hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> stores{0};
  std::atomic<uint64_t> disk_writes{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> corrupt_files_removed{0};
  std::atomic<uint64_t> disk_errors{0};
  std::atomic<uint64_t> oversized_recipes{0};

  RecipeCacheCounters snapshot() const {
    RecipeCacheCounters c;
    c.memory_hits = memory_hits.load();
    c.disk_hits = disk_hits.load();
    c.misses = misses.load();
    c.stores = stores.load();
    c.disk_writes = disk_writes.load();
    c.evictions = evictions.load();
    c.corrupt_files_removed = corrupt_files_removed.load();
    c.disk_errors = disk_errors.load();
    c.oversized_recipes = oversized_recipes.load();
    return c;
  }
};

}  // namespace hpusim::synapse::recipe_cache
