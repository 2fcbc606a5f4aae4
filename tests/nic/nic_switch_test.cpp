// Three NIC ports on three cards' memory systems, each on a port of one switch: a packet's way
// through the switch against the formula, two senders into one receiver sharing the switch's
// output port (its line rate bounds them, both streams arrive whole, each into the receives named
// for its source), and a destination no port has. One bench per process, cases in order.
#include <gtest/gtest.h>

#include "hw/nic/nic_switch.h"
#include "hw/nic/nic_wire.h"
#include "tests/nic/nic_bench.h"

namespace hpusim::testing {
namespace {

struct SwitchBench {
  SwitchBench()
      : card(preset::load_preset("hl205")), a("card0", card, 7), b("card1", card, 7), c("card2", card, 7),
        fabric(config()) {
    Side* sides[3] = {&a, &b, &c};
    for (unsigned i = 0; i < 3; ++i) {
      sides[i]->nic->set_address(hw::nic_address(i, 7));
      sides[i]->nic->set_observer(&recorder);
      fabric.attach(*sides[i]->nic, i);
    }
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    for (Side* s : sides) s->write(NicPort::kCfg, 1);
  }
  static hw::NicSwitchConfig config() {
    hw::NicSwitchConfig c;
    c.ports = 3;
    c.gbps = 100;
    c.latency_ps = 400000;
    c.link_latency_ps = 100000;
    c.buffer_packets = 8;
    return c;
  }
  void run_until_idle(Picoseconds limit_ps) { testing::run_until_idle({a.nic.get(), b.nic.get(), c.nic.get()}, limit_ps); }
  preset::Card card;
  Side a, b, c;
  hw::NicSwitch fabric;
  Recorder recorder;
};

SwitchBench& bench() {
  static SwitchBench b;
  return b;
}

// One full packet from card 0 to card 1: its NIC's wire time, the cable to the switch, the
// switch's latency, the output port's wire time and the cable to card 1.
TEST(NicSwitch, APacketCrossesTheSwitchInTheTimeItsHopsAddUpTo) {
  SwitchBench& t = bench();
  const hw::NicPortConfig& nic = t.a.nic->config();
  const hw::NicSwitchConfig& sw = t.fabric.config();
  const std::vector<uint8_t> data = pattern(8192, 5);
  t.a.poke(t.a.dram(0x100000), data);
  t.b.post(hw::NicOp::Recv, t.b.dram(0x100000), 8192, t.b.dram(0x10), 1, hw::nic_address(0, 7));
  t.a.post(hw::NicOp::Send, t.a.dram(0x100000), 8192, 0, 1, hw::nic_address(1, 7));
  t.run_until_idle(100000000);
  ASSERT_EQ(t.recorder.packets.size(), 1u);
  const auto& sent = t.recorder.packets[0];
  ASSERT_EQ(t.recorder.done.size(), 2u);
  const auto& recv = t.recorder.done[0].op.op == hw::NicOp::Recv ? t.recorder.done[0] : t.recorder.done[1];
  const Picoseconds wire = hw::nic_wire_ps(8192, nic);
  const Picoseconds arrival = sent.end + nic.latency_ps + sw.latency_ps + wire + sw.link_latency_ps;
  EXPECT_GT(recv.at, arrival) << "the receive ends after the packet's arrival and its writes";
  EXPECT_LT(recv.at, arrival + 1000000);
  EXPECT_TRUE(t.b.peek(t.b.dram(0x100000), 8192) == data);
  EXPECT_EQ(t.fabric.port_stats(1).packets, 1u);
}

// Cards 0 and 2 each send 1 MiB to card 1 at once: their packets share the switch's port 1, so
// the two streams take at least their wire time at one port's rate, and the port's wire is busy
// for exactly that; each stream lands whole in the receives card 1 posted for its source.
TEST(NicSwitch, TwoSendersShareTheOutputPortAndBothArriveWhole) {
  SwitchBench& t = bench();
  t.recorder = Recorder{};
  const uint32_t bytes = 1u << 20;
  const std::vector<uint8_t> from_a = pattern(bytes, 6), from_c = pattern(bytes, 7);
  t.a.poke(t.a.dram(0x400000), from_a);
  t.c.poke(t.c.dram(0x400000), from_c);
  t.b.post(hw::NicOp::Recv, t.b.dram(0x1000000), bytes, 0, 1, hw::nic_address(2, 7));
  t.b.post(hw::NicOp::Recv, t.b.dram(0x2000000), bytes, 0, 1, hw::nic_address(0, 7));
  const hw::NicSwitchPortStats before = t.fabric.port_stats(1);
  const Picoseconds start = hw::now_ps();
  t.a.post(hw::NicOp::Send, t.a.dram(0x400000), bytes, 0, 1, hw::nic_address(1, 7));
  t.c.post(hw::NicOp::Send, t.c.dram(0x400000), bytes, 0, 1, hw::nic_address(1, 7));
  t.run_until_idle(2000000000);
  ASSERT_TRUE(t.b.nic->engine_idle() && t.a.nic->engine_idle() && t.c.nic->engine_idle());
  EXPECT_TRUE(t.b.peek(t.b.dram(0x2000000), bytes) == from_a) << "card 0's bytes in the receive for card 0";
  EXPECT_TRUE(t.b.peek(t.b.dram(0x1000000), bytes) == from_c) << "card 2's bytes in the receive for card 2";
  const hw::NicSwitchPortStats after = t.fabric.port_stats(1);
  const uint64_t packets = 2 * bytes / 8192;
  EXPECT_EQ(after.packets - before.packets, packets);
  const Picoseconds wire = hw::nic_wire_ps(8192, t.a.nic->config());
  EXPECT_EQ(after.busy_ps - before.busy_ps, packets * wire);
  Picoseconds last = 0;
  for (const auto& d : t.recorder.done) last = std::max(last, d.at);
  EXPECT_GE(last - start, packets * wire) << "both streams through one port";
  EXPECT_LT(last - start, packets * wire * 11 / 10) << "and the port kept busy";
  EXPECT_GT(t.a.nic->stats().credit_stall_ps + t.c.nic->stats().credit_stall_ps, 0u) << "the senders waited on the switch";
  EXPECT_GT(after.max_queue, 1u);
}

// Data for an address no switch port has is dropped (counted), its input buffer slot freed; the
// send never completes (the driver's TDR would end it).
TEST(NicSwitch, ADestinationNoPortHasIsDroppedAndCounted) {
  SwitchBench& t = bench();
  t.a.post(hw::NicOp::Send, t.a.dram(0x400000), 100, 0, 1, hw::nic_address(5, 7));
  sc_core::sc_start(sc_core::sc_time(50, sc_core::SC_US));
  EXPECT_EQ(t.fabric.unroutable(), 1u);
  EXPECT_FALSE(t.a.nic->engine_idle()) << "unacknowledged";
  EXPECT_EQ(t.a.nic->credits(), t.fabric.config().buffer_packets) << "the slot came back";
}

}  // namespace
}  // namespace hpusim::testing
