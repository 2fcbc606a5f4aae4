#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "hw/hbm/address_mapper.h"
#include "tests/hbm/hbm_timing_sets.h"

namespace hpusim::hbm {
namespace {

const std::vector<std::string> kMappings = {
    "ro-ba-co-bg-pc-ch-st",  // the default: interleave over stacks, channels, pcs, bank groups
    "ro-co-ba-bg-pc-ch-st",
    "st-ch-pc-bg-ba-ro-co",  // whole rows stay together
    "ch-st-ro-ba-bg-co-pc",
    "co-ro-st-ch-ba-pc-bg",
};

std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t> key(const DramAddress& a) {
  return {a.stack, a.channel, a.pseudo_channel, a.bank_group, a.bank, a.row, a.column};
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

TEST(HbmAddressMapper, CapacityIsTheProductOfTheOrganization) {
  Organization org;
  const Timing t = testing::hbm2_1760();
  ControllerConfig cfg;
  AddressMapper m(org, t, cfg);
  const uint64_t expect = uint64_t{org.stacks} * org.channels_per_stack * org.pseudo_channels * org.bank_groups *
                          org.banks_per_group * org.rows * org.columns * t.burst_bytes;
  EXPECT_EQ(m.capacity_bytes(), expect);
  EXPECT_EQ(m.total_channels(), org.stacks * org.channels_per_stack);
  EXPECT_THROW(m.map(expect), std::out_of_range);
  EXPECT_NO_THROW(m.map(expect - 1));
}

class HbmAddressMapperMapping : public ::testing::TestWithParam<std::string> {};

TEST_P(HbmAddressMapperMapping, IsABijectionOnASample) {
  Organization org;
  ControllerConfig cfg;
  cfg.address_mapping = GetParam();
  const Timing t = testing::hbm2_1760();
  AddressMapper m(org, t, cfg);
  std::mt19937_64 rng(42);
  std::set<decltype(key(DramAddress{}))> seen;
  std::set<uint64_t> offsets;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t off = (rng() % m.capacity_bytes()) & ~uint64_t{t.burst_bytes - 1};
    const DramAddress a = m.map(off);
    ASSERT_LT(a.stack, org.stacks);
    ASSERT_LT(a.channel, org.channels_per_stack);
    ASSERT_LT(a.pseudo_channel, org.pseudo_channels);
    ASSERT_LT(a.bank_group, org.bank_groups);
    ASSERT_LT(a.bank, org.banks_per_group);
    ASSERT_LT(a.row, org.rows);
    ASSERT_LT(a.column, org.columns);
    ASSERT_EQ(m.offset_of(a), off) << to_string(a);
    // Every byte of a burst maps to the same burst.
    ASSERT_EQ(m.map(off + t.burst_bytes - 1), a);
    if (offsets.insert(off).second) {
      ASSERT_TRUE(seen.insert(key(a)).second) << "two offsets map to " << to_string(a);
    }
  }
}

// On a tiny organization every burst of the whole capacity is checked.
TEST_P(HbmAddressMapperMapping, IsABijectionExhaustivelyOnATinyOrganization) {
  Organization org;
  org.stacks = 2;
  org.channels_per_stack = 2;
  org.pseudo_channels = 2;
  org.bank_groups = 2;
  org.banks_per_group = 2;
  org.rows = 4;
  org.columns = 8;
  ControllerConfig cfg;
  cfg.address_mapping = GetParam();
  cfg.interleave_bytes = 64;
  const Timing t = testing::hbm2_1760();
  AddressMapper m(org, t, cfg);
  ASSERT_EQ(m.capacity_bytes(), 2ull * 2 * 2 * 2 * 2 * 4 * 8 * 32);
  std::set<decltype(key(DramAddress{}))> seen;
  for (uint64_t off = 0; off < m.capacity_bytes(); off += t.burst_bytes) {
    const DramAddress a = m.map(off);
    ASSERT_TRUE(seen.insert(key(a)).second) << to_string(a);
    ASSERT_EQ(m.offset_of(a), off);
  }
  EXPECT_EQ(seen.size(), m.capacity_bytes() / t.burst_bytes);
}

TEST_P(HbmAddressMapperMapping, IsABijectionExhaustivelyOnAMixedRadixOrganization) {
  Organization org;
  org.stacks = 3;
  org.channels_per_stack = 2;
  org.pseudo_channels = 2;
  org.bank_groups = 3;
  org.banks_per_group = 2;
  org.rows = 5;
  org.columns = 8;
  ControllerConfig cfg;
  cfg.address_mapping = GetParam();
  cfg.interleave_bytes = 64;
  const Timing t = testing::hbm2_1760();
  AddressMapper m(org, t, cfg);
  ASSERT_EQ(m.capacity_bytes(), 3ull * 2 * 2 * 3 * 2 * 5 * 8 * 32);
  std::set<decltype(key(DramAddress{}))> seen;
  for (uint64_t off = 0; off < m.capacity_bytes(); off += t.burst_bytes) {
    const DramAddress a = m.map(off);
    ASSERT_LT(a.stack, org.stacks);
    ASSERT_LT(a.bank_group, org.bank_groups);
    ASSERT_LT(a.row, org.rows);
    ASSERT_TRUE(seen.insert(key(a)).second) << to_string(a);
    ASSERT_EQ(m.offset_of(a), off);
  }
  EXPECT_EQ(seen.size(), m.capacity_bytes() / t.burst_bytes);
}

// Sequential bytes fill interleave_bytes of one bank row, then the least significant field of the
// mapping string (its last entry) advances; each field then advances in string order, right to left.
TEST_P(HbmAddressMapperMapping, SequentialAddressesFillTheInterleaveThenTheNextField) {
  Organization org;
  ControllerConfig cfg;
  cfg.address_mapping = GetParam();
  cfg.interleave_bytes = 256;
  const Timing t = testing::hbm2_1760();
  AddressMapper m(org, t, cfg);
  const uint32_t per_chunk = cfg.interleave_bytes / t.burst_bytes;
  for (uint32_t i = 0; i < per_chunk; ++i) {
    const DramAddress a = m.map(uint64_t{i} * t.burst_bytes);
    EXPECT_EQ(key(a), key(DramAddress{0, 0, 0, 0, 0, 0, i, 0})) << to_string(a);
  }
  // Walk the fields from least to most significant, as the string lists them right to left.
  std::vector<std::string> fields;
  {
    std::string s = GetParam();
    size_t pos = 0;
    while (true) {
      const size_t d = s.find('-', pos);
      fields.push_back(s.substr(pos, d == std::string::npos ? std::string::npos : d - pos));
      if (d == std::string::npos) break;
      pos = d + 1;
    }
  }
  uint64_t step = cfg.interleave_bytes;
  for (auto it = fields.rbegin(); it != fields.rend(); ++it) {
    const DramAddress a = m.map(step);
    DramAddress want{};
    uint64_t count = 0;
    if (*it == "st") { want.stack = 1; count = org.stacks; }
    if (*it == "ch") { want.channel = 1; count = org.channels_per_stack; }
    if (*it == "pc") { want.pseudo_channel = 1; count = org.pseudo_channels; }
    if (*it == "bg") { want.bank_group = 1; count = org.bank_groups; }
    if (*it == "ba") { want.bank = 1; count = org.banks_per_group; }
    if (*it == "ro") { want.row = 1; count = org.rows; }
    if (*it == "co") { want.column = per_chunk; count = org.columns / per_chunk; }
    EXPECT_EQ(key(a), key(want)) << "field " << *it << " at offset " << step << ": got " << to_string(a);
    step *= count;
  }
  EXPECT_EQ(step, m.capacity_bytes());
}

INSTANTIATE_TEST_SUITE_P(Mappings, HbmAddressMapperMapping, ::testing::ValuesIn(kMappings),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

TEST(HbmAddressMapper, DefaultMappingSpreadsSequentialChunksOverChannels) {
  Organization org;
  ControllerConfig cfg;  // "ro-ba-co-bg-pc-ch-st", 256-byte interleave
  AddressMapper m(org, testing::hbm2_1760(), cfg);
  std::set<uint32_t> channels;
  for (uint64_t chunk = 0; chunk < m.total_channels(); ++chunk) channels.insert(m.map(chunk * 256).global_channel());
  EXPECT_EQ(channels.size(), m.total_channels());
  const DramAddress a = m.map(3 * 256 + 64);
  EXPECT_EQ(a.stack, 3u);
  EXPECT_EQ(a.column, 2u);
  EXPECT_EQ(a.channel, 0u);
  EXPECT_EQ(a.global_channel(), 3u * org.channels_per_stack);
  const DramAddress b = m.map(4 * 256);  // stacks wrap: stack 0, channel 1
  EXPECT_EQ(b.stack, 0u);
  EXPECT_EQ(b.channel, 1u);
  EXPECT_EQ(b.global_channel(), 1u);
}

TEST(HbmAddressMapper, BadMappingStringsNameTheField) {
  Organization org;
  const Timing t = testing::hbm2_1760();
  auto build = [&](const std::string& mapping) {
    ControllerConfig cfg;
    cfg.address_mapping = mapping;
    return message_of([&] { AddressMapper m(org, t, cfg); });
  };
  std::string msg = build("ro-ba-co-bg-pc-ch");
  EXPECT_NE(msg.find("missing field 'st'"), std::string::npos) << msg;
  msg = build("ro-ba-co-bg-pc-ch-st-xy");
  EXPECT_NE(msg.find("unknown field 'xy'"), std::string::npos) << msg;
  msg = build("ro-ba-ba-bg-pc-ch-st");
  EXPECT_NE(msg.find("duplicate field 'ba'"), std::string::npos) << msg;
  msg = build("ro-ba-co--bg-pc-ch-st");
  EXPECT_NE(msg.find("empty field"), std::string::npos) << msg;
  msg = build("");
  EXPECT_NE(msg.find("empty field"), std::string::npos) << msg;
  msg = build("RO-ba-co-bg-pc-ch-st");
  EXPECT_NE(msg.find("unknown field 'RO'"), std::string::npos) << msg;
}

TEST(HbmAddressMapper, BurstInterleaveAndColumnsMustBePowersOfTwo) {
  const Timing t = testing::hbm2_1760();
  {
    Organization org;
    org.columns = 24;
    std::string msg = message_of([&] { AddressMapper m(org, t, ControllerConfig{}); });
    EXPECT_NE(msg.find("columns"), std::string::npos) << msg;
    EXPECT_NE(msg.find("power of two"), std::string::npos) << msg;
  }
  {
    Organization org;
    org.bank_groups = 0;
    std::string msg = message_of([&] { AddressMapper m(org, t, ControllerConfig{}); });
    EXPECT_NE(msg.find("bank_groups must be > 0"), std::string::npos) << msg;
  }
  {
    ControllerConfig cfg;
    cfg.interleave_bytes = 96;
    std::string msg = message_of([&] { AddressMapper m(Organization{}, t, cfg); });
    EXPECT_NE(msg.find("interleave_bytes"), std::string::npos) << msg;
  }
  {
    ControllerConfig cfg;
    cfg.interleave_bytes = 16;  // smaller than a burst
    std::string msg = message_of([&] { AddressMapper m(Organization{}, t, cfg); });
    EXPECT_NE(msg.find("smaller than burst_bytes"), std::string::npos) << msg;
  }
  {
    ControllerConfig cfg;
    cfg.interleave_bytes = 2048;  // larger than a 32 x 32-byte row
    std::string msg = message_of([&] { AddressMapper m(Organization{}, t, cfg); });
    EXPECT_NE(msg.find("larger than one row"), std::string::npos) << msg;
  }
  {
    Timing bad = t;
    bad.burst_bytes = 48;
    std::string msg = message_of([&] { AddressMapper m(Organization{}, bad, ControllerConfig{}); });
    EXPECT_NE(msg.find("burst_bytes"), std::string::npos) << msg;
  }
}

// With power-of-two counts the layout is plain bit fields.
TEST(HbmAddressMapper, PowerOfTwoCountsAreBitFields) {
  AddressMapper m(Organization{}, testing::hbm2_1760(), ControllerConfig{});
  ASSERT_TRUE(m.all_power_of_two());
  // Default "ro-ba-co-bg-pc-ch-st": 5 burst bits, 3 low column bits, then st(2) ch(3) pc(1) bg(2)
  // co(2) ba(2) ro(14).
  EXPECT_EQ(m.field_shift(AddressMapper::kStack), 8u);
  EXPECT_EQ(m.field_bits(AddressMapper::kStack), 2u);
  EXPECT_EQ(m.field_shift(AddressMapper::kChannel), 10u);
  EXPECT_EQ(m.field_shift(AddressMapper::kPseudoChannel), 13u);
  EXPECT_EQ(m.field_shift(AddressMapper::kBankGroup), 14u);
  EXPECT_EQ(m.field_shift(AddressMapper::kColumnHigh), 16u);
  EXPECT_EQ(m.field_shift(AddressMapper::kBank), 18u);
  EXPECT_EQ(m.field_shift(AddressMapper::kRow), 20u);
  EXPECT_EQ(m.field_bits(AddressMapper::kRow), 14u);
  for (uint32_t f = 0; f < AddressMapper::kNumFields; ++f) {
    const auto field = static_cast<AddressMapper::Field>(f);
    EXPECT_EQ(m.field_stride(field), uint64_t{1} << m.field_shift(field));
  }
}

// A Gaudi 2 class card has 6 stacks: counts that are not powers of two become mixed-radix digits.
TEST(HbmAddressMapper, NonPowerOfTwoCountsAreMixedRadix) {
  Organization org;
  org.stacks = 6;
  org.rows = 65536;
  const Timing t = testing::hbm2e_3200();
  ControllerConfig cfg;
  cfg.interleave_bytes = 128;
  AddressMapper m(org, t, cfg);
  EXPECT_FALSE(m.all_power_of_two());
  EXPECT_EQ(m.capacity_bytes(), 96ull << 30);
  EXPECT_EQ(m.total_channels(), 48u);
  // Sequential 128-byte chunks walk the 6 stacks, then the channels.
  for (uint64_t chunk = 0; chunk < 12; ++chunk) {
    const DramAddress a = m.map(chunk * 128);
    EXPECT_EQ(a.stack, chunk % 6);
    EXPECT_EQ(a.channel, chunk / 6);
    EXPECT_EQ(a.global_channel(), (chunk % 6) * 8 + chunk / 6);
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t off = (rng() % m.capacity_bytes()) & ~uint64_t{t.burst_bytes - 1};
    const DramAddress a = m.map(off);
    ASSERT_LT(a.stack, 6u);
    ASSERT_EQ(m.offset_of(a), off) << to_string(a);
  }
  EXPECT_THROW(m.map(m.capacity_bytes()), std::out_of_range);
  const DramAddress last = m.map(m.capacity_bytes() - 1);
  EXPECT_EQ(last.stack, 5u);
  EXPECT_EQ(last.row, org.rows - 1);
}

TEST(HbmAddressMapper, InverseRejectsFieldsOutsideTheOrganization) {
  Organization org;
  AddressMapper m(org, testing::hbm2_1760(), ControllerConfig{});
  DramAddress a;
  a.row = org.rows;
  EXPECT_THROW(m.offset_of(a), std::out_of_range);
  a.row = 0;
  a.column = org.columns;
  EXPECT_THROW(m.offset_of(a), std::out_of_range);
}

}  // namespace
}  // namespace hpusim::hbm

namespace hpusim::hbm {
namespace {

// Channel hashing stays a bijection, and a power-of-two stride that the plain map piles onto a
// quarter of the channels of a 6-stack organization reaches them all.
TEST(HbmAddressMapperChannelHash, IsABijectionAndSpreadsPowerOfTwoStrides) {
  Organization org;
  org.stacks = 3;
  org.channels_per_stack = 2;
  org.pseudo_channels = 2;
  org.bank_groups = 2;
  org.banks_per_group = 2;
  org.rows = 5;
  org.columns = 8;
  ControllerConfig cfg;
  cfg.interleave_bytes = 64;
  cfg.channel_hash = true;
  const Timing t = testing::hbm2_1760();
  AddressMapper m(org, t, cfg);
  std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>> seen;
  for (uint64_t off = 0; off < m.capacity_bytes(); off += t.burst_bytes) {
    const DramAddress a = m.map(off);
    ASSERT_TRUE(seen.insert({a.stack, a.channel, a.pseudo_channel, a.bank_group, a.bank, a.row, a.column}).second);
    ASSERT_EQ(m.offset_of(a), off);
  }

  Organization big;
  big.stacks = 6;
  big.channels_per_stack = 8;
  big.pseudo_channels = 2;
  big.bank_groups = 4;
  big.banks_per_group = 4;
  big.rows = 1024;
  big.columns = 32;
  ControllerConfig plain_cfg;
  plain_cfg.interleave_bytes = 256;
  ControllerConfig hashed_cfg = plain_cfg;
  hashed_cfg.channel_hash = true;
  const AddressMapper plain(big, t, plain_cfg), hashed(big, t, hashed_cfg);
  std::set<uint32_t> plain_channels, hashed_channels;
  for (uint64_t k = 0; k < 4096; ++k) {
    plain_channels.insert(plain.map(k * 4096).global_channel());
    hashed_channels.insert(hashed.map(k * 4096).global_channel());
  }
  EXPECT_EQ(plain_channels.size(), 3u) << "4 KB = 16 chunks of 256 B: 16 k mod 48 takes 3 values";
  EXPECT_EQ(hashed_channels.size(), 48u);
}

}  // namespace
}  // namespace hpusim::hbm
