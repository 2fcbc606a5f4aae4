// The device page-table format of hpusim's MMU and a builder that writes it.
//
// The format follows the Gaudi 1 MMU as the public habanalabs driver shows it (see README.md):
// five hops of 4 KB tables of 8-byte PTEs, indexed by VA bits [49:48] (hop0), [47:39] (hop1),
// [38:30] (hop2), [29:21] (hop3) and [20:12] (hop4). A PTE holds a physical address in bits
// [63:12] and flags in [11:0]: bit 0 present, bit 11 last. A 2 MB page ends the walk at hop3
// (present | last); a 4 KB page at hop4. Hop0 tables, one per ASID, sit at the start of the
// page-table region (hop0(asid) = region_base + asid * 4 KB), as the driver places them.
//
// PageTableBuilder is plain C++: the driver and tests use it to write tables into device memory
// through the small PageTableMemory interface (a backing store, DMA or MMIO writes).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/backing_store/backing_store.h"

namespace hpusim::hw {

namespace pte {
constexpr uint64_t kPresent = 0x1;
constexpr uint64_t kLast = 0x800;
constexpr uint64_t kFlagsMask = 0xFFF;
constexpr uint64_t kAddressMask = ~kFlagsMask;
constexpr uint64_t kSize = 8;
constexpr uint64_t kTableBytes = 4096;
constexpr uint32_t kEntriesPerTable = 512;
constexpr uint32_t kHops = 5;
// Shift of the VA field each hop indexes; hop0 indexes 2 bits, the others 9.
constexpr uint32_t kHopShift[kHops] = {48, 39, 30, 21, 12};
constexpr uint64_t kHopIndexMask[kHops] = {0x3, 0x1FF, 0x1FF, 0x1FF, 0x1FF};
constexpr uint32_t kVaBits = 50;   // VAs at or above 2^50 cannot be mapped
constexpr uint64_t k4K = uint64_t{1} << 12;
constexpr uint64_t k2M = uint64_t{1} << 21;

inline uint32_t hop_index(uint64_t va, uint32_t hop) {
  return static_cast<uint32_t>((va >> kHopShift[hop]) & kHopIndexMask[hop]);
}
}  // namespace pte

// Gaudi 1 device VA layout (VA_HOST_SPACE): the lower half is the PMMU range (host memory,
// 4 KB pages), the upper half the "DMMU" range (2 MB pages; device DRAM in hpusim).
namespace gaudi1_va {
constexpr uint64_t kHostSpaceStart = 0x1000000000000ull;
constexpr uint64_t kHostSpaceEnd = 0x3FF8000000000ull;   // exclusive
constexpr uint64_t kHalf = kHostSpaceStart + (kHostSpaceEnd - kHostSpaceStart) / 2;
constexpr uint64_t kPmmuStart = kHostSpaceStart, kPmmuEnd = kHalf;
constexpr uint64_t kDmmuStart = kHalf, kDmmuEnd = kHostSpaceEnd;
constexpr uint32_t kMaxAsid = 2;
}  // namespace gaudi1_va

// Where page tables live: 8-byte aligned 64-bit accesses by physical address.
class PageTableMemory {
 public:
  virtual ~PageTableMemory() = default;
  virtual void write64(uint64_t pa, uint64_t value) = 0;
  virtual uint64_t read64(uint64_t pa) = 0;
  // Zeroes a whole table; override when the medium has a faster way (memset DMA).
  virtual void zero(uint64_t pa, uint64_t bytes) {
    for (uint64_t off = 0; off < bytes; off += pte::kSize) write64(pa + off, 0);
  }
};

// PageTableMemory over a backing store whose addresses are device physical addresses.
class StorePageTableMemory : public PageTableMemory {
 public:
  explicit StorePageTableMemory(mem::BackingStore& store) : store_(store) {}
  void write64(uint64_t pa, uint64_t value) override { store_.write(pa, &value, sizeof value); }
  uint64_t read64(uint64_t pa) override {
    uint64_t value = 0;
    store_.read(pa, &value, sizeof value);
    return value;
  }
  void zero(uint64_t pa, uint64_t bytes) override { store_.fill(pa, 0, bytes); }

 private:
  mem::BackingStore& store_;
};

class PageTableError : public std::runtime_error {
 public:
  enum class Kind { kBadArgument, kMisaligned, kOverlap, kNotMapped, kOutOfTables };
  PageTableError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct Translation {
  uint64_t pa = 0;          // physical address of the byte at the VA
  uint64_t page_size = 0;   // 4 KB or 2 MB
};

// Writes and edits the page tables of all ASIDs in one region of device memory:
//   [region_base, region_base + asids * 4 KB)  hop0 tables, one per ASID
//   the rest                                   hop1..hop4 tables, allocated 4 KB at a time
// Hop tables are zeroed when allocated and returned to the pool when their last entry is unmapped.
// Every operation either completes or throws PageTableError leaving the tables unchanged.
class PageTableBuilder {
 public:
  PageTableBuilder(PageTableMemory& memory, uint64_t region_base, uint64_t region_size,
                   uint32_t asids = gaudi1_va::kMaxAsid);

  uint64_t hop0_address(uint32_t asid) const;

  // Maps [va, va + size) to [pa, pa + size) with pages of page_size (4 KB or 2 MB). va, pa and
  // size must be multiples of page_size, size non-zero, and no page of the range already mapped.
  void map(uint32_t asid, uint64_t va, uint64_t pa, uint64_t size, uint64_t page_size);
  // Unmaps [va, va + size): every page in it must be mapped and lie wholly inside the range.
  void unmap(uint32_t asid, uint64_t va, uint64_t size);
  // Software walk of the tables as written in memory.
  std::optional<Translation> translate(uint32_t asid, uint64_t va);
  // Unmaps everything of every ASID and frees all hop tables (hop0 tables are zeroed).
  void clear();

  uint64_t tables_in_use() const { return live_.size(); }   // hop1..hop4 tables
  uint64_t tables_free() const;
  uint64_t mapped_pages() const { return mapped_pages_; }

 private:
  struct Leaf {
    uint64_t pte_address;
    uint64_t pte;
    uint64_t page_size;
  };
  void check_asid(uint32_t asid) const;
  // Finds the PTE that maps `va` (the last-hop entry), or nullopt.
  std::optional<Leaf> find_leaf(uint32_t asid, uint64_t va);
  bool range_is_free(uint32_t asid, uint64_t va, uint64_t page_size);
  void map_page(uint32_t asid, uint64_t va, uint64_t pa, uint64_t page_size);
  void unmap_page(uint32_t asid, uint64_t va);
  uint64_t allocate_table();
  void release_table(uint64_t table);

  PageTableMemory& memory_;
  uint64_t region_base_;
  uint64_t region_size_;
  uint32_t asids_;
  uint64_t next_fresh_;                  // bump pointer of never-used tables
  std::vector<uint64_t> free_tables_;    // released tables, reused last-in first-out
  std::map<uint64_t, uint32_t> live_;    // hop1..hop4 table -> number of present entries
  uint64_t mapped_pages_ = 0;
};

}  // namespace hpusim::hw
