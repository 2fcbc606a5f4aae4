// Boxes of cards joined by their NIC ports: the box presets' port maps (HLS-2's public one, HLS-1's
// all-to-all), the platform joining the ports of the cards it builds, and a send and its receive
// on two cards run the real command path: user command buffers on the NIC queues through each
// card's driver, the ports' completion messages on sync objects, and an external job on each card
// that waits for its sync object before the CS completes.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "arch/packets/nic_ops.h"
#include "arch/packets/packets.h"
#include "arch/packets/sync_wait.h"
#include "arch/uapi/uapi.h"
#include "driver/device_file.h"
#include "hw/card/card.h"
#include "hw/nic/nic_switch.h"
#include "sim/platform/platform.h"
#include "sim/preset/preset.h"
#include "synapse/hlthunk/hlthunk.h"
#include "tests/nic/card_commands.h"
#include "traces/trace_reader.h"

namespace hpusim::testing {
namespace {

using uapi::hl_cs_chunk;

// Two hls2 boxes: each box's own links, and NICs 8, 22, 23 of card i joined to those of card 8 + i.
TEST(NicBoxPreset, Hls2x2IsTwoHls2BoxesJoinedRailByRail) {
  const preset::Card card = preset::load_preset("hl225");
  const preset::Box box = preset::load_box("hls2x2", card);
  const preset::Box one = preset::load_box("hls2", card);
  EXPECT_EQ(box.cards(), 16u);
  ASSERT_EQ(box.link_size(), 2 * one.link_size() + 24) << "two boxes' links and 8 rails of 3";
  std::set<std::tuple<unsigned, unsigned, unsigned, unsigned>> links;
  for (const auto& l : box.link()) links.insert({l.a().card(), l.a().port(), l.b().card(), l.b().port()});
  for (const auto& l : one.link()) {
    EXPECT_EQ(links.count({l.a().card(), l.a().port(), l.b().card(), l.b().port()}), 1u);
    EXPECT_EQ(links.count({l.a().card() + 8, l.a().port(), l.b().card() + 8, l.b().port()}), 1u);
  }
  for (unsigned i = 0; i < 8; ++i)
    for (unsigned port : {8u, 22u, 23u}) EXPECT_EQ(links.count({i, port, i + 8, port}), 1u) << "rail " << i << " NIC " << port;
  EXPECT_FALSE(box.has_switch_());
}

TEST(NicBoxPreset, Hls2IsThePublicPortMap) {
  const preset::Card card = preset::load_preset("hl225");
  const preset::Box box = preset::load_box("hls2", card);
  EXPECT_EQ(box.cards(), 8u);
  EXPECT_EQ(box.link_size(), 84) << "8 cards x 21 scale-up ports / 2";
  EXPECT_EQ(box.scale_out_size(), 24);
  std::map<std::pair<unsigned, unsigned>, std::pair<unsigned, unsigned>> peer;
  for (const auto& l : box.link()) {
    peer[{l.a().card(), l.a().port()}] = {l.b().card(), l.b().port()};
    peer[{l.b().card(), l.b().port()}] = {l.a().card(), l.a().port()};
  }
  for (unsigned c = 0; c < 8; ++c) {
    std::map<unsigned, unsigned> ports_to;
    for (unsigned p = 0; p < 24; ++p) {
      const auto it = peer.find({c, p});
      if (p == 8 || p == 22 || p == 23) {
        EXPECT_EQ(it, peer.end()) << "card " << c << " NIC " << p << " is a scale-out port";
        continue;
      }
      ASSERT_NE(it, peer.end()) << "card " << c << " NIC " << p;
      ++ports_to[it->second.first];
    }
    EXPECT_EQ(ports_to.size(), 7u) << "card " << c << " reaches every other card";
    for (const auto& [other, n] : ports_to) EXPECT_EQ(n, 3u) << "card " << c << " to card " << other;
  }
  EXPECT_EQ(peer.at({0, 0}), std::make_pair(3u, 0u));
  EXPECT_EQ(peer.at({0, 10}), std::make_pair(2u, 16u));
  EXPECT_EQ(peer.at({6, 12}), std::make_pair(4u, 18u));
}

TEST(NicBoxPreset, Hls1IsAllToAllWithThreeScaleOutPorts) {
  const preset::Box box = preset::load_box("hls1", preset::load_preset("hl205"));
  EXPECT_EQ(box.link_size(), 28);
  std::set<std::pair<unsigned, unsigned>> pairs;
  for (const auto& l : box.link()) {
    EXPECT_LT(l.a().port(), 7u);
    EXPECT_LT(l.b().port(), 7u);
    pairs.insert({std::min(l.a().card(), l.b().card()), std::max(l.a().card(), l.b().card())});
  }
  EXPECT_EQ(pairs.size(), 28u) << "one link per pair of cards";
  EXPECT_EQ(box.scale_out_size(), 24);
}

TEST(NicBoxPreset, BadBoxesAreNamed) {
  const preset::Card hl205 = preset::load_preset("hl205");
  const auto error_of = [&](const std::string& text) {
    const std::string path = ::testing::TempDir() + "/bad_box.textproto";
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
    try {
      preset::load_box(path, hl205);
    } catch (const preset::PresetError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("card: \"hl205\" cards: 2 link { a { card: 0 port: 10 } b { card: 1 port: 0 } }")
                .find("link card 0 port 10: hl205 has 10 NIC ports (nic.ports)"),
            std::string::npos);
  EXPECT_NE(error_of("card: \"hl205\" cards: 2 link { a { card: 0 port: 1 } b { card: 2 port: 0 } }").find("the box has 2 cards"),
            std::string::npos);
  EXPECT_NE(error_of("card: \"hl205\" cards: 2 link { a { card: 0 port: 1 } b { card: 1 port: 0 } } scale_out { card: 1 port: 0 }")
                .find("scale_out card 1 port 0: the port is used twice"),
            std::string::npos);
  EXPECT_NE(error_of("card: \"hl205\" cards: 17").find("a box has 1 to 16 cards"), std::string::npos);
  EXPECT_NE(error_of("cards: 2").find("card (the card preset) is missing"), std::string::npos);
  try {
    preset::load_box("hls9", hl205);
    ADD_FAILURE() << "an unknown box loaded";
  } catch (const preset::PresetError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown box 'hls9': not a built-in box (hls1, hls2, hls2x2)"), std::string::npos) << e.what();
  }
}

// ---- The command path on a box of two HLS-1 cards ----

// On card `c` of the two-card HLS-1 box: card 0 sends from its buffer on port 0, card 1 receives
// into its buffer on port 6. The NIC queue's command buffer (in the card's SRAM) posts the
// operation, completing on SOB 40 of E_N; the CS's external job waits for the SOB, so the CS ends
// when the operation has.
// With `scale_out`, both use port 7, each naming the other behind the box's switch.
bool post(const Device& d, unsigned c, uint32_t bytes, uint64_t* seq, bool scale_out = false) {
  constexpr uint32_t kSob = 40, kMonitor = 40;
  const regs::SyncManager sm = regs::SyncManager::E_N;
  const unsigned port = scale_out ? 7 : c == 0 ? 0 : 6;
  const regs::QueueId queue = regs::make_queue(regs::QueueKind::Nic, port, 0);
  qman::CommandBufferBuilder nic;
  qman::append_nic_operation(nic, c == 0 ? qman::NicOperation::Send : qman::NicOperation::Recv, d.dram, bytes, sm, kSob, 1,
                             hw::nic_address(1 - c, 7));
  const std::vector<uint8_t> nic_bytes = nic.take();
  Aligned cb_host(nic_bytes.size());
  std::memcpy(cb_host.p, nic_bytes.data(), nic_bytes.size());
  if (!copy(d.fd, cb_host.p, d.sram, static_cast<uint32_t>(nic_bytes.size()), true)) return false;
  // The SOB from 0: a CS that timed out may have left it anywhere.
  qman::CommandBufferBuilder wait;
  qman::append_sob_wait(wait, regs::QueueId::DMA_0_0, sm, kMonitor, kSob, 1);
  qman::append_sob_set(wait, sm, kSob, 0);
  hl_cs_chunk internal{};
  internal.cb_handle = d.sram;
  internal.queue_index = regs::to_index(queue);
  internal.cb_size = static_cast<uint32_t>(nic_bytes.size());
  return run_cs(d.fd, {internal, external(d.fd, uapi::GAUDI_QUEUE_ID_DMA_0_0, wait.take())}, seq);
}

TEST(NicBox, ASendAndItsReceiveRunThroughTheDriversQueues) {
  platform::PlatformOptions options = hls1(2);
  const std::string trace = ::testing::TempDir() + "/nic_box.pftrace";
  options.trace_path = trace;
  platform::Platform box(options);
  ASSERT_EQ(box.cards(), 2u);
  // hpusim's HLS-1 map: card 0 port 0 reaches card 1 port 6; nothing else joins these two cards.
  hw::NicPort& sender = *box.card(0).nic_port(0);
  hw::NicPort& receiver = *box.card(1).nic_port(6);
  ASSERT_TRUE(sender.connected() && receiver.connected());
  EXPECT_FALSE(box.card(0).nic_port(1)->connected()) << "its peer, card 2, is not in this box";

  const uint32_t bytes = (1u << 20) + 4100;
  Aligned data(bytes), back(bytes);
  for (uint32_t i = 0; i < bytes; ++i) data.p[i] = static_cast<uint8_t>(i * 13 + 5);
  std::memset(back.p, 0, bytes);
  const std::vector<Device> d = open_cards(box);
  ASSERT_TRUE(copy(d[0].fd, data.p, d[0].dram, bytes, true));

  uint64_t seqs[2] = {};
  for (const unsigned c : {1u, 0u}) ASSERT_TRUE(post(d[c], c, bytes, &seqs[c])) << "card " << c;   // the receive first
  for (const unsigned c : {1u, 0u}) {
    uint32_t status = 0;
    ASSERT_EQ(hlthunk::wait(d[c].fd, seqs[c], 10000000, &status), 0) << "card " << c;
    EXPECT_EQ(status, uapi::HL_WAIT_CS_STATUS_COMPLETED) << "card " << c;
  }
  ASSERT_TRUE(copy(d[1].fd, back.p, d[1].dram, bytes, false));
  EXPECT_EQ(std::memcmp(data.p, back.p, bytes), 0) << "card 1 received what card 0 sent";
  EXPECT_EQ(sender.stats().tx_bytes, bytes);
  EXPECT_EQ(sender.stats().tx_packets, (bytes + 8191) / 8192);
  EXPECT_EQ(receiver.stats().recvs, 1u);
  EXPECT_EQ(sender.stats().sends, 1u);
  for (const Device& dev : d) driver::hl_close(dev.fd);

  // The timeline: the send on card 0's NIC0 track, the receive on card 1's NIC6, the sender's
  // transmit bandwidth as a counter (the payload over the send's time: under the line rate).
  box.write_trace();
  const traces::TraceModel model = traces::read_perfetto(trace);
  const auto on = [&](const std::string& process, const std::string& track) -> const traces::TrackInfo* {
    const traces::TrackInfo* p = model.find_track(process);
    return p ? model.find_track(track, p->uuid) : nullptr;
  };
  const traces::TrackInfo* nic0 = on("device 0 (hl205)", "NIC0 send");
  const traces::TrackInfo* nic6 = on("device 1 (hl205)", "NIC6 recv");
  ASSERT_TRUE(nic0 && nic6);
  const auto sends = model.slices_on(nic0->uuid);
  const auto recvs = model.slices_on(nic6->uuid);
  ASSERT_EQ(sends.size(), 1u);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(sends[0]->name, "send");
  EXPECT_EQ(recvs[0]->name, "recv");
  EXPECT_GE(sends[0]->duration_ns(), bytes * 8 / 100) << "at most the line rate";
  const traces::TrackInfo* counter = on("device 0 (hl205)", "NIC0 tx");
  ASSERT_NE(counter, nullptr);
  const auto samples = model.counters_on(counter->uuid);
  ASSERT_FALSE(samples.empty());
  EXPECT_GT(samples.front().value, 0.0);
  EXPECT_LE(samples.front().value, 12.5) << "GB/s";
}


// A receive whose peer never sends: the CS waits on its sync object until the driver's TDR
// resets the device, which drops the port's receive; afterwards the pair runs as before.
TEST(NicBox, AReceiveWhosePeerNeverSendsEndsInTheTimeoutAndTheDeviceWorksAfter) {
  platform::PlatformOptions options = hls1(2);
  options.driver.cs_timeout_us = 2000;   // a short TDR: 2 ms
  platform::Platform box(options);
  const std::vector<Device> d = open_cards(box);
  const uint32_t bytes = 100000;
  uint64_t seq = 0;
  ASSERT_TRUE(post(d[1], 1, bytes, &seq));
  uint32_t status = 0;
  EXPECT_EQ(hlthunk::wait(d[1].fd, seq, 1000000, &status), -ETIMEDOUT);
  EXPECT_EQ(status, uapi::HL_WAIT_CS_STATUS_TIMEDOUT);
  std::string log;
  for (const std::string& line : box.driver(1).log()) log += line + "\n";
  EXPECT_NE(log.find("hard reset (TDR)"), std::string::npos) << log;
  EXPECT_TRUE(box.card(1).nic_port(6)->engine_idle()) << "the reset dropped the receive";

  Aligned data(bytes), back(bytes);
  for (uint32_t i = 0; i < bytes; ++i) data.p[i] = static_cast<uint8_t>(i * 29 + 1);
  ASSERT_TRUE(copy(d[0].fd, data.p, d[0].dram, bytes, true));
  uint64_t seqs[2] = {};
  for (const unsigned c : {1u, 0u}) ASSERT_TRUE(post(d[c], c, bytes, &seqs[c])) << "card " << c;
  for (const unsigned c : {1u, 0u}) {
    ASSERT_EQ(hlthunk::wait(d[c].fd, seqs[c], 10000000, &status), 0) << "card " << c;
    EXPECT_EQ(status, uapi::HL_WAIT_CS_STATUS_COMPLETED) << "card " << c;
  }
  ASSERT_TRUE(copy(d[1].fd, back.p, d[1].dram, bytes, false));
  EXPECT_EQ(std::memcmp(data.p, back.p, bytes), 0);
  for (const Device& dev : d) driver::hl_close(dev.fd);
}


// The box's scale-out ports are joined to its switch: card 0's port 7 reaches card 1's port 7
// through it, by address, on the same command path.
TEST(NicBox, ScaleOutPortsReachEachOtherThroughTheBoxSwitch) {
  platform::Platform box(hls1(2));
  hw::NicSwitch* fabric = box.nic_switch();
  ASSERT_NE(fabric, nullptr);
  EXPECT_EQ(fabric->config().ports, 6u) << "ports 7, 8, 9 of the two cards";
  EXPECT_TRUE(box.card(0).nic_port(7)->connected());
  const std::vector<Device> d = open_cards(box);
  const uint32_t bytes = 300000;
  Aligned data(bytes), back(bytes);
  for (uint32_t i = 0; i < bytes; ++i) data.p[i] = static_cast<uint8_t>(i * 31 + 3);
  ASSERT_TRUE(copy(d[0].fd, data.p, d[0].dram, bytes, true));
  uint64_t seqs[2] = {};
  for (const unsigned c : {1u, 0u}) ASSERT_TRUE(post(d[c], c, bytes, &seqs[c], true)) << "card " << c;
  for (const unsigned c : {1u, 0u}) {
    uint32_t status = 0;
    ASSERT_EQ(hlthunk::wait(d[c].fd, seqs[c], 10000000, &status), 0) << "card " << c;
    EXPECT_EQ(status, uapi::HL_WAIT_CS_STATUS_COMPLETED) << "card " << c;
  }
  ASSERT_TRUE(copy(d[1].fd, back.p, d[1].dram, bytes, false));
  EXPECT_EQ(std::memcmp(data.p, back.p, bytes), 0);
  EXPECT_EQ(fabric->port_stats(3).bytes, bytes) << "switch port 3 is card 1's port 7";
  for (const Device& dev : d) driver::hl_close(dev.fd);
}


// An all_gather on four cards of an HLS-1 box, by direct exchange over the box's links (every card
// sends its piece to each peer on the port joining them and receives each peer's piece into its
// slot), driven as a collective library will: one command buffer per NIC queue, the receives
// posted before the sends, the ports' completions counted on one sync object that the CS's
// external job waits for. Every card ends with every piece; each port carries one piece at its
// line rate, so the bus bandwidth (hccl_demo's NW BW: piece x (n - 1) / time) is (n - 1) ports'
// goodput, less the start-up latencies.
TEST(NicBox, AnAllGatherByDirectExchangeRunsEveryPortAtItsLineRate) {
  constexpr unsigned kCards = 4;
  platform::Platform box(hls1(kCards));
  const uint32_t piece = 4u << 20;
  const uint64_t dram = box.preset().memory_map().dram_user_base();
  const uint64_t in = dram + 0x100000, out = dram + 0x1000000;
  // The port of card c that reaches card p (the box's links between the cards built).
  std::map<std::pair<unsigned, unsigned>, unsigned> port_to;
  for (const auto& l : box.box()->link()) {
    if (l.a().card() >= kCards || l.b().card() >= kCards) continue;
    port_to[{l.a().card(), l.b().card()}] = l.a().port();
    port_to[{l.b().card(), l.a().card()}] = l.b().port();
  }
  ASSERT_EQ(port_to.size(), kCards * (kCards - 1));
  std::vector<int> fds;
  std::vector<std::unique_ptr<Aligned>> pieces;
  for (unsigned c = 0; c < kCards; ++c) {
    fds.push_back(driver::hl_open(platform::Platform::device_path(c).c_str()));
    ASSERT_GE(fds.back(), 0);
    pieces.push_back(std::make_unique<Aligned>(piece));
    for (uint32_t i = 0; i < piece; ++i) pieces[c]->p[i] = static_cast<uint8_t>(i * 7 + c * 61 + (i >> 12));
    ASSERT_TRUE(copy(fds[c], pieces[c]->p, in, piece, true));
    ASSERT_TRUE(copy(fds[c], pieces[c]->p, out + uint64_t{c} * piece, piece, true));   // its own slot
  }
  // Every card's command buffers first (each copy is a CS of its own), then the collective's CSs
  // back to back, as a library that has them ready would submit them.
  constexpr uint32_t kSob = 48, kMonitor = 48;
  const regs::SyncManager sm = regs::SyncManager::E_N;
  std::vector<std::vector<hl_cs_chunk>> jobs(kCards);
  for (unsigned c = 0; c < kCards; ++c) {
    unsigned slot = 0;
    for (unsigned p = 0; p < kCards; ++p) {
      if (p == c) continue;
      const unsigned port = port_to.at({c, p});
      qman::CommandBufferBuilder nic;
      qman::append_nic_operation(nic, qman::NicOperation::Recv, out + uint64_t{p} * piece, piece, sm, kSob);
      qman::append_nic_operation(nic, qman::NicOperation::Send, in, piece, sm, kSob);
      const std::vector<uint8_t> bytes = nic.take();
      Aligned host(bytes.size());
      std::memcpy(host.p, bytes.data(), bytes.size());
      const uint64_t cb = box.preset().memory_map().sram_base() + 0x10000 + 0x1000 * slot++;
      ASSERT_TRUE(copy(fds[c], host.p, cb, static_cast<uint32_t>(bytes.size()), true));
      hl_cs_chunk internal{};
      internal.cb_handle = cb;
      internal.queue_index = regs::to_index(regs::make_queue(regs::QueueKind::Nic, port, 0));
      internal.cb_size = static_cast<uint32_t>(bytes.size());
      jobs[c].push_back(internal);
    }
    qman::CommandBufferBuilder wait;
    qman::append_sob_wait(wait, regs::QueueId::DMA_0_0, sm, kMonitor, kSob, static_cast<uint16_t>(2 * (kCards - 1)));
    qman::append_sob_set(wait, sm, kSob, 0);
    jobs[c].push_back(external(fds[c], uapi::GAUDI_QUEUE_ID_DMA_0_0, wait.take()));
  }
  std::vector<uint64_t> seqs(kCards);
  for (unsigned c = 0; c < kCards; ++c) ASSERT_TRUE(run_cs(fds[c], jobs[c], &seqs[c])) << "card " << c;
  for (unsigned c = 0; c < kCards; ++c) {
    uint32_t status = 0;
    ASSERT_EQ(hlthunk::wait(fds[c], seqs[c], 10000000, &status), 0) << "card " << c;
    ASSERT_EQ(status, uapi::HL_WAIT_CS_STATUS_COMPLETED) << "card " << c;
  }
  hw::Picoseconds first = UINT64_MAX, last = 0;
  std::vector<double> port_gbps;
  for (unsigned c = 0; c < kCards; ++c) {
    Aligned back(uint64_t{piece} * kCards);
    ASSERT_TRUE(copy(fds[c], back.p, out, piece * kCards, false));
    for (unsigned p = 0; p < kCards; ++p)
      EXPECT_EQ(std::memcmp(back.p + uint64_t{p} * piece, pieces[p]->p, piece), 0) << "card " << c << " slot " << p;
    for (unsigned p = 0; p < kCards; ++p) {
      if (p == c) continue;
      const hw::NicPortStats s = box.card(c).nic_port(port_to.at({c, p}))->stats();
      EXPECT_EQ(s.tx_bytes, piece);
      port_gbps.push_back(double(s.tx_bytes) * 8000.0 / double(s.last_tx_ps - s.first_tx_ps));
      first = std::min(first, s.first_tx_ps);
      last = std::max(last, s.last_tx_ps);
    }
  }
  const hw::NicPortConfig& nic = box.card(0).nic_port(0)->config();
  const double goodput = nic.gbps / 8.0 * nic.mtu_bytes / (nic.mtu_bytes + nic.packet_overhead_bytes);   // GB/s
  const double bus = double(piece) * (kCards - 1) / double(last - first) * 1000.0;                   // GB/s
  EXPECT_LE(bus, (kCards - 1) * goodput * 1.0001) << "never above the ports' goodput";
  // The cards' submissions are a driver CS apart (about 12 us of host time each), and a port
  // waits for its receiver's receive: the bus bandwidth is within 10 % of the bound, every port
  // within 5 % of its goodput.
  EXPECT_GE(bus, (kCards - 1) * goodput * 0.9) << "GB/s";
  for (const double g : port_gbps) EXPECT_GE(g / 8.0, goodput * 0.95) << "a port's GB/s";
  std::printf("all_gather of %u x %u MiB on hls1: bus bandwidth %.2f GB/s (bound %.2f)\n", kCards, piece >> 20, bus,
              (kCards - 1) * goodput);
  for (const int fd : fds) driver::hl_close(fd);
}

}  // namespace
}  // namespace hpusim::testing
