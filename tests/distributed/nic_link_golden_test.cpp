// The NIC link scenario (link_scenario.h) with both ports in this process: its completion times
// are the golden ones the two-process run (nic_link_mpi_test.cpp) must reproduce.
#include <gtest/gtest.h>

#include "tests/distributed/link_scenario.h"
#include "tests/support/golden.h"

namespace hpusim::testing {
namespace {

TEST(NicLinkGolden, ASendAcrossALinkCompletesAtTheGoldenTimes) {
  const preset::Card card = preset::load_preset("hl205");
  Side a("a", card, 0), b("b", card, 0);
  a.nic->set_address(hw::nic_address(0, 0));
  b.nic->set_address(hw::nic_address(1, 0));
  NicPort::connect(*a.nic, *b.nic);
  Recorder ra, rb;
  a.nic->set_observer(&ra);
  b.nic->set_observer(&rb);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  const std::vector<uint8_t> data = pattern(kLinkBytes, 3);
  a.poke(link_source(a), data);
  post_now(*b.nic, hw::NicOp::Recv, link_destination(b), kLinkBytes);
  post_now(*a.nic, hw::NicOp::Send, link_source(a), kLinkBytes);
  run_until_idle({a.nic.get(), b.nic.get()}, 10'000'000'000);
  ASSERT_EQ(ra.done.size(), 1u);
  ASSERT_EQ(rb.done.size(), 1u);
  EXPECT_TRUE(b.peek(link_destination(b), kLinkBytes) == data);
  GoldenFile golden("nic_link.txt");
  golden.check("send_done_ps", ra.done[0].at);
  golden.check("recv_done_ps", rb.done[0].at);
  golden.check("tx_packets", a.nic->stats().tx_packets);
}

}  // namespace
}  // namespace hpusim::testing
