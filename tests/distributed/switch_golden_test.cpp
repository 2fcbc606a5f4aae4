// The switch scenario (switch_scenario.h) with both cards and the switch in this process, each
// card on a host thread of its own: its times are the golden ones the two-process run
// (switch_mpi_test.cpp) must reproduce.
#include <gtest/gtest.h>

#include <array>
#include <thread>
#include <utility>

#include "hw/nic/nic_switch.h"
#include "tests/distributed/switch_scenario.h"
#include "tests/support/golden.h"

namespace hpusim::testing {
namespace {

TEST(SwitchGolden, TwoCardsSwapBuffersThroughTheScaleOutSwitchAtTheGoldenTimes) {
  platform::Platform box(hls1(2));
  std::array<SwapResult, 2> result;
  const uint64_t start_ps = box.host_now_ps();
  std::array<unsigned, 2> tracks{box.reserve_host_track("card 0", start_ps), box.reserve_host_track("card 1", start_ps)};
  std::thread zero([&] { result[0] = swap_through_switch(box, tracks[0], 0, 0); });
  std::thread one([&] { result[1] = swap_through_switch(box, tracks[1], 1, 1); });
  zero.join();
  one.join();
  GoldenFile golden("switch_link.txt");
  for (unsigned c = 0; c < 2; ++c) {
    ASSERT_TRUE(result[c].completed) << "card " << c;
    EXPECT_TRUE(result[c].data_ok) << "card " << c << " got the other's buffer";
    EXPECT_EQ(result[c].port.rx_bytes, swapped_bytes(1 - c)) << "card " << c;
    const std::string card = "card" + std::to_string(c) + "_";
    golden.check(card + "first_tx_ps", result[c].port.first_tx_ps);
    golden.check(card + "last_tx_ps", result[c].port.last_tx_ps);
    golden.check(card + "tx_packets", result[c].port.tx_packets);
    golden.check(card + "credit_stall_ps", result[c].port.credit_stall_ps);
  }
  const hw::NicSwitch* fabric = box.nic_switch();
  ASSERT_NE(fabric, nullptr);
  const auto [to_card0, to_card1] = box.cosim().on_sim_thread([&] { return std::pair{fabric->port_stats(0), fabric->port_stats(3)}; });
  EXPECT_EQ(to_card0.bytes, swapped_bytes(1)) << "switch port 0 is card 0's port 7";
  EXPECT_EQ(to_card1.bytes, swapped_bytes(0)) << "switch port 3 is card 1's port 7";
  golden.check("switch_port0_busy_ps", to_card0.busy_ps);
  golden.check("switch_port3_busy_ps", to_card1.busy_ps);
}

}  // namespace
}  // namespace hpusim::testing
