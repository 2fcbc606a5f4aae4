#include "hw/pcie/host_memory.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "arch/hex.h"

namespace hpusim::hw {
namespace {

// "[0x1000, 0x3000)"
std::string range(uint64_t start, uint64_t bytes) { return "[" + hex(start) + ", " + hex(start + bytes) + ")"; }

}  // namespace

HostMemory::HostMemory(std::string name, uint64_t size, uint32_t page_bytes)
    : store_(std::move(name), 0, size, page_bytes) {}

void HostMemory::check(uint64_t addr, uint64_t len, const char* op) const {
  if (store_.contains(addr, len)) return;
  std::string what = "host memory '" + name() + "': " + op + " at " + hex(addr) + " of " + std::to_string(len) +
                     " bytes (" + hex(len) + ") is outside [0x0, " + hex(size() - 1) + "]";
  if (len != 0 && addr + len < addr) what += " (address + length overflows)";
  throw mem::AccessError(name(), addr, len, what);
}

template <typename OnPinned, typename OnStore>
void HostMemory::split(uint64_t addr, uint64_t len, OnPinned&& on_pinned, OnStore&& on_store) const {
  // The first range that ends after addr: the one holding addr, else the next one above it.
  auto it = pins_.upper_bound(addr);
  if (it != pins_.begin()) {
    auto before = std::prev(it);
    if (addr - before->first < before->second.bytes) it = before;
  }
  uint64_t done = 0;
  while (len > 0) {
    uint64_t n;
    if (it != pins_.end() && it->first <= addr) {
      const uint64_t offset = addr - it->first;
      n = std::min(len, it->second.bytes - offset);
      on_pinned(it->second.memory + offset, done, n);
      ++it;
    } else {
      n = it == pins_.end() ? len : std::min(len, it->first - addr);
      on_store(addr, done, n);
    }
    addr += n;
    done += n;
    len -= n;
  }
}

void HostMemory::read(uint64_t addr, void* dst, uint64_t len) const {
  check(addr, len, "read");
  auto* out = static_cast<uint8_t*>(dst);
  split(
      addr, len, [&](const uint8_t* pinned, uint64_t at, uint64_t n) { std::memcpy(out + at, pinned, n); },
      [&](uint64_t address, uint64_t at, uint64_t n) { store_.read(address, out + at, n); });
}

void HostMemory::write(uint64_t addr, const void* src, uint64_t len) {
  check(addr, len, "write");
  const auto* in = static_cast<const uint8_t*>(src);
  split(
      addr, len, [&](uint8_t* pinned, uint64_t at, uint64_t n) { std::memcpy(pinned, in + at, n); },
      [&](uint64_t address, uint64_t at, uint64_t n) { store_.write(address, in + at, n); });
}

void HostMemory::fill(uint64_t addr, uint8_t value, uint64_t len) {
  check(addr, len, "fill");
  if (value == 0) {
    // The store is zero under every pinned range (see pin), so a zero fill may cover them too:
    // store pages that straddle a pinned range are then released as they would be unpinned.
    store_.fill(addr, 0, len);
    split(
        addr, len, [&](uint8_t* pinned, uint64_t, uint64_t n) { std::memset(pinned, 0, n); },
        [](uint64_t, uint64_t, uint64_t) {});
    return;
  }
  split(
      addr, len, [&](uint8_t* pinned, uint64_t, uint64_t n) { std::memset(pinned, value, n); },
      [&](uint64_t address, uint64_t, uint64_t n) { store_.fill(address, value, n); });
}

void HostMemory::pin(uint64_t phys, uint8_t* memory, uint64_t bytes) {
  const std::string what = "host memory '" + name() + "': pin of " + std::to_string(bytes) + " bytes at " + hex(phys);
  if (memory == nullptr) throw std::invalid_argument(what + ": memory is null");
  if (bytes == 0) throw std::invalid_argument(what + ": the range is empty");
  if (phys % kPinAlignment != 0) {
    throw std::invalid_argument(what + ": the address is not a multiple of " + std::to_string(kPinAlignment));
  }
  if (bytes % kPinAlignment != 0) {
    throw std::invalid_argument(what + ": the size is not a multiple of " + std::to_string(kPinAlignment));
  }
  if (reinterpret_cast<uintptr_t>(memory) % kPinAlignment != 0) {
    throw std::invalid_argument(what + ": the memory at " + hex(reinterpret_cast<uintptr_t>(memory)) +
                                " is not aligned to " + std::to_string(kPinAlignment));
  }
  if (!store_.contains(phys, bytes)) {
    throw std::invalid_argument(what + ": " + range(phys, bytes) + " is outside [0x0, " + hex(size() - 1) + "]");
  }
  // The ranges around phys: the first starting at or above it, and the one just below.
  auto above = pins_.lower_bound(phys);
  if (above != pins_.end() && above->first - phys < bytes) {
    throw std::invalid_argument(what + ": " + range(phys, bytes) + " overlaps the pinned range " +
                                range(above->first, above->second.bytes));
  }
  if (above != pins_.begin()) {
    auto below = std::prev(above);
    if (phys - below->first < below->second.bytes) {
      throw std::invalid_argument(what + ": " + range(phys, bytes) + " overlaps the pinned range " +
                                  range(below->first, below->second.bytes));
    }
  }
  // The store's bytes under the range are never seen while it is pinned; drop them (and their
  // pages where the range covers whole ones) so the range reads as zero once unpinned. Nothing
  // writes the store under a pinned range, so it stays zero there (fill relies on it).
  store_.fill(phys, 0, bytes);
  pins_.emplace_hint(above, phys, Pin{memory, bytes});
  pinned_bytes_ += bytes;
}

void HostMemory::unpin(uint64_t phys) {
  auto it = pins_.find(phys);
  if (it == pins_.end()) {
    throw std::invalid_argument("host memory '" + name() + "': unpin at " + hex(phys) +
                                ": no pinned range starts there");
  }
  pinned_bytes_ -= it->second.bytes;
  pins_.erase(it);
}

bool HostMemory::pinned(uint64_t phys) const {
  auto it = pins_.upper_bound(phys);
  if (it == pins_.begin()) return false;
  --it;
  return phys - it->first < it->second.bytes;
}

}  // namespace hpusim::hw
