// The HBM subsystem's calendar of channel wake-ups: a min-queue of (cycle, channel) ordered by
// cycle, then channel, as a std::priority_queue of them would be, but O(1) for the common case of
// a wake-up a few cycles ahead. The next kSlots cycles are a wheel of channel bitmaps; later
// wake-ups wait in a heap and move onto the wheel as it turns; earlier ones (below the wheel's
// base, rare) go to a second heap. A (cycle, channel) pushed twice is held once (the subsystem
// skips a superseded wake-up anyway, so this changes nothing it does).
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace hpusim::hbm {

class WakeCalendar {
 public:
  using Entry = std::pair<uint64_t, uint32_t>;   // (cycle, channel)

  explicit WakeCalendar(uint32_t channels);

  bool empty() const { return wheel_count_ == 0 && far_.empty() && past_.empty(); }
  void push(uint64_t cycle, uint32_t channel);
  // The smallest entry; requires !empty().
  Entry top();
  void pop();

 private:
  static constexpr uint64_t kSlots = 1024;   // a power of two
  uint64_t* slot(uint64_t cycle) { return &bits_[(cycle & (kSlots - 1)) * words_]; }
  void set(uint64_t cycle, uint32_t channel);
  // Moves base_ to the first non-empty wheel slot (wheel_count_ > 0), or to the far heap's first
  // cycle, migrating far entries that now fall on the wheel.
  void settle();

  uint32_t words_;                 // 64-bit words per slot
  std::vector<uint64_t> bits_;     // kSlots x words_
  uint64_t base_ = 0;              // the wheel covers [base_, base_ + kSlots)
  uint64_t wheel_count_ = 0;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> far_, past_;
};

}  // namespace hpusim::hbm
