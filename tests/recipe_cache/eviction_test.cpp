// Eviction: with a 64 KB limit, the oldest recipes (by modification time, then by name) go
// first, and after every store the recipe files hold at most 0.99 x the limit. Modification
// times are set by the test (utimensat), so the order is the test's, not the clock's.
#include <gtest/gtest.h>

#include <set>

#include "synapse/recipe_cache/recipe_cache.h"
#include "synapse/recipe_cache/recipe_file.h"
#include "tests/recipe_cache/test_support.h"

namespace hpusim::synapse::recipe_cache {
namespace {

using testing::disk_config;
using testing::payload_for;
using testing::recipe_bytes_on_disk;
using testing::recipe_keys_on_disk;
using testing::recipe_path;
using testing::ScratchDirectory;
using testing::set_modified_time;
using testing::test_key;

constexpr uint64_t kLimit = 64 * 1024;
constexpr uint64_t kBudget = 64880;   // 0.99 x 64 KB, rounded down
constexpr size_t kPayload = 10000;    // 10040 bytes on disk: six fit, seven do not
constexpr time_t kLongAgo = 1'000'000'000;

// Stores key i and gives its file the i-th oldest time, so the store order is the age order.
void store_and_age(RecipeCache& cache, const std::filesystem::path& dir, int i, size_t payload_bytes) {
  cache.store(test_key(i), payload_for(test_key(i), payload_bytes));
  cache.flush();
  ASSERT_TRUE(std::filesystem::exists(recipe_path(dir, test_key(i)))) << i;
  set_modified_time(recipe_path(dir, test_key(i)), kLongAgo + i);
}

std::set<RecipeKey> keys_of(int first, int last) {
  std::set<RecipeKey> keys;
  for (int i = first; i <= last; ++i) keys.insert(test_key(i));
  return keys;
}

TEST(RecipeCacheEviction, OldestRecipesGoFirstAndTheBudgetHolds) {
  ScratchDirectory dir;
  testing::CollectedLog log;
  RecipeCache cache(disk_config(dir.path(), kLimit), log.logger());
  ASSERT_EQ(disk_cache_budget_bytes(kLimit), kBudget);

  for (int i = 0; i < 6; ++i) store_and_age(cache, dir.path(), i, kPayload);
  EXPECT_EQ(recipe_bytes_on_disk(dir.path()), 6 * recipe_file_bytes(kPayload));
  EXPECT_EQ(cache.counters().evictions, 0u);

  for (int i = 6; i < 12; ++i) {
    store_and_age(cache, dir.path(), i, kPayload);
    EXPECT_LE(recipe_bytes_on_disk(dir.path()), kBudget);
    EXPECT_EQ(recipe_keys_on_disk(dir.path()), keys_of(i - 5, i)) << "after storing " << i;
  }
  EXPECT_EQ(cache.counters().evictions, 6u);
  EXPECT_EQ(log.count_containing("Removed " + recipe_id(test_key(0)) +
                                 " successfully. Disk cache size after removal: 50200"), 1u)
      << log.all();

  // A recipe four times as big makes room by removing the four oldest.
  store_and_age(cache, dir.path(), 12, 4 * kPayload);
  EXPECT_LE(recipe_bytes_on_disk(dir.path()), kBudget);
  std::set<RecipeKey> expected = keys_of(10, 12);
  EXPECT_EQ(recipe_keys_on_disk(dir.path()), expected);
  EXPECT_EQ(cache.counters().evictions, 10u);

  // Evicted recipes are still in this process's memory.
  EXPECT_NE(cache.lookup(test_key(0)), nullptr);
  EXPECT_EQ(cache.counters().memory_hits, 1u);
  EXPECT_EQ(cache.counters().disk_errors, 0u);
}

TEST(RecipeCacheEviction, EqualTimesAreBrokenByName) {
  ScratchDirectory dir;
  RecipeCache cache(disk_config(dir.path(), kLimit));
  std::string payload = payload_for(1, 20000);   // three fit, four do not
  for (RecipeKey key : {RecipeKey{3}, RecipeKey{1}, RecipeKey{2}}) cache.store(key, payload);
  cache.flush();
  for (RecipeKey key : {RecipeKey{1}, RecipeKey{2}, RecipeKey{3}}) set_modified_time(recipe_path(dir.path(), key), kLongAgo);

  cache.store(4, payload);
  cache.flush();
  EXPECT_EQ(recipe_keys_on_disk(dir.path()), (std::set<RecipeKey>{2, 3, 4}));
  cache.store(5, payload);
  cache.flush();
  EXPECT_EQ(recipe_keys_on_disk(dir.path()), (std::set<RecipeKey>{3, 4, 5}));
}

TEST(RecipeCacheEviction, RecipesOtherProcessesWroteAreCounted) {
  ScratchDirectory dir;
  for (int i = 0; i < 6; ++i) {   // as another process would have left them
    ASSERT_EQ(write_recipe_file(dir.path(), test_key(i), payload_for(test_key(i), kPayload)), "");
    set_modified_time(recipe_path(dir.path(), test_key(i)), kLongAgo + i);
  }
  RecipeCache cache(disk_config(dir.path(), kLimit));
  store_and_age(cache, dir.path(), 6, 2 * kPayload);
  EXPECT_LE(recipe_bytes_on_disk(dir.path()), kBudget);
  EXPECT_EQ(recipe_keys_on_disk(dir.path()), keys_of(2, 6));
  EXPECT_EQ(cache.counters().evictions, 2u);
}

// The old file counts until the new one replaces it (both exist while it is written), so a
// full directory makes room for the whole new file.
TEST(RecipeCacheEviction, StoringAKeyAgainReplacesItsFile) {
  ScratchDirectory dir;
  RecipeCache cache(disk_config(dir.path(), kLimit));
  for (int i = 0; i < 6; ++i) store_and_age(cache, dir.path(), i, kPayload);
  store_and_age(cache, dir.path(), 5, kPayload);
  EXPECT_EQ(recipe_keys_on_disk(dir.path()), keys_of(1, 5));
  EXPECT_EQ(cache.counters().evictions, 1u);
  EXPECT_LE(recipe_bytes_on_disk(dir.path()), kBudget);
  RecipeCache reader(disk_config(dir.path(), kLimit));
  ASSERT_NE(reader.lookup(test_key(5)), nullptr);
  EXPECT_EQ(*reader.lookup(test_key(5)), payload_for(test_key(5), kPayload));
}

}  // namespace
}  // namespace hpusim::synapse::recipe_cache
