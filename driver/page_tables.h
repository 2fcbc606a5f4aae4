// The driver's page-table builder: writes and edits the device page tables of every ASID in the
// format of arch/mmu/page_table_format.h, through the small PageTableMemory interface (the
// driver's shadow tables flushed by DMA or MMIO; a backing store in tests).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "arch/mmu/page_table_format.h"

namespace hpusim::driver {

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

}  // namespace hpusim::driver
