// Corrupt recipe files: a flipped payload byte and a truncated file are found by the next run,
// removed, counted, and treated as misses; never returned.
#include <gtest/gtest.h>

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

constexpr uint64_t kLimit = 1 << 20;
constexpr int kRecipes = 5;
constexpr size_t kPayload = 2000;

void flip_byte(const std::filesystem::path& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte ^= 0x40;
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
}

TEST(RecipeCacheCorruption, FlippedAndTruncatedFilesAreRemovedAndMissed) {
  ScratchDirectory dir;
  {
    RecipeCache first_run(disk_config(dir.path(), kLimit));
    for (int i = 0; i < kRecipes; ++i) first_run.store(test_key(i), payload_for(test_key(i), kPayload));
  }
  std::filesystem::path flipped = recipe_path(dir.path(), test_key(1));
  std::filesystem::path truncated = recipe_path(dir.path(), test_key(3));
  flip_byte(flipped, kRecipeHeaderBytes + kPayload / 2);
  std::filesystem::resize_file(truncated, recipe_file_bytes(kPayload) - 100);

  testing::CollectedLog log;
  RecipeCache second_run(disk_config(dir.path(), kLimit), log.logger());
  for (int i = 0; i < kRecipes; ++i) {
    std::shared_ptr<const std::string> hit = second_run.lookup(test_key(i));
    if (i == 1 || i == 3) {
      EXPECT_EQ(hit, nullptr) << i;
    } else {
      ASSERT_NE(hit, nullptr) << i;
      EXPECT_EQ(*hit, payload_for(test_key(i), kPayload));
    }
  }
  RecipeCacheCounters c = second_run.counters();
  EXPECT_EQ(c.corrupt_files_removed, 2u);
  EXPECT_EQ(c.misses, 2u);
  EXPECT_EQ(c.disk_hits, uint64_t{kRecipes - 2});
  EXPECT_EQ(c.disk_errors, 0u);
  EXPECT_FALSE(std::filesystem::exists(flipped));
  EXPECT_FALSE(std::filesystem::exists(truncated));
  std::string removed = "Removed corrupt recipe file ";
  EXPECT_EQ(log.count_containing(removed + recipe_id(test_key(1)) + ": payload checksum mismatch"), 1u) << log.all();
  EXPECT_EQ(log.count_containing(removed + recipe_id(test_key(3)) + ": payload of 2000 bytes in a file of 1940 bytes"), 1u)
      << log.all();

  // Once removed, they are plain misses, and a fresh store puts a good file back.
  EXPECT_EQ(second_run.lookup(test_key(1)), nullptr);
  EXPECT_EQ(second_run.counters().corrupt_files_removed, 2u);
  second_run.store(test_key(1), payload_for(test_key(1), kPayload));
  second_run.flush();
  RecipeFileRead read = read_recipe_file(flipped, test_key(1));
  EXPECT_EQ(read.status, RecipeFileRead::Status::Ok) << read.problem;
}

TEST(RecipeCacheCorruption, AnotherRecipeUnderAKeysNameIsNotTrusted) {
  ScratchDirectory dir;
  ASSERT_EQ(write_recipe_file(dir.path(), test_key(1), payload_for(test_key(1), kPayload)), "");
  std::filesystem::rename(recipe_path(dir.path(), test_key(1)), recipe_path(dir.path(), test_key(2)));
  std::ofstream(recipe_path(dir.path(), test_key(3))) << "written by some other program";

  RecipeCache cache(disk_config(dir.path(), kLimit));
  EXPECT_EQ(cache.lookup(test_key(2)), nullptr);
  EXPECT_EQ(cache.lookup(test_key(3)), nullptr);
  EXPECT_EQ(cache.counters().corrupt_files_removed, 2u);
  EXPECT_TRUE(testing::recipe_keys_on_disk(dir.path()).empty());
}

}  // namespace
}  // namespace hpusim::synapse::recipe_cache
