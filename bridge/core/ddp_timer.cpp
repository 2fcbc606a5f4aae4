// DDP's per-iteration timings for HPU modules (torch's reducer asks its TimerRegistry for the
// device type; without one it warns "Time stats are currently only collected for CPU and CUDA").
// As torch's CUDA timer does, each event is a timing event recorded on the card's current stream,
// and a difference waits for both and is the card's time between them.
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

#include <array>
#include <optional>

#include "bridge/core/card.h"

namespace hpusim::bridge {
namespace {

class HpuTimer final : public c10d::Timer {
 public:
  explicit HpuTimer(c10::Device) {
    for (auto& e : events_) e = Card::get().create_event(true);
  }
  ~HpuTimer() override {
    if (!Card::acquired()) return;
    for (auto e : events_) Card::get().destroy_event(e);
  }

  void record(Event event) override {
    c10d::Timer::record(event);
    Card& card = Card::get();
    card.record_event(events_[index(event)], card.stream());
    recorded_[index(event)] = true;
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    if (!recorded_[index(start)] || !recorded_[index(end)]) return std::nullopt;
    Card& card = Card::get();
    card.synchronize_event(events_[index(start)]);
    card.synchronize_event(events_[index(end)]);
    const double ms = card.elapsed_ms(events_[index(start)], events_[index(end)]);
    if (ms < 0) return std::nullopt;   // recorded in the other order (as torch's CUDA timer)
    return static_cast<int64_t>(ms * 1e6);
  }

 private:
  static size_t index(Event e) { return static_cast<size_t>(e); }
  std::array<synEventHandle, 5> events_{};
  std::array<bool, 5> recorded_{};
};

}  // namespace
}  // namespace hpusim::bridge

namespace c10d {
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kHPU, hpusim::bridge::HpuTimer)
}  // namespace c10d
