// PT_HPU_RECIPE_CACHE_CONFIG: good values, every error with its message, the environment
// helper, the 0.99 budget, and the directory checks made when a cache is created.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "synapse/recipe_cache/disk_cache_config.h"
#include "synapse/recipe_cache/recipe_cache.h"
#include "tests/recipe_cache/test_support.h"

namespace hpusim::synapse::recipe_cache {
namespace {

using ::testing::HasSubstr;
using testing::ScratchDirectory;

std::string parse_error(const std::string& text) {
  try {
    parse_disk_cache_config(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RecipeCacheConfig, ParsesDirectoryFlagAndSizeInMegabytes) {
  DiskCacheConfig config = parse_disk_cache_config("iter1_recipe_cache/,true,1024");
  EXPECT_EQ(config.directory, "iter1_recipe_cache/");
  EXPECT_TRUE(config.clear_at_start);
  EXPECT_EQ(config.size_limit_bytes, 1024ull << 20);

  config = parse_disk_cache_config(" cache dir , FALSE , 1 ");
  EXPECT_EQ(config.directory, "cache dir");
  EXPECT_FALSE(config.clear_at_start);
  EXPECT_EQ(config.size_limit_bytes, 1ull << 20);

  EXPECT_TRUE(parse_disk_cache_config("d,True,7").clear_at_start);
}

TEST(RecipeCacheConfig, WrongFieldCountIsNamed) {
  EXPECT_EQ(parse_error(""),
            "recipe cache config '': expected 3 comma-separated fields <dir>,<clear at start true|false>,<size MB>, got 1");
  EXPECT_THAT(parse_error("dir,true"), HasSubstr("'dir,true': expected 3 comma-separated fields"));
  EXPECT_THAT(parse_error("dir,true"), HasSubstr("got 2"));
  EXPECT_THAT(parse_error("dir,true,10,extra"), HasSubstr("got 4"));
}

TEST(RecipeCacheConfig, EmptyDirectoryIsNamed) {
  EXPECT_EQ(parse_error(",true,10"), "recipe cache config ',true,10': the directory (field 1) is empty");
  EXPECT_THAT(parse_error("  ,true,10"), HasSubstr("the directory (field 1) is empty"));
}

TEST(RecipeCacheConfig, FlagThatIsNotTrueOrFalseIsNamed) {
  EXPECT_EQ(parse_error("dir,yes,10"), "recipe cache config 'dir,yes,10': clear at start (field 2) must be true or false, got 'yes'");
  EXPECT_THAT(parse_error("dir,,10"), HasSubstr("clear at start (field 2) must be true or false, got ''"));
  EXPECT_THAT(parse_error("dir,1,10"), HasSubstr("got '1'"));
}

TEST(RecipeCacheConfig, SizeThatIsNotAPositiveIntegerIsNamed) {
  EXPECT_EQ(parse_error("dir,true,0"), "recipe cache config 'dir,true,0': size MB (field 3) must be a positive integer, got '0'");
  for (const char* size : {"", "-5", "+5", "1.5", "10MB", "1e3", "ten"})
    EXPECT_THAT(parse_error(std::string("dir,true,") + size),
                HasSubstr(std::string("size MB (field 3) must be a positive integer, got '") + size + "'"));
  EXPECT_THAT(parse_error("dir,true,99999999999999999999"), HasSubstr("size MB (field 3) '99999999999999999999' is too large"));
  // The largest size whose byte count fits 64 bits parses; one more does not.
  uint64_t largest = UINT64_MAX >> 20;
  EXPECT_EQ(parse_disk_cache_config("d,false," + std::to_string(largest)).size_limit_bytes, largest << 20);
  EXPECT_THAT(parse_error("d,false," + std::to_string(largest + 1)), HasSubstr("is too large"));
}

TEST(RecipeCacheConfig, FromEnvironment) {
  ::unsetenv(kRecipeCacheConfigVariable);
  EXPECT_FALSE(disk_cache_config_from_environment().has_value());
  ::setenv(kRecipeCacheConfigVariable, "", 1);
  EXPECT_FALSE(disk_cache_config_from_environment().has_value());

  ::setenv(kRecipeCacheConfigVariable, "cache,false,3", 1);
  std::optional<DiskCacheConfig> config = disk_cache_config_from_environment();
  ASSERT_TRUE(config.has_value());
  EXPECT_EQ(config->directory, "cache");
  EXPECT_EQ(config->size_limit_bytes, 3ull << 20);

  ::setenv(kRecipeCacheConfigVariable, "cache,maybe,3", 1);
  try {
    disk_cache_config_from_environment();
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "PT_HPU_RECIPE_CACHE_CONFIG: recipe cache config 'cache,maybe,3': "
              "clear at start (field 2) must be true or false, got 'maybe'");
  }
  ::unsetenv(kRecipeCacheConfigVariable);
}

TEST(RecipeCacheConfig, BudgetIsNinetyNinePercentRoundedDown) {
  EXPECT_EQ(disk_cache_budget_bytes(65536), 64880u);   // 64880.64
  EXPECT_EQ(disk_cache_budget_bytes(100), 99u);
  EXPECT_EQ(disk_cache_budget_bytes(1), 0u);
  EXPECT_EQ(disk_cache_budget_bytes(1024ull << 20), (1024ull << 20) * 99 / 100);
  EXPECT_EQ(disk_cache_budget_bytes(UINT64_MAX), UINT64_MAX - UINT64_MAX / 100 - 1);   // no overflow
}

TEST(RecipeCacheConfig, MissingDirectoryIsCreated) {
  ScratchDirectory scratch;
  std::filesystem::path dir = scratch / "a/b/cache";
  RecipeCache cache(testing::disk_config(dir, 1 << 20));
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_TRUE(std::filesystem::exists(dir / kEvictionLockFileName));
}

TEST(RecipeCacheConfig, DirectoryThatCannotBeCreatedIsAnErrorWithThePath) {
  ScratchDirectory scratch;
  std::ofstream(scratch / "plain-file") << "not a directory";
  std::filesystem::path dir = scratch / "plain-file/cache";
  try {
    RecipeCache cache(testing::disk_config(dir, 1 << 20));
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("recipe cache directory " + dir.string() + ": cannot be created"));
  }
}

TEST(RecipeCacheConfig, DirectoryThatCannotBeWrittenIsAnErrorWithThePath) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  ScratchDirectory scratch;
  std::filesystem::path dir = scratch / "read-only";
  std::filesystem::create_directory(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  try {
    RecipeCache cache(testing::disk_config(dir, 1 << 20));
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("recipe cache directory " + dir.string() + ": is not writable"));
  }
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
}

}  // namespace
}  // namespace hpusim::synapse::recipe_cache
