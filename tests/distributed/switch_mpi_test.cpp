// The switch scenario (switch_scenario.h) with the box split between two processes: card 0 and
// the box's scale-out switch in rank 0, card 1 in rank 1, card 1's port 7 joined to its switch
// port through remote link ends. Both ports and the switch give the picoseconds of the one-process
// run (tests/golden/switch_link.txt). Run by ctest as `mpirun -np 2`.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "hw/nic/nic_switch.h"
#include "tests/distributed/switch_scenario.h"
#include "tests/support/golden.h"

namespace hpusim::testing {
namespace {

TEST(SwitchAcrossProcesses, TwoCardsSwapBuffersThroughTheSwitchAtTheOneProcessTimes) {
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  ASSERT_EQ(ranks, 2) << "run with mpirun -np 2";
  // Per rank: completed, data ok, first and last tx, tx packets, credit stall, and (rank 0, which
  // has the switch) its two busy times.
  unsigned long long mine[8] = {}, all[16] = {};
  {
    platform::PlatformOptions options = hls1(2);
    options.distributed = true;
    platform::Platform box(options);
    const unsigned track = box.reserve_host_track("card " + std::to_string(rank), box.host_now_ps());
    SwapResult r;
    std::thread card([&] { r = swap_through_switch(box, track, 0, static_cast<unsigned>(rank)); });
    card.join();
    mine[0] = r.completed;
    mine[1] = r.data_ok;
    mine[2] = r.port.first_tx_ps;
    mine[3] = r.port.last_tx_ps;
    mine[4] = r.port.tx_packets;
    mine[5] = r.port.credit_stall_ps;
    const hw::NicSwitch* fabric = box.nic_switch();
    EXPECT_EQ(fabric != nullptr, rank == 0) << "the switch lives in the process of card 0";
    if (fabric != nullptr) {
      box.cosim().on_sim_thread([&] {
        mine[6] = fabric->port_stats(0).busy_ps;
        mine[7] = fabric->port_stats(3).busy_ps;
      });
    }
  }   // both processes leave the run before they meet outside it
  MPI_Gather(mine, 8, MPI_UNSIGNED_LONG_LONG, all, 8, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  for (unsigned c = 0; c < 2; ++c) {
    EXPECT_EQ(all[8 * c], 1u) << "card " << c << "'s CS completed";
    EXPECT_EQ(all[8 * c + 1], 1u) << "card " << c << " got the other's buffer";
  }
  if (std::getenv("HPUSIM_UPDATE_GOLDEN") != nullptr) GTEST_SKIP() << "the one-process test records the golden times";
  GoldenFile golden("switch_link.txt");
  for (unsigned c = 0; c < 2; ++c) {
    const std::string card = "card" + std::to_string(c) + "_";
    golden.check(card + "first_tx_ps", all[8 * c + 2]);
    golden.check(card + "last_tx_ps", all[8 * c + 3]);
    golden.check(card + "tx_packets", all[8 * c + 4]);
    golden.check(card + "credit_stall_ps", all[8 * c + 5]);
  }
  golden.check("switch_port0_busy_ps", all[6]);
  golden.check("switch_port3_busy_ps", all[7]);
}

}  // namespace
}  // namespace hpusim::testing

#include "tests/distributed/mpi_test_main.h"
