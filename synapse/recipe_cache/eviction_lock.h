// The cache directory's eviction lock: flock(LOCK_EX) on <dir>/eviction.lock, held while one
// process evicts and writes, so processes sharing a directory take turns and each sees the
// recipe files as they are. Readers do not take it (a recipe appears by rename, whole).
//
// The lock file is opened anew for every hold: if someone removes it, the next hold locks the
// new file instead of a deleted one that other processes can no longer see.
#pragma once

#include <filesystem>
#include <string>

namespace hpusim::synapse::recipe_cache {

class EvictionLock {
 public:
  // Blocks until the lock is held, or fails (locked() is false, error() says why).
  explicit EvictionLock(const std::filesystem::path& directory);
  ~EvictionLock();
  EvictionLock(const EvictionLock&) = delete;
  EvictionLock& operator=(const EvictionLock&) = delete;

  bool locked() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  std::string error_;
};

}  // namespace hpusim::synapse::recipe_cache
