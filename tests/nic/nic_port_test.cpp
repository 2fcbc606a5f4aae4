// Two NIC ports on two cards' memory systems, joined by their link, programmed through the fabric
// as a QMAN would: the wire time of every packet against the formula ((payload + overhead) at the
// line rate), the goodput that follows, data bit-exact at the receiver, a receiver that posts late
// and in odd pieces losing nothing (the sender stalls on credits), a port without a peer, and the
// errors. One bench per test process (SystemC elaborates once), so the cases share it in order.
#include <gtest/gtest.h>

#include <systemc>

#include <cstring>
#include <memory>
#include <vector>

#include "tests/nic/nic_bench.h"

namespace hpusim::testing {
namespace {

struct Bench {
  Bench() : card(preset::load_preset("hl205")), a("card0", card, 0), b("card1", card, 0) {
    NicPort::connect(*a.nic, *b.nic);
    a.nic->set_observer(&recorder);
    b.nic->set_observer(&recorder);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    a.write(NicPort::kCfg, 1);
    b.write(NicPort::kCfg, 1);
  }
  void run_until_idle(Picoseconds limit_ps) { testing::run_until_idle({a.nic.get(), b.nic.get()}, limit_ps); }
  preset::Card card;
  Side a, b;
  Recorder recorder;
};

Bench& bench() {
  static Bench b;
  return b;
}

// Full packets back to back: each occupies the wire for (mtu + overhead) bytes at the line rate,
// the wire never idles, so the goodput is mtu / (mtu + overhead) x rate; the receiver's buffer
// holds exactly the bytes sent, and each side's completion message lands.
TEST(NicPort, PacketsLeaveAtTheLineRateWithTheirOverheadAndArriveBitExact) {
  Bench& t = bench();
  const hw::NicPortConfig& c = t.a.nic->config();
  ASSERT_EQ(c.mtu_bytes, 8192u);
  ASSERT_EQ(c.packet_overhead_bytes, 82u);
  ASSERT_EQ(c.gbps, 100u);
  EXPECT_EQ(hw::nic_wire_ps(8192, c), 661920u) << "8274 bytes at 100 Gb/s";
  const uint32_t bytes = 4u << 20;
  const std::vector<uint8_t> data = pattern(bytes, 1);
  t.a.poke(t.a.dram(0x100000), data);
  t.b.post(hw::NicOp::Recv, t.b.dram(0x200000), bytes, t.b.dram(0x10), 7);
  t.a.post(hw::NicOp::Send, t.a.dram(0x100000), bytes, t.a.dram(0x20), 9);
  t.run_until_idle(2000000000);
  ASSERT_TRUE(t.a.nic->engine_idle() && t.b.nic->engine_idle());
  EXPECT_TRUE(t.b.peek(t.b.dram(0x200000), bytes) == data);
  EXPECT_EQ(t.b.peek(t.b.dram(0x10), 4), (std::vector<uint8_t>{7, 0, 0, 0}));
  EXPECT_EQ(t.a.peek(t.a.dram(0x20), 4), (std::vector<uint8_t>{9, 0, 0, 0}));

  const uint64_t packets = bytes / c.mtu_bytes;
  ASSERT_EQ(t.recorder.packets.size(), packets);
  const Picoseconds wire = hw::nic_wire_ps(c.mtu_bytes, c);
  for (size_t i = 0; i < packets; ++i) {
    ASSERT_EQ(t.recorder.packets[i].end - t.recorder.packets[i].start, wire) << "packet " << i;
    if (i > 0) ASSERT_EQ(t.recorder.packets[i].start, t.recorder.packets[i - 1].end) << "the wire idled before packet " << i;
  }
  const hw::NicPortStats s = t.a.nic->stats();
  EXPECT_EQ(s.tx_packets, packets);
  EXPECT_EQ(s.tx_wire_bytes, packets * (c.mtu_bytes + c.packet_overhead_bytes));
  EXPECT_EQ(s.credit_stall_ps, 0u) << "the receive buffer covers the credits' round trip";
  const double goodput_gbps = double(s.tx_bytes) * 8000.0 / double(s.last_tx_ps - s.first_tx_ps);
  EXPECT_NEAR(goodput_gbps, 100.0 * 8192.0 / 8274.0, 1e-3);
  // The receive completes after the last packet's arrival (its last bit + the link latency) and its
  // writes; the send after the last credit came back (another link latency).
  ASSERT_EQ(t.recorder.done.size(), 2u);
  const Picoseconds last_arrival = t.recorder.packets.back().end + c.latency_ps;
  const bool recv_first = t.recorder.done[0].op.op == hw::NicOp::Recv;
  const Recorder::Done& recv = t.recorder.done[recv_first ? 0 : 1];
  const Recorder::Done& send = t.recorder.done[recv_first ? 1 : 0];
  EXPECT_EQ(recv.op.op, hw::NicOp::Recv);
  EXPECT_EQ(send.op.op, hw::NicOp::Send);
  EXPECT_GT(recv.at, last_arrival);
  EXPECT_LT(recv.at, last_arrival + 1000000) << "its writes and completion message within 1 us";
  EXPECT_GT(send.at, last_arrival + c.latency_ps) << "the last credit's way back";
  EXPECT_LT(send.at, last_arrival + c.latency_ps + 1000000);
  EXPECT_EQ(t.b.nic->stats().rx_bytes, bytes);
}

// A receiver that posts its buffers late and in pieces that do not match the sends: the sender
// stops when the receive buffer is full (it waits for credits), nothing is lost, the bytes fill
// the receives in order, and each operation completes once.
TEST(NicPort, ASlowReceiverStallsTheSenderAndLosesNothing) {
  Bench& t = bench();
  t.recorder = Recorder{};
  const uint32_t first = 300001, second = 700000;   // two sends
  const std::vector<uint8_t> data = pattern(first + second, 2);
  t.a.poke(t.a.dram(0x1000000), data);
  t.a.post(hw::NicOp::Send, t.a.dram(0x1000000), first);
  t.a.post(hw::NicOp::Send, t.a.dram(0x1000000) + first, second);
  sc_core::sc_start(sc_core::sc_time(50, sc_core::SC_US));
  const uint32_t buffered = t.b.nic->config().rx_buffer_packets;
  EXPECT_EQ(t.recorder.packets.size(), buffered) << "only what the receive buffer holds left the sender";
  EXPECT_EQ(t.a.nic->credits(), 0u);
  EXPECT_FALSE(t.a.nic->engine_idle());
  // Three receives of other sizes, the last posted later still.
  const uint32_t r0 = 100000, r1 = 500000, r2 = first + second - r0 - r1;
  t.b.post(hw::NicOp::Recv, t.b.dram(0x3000000), r0);
  t.b.post(hw::NicOp::Recv, t.b.dram(0x3000000) + r0, r1);
  sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_US));
  t.b.post(hw::NicOp::Recv, t.b.dram(0x3000000) + r0 + r1, r2);
  t.run_until_idle(2000000000);
  ASSERT_TRUE(t.a.nic->engine_idle() && t.b.nic->engine_idle());
  EXPECT_TRUE(t.b.peek(t.b.dram(0x3000000), data.size()) == data);
  EXPECT_GT(t.a.nic->stats().credit_stall_ps, 40000000u) << "the sender waited for the receiver (over 40 us before the first receive)";
  size_t sends = 0, recvs = 0;
  for (const auto& d : t.recorder.done) (d.op.op == hw::NicOp::Send ? sends : recvs) += 1;
  EXPECT_EQ(sends, 2u);
  EXPECT_EQ(recvs, 3u);
  EXPECT_TRUE(t.recorder.failed.empty());
}

// A zero-byte send is one empty packet and completes both sides; a COMMIT naming no operation
// sets BAD_COMMIT; a send whose buffer the fabric refuses fails, with READ_FAILED and no
// completion message.
TEST(NicPort, EmptySendsBadCommitsAndFabricErrors) {
  Bench& t = bench();
  t.recorder = Recorder{};
  t.b.post(hw::NicOp::Recv, t.b.dram(0x4000000), 0, t.b.dram(0x30), 3);
  t.a.post(hw::NicOp::Send, t.a.dram(0x4000000), 0);
  t.run_until_idle(100000000);
  EXPECT_EQ(t.recorder.done.size(), 2u);
  EXPECT_EQ(t.b.peek(t.b.dram(0x30), 4), (std::vector<uint8_t>{3, 0, 0, 0}));

  t.a.write(NicPort::kCommit, 3u << NicPort::kCommitOpShift);
  EXPECT_EQ(t.a.read(NicPort::kErrCause) & NicPort::kErrBadCommit, NicPort::kErrBadCommit);
  t.a.write(NicPort::kErrCause, NicPort::kErrBadCommit);
  EXPECT_EQ(t.a.read(NicPort::kErrCause), 0u);

  const uint64_t hole = t.a.system.dram_base() + t.a.system.dram_size() + 0x1000;   // nothing there
  t.a.post(hw::NicOp::Send, hole, 1024, t.a.dram(0x40), 5);
  t.run_until_idle(100000000);
  EXPECT_TRUE(t.a.nic->engine_idle());
  ASSERT_EQ(t.recorder.failed.size(), 1u);
  EXPECT_EQ(t.recorder.messages[0], "a read of its buffer failed");
  EXPECT_EQ(t.a.read(NicPort::kErrCause) & NicPort::kErrReadFailed, NicPort::kErrReadFailed);
  EXPECT_EQ(t.a.peek(t.a.dram(0x40), 4), (std::vector<uint8_t>{0, 0, 0, 0})) << "no completion message";
}

}  // namespace
}  // namespace hpusim::testing
