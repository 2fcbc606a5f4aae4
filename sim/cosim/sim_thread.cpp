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

void SimThread::relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

void SimThread::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw std::logic_error("the simulation thread has stopped");
    jobs_.push_back(std::move(job));
    posted_.fetch_add(1, std::memory_order_release);
  }
  ready_.notify_one();
}

void SimThread::loop() {
  uint64_t seen = 0;
  while (true) {
    std::function<void()> job;
    // The next call usually comes right after the last one finished: poll before sleeping.
    for (unsigned i = 0; i < kSpinIterations && posted_.load(std::memory_order_acquire) == seen; ++i) relax();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++seen;
    }
    job();
  }
}

}  // namespace hpusim::cosim
