// hpusim's HCCL on a box: every collective, f32 and bf16, on 2, 4 and 8 cards, with counts the
// card count does not divide, in and out of place, against a host reference that reduces in rank
// order with the device's arithmetic (arch/reduction): the bits must be the same. Small slices
// (HPUSIM_HCCL_SLICE_BYTES) make even small buffers take many slices and reuse the scratch slots.
// Then the errors a caller can make, and a collective whose peer never arrives.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "arch/reduction/reduction.h"
#include "hccl_api.h"
#include "hw/card/card.h"
#include "hw/nic/nic_port.h"
#include "sim/platform/platform.h"
#include "synapse_api.h"

namespace hpusim::testing {
namespace {

using reduction::ReduceOp;
using reduction::ReduceType;
using Bytes = std::vector<uint8_t>;

std::string error() { return hcclGetLastErrorMessage(); }

// Finite values with varied exponents, so sums round and their order shows.
Bytes values(uint64_t count, ReduceType type, uint64_t seed) {
  const uint32_t es = reduction::element_bytes(type);
  Bytes out(count * es);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 77;
  for (uint64_t i = 0; i < count; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    // sign, an exponent in [2^-6, 2^6), a random mantissa
    const uint32_t f = static_cast<uint32_t>(((x >> 40) & 1) << 31) | static_cast<uint32_t>((121 + (x >> 8) % 12) << 23) |
                       static_cast<uint32_t>(x & 0x7FFFFF);
    if (type == ReduceType::F32) {
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t b = static_cast<uint16_t>(f >> 16);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

// A box of `cards` HLS-1 (or HLS-2) cards, every card a Synapse device with a collective stream
// and a communicator rank.
class Box {
 public:
  Box(const char* box, unsigned cards, uint32_t cs_timeout_us = 0) : platform_(options(box, cards, cs_timeout_us)) {
    EXPECT_EQ(synInitialize(), synSuccess);
    for (unsigned c = 0; c < cards; ++c) {
      synDeviceId id = 99;
      EXPECT_EQ(synDeviceAcquire(&id, nullptr), synSuccess);
      EXPECT_EQ(id, c);
      synStreamHandle s = nullptr;
      EXPECT_EQ(synStreamCreate(&s, id, STREAM_TYPE_NETWORK_COLLECTIVE, 0), synSuccess);
      streams.push_back(s);
    }
    comms.resize(cards);
    EXPECT_EQ(hcclCommInitAll(comms.data(), static_cast<int>(cards), nullptr), hcclSuccess) << error();
  }
  ~Box() {
    for (hcclComm_t c : comms) hcclCommDestroy(c);
    for (synDeviceId d = 0; d < streams.size(); ++d) synDeviceRelease(d);
    synDestroy();
  }
  unsigned cards() const { return static_cast<unsigned>(streams.size()); }
  uint64_t alloc(unsigned card, uint64_t bytes) {
    uint64_t address = 0;
    EXPECT_EQ(synDeviceMalloc(card, std::max<uint64_t>(bytes, 4), 0, 0, &address), synSuccess);
    allocations.push_back({card, address});
    return address;
  }
  void put(unsigned card, uint64_t address, const Bytes& data) {
    if (data.empty()) return;
    EXPECT_EQ(synMemCopyAsync(streams[card], reinterpret_cast<uint64_t>(data.data()), data.size(), address, HOST_TO_DRAM),
              synSuccess);
    EXPECT_EQ(synStreamSynchronize(streams[card]), synSuccess);
  }
  Bytes get(unsigned card, uint64_t address, uint64_t bytes) {
    Bytes out(bytes);
    if (bytes == 0) return out;
    EXPECT_EQ(synMemCopyAsync(streams[card], address, bytes, reinterpret_cast<uint64_t>(out.data()), DRAM_TO_HOST),
              synSuccess);
    EXPECT_EQ(synStreamSynchronize(streams[card]), synSuccess);
    return out;
  }
  void synchronize() {
    for (synStreamHandle s : streams) EXPECT_EQ(synStreamSynchronize(s), synSuccess) << error();
  }
  platform::Platform& platform() { return platform_; }

  std::vector<synStreamHandle> streams;
  std::vector<hcclComm_t> comms;

 private:
  static platform::PlatformOptions options(const char* box, unsigned cards, uint32_t cs_timeout_us) {
    setenv("HPUSIM_HCCL_SLICE_BYTES", "1024", 1);
    platform::PlatformOptions o;
    o.box = box;
    o.cards = cards;
    o.driver.heartbeat_period_us = 0;
    if (cs_timeout_us != 0) o.driver.cs_timeout_us = cs_timeout_us;
    return o;
  }
  platform::Platform platform_;
  std::vector<std::pair<unsigned, uint64_t>> allocations;
};

hcclDataType_t hccl_type(ReduceType t) { return t == ReduceType::F32 ? hcclFloat32 : hcclBfloat16; }
hcclRedOp_t hccl_op(ReduceOp op) { return op == ReduceOp::Sum ? hcclSum : op == ReduceOp::Max ? hcclMax : hcclMin; }

// acc = x_0, then op(acc, x_k) for k = 1 .. n-1: the device's order.
Bytes fold(const std::vector<Bytes>& x, uint64_t offset, uint64_t bytes, ReduceOp op, ReduceType type) {
  Bytes acc(x[0].begin() + offset, x[0].begin() + offset + bytes);
  for (size_t k = 1; k < x.size(); ++k) reduction::reduce_into(acc.data(), x[k].data() + offset, bytes, op, type);
  return acc;
}
Bytes part(const Bytes& b, uint64_t offset, uint64_t bytes) { return Bytes(b.begin() + offset, b.begin() + offset + bytes); }

// A communicator's ranks: rank r on card cards[r] of the box, with communicator comms[r]; in boxes
// of `group` joined rail by rail (0: one box).
struct Ranks {
  std::vector<unsigned> cards;
  std::vector<hcclComm_t> comms;
  unsigned group = 0;
};
// The reduction of x's bytes [offset, offset + bytes) as the ranks reduce: in rank order, or in
// boxes joined rail by rail box by box in rank order, then the boxes' sums in box order.
Bytes reference(const Ranks& ranks, const std::vector<Bytes>& x, uint64_t offset, uint64_t bytes, ReduceOp op,
                ReduceType type) {
  if (ranks.group == 0) return fold(x, offset, bytes, op, type);
  std::vector<Bytes> boxes;
  for (size_t first = 0; first < x.size(); first += ranks.group) {
    boxes.push_back(fold(std::vector<Bytes>(x.begin() + first, x.begin() + first + ranks.group), offset, bytes, op, type));
  }
  return fold(boxes, 0, bytes, op, type);
}
Ranks all_of(Box& box) {
  Ranks ranks{{}, box.comms};
  for (unsigned c = 0; c < box.cards(); ++c) ranks.cards.push_back(c);
  return ranks;
}

// Every collective on `ranks` of `box`, with `count` elements, in and out of place.
void every_collective(Box& box, const Ranks& ranks, ReduceType type, uint64_t count, bool in_place) {
  const unsigned n = static_cast<unsigned>(ranks.cards.size());
  const auto& card = ranks.cards;
  const auto& comm = ranks.comms;
  const uint64_t es = reduction::element_bytes(type);
  const std::string what = std::string(reduction::name(type)) + (in_place ? " in place" : "") + " on " +
                           std::to_string(n) + " ranks, count " + std::to_string(count);
  std::vector<Bytes> x(n);
  std::vector<uint64_t> send(n), recv(n);
  const auto setup = [&](uint64_t send_count, uint64_t recv_count, uint64_t seed) {
    for (unsigned r = 0; r < n; ++r) {
      x[r] = values(send_count, type, seed * 31 + r);
      recv[r] = box.alloc(card[r], recv_count * es);
      send[r] = in_place ? 0 : box.alloc(card[r], send_count * es);
    }
  };
  const auto run = [&](const char* name, const auto& call) {
    for (unsigned r = 0; r < n; ++r) ASSERT_EQ(call(r), hcclSuccess) << name << " rank " << r << ": " << error();
    box.synchronize();
  };

  // all_reduce: sum and max.
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
    setup(count, count, 1 + static_cast<int>(op));
    for (unsigned r = 0; r < n; ++r) {
      if (in_place) send[r] = recv[r];
      box.put(card[r], send[r], x[r]);
    }
    run("all_reduce", [&](unsigned r) {
      return hcclAllReduce(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), count, hccl_type(type),
                           hccl_op(op), comm[r], box.streams[card[r]]);
    });
    const Bytes want = reference(ranks, x, 0, count * es, op, type);
    for (unsigned r = 0; r < n; ++r)
      EXPECT_TRUE(box.get(card[r], recv[r], count * es) == want) << "all_reduce " << reduction::name(op) << " " << what << " rank " << r;
  }
  // reduce_scatter: each rank's `count` of the sum of n x count.
  setup(n * count, count, 3);
  for (unsigned r = 0; r < n; ++r) {
    if (in_place) {
      send[r] = box.alloc(card[r], n * count * es);
      recv[r] = send[r] + r * count * es;
    }
    box.put(card[r], send[r], x[r]);
  }
  run("reduce_scatter", [&](unsigned r) {
    return hcclReduceScatter(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), count, hccl_type(type),
                             hcclSum, comm[r], box.streams[card[r]]);
  });
  for (unsigned r = 0; r < n; ++r)
    EXPECT_TRUE(box.get(card[r], recv[r], count * es) == reference(ranks, x, r * count * es, count * es, ReduceOp::Sum, type))
        << "reduce_scatter " << what << " rank " << r;
  // all_gather: every rank's count, in rank order.
  setup(count, n * count, 4);
  for (unsigned r = 0; r < n; ++r) {
    if (in_place) send[r] = recv[r] + r * count * es;
    box.put(card[r], send[r], x[r]);
  }
  run("all_gather", [&](unsigned r) {
    return hcclAllGather(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), count, hccl_type(type),
                         comm[r], box.streams[card[r]]);
  });
  Bytes gathered;
  for (unsigned r = 0; r < n; ++r) gathered.insert(gathered.end(), x[r].begin(), x[r].end());
  for (unsigned r = 0; r < n; ++r) EXPECT_TRUE(box.get(card[r], recv[r], n * count * es) == gathered) << "all_gather " << what << " rank " << r;
  // broadcast and reduce from the last rank.
  const unsigned root = n - 1;
  setup(count, count, 5);
  for (unsigned r = 0; r < n; ++r) {
    if (in_place) send[r] = recv[r];
    box.put(card[r], send[r], x[r]);
  }
  run("broadcast", [&](unsigned r) {
    return hcclBroadcast(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), count, hccl_type(type),
                         static_cast<int>(root), comm[r], box.streams[card[r]]);
  });
  for (unsigned r = 0; r < n; ++r) EXPECT_TRUE(box.get(card[r], recv[r], count * es) == x[root]) << "broadcast " << what << " rank " << r;
  setup(count, count, 6);
  for (unsigned r = 0; r < n; ++r) {
    if (in_place) send[r] = recv[r];
    box.put(card[r], send[r], x[r]);
  }
  run("reduce", [&](unsigned r) {
    return hcclReduce(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), count, hccl_type(type), hcclSum,
                      static_cast<int>(root), comm[r], box.streams[card[r]]);
  });
  EXPECT_TRUE(box.get(card[root], recv[root], count * es) == reference(ranks, x, 0, count * es, ReduceOp::Sum, type)) << "reduce " << what;
  // all_to_all: chunk p of rank r's send lands in chunk r of rank p's receive.
  setup(n * count, n * count, 7);
  if (in_place) {   // refused: a chunk would be received where one is still to be sent
    EXPECT_EQ(hcclAlltoAll(reinterpret_cast<void*>(recv[0]), reinterpret_cast<void*>(recv[0]), count, hccl_type(type),
                           comm[0], box.streams[card[0]]),
              hcclInvalidArgument);
    EXPECT_NE(error().find("hcclAlltoAll: sendbuff and recvbuff overlap other than in HCCL's in-place form"), std::string::npos)
        << error();
    for (unsigned r = 0; r < n; ++r) send[r] = box.alloc(card[r], n * count * es);
  }
  for (unsigned r = 0; r < n; ++r) box.put(card[r], send[r], x[r]);
  run("all_to_all", [&](unsigned r) {
    return hcclAlltoAll(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), count, hccl_type(type),
                        comm[r], box.streams[card[r]]);
  });
  for (unsigned p = 0; p < n; ++p) {
    Bytes want;
    for (unsigned r = 0; r < n; ++r) {
      const Bytes piece = part(x[r], p * count * es, count * es);
      want.insert(want.end(), piece.begin(), piece.end());
    }
    EXPECT_TRUE(box.get(card[p], recv[p], n * count * es) == want) << "all_to_all " << what << " rank " << p;
  }
  // barrier
  run("barrier", [&](unsigned r) { return hcclBarrier(comm[r], box.streams[card[r]]); });
}

TEST(Hccl, EveryCollectiveIsBitExactOnTwoCards) {
  Box box("hls1", 2);
  for (const ReduceType type : {ReduceType::F32, ReduceType::Bf16}) {
    every_collective(box, all_of(box), type, 3001, false);
    every_collective(box, all_of(box), type, 777, true);
  }
}

TEST(Hccl, EveryCollectiveIsBitExactOnFourCards) {
  Box box("hls1", 4);
  for (const ReduceType type : {ReduceType::F32, ReduceType::Bf16}) {
    every_collective(box, all_of(box), type, 2503, false);
    every_collective(box, all_of(box), type, 1, true);
  }
}

TEST(Hccl, EveryCollectiveIsBitExactOnEightCards) {
  Box box("hls1", 8);
  for (const ReduceType type : {ReduceType::F32, ReduceType::Bf16}) {
    every_collective(box, all_of(box), type, 2011, false);
    every_collective(box, all_of(box), type, 9, true);
  }
}

// Communicators on part of the box (torch.distributed's new_group): ranks on cards named by the
// id (hcclGetUniqueIdOnCards), in any order, or by hcclCommInitAll's devlist, beside the whole
// box's communicator on the same cards; what a caller can get wrong about the cards.
TEST(Hccl, CommunicatorsOnPartOfTheBoxRunEveryCollective) {
  Box box("hls1", 6);
  const std::vector<unsigned> cards = {4, 1, 3};
  const int card_list[] = {4, 1, 3};
  hcclUniqueId id;
  ASSERT_EQ(hcclGetUniqueIdOnCards(&id, 3, card_list), hcclSuccess) << error();
  Ranks three{cards, std::vector<hcclComm_t>(3)};
  for (int r = 0; r < 3; ++r) ASSERT_EQ(hcclCommInitRank(&three.comms[r], 3, id, r), hcclSuccess) << error();
  int device = -1;
  ASSERT_EQ(hcclCommSynDevice(three.comms[0], &device), hcclSuccess);
  EXPECT_EQ(device, 4) << "rank 0 runs on card 4";
  Ranks two{{5, 0}, std::vector<hcclComm_t>(2)};
  const int devlist[] = {5, 0};
  ASSERT_EQ(hcclCommInitAll(two.comms.data(), 2, devlist), hcclSuccess) << error();
  for (const ReduceType type : {ReduceType::F32, ReduceType::Bf16}) {
    every_collective(box, three, type, 1001, false);
    every_collective(box, two, type, 257, true);
    every_collective(box, all_of(box), type, 99, false);
  }
  for (hcclComm_t c : three.comms) EXPECT_EQ(hcclCommDestroy(c), hcclSuccess);
  for (hcclComm_t c : two.comms) EXPECT_EQ(hcclCommDestroy(c), hcclSuccess);

  const auto refused = [&](hcclResult_t got, const std::string& text) {
    EXPECT_EQ(got, hcclInvalidArgument) << text;
    EXPECT_NE(error().find(text), std::string::npos) << "'" << error() << "' does not say '" << text << "'";
  };
  const int twice[] = {2, 0, 2};
  refused(hcclGetUniqueIdOnCards(&id, 3, twice), "hcclGetUniqueIdOnCards: rank 2's card 2 is another rank's too");
  hcclComm_t comm = nullptr;
  refused(hcclCommInitRank(&comm, 2, id, 0), "hcclCommInitRank: commId names 3 cards (hcclGetUniqueIdOnCards), nranks is 2");
  const int beyond[] = {1, 7};
  ASSERT_EQ(hcclGetUniqueIdOnCards(&id, 2, beyond), hcclSuccess);
  EXPECT_EQ(hcclCommInitRank(&comm, 2, id, 0), hcclInvalidUsage);
  EXPECT_NE(error().find("hcclCommInitRank: the box has 6 cards, no card 7"), std::string::npos) << error();
  hcclUniqueId forged;
  ASSERT_EQ(hcclGetUniqueIdOnCards(&forged, 2, beyond), hcclSuccess);
  std::string text(forged.internal, forged.length);
  text.replace(text.find("1,7"), 3, "1,1");
  std::memcpy(forged.internal, text.data(), text.size());
  refused(hcclCommInitRank(&comm, 2, forged, 0), "hcclCommInitRank: commId's card list '1,1' is not one hcclGetUniqueIdOnCards made");
  const int same[] = {3, 3};
  refused(hcclCommInitAll(&comm, 2, same), "hcclCommInitAll: devlist: rank 1's card 3 is another rank's too");
}

// HLS-2: three links between every pair, each message striped over them.
TEST(Hccl, MessagesAreStripedOverTheThreeLinksOfAnHls2Pair) {
  Box box("hls2", 4);
  every_collective(box, all_of(box), ReduceType::F32, 1999, false);
  for (unsigned p = 0; p < 24; ++p) {
    hw::NicPort* port = box.platform().card(0).nic_port(p);
    if (port->connected() && p != 8 && p != 22 && p != 23) {
      EXPECT_GT(port->stats().tx_bytes, 0u) << "card 0 NIC " << p;
    }
  }
}

}  // namespace
}  // namespace hpusim::testing

namespace hpusim::testing {
namespace {

// A collective whose peer never arrives: rank 0's command submission waits for data that never
// comes until the driver's TDR resets card 0; the stream reports it, and afterwards the pair runs
// the collective correctly (card 0's ports started new connections, so card 1 dropped what it
// held of the old ones).
TEST(Hccl, ACollectiveWhosePeerNeverArrivesEndsInTheTimeoutAndTheCardsWorkAfter) {
  Box box("hls1", 2, /*cs_timeout_us=*/3000);
  const uint64_t count = 50000;   // more than the peer's receive buffer holds
  std::vector<uint64_t> buffer(2);
  std::vector<Bytes> x(2);
  for (unsigned r = 0; r < 2; ++r) {
    buffer[r] = box.alloc(r, count * 4);
    x[r] = values(count, ReduceType::F32, 90 + r);
    box.put(r, buffer[r], x[r]);
  }
  const auto all_reduce = [&](unsigned r) {
    return hcclAllReduce(reinterpret_cast<void*>(buffer[r]), reinterpret_cast<void*>(buffer[r]), count, hcclFloat32, hcclSum,
                         box.comms[r], box.streams[r]);
  };
  ASSERT_EQ(all_reduce(0), hcclSuccess) << error();
  EXPECT_EQ(synStreamSynchronize(box.streams[0]), synFail);
  const std::string message = error();
  EXPECT_NE(message.find("it timed out and the driver reset the device (TDR)"), std::string::npos) << message;
  std::string log;
  for (const std::string& line : box.platform().driver(0).log()) log += line + "\n";
  EXPECT_NE(log.find("hard reset (TDR)"), std::string::npos) << log;
  EXPECT_GT(box.platform().card(0).nic_port(0)->stats().tx_packets, 0u) << "it had sent part of its data";

  // Both ranks now: the same bits as the host's rank-order sum.
  box.put(0, buffer[0], x[0]);
  for (unsigned r = 0; r < 2; ++r) ASSERT_EQ(all_reduce(r), hcclSuccess) << error();
  box.synchronize();
  const Bytes want = fold(x, 0, count * 4, ReduceOp::Sum, ReduceType::F32);
  for (unsigned r = 0; r < 2; ++r) EXPECT_TRUE(box.get(r, buffer[r], count * 4) == want) << "rank " << r;
}

// What a caller can get wrong, each refused with a message naming it.
TEST(Hccl, BadCallsAreRefusedWithTheReason) {
  Box box("hls1", 2);
  const uint64_t a = box.alloc(0, 4096), b = box.alloc(0, 4096);
  void* const pa = reinterpret_cast<void*>(a);
  void* const pb = reinterpret_cast<void*>(b);
  const auto refused = [&](hcclResult_t got, hcclResult_t want, const std::string& text) {
    EXPECT_EQ(got, want) << text;
    EXPECT_NE(error().find(text), std::string::npos) << "'" << error() << "' does not say '" << text << "'";
  };
  refused(hcclAllReduce(pa, pb, 16, hcclInt32, hcclSum, box.comms[0], box.streams[0]), hcclInvalidArgument,
          "hcclAllReduce: data type 2 is not supported (hcclFloat32, hcclBfloat16)");
  refused(hcclAllReduce(pa, pb, 16, hcclFloat32, hcclProd, box.comms[0], box.streams[0]), hcclInvalidArgument,
          "hcclAllReduce: reduction 1 is not supported (hcclSum, hcclMin, hcclMax)");
  refused(hcclBroadcast(pa, pb, 16, hcclFloat32, 2, box.comms[0], box.streams[0]), hcclInvalidArgument,
          "hcclBroadcast: root 2 of a communicator of 2 ranks");
  refused(hcclAllReduce(pa, pb, 16, hcclFloat32, hcclSum, box.comms[0], box.streams[1]), hcclInvalidArgument,
          "hcclAllReduce: the stream is on device 1, the communicator's rank 0 on device 0");
  refused(hcclAllReduce(pa, pb, 2000, hcclFloat32, hcclSum, box.comms[0], box.streams[0]), hcclInvalidArgument,
          "hcclAllReduce: sendbuff (8000 bytes) is not inside a device allocation");
  refused(hcclAllGather(pa, reinterpret_cast<void*>(a + 8), 16, hcclFloat32, box.comms[0], box.streams[0]),
          hcclInvalidArgument, "hcclAllGather: sendbuff and recvbuff overlap other than in HCCL's in-place form");
  refused(hcclAllReduce(pa, pb, 16, hcclFloat32, hcclSum, nullptr, box.streams[0]), hcclInvalidArgument,
          "hcclAllReduce: comm is NULL");
  refused(hcclAllReduce(pa, pb, 16, hcclFloat32, hcclSum, box.comms[0], nullptr), hcclInvalidArgument,
          "hcclAllReduce: stream is NULL");
  // Communicators.
  hcclUniqueId id;
  ASSERT_EQ(hcclGetUniqueId(&id), hcclSuccess);
  hcclComm_t comm = nullptr;
  refused(hcclCommInitRank(&comm, 3, id, 0), hcclInvalidUsage, "the box has 2 cards, the communicator 3 ranks");
  refused(hcclCommInitRank(&comm, 2, id, 2), hcclInvalidArgument, "hcclCommInitRank: rank 2 of 2 ranks");
  hcclUniqueId forged{};
  std::strcpy(forged.internal, "not an id");
  forged.length = 9;
  refused(hcclCommInitRank(&comm, 2, forged, 0), hcclInvalidArgument, "commId is not one hcclGetUniqueId made");
  hcclComm_t gone = nullptr;
  ASSERT_EQ(hcclCommInitRank(&gone, 2, id, 1), hcclSuccess) << error();
  int rank = -1, count = -1, device = -1;
  EXPECT_EQ(hcclCommUserRank(gone, &rank), hcclSuccess);
  EXPECT_EQ(hcclCommCount(gone, &count), hcclSuccess);
  EXPECT_EQ(hcclCommSynDevice(gone, &device), hcclSuccess);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(device, 1);
  ASSERT_EQ(hcclCommDestroy(gone), hcclSuccess);
  refused(hcclBarrier(gone, box.streams[1]), hcclInvalidArgument, "hcclBarrier: not a live communicator");
  EXPECT_EQ(hcclCommDestroy(gone), hcclInvalidArgument);
  setenv("HPUSIM_HCCL_SLICE_BYTES", "1000", 1);
  refused(hcclCommInitRank(&comm, 2, id, 0), hcclInvalidArgument,
          "HPUSIM_HCCL_SLICE_BYTES='1000': the bytes collectives are cut in, a multiple of 256 from 256 to 67108864");
  setenv("HPUSIM_HCCL_SLICE_BYTES", "1024", 1);
  // A call with nothing to move is done at once.
  EXPECT_EQ(hcclAllReduce(pa, pb, 0, hcclFloat32, hcclSum, box.comms[0], box.streams[0]), hcclSuccess);
  EXPECT_STREQ(hcclGetErrorString(hcclInvalidUsage), "invalid usage");
  int version = 0;
  EXPECT_EQ(hcclGetVersion(&version), hcclSuccess);
  EXPECT_EQ(version, HCCL_VERSION_CODE);
}

// Cards without a box have no links between them: a communicator over them is refused.
TEST(Hccl, CardsOutsideABoxCannotFormACommunicator) {
  platform::PlatformOptions options;
  options.cards = 2;
  platform::Platform platform(options);
  ASSERT_EQ(synInitialize(), synSuccess);
  synDeviceId id = 0;
  ASSERT_EQ(synDeviceAcquire(&id, nullptr), synSuccess);
  ASSERT_EQ(synDeviceAcquire(&id, nullptr), synSuccess);
  hcclComm_t comms[2] = {};
  EXPECT_EQ(hcclCommInitAll(comms, 2, nullptr), hcclInvalidUsage);
  EXPECT_NE(error().find("the cards are not in a box (no NIC links between them): bring the platform up with a box "
                         "(HPUSIM_BOX=hls1 or hls2)"),
            std::string::npos)
      << error();
  // One rank needs no links.
  hcclUniqueId unique;
  hcclGetUniqueId(&unique);
  ASSERT_EQ(hcclCommInitRank(&comms[0], 1, unique, 0), hcclSuccess) << error();
  synStreamHandle stream = nullptr;
  ASSERT_EQ(synStreamCreate(&stream, 0, STREAM_TYPE_NETWORK_COLLECTIVE, 0), synSuccess);
  uint64_t a = 0, b = 0;
  ASSERT_EQ(synDeviceMalloc(0, 4096, 0, 0, &a), synSuccess);
  ASSERT_EQ(synDeviceMalloc(0, 4096, 0, 0, &b), synSuccess);
  const Bytes x = values(1000, ReduceType::F32, 5);
  ASSERT_EQ(synMemCopyAsync(stream, reinterpret_cast<uint64_t>(x.data()), x.size(), a, HOST_TO_DRAM), synSuccess);
  ASSERT_EQ(hcclAllReduce(reinterpret_cast<void*>(a), reinterpret_cast<void*>(b), 1000, hcclFloat32, hcclSum, comms[0], stream),
            hcclSuccess)
      << error();
  Bytes back(x.size());
  ASSERT_EQ(synMemCopyAsync(stream, b, back.size(), reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST), synSuccess);
  ASSERT_EQ(synStreamSynchronize(stream), synSuccess) << error();
  EXPECT_TRUE(back == x) << "a sum over one rank is a copy";
  EXPECT_EQ(hcclCommDestroy(comms[0]), hcclSuccess);
  synDestroy();
}

}  // namespace
}  // namespace hpusim::testing

namespace hpusim::testing {
namespace {

// The ring all_reduce (HPUSIM_HCCL_ALGORITHM=ring): chunk k is summed along the ring from rank k
// (x_k + x_{k+1} + ... + x_{k-1}), the same bits on every rank, in and out of place.
void ring_all_reduce(unsigned cards, const char* box_name) {
  setenv("HPUSIM_HCCL_ALGORITHM", "ring", 1);
  Box box(box_name, cards);
  unsetenv("HPUSIM_HCCL_ALGORITHM");
  for (const ReduceType type : {ReduceType::F32, ReduceType::Bf16}) {
    for (const bool in_place : {false, true}) {
      const uint64_t count = in_place ? 2501 : 4099, es = reduction::element_bytes(type);
      std::vector<Bytes> x(cards);
      std::vector<uint64_t> send(cards), recv(cards);
      for (unsigned r = 0; r < cards; ++r) {
        x[r] = values(count, type, 300 + r + (in_place ? 50 : 0));
        recv[r] = box.alloc(r, count * es);
        send[r] = in_place ? recv[r] : box.alloc(r, count * es);
        box.put(r, send[r], x[r]);
      }
      for (unsigned r = 0; r < cards; ++r)
        ASSERT_EQ(hcclAllReduce(reinterpret_cast<void*>(send[r]), reinterpret_cast<void*>(recv[r]), count, hccl_type(type),
                                hcclSum, box.comms[r], box.streams[r]),
                  hcclSuccess)
            << error();
      box.synchronize();
      Bytes want(count * es);
      for (unsigned k = 0; k < cards; ++k) {
        const uint64_t begin = count * k / cards * es, bytes = (count * (k + 1) / cards - count * k / cards) * es;
        Bytes acc = part(x[k], begin, bytes);
        for (unsigned i = 1; i < cards; ++i)
          reduction::reduce_into(acc.data(), x[(k + i) % cards].data() + begin, bytes, ReduceOp::Sum, type);
        std::copy(acc.begin(), acc.end(), want.begin() + static_cast<std::ptrdiff_t>(begin));
      }
      for (unsigned r = 0; r < cards; ++r)
        EXPECT_TRUE(box.get(r, recv[r], count * es) == want)
            << "ring " << reduction::name(type) << (in_place ? " in place" : "") << " rank " << r << " of " << cards;
    }
  }
}

TEST(Hccl, TheRingAllReduceSumsEachChunkAlongTheRingOnTwoCards) { ring_all_reduce(2, "hls1"); }
TEST(Hccl, TheRingAllReduceSumsEachChunkAlongTheRingOnFiveCards) { ring_all_reduce(5, "hls1"); }
TEST(Hccl, TheRingAllReduceSumsEachChunkAlongTheRingOnEightHls2Cards) { ring_all_reduce(8, "hls2"); }

}  // namespace
}  // namespace hpusim::testing

namespace hpusim::testing {
namespace {

// Point to point on an HLS-2 box (each message striped over the three links of its pair): a
// chain 0 -> 3 -> 1, rank 3 receiving before it passes its own buffer on; a rank sending to
// itself is refused; then a cycle of sends and receives, each rank's pair grouped (calls on one
// stream run in order, so ungrouped the cycle would wait on itself); then collectives grouped
// with sends and receives.
TEST(Hccl, SendsReceivesAndGroupedCallsMoveBuffersBetweenRanks) {
  Box box("hls2", 4);
  const uint64_t count = 70001, es = 2;
  std::vector<Bytes> x(4);
  std::vector<uint64_t> send(4), recv(4);
  for (unsigned r = 0; r < 4; ++r) {
    x[r] = values(count, ReduceType::Bf16, 700 + r);
    send[r] = box.alloc(r, count * es);
    recv[r] = box.alloc(r, count * es);
    box.put(r, send[r], x[r]);
  }
  const auto send_to = [&](unsigned r, unsigned peer) {
    return hcclSend(reinterpret_cast<void*>(send[r]), count, hcclBfloat16, static_cast<int>(peer), box.comms[r], box.streams[r]);
  };
  const auto recv_from = [&](unsigned r, unsigned peer) {
    return hcclRecv(reinterpret_cast<void*>(recv[r]), count, hcclBfloat16, static_cast<int>(peer), box.comms[r], box.streams[r]);
  };
  ASSERT_EQ(send_to(0, 3), hcclSuccess) << error();
  ASSERT_EQ(recv_from(3, 0), hcclSuccess) << error();
  ASSERT_EQ(send_to(3, 1), hcclSuccess) << error();
  ASSERT_EQ(recv_from(1, 3), hcclSuccess) << error();
  box.synchronize();
  EXPECT_TRUE(box.get(3, recv[3], count * es) == x[0]) << "rank 3 got rank 0's buffer";
  EXPECT_TRUE(box.get(1, recv[1], count * es) == x[3]) << "rank 1 got rank 3's buffer";
  EXPECT_EQ(send_to(2, 2), hcclInvalidArgument);
  EXPECT_NE(error().find("hcclSend: peer 2 is this rank"), std::string::npos) << error();

  // A cycle 0 -> 1 -> 2 -> 3 -> 0 in one group per rank (each rank's send and receive go in one
  // submission, so neither waits behind the other).
  for (unsigned r = 0; r < 4; ++r) {
    ASSERT_EQ(hcclGroupStart(), hcclSuccess);
    ASSERT_EQ(send_to(r, (r + 1) % 4), hcclSuccess) << error();
    ASSERT_EQ(recv_from(r, (r + 3) % 4), hcclSuccess) << error();
    ASSERT_EQ(hcclGroupEnd(), hcclSuccess) << error();
  }
  box.synchronize();
  for (unsigned r = 0; r < 4; ++r) EXPECT_TRUE(box.get(r, recv[r], count * es) == x[(r + 3) % 4]) << "rank " << r;
  // Collectives group too: each rank's all_reduce (max), all_gather, a cycle the other way and a
  // barrier in one submission, the collectives one after the other (they share the scratch
  // memory), the sends and receives beside them.
  const uint64_t small = 1003;
  std::vector<Bytes> y(4);
  std::vector<uint64_t> reduced(4), gathered(4);
  for (unsigned r = 0; r < 4; ++r) {
    y[r] = values(small, ReduceType::Bf16, 740 + r);
    reduced[r] = box.alloc(r, small * es);
    gathered[r] = box.alloc(r, 4 * small * es);
    box.put(r, reduced[r], y[r]);
    box.put(r, gathered[r] + r * small * es, y[r]);
  }
  for (unsigned r = 0; r < 4; ++r) {
    ASSERT_EQ(hcclGroupStart(), hcclSuccess);
    ASSERT_EQ(hcclAllReduce(reinterpret_cast<void*>(reduced[r]), reinterpret_cast<void*>(reduced[r]), small, hcclBfloat16,
                            hcclMax, box.comms[r], box.streams[r]),
              hcclSuccess)
        << error();
    ASSERT_EQ(send_to(r, (r + 3) % 4), hcclSuccess) << error();
    ASSERT_EQ(hcclAllGather(reinterpret_cast<void*>(gathered[r] + r * small * es), reinterpret_cast<void*>(gathered[r]),
                            small, hcclBfloat16, box.comms[r], box.streams[r]),
              hcclSuccess)
        << error();
    ASSERT_EQ(recv_from(r, (r + 1) % 4), hcclSuccess) << error();
    ASSERT_EQ(hcclBarrier(box.comms[r], box.streams[r]), hcclSuccess) << error();
    ASSERT_EQ(hcclGroupEnd(), hcclSuccess) << error();
  }
  box.synchronize();
  Bytes all;
  for (unsigned r = 0; r < 4; ++r) all.insert(all.end(), y[r].begin(), y[r].end());
  for (unsigned r = 0; r < 4; ++r) {
    EXPECT_TRUE(box.get(r, reduced[r], small * es) == fold(y, 0, small * es, ReduceOp::Max, ReduceType::Bf16)) << "rank " << r;
    EXPECT_TRUE(box.get(r, gathered[r], 4 * small * es) == all) << "rank " << r;
    EXPECT_TRUE(box.get(r, recv[r], count * es) == x[(r + 1) % 4]) << "rank " << r;
  }
  // A reduce does not group (its staging memory), an end needs a start.
  ASSERT_EQ(hcclGroupStart(), hcclSuccess);
  EXPECT_EQ(hcclReduce(reinterpret_cast<void*>(reduced[0]), reinterpret_cast<void*>(reduced[0]), small, hcclBfloat16, hcclSum, 0,
                       box.comms[0], box.streams[0]),
            hcclInvalidArgument);
  EXPECT_NE(error().find("hcclReduce: a reduce cannot be grouped yet"), std::string::npos) << error();
  ASSERT_EQ(hcclGroupEnd(), hcclSuccess);
  EXPECT_EQ(hcclGroupEnd(), hcclInvalidUsage);
  EXPECT_NE(error().find("hcclGroupEnd: no hcclGroupStart before it"), std::string::npos) << error();
  EXPECT_EQ(hcclGetUniqueIdOnCards(nullptr, 1, nullptr), hcclInvalidArgument);
}

// Two boxes of two cards joined rail by rail (cards 0-1 and 2-3 linked in their box, 0-2 and 1-3
// along the rails, no link 0-3 or 1-2): the communicator runs HCCL's hierarchical algorithms
// (hierarchy.h), reducing box by box, then across the boxes: (x0 + x1) + (x2 + x3). Every
// collective, f32 and bf16, in and out of place, at a count large enough to pipeline the stages in
// slice groups (1 KiB slices); the same on a communicator whose ranks are the cards in another
// order; a large all_reduce (4 slice groups in f32, 2 in bf16, each stage with scratch memory of
// its own); calls of such a communicator cannot be grouped yet.
TEST(Hccl, EveryCollectiveAcrossBoxesJoinedRailByRailIsBitExact) {
  const std::string file = ::testing::TempDir() + "two_by_two_box.textproto";
  {
    std::ofstream out(file);
    out << "name: \"two_by_two\" card: \"hl205\" cards: 4\n"
           "link { a { card: 0 port: 0 } b { card: 1 port: 0 } }\n"
           "link { a { card: 2 port: 0 } b { card: 3 port: 0 } }\n"
           "link { a { card: 0 port: 1 } b { card: 2 port: 1 } }\n"
           "link { a { card: 1 port: 1 } b { card: 3 port: 1 } }\n";
  }
  Box box(file.c_str(), 4);
  Ranks ranks = all_of(box);
  ranks.group = 2;
  const int order[] = {1, 0, 3, 2};
  hcclUniqueId id;
  ASSERT_EQ(hcclGetUniqueIdOnCards(&id, 4, order), hcclSuccess) << error();
  Ranks reordered{{1, 0, 3, 2}, std::vector<hcclComm_t>(4), 2};
  for (int r = 0; r < 4; ++r) ASSERT_EQ(hcclCommInitRank(&reordered.comms[r], 4, id, r), hcclSuccess) << error();
  for (const ReduceType type : {ReduceType::F32, ReduceType::Bf16}) {
    every_collective(box, ranks, type, 2503, false);
    every_collective(box, ranks, type, 7, true);
    every_collective(box, reordered, type, 1001, true);
  }
  for (hcclComm_t c : reordered.comms) EXPECT_EQ(hcclCommDestroy(c), hcclSuccess);

  for (const ReduceType type : {ReduceType::F32, ReduceType::Bf16}) {
    const uint64_t count = 300001, es = reduction::element_bytes(type);
    std::vector<Bytes> x(4);
    std::vector<uint64_t> buffer(4);
    for (unsigned r = 0; r < 4; ++r) {
      x[r] = values(count, type, 90 + r);
      buffer[r] = box.alloc(r, count * es);
      box.put(r, buffer[r], x[r]);
    }
    for (unsigned r = 0; r < 4; ++r) {
      ASSERT_EQ(hcclAllReduce(reinterpret_cast<void*>(buffer[r]), reinterpret_cast<void*>(buffer[r]), count, hccl_type(type),
                              hcclSum, box.comms[r], box.streams[r]),
                hcclSuccess)
          << error();
    }
    box.synchronize();
    const Bytes want = reference(ranks, x, 0, count * es, ReduceOp::Sum, type);
    for (unsigned r = 0; r < 4; ++r)
      EXPECT_TRUE(box.get(r, buffer[r], count * es) == want) << reduction::name(type) << " count " << count << " rank " << r;
  }
  const uint64_t buffer = box.alloc(0, 64);
  ASSERT_EQ(hcclGroupStart(), hcclSuccess);
  EXPECT_EQ(hcclAllGather(reinterpret_cast<void*>(buffer), reinterpret_cast<void*>(buffer), 4, hcclFloat32, box.comms[0],
                          box.streams[0]),
            hcclInvalidArgument);
  EXPECT_NE(error().find("hcclAllGather: the communicator's ranks are in boxes joined rail by rail: its calls cannot be "
                         "grouped yet"),
            std::string::npos)
      << error();
  ASSERT_EQ(hcclGroupEnd(), hcclSuccess);
  EXPECT_EQ(hcclSend(reinterpret_cast<void*>(buffer), 4, hcclFloat32, 1, box.comms[0], box.streams[0]), hcclInvalidArgument);
  EXPECT_NE(error().find("hcclSend: sends and receives between boxes joined rail by rail are not supported yet"),
            std::string::npos)
      << error();
}

}  // namespace
}  // namespace hpusim::testing
