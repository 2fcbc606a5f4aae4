// The simulation thread. SystemC is single-threaded: elaboration, sc_start and every call into a
// model must happen on one thread. Host code may run on any thread (PyTorch runs backward on its
// own); it reaches the device by posting work here and waiting for the result.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>

namespace hpusim::cosim {

class SimThread {
 public:
  SimThread();
  ~SimThread();
  SimThread(const SimThread&) = delete;
  SimThread& operator=(const SimThread&) = delete;

  bool on_sim_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Runs `work` on the simulation thread and returns its result; exceptions propagate to the
  // caller. Called from the simulation thread itself, it runs `work` directly.
  template <typename Work>
  auto call(Work&& work) -> std::invoke_result_t<Work&> {
    using Result = std::invoke_result_t<Work&>;
    if (on_sim_thread()) return work();
    // Shared, so the task outlives both sides however the hand-over interleaves.
    auto task = std::make_shared<std::packaged_task<Result()>>(std::forward<Work>(work));
    std::future<Result> result = task->get_future();
    post([task] { (*task)(); });
    // Most calls take microseconds: spin briefly before sleeping, since a futex sleep and wake
    // costs more than the work itself. One caller spins at a time: with many host threads (a box's
    // ranks) spinning callers would take the cores the simulation needs.
    if (spinners_.fetch_add(1, std::memory_order_relaxed) == 0) {
      for (unsigned i = 0; i < kSpinIterations && result.wait_for(std::chrono::seconds(0)) != std::future_status::ready; ++i) {
        relax();
      }
    }
    spinners_.fetch_sub(1, std::memory_order_relaxed);
    return result.get();
  }

 private:
  // About 20-50 us of polling on current CPUs before a thread blocks.
  static constexpr unsigned kSpinIterations = 4000;
  static void relax();
  void post(std::function<void()> job);
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::atomic<uint64_t> posted_{0};   // jobs posted so far, read without the lock while spinning
  std::atomic<unsigned> spinners_{0}; // callers waiting for their call's result
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hpusim::cosim
