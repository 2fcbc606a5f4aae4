// Byte offset inside the HBM <-> (stack, channel, pseudo-channel, bank group, bank, row, column).
//
// Layout from the least significant end:
//   burst_bytes                       bytes inside one burst (dropped by the map)
//   interleave_bytes / burst_bytes    low column index: `interleave_bytes` stay on one bank row
//   the fields of ControllerConfig::address_mapping, least significant (last in the string) first;
//   "co" there is the remaining high column index.
// With channel_hash, the global channel (stack, channel) of each chunk is then rotated by a hash
// of its other fields (a bijection: offset_of() undoes it).
// burst_bytes, interleave_bytes and columns must be powers of two. The other counts (stacks,
// channels, pseudo-channels, bank groups, banks, rows) may be any positive number, e.g. the 6
// stacks of a Gaudi 2 class card: the fields are then the digits of a mixed-radix number. When
// every count is a power of two this is exactly a bit-field layout (field_shift() / field_bits()).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "hw/hbm/hbm_config.h"

namespace hpusim::hbm {

struct DramAddress {
  uint32_t stack = 0;
  uint32_t channel = 0;         // within the stack
  uint32_t pseudo_channel = 0;
  uint32_t bank_group = 0;
  uint32_t bank = 0;            // within the bank group
  uint32_t row = 0;
  uint32_t column = 0;          // burst index within the row
  uint32_t channels_per_stack = 0;  // copied from the Organization so global_channel() needs nothing else

  uint32_t global_channel() const { return stack * channels_per_stack + channel; }
  // Compares the location only (not channels_per_stack).
  bool operator==(const DramAddress& o) const {
    return stack == o.stack && channel == o.channel && pseudo_channel == o.pseudo_channel &&
           bank_group == o.bank_group && bank == o.bank && row == o.row && column == o.column;
  }
  bool operator!=(const DramAddress& o) const { return !(*this == o); }
};

std::string to_string(const DramAddress& a);

class AddressMapper {
 public:
  // The mapping fields, in the order used for the per-field tables below.
  enum Field : uint32_t { kStack = 0, kChannel, kPseudoChannel, kBankGroup, kBank, kRow, kColumnHigh, kNumFields };

  // Throws std::invalid_argument naming the problem: bad mapping string (unknown, duplicate,
  // empty or missing field), a zero count, burst_bytes / interleave_bytes / columns not a power
  // of two, interleave smaller than a burst or larger than a row.
  AddressMapper(const Organization& org, const Timing& timing, const ControllerConfig& cfg);

  // offset must be < capacity_bytes() (std::out_of_range otherwise). Bytes inside a burst map to
  // the same DramAddress.
  DramAddress map(uint64_t offset) const;
  // Inverse of map(): the byte offset of the first byte of that burst. Throws std::out_of_range
  // if a field is outside the organization.
  uint64_t offset_of(const DramAddress& a) const;

  uint64_t capacity_bytes() const { return capacity_; }
  uint32_t burst_bytes() const { return burst_bytes_; }
  uint32_t interleave_bytes() const { return interleave_bytes_; }
  uint32_t total_channels() const { return org_.stacks * org_.channels_per_stack; }
  const Organization& organization() const { return org_; }

  // Field layout, for diagnostics and tests. count: values the field takes; stride: bytes between
  // consecutive values (value v of a field contributes v * stride to the offset).
  uint32_t field_count(Field f) const { return count_[f]; }
  uint64_t field_stride(Field f) const { return stride_[f]; }
  // When every count is a power of two: bit position (from bit 0 of the offset) and width.
  bool all_power_of_two() const { return pow2_; }
  uint32_t field_shift(Field f) const { return shift_[f]; }
  uint32_t field_bits(Field f) const { return bits_[f]; }

 private:
  // Value of field f in the interleave-chunk index `chunk` (offset / interleave_bytes).
  uint32_t digit(uint64_t chunk, Field f) const {
    if (pow2_) return static_cast<uint32_t>((chunk >> chunk_shift_[f]) & (count_[f] - 1u));
    return static_cast<uint32_t>((chunk / chunk_stride_[f]) % count_[f]);
  }

  Organization org_;
  uint32_t burst_bytes_;
  uint32_t interleave_bytes_;
  uint32_t burst_shift_ = 0;       // log2(burst_bytes)
  uint32_t low_col_bits_ = 0;      // log2(interleave_bytes / burst_bytes)
  uint32_t interleave_shift_ = 0;  // log2(interleave_bytes)
  std::array<uint32_t, kNumFields> count_{};
  std::array<uint64_t, kNumFields> stride_{};        // bytes
  std::array<uint64_t, kNumFields> chunk_stride_{};  // interleave chunks
  bool pow2_ = true;
  std::array<uint32_t, kNumFields> chunk_shift_{};   // log2(chunk_stride) when pow2_
  std::array<uint32_t, kNumFields> shift_{};
  std::array<uint32_t, kNumFields> bits_{};
  uint64_t capacity_ = 0;
  bool channel_hash_ = false;
  // The rotation of the global channel for a chunk whose other fields are these.
  uint32_t channel_rotation(const DramAddress& a) const;
};

}  // namespace hpusim::hbm
