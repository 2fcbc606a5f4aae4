// The device page-table format of Gaudi 1 as the public habanalabs driver shows it (README.md):
// five hops of 4 KB tables of 8-byte PTEs, indexed by VA bits [49:48] (hop0), [47:39] (hop1),
// [38:30] (hop2), [29:21] (hop3) and [20:12] (hop4). A PTE holds a physical address in bits
// [63:12] and flags in [11:0]: bit 0 present, bit 11 last. A 2 MB page ends the walk at hop3
// (present | last); a 4 KB page at hop4. Hop0 tables, one per ASID, sit at the start of the
// page-table region (hop0(asid) = region_base + asid * 4 KB), as the driver places them.
//
// The driver writes tables in this format (driver/page_tables.h); the MMU model (hw/mmu) walks
// them. Pure C++.
#pragma once

#include <cstdint>

namespace hpusim {

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

}  // namespace hpusim
