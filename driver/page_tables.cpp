#include "driver/page_tables.h"

#include <sstream>

#include "arch/hex.h"

namespace hpusim::driver {
namespace {

[[noreturn]] void fail(PageTableError::Kind kind, const std::string& what) {
  throw PageTableError(kind, "page tables: " + what);
}

}  // namespace

PageTableBuilder::PageTableBuilder(PageTableMemory& memory, uint64_t region_base, uint64_t region_size,
                                   uint32_t asids)
    : memory_(memory), region_base_(region_base), region_size_(region_size), asids_(asids) {
  if (asids == 0) fail(PageTableError::Kind::kBadArgument, "at least one ASID is needed");
  if (region_base % pte::kTableBytes != 0 || region_size % pte::kTableBytes != 0) {
    fail(PageTableError::Kind::kMisaligned, "region " + hex(region_base) + "+" + hex(region_size) +
                                                " is not 4 KB aligned");
  }
  if (region_size < (uint64_t{asids} + 1) * pte::kTableBytes || region_base + region_size < region_base) {
    fail(PageTableError::Kind::kBadArgument, "region of " + hex(region_size) + " bytes cannot hold " +
                                                 std::to_string(asids) + " hop0 tables and a hop table");
  }
  next_fresh_ = region_base_ + uint64_t{asids_} * pte::kTableBytes;
  for (uint32_t a = 0; a < asids_; ++a) memory_.zero(hop0_address(a), pte::kTableBytes);
}

uint64_t PageTableBuilder::hop0_address(uint32_t asid) const {
  check_asid(asid);
  return region_base_ + uint64_t{asid} * pte::kTableBytes;
}

void PageTableBuilder::check_asid(uint32_t asid) const {
  if (asid >= asids_) {
    fail(PageTableError::Kind::kBadArgument,
         "ASID " + std::to_string(asid) + " out of range (" + std::to_string(asids_) + " ASIDs)");
  }
}

uint64_t PageTableBuilder::tables_free() const {
  return free_tables_.size() + (region_base_ + region_size_ - next_fresh_) / pte::kTableBytes;
}

uint64_t PageTableBuilder::allocate_table() {
  uint64_t table;
  if (!free_tables_.empty()) {
    table = free_tables_.back();
    free_tables_.pop_back();
  } else if (region_base_ + region_size_ - next_fresh_ >= pte::kTableBytes) {
    table = next_fresh_;
    next_fresh_ += pte::kTableBytes;
  } else {
    fail(PageTableError::Kind::kOutOfTables, "no free hop table in region " + hex(region_base_) + "+" +
                                                 hex(region_size_));
  }
  memory_.zero(table, pte::kTableBytes);
  live_[table] = 0;
  return table;
}

void PageTableBuilder::release_table(uint64_t table) {
  live_.erase(table);
  free_tables_.push_back(table);
}

std::optional<PageTableBuilder::Leaf> PageTableBuilder::find_leaf(uint32_t asid, uint64_t va) {
  if (va >> pte::kVaBits) return std::nullopt;
  uint64_t table = hop0_address(asid);
  for (uint32_t hop = 0; hop < pte::kHops; ++hop) {
    const uint64_t entry = table + pte::hop_index(va, hop) * pte::kSize;
    const uint64_t value = memory_.read64(entry);
    if (!(value & pte::kPresent)) return std::nullopt;
    if (hop == 3 && (value & pte::kLast)) return Leaf{entry, value, pte::k2M};
    if (hop == 4) return Leaf{entry, value, pte::k4K};
    table = value & pte::kAddressMask;
  }
  return std::nullopt;
}

bool PageTableBuilder::range_is_free(uint32_t asid, uint64_t va, uint64_t page_size) {
  const uint32_t last_hop = page_size == pte::k2M ? 3 : 4;
  uint64_t table = hop0_address(asid);
  for (uint32_t hop = 0; hop <= last_hop; ++hop) {
    const uint64_t value = memory_.read64(table + pte::hop_index(va, hop) * pte::kSize);
    if (!(value & pte::kPresent)) return true;
    // A present entry at the last hop is a mapping (or, for 2 MB, a hop4 table with 4 KB pages);
    // a 2 MB leaf on the way to hop4 covers the 4 KB page.
    if (hop == last_hop || (hop == 3 && (value & pte::kLast))) return false;
    table = value & pte::kAddressMask;
  }
  return false;
}

void PageTableBuilder::map_page(uint32_t asid, uint64_t va, uint64_t pa, uint64_t page_size) {
  const uint32_t last_hop = page_size == pte::k2M ? 3 : 4;
  uint64_t table = hop0_address(asid);
  for (uint32_t hop = 0; hop < last_hop; ++hop) {
    const uint64_t entry = table + pte::hop_index(va, hop) * pte::kSize;
    const uint64_t value = memory_.read64(entry);
    if (value & pte::kPresent) {
      table = value & pte::kAddressMask;
      continue;
    }
    const uint64_t child = allocate_table();
    memory_.write64(entry, child | pte::kPresent);
    if (hop > 0) ++live_[table];
    table = child;
  }
  memory_.write64(table + pte::hop_index(va, last_hop) * pte::kSize,
                  (pa & pte::kAddressMask) | pte::kLast | pte::kPresent);
  ++live_[table];
  ++mapped_pages_;
}

void PageTableBuilder::unmap_page(uint32_t asid, uint64_t va) {
  uint64_t tables[pte::kHops];
  uint64_t entries[pte::kHops];
  uint32_t hops = 0;
  uint64_t table = hop0_address(asid);
  for (uint32_t hop = 0; hop < pte::kHops; ++hop) {
    const uint64_t entry = table + pte::hop_index(va, hop) * pte::kSize;
    const uint64_t value = memory_.read64(entry);
    tables[hop] = table;
    entries[hop] = entry;
    hops = hop + 1;
    if (!(value & pte::kPresent)) return;   // checked by the caller; nothing to do
    if (hop == 4 || (hop == 3 && (value & pte::kLast))) break;
    table = value & pte::kAddressMask;
  }
  // Clear the leaf, then every table that became empty and its entry in the parent.
  for (uint32_t hop = hops; hop-- > 0;) {
    memory_.write64(entries[hop], 0);
    if (hop == 0) break;
    if (--live_[tables[hop]] > 0) break;
    release_table(tables[hop]);
  }
  --mapped_pages_;
}

void PageTableBuilder::map(uint32_t asid, uint64_t va, uint64_t pa, uint64_t size, uint64_t page_size) {
  check_asid(asid);
  const std::string what = "map " + hex(va) + "+" + hex(size) + " -> " + hex(pa);
  if (page_size != pte::k4K && page_size != pte::k2M) {
    fail(PageTableError::Kind::kBadArgument, what + ": page size " + hex(page_size) + " is not 4 KB or 2 MB");
  }
  if (size == 0) fail(PageTableError::Kind::kBadArgument, what + ": empty range");
  if (va % page_size || pa % page_size || size % page_size) {
    fail(PageTableError::Kind::kMisaligned, what + ": not aligned to the page size " + hex(page_size));
  }
  if (va + size < va || ((va + size - 1) >> pte::kVaBits) || pa + size < pa) {
    fail(PageTableError::Kind::kBadArgument, what + ": outside the 50-bit VA space or 64-bit PA space");
  }
  for (uint64_t off = 0; off < size; off += page_size) {
    if (!range_is_free(asid, va + off, page_size)) {
      fail(PageTableError::Kind::kOverlap, what + ": VA " + hex(va + off) + " is already mapped");
    }
  }
  uint64_t done = 0;
  try {
    for (; done < size; done += page_size) map_page(asid, va + done, pa + done, page_size);
  } catch (const PageTableError&) {
    for (uint64_t off = 0; off < done; off += page_size) unmap_page(asid, va + off);
    throw;
  }
}

void PageTableBuilder::unmap(uint32_t asid, uint64_t va, uint64_t size) {
  check_asid(asid);
  const std::string what = "unmap " + hex(va) + "+" + hex(size);
  if (size == 0) fail(PageTableError::Kind::kBadArgument, what + ": empty range");
  if (va % pte::k4K || size % pte::k4K) fail(PageTableError::Kind::kMisaligned, what + ": not 4 KB aligned");
  if (va + size < va) fail(PageTableError::Kind::kBadArgument, what + ": range wraps");
  std::vector<uint64_t> pages;
  for (uint64_t at = va; at < va + size;) {
    const auto leaf = find_leaf(asid, at);
    if (!leaf) fail(PageTableError::Kind::kNotMapped, what + ": VA " + hex(at) + " is not mapped");
    if (at % leaf->page_size || va + size - at < leaf->page_size) {
      fail(PageTableError::Kind::kMisaligned, what + ": splits the 2 MB page at " + hex(at & ~(leaf->page_size - 1)));
    }
    pages.push_back(at);
    at += leaf->page_size;
  }
  for (uint64_t page : pages) unmap_page(asid, page);
}

std::optional<Translation> PageTableBuilder::translate(uint32_t asid, uint64_t va) {
  check_asid(asid);
  const auto leaf = find_leaf(asid, va);
  if (!leaf) return std::nullopt;
  const uint64_t offset = va & (leaf->page_size - 1);
  return Translation{(leaf->pte & pte::kAddressMask & ~(leaf->page_size - 1)) + offset, leaf->page_size};
}

void PageTableBuilder::clear() {
  for (uint32_t a = 0; a < asids_; ++a) memory_.zero(hop0_address(a), pte::kTableBytes);
  live_.clear();
  free_tables_.clear();
  next_fresh_ = region_base_ + uint64_t{asids_} * pte::kTableBytes;
  mapped_pages_ = 0;
}

}  // namespace hpusim::driver
