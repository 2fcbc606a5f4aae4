#include "hw/backing_store/backing_store.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "arch/hex.h"

namespace hpusim::mem {

namespace {

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint32_t log2_exact(uint64_t v) {
  uint32_t s = 0;
  while ((uint64_t{1} << s) < v) ++s;
  return s;
}

uint8_t* alloc_zero_page(uint32_t bytes) {
  void* p = std::calloc(1, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<uint8_t*>(p);
}

}  // namespace

AccessError::AccessError(const std::string& store, uint64_t addr, uint64_t len,
                         const std::string& what)
    : std::runtime_error(what), store_(store), addr_(addr), len_(len) {}

BackingStore::BackingStore(std::string name, uint64_t base, uint64_t size, uint32_t page_bytes)
    : name_(std::move(name)), base_(base), size_(size), page_bytes_(page_bytes) {
  if (size_ == 0) {
    throw std::invalid_argument("backing store '" + name_ + "': size must be non-zero");
  }
  if (base_ != 0 && size_ - 1 > ~uint64_t{0} - base_) {
    throw std::invalid_argument("backing store '" + name_ + "': base " + hex(base_) + " + size " +
                                hex(size_) + " overflows the 64-bit address space");
  }
  if (!is_pow2(page_bytes_) || page_bytes_ < 64 || page_bytes_ > (uint32_t{1} << 30)) {
    throw std::invalid_argument("backing store '" + name_ + "': page size " +
                                std::to_string(page_bytes_) +
                                " is not a power of two in [64, 2^30]");
  }
  page_shift_ = log2_exact(page_bytes_);
  page_mask_ = uint64_t{page_bytes_} - 1;
  page_count_ = ((size_ - 1) >> page_shift_) + 1;
  if (page_count_ <= kMaxFlatPages) {
    // calloc: large blocks come straight from the OS as zero pages, so table slots that are
    // never written cost address space only.
    flat_ = static_cast<uint8_t**>(std::calloc(page_count_, sizeof(uint8_t*)));
    if (flat_ == nullptr) throw std::bad_alloc();
  }
}

BackingStore::~BackingStore() {
  clear();
  std::free(flat_);
}

void BackingStore::check(uint64_t addr, uint64_t len, const char* op) const {
  if (contains(addr, len)) return;
  std::string what = "backing store '" + name_ + "': " + op + " at " + hex(addr) + " of " +
                     std::to_string(len) + " bytes (" + hex(len) + ") is outside [" +
                     hex(base_) + ", " + hex(base_ + (size_ - 1)) + "]";
  if (len != 0 && addr + len < addr) what += " (address + length overflows)";
  throw AccessError(name_, addr, len, what);
}

uint8_t* BackingStore::find_page(uint64_t idx) const {
  if (flat_ != nullptr) return flat_[idx];
  if (cached_page_ != nullptr && cached_idx_ == idx) return cached_page_;
  auto it = map_.find(idx);
  if (it == map_.end()) return nullptr;
  cached_idx_ = idx;
  cached_page_ = it->second;
  return it->second;
}

uint8_t* BackingStore::get_or_alloc_page(uint64_t idx) {
  if (flat_ != nullptr) {
    uint8_t*& slot = flat_[idx];
    if (slot == nullptr) {
      slot = alloc_zero_page(page_bytes_);
      ++pages_touched_;
    }
    return slot;
  }
  if (cached_page_ != nullptr && cached_idx_ == idx) return cached_page_;
  auto [it, inserted] = map_.try_emplace(idx, nullptr);
  if (inserted) {
    try {
      it->second = alloc_zero_page(page_bytes_);
    } catch (...) {
      map_.erase(it);
      throw;
    }
    ++pages_touched_;
  }
  cached_idx_ = idx;
  cached_page_ = it->second;
  return it->second;
}

void BackingStore::release_page(uint64_t idx) {
  if (flat_ != nullptr) {
    if (flat_[idx] != nullptr) {
      std::free(flat_[idx]);
      flat_[idx] = nullptr;
      --pages_touched_;
    }
    return;
  }
  auto it = map_.find(idx);
  if (it == map_.end()) return;
  if (cached_page_ == it->second) cached_page_ = nullptr;
  std::free(it->second);
  map_.erase(it);
  --pages_touched_;
}

uint64_t BackingStore::span_in_page(uint64_t off) const {
  uint64_t to_page_end = uint64_t{page_bytes_} - (off & page_mask_);
  uint64_t to_store_end = size_ - off;
  return to_page_end < to_store_end ? to_page_end : to_store_end;
}

void BackingStore::read(uint64_t addr, void* dst, uint64_t len) const {
  check(addr, len, "read");
  auto* out = static_cast<uint8_t*>(dst);
  uint64_t off = addr - base_;
  while (len > 0) {
    uint64_t in_page = off & page_mask_;
    uint64_t n = uint64_t{page_bytes_} - in_page;
    if (n > len) n = len;
    const uint8_t* page = find_page(off >> page_shift_);
    if (page != nullptr) {
      std::memcpy(out, page + in_page, n);
    } else {
      std::memset(out, 0, n);
    }
    out += n;
    off += n;
    len -= n;
  }
}

void BackingStore::write(uint64_t addr, const void* src, uint64_t len) {
  check(addr, len, "write");
  const auto* in = static_cast<const uint8_t*>(src);
  uint64_t off = addr - base_;
  while (len > 0) {
    uint64_t in_page = off & page_mask_;
    uint64_t n = uint64_t{page_bytes_} - in_page;
    if (n > len) n = len;
    uint8_t* page = get_or_alloc_page(off >> page_shift_);
    std::memcpy(page + in_page, in, n);
    in += n;
    off += n;
    len -= n;
  }
}

void BackingStore::fill(uint64_t addr, uint8_t value, uint64_t len) {
  check(addr, len, "fill");
  uint64_t off = addr - base_;
  while (len > 0) {
    uint64_t in_page = off & page_mask_;
    uint64_t n = uint64_t{page_bytes_} - in_page;
    if (n > len) n = len;
    uint64_t idx = off >> page_shift_;
    if (value == 0) {
      // A chunk that covers the page from its start to its end (or to the end of the store,
      // for a final partial page) leaves nothing non-zero in it: release the page.
      bool whole_page = in_page == 0 && (n == page_bytes_ || off + n == size_);
      if (whole_page) {
        release_page(idx);
      } else if (uint8_t* page = find_page(idx)) {
        std::memset(page + in_page, 0, n);
      }
    } else {
      std::memset(get_or_alloc_page(idx) + in_page, value, n);
    }
    off += n;
    len -= n;
  }
}

uint8_t* BackingStore::page_for_write(uint64_t addr, uint64_t* bytes_left_in_page) {
  check(addr, 1, "page_for_write");
  uint64_t off = addr - base_;
  uint8_t* page = get_or_alloc_page(off >> page_shift_);
  if (bytes_left_in_page != nullptr) *bytes_left_in_page = span_in_page(off);
  return page + (off & page_mask_);
}

const uint8_t* BackingStore::page_for_read(uint64_t addr, uint64_t* bytes_left_in_page) const {
  check(addr, 1, "page_for_read");
  uint64_t off = addr - base_;
  const uint8_t* page = find_page(off >> page_shift_);
  if (bytes_left_in_page != nullptr) *bytes_left_in_page = span_in_page(off);
  return page != nullptr ? page + (off & page_mask_) : nullptr;
}

void BackingStore::clear() {
  if (flat_ != nullptr) {
    // Stop as soon as every allocated page is freed, so a store touched only near its start
    // does not scan (and fault in) the whole table.
    for (uint64_t i = 0; i < page_count_ && pages_touched_ > 0; ++i) {
      if (flat_[i] != nullptr) {
        std::free(flat_[i]);
        flat_[i] = nullptr;
        --pages_touched_;
      }
    }
  } else {
    for (auto& entry : map_) std::free(entry.second);
    map_.clear();
    pages_touched_ = 0;
  }
  cached_page_ = nullptr;
}

}  // namespace hpusim::mem
