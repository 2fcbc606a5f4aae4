// The SRAM's HBM cache (sram.hbm_cache_bytes, Gaudi 3's DCORE caches): its tags, its timing against
// the SRAM's and the HBM's formulas, and data that is always the HBM's, through the card's fabric.
#include <gtest/gtest.h>

#include <set>

#include "hw/sram/cache_tags.h"
#include "tests/memory/memory_fixture.h"

namespace hpusim::testing {
namespace {

using bench::Pattern;
using bench::TrafficSpec;

TEST(CacheTags, EvictsTheLeastRecentlyUsedLineButNeverOneBeingFilled) {
  hw::CacheTags tags(1, 4);
  for (uint64_t line = 0; line < 4; ++line) {
    auto v = tags.install(line);
    ASSERT_TRUE(v);
    EXPECT_FALSE(v->evicted_dirty);
  }
  ASSERT_TRUE(tags.find(0));                  // 1 is now the least recently used
  tags.set_dirty(1, *tags.find(1));           // ... until this touch: 2 is
  tags.set_filling(2, *tags.find(2), true);   // 2 is being filled: 3 goes
  auto v = tags.install(10);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->evicted_line, 3u);
  EXPECT_FALSE(v->evicted_dirty);
  EXPECT_FALSE(tags.find(3));
  v = tags.install(11);   // LRU now 0 (touched before 1)
  ASSERT_TRUE(v);
  EXPECT_EQ(v->evicted_line, 0u);
  v = tags.install(12);   // 1, dirty
  ASSERT_TRUE(v);
  EXPECT_EQ(v->evicted_line, 1u);
  EXPECT_TRUE(v->evicted_dirty);
  // Every way filling: no room.
  for (uint64_t line : {2u, 10u, 11u, 12u}) tags.set_filling(line, *tags.find(line), true);
  EXPECT_FALSE(tags.install(13));
}

TEST(CacheTags, PowerOfTwoStridesSpreadOverTheSets) {
  hw::CacheTags tags(1024, 16);
  // The 128-byte lines of a column of 8 KB rows: a plain modulo index would put them in 16 sets.
  std::set<uint64_t> sets;
  std::set<uint64_t> banks;
  for (uint64_t row = 0; row < 1024; ++row) {
    sets.insert(tags.set_of(row * 64));
    banks.insert(tags.slot(row * 64, 0) % 64);
  }
  EXPECT_GE(sets.size(), 512u);
  EXPECT_EQ(banks.size(), 64u);
  // An aligned run of 64 consecutive lines takes 64 sets that differ in their low bits, so (laid
  // out way-major) the lines sit in 64 different banks of a 64-bank SRAM.
  for (uint64_t first : {4096u, 4096u * 37 + 640}) {
    std::set<uint64_t> banks;
    for (uint64_t line = first; line < first + 64; ++line) banks.insert(tags.slot(line, 3) % 64);
    EXPECT_EQ(banks.size(), 64u) << first;
  }
}

// hl325 with its 64 MB cache (stated, so the tests do not follow a preset edit), or a small one for
// eviction tests.
std::vector<std::string> with_cache(std::vector<std::string> overrides) {
  overrides.insert(overrides.begin(), "sram.hbm_cache_bytes=67108864");
  return overrides;
}
struct CachedCard : MemoryBench {
  explicit CachedCard(const std::vector<std::string>& overrides = {}) : MemoryBench(with_cache(overrides), "hl325") {}
  hw::HbmCache& cache() { return *system.hbm_cache(); }
  uint64_t dram(uint64_t offset) const { return card.memory_map().dram_user_base() + offset; }
};

TEST(HbmCache, ASecondReadHitsAtTheSramsLatency) {
  CachedCard b;
  ASSERT_NE(b.system.hbm_cache(), nullptr);
  const uint64_t address = b.dram(0x100000);
  const hw::Picoseconds miss = b.probe.access_and_wait(false, address, 256);
  const hw::Picoseconds hit = b.probe.access_and_wait(false, address, 256);
  const hw::Picoseconds expected = b.system.sram().unloaded_latency_ps(256) + 2 * b.fabric_latency() +
                                   b.master_port_time(256);
  EXPECT_EQ(hit, expected);
  EXPECT_GT(miss, hit + b.system.hbm().unloaded_read_latency_ps());
  EXPECT_EQ(b.cache().stats().read_misses, 2u);
  EXPECT_EQ(b.cache().stats().read_hits, 2u);
  EXPECT_EQ(b.cache().stats().fills, 1u);   // two consecutive lines, one HBM read
  EXPECT_EQ(b.system.hbm().stats().read_bytes, 256u);
}

TEST(HbmCache, ReadsOfALineBeingFilledWaitForTheSameFill) {
  CachedCard b;
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  const uint64_t address = b.dram(0x200000);
  auto& first = b.probe.issue(false, address, 128, hw::now_ps());
  auto& second = b.probe.issue(false, address + 64, 64, hw::now_ps() + 2000);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));
  ASSERT_TRUE(first.done && second.done);
  EXPECT_EQ(b.cache().stats().fills, 1u);
  EXPECT_EQ(b.cache().stats().hits_under_fill, 1u);
  EXPECT_EQ(b.system.hbm().stats().reads, 1u);
  // The second leaves when the line is in: at most a few SRAM cycles after the first.
  EXPECT_GE(second.done_ps, first.done_ps);
  EXPECT_LT(second.done_ps - first.done_ps, 20000u);
}

TEST(HbmCache, DirtyLinesAreWrittenBackWhenEvictedAndTheDataIsAlwaysTheHbms) {
  // One set of 16 ways: the 17th line evicts the first.
  CachedCard b({"sram.hbm_cache_bytes=2048"});
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  for (uint64_t i = 0; i < 16; ++i) {
    auto& w = b.probe.issue(true, b.dram(i * 128), 128, hw::now_ps(), static_cast<unsigned char>(0x10 + i));
    while (!w.done) sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_NS));
  }
  EXPECT_EQ(b.cache().stats().write_misses, 16u);
  EXPECT_EQ(b.cache().stats().fills, 0u);            // whole lines: no fill
  EXPECT_EQ(b.system.hbm().stats().writes, 0u);      // written only in the cache so far
  EXPECT_EQ(b.cache().tags().dirty_lines(), 16u);
  // The bytes are in the HBM's store all the same.
  uint8_t byte = 0;
  b.system.hbm().store().read(b.dram(5 * 128), &byte, 1);
  EXPECT_EQ(byte, 0x15);

  b.probe.access_and_wait(false, b.dram(16 * 128), 128);   // a read miss evicts line 0
  EXPECT_EQ(b.cache().stats().write_backs, 1u);
  EXPECT_EQ(b.system.hbm().stats().writes, 1u);
  EXPECT_EQ(b.system.hbm().stats().write_bytes, 128u);
  ProbeMaster::Access* back = nullptr;
  b.probe.access_and_wait(false, b.dram(0), 128, &back);   // a miss again, same bytes
  EXPECT_EQ(back->data[0], 0x10);
  EXPECT_EQ(back->data[127], 0x10);
}

TEST(HbmCache, APartialWriteThatMissesGoesThroughToTheHbm) {
  CachedCard b;
  const uint64_t address = b.dram(0x300040);
  b.probe.access_and_wait(true, address, 64);
  EXPECT_EQ(b.cache().stats().write_throughs, 1u);
  EXPECT_EQ(b.system.hbm().stats().write_bytes, 64u);
  EXPECT_EQ(b.cache().tags().valid_lines(), 0u);
}

TEST(HbmCache, AReusedWorkingSetStreamsFromTheSramAboveTheHbmsPeak) {
  CachedCard b;
  TrafficSpec spec;
  spec.pattern = Pattern::kSequential;
  spec.request_bytes = 4096;
  spec.ports = 16;
  spec.window = 16;
  spec.region_base = b.dram(0);
  spec.region_bytes = 8 << 20;
  spec.requests = spec.region_bytes / spec.request_bytes;
  b.generator.run(spec);   // the first pass fills the lines
  const uint64_t hbm_reads = b.system.hbm().stats().read_bytes;
  EXPECT_EQ(hbm_reads, spec.region_bytes);
  spec.requests = 4 * spec.region_bytes / spec.request_bytes;
  auto again = b.generator.run(spec);
  EXPECT_EQ(b.system.hbm().stats().read_bytes, hbm_reads);   // every line hits
  const double hbm_peak = b.system.hbm().peak_bytes_per_second() / 1e9;
  const double sram_peak = b.system.sram().peak_bytes_per_second() / 1e9;
  EXPECT_GT(gbps(again), 1.5 * hbm_peak) << "HBM peak " << hbm_peak << " GB/s, SRAM peak " << sram_peak;
  EXPECT_LE(gbps(again), 1.0001 * sram_peak);
}

// Misses among hits: the cache answers each at its time, so the fabric's ports never hold a miss
// behind a hit answered ahead (which held these reads to 5 % of the HBM's peak; without the cache
// they reach 85 %).
TEST(HbmCache, RandomReadsThroughTheCacheKeepMostOfTheHbmsRate) {
  CachedCard b;
  TrafficSpec spec;
  spec.pattern = Pattern::kRandom;
  spec.request_bytes = 256;
  spec.requests = 30000;
  spec.ports = 16;
  spec.window = 256;   // 4096 in flight
  spec.region_base = b.dram(0);
  spec.region_bytes = 256 << 20;
  const double measured = gbps(b.generator.run(spec));
  const double peak = b.system.hbm().peak_bytes_per_second() / 1e9;
  EXPECT_GT(measured, 0.70 * peak) << measured << " GB/s of " << peak;
  EXPECT_LT(measured, 0.85 * peak);   // nearly all misses, each paying the SRAM's latency too
}

TEST(HbmCache, AnAccessPastTheHbmGetsAnAddressError) {
  CachedCard b;
  const uint64_t end = b.card.memory_map().dram_base() + b.system.dram_size();
  ProbeMaster::Access* a = nullptr;
  b.probe.access_and_wait(false, end - 64, 128, &a);
  EXPECT_EQ(a->status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

TEST(HbmCache, ThePresetRefusesACacheOfPartSetsOrNoScratchpad) {
  EXPECT_THROW(
      {
        try {
          preset::load_preset("hl325", {"sram.hbm_cache_bytes=3000"});
        } catch (const preset::PresetError& e) {
          EXPECT_NE(std::string(e.what()).find("sram.hbm_cache_bytes = 3000 must be a multiple"), std::string::npos)
              << e.what();
          throw;
        }
      },
      preset::PresetError);
  EXPECT_THROW(preset::load_preset("hl325", {"sram.hbm_cache_bytes=100663296"}), preset::PresetError);
  EXPECT_THROW(preset::load_preset("hl325", {"sram.hbm_cache_ways=3"}), preset::PresetError);
  // The scratchpad is what the cache leaves: the driver reports it as the SRAM.
  EXPECT_EQ(preset::sram_scratchpad_bytes(preset::load_preset("hl325")), 32u << 20);
  EXPECT_EQ(preset::sram_scratchpad_bytes(preset::load_preset("hl325", {"sram.hbm_cache_bytes=0"})), 96u << 20);
  EXPECT_EQ(preset::sram_scratchpad_bytes(preset::load_preset("hl225")), 48u << 20);
}

}  // namespace
}  // namespace hpusim::testing
