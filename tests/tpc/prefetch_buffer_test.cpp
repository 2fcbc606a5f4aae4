// The TPC prefetch buffer's bookkeeping (hw/tpc/prefetch_buffer.h): hits on arrived and pending
// entries, duplicates, drops when full, invalidation by stores.
#include <gtest/gtest.h>

#include "hw/tpc/prefetch_buffer.h"

namespace hpusim::testing {
namespace {

using hw::TpcPrefetchBuffer;
using Take = TpcPrefetchBuffer::Take;

TEST(TpcPrefetchBuffer, ALoadTakesAnArrivedEntryAndFreesIt) {
  TpcPrefetchBuffer buffer(2, 8192);
  const auto id = buffer.allocate(0x1000, 256, 0);
  ASSERT_TRUE(id.has_value());
  EXPECT_TRUE(buffer.covers(0x1000, 256));
  EXPECT_TRUE(buffer.covers(0x1040, 64)) << "a narrower read inside the entry";
  EXPECT_FALSE(buffer.covers(0x10C0, 128)) << "a read reaching past the entry";
  EXPECT_EQ(buffer.arrived(*id, 500), TpcPrefetchBuffer::kNoWaiter);
  uint64_t arrival = 0;
  EXPECT_EQ(buffer.take(0x1000, 256, 7, arrival), Take::Arrived);
  EXPECT_EQ(arrival, 500u);
  EXPECT_EQ(buffer.take(0x1000, 256, 7, arrival), Take::Miss) << "an entry serves one load";
  EXPECT_FALSE(buffer.covers(0x1000, 256));
}

TEST(TpcPrefetchBuffer, ALoadOfAPendingEntryWaitsForItsArrival) {
  TpcPrefetchBuffer buffer(1, 8192);
  const auto id = buffer.allocate(0x2000, 256, 0);
  ASSERT_TRUE(id.has_value());
  uint64_t arrival = 0;
  EXPECT_EQ(buffer.take(0x2000, 256, 12, arrival), Take::Pending);
  EXPECT_FALSE(buffer.allocate(0x3000, 256, 0).has_value()) << "the taken entry is in use until it arrives";
  EXPECT_EQ(buffer.arrived(*id, 900), 12);
  EXPECT_TRUE(buffer.allocate(0x3000, 256, 0).has_value()) << "then it is free";
}

// A full buffer: a prefetch replaces the oldest entry whose data arrived stale_cycles ago or more
// unused; younger arrived entries and reads in flight stay, and the prefetch is dropped.
TEST(TpcPrefetchBuffer, AFullBufferEvictsOnlyStaleUnusedEntries) {
  constexpr uint64_t kStale = 100;   // the preset's tpc.prefetch_stale_cycles
  TpcPrefetchBuffer buffer(3, kStale);
  const auto a = buffer.allocate(0x0, 256, 0), b = buffer.allocate(0x100, 256, 0), c = buffer.allocate(0x200, 256, 0);
  ASSERT_TRUE(a && b && c);
  EXPECT_FALSE(buffer.allocate(0x300, 256, 100).has_value()) << "every read still in flight";
  buffer.arrived(*c, 10);
  buffer.arrived(*b, 20);
  EXPECT_FALSE(buffer.allocate(0x300, 256, 10 + kStale - 1).has_value()) << "arrived, but not stale yet";
  EXPECT_EQ(buffer.dropped(), 2u);
  const auto d = buffer.allocate(0x300, 256, 20 + kStale);   // c's and b's are stale: c's arrived first
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, *c);
  EXPECT_EQ(buffer.evicted(), 1u);
  EXPECT_FALSE(buffer.covers(0x200, 256));
  EXPECT_TRUE(buffer.covers(0x100, 256));
  EXPECT_TRUE(buffer.covers(0x300, 256));
  uint64_t arrival = 0;
  EXPECT_EQ(buffer.take(0x100, 256, 1, arrival), Take::Arrived);
  EXPECT_EQ(arrival, 20u);
  EXPECT_TRUE(buffer.allocate(0x400, 256, 30 + kStale).has_value()) << "then b's entry is free";
  buffer.clear();
  EXPECT_EQ(buffer.dropped(), 0u);
  EXPECT_EQ(buffer.evicted(), 0u);
  EXPECT_FALSE(buffer.covers(0x0, 256));
}

TEST(TpcPrefetchBuffer, AStoreOverlappingAnEntryDropsIt) {
  TpcPrefetchBuffer buffer(3, 8192);
  const auto arrived = buffer.allocate(0x0, 256, 0);
  const auto pending = buffer.allocate(0x100, 256, 0);
  const auto untouched = buffer.allocate(0x200, 256, 0);
  ASSERT_TRUE(arrived && pending && untouched);
  buffer.arrived(*arrived, 5);
  buffer.invalidate(0xF0, 0x20);   // the last bytes of the first, the first bytes of the second
  uint64_t arrival = 0;
  EXPECT_EQ(buffer.take(0x0, 256, 1, arrival), Take::Miss);
  EXPECT_EQ(buffer.take(0x100, 256, 1, arrival), Take::Miss);
  EXPECT_EQ(buffer.arrived(*pending, 8), TpcPrefetchBuffer::kNoWaiter) << "the stale entry is freed on arrival";
  EXPECT_TRUE(buffer.covers(0x200, 256));
  // Both dropped entries are free again: two allocations fit besides the untouched one.
  EXPECT_TRUE(buffer.allocate(0x400, 256, 0).has_value());
  EXPECT_TRUE(buffer.allocate(0x500, 256, 0).has_value());
  EXPECT_FALSE(buffer.allocate(0x600, 256, 0).has_value());
}

}  // namespace
}  // namespace hpusim::testing
