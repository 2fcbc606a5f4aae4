// The Mmu on an HL-205 memory system: translation to host memory and DRAM, TLB and PTE-cache
// timing, faults, invalidation, pass-through.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/mmu/mmu_fixture.h"

namespace hpusim::testing {
namespace {

namespace pte = hpusim::pte;
namespace va = hpusim::gaudi1_va;

constexpr uint64_t kP = va::kPmmuStart + 0x10000;     // a PMMU (host) VA
constexpr uint64_t kD = va::kDmmuStart + pte::k2M;    // a DMMU (DRAM) VA

std::vector<unsigned char> host_bytes(MmuBench& b, uint64_t host_address, size_t n) {
  std::vector<unsigned char> v(n);
  b.system.host_memory().read(host_address, v.data(), n);
  return v;
}

TEST(MmuTranslation, PmmuAccessesReachHostMemory) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x123000, 2 * pte::k4K, pte::k4K);
  ProbeMaster::Access* a = nullptr;
  b.access(true, kP + 0x40, 64, &a, 0xAB);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(host_bytes(b, 0x123040, 64), std::vector<unsigned char>(64, 0xAB));
  EXPECT_EQ(host_bytes(b, 0x123000, 64), std::vector<unsigned char>(64, 0));
  // Host data in the second page reads back through the VA.
  std::vector<unsigned char> pattern(64);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 1);
  b.system.host_memory().write(0x124100, pattern.data(), pattern.size());
  b.access(false, kP + 0x1100, 64, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(a->data, pattern);
  // Debug transport translates too.
  std::vector<unsigned char> dbg(64);
  tlm::tlm_generic_payload t;
  t.set_command(tlm::TLM_READ_COMMAND);
  t.set_address(kP + 0x1100);
  t.set_data_ptr(dbg.data());
  t.set_data_length(64);
  t.set_streaming_width(64);
  EXPECT_EQ(b.probe.socket->transport_dbg(t), 64u);
  EXPECT_EQ(dbg, pattern);
  EXPECT_EQ(b.mmu.stats().walks, 2u);   // one per page
  // The second walk finds all five PTEs in the PTE cache: hop0..hop3 are the first walk's, and
  // the two pages' hop4 PTEs (indices 16 and 17) share a 64-byte line. So only the first walk
  // reads through the fabric (it was 10 reads before the PTE cache); the debug walk reads memory
  // untimed and counts nothing.
  EXPECT_EQ(b.mmu.stats().pte_reads, 5u);
  EXPECT_EQ(b.mmu.stats().pte_cache_misses, 5u);
  EXPECT_EQ(b.mmu.stats().pte_cache_hits, 5u);
}

TEST(MmuTranslation, DmmuAccessesReachDramThrough2MPages) {
  MmuBench b;
  b.tables.map(0, kD, 0x40000000, 2 * pte::k2M, pte::k2M);
  ProbeMaster::Access* a = nullptr;
  b.access(true, kD + pte::k2M + 0x1FF000, 128, &a, 0x5A);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  std::vector<unsigned char> dram(128);
  b.system.hbm().store().read(0x40000000 + pte::k2M + 0x1FF000, dram.data(), dram.size());
  EXPECT_EQ(dram, std::vector<unsigned char>(128, 0x5A));
  EXPECT_EQ(b.mmu.stats().pte_reads, 4u);   // a 2 MB walk ends at hop3
  b.access(false, kD + pte::k2M + 0x1FF000, 128, &a);
  EXPECT_EQ(a->data, std::vector<unsigned char>(128, 0x5A));
  EXPECT_EQ(b.mmu.stats().tlb_hits, 1u);
}

TEST(MmuTranslation, PageCrossingRequestIsSplitPerPage) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x200000, pte::k4K, pte::k4K);
  b.tables.map(0, kP + pte::k4K, b.host_base() + 0x300000, pte::k4K, pte::k4K);
  ProbeMaster::Access* a = nullptr;
  b.access(true, kP + pte::k4K - 128, 256, &a, 0xC3);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(host_bytes(b, 0x200F80, 128), std::vector<unsigned char>(128, 0xC3));
  EXPECT_EQ(host_bytes(b, 0x300000, 128), std::vector<unsigned char>(128, 0xC3));
  EXPECT_EQ(host_bytes(b, 0x201000, 16), std::vector<unsigned char>(16, 0));
  EXPECT_EQ(host_bytes(b, 0x300080, 16), std::vector<unsigned char>(16, 0));
  EXPECT_EQ(b.mmu.stats().split_requests, 1u);
  EXPECT_EQ(b.data_port_transactions(), 2u);
  b.access(false, kP + pte::k4K - 128, 256, &a);
  EXPECT_EQ(a->data, std::vector<unsigned char>(256, 0xC3));
}

TEST(MmuTranslation, TlbHitSavesExactlyTheWalk) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x10000, pte::k4K, pte::k4K);
  const hw::Picoseconds first = b.access(false, kP, 64);
  const hw::Picoseconds second = b.access(false, kP + 0x200, 64);
  const auto& s = b.mmu.stats();
  EXPECT_EQ(s.walks, 1u);
  EXPECT_EQ(s.pte_reads, 5u);   // the PTE cache is cold: every hop reads its line
  EXPECT_EQ(s.pte_cache_misses, 5u);
  EXPECT_EQ(s.tlb_misses, 1u);
  EXPECT_EQ(s.tlb_hits, 1u);
  EXPECT_EQ(s.translations, 2u);
  // Each of the five PTE reads crosses the fabric twice.
  EXPECT_GE(s.walk_ps, 5 * 2 * b.system.fabric().latency_ps());
  EXPECT_EQ(first - second, s.walk_ps);
  // A hit costs one MMU cycle on top of the unloaded PCIe read through the fabric.
  const hw::Picoseconds period = hw::period_ps_from_mhz(b.card.fabric().clock_mhz());
  const hw::Picoseconds pcie_port = hw::BandwidthServer(b.card.fabric().pcie_port_bytes_per_cycle(), period).duration_ps(64);
  EXPECT_EQ(second, b.mmu.config().period_ps + b.system.pcie().unloaded_read_latency_ps(64) +
                        2 * b.system.fabric().latency_ps() + pcie_port);
}

TEST(MmuTranslation, PhysicalAddressesPassThrough) {
  MmuBench b;
  ProbeMaster::Access* a = nullptr;
  b.access(true, 0x20000000, 64, &a, 0x11);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  std::vector<unsigned char> dram(64);
  b.system.hbm().store().read(0x20000000, dram.data(), 64);
  EXPECT_EQ(dram, std::vector<unsigned char>(64, 0x11));
  EXPECT_EQ(b.mmu.stats().passthrough, 1u);
  EXPECT_EQ(b.mmu.stats().walks, 0u);
  EXPECT_EQ(b.mmu.stats().translations, 0u);
}

TEST(MmuTranslation, TlbEvictsTheLeastRecentlyUsedPage) {
  hw::MmuConfig config = default_mmu_config();
  config.tlb_entries = 2;
  MmuBench b(config);
  b.tables.map(0, kP, b.host_base(), 3 * pte::k4K, pte::k4K);
  const uint64_t A = kP, B = kP + pte::k4K, C = kP + 2 * pte::k4K;
  for (uint64_t v : {A, B, A, C}) b.access(false, v, 8);   // C evicts B, the least recently used
  EXPECT_EQ(b.mmu.stats().walks, 3u);
  b.access(false, A, 8);
  EXPECT_EQ(b.mmu.stats().walks, 3u);
  b.access(false, B, 8);
  EXPECT_EQ(b.mmu.stats().walks, 4u);
  EXPECT_EQ(b.mmu.tlb_valid_entries(), 2u);
}

TEST(MmuTranslation, AsidSelectsTheTables) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x40000, pte::k4K, pte::k4K);
  b.tables.map(1, kP, b.host_base() + 0x50000, pte::k4K, pte::k4K);
  b.access(true, kP, 8, nullptr, 0x01);
  b.mmu.set_asid(1);
  b.access(true, kP, 8, nullptr, 0x02);
  EXPECT_EQ(host_bytes(b, 0x40000, 8), std::vector<unsigned char>(8, 0x01));
  EXPECT_EQ(host_bytes(b, 0x50000, 8), std::vector<unsigned char>(8, 0x02));
  EXPECT_EQ(b.mmu.stats().walks, 2u);   // the TLB entry of ASID 0 does not serve ASID 1
}

TEST(MmuFault, UnmappedVaFaultsWritesNothingAndTheModelGoesOn) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x70000, pte::k4K, pte::k4K);
  ProbeMaster::Access* a = nullptr;
  const hw::Picoseconds issued = hw::now_ps();
  b.access(true, kP + pte::k4K + 0x20, 64, &a, 0x77);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ASSERT_EQ(b.observer.faults.size(), 1u);
  EXPECT_EQ(b.observer.faults[0].engine, "tpc0");
  EXPECT_EQ(b.observer.faults[0].engine_id, hpusim::regs::engine_id(hpusim::regs::tpc_qman(0)));
  EXPECT_EQ(b.observer.faults[0].va, kP + pte::k4K + 0x20);
  EXPECT_TRUE(b.observer.faults[0].is_write);
  EXPECT_GT(b.observer.faults[0].at, issued);   // after the walk found no PTE
  EXPECT_LE(b.observer.faults[0].at, a->done_ps);
  EXPECT_EQ(b.data_port_transactions(), 0u);
  EXPECT_EQ(b.system.host_memory().pages_touched(), 0u);
  EXPECT_EQ(b.mmu.stats().faults, 1u);

  // A request whose second page is unmapped writes nothing in its first page either.
  b.access(true, kP + pte::k4K - 64, 128, &a, 0x66);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ASSERT_EQ(b.observer.faults.size(), 2u);
  EXPECT_EQ(b.observer.faults[1].va, kP + pte::k4K);
  EXPECT_EQ(b.system.host_memory().pages_touched(), 0u);
  EXPECT_EQ(b.data_port_transactions(), 0u);

  // The next mapped access works.
  b.access(true, kP + 0x100, 64, &a, 0x99);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(host_bytes(b, 0x70100, 64), std::vector<unsigned char>(64, 0x99));
  b.access(false, kP + pte::k4K, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ASSERT_EQ(b.observer.faults.size(), 3u);
  EXPECT_FALSE(b.observer.faults[2].is_write);
}

TEST(MmuFault, InvalidationAfterUnmapMakesTheNextAccessFault) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x80000, pte::k4K, pte::k4K);
  ProbeMaster::Access* a = nullptr;
  b.access(false, kP, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  b.tables.unmap(0, kP, pte::k4K);
  // Without an invalidation the TLB still holds the stale translation, as in hardware.
  b.access(false, kP, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  EXPECT_TRUE(b.observer.faults.empty());
  b.mmu.invalidate_range(kP + 0x800, 16);
  b.access(false, kP, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ASSERT_EQ(b.observer.faults.size(), 1u);
  EXPECT_EQ(b.observer.faults[0].va, kP);

  // Remap elsewhere; invalidate_all drops anything cached; the data goes to the new page.
  b.tables.map(0, kP, b.host_base() + 0x90000, pte::k4K, pte::k4K);
  b.mmu.invalidate_all();
  b.access(true, kP, 8, &a, 0x42);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(host_bytes(b, 0x90000, 8), std::vector<unsigned char>(8, 0x42));
  EXPECT_EQ(host_bytes(b, 0x80000, 8), std::vector<unsigned char>(8, 0));
}

TEST(MmuFault, InvalidateAllDropsStaleTranslations) {
  MmuBench b;
  b.tables.map(0, kD, 0x40000000, pte::k2M, pte::k2M);
  b.access(false, kD, 8);
  b.tables.unmap(0, kD, pte::k2M);
  b.mmu.invalidate_range(kP, pte::k4K);   // another page: the 2 MB entry stays
  ProbeMaster::Access* a = nullptr;
  b.access(false, kD + 0x1000, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
  b.mmu.invalidate_all();
  EXPECT_EQ(b.mmu.tlb_valid_entries(), 0u);
  b.access(false, kD + 0x1000, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ASSERT_EQ(b.observer.faults.size(), 1u);
  EXPECT_EQ(b.observer.faults[0].va, kD + 0x1000);
}

TEST(MmuFault, OutsideTheRangeFaultsWhenPassThroughIsOff) {
  hw::MmuConfig config = default_mmu_config();
  config.passthrough_outside = false;
  MmuBench b(config);
  ProbeMaster::Access* a = nullptr;
  b.access(true, 0x20000000, 64, &a, 0x11);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ASSERT_EQ(b.observer.faults.size(), 1u);
  EXPECT_EQ(b.observer.faults[0].va, 0x20000000u);
  EXPECT_EQ(b.mmu.stats().walks, 0u);
  std::vector<unsigned char> dram(64);
  b.system.hbm().store().read(0x20000000, dram.data(), 64);
  EXPECT_EQ(dram, std::vector<unsigned char>(64, 0));
}

TEST(MmuFault, ResetDisablesTranslationAndEmptiesTheTlb) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x10000, pte::k4K, pte::k4K);
  b.access(false, kP, 8);
  EXPECT_EQ(b.mmu.tlb_valid_entries(), 1u);
  b.mmu.reset();
  EXPECT_FALSE(b.mmu.enabled());
  EXPECT_EQ(b.mmu.tlb_valid_entries(), 0u);
  // Enabled again without hop0 programmed: the walk has no table and faults.
  b.mmu.set_enabled(true);
  ProbeMaster::Access* a = nullptr;
  b.access(false, kP, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(b.observer.faults.size(), 1u);
  b.mmu.set_hop0(0, b.tables.hop0_address(0));
  b.access(false, kP, 8, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
}

// --- PTE cache ---------------------------------------------------------------------------------

TEST(MmuPteCache, SequentialPagesReadOneLinePerEightPages) {
  MmuBench b;
  constexpr uint64_t kPages = 64;
  b.tables.map(0, kP, b.host_base() + 0x400000, kPages * pte::k4K, pte::k4K);
  const hw::Picoseconds cycle = b.mmu.config().period_ps;
  hw::Picoseconds second_walk = 0;
  for (uint64_t page = 0; page < kPages; ++page) {
    const uint64_t walk_ps = b.mmu.stats().walk_ps;
    ProbeMaster::Access* a = nullptr;
    b.access(false, kP + page * pte::k4K + 0x80, 8, &a);
    EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_OK_RESPONSE);
    if (page == 1) second_walk = b.mmu.stats().walk_ps - walk_ps;
  }
  const auto& s = b.mmu.stats();
  EXPECT_EQ(s.walks, kPages);
  // The first walk reads hop0..hop4 (5 lines); after that hop0..hop3 hit and the hop4 line (8
  // PTEs) is read once per 8 pages. kP's hop4 index is 16, so the 64 pages use 8 whole lines.
  EXPECT_EQ(s.pte_reads, 4 + kPages / 8);
  EXPECT_EQ(s.pte_cache_misses, s.pte_reads);
  EXPECT_EQ(s.pte_cache_hits, 5 * kPages - s.pte_reads);
  // A walk served wholly by the cache costs one lookup per hop and no fabric time.
  EXPECT_EQ(second_walk, 5 * b.mmu.config().lookup_cycles * cycle);
  EXPECT_EQ(b.mmu.pte_cache_valid_lines(), 4 + kPages / 8);
}

TEST(MmuPteCache, DisabledCacheReadsEveryHopOfEveryWalk) {
  hw::MmuConfig config = default_mmu_config();
  config.pte_cache_lines = 0;
  MmuBench b(config);
  constexpr uint64_t kPages = 16;
  b.tables.map(0, kP, b.host_base() + 0x400000, kPages * pte::k4K, pte::k4K);
  hw::Picoseconds second_walk = 0;
  for (uint64_t page = 0; page < kPages; ++page) {
    const uint64_t walk_ps = b.mmu.stats().walk_ps;
    b.access(false, kP + page * pte::k4K, 8);
    if (page == 1) second_walk = b.mmu.stats().walk_ps - walk_ps;
  }
  const auto& s = b.mmu.stats();
  EXPECT_EQ(s.pte_reads, 5 * kPages);
  EXPECT_EQ(s.pte_cache_hits, 0u);
  EXPECT_EQ(s.pte_cache_misses, 0u);
  EXPECT_EQ(b.mmu.pte_cache_valid_lines(), 0u);
  // Five serial reads through the fabric, each crossing it twice.
  EXPECT_GE(second_walk, 5 * 2 * b.system.fabric().latency_ps());
}

TEST(MmuPteCache, InvalidationAndResetEmptyTheCache) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x400000, 8 * pte::k4K, pte::k4K);
  b.access(false, kP, 8);
  b.access(false, kP + pte::k4K, 8);
  EXPECT_EQ(b.mmu.stats().pte_reads, 5u);
  EXPECT_EQ(b.mmu.pte_cache_valid_lines(), 5u);
  b.mmu.invalidate_all();
  EXPECT_EQ(b.mmu.pte_cache_valid_lines(), 0u);
  b.access(false, kP + 2 * pte::k4K, 8);   // a new page: the walk reads every hop again
  EXPECT_EQ(b.mmu.stats().pte_reads, 10u);
  // invalidate_range empties the whole PTE cache, whatever the range.
  b.mmu.invalidate_range(kD, pte::k4K);
  EXPECT_EQ(b.mmu.pte_cache_valid_lines(), 0u);
  b.access(false, kP + 3 * pte::k4K, 8);
  EXPECT_EQ(b.mmu.stats().pte_reads, 15u);
  b.mmu.reset();
  EXPECT_EQ(b.mmu.pte_cache_valid_lines(), 0u);
  EXPECT_EQ(b.mmu.stats().pte_cache_misses, 15u);   // stats are kept
}

TEST(MmuPteCache, CachedPtesAreStaleUntilInvalidated) {
  MmuBench b;
  b.tables.map(0, kP, b.host_base() + 0x100000, 2 * pte::k4K, pte::k4K);
  b.access(false, kP, 8);   // caches the hop4 line, which holds the PTE of kP + 4 KB too
  b.tables.unmap(0, kP + pte::k4K, pte::k4K);
  b.tables.map(0, kP + pte::k4K, b.host_base() + 0x200000, pte::k4K, pte::k4K);
  // Like the hardware, the MMU does not snoop table writes: the old PTE is used.
  b.access(true, kP + pte::k4K, 8, nullptr, 0x31);
  EXPECT_EQ(host_bytes(b, 0x101000, 8), std::vector<unsigned char>(8, 0x31));
  b.mmu.invalidate_all();
  b.access(true, kP + pte::k4K, 8, nullptr, 0x32);
  EXPECT_EQ(host_bytes(b, 0x200000, 8), std::vector<unsigned char>(8, 0x32));
}

TEST(MmuPteCache, LeastRecentlyUsedLineIsEvicted) {
  hw::MmuConfig config = default_mmu_config();
  config.pte_cache_lines = 5;
  MmuBench b(config);
  b.tables.map(0, kP, b.host_base() + 0x400000, 2 * pte::k4K, pte::k4K);
  b.tables.map(0, kD, 0x40000000, pte::k2M, pte::k2M);
  // Walk 1 fills the cache: hop0, then kP's hop1..hop4 lines.
  b.access(false, kP, 8);
  EXPECT_EQ(b.mmu.stats().pte_reads, 5u);
  // Walk 2 (a 2 MB DMMU page) hits the shared hop0 line and reads its own hop1..hop3 lines,
  // evicting the least recently used: kP's hop1, hop2 and hop3 lines (hop0 was just used).
  b.access(false, kD, 8);
  EXPECT_EQ(b.mmu.stats().pte_reads, 8u);
  EXPECT_EQ(b.mmu.stats().pte_cache_hits, 1u);
  // Walk 3 (kP + 4 KB): hop0 hits; hop1..hop3 miss, and so does hop4 because kP's hop4 line was
  // the least recently used when hop1's line came back. (FIFO would have evicted hop0 in walk 2
  // and read 5 lines here.)
  b.access(false, kP + pte::k4K, 8);
  EXPECT_EQ(b.mmu.stats().pte_reads, 12u);
  EXPECT_EQ(b.mmu.stats().pte_cache_hits, 2u);
  EXPECT_EQ(b.mmu.pte_cache_valid_lines(), 5u);
}

}  // namespace
}  // namespace hpusim::testing
