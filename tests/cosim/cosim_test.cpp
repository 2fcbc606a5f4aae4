// The co-simulation clock with a synthetic host program driving a small test device through the
// PCIe link: MMIO stamped with host time, interrupts that wake a waiting host, timeouts, and the
// device never running ahead of the host.
#include <gtest/gtest.h>

#include <systemc>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "hw/card/memory_system.h"
#include "sim/cosim/cosimulation.h"
#include "sim/preset/preset.h"

namespace hpusim::testing {
namespace {

constexpr uint64_t kMsiAddress = 0xFEE00000;
constexpr uint64_t kDeviceOffset = 0x1000;
enum Reg : uint64_t { kScratch = 0x0, kTimerNs = 0x4, kVector = 0x8, kCount = 0xC };

// A device in CFG space: a scratch register, a write counter, and a timer that sends an MSI.
class TestDevice : public sc_core::sc_module, public hw::RegisterBlock {
 public:
  TestDevice(sc_core::sc_module_name name, uint64_t msi_device_address)
      : sc_module(name), socket("socket"), msi_device_address_(msi_device_address) {
    socket.register_nb_transport_bw(this, &TestDevice::backward);
    SC_HAS_PROCESS(TestDevice);
    SC_METHOD(fire);
    sensitive << timer_;
    dont_initialize();
  }

  bool read_register(uint64_t offset, uint32_t& value, hw::Picoseconds) override {
    if (offset == kScratch) value = scratch_;
    else if (offset == kCount) value = count_;
    else return false;
    return true;
  }

  bool write_register(uint64_t offset, uint32_t value, hw::Picoseconds at_ps) override {
    ++count_;
    delivered_at_ps.push_back(hw::now_ps());
    effective_at_ps.push_back(at_ps);
    if (offset == kScratch) scratch_ = value;
    else if (offset == kVector) vector_ = value;
    else if (offset == kTimerNs) {
      fire_at_ps = at_ps + hw::Picoseconds{value} * 1000;
      timer_.notify(hw::delay_until(fire_at_ps));
    } else {
      return false;
    }
    return true;
  }

  tlm_utils::simple_initiator_socket<TestDevice> socket;
  std::vector<hw::Picoseconds> delivered_at_ps;   // SystemC time when the access was delivered
  std::vector<hw::Picoseconds> effective_at_ps;   // time the access reached the register
  hw::Picoseconds fire_at_ps = 0;

 private:
  void fire() {
    msi_.set_command(tlm::TLM_WRITE_COMMAND);
    msi_.set_address(msi_device_address_);
    msi_data_ = vector_;
    msi_.set_data_ptr(reinterpret_cast<unsigned char*>(&msi_data_));
    msi_.set_data_length(4);
    msi_.set_streaming_width(4);
    msi_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->nb_transport_fw(msi_, phase, delay);
  }
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
    return tlm::TLM_COMPLETED;
  }

  sc_core::sc_event timer_;
  tlm::tlm_generic_payload msi_;
  uint32_t msi_data_ = 0;
  uint32_t scratch_ = 0, vector_ = 0, count_ = 0;
  uint64_t msi_device_address_;
};

// A host-side target that records every write and consumes its data 1 us after it arrives, as a
// slow endpoint would: the data must still be there then. Writes at kRejectFrom and above are
// answered with an address error at once.
class RecordingTarget : public sc_core::sc_module {
 public:
  static constexpr uint64_t kRejectFrom = 0xBAD000;
  struct Write {
    uint64_t address;
    hw::Picoseconds arrival_ps;
    std::vector<unsigned char> data;
  };

  explicit RecordingTarget(sc_core::sc_module_name name)
      : sc_module(name), socket("socket"), peq_(this, &RecordingTarget::consume) {
    socket.register_nb_transport_fw(this, &RecordingTarget::forward);
  }

  tlm_utils::simple_target_socket<RecordingTarget> socket;
  std::vector<Write> writes;   // in the order they were consumed

 private:
  static constexpr hw::Picoseconds kConsumeAfterPs = 1000000;

  tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay) {
    if (trans.get_address() >= kRejectFrom) {
      trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      tlm::tlm_phase response = tlm::BEGIN_RESP;
      socket->nb_transport_bw(trans, response, delay);
      return tlm::TLM_ACCEPTED;
    }
    arrivals_.push_back(hw::now_ps() + delay.value());
    peq_.notify(trans, phase, delay + sc_core::sc_time::from_value(kConsumeAfterPs));
    return tlm::TLM_ACCEPTED;
  }
  void consume(tlm::tlm_generic_payload& trans, const tlm::tlm_phase&) {
    const unsigned char* data = trans.get_data_ptr();
    writes.push_back({trans.get_address(), hw::now_ps() - kConsumeAfterPs,
                      std::vector<unsigned char>(data, data + trans.get_data_length())});
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    tlm::tlm_phase response = tlm::BEGIN_RESP;
    sc_core::sc_time none = sc_core::SC_ZERO_TIME;
    socket->nb_transport_bw(trans, response, none);
  }

  tlm_utils::peq_with_cb_and_phase<RecordingTarget> peq_;
  std::vector<hw::Picoseconds> arrivals_;
};

std::vector<unsigned char> pattern(uint64_t bytes, unsigned seed) {
  std::vector<unsigned char> out(bytes);
  for (uint64_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(seed * 31 + i * 7 + i / 256);
  return out;
}

// Posted writes the block becomes: one per 128-byte-aligned piece of [address, address + bytes).
uint64_t block_pieces(uint64_t address, uint64_t bytes) { return (address + bytes - 1) / 128 - address / 128 + 1; }

// Between the link's MSI port and the host port: records each MSI, then passes it on.
class MsiRecorder : public hw::MsiTarget {
 public:
  MsiRecorder(std::vector<std::pair<uint32_t, hw::Picoseconds>>& msis, cosim::HostPort& host) : msis_(msis), host_(host) {}
  void deliver_msi(uint32_t vector, hw::Picoseconds at) override {
    msis_.emplace_back(vector, at);
    host_.deliver_msi(vector, at);
  }

 private:
  std::vector<std::pair<uint32_t, hw::Picoseconds>>& msis_;
  cosim::HostPort& host_;
};

struct Platform {
  std::unique_ptr<hw::MemorySystem> system;
  std::unique_ptr<TestDevice> device;
  std::unique_ptr<cosim::HostPort> host_port;
  std::unique_ptr<MsiRecorder> msi_recorder;
  std::vector<std::pair<uint32_t, hw::Picoseconds>> msis;
  preset::Card card;
};

class CoSim : public ::testing::Test {
 protected:
  void build(cosim::HostTimeSource source) {
    cosim::HostCostsNs costs;
    costs.mmio_write_ns = 150;
    costs.mmio_read_ns = 900;
    costs.irq_latency_ns = 3000;
    sim = std::make_unique<cosim::CoSimulation>(source, costs);
    p = std::make_unique<Platform>();
    p->card = preset::load_preset("hl205", {"hbm.refresh_enabled=false"});
    sim->on_sim_thread([this] {
      const auto& map = p->card.memory_map();
      p->system = std::make_unique<hw::MemorySystem>("card", p->card);
      p->device = std::make_unique<TestDevice>("testdev", map.host_phys_base() + kMsiAddress);
      p->host_port = std::make_unique<cosim::HostPort>("host");
      p->system->bind_master(p->device->socket, "testdev");
      p->host_port->socket.bind(p->system->pcie().host_side);
      p->system->cfg().attach("testdev", map.cfg_base() + kDeviceOffset, 0x100, *p->device);
      p->msi_recorder = std::make_unique<MsiRecorder>(p->msis, *p->host_port);
      p->system->pcie().msi().bind(*p->msi_recorder, kMsiAddress);
    });
    sim->attach(*p->host_port);
    base = p->card.memory_map().cfg_base() + kDeviceOffset;
  }
  void TearDown() override {
    if (sim) sim->on_sim_thread([this] { p.reset(); });
  }

  // Time from a host MMIO write entering the link to it reaching the register.
  hw::Picoseconds inbound_write_path_ps() {
    const auto& f = p->card.fabric();
    const hw::Picoseconds period = hw::period_ps_from_mhz(f.clock_mhz());
    const double wire_bytes_per_ps = p->system->pcie().raw_bytes_per_second() * (1 - p->card.pcie().dllp_overhead_pct() / 100) / 1e12;
    hw::BandwidthServer link(wire_bytes_per_ps, 1);
    hw::BandwidthServer master(f.pcie_port_bytes_per_cycle(), period);
    hw::BandwidthServer cfg(f.cfg_port_bytes_per_cycle(), period);
    return link.duration_ps(4 + p->card.pcie().tlp_overhead_bytes()) + hw::Picoseconds{p->card.pcie().link_latency_ns()} * 1000 +
           std::max(master.duration_ps(4), cfg.duration_ps(4)) + p->system->fabric().latency_ps();
  }

  std::unique_ptr<cosim::CoSimulation> sim;
  std::unique_ptr<Platform> p;
  uint64_t base = 0;
};

TEST_F(CoSim, WritesAreStampedWithHostTimeAndDeliveredWhenTheDeviceGetsThere) {
  build(cosim::HostTimeSource::kModeled);
  for (uint32_t i = 0; i < 5; ++i) sim->mmio_write32(base + kScratch, i);
  EXPECT_EQ(sim->host_now_ps(), 5 * 150000u);  // five posted writes at 150 ns each
  const hw::Picoseconds path = inbound_write_path_ps();
  sim->on_sim_thread([&] {
    ASSERT_EQ(p->device->delivered_at_ps.size(), 5u);
    for (uint32_t i = 0; i < 5; ++i) {
      // The write entered the link at host time i * 150 ns, after the device had reached it...
      EXPECT_EQ(p->device->delivered_at_ps[i], i * 150000u);
      // ...and took effect one path latency later.
      EXPECT_EQ(p->device->effective_at_ps[i], i * 150000u + path);
    }
  });
  // The device has not run ahead of the host: it stopped at the last access.
  EXPECT_EQ(sim->device_now_ps(), 4 * 150000u);
}

TEST_F(CoSim, DeviceWaitsForTheHostUntilTheHostSyncsOrWaits) {
  build(cosim::HostTimeSource::kModeled);
  sim->mmio_write32(base + kScratch, 1);
  sim->charge_ns(50000);  // host busy for 50 us
  EXPECT_EQ(sim->host_now_ps(), 150000u + 50000000u);
  EXPECT_EQ(sim->device_now_ps(), 0u);
  sim->sync_device();
  EXPECT_EQ(sim->device_now_ps(), sim->host_now_ps());
}

TEST_F(CoSim, WaitingHostWakesAtTheInterruptPlusIrqLatency) {
  build(cosim::HostTimeSource::kModeled);
  sim->mmio_write32(base + kVector, 7);
  sim->mmio_write32(base + kTimerNs, 2000);  // MSI 2 us after the write lands
  const uint64_t before = sim->host_now_ps();
  auto vector = sim->wait_for_interrupt(1000000000);
  ASSERT_TRUE(vector.has_value());
  EXPECT_EQ(*vector, 7u);
  ASSERT_EQ(p->msis.size(), 1u);
  const hw::Picoseconds msi_at = p->msis[0].second;
  EXPECT_GT(msi_at, p->device->fire_at_ps);                 // the MSI crossed fabric and link
  EXPECT_GT(p->device->fire_at_ps, before);                  // the device ran ahead only while the host waited
  EXPECT_EQ(sim->host_now_ps(), msi_at + 3000000u);          // woke at the interrupt plus IRQ latency
  EXPECT_EQ(sim->device_now_ps(), msi_at);                   // the device stopped at the interrupt
}

TEST_F(CoSim, WaitingWithoutAnInterruptTimesOut) {
  build(cosim::HostTimeSource::kModeled);
  const uint64_t start = sim->host_now_ps();
  auto vector = sim->wait_for_interrupt(10000000);  // 10 us
  EXPECT_FALSE(vector.has_value());
  EXPECT_EQ(sim->host_now_ps(), start + 10000000u);
  EXPECT_EQ(sim->device_now_ps(), start + 10000000u);
}

TEST_F(CoSim, InterruptsAreTakenInArrivalOrder) {
  build(cosim::HostTimeSource::kModeled);
  sim->mmio_write32(base + kVector, 3);
  sim->mmio_write32(base + kTimerNs, 5000);
  auto first = sim->wait_for_interrupt(1000000000);
  sim->mmio_write32(base + kVector, 4);
  sim->mmio_write32(base + kTimerNs, 100);
  auto second = sim->wait_for_interrupt(1000000000);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(*first, 3u);
  EXPECT_EQ(*second, 4u);
  EXPECT_LT(p->msis[0].second, p->msis[1].second);
}

TEST_F(CoSim, ReadsBlockUntilTheDataReturns) {
  build(cosim::HostTimeSource::kModeled);
  sim->mmio_write32(base + kScratch, 0xC0FFEE);
  const uint64_t issued = sim->host_now_ps();
  EXPECT_EQ(sim->mmio_read32(base + kScratch), 0xC0FFEEu);
  // A non-posted read costs a round trip through link and fabric plus the host's own read cost.
  EXPECT_GT(sim->host_now_ps(), issued + 2 * 250000u + 900000u);
  EXPECT_EQ(sim->mmio_read32(base + kCount), 1u);
}

TEST_F(CoSim, FailedAccessesAreReportedWithTheAddress) {
  build(cosim::HostTimeSource::kModeled);
  try {
    sim->mmio_read32(base + 0x80);  // inside the block, but no such register
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("0x7ffc001080"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sim->mmio_read32(p->card.memory_map().cfg_base() + 0x900000), std::runtime_error);
}

TEST_F(CoSim, BlockWritesLandExactlyTheBytesInSramAndDram) {
  build(cosim::HostTimeSource::kModeled);
  const auto& map = p->card.memory_map();
  struct Case {
    uint64_t address;
    uint64_t bytes;
  };
  const uint64_t sram = map.sram_base() + 0x10000;
  const uint64_t dram = map.dram_user_base() + 0x200000;
  const std::vector<Case> cases = {
      {sram + 0x001, 1},   {sram + 0x103, 4},    {sram + 0x205, 127},  {sram + 0x380, 128},
      {sram + 0x47F, 129}, {sram + 0x1001, 4099}, {dram + 0x003, 1},   {dram + 0x10D, 4},
      {dram + 0x281, 127}, {dram + 0x400, 128},  {dram + 0x5FF, 129},  {dram + 0x2007, 4099},
  };
  constexpr unsigned char kGuard = 0xEE;
  auto store_access = [this, sram_base = map.sram_base()](bool write, uint64_t address, void* data, uint64_t bytes) {
    sim->on_sim_thread([&] {
      mem::BackingStore& store = address >= sram_base ? p->system->sram().store() : p->system->hbm().store();
      write ? store.write(address, data, bytes) : store.read(address, data, bytes);
    });
  };
  for (const Case& c : cases) {
    std::vector<unsigned char> guard(c.bytes + 32, kGuard);
    store_access(true, c.address - 16, guard.data(), guard.size());
  }
  const hw::PcieStats before = sim->on_sim_thread([&] { return p->system->pcie().stats(); });
  uint64_t expected_tlps = 0, expected_wire = 0;
  unsigned seed = 0;
  for (const Case& c : cases) {
    std::vector<unsigned char> data = pattern(c.bytes, ++seed);
    const uint64_t start = sim->host_now_ps();
    sim->mmio_write_block(c.address, data.data(), data.size());
    std::fill(data.begin(), data.end(), 0);   // the block was copied: the source may change
    // mmio_write_ns per 64 bytes, rounded up.
    EXPECT_EQ(sim->host_now_ps() - start, (c.bytes + 63) / 64 * 150000) << c.bytes << " bytes";
    // The device was brought to the block's host time and not past it.
    EXPECT_EQ(sim->device_now_ps(), start);
    expected_tlps += block_pieces(c.address, c.bytes);
    expected_wire += c.bytes + block_pieces(c.address, c.bytes) * p->card.pcie().tlp_overhead_bytes();
  }
  const hw::PcieStats after = sim->on_sim_thread([&] { return p->system->pcie().stats(); });
  EXPECT_EQ(after.mmio_writes - before.mmio_writes, expected_tlps);
  EXPECT_EQ(after.downstream_tlps - before.downstream_tlps, expected_tlps);
  EXPECT_EQ(after.downstream_bytes - before.downstream_bytes, expected_wire);

  // A read behind the posted writes sees them (a read does not pass posted writes).
  uint32_t word = 0;
  std::vector<unsigned char> last = pattern(4099, seed);
  std::memcpy(&word, last.data() + (0x2008 - 0x2007), 4);
  EXPECT_EQ(sim->mmio_read32(dram + 0x2008), word);
  sim->charge_ns(20000);
  sim->sync_device();
  seed = 0;
  for (const Case& c : cases) {
    std::vector<unsigned char> seen(c.bytes + 32);
    store_access(false, c.address - 16, seen.data(), seen.size());
    const std::vector<unsigned char> want = pattern(c.bytes, ++seed);
    for (uint64_t i = 0; i < 16; ++i) {
      EXPECT_EQ(seen[i], kGuard) << "before 0x" << std::hex << c.address;
      EXPECT_EQ(seen[16 + c.bytes + i], kGuard) << "after 0x" << std::hex << c.address;
    }
    EXPECT_TRUE(std::equal(want.begin(), want.end(), seen.begin() + 16)) << "block at 0x" << std::hex << c.address;
  }
}

TEST_F(CoSim, FailedBlockWritesAreReportedWithTheAddress) {
  build(cosim::HostTimeSource::kModeled);
  const uint64_t unmapped = p->card.memory_map().cfg_base() + 0x900000;
  std::vector<unsigned char> data(300, 1);
  const uint64_t start = sim->host_now_ps();
  try {
    sim->mmio_write_block(unmapped + 4, data.data(), data.size());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("0x7ffc900004"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sim->host_now_ps(), start);
  // Nothing happens for an empty block; the writes before keep working.
  sim->mmio_write_block(unmapped, data.data(), 0);
  EXPECT_EQ(sim->host_now_ps(), start);
  sim->mmio_write32(base + kScratch, 5);
  EXPECT_EQ(sim->mmio_read32(base + kScratch), 5u);
}

// A co-simulation whose host port reaches a RecordingTarget in place of a card; a posted write
// costs the host RecordingHost::kWriteNs.
struct RecordingHost {
  static constexpr uint64_t kWriteNs = 100;
  static cosim::HostCostsNs costs() {
    cosim::HostCostsNs c;
    c.mmio_write_ns = kWriteNs;
    return c;
  }
  RecordingHost() : sim(cosim::HostTimeSource::kModeled, costs()) {
    sim.on_sim_thread([&] {
      target = std::make_unique<RecordingTarget>("recorder");
      port = std::make_unique<cosim::HostPort>("host");
      port->socket.bind(target->socket);
    });
    sim.attach(*port);
  }
  ~RecordingHost() {
    sim.on_sim_thread([&] {
      port.reset();
      target.reset();
    });
  }
  cosim::CoSimulation sim;
  std::unique_ptr<RecordingTarget> target;
  std::unique_ptr<cosim::HostPort> port;
};

// The block's pieces as the link sees them, through a recording target in place of the card.
TEST(CoSimBlockWrites, PiecesAreAtMost128BytesAlignedAndAllLeaveAtTheHostTime) {
  RecordingHost host;
  cosim::CoSimulation& sim = host.sim;
  RecordingTarget* target = host.target.get();

  struct Case {
    uint64_t address;
    uint64_t bytes;
  };
  const std::vector<Case> cases = {{0x1001, 1},   {0x2003, 4},   {0x3005, 127},  {0x4080, 128},
                                   {0x507F, 129}, {0x6000, 256}, {0x7001, 4099}, {0x8040, 64}};
  unsigned seed = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.bytes << " bytes at 0x" << std::hex << c.address);
    auto data = std::make_unique<std::vector<unsigned char>>(pattern(c.bytes, ++seed));
    const std::vector<unsigned char> want = *data;
    sim.charge_ns(1000);   // the host does something else first
    const uint64_t at = sim.host_now_ps();
    sim.mmio_write_block(c.address, data->data(), data->size());
    data.reset();   // the caller's buffer goes away before the target reads it
    EXPECT_EQ(sim.host_now_ps() - at, (c.bytes + 63) / 64 * 100000);
    sim.charge_ns(5000);
    sim.sync_device();   // the target consumes the pieces 1 us after they arrive

    std::vector<RecordingTarget::Write> writes;
    sim.on_sim_thread([&] { writes.swap(target->writes); });
    ASSERT_EQ(writes.size(), block_pieces(c.address, c.bytes));
    uint64_t next = c.address;
    std::vector<unsigned char> joined;
    for (size_t i = 0; i < writes.size(); ++i) {
      const auto& w = writes[i];
      EXPECT_EQ(w.arrival_ps, at) << "piece " << i;
      EXPECT_EQ(w.address, next) << "piece " << i;
      EXPECT_LE(w.data.size(), 128u);
      EXPECT_GT(w.data.size(), 0u);
      // Only the first piece may start, and only the last may end, off a 128-byte boundary.
      if (i > 0) {
        EXPECT_EQ(w.address % 128, 0u) << "piece " << i;
      }
      if (i + 1 < writes.size()) {
        EXPECT_EQ((w.address + w.data.size()) % 128, 0u) << "piece " << i;
      }
      next += w.data.size();
      joined.insert(joined.end(), w.data.begin(), w.data.end());
    }
    EXPECT_EQ(joined, want);
  }

  // A piece answered with an error at once fails the call, naming the piece; the rest still go.
  std::vector<unsigned char> data(200, 9);
  const uint64_t rejected = RecordingTarget::kRejectFrom;
  try {
    sim.mmio_write_block(rejected - 100, data.data(), data.size());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("0xbacf9c"), std::string::npos) << e.what();   // the block
    EXPECT_NE(std::string(e.what()).find("failed at 0xbad000"), std::string::npos) << e.what();
  }
  sim.charge_ns(5000);
  sim.sync_device();
  sim.on_sim_thread([&] {
    ASSERT_EQ(target->writes.size(), 1u);   // the piece below the rejected range
    EXPECT_EQ(target->writes[0].data.size(), 100u);
  });
}

TEST_F(CoSim, HostCodeOnOtherThreadsReachesTheDeviceThroughTheSimulationThread) {
  build(cosim::HostTimeSource::kModeled);
  auto writer = [&] {
    for (int i = 0; i < 50; ++i) sim->mmio_write32(base + kScratch, i);
  };
  std::thread a(writer), b(writer);
  a.join();
  b.join();
  EXPECT_EQ(sim->mmio_read32(base + kCount), 100u);
}

// Host threads on their own tracks are kept in step: whatever the threads' scheduling, every
// write reaches the device at its own track's host time, and writes of two tracks at the same
// time go in track order. A reserved track holds the device back until its thread moves on.
TEST(CoSimTracks, TwoThreadsOnTheirOwnTracksReachTheDeviceInHostTimeOrder) {
  RecordingHost host;
  cosim::CoSimulation& sim = host.sim;
  RecordingTarget* target = host.target.get();
  const unsigned a = sim.add_track("a", 1000000);   // both start at 1 us
  const unsigned b = sim.add_track("b", 1000000);
  EXPECT_EQ(sim.track_name(b), "b");
  EXPECT_THROW(sim.bind_thread(7), std::invalid_argument);

  const unsigned c = sim.add_track("c", 1000000);
  // A thread binds a track, lets it go, and another thread may bind it then; a track another
  // thread holds is refused.
  sim.bind_thread(b);
  std::thread other([&] { EXPECT_THROW(sim.bind_thread(b), std::invalid_argument); });
  other.join();
  sim.unbind_thread();

  // Each thread writes its id at its own pace: a every 300 ns of host work, b every 500 ns.
  auto writer = [&](unsigned track, uint32_t id, uint64_t pace_ns, unsigned writes) {
    sim.bind_thread(track);
    for (unsigned i = 0; i < writes; ++i) {
      sim.mmio_write32(0x1000 + id, i);
      sim.charge_ns(pace_ns - RecordingHost::kWriteNs);
      if (i % 3 == 0) std::this_thread::yield();
    }
    sim.unbind_thread();
  };
  std::thread ta(writer, a, 0xA, 300, 20), tc(writer, c, 0xC, 500, 12);
  ta.join();
  tc.join();
  sim.charge_ns(20000000);
  sim.sync_device();
  std::vector<RecordingTarget::Write> writes;
  sim.on_sim_thread([&] { writes.swap(target->writes); });
  ASSERT_EQ(writes.size(), 32u);
  std::vector<std::pair<uint64_t, uint64_t>> want;   // (arrival, address)
  for (unsigned i = 0; i < 20; ++i) want.emplace_back(1000000 + i * 300000ull, 0x100A);
  for (unsigned i = 0; i < 12; ++i) want.emplace_back(1000000 + i * 500000ull, 0x100C);
  std::stable_sort(want.begin(), want.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (size_t i = 0; i < writes.size(); ++i) {
    EXPECT_EQ(writes[i].arrival_ps, want[i].first) << "write " << i;
    EXPECT_EQ(writes[i].address, want[i].second) << "write " << i;   // at equal times, a (lower id) first
  }
  EXPECT_EQ(sim.track_now_ps(a), 1000000 + 20 * 300000ull);
}

// Host locks go to the earliest request in host time (ties in track order), whichever thread the
// OS runs first: here the threads start in the reverse order of their requests. A waiter's clock
// moves to the holder's release.
TEST(CoSimLocks, AreGrantedInHostTimeOrderWhateverTheScheduling) {
  RecordingHost host;
  cosim::CoSimulation& sim = host.sim;
  const unsigned lock = sim.create_lock();
  struct Grant {
    unsigned who;
    uint64_t at_ps;
  };
  uint64_t released = 0;
  for (unsigned round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    // Thread i asks at 1 us + i * 100 ns after the last round and holds the lock for 250 ns.
    constexpr unsigned kThreads = 4;
    const uint64_t start = released + 1000000;
    std::vector<unsigned> tracks;
    for (unsigned i = 0; i < kThreads; ++i) tracks.push_back(sim.add_track("t" + std::to_string(i), start));
    std::vector<Grant> grants;   // in grant order (written under the lock)
    std::vector<std::thread> threads;
    for (unsigned k = 0; k < kThreads; ++k) {
      const unsigned i = kThreads - 1 - k;   // the latest request starts first
      threads.emplace_back([&, i] {
        sim.bind_thread(tracks[i]);
        sim.charge_ns(100 * i);
        sim.lock(lock);
        grants.push_back({i, sim.host_now_ps()});
        sim.charge_ns(250);
        if (round == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        sim.unlock(lock);
        sim.unbind_thread();
      });
      if (round == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(grants.size(), kThreads);
    for (unsigned i = 0; i < kThreads; ++i) {
      EXPECT_EQ(grants[i].who, i);
      const uint64_t asked = start + 100000ull * i;
      EXPECT_EQ(grants[i].at_ps, std::max(asked, released)) << i;
      released = grants[i].at_ps + 250000;
    }
    EXPECT_EQ(sim.track_now_ps(tracks[kThreads - 1]), released);
  }
  EXPECT_THROW(sim.unlock(lock), std::logic_error);
  EXPECT_THROW(sim.lock(99), std::invalid_argument);
  // Recursive for its holder.
  sim.lock(lock);
  sim.lock(lock);
  sim.unlock(lock);
  sim.unlock(lock);
  EXPECT_THROW(sim.unlock(lock), std::logic_error);
}

// A thread waiting for a lock whose holder waits for the device does not hold the device back:
// the holder wakes at its interrupt, and the waiter gets the lock when it lets go.
TEST_F(CoSim, AThreadWaitingForALockDoesNotHoldTheDeviceBack) {
  build(cosim::HostTimeSource::kModeled);
  const unsigned lock = sim->create_lock();
  const unsigned a = sim->add_track("a", 1000000), b = sim->add_track("b", 1000000);
  uint64_t a_woke = 0, a_released = 0, b_got = 0;
  std::thread holder([&] {
    sim->bind_thread(a);
    sim->lock(lock);
    sim->mmio_write32(base + kVector, 3);
    sim->mmio_write32(base + kTimerNs, 5000);   // an MSI 5 us later
    EXPECT_TRUE(sim->wait_for_interrupt(1000000000).has_value());
    a_woke = sim->host_now_ps();
    sim->charge_ns(700);
    a_released = sim->host_now_ps();
    sim->unlock(lock);
    sim->unbind_thread();
  });
  std::thread waiter([&] {
    sim->bind_thread(b);
    sim->charge_ns(1000);   // asks 1 us after the holder took it
    sim->lock(lock);
    b_got = sim->host_now_ps();
    sim->unlock(lock);
    sim->unbind_thread();
  });
  holder.join();
  waiter.join();
  ASSERT_EQ(p->msis.size(), 1u);
  EXPECT_EQ(a_woke, p->msis[0].second + 3000000u);
  EXPECT_EQ(b_got, a_released);
  EXPECT_EQ(a_released, a_woke + 700000u);
}

// await_interrupt takes nothing: every thread waiting on the port wakes at the MSI, and one of
// them takes it (paying the interrupt latency).
TEST_F(CoSim, EveryThreadAwaitingAnInterruptWakesAndOneTakesIt) {
  build(cosim::HostTimeSource::kModeled);
  sim->mmio_write32(base + kVector, 9);
  sim->mmio_write32(base + kTimerNs, 4000);
  const uint64_t start = sim->host_now_ps();
  const unsigned a = sim->add_track("a", start), b = sim->add_track("b", start);
  uint64_t woke[2] = {};
  bool pending[2] = {};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      sim->bind_thread(i == 0 ? a : b);
      pending[i] = sim->await_interrupt(1000000000);
      woke[i] = sim->host_now_ps();
      sim->unbind_thread();
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(p->msis.size(), 1u);
  EXPECT_TRUE(pending[0]);
  EXPECT_TRUE(pending[1]);
  EXPECT_EQ(woke[0], p->msis[0].second);
  EXPECT_EQ(woke[1], p->msis[0].second);
  // Still there to be taken, by the thread that handles it.
  const auto vector = sim->wait_for_interrupt(1000000000);
  ASSERT_TRUE(vector.has_value());
  EXPECT_EQ(*vector, 9u);
  EXPECT_EQ(sim->host_now_ps(), p->msis[0].second + 3000000u);
  EXPECT_FALSE(sim->wait_for_interrupt(0).has_value());
}

TEST_F(CoSim, MeasuredHostTimeCountsHostWorkAndIgnoresModeledCosts) {
  build(cosim::HostTimeSource::kMeasured);
  sim->charge_ns(1000000000);  // ignored in measured mode
  sim->mmio_write32(base + kScratch, 1);
  const uint64_t t0 = sim->host_now_ps();
  EXPECT_LT(t0, 1000000000000u);
  volatile double x = 1;
  for (int i = 0; i < 20000000; ++i) x = x * 1.0000001 + 1e-9;  // real host work
  sim->mmio_write32(base + kScratch, 2);
  EXPECT_GT(sim->host_now_ps(), t0);
  EXPECT_EQ(sim->time_source(), cosim::HostTimeSource::kMeasured);
}

}  // namespace
}  // namespace hpusim::testing
