// The simulation thread. SystemC is single-threaded: elaboration, sc_start and every call into a
// model must happen on one thread. Host code may run on any thread (PyTorch runs backward on its
// own); it reaches the device by posting work here and waiting for the result.
#pragma once

#include <condition_variable>
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
    return result.get();
  }

 private:
  void post(std::function<void()> job);
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hpusim::cosim
