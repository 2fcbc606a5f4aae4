#include "hw/hbm/address_mapper.h"

#include <stdexcept>

namespace hpusim::hbm {
namespace {

const char* const kFieldNames[AddressMapper::kNumFields] = {"st", "ch", "pc", "bg", "ba", "ro", "co"};

bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

uint32_t log2_exact(uint64_t v) {
  uint32_t n = 0;
  while ((uint64_t{1} << n) < v) ++n;
  return n;
}

void require_pow2(uint64_t v, const char* what) {
  if (!is_pow2(v)) {
    throw std::invalid_argument(std::string("HBM address mapper: ") + what + " = " + std::to_string(v) +
                                " is not a power of two");
  }
}

}  // namespace

std::string to_string(const DramAddress& a) {
  return "st" + std::to_string(a.stack) + " ch" + std::to_string(a.channel) + " pc" +
         std::to_string(a.pseudo_channel) + " bg" + std::to_string(a.bank_group) + " ba" +
         std::to_string(a.bank) + " ro" + std::to_string(a.row) + " co" + std::to_string(a.column);
}

AddressMapper::AddressMapper(const Organization& org, const Timing& timing, const ControllerConfig& cfg)
    : org_(org), burst_bytes_(timing.burst_bytes), interleave_bytes_(cfg.interleave_bytes) {
  require_pow2(org.stacks, "stacks");
  require_pow2(org.channels_per_stack, "channels_per_stack");
  require_pow2(org.pseudo_channels, "pseudo_channels");
  require_pow2(org.bank_groups, "bank_groups");
  require_pow2(org.banks_per_group, "banks_per_group");
  require_pow2(org.rows, "rows");
  require_pow2(org.columns, "columns");
  require_pow2(timing.burst_bytes, "burst_bytes");
  require_pow2(cfg.interleave_bytes, "interleave_bytes");
  if (cfg.interleave_bytes < timing.burst_bytes) {
    throw std::invalid_argument("HBM address mapper: interleave_bytes (" + std::to_string(cfg.interleave_bytes) +
                                ") is smaller than burst_bytes (" + std::to_string(timing.burst_bytes) + ")");
  }
  const uint64_t row_bytes = uint64_t{org.columns} * timing.burst_bytes;
  if (cfg.interleave_bytes > row_bytes) {
    throw std::invalid_argument("HBM address mapper: interleave_bytes (" + std::to_string(cfg.interleave_bytes) +
                                ") is larger than one row (" + std::to_string(row_bytes) + " bytes)");
  }

  burst_shift_ = log2_exact(timing.burst_bytes);
  low_col_bits_ = log2_exact(cfg.interleave_bytes / timing.burst_bytes);
  bits_[kStack] = log2_exact(org.stacks);
  bits_[kChannel] = log2_exact(org.channels_per_stack);
  bits_[kPseudoChannel] = log2_exact(org.pseudo_channels);
  bits_[kBankGroup] = log2_exact(org.bank_groups);
  bits_[kBank] = log2_exact(org.banks_per_group);
  bits_[kRow] = log2_exact(org.rows);
  bits_[kColumnHigh] = log2_exact(org.columns) - low_col_bits_;

  // Parse "ro-ba-co-bg-pc-ch-st": most significant first.
  const std::string& s = cfg.address_mapping;
  Field order[kNumFields];
  bool seen[kNumFields] = {};
  uint32_t count = 0;
  size_t pos = 0;
  while (true) {
    const size_t dash = s.find('-', pos);
    const std::string tok = s.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    if (tok.empty()) {
      throw std::invalid_argument("HBM address mapping '" + s + "': empty field (expected fields st, ch, pc, bg, ba, ro, co)");
    }
    int found = -1;
    for (uint32_t f = 0; f < kNumFields; ++f) {
      if (tok == kFieldNames[f]) found = static_cast<int>(f);
    }
    if (found < 0) {
      throw std::invalid_argument("HBM address mapping '" + s + "': unknown field '" + tok +
                                  "' (expected st, ch, pc, bg, ba, ro, co)");
    }
    if (seen[found]) {
      throw std::invalid_argument("HBM address mapping '" + s + "': duplicate field '" + tok + "'");
    }
    seen[found] = true;
    if (count < kNumFields) order[count] = static_cast<Field>(found);
    ++count;
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  for (uint32_t f = 0; f < kNumFields; ++f) {
    if (!seen[f]) {
      throw std::invalid_argument("HBM address mapping '" + s + "': missing field '" + kFieldNames[f] + "'");
    }
  }

  uint32_t shift = burst_shift_ + low_col_bits_;
  for (int i = static_cast<int>(kNumFields) - 1; i >= 0; --i) {
    shift_[order[i]] = shift;
    shift += bits_[order[i]];
  }
  if (shift > 63) {
    throw std::invalid_argument("HBM address mapper: capacity needs " + std::to_string(shift) +
                                " address bits, more than 63");
  }
  capacity_ = uint64_t{1} << shift;
}

DramAddress AddressMapper::map(uint64_t offset) const {
  if (offset >= capacity_) {
    throw std::out_of_range("HBM address " + std::to_string(offset) + " is outside the capacity " +
                            std::to_string(capacity_));
  }
  auto field = [&](Field f) -> uint32_t {
    return static_cast<uint32_t>((offset >> shift_[f]) & ((uint64_t{1} << bits_[f]) - 1));
  };
  DramAddress a;
  a.stack = field(kStack);
  a.channel = field(kChannel);
  a.pseudo_channel = field(kPseudoChannel);
  a.bank_group = field(kBankGroup);
  a.bank = field(kBank);
  a.row = field(kRow);
  const uint32_t low = static_cast<uint32_t>((offset >> burst_shift_) & ((uint64_t{1} << low_col_bits_) - 1));
  a.column = (field(kColumnHigh) << low_col_bits_) | low;
  a.channels_per_stack = org_.channels_per_stack;
  return a;
}

uint64_t AddressMapper::offset_of(const DramAddress& a) const {
  auto check = [](uint32_t v, uint32_t limit, const char* what) {
    if (v >= limit) {
      throw std::out_of_range(std::string("DRAM address field ") + what + " = " + std::to_string(v) +
                              " is outside 0.." + std::to_string(limit - 1));
    }
  };
  check(a.stack, org_.stacks, "stack");
  check(a.channel, org_.channels_per_stack, "channel");
  check(a.pseudo_channel, org_.pseudo_channels, "pseudo_channel");
  check(a.bank_group, org_.bank_groups, "bank_group");
  check(a.bank, org_.banks_per_group, "bank");
  check(a.row, org_.rows, "row");
  check(a.column, org_.columns, "column");
  uint64_t off = 0;
  off |= uint64_t{a.stack} << shift_[kStack];
  off |= uint64_t{a.channel} << shift_[kChannel];
  off |= uint64_t{a.pseudo_channel} << shift_[kPseudoChannel];
  off |= uint64_t{a.bank_group} << shift_[kBankGroup];
  off |= uint64_t{a.bank} << shift_[kBank];
  off |= uint64_t{a.row} << shift_[kRow];
  off |= uint64_t{a.column >> low_col_bits_} << shift_[kColumnHigh];
  off |= uint64_t{a.column & ((1u << low_col_bits_) - 1)} << burst_shift_;
  return off;
}

}  // namespace hpusim::hbm
