// Byte offset inside the HBM <-> (stack, channel, pseudo-channel, bank group, bank, row, column).
//
// Bit layout from the least significant bit:
//   log2(burst_bytes)                 byte offset inside one burst (dropped by the map)
//   log2(interleave_bytes/burst)      low column bits: `interleave_bytes` stay on one bank row
//   the fields of ControllerConfig::address_mapping, least significant (last in the string) first;
//   "co" there is the remaining high column bits.
// Every size involved must be a power of two; the constructor rejects anything else.
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

  // Throws std::invalid_argument naming the problem (bad mapping string, non-power-of-two size,
  // interleave larger than a row or smaller than a burst).
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

  // Field layout, for diagnostics and tests: bit position (from bit 0 of the byte offset) and width.
  uint32_t field_shift(Field f) const { return shift_[f]; }
  uint32_t field_bits(Field f) const { return bits_[f]; }

 private:
  Organization org_;
  uint32_t burst_bytes_;
  uint32_t interleave_bytes_;
  uint32_t burst_shift_ = 0;      // log2(burst_bytes)
  uint32_t low_col_bits_ = 0;     // log2(interleave_bytes / burst_bytes)
  std::array<uint32_t, kNumFields> shift_{};
  std::array<uint32_t, kNumFields> bits_{};
  uint64_t capacity_ = 0;
};

}  // namespace hpusim::hbm
