// Sparse contents of a device (or device-reachable host) memory range.
//
// A BackingStore covers the byte range [base, base + size) and keeps its contents in fixed-size
// pages that are allocated, zero-filled, on the first write. Untouched pages read as zero and cost
// nothing, so a 96 GB HBM preset costs only the pages a run actually writes.
//
// Data and timing are separate paths in hpusim: engine models move bytes through a BackingStore
// (optionally through the DMI-style page_for_read / page_for_write fast path) while TLM
// transactions carry addresses, sizes and times through the fabric.
//
// Thread safety: none. A BackingStore must only be used from one thread at a time (all hpusim
// simulation runs on the single simulation thread). Even const reads update an internal
// last-page cache.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace hpusim::mem {

// Thrown for an access that is not fully inside [base, base + size) of a store, or whose
// address + length overflows 64 bits. The message names the store, the address in hex and the
// length; the fields are also available separately.
class AccessError : public std::runtime_error {
 public:
  AccessError(const std::string& store, uint64_t addr, uint64_t len, const std::string& what);

  const std::string& store() const noexcept { return store_; }
  uint64_t addr() const noexcept { return addr_; }
  uint64_t len() const noexcept { return len_; }

 private:
  std::string store_;
  uint64_t addr_;
  uint64_t len_;
};

class BackingStore {
 public:
  // Stores with at most this many pages index pages through one flat table of pointers
  // (8 bytes per page of address space, allocated lazily by the OS); larger stores use a
  // hash map of touched pages with a one-entry last-page cache.
  static constexpr uint64_t kMaxFlatPages = uint64_t{1} << 24;
  static constexpr uint32_t kDefaultPageBytes = 64 * 1024;

  // Covers [base, base + size). page_bytes must be a power of two in [64, 2^30]; size must be
  // non-zero and base + size must not exceed 2^64. Invalid parameters throw
  // std::invalid_argument naming the store. Pages are aligned relative to base.
  BackingStore(std::string name, uint64_t base, uint64_t size,
               uint32_t page_bytes = kDefaultPageBytes);
  ~BackingStore();

  // Pages are owned through raw pointers and cached; the store is neither copyable nor movable.
  // Hold it by value inside its owner or through std::unique_ptr.
  BackingStore(const BackingStore&) = delete;
  BackingStore& operator=(const BackingStore&) = delete;
  BackingStore(BackingStore&&) = delete;
  BackingStore& operator=(BackingStore&&) = delete;

  // Copy len bytes at addr into dst. Untouched pages read as zero and are not allocated.
  void read(uint64_t addr, void* dst, uint64_t len) const;
  // Copy len bytes from src to addr, allocating (zero-filled) pages on first touch.
  void write(uint64_t addr, const void* src, uint64_t len);
  // memset: set len bytes at addr to value. Filling a whole page with 0 releases it; filling
  // part of an untouched page with 0 allocates nothing.
  void fill(uint64_t addr, uint8_t value, uint64_t len);

  // DMI-style fast path for models that move data in chunks. Both return a pointer to the byte
  // at addr inside its page and set *bytes_left_in_page (if non-null) to the number of bytes
  // from addr to the end of that page (or of the store, whichever comes first); the pointer is
  // valid for that many bytes.
  //  - page_for_write allocates the page if needed and never returns nullptr.
  //  - page_for_read returns nullptr for an untouched page, meaning "these bytes read as zero".
  // Pointers stay valid until the page is released: by fill(..., 0, ...) over the whole page,
  // by clear(), or by destruction of the store.
  // addr outside [base, base + size) throws AccessError.
  uint8_t* page_for_write(uint64_t addr, uint64_t* bytes_left_in_page);
  const uint8_t* page_for_read(uint64_t addr, uint64_t* bytes_left_in_page) const;

  // Bytes of page data currently allocated (pages_touched() * page_bytes()); the page table
  // itself is not included.
  uint64_t resident_bytes() const { return pages_touched_ * page_bytes_; }
  // Number of pages currently allocated.
  uint64_t pages_touched() const { return pages_touched_; }
  // Release every page: the whole store reads as zero again (e.g. on a modelled hard reset).
  void clear();

  // True when [addr, addr + len) lies inside the store (len 0 is inside if addr <= end()).
  bool contains(uint64_t addr, uint64_t len) const {
    return addr >= base_ && addr - base_ <= size_ && len <= size_ - (addr - base_);
  }

  const std::string& name() const { return name_; }
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  // One past the last byte. Equals 0 when the store reaches the top of the 64-bit space.
  uint64_t end() const { return base_ + size_; }
  uint32_t page_bytes() const { return page_bytes_; }
  uint64_t page_count() const { return page_count_; }
  bool uses_flat_table() const { return flat_ != nullptr; }

 private:
  void check(uint64_t addr, uint64_t len, const char* op) const;
  // Page holding page index idx, or nullptr when untouched.
  uint8_t* find_page(uint64_t idx) const;
  uint8_t* get_or_alloc_page(uint64_t idx);
  void release_page(uint64_t idx);
  // Bytes from offset off (relative to base) to the end of its page or of the store.
  uint64_t span_in_page(uint64_t off) const;

  std::string name_;
  uint64_t base_;
  uint64_t size_;
  uint32_t page_bytes_;
  uint32_t page_shift_;
  uint64_t page_mask_;
  uint64_t page_count_;
  uint64_t pages_touched_ = 0;

  // Flat mode: one slot per page (calloc'd, so untouched slots cost no resident memory).
  uint8_t** flat_ = nullptr;
  // Hash mode: touched pages only, with a one-entry cache of the last page found.
  std::unordered_map<uint64_t, uint8_t*> map_;
  mutable uint64_t cached_idx_ = 0;
  mutable uint8_t* cached_page_ = nullptr;  // nullptr: cache empty
};

}  // namespace hpusim::mem
