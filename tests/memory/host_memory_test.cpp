// The host memory behind the PCIe link: a sparse store plus pinned process buffers. Pinning rules
// and their errors, accesses split over pinned and unpinned parts, fill across a pinned boundary,
// and a random differential test against a flat model.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hw/pcie/host_memory.h"

namespace hpusim::testing {
namespace {

constexpr uint64_t kPage = hw::HostMemory::kPinAlignment;
constexpr uint64_t kSize = 1ull << 48;   // the presets' host_phys_size

// A page-aligned process buffer, as a user allocation the driver pins.
struct Buffer {
  explicit Buffer(uint64_t bytes, uint8_t value = 0)
      : bytes(bytes), memory(static_cast<uint8_t*>(std::aligned_alloc(kPage, bytes)), &std::free) {
    std::memset(memory.get(), value, bytes);
  }
  uint8_t* data() { return memory.get(); }
  uint8_t& operator[](uint64_t i) { return memory.get()[i]; }
  uint64_t bytes;
  std::unique_ptr<uint8_t, decltype(&std::free)> memory;
};

std::string message_of_pin(hw::HostMemory& host, uint64_t phys, uint8_t* memory, uint64_t bytes) {
  try {
    host.pin(phys, memory, bytes);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "pin at 0x" << std::hex << phys << " of 0x" << bytes << " bytes did not throw";
  return "";
}

TEST(HostMemory, PinnedRangeAliasesTheCallersBuffer) {
  hw::HostMemory host("host_memory", kSize);
  Buffer buffer(3 * kPage, 0x11);
  const uint64_t phys = 0x40000000;
  host.pin(phys, buffer.data(), buffer.bytes);
  EXPECT_TRUE(host.pinned(phys));
  EXPECT_TRUE(host.pinned(phys + 3 * kPage - 1));
  EXPECT_FALSE(host.pinned(phys - 1));
  EXPECT_FALSE(host.pinned(phys + 3 * kPage));
  EXPECT_EQ(host.pinned_bytes(), 3 * kPage);
  EXPECT_EQ(host.pinned_ranges(), 1u);

  // The host view reads what the process wrote, also after pinning.
  uint8_t seen[8];
  host.read(phys + 5, seen, 8);
  for (uint8_t b : seen) EXPECT_EQ(b, 0x11);
  buffer[kPage + 7] = 0x99;
  host.read(phys + kPage + 7, seen, 1);
  EXPECT_EQ(seen[0], 0x99);
  // Writes through the host view land in the process's buffer and allocate no store page.
  const uint64_t value = 0x0123456789ABCDEFull;
  host.write(phys + 2 * kPage - 4, &value, 8);
  uint64_t in_buffer = 0;
  std::memcpy(&in_buffer, buffer.data() + 2 * kPage - 4, 8);
  EXPECT_EQ(in_buffer, value);
  EXPECT_EQ(host.pages_touched(), 0u);

  host.unpin(phys);
  EXPECT_FALSE(host.pinned(phys));
  EXPECT_EQ(host.pinned_bytes(), 0u);
  // Unpinned, the range is the store again (zero) and the buffer is left alone.
  host.read(phys + 5, seen, 8);
  for (uint8_t b : seen) EXPECT_EQ(b, 0);
  host.fill(phys, 0x77, 3 * kPage);
  EXPECT_EQ(buffer[0], 0x11);
  EXPECT_EQ(buffer[kPage + 7], 0x99);
}

TEST(HostMemory, AccessesAreSplitAtEveryPinnedBoundary) {
  hw::HostMemory host("host_memory", kSize);
  // Store | pinned A (2 pages) | store (1 page) | pinned B (1 page) | pinned C (1 page, adjacent) | store
  Buffer a(2 * kPage), b(kPage), c(kPage);
  const uint64_t base = 0x7000000;
  host.pin(base + kPage, a.data(), a.bytes);
  host.pin(base + 4 * kPage, b.data(), b.bytes);
  host.pin(base + 5 * kPage, c.data(), c.bytes);
  EXPECT_EQ(host.pinned_bytes(), 4 * kPage);

  // One write over everything, starting and ending inside store pages at odd offsets.
  const uint64_t start = base + kPage / 2 + 3;
  const uint64_t length = 6 * kPage - 11;
  std::vector<uint8_t> pattern(length);
  for (uint64_t i = 0; i < length; ++i) pattern[i] = static_cast<uint8_t>(i * 7 + i / 251);
  host.write(start, pattern.data(), length);

  auto expect_piece = [&](uint64_t phys, const uint8_t* memory, uint64_t bytes) {
    ASSERT_EQ(0, std::memcmp(memory, pattern.data() + (phys - start), bytes)) << "at 0x" << std::hex << phys;
  };
  expect_piece(base + kPage, a.data(), a.bytes);
  expect_piece(base + 4 * kPage, b.data(), b.bytes);
  expect_piece(base + 5 * kPage, c.data(), c.bytes);
  std::vector<uint8_t> back(length);
  host.read(start, back.data(), length);
  EXPECT_EQ(back, pattern);

  // The store holds only the unpinned pieces: after unpinning everything, the pinned pieces read
  // as zero and the rest still holds the pattern.
  host.unpin(base + kPage);
  host.unpin(base + 4 * kPage);
  host.unpin(base + 5 * kPage);
  host.read(start, back.data(), length);
  for (uint64_t i = 0; i < length; ++i) {
    const uint64_t phys = start + i;
    const bool was_pinned = (phys >= base + kPage && phys < base + 3 * kPage) ||
                            (phys >= base + 4 * kPage && phys < base + 6 * kPage);
    ASSERT_EQ(back[i], was_pinned ? 0 : pattern[i]) << "at 0x" << std::hex << phys;
  }
}

TEST(HostMemory, FillAcrossAPinnedBoundary) {
  // 64 KiB store pages; the pinned page sits inside store page 1.
  hw::HostMemory host("host_memory", kSize);
  const uint64_t store_page = host.page_bytes();
  std::vector<uint8_t> ones(3 * store_page, 0xAA);
  host.write(0, ones.data(), ones.size());
  EXPECT_EQ(host.pages_touched(), 3u);

  Buffer buffer(kPage, 0x33);
  const uint64_t phys = store_page + 2 * kPage;
  host.pin(phys, buffer.data(), kPage);
  // Pinning discarded the store's bytes under the range but kept its page (only partly covered).
  EXPECT_EQ(host.pages_touched(), 3u);

  // A non-zero fill from the store into the pinned page and out again.
  host.fill(phys - 100, 0x5C, kPage + 200);
  for (uint64_t i = 0; i < kPage; ++i) ASSERT_EQ(buffer[i], 0x5C) << i;
  uint8_t edge[2];
  host.read(phys - 101, edge, 2);
  EXPECT_EQ(edge[0], 0xAA);
  EXPECT_EQ(edge[1], 0x5C);
  host.read(phys + kPage + 99, edge, 2);
  EXPECT_EQ(edge[0], 0x5C);
  EXPECT_EQ(edge[1], 0xAA);

  // Zero fill over store pages 1 and 2 whole (page 1 around the pinned page): the store releases
  // them, the pinned page is zeroed in the buffer, store page 0 is untouched.
  host.fill(store_page / 2, 0, store_page / 2 + 2 * store_page);
  EXPECT_EQ(host.pages_touched(), 1u);
  for (uint64_t i = 0; i < kPage; ++i) ASSERT_EQ(buffer[i], 0) << i;
  host.read(store_page / 2 - 1, edge, 2);
  EXPECT_EQ(edge[0], 0xAA);
  EXPECT_EQ(edge[1], 0);
}

TEST(HostMemory, BadPinsAreRefusedAndChangeNothing) {
  hw::HostMemory host("host_memory", 1ull << 32);
  Buffer buffer(8 * kPage);
  uint8_t* memory = buffer.data();
  host.pin(0x10000, memory, 2 * kPage);   // [0x10000, 0x12000)

  EXPECT_NE(message_of_pin(host, 0x20800, memory + 2 * kPage, kPage).find("address is not a multiple of 4096"),
            std::string::npos);
  EXPECT_NE(message_of_pin(host, 0x20000, memory + 2 * kPage, kPage + 1).find("size is not a multiple of 4096"),
            std::string::npos);
  EXPECT_NE(message_of_pin(host, 0x20000, memory + 1, kPage).find("is not aligned to 4096"), std::string::npos);
  EXPECT_NE(message_of_pin(host, 0x20000, nullptr, kPage).find("null"), std::string::npos);
  EXPECT_NE(message_of_pin(host, 0x20000, memory + 2 * kPage, 0).find("empty"), std::string::npos);
  // Outside the store, also by wrapping around.
  EXPECT_NE(message_of_pin(host, (1ull << 32) - kPage, memory + 2 * kPage, 2 * kPage).find("outside"),
            std::string::npos);
  EXPECT_NE(message_of_pin(host, ~uint64_t{0} - kPage + 1, memory + 2 * kPage, 2 * kPage).find("outside"),
            std::string::npos);
  // Overlaps: from below, from above, inside, around, the same range.
  for (auto [phys, bytes] : {std::pair<uint64_t, uint64_t>{0xF000, 2 * kPage}, {0x11000, 2 * kPage},
                             {0x11000, kPage}, {0xF000, 4 * kPage}, {0x10000, 2 * kPage}}) {
    const std::string what = message_of_pin(host, phys, memory + 4 * kPage, bytes);
    EXPECT_NE(what.find("overlaps the pinned range [0x10000, 0x12000)"), std::string::npos) << what;
  }
  EXPECT_EQ(host.pinned_bytes(), 2 * kPage);
  EXPECT_EQ(host.pinned_ranges(), 1u);
  EXPECT_FALSE(host.pinned(0xF000));
  EXPECT_FALSE(host.pinned(0x12000));

  // Adjacent ranges on both sides are fine.
  host.pin(0xF000, memory + 2 * kPage, kPage);
  host.pin(0x12000, memory + 3 * kPage, kPage);
  EXPECT_EQ(host.pinned_bytes(), 4 * kPage);

  // unpin needs the first address of a range.
  EXPECT_THROW(host.unpin(0x11000), std::invalid_argument);
  EXPECT_THROW(host.unpin(0x20000), std::invalid_argument);
  host.unpin(0x10000);
  EXPECT_THROW(host.unpin(0x10000), std::invalid_argument);
  EXPECT_EQ(host.pinned_bytes(), 2 * kPage);
}

TEST(HostMemory, AccessesOutsideThrowBeforeTouchingAnything) {
  hw::HostMemory host("host_memory", 1ull << 32);
  Buffer buffer(kPage, 0x42);
  const uint64_t top = (1ull << 32) - kPage;
  host.pin(top, buffer.data(), kPage);
  std::vector<uint8_t> data(2 * kPage, 0xEE);
  try {
    host.write(top + 16, data.data(), kPage);   // runs off the end
    FAIL() << "expected an AccessError";
  } catch (const mem::AccessError& e) {
    EXPECT_EQ(e.store(), "host_memory");
    EXPECT_EQ(e.addr(), top + 16);
    EXPECT_NE(std::string(e.what()).find("0xfffff010"), std::string::npos) << e.what();
  }
  EXPECT_EQ(buffer[16], 0x42);   // the pinned part was not written either
  EXPECT_THROW(host.read(top, data.data(), kPage + 1), mem::AccessError);
  EXPECT_THROW(host.fill(~uint64_t{0} - 3, 0, 8), mem::AccessError);
  host.read(top, data.data(), 0);   // zero length: a no-op
  EXPECT_TRUE(host.contains(top, kPage));
  EXPECT_FALSE(host.contains(top, kPage + 1));
}

// Random reads, writes, fills, pins and unpins against a flat model of the host view.
TEST(HostMemory, RandomAccessesMatchAFlatModel) {
  constexpr uint64_t kRegion = 64 * kPage;   // covers several 64 KiB store pages
  constexpr uint64_t kOrigin = 0x3F0000;     // not aligned to a store page
  hw::HostMemory host("host_memory", kSize);
  std::vector<uint8_t> model(kRegion, 0);
  struct Pinned {
    uint64_t phys;
    uint64_t pages;
    std::unique_ptr<Buffer> buffer;
  };
  std::vector<Pinned> pins;
  std::mt19937_64 random(2024);
  auto below = [&](uint64_t n) { return random() % n; };
  auto overlaps = [&](uint64_t phys, uint64_t pages) {
    for (const Pinned& p : pins) {
      if (phys < p.phys + p.pages * kPage && p.phys < phys + pages * kPage) return true;
    }
    return false;
  };

  for (int step = 0; step < 4000; ++step) {
    const uint64_t offset = below(kRegion);
    const uint64_t length = below(std::min<uint64_t>(kRegion - offset, 3 * kPage) + 1);
    switch (below(6)) {
      case 0: {   // write
        std::vector<uint8_t> data(length);
        for (auto& b : data) b = static_cast<uint8_t>(random());
        host.write(kOrigin + offset, data.data(), length);
        std::copy(data.begin(), data.end(), model.begin() + offset);
        break;
      }
      case 1: {   // fill, often with zero
        const uint8_t value = below(2) ? 0 : static_cast<uint8_t>(random());
        host.fill(kOrigin + offset, value, length);
        std::fill(model.begin() + offset, model.begin() + offset + length, value);
        break;
      }
      case 2: {   // the process writes its buffer directly
        if (pins.empty()) break;
        Pinned& p = pins[below(pins.size())];
        const uint64_t at = below(p.pages * kPage);
        const uint8_t value = static_cast<uint8_t>(random());
        (*p.buffer)[at] = value;
        model[p.phys - kOrigin + at] = value;
        break;
      }
      case 3: {   // pin a free, page-aligned range, holding whatever the buffer holds
        const uint64_t pages = 1 + below(4);
        const uint64_t phys = kOrigin + below(kRegion / kPage - pages + 1) * kPage;
        if (overlaps(phys, pages)) {
          EXPECT_THROW(host.pin(phys, Buffer(pages * kPage).data(), pages * kPage), std::invalid_argument);
          break;
        }
        auto buffer = std::make_unique<Buffer>(pages * kPage, static_cast<uint8_t>(random()));
        host.pin(phys, buffer->data(), pages * kPage);
        std::memcpy(model.data() + (phys - kOrigin), buffer->data(), pages * kPage);
        pins.push_back({phys, pages, std::move(buffer)});
        break;
      }
      case 4: {   // unpin: the range reads as zero again
        if (pins.empty()) break;
        const size_t i = below(pins.size());
        host.unpin(pins[i].phys);
        std::fill_n(model.begin() + (pins[i].phys - kOrigin), pins[i].pages * kPage, 0);
        pins.erase(pins.begin() + i);
        break;
      }
      default: {   // read
        std::vector<uint8_t> data(length, 0xCD);
        host.read(kOrigin + offset, data.data(), length);
        ASSERT_TRUE(std::equal(data.begin(), data.end(), model.begin() + offset)) << "step " << step;
      }
    }
  }
  std::vector<uint8_t> all(kRegion);
  host.read(kOrigin, all.data(), kRegion);
  EXPECT_EQ(all, model);
  uint64_t pinned = 0;
  for (const Pinned& p : pins) {
    pinned += p.pages * kPage;
    EXPECT_EQ(0, std::memcmp(p.buffer->data(), model.data() + (p.phys - kOrigin), p.pages * kPage));
  }
  EXPECT_EQ(host.pinned_bytes(), pinned);
}

}  // namespace
}  // namespace hpusim::testing
