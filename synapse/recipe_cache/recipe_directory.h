// The recipe files of a cache directory as they are on disk now: what eviction counts and
// removes. Only names "<id>.recipe" of regular files count; the lock file, temporary files and
// anything else in the directory are not recipes.
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "synapse/recipe_cache/recipe_key.h"

namespace hpusim::synapse::recipe_cache {

struct RecipeFileInfo {
  RecipeKey key = 0;
  std::string name;
  uint64_t bytes = 0;
  timespec modified{};
};

struct RecipeListing {
  std::vector<RecipeFileInfo> files;   // oldest first: by modification time, then by name
  uint64_t total_bytes = 0;
  std::string error;                   // non-empty if the directory could not be read
};

// Lists the recipe files. A file removed between listing and stat (by another process) is
// simply not there.
RecipeListing list_recipe_files(const std::filesystem::path& directory);

// Names in the directory that are temporary recipe files.
std::vector<std::string> list_temp_files(const std::filesystem::path& directory);

}  // namespace hpusim::synapse::recipe_cache
