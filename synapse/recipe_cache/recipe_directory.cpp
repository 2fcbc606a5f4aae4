#include "synapse/recipe_cache/recipe_directory.h"

#include <sys/stat.h>

#include <algorithm>
#include <tuple>

namespace hpusim::synapse::recipe_cache {

namespace {

bool older(const RecipeFileInfo& a, const RecipeFileInfo& b) {
  return std::tie(a.modified.tv_sec, a.modified.tv_nsec, a.name) < std::tie(b.modified.tv_sec, b.modified.tv_nsec, b.name);
}

}  // namespace

RecipeListing list_recipe_files(const std::filesystem::path& directory) {
  RecipeListing listing;
  std::error_code error;
  std::filesystem::directory_iterator it(directory, error);
  for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    std::string name = it->path().filename().string();
    std::optional<RecipeKey> key = parse_recipe_file_name(name);
    if (!key) continue;
    struct stat info;
    if (::lstat(it->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    listing.files.push_back({*key, name, static_cast<uint64_t>(info.st_size), info.st_mtim});
    listing.total_bytes += static_cast<uint64_t>(info.st_size);
  }
  if (error) listing.error = "cannot list " + directory.string() + ": " + error.message();
  std::sort(listing.files.begin(), listing.files.end(), older);
  return listing;
}

std::vector<std::string> list_temp_files(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  std::error_code error;
  std::filesystem::directory_iterator it(directory, error);
  for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    std::string name = it->path().filename().string();
    if (parse_temp_file_name(name)) names.push_back(name);
  }
  return names;
}

}  // namespace hpusim::synapse::recipe_cache
