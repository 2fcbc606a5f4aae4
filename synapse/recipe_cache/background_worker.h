// One thread that runs posted tasks in order, so a caller hands off slow work and goes on.
// A task that throws is reported to the error handler; the thread keeps going.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace hpusim::synapse::recipe_cache {

class BackgroundWorker {
 public:
  using Task = std::function<void()>;
  using ErrorHandler = std::function<void(const std::string& what)>;

  explicit BackgroundWorker(ErrorHandler on_error);
  ~BackgroundWorker();   // runs what is queued, then stops
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  void post(Task task);
  // Returns when every task posted before the call has run.
  void flush();

 private:
  void run();

  ErrorHandler on_error_;
  std::mutex mutex_;
  std::condition_variable work_posted_;
  std::condition_variable work_done_;
  std::deque<Task> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;   // last: starts after everything it uses
};

}  // namespace hpusim::synapse::recipe_cache
