// What the disk cannot take is counted and logged, never thrown: a recipe bigger than the
// budget, a directory blocking a recipe's name, a read-only directory, a full disk (a file size
// limit), an unreadable file. Temporary files never stay behind.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <fstream>

#include "synapse/recipe_cache/recipe_cache.h"
#include "synapse/recipe_cache/recipe_file.h"
#include "tests/recipe_cache/test_support.h"

namespace hpusim::synapse::recipe_cache {
namespace {

using testing::disk_config;
using testing::payload_for;
using testing::recipe_path;
using testing::ScratchDirectory;
using testing::test_key;

constexpr uint64_t kLimit = 64 * 1024;   // budget 64880 bytes

TEST(RecipeCacheDiskErrors, RecipeBiggerThanTheBudgetStaysInMemoryOnly) {
  ScratchDirectory dir;
  testing::CollectedLog log;
  RecipeCache cache(disk_config(dir.path(), kLimit), log.logger());
  cache.store(test_key(1), payload_for(test_key(1), 100000));        // bigger than the limit
  cache.store(test_key(2), payload_for(test_key(2), 64880 - 40 + 1));   // one byte over 0.99 x limit
  cache.store(test_key(3), payload_for(test_key(3), 64880 - 40));       // exactly the budget
  cache.flush();
  RecipeCacheCounters c = cache.counters();
  EXPECT_EQ(c.oversized_recipes, 2u);
  EXPECT_EQ(c.disk_writes, 1u);
  EXPECT_EQ(c.disk_errors, 0u);
  EXPECT_EQ(testing::recipe_keys_on_disk(dir.path()), std::set<RecipeKey>{test_key(3)});
  EXPECT_EQ(log.count_containing("Recipe " + recipe_id(test_key(1)) +
                                 " (100040 bytes on disk) is larger than the disk cache budget of 64880 bytes; kept in memory only"),
            1u)
      << log.all();
  ASSERT_NE(cache.lookup(test_key(1)), nullptr);
  EXPECT_EQ(*cache.lookup(test_key(1)), payload_for(test_key(1), 100000));
}

TEST(RecipeCacheDiskErrors, DirectoryBlockingARecipeNameIsCounted) {
  ScratchDirectory dir;
  std::filesystem::create_directory(recipe_path(dir.path(), test_key(1)));
  testing::CollectedLog log;
  RecipeCache cache(disk_config(dir.path(), kLimit), log.logger());
  cache.store(test_key(1), payload_for(test_key(1), 1000));
  cache.store(test_key(2), payload_for(test_key(2), 1000));
  cache.flush();
  RecipeCacheCounters c = cache.counters();
  EXPECT_EQ(c.disk_errors, 1u);
  EXPECT_EQ(c.disk_writes, 1u);
  EXPECT_EQ(log.count_containing("cannot rename to " + recipe_path(dir.path(), test_key(1)).string()), 1u) << log.all();
  EXPECT_TRUE(list_temp_files(dir.path()).empty());
  EXPECT_NE(cache.lookup(test_key(1)), nullptr);   // from memory

  RecipeCache next_run(disk_config(dir.path(), kLimit), log.logger());
  EXPECT_EQ(next_run.lookup(test_key(1)), nullptr);   // a directory, not a recipe: a miss and an error
  EXPECT_EQ(next_run.counters().disk_errors, 1u);
  EXPECT_EQ(next_run.counters().corrupt_files_removed, 0u);
  EXPECT_TRUE(std::filesystem::is_directory(recipe_path(dir.path(), test_key(1))));
}

TEST(RecipeCacheDiskErrors, ReadOnlyDirectoryAfterCreationIsCounted) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  ScratchDirectory dir;
  RecipeCache cache(disk_config(dir.path(), kLimit));
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  cache.store(test_key(1), payload_for(test_key(1), 1000));
  cache.flush();
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
  EXPECT_EQ(cache.counters().disk_errors, 1u);
  EXPECT_EQ(cache.counters().disk_writes, 0u);
  EXPECT_TRUE(testing::recipe_keys_on_disk(dir.path()).empty());
}

TEST(RecipeCacheDiskErrors, UnreadableFileIsAMissAndAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files without read permission";
  ScratchDirectory dir;
  ASSERT_EQ(write_recipe_file(dir.path(), test_key(1), payload_for(test_key(1), 100)), "");
  std::filesystem::permissions(recipe_path(dir.path(), test_key(1)), std::filesystem::perms::none);
  RecipeCache cache(disk_config(dir.path(), kLimit));
  EXPECT_EQ(cache.lookup(test_key(1)), nullptr);
  EXPECT_EQ(cache.counters().disk_errors, 1u);
  EXPECT_EQ(cache.counters().misses, 1u);
  EXPECT_TRUE(std::filesystem::exists(recipe_path(dir.path(), test_key(1))));   // unverified, so not removed
}

// RLIMIT_FSIZE makes write() fail (EFBIG) part way, as a full disk would.
TEST(RecipeCacheDiskErrors, FailedWriteIsCountedAndLeavesNothingBehind) {
  ScratchDirectory dir;
  testing::CollectedLog log;
  RecipeCache cache(disk_config(dir.path(), kLimit), log.logger());
  rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  cache.store(test_key(1), payload_for(test_key(1), 10000));
  cache.flush();
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_handler);

  EXPECT_EQ(cache.counters().disk_errors, 1u);
  EXPECT_EQ(cache.counters().disk_writes, 0u);
  EXPECT_EQ(log.count_containing("cannot write"), 1u) << log.all();
  EXPECT_TRUE(testing::recipe_keys_on_disk(dir.path()).empty());
  EXPECT_TRUE(list_temp_files(dir.path()).empty());

  cache.store(test_key(2), payload_for(test_key(2), 10000));   // the disk has room again
  cache.flush();
  EXPECT_EQ(cache.counters().disk_writes, 1u);
}

TEST(RecipeCacheDiskErrors, StaleTemporaryFilesAreRemovedUnderTheLockAndNeverCounted) {
  ScratchDirectory dir;
  std::string stale = temp_file_name(test_key(9), 12345);
  std::ofstream(dir / stale) << std::string(60000, 'x');   // would not fit next to a recipe if counted
  testing::CollectedLog log;
  RecipeCache cache(disk_config(dir.path(), kLimit), log.logger());
  EXPECT_TRUE(std::filesystem::exists(dir / stale));   // no one holds the lock before a store
  cache.store(test_key(1), payload_for(test_key(1), 30000));
  cache.flush();
  EXPECT_FALSE(std::filesystem::exists(dir / stale));
  EXPECT_EQ(cache.counters().disk_writes, 1u);
  EXPECT_EQ(cache.counters().evictions, 0u);
  EXPECT_EQ(log.count_containing("Removed stale temporary file " + stale), 1u) << log.all();
}

TEST(RecipeCacheDiskErrors, FileRemovedByAnotherProcessIsAPlainMiss) {
  ScratchDirectory dir;
  {
    RecipeCache writer(disk_config(dir.path(), kLimit));
    writer.store(test_key(1), payload_for(test_key(1), 100));
  }
  RecipeCache reader(disk_config(dir.path(), kLimit));
  std::filesystem::remove(recipe_path(dir.path(), test_key(1)));
  EXPECT_EQ(reader.lookup(test_key(1)), nullptr);
  EXPECT_EQ(reader.counters().misses, 1u);
  EXPECT_EQ(reader.counters().disk_errors, 0u);
}

}  // namespace
}  // namespace hpusim::synapse::recipe_cache
