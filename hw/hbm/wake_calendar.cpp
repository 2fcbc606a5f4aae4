#include "hw/hbm/wake_calendar.h"

namespace hpusim::hbm {

WakeCalendar::WakeCalendar(uint32_t channels)
    : words_((channels + 63) / 64 ? (channels + 63) / 64 : 1), bits_(kSlots * words_, 0) {}

void WakeCalendar::set(uint64_t cycle, uint32_t channel) {
  uint64_t& word = slot(cycle)[channel / 64];
  const uint64_t bit = uint64_t{1} << (channel % 64);
  if (!(word & bit)) {
    word |= bit;
    ++wheel_count_;
  }
}

void WakeCalendar::push(uint64_t cycle, uint32_t channel) {
  if (cycle < base_) {
    past_.push({cycle, channel});
  } else if (cycle - base_ < kSlots) {
    set(cycle, channel);
  } else {
    far_.push({cycle, channel});
  }
}

void WakeCalendar::settle() {
  if (wheel_count_ == 0) {
    if (far_.empty()) return;
    if (far_.top().first > base_) base_ = far_.top().first;
  }
  for (;;) {
    while (!far_.empty() && far_.top().first - base_ < kSlots) {
      set(far_.top().first, far_.top().second);
      far_.pop();
    }
    const uint64_t* s = slot(base_);
    for (uint32_t w = 0; w < words_; ++w) {
      if (s[w]) return;
    }
    ++base_;
  }
}

WakeCalendar::Entry WakeCalendar::top() {
  if (!past_.empty()) return past_.top();
  settle();
  const uint64_t* s = slot(base_);
  for (uint32_t w = 0;; ++w) {
    if (s[w]) return {base_, w * 64 + static_cast<uint32_t>(__builtin_ctzll(s[w]))};
  }
}

void WakeCalendar::pop() {
  if (!past_.empty()) {
    const Entry popped = past_.top();
    while (!past_.empty() && past_.top() == popped) past_.pop();   // a duplicate counts once
    return;
  }
  settle();
  uint64_t* s = slot(base_);
  for (uint32_t w = 0;; ++w) {
    if (s[w]) {
      s[w] &= s[w] - 1;   // the lowest channel
      --wheel_count_;
      return;
    }
  }
}

}  // namespace hpusim::hbm
