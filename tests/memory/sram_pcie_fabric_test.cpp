// SRAM, PCIe and fabric against the formulas of their models, through the card's fabric.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "tests/memory/memory_fixture.h"

namespace hpusim::testing {
namespace {

using bench::Pattern;
using bench::TrafficSpec;

TEST(Sram, UnloadedLatencyEqualsTheModelFormula) {
  MemoryBench b;
  const uint64_t address = b.card.memory_map().sram_base() + 0x1000;
  const hw::Picoseconds expected = b.system.sram().unloaded_latency_ps(64) + 2 * b.fabric_latency() +
                                   b.master_port_time(64);
  EXPECT_EQ(b.probe.access_and_wait(false, address, 64), expected);
  // A bank moves 128 bytes a cycle: 1024 bytes over 16 banks is still one cycle per bank.
  const hw::Picoseconds expected_1k = b.system.sram().unloaded_latency_ps(1024) + 2 * b.fabric_latency() +
                                      b.master_port_time(1024);
  EXPECT_EQ(b.probe.access_and_wait(false, address, 1024), expected_1k);
  EXPECT_EQ(b.system.sram().unloaded_latency_ps(64), (1 + b.card.sram().latency_cycles()) * 909u);
}

TEST(Sram, StreamingReadsReachPeak) {
  MemoryBench b;
  TrafficSpec spec;
  spec.pattern = Pattern::kSequential;
  spec.request_bytes = 256;
  spec.requests = 50000;
  spec.ports = 16;
  spec.window = 64;
  spec.region_base = b.card.memory_map().sram_base() + 4096;
  spec.region_bytes = 8 << 20;
  auto r = b.generator.run(spec);
  const double peak = b.system.sram().peak_bytes_per_second() / 1e9;
  EXPECT_GE(gbps(r), 0.95 * peak);
  EXPECT_LE(gbps(r), 1.0001 * peak);
}

TEST(Sram, OneBankSerialisesAccesses) {
  MemoryBench b;
  TrafficSpec spec;
  spec.request_bytes = 128;
  spec.requests = 20000;
  spec.ports = 8;
  spec.window = 16;
  spec.region_base = b.card.memory_map().sram_base() + 4096;
  spec.region_bytes = 128;  // every access hits the same bank
  auto r = b.generator.run(spec);
  const double one_bank = 128.0 / 909.0 * 1000.0 / 1000.0;  // bytes per ps -> GB/s: 128 B / 909 ps
  EXPECT_NEAR(gbps(r), one_bank * 1000.0, one_bank * 1000.0 * 0.02);
  EXPECT_GT(b.system.sram().stats().bank_wait_ps, 0u);
}

TEST(Pcie, UnloadedReadAndWriteLatencyEqualTheModelFormula) {
  MemoryBench b;
  const auto& f = b.card.fabric();
  const uint64_t address = b.card.memory_map().host_phys_base() + 0x10000;
  const hw::Picoseconds read = b.system.pcie().unloaded_read_latency_ps(64) + 2 * b.fabric_latency() +
                               b.port_time(f.pcie_port_bytes_per_cycle(), 64);
  EXPECT_EQ(b.probe.access_and_wait(false, address, 64), read);
  // The formula itself: request TLP up, two link crossings, host memory, completion down.
  const double wire_ps_per_byte = 1e12 / (16 * 16e9 * 128.0 / 130.0 / 8.0 * 0.98);
  const double by_hand = 26 * wire_ps_per_byte + 2 * 250000 + 100000 + (64 + 26) * wire_ps_per_byte;
  EXPECT_NEAR(double(b.system.pcie().unloaded_read_latency_ps(64)), by_hand, 2.0);

  const hw::Picoseconds write = b.system.pcie().unloaded_write_latency_ps(64) + 2 * b.fabric_latency() +
                                b.port_time(f.pcie_port_bytes_per_cycle(), 64);
  EXPECT_EQ(b.probe.access_and_wait(true, address, 64), write);
}

TEST(Pcie, StreamingMatchesTheProtocolEfficiency) {
  MemoryBench b;
  for (bool write : {false, true}) {
    for (uint32_t bytes : {256u, 4096u}) {
      TrafficSpec spec;
      spec.request_bytes = bytes;
      spec.write_fraction = write ? 1.0 : 0.0;
      spec.requests = 20000;
      spec.ports = 2;
      spec.window = 64;
      spec.region_base = b.card.memory_map().host_phys_base() + (1ull << 32);
      spec.region_bytes = 64 << 20;
      auto r = b.generator.run(spec);
      const double expected = b.system.pcie().payload_bytes_per_second(bytes, !write) / 1e9;
      EXPECT_NEAR(gbps(r), expected, expected * 0.01) << (write ? "write " : "read ") << bytes;
      // Gen4 x16 is 31.5 GB/s per direction before protocol overhead.
      EXPECT_NEAR(b.system.pcie().raw_bytes_per_second() / 1e9, 31.5077, 0.001);
    }
  }
}

TEST(Pcie, Gen5DoublesTheLinkRate) {
  MemoryBench b({}, "hl325");
  EXPECT_EQ(b.card.pcie().generation(), 5u);
  EXPECT_NEAR(b.system.pcie().raw_bytes_per_second() / 1e9, 63.0154, 0.001);
  TrafficSpec spec;
  spec.request_bytes = 4096;
  spec.requests = 20000;
  spec.ports = 4;
  spec.window = 64;
  spec.region_base = b.card.memory_map().host_phys_base() + (1ull << 32);
  spec.region_bytes = 64 << 20;
  auto r = b.generator.run(spec);
  const double expected = b.system.pcie().payload_bytes_per_second(4096, true) / 1e9;
  EXPECT_NEAR(gbps(r), expected, expected * 0.01);
  EXPECT_GT(gbps(r), 55.0);
}

TEST(Pcie, HostMemoryIsWhatTheDeviceWrites) {
  MemoryBench b;
  const uint64_t host_address = 0x123456780ull;
  ProbeMaster::Access* write = nullptr;
  b.probe.access_and_wait(true, b.card.memory_map().host_phys_base() + host_address, 8, &write);
  (void)write;
  uint64_t seen = 0xffff;
  b.system.host_memory().read(host_address, &seen, 8);
  EXPECT_EQ(seen, 0u);  // the probe writes zeros; now write a pattern
  ProbeMaster::Access& a = b.probe.issue(true, b.card.memory_map().host_phys_base() + host_address, 8, hw::now_ps(), 0xAB);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));
  ASSERT_TRUE(a.done);
  b.system.host_memory().read(host_address, &seen, 8);
  EXPECT_EQ(seen, 0xABABABABABABABABull);
}

TEST(Pcie, DeviceReadsAndWritesPinnedProcessMemory) {
  MemoryBench b;
  constexpr uint64_t kPage = hw::HostMemory::kPinAlignment;
  std::unique_ptr<uint8_t, decltype(&std::free)> owner(static_cast<uint8_t*>(std::aligned_alloc(kPage, 2 * kPage)),
                                                       &std::free);
  uint8_t* buffer = owner.get();
  for (uint64_t i = 0; i < 2 * kPage; ++i) buffer[i] = static_cast<uint8_t>(i * 13 + 1);
  const uint64_t phys = 0x2'4000'0000ull;
  const uint64_t window = b.card.memory_map().host_phys_base();
  b.system.host_memory().pin(phys, buffer, 2 * kPage);
  // Kernel memory just below the pinned range, in the store.
  const uint64_t kernel_word = 0x1122334455667788ull;
  b.system.host_memory().write(phys - 8, &kernel_word, 8);

  // A device read crossing the pinned pages sees the process's data.
  ProbeMaster::Access* read = nullptr;
  b.probe.access_and_wait(false, window + phys + kPage - 100, 256, &read);
  ASSERT_EQ(read->status(), tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(0, std::memcmp(read->data.data(), buffer + kPage - 100, 256));
  // Coherent: what the process writes after pinning is what the device reads next.
  std::memset(buffer + 64, 0x5A, 64);
  b.probe.access_and_wait(false, window + phys + 64, 64, &read);
  for (unsigned char c : read->data) EXPECT_EQ(c, 0x5A);
  // A read from the store into the pinned range is split at the boundary.
  b.probe.access_and_wait(false, window + phys - 8, 16, &read);
  uint64_t low = 0, high = 0;
  std::memcpy(&low, read->data.data(), 8);
  std::memcpy(&high, read->data.data() + 8, 8);
  EXPECT_EQ(low, kernel_word);
  EXPECT_EQ(0, std::memcmp(&high, buffer, 8));

  // A device write lands in the process's buffer, and the part past the range in the store.
  ProbeMaster::Access& write =
      b.probe.issue(true, window + phys + 2 * kPage - 40, 64, hw::now_ps(), 0xC3);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));
  ASSERT_TRUE(write.done);
  EXPECT_EQ(write.status(), tlm::TLM_OK_RESPONSE);
  for (uint64_t i = 2 * kPage - 40; i < 2 * kPage; ++i) EXPECT_EQ(buffer[i], 0xC3) << i;
  EXPECT_EQ(buffer[2 * kPage - 41], static_cast<uint8_t>((2 * kPage - 41) * 13 + 1));
  uint8_t past[24] = {};
  b.system.host_memory().read(phys + 2 * kPage, past, sizeof past);
  for (uint8_t c : past) EXPECT_EQ(c, 0xC3);

  // Unpinned, the device reaches the store again and the buffer no longer changes.
  b.system.host_memory().unpin(phys);
  ProbeMaster::Access& after = b.probe.issue(true, window + phys, 8, hw::now_ps(), 0x0F);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));
  ASSERT_TRUE(after.done);
  EXPECT_EQ(buffer[0], 1);
  uint64_t stored = 0;
  b.system.host_memory().read(phys, &stored, 8);
  EXPECT_EQ(stored, 0x0F0F0F0F0F0F0F0Full);
}

TEST(Fabric, MasterPortBandwidthLimitsOneMaster) {
  MemoryBench b;
  TrafficSpec spec;
  spec.request_bytes = 1024;
  spec.requests = 20000;
  spec.window = 64;
  spec.region_base = b.card.memory_map().sram_base() + 4096;
  spec.region_bytes = 8 << 20;
  spec.ports = 1;
  auto one = b.generator.run(spec);
  spec.ports = 2;
  auto two = b.generator.run(spec);
  const double port = 256.0 / 909.0;  // bytes per ps = GB/s / 1000
  EXPECT_NEAR(gbps(one), port * 1000.0, port * 1000.0 * 0.02);
  EXPECT_NEAR(gbps(two), 2 * port * 1000.0, 2 * port * 1000.0 * 0.02);
}

// Requests of one master port entering the fabric at the same time from different issuers (the
// command processors of one QMAN) take the port in issuer order, whichever call the kernel ran
// first, so a box split between processes (which may run them in another order) times them alike.
TEST(Fabric, OneMastersSameTimeRequestsGoInIssuerOrderWhicheverCallComesFirst) {
  MemoryBench b;
  const uint64_t sram = b.card.memory_map().sram_base() + 4096;
  constexpr uint32_t kBytes = 4096;
  hw::Picoseconds latency[2][2] = {};   // [round][issuer 1 or 2]
  for (int round = 0; round < 2; ++round) {
    const hw::Picoseconds at = hw::now_ps() + 1000000;
    ProbeMaster::Access* access[2] = {};
    sc_core::sc_spawn([&, round, at] {
      sc_core::wait(hw::delay_until(at));
      for (const unsigned issuer : round == 0 ? std::vector<unsigned>{2, 1} : std::vector<unsigned>{1, 2}) {
        access[issuer - 1] = &b.probe.issue(true, sram + issuer * kBytes, kBytes, at, 0x5A, issuer);
      }
    });
    while (access[0] == nullptr || !access[0]->done || !access[1]->done) sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_NS));
    for (int i = 0; i < 2; ++i) latency[round][i] = access[i]->done_ps - at;
  }
  EXPECT_LT(latency[0][0], latency[0][1]) << "issuer 1 first, though issuer 2's call came first";
  EXPECT_EQ(latency[0][0], latency[1][0]);
  EXPECT_EQ(latency[0][1], latency[1][1]);
}

TEST(Fabric, UnmappedAndOverrunningAccessesGetAddressErrors) {
  MemoryBench b;
  ProbeMaster::Access* a = nullptr;
  // Between the end of DRAM and SRAM nothing is mapped.
  b.probe.access_and_wait(false, 0x4000000000ull, 64, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  // Running off the end of SRAM.
  const uint64_t sram_end = b.card.memory_map().sram_base() + b.card.sram().size_bytes();
  b.probe.access_and_wait(false, sram_end - 32, 64, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  // CFG space with no register block attached.
  b.probe.access_and_wait(false, b.card.memory_map().cfg_base() + 0x100, 4, &a);
  EXPECT_EQ(a->payload.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(b.system.fabric().unmapped_accesses(), 2u);
}

TEST(Fabric, DeviceMapRoutesEachRegionToItsMemory) {
  MemoryBench b;
  const auto& map = b.card.memory_map();
  struct Region {
    uint64_t device_address;
    std::function<void(uint64_t, void*, uint64_t)> read;   // of the memory's contents
    uint64_t store_address;
  };
  auto reader = [](auto& store) {
    return [&store](uint64_t address, void* data, uint64_t bytes) { store.read(address, data, bytes); };
  };
  std::vector<Region> regions = {
      {map.dram_user_base() + 0x1000, reader(b.system.hbm().store()), map.dram_user_base() + 0x1000},
      {map.sram_base() + 0x2000, reader(b.system.sram().store()), map.sram_base() + 0x2000},
      {map.host_phys_base() + 0x3000, reader(b.system.host_memory()), 0x3000},
  };
  unsigned char value = 0x11;
  for (const Region& r : regions) {
    ProbeMaster::Access& a = b.probe.issue(true, r.device_address, 16, hw::now_ps(), value);
    sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));
    ASSERT_TRUE(a.done);
    EXPECT_EQ(a.payload.get_response_status(), tlm::TLM_OK_RESPONSE);
    unsigned char seen[16] = {};
    r.read(r.store_address, seen, 16);
    for (unsigned char c : seen) EXPECT_EQ(c, value);
    value += 0x11;
  }
}

}  // namespace
}  // namespace hpusim::testing
