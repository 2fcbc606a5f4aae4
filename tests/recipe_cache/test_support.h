// Helpers of the recipe cache tests: a scratch directory, keys and payloads that any reader can
// check (the payload is a function of the key), file times, and a log that keeps its lines.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "synapse/recipe_cache/recipe_cache.h"
#include "synapse/recipe_cache/recipe_directory.h"

namespace hpusim::synapse::recipe_cache::testing {

// A fresh directory made with mkdtemp in the system's temporary directory, removed with all it
// holds at the end of the test.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hpusim-recipe-cache-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline uint64_t mix64(uint64_t x) {   // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The i-th test key: hash-like, so ids use all 16 digits.
inline RecipeKey test_key(uint64_t i) { return mix64(i); }

// size bytes that only `key` produces.
inline std::string payload_for(RecipeKey key, size_t size) {
  std::string bytes(size, '\0');
  uint64_t state = key;
  for (size_t i = 0; i < size; ++i) {
    if (i % 8 == 0) state = mix64(state);
    bytes[i] = static_cast<char>(state >> (8 * (i % 8)));
  }
  return bytes;
}

// A payload whose size is also a function of the key: between min_size and max_size bytes.
inline std::string payload_for(RecipeKey key, size_t min_size, size_t max_size) {
  return payload_for(key, min_size + mix64(key ^ 0x5a5a5a5a) % (max_size - min_size + 1));
}

inline std::filesystem::path recipe_path(const std::filesystem::path& dir, RecipeKey key) {
  return dir / recipe_file_name(key);
}

inline void set_modified_time(const std::filesystem::path& path, time_t seconds) {
  timespec times[2] = {{seconds, 0}, {seconds, 0}};
  if (::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) throw std::runtime_error("utimensat failed on " + path.string());
}

inline uint64_t recipe_bytes_on_disk(const std::filesystem::path& dir) { return list_recipe_files(dir).total_bytes; }

inline std::set<RecipeKey> recipe_keys_on_disk(const std::filesystem::path& dir) {
  std::set<RecipeKey> keys;
  for (const RecipeFileInfo& file : list_recipe_files(dir).files) keys.insert(file.key);
  return keys;
}

class CollectedLog {
 public:
  RecipeCacheLogger logger() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> hold(mutex_);
      lines_.push_back(line);
    };
  }
  size_t count_containing(const std::string& text) const {
    std::lock_guard<std::mutex> hold(mutex_);
    size_t n = 0;
    for (const std::string& line : lines_) n += line.find(text) != std::string::npos;
    return n;
  }
  std::string all() const {
    std::lock_guard<std::mutex> hold(mutex_);
    std::string text;
    for (const std::string& line : lines_) text += line + "\n";
    return text;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

inline DiskCacheConfig disk_config(const std::filesystem::path& dir, uint64_t limit_bytes, bool clear_at_start = false) {
  DiskCacheConfig config;
  config.directory = dir;
  config.clear_at_start = clear_at_start;
  config.size_limit_bytes = limit_bytes;
  return config;
}

}  // namespace hpusim::synapse::recipe_cache::testing
