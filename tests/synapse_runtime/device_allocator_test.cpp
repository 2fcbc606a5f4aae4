// The device-memory allocator: first fit, alignment, coalescing on free, ownership lookups.
#include <gtest/gtest.h>

#include "synapse/runtime/device_allocator.h"

namespace hpusim::synapse::runtime {
namespace {

TEST(SynapseDeviceAllocator, FirstFitAlignedAndCoalescedOnFree) {
  DeviceAllocator a(0x1000, 0x10000);
  const auto x = a.allocate(100);            // 256-aligned by default
  const auto y = a.allocate(0x300, 0x1000);
  const auto z = a.allocate(8);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(*x, 0x1000u);
  EXPECT_EQ(*y, 0x2000u);
  EXPECT_EQ(*z, 0x1100u);                    // fits in the gap before y
  EXPECT_EQ(a.used_bytes(), 100u + 0x300 + 8);
  EXPECT_TRUE(a.free(*x));
  EXPECT_FALSE(a.free(*x)) << "a second free of the same block";
  EXPECT_FALSE(a.free(0x1234));
  EXPECT_TRUE(a.free(*z));
  EXPECT_TRUE(a.free(*y));
  EXPECT_EQ(a.used_bytes(), 0u);
  // Everything coalesced: the whole range fits again.
  const auto all = a.allocate(0x10000, 0x1000);
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, 0x1000u);
}

TEST(SynapseDeviceAllocator, RefusesWhatDoesNotFitAndFindsOwners) {
  DeviceAllocator a(0, 4096);
  EXPECT_FALSE(a.allocate(0));
  EXPECT_FALSE(a.allocate(8192));
  EXPECT_FALSE(a.allocate(16, 3)) << "alignment must be a power of two";
  const auto x = a.allocate(1000);
  ASSERT_TRUE(x);
  EXPECT_EQ(a.owner(*x + 999), *x);
  EXPECT_EQ(a.owner(*x + 10, 990), *x);
  EXPECT_FALSE(a.owner(*x + 10, 991)) << "runs past the allocation";
  EXPECT_FALSE(a.owner(*x + 1000));
}

}  // namespace
}  // namespace hpusim::synapse::runtime
