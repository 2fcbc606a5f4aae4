// Lookups: memory first, then disk; a second cache on the same directory (the next run, with a
// warm disk cache) finds every recipe on disk; clear at start empties the directory.
#include <gtest/gtest.h>

#include <fstream>

#include "synapse/recipe_cache/recipe_cache.h"
#include "tests/recipe_cache/test_support.h"

namespace hpusim::synapse::recipe_cache {
namespace {

using testing::disk_config;
using testing::payload_for;
using testing::ScratchDirectory;
using testing::test_key;

constexpr int kRecipes = 20;
constexpr uint64_t kLimit = 1 << 20;

std::string recipe_of(int i) { return payload_for(test_key(i), 100, 3000); }

TEST(RecipeCacheLookup, MemoryOnlyCacheHitsAndMisses) {
  RecipeCache cache;
  EXPECT_FALSE(cache.has_disk());
  EXPECT_EQ(cache.lookup(test_key(1)), nullptr);
  cache.store(test_key(1), recipe_of(1));
  std::shared_ptr<const std::string> hit = cache.lookup(test_key(1));
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, recipe_of(1));
  cache.flush();   // nothing to wait for
  RecipeCacheCounters c = cache.counters();
  EXPECT_EQ(c.memory_hits, 1u);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.stores, 1u);
  EXPECT_EQ(c.disk_writes, 0u);
}

TEST(RecipeCacheLookup, StoreIsInMemoryAtOnceAndOnDiskAfterFlush) {
  ScratchDirectory dir;
  RecipeCache cache(disk_config(dir.path(), kLimit));
  for (int i = 0; i < kRecipes; ++i) cache.store(test_key(i), recipe_of(i));
  for (int i = 0; i < kRecipes; ++i) {   // the background thread may or may not have written yet
    std::shared_ptr<const std::string> hit = cache.lookup(test_key(i));
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(*hit, recipe_of(i));
  }
  cache.flush();
  RecipeCacheCounters c = cache.counters();
  EXPECT_EQ(c.memory_hits, uint64_t{kRecipes});
  EXPECT_EQ(c.disk_hits, 0u);
  EXPECT_EQ(c.stores, uint64_t{kRecipes});
  EXPECT_EQ(c.disk_writes, uint64_t{kRecipes});
  EXPECT_EQ(c.disk_errors, 0u);
  EXPECT_EQ(testing::recipe_keys_on_disk(dir.path()).size(), size_t{kRecipes});
  EXPECT_TRUE(list_temp_files(dir.path()).empty());
}

TEST(RecipeCacheLookup, SecondRunFindsEveryRecipeOnDisk) {
  ScratchDirectory dir;
  {
    RecipeCache first_run(disk_config(dir.path(), kLimit));
    for (int i = 0; i < kRecipes; ++i) {
      ASSERT_EQ(first_run.lookup(test_key(i)), nullptr);   // cold: compile, then store
      first_run.store(test_key(i), recipe_of(i));
    }
    EXPECT_EQ(first_run.counters().misses, uint64_t{kRecipes});
  }   // the destructor flushes

  RecipeCache second_run(disk_config(dir.path(), kLimit));
  for (int i = 0; i < kRecipes; ++i) {
    std::shared_ptr<const std::string> hit = second_run.lookup(test_key(i));
    ASSERT_NE(hit, nullptr) << i;
    EXPECT_EQ(*hit, recipe_of(i));
  }
  RecipeCacheCounters c = second_run.counters();
  EXPECT_EQ(c.disk_hits, uint64_t{kRecipes});
  EXPECT_EQ(c.misses, 0u);
  EXPECT_EQ(c.memory_hits, 0u);

  // A disk hit went into memory: the next lookups do not touch the disk.
  std::filesystem::remove(testing::recipe_path(dir.path(), test_key(0)));
  ASSERT_NE(second_run.lookup(test_key(0)), nullptr);
  EXPECT_EQ(second_run.counters().memory_hits, 1u);
  EXPECT_EQ(second_run.counters().disk_hits, uint64_t{kRecipes});
}

TEST(RecipeCacheLookup, ClearAtStartEmptiesTheDirectory) {
  ScratchDirectory dir;
  {
    RecipeCache first_run(disk_config(dir.path(), kLimit));
    for (int i = 0; i < kRecipes; ++i) first_run.store(test_key(i), recipe_of(i));
  }
  std::ofstream(dir / "notes.txt") << "not a recipe";
  std::ofstream(dir / temp_file_name(test_key(99), 1)) << "left by a crashed writer";
  ASSERT_EQ(testing::recipe_keys_on_disk(dir.path()).size(), size_t{kRecipes});

  testing::CollectedLog log;
  RecipeCache cleared(disk_config(dir.path(), kLimit, /*clear_at_start=*/true), log.logger());
  EXPECT_TRUE(testing::recipe_keys_on_disk(dir.path()).empty());
  EXPECT_TRUE(list_temp_files(dir.path()).empty());
  EXPECT_TRUE(std::filesystem::exists(dir / "notes.txt"));   // only recipe files go
  EXPECT_EQ(log.count_containing("removed 20 recipe files"), 1u) << log.all();
  for (int i = 0; i < kRecipes; ++i) EXPECT_EQ(cleared.lookup(test_key(i)), nullptr);
  EXPECT_EQ(cleared.counters().misses, uint64_t{kRecipes});

  // clear at start = false keeps what is there.
  cleared.store(test_key(0), recipe_of(0));
  cleared.flush();
  RecipeCache kept(disk_config(dir.path(), kLimit, /*clear_at_start=*/false));
  EXPECT_NE(kept.lookup(test_key(0)), nullptr);
  EXPECT_EQ(kept.counters().disk_hits, 1u);
}

TEST(RecipeCacheLookup, LoggerIsOptionalAndMayThrow) {
  ScratchDirectory dir;
  RecipeCache cache(disk_config(dir.path(), kLimit, true), [](const std::string&) { throw std::runtime_error("bad logger"); });
  cache.store(test_key(1), recipe_of(1));
  cache.flush();
  EXPECT_EQ(cache.counters().disk_writes, 1u);
}

}  // namespace
}  // namespace hpusim::synapse::recipe_cache
