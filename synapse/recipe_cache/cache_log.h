// The caller's log callback, called one line at a time from any thread (so the callback itself
// need not be thread-safe). A callback that throws loses that line, nothing else.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace hpusim::synapse::recipe_cache {

using RecipeCacheLogger = std::function<void(const std::string&)>;

class CacheLog {
 public:
  explicit CacheLog(RecipeCacheLogger logger) : logger_(std::move(logger)) {}

  void operator()(const std::string& line) {
    if (!logger_) return;
    std::lock_guard<std::mutex> hold(mutex_);
    try {
      logger_(line);
    } catch (...) {
    }
  }

 private:
  RecipeCacheLogger logger_;
  std::mutex mutex_;
};

}  // namespace hpusim::synapse::recipe_cache
