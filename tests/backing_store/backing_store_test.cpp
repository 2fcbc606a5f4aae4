#include "hw/backing_store/backing_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

using hpusim::mem::AccessError;
using hpusim::mem::BackingStore;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

// Resident set size of this process in bytes, from /proc/self/status.
uint64_t rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * kKiB;
  }
  ADD_FAILURE() << "no VmRSS in /proc/self/status";
  return 0;
}

std::vector<uint8_t> pattern(std::size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return v;
}

std::vector<uint8_t> read_back(const BackingStore& s, uint64_t addr, std::size_t n) {
  std::vector<uint8_t> v(n, 0xCD);
  s.read(addr, v.data(), n);
  return v;
}

TEST(BackingStore, WriteReadAcrossPageBoundaries) {
  const uint64_t base = 0x1000'0000;
  BackingStore s("hbm", base, 64 * kKiB, 4096);
  EXPECT_EQ(s.page_count(), 16u);
  // Spans three pages: the tail of page 0, all of page 1, the head of page 2.
  auto data = pattern(4096 + 200 + 300, 3);
  const uint64_t addr = base + 4096 - 200;
  s.write(addr, data.data(), data.size());
  EXPECT_EQ(read_back(s, addr, data.size()), data);
  EXPECT_EQ(s.pages_touched(), 3u);
  EXPECT_EQ(s.resident_bytes(), 3u * 4096);
  // Bytes around the write stay zero.
  auto before = read_back(s, base, 4096 - 200);
  EXPECT_EQ(before, std::vector<uint8_t>(4096 - 200, 0));
  auto after = read_back(s, addr + data.size(), 100);
  EXPECT_EQ(after, std::vector<uint8_t>(100, 0));
  // A read that straddles written and zero bytes.
  auto mixed = read_back(s, addr - 10, 20);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(mixed[i], 0);
  for (int i = 10; i < 20; ++i) EXPECT_EQ(mixed[i], data[i - 10]);
  // Overwrite part of it.
  uint8_t word[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  s.write(base + 4096 - 4, word, 8);
  auto w = read_back(s, base + 4096 - 4, 8);
  EXPECT_EQ(0, std::memcmp(w.data(), word, 8));
  // First and last byte of the store.
  uint8_t b = 0xAA;
  s.write(base, &b, 1);
  s.write(base + 64 * kKiB - 1, &b, 1);
  EXPECT_EQ(read_back(s, base + 64 * kKiB - 1, 1)[0], 0xAA);
  EXPECT_EQ(read_back(s, base, 1)[0], 0xAA);
}

TEST(BackingStore, UntouchedMemoryReadsZeroWithoutAllocating) {
  BackingStore s("sram", 0, 1 * kMiB);
  auto v = read_back(s, 12345, 200000);
  EXPECT_EQ(v, std::vector<uint8_t>(200000, 0));
  EXPECT_EQ(s.pages_touched(), 0u);
  EXPECT_EQ(s.resident_bytes(), 0u);
  uint64_t left = 0;
  EXPECT_EQ(s.page_for_read(70000, &left), nullptr);
  EXPECT_EQ(left, 128 * kKiB - 70000);
  EXPECT_EQ(s.pages_touched(), 0u);
  // Zero-length access is a no-op.
  s.read(0, nullptr, 0);
  s.write(1 * kMiB, nullptr, 0);
  EXPECT_EQ(s.pages_touched(), 0u);
}

TEST(BackingStore, FillSetsBytesAndZeroFillReleasesWholePages) {
  BackingStore s("hbm", 0x4000, 16 * 4096, 4096);
  s.fill(0x4000 + 100, 0x5A, 3 * 4096);  // pages 0..3
  EXPECT_EQ(s.pages_touched(), 4u);
  auto v = read_back(s, 0x4000, 4 * 4096);
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(v[i], (i >= 100 && i < 100 + 3 * 4096) ? 0x5A : 0) << "at byte " << i;
  }
  // Zero-fill of a partial page keeps it; covering whole pages releases them.
  s.fill(0x4000 + 50, 0, 4096 + 10);  // bytes 50..4155: parts of pages 0 and 1
  EXPECT_EQ(s.pages_touched(), 4u);
  s.fill(0x4000 + 4096, 0, 2 * 4096);  // pages 1 and 2 exactly
  EXPECT_EQ(s.pages_touched(), 2u);
  v = read_back(s, 0x4000, 4 * 4096);
  for (std::size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(v[i], (i >= 3 * 4096 && i < 100 + 3 * 4096) ? 0x5A : 0) << "at byte " << i;
  }
  // Zero-fill of untouched memory allocates nothing.
  s.fill(0x4000 + 8 * 4096 + 7, 0, 100);
  EXPECT_EQ(s.pages_touched(), 2u);
  // Fill across the whole store, then zero it all.
  s.fill(0x4000, 0xFF, 16 * 4096);
  EXPECT_EQ(s.pages_touched(), 16u);
  s.fill(0x4000, 0, 16 * 4096);
  EXPECT_EQ(s.pages_touched(), 0u);
}

TEST(BackingStore, PartialLastPage) {
  // size is not a multiple of the page size: the last page is partial.
  BackingStore s("odd", 0x100, 4096 + 100, 4096);
  EXPECT_EQ(s.page_count(), 2u);
  uint64_t left = 0;
  uint8_t* p = s.page_for_write(0x100 + 4096 + 40, &left);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(left, 60u);
  std::memset(p, 0x11, left);
  auto v = read_back(s, 0x100 + 4096, 100);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(v[i], i >= 40 ? 0x11 : 0);
  // Zero-filling the partial last page up to the end of the store releases it.
  s.fill(0x100 + 4096, 0, 100);
  EXPECT_EQ(s.pages_touched(), 0u);
  EXPECT_THROW(s.page_for_write(0x100 + 4096 + 100, &left), AccessError);
}

TEST(BackingStore, DmiPointers) {
  BackingStore s("hbm", 0x2000'0000, 1 * kMiB);
  uint64_t left = 0;
  uint8_t* w = s.page_for_write(0x2000'0000 + 64 * kKiB - 16, &left);
  EXPECT_EQ(left, 16u);
  for (int i = 0; i < 16; ++i) w[i] = static_cast<uint8_t>(i + 1);
  EXPECT_EQ(s.pages_touched(), 1u);
  const uint8_t* r = s.page_for_read(0x2000'0000 + 64 * kKiB - 16, &left);
  EXPECT_EQ(r, w);
  EXPECT_EQ(left, 16u);
  auto v = read_back(s, 0x2000'0000 + 64 * kKiB - 16, 16);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(v[i], i + 1);
  // Pointer to the start of the page and the same page through write().
  uint8_t b = 0x77;
  s.write(0x2000'0000, &b, 1);
  EXPECT_EQ(*s.page_for_read(0x2000'0000, nullptr), 0x77);
  EXPECT_EQ(s.page_for_read(0x2000'0000, nullptr) + 64 * kKiB - 16, r);
}

TEST(BackingStore, OutOfRangeAccessesThrowNamingStoreAndAddress) {
  BackingStore s("hbm0", 0x1000, 0x1000, 1024);
  uint8_t buf[32] = {};
  auto expect_error = [&](auto&& fn, const std::string& addr_hex, uint64_t len) {
    try {
      fn();
      ADD_FAILURE() << "no AccessError for " << addr_hex;
    } catch (const AccessError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("hbm0"), std::string::npos) << msg;
      EXPECT_NE(msg.find(addr_hex), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::to_string(len)), std::string::npos) << msg;
      EXPECT_EQ(e.store(), "hbm0");
      EXPECT_EQ(e.len(), len);
    }
  };
  expect_error([&] { s.read(0xfff, buf, 1); }, "0xfff", 1);               // below base
  expect_error([&] { s.read(0x1ff0, buf, 17); }, "0x1ff0", 17);           // runs past the end
  expect_error([&] { s.write(0x2000, buf, 1); }, "0x2000", 1);            // at the end
  expect_error([&] { s.fill(0x1800, 1, 0x801); }, "0x1800", 0x801);
  expect_error([&] { s.read(0x1800, buf, ~uint64_t{0} - 0x10); }, "0x1800",
               ~uint64_t{0} - 0x10);                                      // overflows
  expect_error([&] { s.page_for_write(0x2000, nullptr); }, "0x2000", 1);
  expect_error([&] { s.page_for_read(0x10, nullptr); }, "0x10", 1);
  // The last valid byte is fine; nothing was allocated by the rejected accesses.
  EXPECT_NO_THROW(s.read(0x1fe0, buf, 32));
  EXPECT_EQ(s.pages_touched(), 0u);
  // AccessError is a std::runtime_error.
  EXPECT_THROW(s.write(0, buf, 1), std::runtime_error);
}

TEST(BackingStore, InvalidParametersRejected) {
  EXPECT_THROW(BackingStore("a", 0, 0), std::invalid_argument);
  EXPECT_THROW(BackingStore("a", 0, 4096, 3000), std::invalid_argument);
  EXPECT_THROW(BackingStore("a", 0, 4096, 32), std::invalid_argument);
  EXPECT_THROW(BackingStore("a", ~uint64_t{0} - 10, 100), std::invalid_argument);
  // A store that reaches the very top of the address space is fine.
  BackingStore top("top", ~uint64_t{0} - 4095, 4096, 4096);
  uint8_t b = 9;
  top.write(~uint64_t{0}, &b, 1);
  uint8_t r = 0;
  top.read(~uint64_t{0}, &r, 1);
  EXPECT_EQ(r, 9);
  EXPECT_THROW(top.read(~uint64_t{0}, &r, 2), AccessError);
}

TEST(BackingStore, ClearResetsToZero) {
  BackingStore s("hbm", 0, 8 * kMiB);
  auto data = pattern(300 * kKiB, 1);
  s.write(5 * kMiB + 3, data.data(), data.size());
  EXPECT_GT(s.pages_touched(), 0u);
  s.clear();
  EXPECT_EQ(s.pages_touched(), 0u);
  EXPECT_EQ(s.resident_bytes(), 0u);
  EXPECT_EQ(read_back(s, 5 * kMiB, 400 * kKiB), std::vector<uint8_t>(400 * kKiB, 0));
  // Usable again after clear.
  s.write(7, data.data(), 10);
  EXPECT_EQ(read_back(s, 7, 10), std::vector<uint8_t>(data.begin(), data.begin() + 10));
}

TEST(BackingStore, HostSpaceUsesHashMapAndCache) {
  // A 2^48-byte host address space: far too many pages for a flat table.
  BackingStore host("host", 0, uint64_t{1} << 48);
  EXPECT_FALSE(host.uses_flat_table());
  auto data = pattern(200 * kKiB, 9);
  const uint64_t a = 0x7fff'1234'5678;
  host.write(a, data.data(), data.size());
  EXPECT_EQ(read_back(host, a, data.size()), data);
  const uint64_t b = 0x0000'5555'0000;
  host.write(b, data.data(), 10);
  // Alternate between pages so the one-entry cache is replaced each time.
  EXPECT_EQ(read_back(host, a, 10), std::vector<uint8_t>(data.begin(), data.begin() + 10));
  EXPECT_EQ(read_back(host, b, 10), std::vector<uint8_t>(data.begin(), data.begin() + 10));
  EXPECT_EQ(host.pages_touched(), 5u);  // 200 KiB at an unaligned address: 4 pages, plus 1
  // Releasing the cached page must not leave a dangling cache entry.
  host.fill(b & ~(64 * kKiB - 1), 0, 64 * kKiB);
  EXPECT_EQ(host.pages_touched(), 4u);
  EXPECT_EQ(host.page_for_read(b, nullptr), nullptr);
  EXPECT_EQ(read_back(host, b, 10), std::vector<uint8_t>(10, 0));
  host.clear();
  EXPECT_EQ(host.page_for_read(a, nullptr), nullptr);
  EXPECT_EQ(host.pages_touched(), 0u);
  // A 96 GB device store uses the flat table.
  BackingStore hbm("hbm", 0, 96 * kGiB);
  EXPECT_TRUE(hbm.uses_flat_table());
}

// Random reads, writes, fills and DMI accesses against a std::vector reference.
void differential(uint64_t base, uint64_t size, uint32_t page_bytes, uint64_t seed) {
  BackingStore s("diff", base, size, page_bytes);
  std::vector<uint8_t> ref(size, 0);
  std::mt19937_64 rng(seed);
  auto pick_range = [&](uint64_t max_len) {
    uint64_t off = rng() % size;
    uint64_t len = rng() % (max_len + 1);
    if (len > size - off) len = size - off;
    return std::make_pair(off, len);
  };
  std::vector<uint8_t> buf;
  for (int iter = 0; iter < 20000; ++iter) {
    int op = static_cast<int>(rng() % 6);
    auto [off, len] = pick_range(rng() % 4 == 0 ? 5 * page_bytes : 300);
    switch (op) {
      case 0:
      case 1: {  // write
        buf.resize(len);
        for (auto& x : buf) x = static_cast<uint8_t>(rng());
        s.write(base + off, buf.data(), len);
        std::copy(buf.begin(), buf.end(), ref.begin() + off);
        break;
      }
      case 2: {  // fill, often with zero and page-aligned so pages get released
        uint8_t value = rng() % 2 ? 0 : static_cast<uint8_t>(rng());
        if (rng() % 2) {
          off &= ~uint64_t{page_bytes - 1};
          len = std::min<uint64_t>(size - off, page_bytes * (1 + rng() % 3));
        }
        s.fill(base + off, value, len);
        std::fill(ref.begin() + off, ref.begin() + off + len, value);
        break;
      }
      case 3: {  // DMI write of one byte run inside one page
        uint64_t left = 0;
        uint8_t* p = s.page_for_write(base + off, &left);
        uint64_t n = std::min<uint64_t>(left, 1 + rng() % 64);
        for (uint64_t i = 0; i < n; ++i) {
          p[i] = static_cast<uint8_t>(rng());
          ref[off + i] = p[i];
        }
        break;
      }
      case 4: {  // DMI read
        uint64_t left = 0;
        const uint8_t* p = s.page_for_read(base + off, &left);
        ASSERT_EQ(left, std::min<uint64_t>(page_bytes - (off % page_bytes), size - off));
        for (uint64_t i = 0; i < left; ++i) {
          ASSERT_EQ(p ? p[i] : 0, ref[off + i]) << "iter " << iter << " offset " << off + i;
        }
        break;
      }
      default: {  // read
        buf.assign(len, 0xEE);
        s.read(base + off, buf.data(), len);
        ASSERT_TRUE(std::equal(buf.begin(), buf.end(), ref.begin() + off))
            << "iter " << iter << " offset " << off << " len " << len;
      }
    }
  }
  buf.assign(size, 0xEE);
  s.read(base, buf.data(), size);
  EXPECT_EQ(buf, ref);
  EXPECT_LE(s.pages_touched(), s.page_count());
  EXPECT_EQ(s.resident_bytes(), s.pages_touched() * page_bytes);
}

TEST(BackingStore, RandomDifferentialFlatTable) {
  differential(0x8000'0000, 64 * 1024 + 1000, 4096, 0x5eed);
}

TEST(BackingStore, RandomDifferentialSmallPages) { differential(7, 20000, 256, 42); }

TEST(BackingStore, RandomDifferentialHashMap) {
  // The hash-map path: three small windows of a 2^48-byte store (bottom, middle, top), each
  // mirrored by its own reference vector.
  const uint64_t size = uint64_t{1} << 48;
  BackingStore s("diff_host", 0, size, 1024);
  ASSERT_FALSE(s.uses_flat_table());
  const uint64_t window = 50 * 1024;
  const uint64_t starts[3] = {0, uint64_t{1} << 40, size - window};
  std::vector<std::vector<uint8_t>> ref(3, std::vector<uint8_t>(window, 0));
  std::mt19937_64 rng(7);
  std::vector<uint8_t> buf;
  for (int iter = 0; iter < 20000; ++iter) {
    int w = static_cast<int>(rng() % 3);
    uint64_t off = rng() % window;
    uint64_t len = std::min<uint64_t>(window - off, rng() % 3000);
    switch (rng() % 3) {
      case 0:
        buf.resize(len);
        for (auto& x : buf) x = static_cast<uint8_t>(rng());
        s.write(starts[w] + off, buf.data(), len);
        std::copy(buf.begin(), buf.end(), ref[w].begin() + off);
        break;
      case 1: {
        uint8_t value = rng() % 2 ? 0 : static_cast<uint8_t>(rng());
        s.fill(starts[w] + off, value, len);
        std::fill(ref[w].begin() + off, ref[w].begin() + off + len, value);
        break;
      }
      default:
        buf.assign(len, 0xEE);
        s.read(starts[w] + off, buf.data(), len);
        ASSERT_TRUE(std::equal(buf.begin(), buf.end(), ref[w].begin() + off)) << "iter " << iter;
    }
  }
  for (int w = 0; w < 3; ++w) {
    buf.assign(window, 0xEE);
    s.read(starts[w], buf.data(), window);
    EXPECT_EQ(buf, ref[w]);
  }
}

TEST(BackingStore, HugeStoreCostsOnlyTouchedPages) {
  const uint64_t rss_start = rss_bytes();
  auto hbm = std::make_unique<BackingStore>("hbm", 0x10'0000'0000, 96 * kGiB);
  const uint64_t rss_constructed = rss_bytes();
  EXPECT_LT(rss_constructed, rss_start + 64 * kMiB)
      << "constructing a 96 GB store raised RSS from " << rss_start << " to " << rss_constructed;
  EXPECT_EQ(hbm->pages_touched(), 0u);

  // Touch 1 GB, one page per write, spread over the whole 96 GB (every 96th page).
  const uint64_t page = hbm->page_bytes();
  const uint64_t pages = kGiB / page;
  std::vector<uint8_t> data(page);
  for (uint64_t i = 0; i < pages; ++i) {
    std::memset(data.data(), static_cast<int>(i & 0xff), 16);
    hbm->write(hbm->base() + i * 96 * page, data.data(), page);
  }
  EXPECT_EQ(hbm->pages_touched(), pages);
  EXPECT_EQ(hbm->resident_bytes(), kGiB);
  const uint64_t rss_touched = rss_bytes();
  EXPECT_LT(rss_touched, 2 * kGiB) << "RSS after touching 1 GB: " << rss_touched;
  std::printf("RSS: start %llu MiB, 96 GB store constructed %llu MiB, 1 GB touched %llu MiB\n",
              static_cast<unsigned long long>(rss_start / kMiB),
              static_cast<unsigned long long>(rss_constructed / kMiB),
              static_cast<unsigned long long>(rss_touched / kMiB));
  // The data really is there.
  uint8_t probe[16];
  hbm->read(hbm->base() + 777 * 96 * page, probe, sizeof probe);
  EXPECT_EQ(probe[0], 777 & 0xff);
  EXPECT_EQ(probe[15], 777 & 0xff);
  hbm->read(hbm->base() + 777 * 96 * page + page, probe, sizeof probe);
  EXPECT_EQ(probe[0], 0);
  EXPECT_EQ(hbm->pages_touched(), pages);  // reads allocated nothing

  hbm->clear();
  EXPECT_EQ(hbm->pages_touched(), 0u);
  EXPECT_EQ(hbm->resident_bytes(), 0u);
}

}  // namespace
