// The co-simulation clock with a synthetic host program driving a small test device through the
// PCIe link: MMIO stamped with host time, interrupts that wake a waiting host, timeouts, and the
// device never running ahead of the host.
#include <gtest/gtest.h>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstring>
#include <memory>
#include <thread>

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

struct Platform {
  std::unique_ptr<hw::MemorySystem> system;
  std::unique_ptr<TestDevice> device;
  std::unique_ptr<cosim::HostPort> host_port;
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
      p->system->pcie().set_msi_sink(kMsiAddress, [this](uint32_t vector, hw::Picoseconds at) {
        p->msis.emplace_back(vector, at);
        p->host_port->deliver_msi(vector, at);
      });
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
  EXPECT_EQ(sim->host_clock().source(), cosim::HostTimeSource::kMeasured);
}

}  // namespace
}  // namespace hpusim::testing
