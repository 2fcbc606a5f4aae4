#include "synapse/recipe_cache/background_worker.h"

#include <exception>
#include <utility>

namespace hpusim::synapse::recipe_cache {

BackgroundWorker::BackgroundWorker(ErrorHandler on_error)
    : on_error_(std::move(on_error)), thread_([this] { run(); }) {}

BackgroundWorker::~BackgroundWorker() {
  {
    std::lock_guard<std::mutex> hold(mutex_);
    stopping_ = true;
  }
  work_posted_.notify_one();
  thread_.join();
}

void BackgroundWorker::post(Task task) {
  {
    std::lock_guard<std::mutex> hold(mutex_);
    queue_.push_back(std::move(task));
  }
  work_posted_.notify_one();
}

void BackgroundWorker::flush() {
  std::unique_lock<std::mutex> hold(mutex_);
  work_done_.wait(hold, [this] { return queue_.empty() && !busy_; });
}

void BackgroundWorker::run() {
  std::unique_lock<std::mutex> hold(mutex_);
  for (;;) {
    work_posted_.wait(hold, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;   // stopping, and nothing left to do
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    hold.unlock();
    try {
      task();
    } catch (const std::exception& e) {
      on_error_(e.what());
    } catch (...) {
      on_error_("unknown exception");
    }
    task = nullptr;   // release what the task holds before reporting it done
    hold.lock();
    busy_ = false;
    if (queue_.empty()) work_done_.notify_all();
  }
}

}  // namespace hpusim::synapse::recipe_cache
