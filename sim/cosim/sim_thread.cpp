#include "sim/cosim/sim_thread.h"

#include <stdexcept>

namespace hpusim::cosim {

SimThread::SimThread() : thread_([this] { loop(); }) {}

SimThread::~SimThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

void SimThread::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw std::logic_error("the simulation thread has stopped");
    jobs_.push_back(std::move(job));
  }
  ready_.notify_one();
}

void SimThread::loop() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace hpusim::cosim
