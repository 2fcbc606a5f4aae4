#include "synapse/recipe_cache/eviction_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "synapse/recipe_cache/recipe_key.h"

namespace hpusim::synapse::recipe_cache {

EvictionLock::EvictionLock(const std::filesystem::path& directory) {
  std::filesystem::path path = directory / kEvictionLockFileName;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    error_ = "cannot open " + path.string() + ": " + std::strerror(errno);
    return;
  }
  int result;
  do {
    result = ::flock(fd, LOCK_EX);
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    error_ = "cannot lock " + path.string() + ": " + std::strerror(errno);
    ::close(fd);
    return;
  }
  fd_ = fd;
}

EvictionLock::~EvictionLock() {
  if (fd_ >= 0) ::close(fd_);   // closing the only descriptor releases the flock
}

}  // namespace hpusim::synapse::recipe_cache
