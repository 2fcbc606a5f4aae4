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
    : org_(org), burst_bytes_(timing.burst_bytes), interleave_bytes_(cfg.interleave_bytes), channel_hash_(cfg.channel_hash) {
  auto require_count = [](uint64_t v, const char* what) {
    if (v == 0) throw std::invalid_argument(std::string("HBM address mapper: ") + what + " must be > 0");
  };
  require_count(org.stacks, "stacks");
  require_count(org.channels_per_stack, "channels_per_stack");
  require_count(org.pseudo_channels, "pseudo_channels");
  require_count(org.bank_groups, "bank_groups");
  require_count(org.banks_per_group, "banks_per_group");
  require_count(org.rows, "rows");
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
  interleave_shift_ = log2_exact(cfg.interleave_bytes);
  count_[kStack] = org.stacks;
  count_[kChannel] = org.channels_per_stack;
  count_[kPseudoChannel] = org.pseudo_channels;
  count_[kBankGroup] = org.bank_groups;
  count_[kBank] = org.banks_per_group;
  count_[kRow] = org.rows;
  count_[kColumnHigh] = org.columns >> low_col_bits_;

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

  // Strides, least significant field (last in the string) first.
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t chunks = 1;  // interleave chunks below the current field
  for (int i = static_cast<int>(kNumFields) - 1; i >= 0; --i) {
    const Field f = order[i];
    chunk_stride_[f] = chunks;
    stride_[f] = chunks << interleave_shift_;
    if (count_[f] > kLimit / chunks) {
      throw std::invalid_argument("HBM address mapper: the organization's capacity does not fit in 62 bits");
    }
    chunks *= count_[f];
    pow2_ = pow2_ && is_pow2(count_[f]);
  }
  if (chunks > (kLimit >> interleave_shift_)) {
    throw std::invalid_argument("HBM address mapper: the organization's capacity does not fit in 62 bits");
  }
  capacity_ = chunks << interleave_shift_;
  if (pow2_) {
    for (uint32_t f = 0; f < kNumFields; ++f) {
      chunk_shift_[f] = log2_exact(chunk_stride_[f]);
      shift_[f] = chunk_shift_[f] + interleave_shift_;
      bits_[f] = log2_exact(count_[f]);
    }
  }
}

DramAddress AddressMapper::map(uint64_t offset) const {
  if (offset >= capacity_) {
    throw std::out_of_range("HBM address " + std::to_string(offset) + " is outside the capacity " +
                            std::to_string(capacity_));
  }
  const uint64_t chunk = offset >> interleave_shift_;
  DramAddress a;
  a.stack = digit(chunk, kStack);
  a.channel = digit(chunk, kChannel);
  a.pseudo_channel = digit(chunk, kPseudoChannel);
  a.bank_group = digit(chunk, kBankGroup);
  a.bank = digit(chunk, kBank);
  a.row = digit(chunk, kRow);
  const uint32_t low = static_cast<uint32_t>((offset >> burst_shift_) & ((uint64_t{1} << low_col_bits_) - 1));
  a.column = (digit(chunk, kColumnHigh) << low_col_bits_) | low;
  a.channels_per_stack = org_.channels_per_stack;
  if (channel_hash_) {
    const uint32_t total = total_channels();
    const uint32_t g = (a.global_channel() + channel_rotation(a)) % total;
    a.stack = g / org_.channels_per_stack;
    a.channel = g % org_.channels_per_stack;
  }
  return a;
}

uint32_t AddressMapper::channel_rotation(const DramAddress& a) const {
  uint64_t key = a.row;
  key = key * org_.banks_per_group + a.bank;
  key = key * org_.bank_groups + a.bank_group;
  key = key * org_.pseudo_channels + a.pseudo_channel;
  key = key * count_[kColumnHigh] + (a.column >> low_col_bits_);
  key += 0x9E3779B97F4A7C15ull;
  key = (key ^ (key >> 30)) * 0xBF58476D1CE4E5B9ull;
  key = (key ^ (key >> 27)) * 0x94D049BB133111EBull;
  key ^= key >> 31;
  return static_cast<uint32_t>(key % total_channels());
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
  if (channel_hash_) {
    const uint32_t total = total_channels();
    const uint32_t g = (a.global_channel() + total - channel_rotation(a)) % total;
    DramAddress unhashed = a;
    unhashed.stack = g / org_.channels_per_stack;
    unhashed.channel = g % org_.channels_per_stack;
    AddressMapper plain = *this;
    plain.channel_hash_ = false;
    return plain.offset_of(unhashed);
  }
  check(a.channel, org_.channels_per_stack, "channel");
  check(a.pseudo_channel, org_.pseudo_channels, "pseudo_channel");
  check(a.bank_group, org_.bank_groups, "bank_group");
  check(a.bank, org_.banks_per_group, "bank");
  check(a.row, org_.rows, "row");
  check(a.column, org_.columns, "column");
  uint64_t off = 0;
  off += uint64_t{a.stack} * stride_[kStack];
  off += uint64_t{a.channel} * stride_[kChannel];
  off += uint64_t{a.pseudo_channel} * stride_[kPseudoChannel];
  off += uint64_t{a.bank_group} * stride_[kBankGroup];
  off += uint64_t{a.bank} * stride_[kBank];
  off += uint64_t{a.row} * stride_[kRow];
  off += uint64_t{a.column >> low_col_bits_} * stride_[kColumnHigh];
  off += uint64_t{a.column & ((1u << low_col_bits_) - 1)} << burst_shift_;
  return off;
}

}  // namespace hpusim::hbm
