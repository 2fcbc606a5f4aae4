// The wake-up calendar against a std::priority_queue of (cycle, channel) under random pushes and
// pops: the same entries come out in the same order (a pushed duplicate counts once), near and far
// in the future, below the wheel's base, and across more than 64 channels.
#include <gtest/gtest.h>

#include <functional>
#include <queue>
#include <random>
#include <set>

#include "hw/hbm/wake_calendar.h"

namespace hpusim::hbm {
namespace {

TEST(HbmWakeCalendar, PopsInCycleThenChannelOrderLikeAHeap) {
  for (uint32_t channels : {1u, 48u, 64u, 130u}) {
    std::mt19937_64 rng(channels);
    WakeCalendar calendar(channels);
    std::set<WakeCalendar::Entry> reference;   // ordered, and a duplicate counts once
    uint64_t now = 0;
    for (int i = 0; i < 200000; ++i) {
      const unsigned action = rng() % 10;
      if (action < 6 || reference.empty()) {
        uint64_t ahead;
        switch (rng() % 4) {
          case 0: ahead = rng() % 4; break;             // the next cycles
          case 1: ahead = rng() % 3000; break;          // past the wheel
          case 2: ahead = rng() % 100000; break;        // far
          default: ahead = 0; break;
        }
        // Now and then a wake-up below the current time (a channel whose next event is earlier).
        const uint64_t cycle = (rng() % 50 == 0 && now > 10) ? now - rng() % 10 : now + ahead;
        const uint32_t channel = static_cast<uint32_t>(rng() % channels);
        calendar.push(cycle, channel);
        reference.insert({cycle, channel});
      } else {
        ASSERT_FALSE(calendar.empty());
        const WakeCalendar::Entry want = *reference.begin();
        ASSERT_EQ(calendar.top(), want) << "after " << i << " operations, " << channels << " channels";
        calendar.pop();
        reference.erase(reference.begin());
        now = std::max(now, want.first);
      }
    }
    while (!reference.empty()) {
      ASSERT_EQ(calendar.top(), *reference.begin());
      calendar.pop();
      reference.erase(reference.begin());
    }
    EXPECT_TRUE(calendar.empty());
  }
}

}  // namespace
}  // namespace hpusim::hbm
