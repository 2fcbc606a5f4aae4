#include "synapse/recipe_cache/disk_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "synapse/recipe_cache/eviction_lock.h"
#include "synapse/recipe_cache/recipe_directory.h"
#include "synapse/recipe_cache/recipe_file.h"

namespace hpusim::synapse::recipe_cache {

DiskStore::DiskStore(const DiskCacheConfig& config, AtomicCacheCounters& counters, CacheLog& log)
    : directory_(config.directory),
      clear_at_start_(config.clear_at_start),
      budget_bytes_(disk_cache_budget_bytes(config.size_limit_bytes)),
      counters_(counters),
      log_(log) {
  prepare_directory();
  if (clear_at_start_) clear();
}

void DiskStore::prepare_directory() {
  auto fail = [&](const std::string& problem) {
    throw std::runtime_error("recipe cache directory " + directory_.string() + ": " + problem);
  };
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) fail("cannot be created: " + error.message());
  if (!std::filesystem::is_directory(directory_, error)) fail("is not a directory");
  if (::access(directory_.c_str(), W_OK | X_OK) != 0) fail(std::string("is not writable: ") + std::strerror(errno));
  EvictionLock lock(directory_);
  if (!lock.locked()) fail(lock.error());
}

void DiskStore::clear() {
  EvictionLock lock(directory_);
  if (!lock.locked()) return disk_error(lock.error());
  remove_stale_temp_files();
  RecipeListing listing = list_recipe_files(directory_);
  if (!listing.error.empty()) disk_error(listing.error);
  size_t removed = 0;
  for (const RecipeFileInfo& file : listing.files) {
    std::error_code error;
    if (std::filesystem::remove(directory_ / file.name, error)) ++removed;
    else if (error) disk_error("cannot remove " + (directory_ / file.name).string() + ": " + error.message());
  }
  log_("Cleared the recipe cache directory " + directory_.string() + ": removed " + std::to_string(removed) +
       " recipe files");
}

// Under the lock no one is writing, so a temporary file is what a crashed writer left behind.
void DiskStore::remove_stale_temp_files() {
  for (const std::string& name : list_temp_files(directory_)) {
    std::error_code error;
    std::filesystem::remove(directory_ / name, error);
    if (error) disk_error("cannot remove " + (directory_ / name).string() + ": " + error.message());
    else log_("Removed stale temporary file " + name);
  }
}

std::optional<std::string> DiskStore::load(RecipeKey key) {
  std::filesystem::path path = directory_ / recipe_file_name(key);
  RecipeFileRead read = read_recipe_file(path, key);
  switch (read.status) {
    case RecipeFileRead::Status::Ok:
      ++counters_.disk_hits;
      return std::move(read.payload);
    case RecipeFileRead::Status::Missing:
      return std::nullopt;
    case RecipeFileRead::Status::Corrupt:
      remove_corrupt(path, key, read.device, read.inode, read.problem);
      return std::nullopt;
    case RecipeFileRead::Status::IoError:
      disk_error(read.problem);
      return std::nullopt;
  }
  return std::nullopt;
}

// Removes the corrupt file only if the name still refers to the file that was read: another
// process may have renamed a good recipe into its place since.
void DiskStore::remove_corrupt(const std::filesystem::path& path, RecipeKey key, uint64_t device, uint64_t inode,
                               const std::string& problem) {
  struct stat now;
  if (::lstat(path.c_str(), &now) != 0 || now.st_dev != device || now.st_ino != inode) {
    log_("Corrupt recipe file " + recipe_id(key) + " (" + problem + ") was replaced or removed meanwhile");
    return;
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return disk_error("cannot remove corrupt recipe file " + path.string() + ": " + std::strerror(errno));
  ++counters_.corrupt_files_removed;
  log_("Removed corrupt recipe file " + recipe_id(key) + ": " + problem);
}

void DiskStore::save(RecipeKey key, const std::string& payload) {
  uint64_t file_bytes = recipe_file_bytes(payload.size());
  if (file_bytes > budget_bytes_) {
    ++counters_.oversized_recipes;
    log_("Recipe " + recipe_id(key) + " (" + std::to_string(file_bytes) +
         " bytes on disk) is larger than the disk cache budget of " + std::to_string(budget_bytes_) +
         " bytes; kept in memory only");
    return;
  }
  EvictionLock lock(directory_);
  if (!lock.locked()) return disk_error(lock.error());
  remove_stale_temp_files();
  if (!make_room(file_bytes)) return;
  std::string problem = write_recipe_file(directory_, key, payload);
  if (!problem.empty()) return disk_error(problem);
  ++counters_.disk_writes;
}

// Removes the oldest recipe files until the recipes on disk plus needed_bytes fit the budget.
// Sizes are taken now, under the lock, so what other processes wrote counts too.
bool DiskStore::make_room(uint64_t needed_bytes) {
  RecipeListing listing = list_recipe_files(directory_);
  if (!listing.error.empty()) {
    disk_error(listing.error);
    return false;
  }
  uint64_t total = listing.total_bytes;
  for (const RecipeFileInfo& file : listing.files) {
    if (total + needed_bytes <= budget_bytes_) break;
    std::filesystem::path path = directory_ / file.name;
    if (::unlink(path.c_str()) != 0) {
      if (errno != ENOENT) {
        disk_error("cannot remove " + path.string() + ": " + std::strerror(errno));
        continue;
      }
      total -= file.bytes;   // a reader removed it as corrupt meanwhile
      continue;
    }
    total -= file.bytes;
    ++counters_.evictions;
    log_("Removed " + recipe_id(file.key) + " successfully. Disk cache size after removal: " + std::to_string(total));
  }
  if (total + needed_bytes > budget_bytes_) {
    disk_error("cannot make room in " + directory_.string() + ": " + std::to_string(total) + " bytes remain");
    return false;
  }
  return true;
}

void DiskStore::disk_error(const std::string& what) {
  ++counters_.disk_errors;
  log_("Recipe cache disk error: " + what);
}

}  // namespace hpusim::synapse::recipe_cache
