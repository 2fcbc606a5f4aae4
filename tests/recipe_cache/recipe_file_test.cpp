// Recipe ids, the names of the directory's files, and the recipe file format.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "synapse/recipe_cache/recipe_file.h"
#include "synapse/recipe_cache/recipe_key.h"
#include "tests/recipe_cache/test_support.h"

namespace hpusim::synapse::recipe_cache {
namespace {

using Status = RecipeFileRead::Status;
using testing::ScratchDirectory;

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(RecipeCacheFile, IdsAreSixteenHexDigits) {
  EXPECT_EQ(recipe_id(0xdeadbeef), "00000000deadbeef");
  EXPECT_EQ(recipe_id(UINT64_MAX), "ffffffffffffffff");
  EXPECT_EQ(recipe_file_name(0x1234), "0000000000001234.recipe");
  EXPECT_EQ(temp_file_name(0x1234, 77), ".0000000000001234.77.tmp");
}

TEST(RecipeCacheFile, OnlyRecipeNamesAreRecipes) {
  EXPECT_EQ(parse_recipe_file_name("00000000deadbeef.recipe"), RecipeKey{0xdeadbeef});
  EXPECT_EQ(parse_recipe_file_name(recipe_file_name(UINT64_MAX)), RecipeKey{UINT64_MAX});
  for (const char* other : {"00000000DEADBEEF.recipe", "0000000deadbeef.recipe", "00000000deadbeef.recipes",
                            "00000000deadbeef", ".00000000deadbeef.12.tmp", "eviction.lock", "x0000000deadbeef.recipe"})
    EXPECT_FALSE(parse_recipe_file_name(other).has_value()) << other;

  EXPECT_EQ(parse_temp_file_name(temp_file_name(0xabc, 4242)), RecipeKey{0xabc});
  for (const char* other : {"00000000deadbeef.recipe", ".00000000deadbeef..tmp", ".00000000deadbeef.1x.tmp", "a.tmp"})
    EXPECT_FALSE(parse_temp_file_name(other).has_value()) << other;
}

TEST(RecipeCacheFile, WrittenFileReadsBackAndLeavesNoTemporaryFile) {
  ScratchDirectory dir;
  std::string payload = testing::payload_for(7, 1000);
  EXPECT_EQ(write_recipe_file(dir.path(), 7, payload), "");
  std::filesystem::path path = testing::recipe_path(dir.path(), 7);
  EXPECT_EQ(std::filesystem::file_size(path), recipe_file_bytes(1000));
  EXPECT_TRUE(list_temp_files(dir.path()).empty());

  RecipeFileRead read = read_recipe_file(path, 7);
  ASSERT_EQ(read.status, Status::Ok) << read.problem;
  EXPECT_EQ(read.payload, payload);

  EXPECT_EQ(write_recipe_file(dir.path(), 8, ""), "");   // an empty recipe is a recipe
  read = read_recipe_file(testing::recipe_path(dir.path(), 8), 8);
  ASSERT_EQ(read.status, Status::Ok) << read.problem;
  EXPECT_EQ(read.payload, "");
}

TEST(RecipeCacheFile, EveryDamageIsCorrupt) {
  ScratchDirectory dir;
  std::string payload = testing::payload_for(1, 100);
  std::string good = encode_recipe_header(1, payload) + payload;
  std::filesystem::path path = dir / "damaged";
  auto status_of = [&](const std::string& bytes, RecipeKey key = 1) {
    write_bytes(path, bytes);
    return read_recipe_file(path, key);
  };
  EXPECT_EQ(status_of(good).status, Status::Ok);
  EXPECT_EQ(status_of(good, 2).status, Status::Corrupt);   // another key's recipe under this name

  struct Damage {
    const char* what;
    std::string bytes;
    const char* problem;
  };
  auto flipped = [&](size_t offset) {
    std::string bytes = good;
    bytes[offset] ^= 0x01;
    return bytes;
  };
  for (const Damage& damage : std::vector<Damage>{
           {"empty", "", "shorter than the header"},
           {"header cut", good.substr(0, 20), "shorter than the header"},
           {"payload cut", good.substr(0, good.size() - 1), "truncated"},
           {"trailing byte", good + "x", "truncated"},
           {"magic", flipped(0), "bad magic"},
           {"version", flipped(8), "format version"},
           {"header size", flipped(12), "bad header size"},
           {"key", flipped(16), "holds recipe"},
           {"length", flipped(24), "truncated"},
           {"checksum", flipped(32), "checksum"},
           {"payload", flipped(kRecipeHeaderBytes + 50), "checksum"},
       }) {
    RecipeFileRead read = status_of(damage.bytes);
    EXPECT_EQ(read.status, Status::Corrupt) << damage.what;
    EXPECT_NE(read.problem.find(damage.problem), std::string::npos) << damage.what << ": " << read.problem;
  }
}

// A cache file is not a recipe file and the other way round: their magics differ, so a recipe
// written by synRecipeSerialize and dropped into the cache directory is refused as corrupt, and
// an old (version 1) cache file, which used the recipe frame's magic, too.
TEST(RecipeCacheFile, ARecipeFrameOrAVersionOneFileIsNotACacheFile) {
  ScratchDirectory dir;
  ASSERT_EQ(write_recipe_file(dir.path(), 9, testing::payload_for(9, 100)), "");
  std::ifstream in(testing::recipe_path(dir.path(), 9), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.substr(0, 8), "HPUCACHE");
  bytes.replace(0, 8, "HPURECIP");
  bytes[8] = 1;   // version 1 under the recipe frame's magic
  write_bytes(testing::recipe_path(dir.path(), 9), bytes);
  const RecipeFileRead read = read_recipe_file(testing::recipe_path(dir.path(), 9), 9);
  EXPECT_EQ(read.status, Status::Corrupt);
  EXPECT_NE(read.problem.find("bad magic"), std::string::npos) << read.problem;
}

TEST(RecipeCacheFile, MissingFileAndDirectoryUnderARecipeName) {
  ScratchDirectory dir;
  EXPECT_EQ(read_recipe_file(testing::recipe_path(dir.path(), 3), 3).status, Status::Missing);
  std::filesystem::create_directory(testing::recipe_path(dir.path(), 3));
  RecipeFileRead read = read_recipe_file(testing::recipe_path(dir.path(), 3), 3);
  EXPECT_EQ(read.status, Status::IoError);
  EXPECT_NE(read.problem.find("is not a regular file"), std::string::npos) << read.problem;
}

}  // namespace
}  // namespace hpusim::synapse::recipe_cache
