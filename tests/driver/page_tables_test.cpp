// PageTableBuilder against the documented format, with a plain map as page-table memory.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "driver/page_tables.h"

namespace hpusim::testing {
namespace {

using driver::PageTableBuilder;
using driver::PageTableError;
namespace pte = hpusim::pte;
namespace va = hpusim::gaudi1_va;

class MapMemory : public driver::PageTableMemory {
 public:
  void write64(uint64_t pa, uint64_t value) override {
    EXPECT_EQ(pa % 8, 0u);
    if (value == 0) words.erase(pa); else words[pa] = value;
    ++writes;
  }
  uint64_t read64(uint64_t pa) override {
    auto it = words.find(pa);
    return it == words.end() ? 0 : it->second;
  }
  std::map<uint64_t, uint64_t> words;   // non-zero words only
  uint64_t writes = 0;
};

constexpr uint64_t kRegion = 0x10000000;
constexpr uint64_t kRegionSize = 1 << 20;
constexpr uint64_t kHost = 0x8000000000ull;

TEST(MmuPageTable, Maps4KPagesInTheGaudiFormat) {
  MapMemory m;
  PageTableBuilder b(m, kRegion, kRegionSize);
  EXPECT_EQ(b.hop0_address(0), kRegion);
  EXPECT_EQ(b.hop0_address(1), kRegion + 0x1000);
  const uint64_t v = va::kPmmuStart + 0x7000;
  b.map(0, v, kHost + 0x123000, 3 * pte::k4K, pte::k4K);
  EXPECT_EQ(b.mapped_pages(), 3u);
  EXPECT_EQ(b.tables_in_use(), 4u);   // hop1..hop4
  for (uint64_t page = 0; page < 3; ++page) {
    auto t = b.translate(0, v + page * pte::k4K + 0x18);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->pa, kHost + 0x123000 + page * pte::k4K + 0x18);
    EXPECT_EQ(t->page_size, pte::k4K);
  }
  EXPECT_FALSE(b.translate(0, v + 3 * pte::k4K).has_value());
  EXPECT_FALSE(b.translate(1, v).has_value());   // another ASID sees nothing
  // Walk the raw format by hand: hop0 index = VA[49:48] = 1, then tables of present entries.
  uint64_t table = kRegion;
  for (uint32_t hop = 0; hop < 4; ++hop) {
    const uint64_t e = m.read64(table + pte::hop_index(v, hop) * 8);
    ASSERT_EQ(e & pte::kPresent, pte::kPresent) << "hop " << hop;
    EXPECT_EQ(e & pte::kLast, 0u) << "hop " << hop;
    table = e & pte::kAddressMask;
    EXPECT_GE(table, kRegion + 2 * 0x1000);
    EXPECT_LT(table, kRegion + kRegionSize);
  }
  EXPECT_EQ(pte::hop_index(v, 0), 1u);
  EXPECT_EQ(m.read64(table + pte::hop_index(v, 4) * 8), (kHost + 0x123000) | pte::kLast | pte::kPresent);
}

TEST(MmuPageTable, Maps2MPagesEndingAtHop3) {
  MapMemory m;
  PageTableBuilder b(m, kRegion, kRegionSize);
  const uint64_t v = va::kDmmuStart + 4 * pte::k2M;
  b.map(1, v, 0x40000000, 2 * pte::k2M, pte::k2M);
  EXPECT_EQ(b.tables_in_use(), 3u);   // hop1..hop3
  auto t = b.translate(1, v + pte::k2M + 0x12345);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pa, 0x40000000 + pte::k2M + 0x12345);
  EXPECT_EQ(t->page_size, pte::k2M);
  uint64_t table = b.hop0_address(1);
  for (uint32_t hop = 0; hop < 3; ++hop) table = m.read64(table + pte::hop_index(v, hop) * 8) & pte::kAddressMask;
  EXPECT_EQ(m.read64(table + pte::hop_index(v, 3) * 8), 0x40000000u | pte::kLast | pte::kPresent);
}

TEST(MmuPageTable, UnmapClearsEntriesAndFreesEmptyTables) {
  MapMemory m;
  PageTableBuilder b(m, kRegion, kRegionSize);
  const uint64_t v = va::kPmmuStart;
  b.map(0, v, kHost, 4 * pte::k4K, pte::k4K);
  b.map(0, va::kDmmuStart, 0x40000000, pte::k2M, pte::k2M);
  const uint64_t free_before = b.tables_free();
  b.unmap(0, v + pte::k4K, 2 * pte::k4K);
  EXPECT_FALSE(b.translate(0, v + pte::k4K).has_value());
  EXPECT_FALSE(b.translate(0, v + 2 * pte::k4K).has_value());
  EXPECT_TRUE(b.translate(0, v).has_value());
  EXPECT_TRUE(b.translate(0, v + 3 * pte::k4K).has_value());
  EXPECT_EQ(b.tables_free(), free_before);   // hop4 still holds two pages
  b.unmap(0, v, pte::k4K);
  b.unmap(0, v + 3 * pte::k4K, pte::k4K);
  EXPECT_EQ(b.tables_free(), free_before + 4);
  b.unmap(0, va::kDmmuStart, pte::k2M);
  EXPECT_EQ(b.tables_in_use(), 0u);
  EXPECT_EQ(b.mapped_pages(), 0u);
  EXPECT_TRUE(m.words.empty()) << "every entry is cleared";
  // Freed tables are reused.
  b.map(0, v, kHost, pte::k4K, pte::k4K);
  EXPECT_EQ(b.tables_in_use(), 4u);
  EXPECT_EQ(b.tables_free(), free_before + 4 + 3 - 4);
}

void expect_error(PageTableError::Kind kind, const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const PageTableError& e) {
    EXPECT_EQ(int(e.kind()), int(kind)) << e.what();
  }
}

TEST(MmuPageTable, RejectsMisalignedMapsAndUnmapsWithoutChanges) {
  MapMemory m;
  PageTableBuilder b(m, kRegion, kRegionSize);
  b.map(0, va::kDmmuStart, 0x40000000, pte::k2M, pte::k2M);
  const auto before = m.words;
  using K = PageTableError::Kind;
  const uint64_t v = va::kPmmuStart;
  expect_error(K::kMisaligned, [&] { b.map(0, v + 0x10, kHost, pte::k4K, pte::k4K); });
  expect_error(K::kMisaligned, [&] { b.map(0, v, kHost + 0x800, pte::k4K, pte::k4K); });
  expect_error(K::kMisaligned, [&] { b.map(0, v, kHost, 0x1800, pte::k4K); });
  expect_error(K::kMisaligned, [&] { b.map(0, va::kDmmuStart + 8 * pte::k2M + pte::k4K, 0x40000000, pte::k2M, pte::k2M); });
  expect_error(K::kMisaligned, [&] { b.map(0, va::kDmmuStart + 8 * pte::k2M, 0x40001000, pte::k2M, pte::k2M); });
  expect_error(K::kBadArgument, [&] { b.map(0, v, kHost, 0x10000, 0x10000); });
  expect_error(K::kBadArgument, [&] { b.map(0, v, kHost, 0, pte::k4K); });
  expect_error(K::kBadArgument, [&] { b.map(2, v, kHost, pte::k4K, pte::k4K); });
  expect_error(K::kBadArgument, [&] { b.map(0, uint64_t{1} << 50, kHost, pte::k4K, pte::k4K); });
  expect_error(K::kMisaligned, [&] { b.unmap(0, va::kDmmuStart + pte::k4K, pte::k4K); });   // splits a 2 MB page
  expect_error(K::kMisaligned, [&] { b.unmap(0, va::kDmmuStart, pte::k4K); });
  expect_error(K::kNotMapped, [&] { b.unmap(0, v, pte::k4K); });
  expect_error(K::kNotMapped, [&] { b.unmap(0, va::kDmmuStart, 2 * pte::k2M); });   // second page unmapped
  EXPECT_EQ(m.words, before);
  EXPECT_TRUE(b.translate(0, va::kDmmuStart).has_value());
}

TEST(MmuPageTable, RejectsOverlappingMapsWithoutChanges) {
  MapMemory m;
  PageTableBuilder b(m, kRegion, kRegionSize);
  using K = PageTableError::Kind;
  const uint64_t v = va::kPmmuStart + 0x40000000;
  b.map(0, v + 4 * pte::k4K, kHost, pte::k4K, pte::k4K);
  b.map(0, va::kDmmuStart, 0x40000000, pte::k2M, pte::k2M);
  const auto before = m.words;
  const uint64_t tables = b.tables_in_use();
  // A range whose last page is taken: nothing of it is mapped.
  expect_error(K::kOverlap, [&] { b.map(0, v, kHost + 0x100000, 5 * pte::k4K, pte::k4K); });
  // A 4 KB page inside a 2 MB page, and a 2 MB page over 4 KB pages.
  expect_error(K::kOverlap, [&] { b.map(0, va::kDmmuStart + 0x3000, kHost, pte::k4K, pte::k4K); });
  expect_error(K::kOverlap, [&] { b.map(0, v & ~(pte::k2M - 1), 0x40000000, pte::k2M, pte::k2M); });
  EXPECT_EQ(m.words, before);
  EXPECT_EQ(b.tables_in_use(), tables);
  EXPECT_FALSE(b.translate(0, v).has_value());
  // The same VA in the other ASID is free.
  b.map(1, v, kHost, 5 * pte::k4K, pte::k4K);
  EXPECT_EQ(b.translate(1, v + 4 * pte::k4K)->pa, kHost + 4 * pte::k4K);
}

TEST(MmuPageTable, RunningOutOfTablesLeavesNoPartialMapping) {
  MapMemory m;
  // Two hop0 tables and five hop tables: one 4 KB path needs four.
  PageTableBuilder b(m, kRegion, 7 * pte::kTableBytes);
  b.map(0, va::kPmmuStart, kHost, pte::k4K, pte::k4K);
  EXPECT_EQ(b.tables_free(), 1u);
  const auto before = m.words;
  // 1024 pages under two hop3 entries need two new hop4 tables; only one is left.
  expect_error(PageTableError::Kind::kOutOfTables,
               [&] { b.map(0, va::kPmmuStart + pte::k2M, kHost, 2 * pte::k2M, pte::k4K); });
  EXPECT_EQ(m.words, before);
  EXPECT_EQ(b.tables_free(), 1u);
  EXPECT_EQ(b.mapped_pages(), 1u);
}

}  // namespace
}  // namespace hpusim::testing
