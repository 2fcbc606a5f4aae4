// The NIC link scenario (link_scenario.h) across two processes: rank 0 simulates card a, rank 1
// card b, their ports joined through remote link ends and kept in step by the conservative
// synchronisation (sim/distributed). The data arrives whole and the send and the receive complete
// at the same picoseconds as with both cards in one process (tests/golden/nic_link.txt). Run by
// ctest as `mpirun -np 2`.
#include <gtest/gtest.h>
#include <mpi.h>

#include "hw/nic/nic_remote_end.h"
#include "sim/distributed/conservative_sync.h"
#include "tests/distributed/link_scenario.h"
#include "tests/support/golden.h"

namespace hpusim::testing {
namespace {

TEST(NicLinkAcrossProcesses, ASendCompletesAtTheTimesOfTheOneProcessRun) {
  distributed::ConservativeSync sync;
  ASSERT_EQ(sync.ranks(), 2) << "run with mpirun -np 2";
  const int rank = sync.rank();
  const preset::Card card = preset::load_preset("hl205");
  Side side(rank == 0 ? "a" : "b", card, 0);
  side.nic->set_address(hw::nic_address(static_cast<uint32_t>(rank), 0));
  hw::NicRemoteEnd end("remote", /*link=*/0);
  end.attach(*side.nic, hw::nic_address(static_cast<uint32_t>(1 - rank), 0), side.nic->config().rx_buffer_packets);
  sync.add(end, 1 - rank);
  sync.start(side.nic->config().latency_ps, 0);
  Recorder recorder;
  side.nic->set_observer(&recorder);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  const std::vector<uint8_t> data = pattern(kLinkBytes, 3);
  if (rank == 0) {
    side.poke(link_source(side), data);
    post_now(*side.nic, hw::NicOp::Send, link_source(side), kLinkBytes);
  } else {
    post_now(*side.nic, hw::NicOp::Recv, link_destination(side), kLinkBytes);
  }
  NicPort* nic = side.nic.get();
  // Each rank runs while its port works, then leaves: it keeps answering until the other is done.
  do {
    sync.run_to(hw::now_ps() + sync.lookahead());
  } while (!nic->engine_idle() && hw::now_ps() < 10'000'000'000);
  sync.leave();
  ASSERT_EQ(recorder.done.size(), 1u) << "rank " << rank;
  if (rank == 1) EXPECT_TRUE(side.peek(link_destination(side), kLinkBytes) == data) << "the data arrived whole";
  // Rank 0 checks both times against the one-process run's.
  unsigned long long mine = recorder.done[0].at, times[2] = {};
  MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, times, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  unsigned long long packets = side.nic->stats().tx_packets, tx[2] = {};
  MPI_Gather(&packets, 1, MPI_UNSIGNED_LONG_LONG, tx, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (std::getenv("HPUSIM_UPDATE_GOLDEN") != nullptr) GTEST_SKIP() << "the one-process test records the golden times";
    GoldenFile golden("nic_link.txt");
    golden.check("send_done_ps", times[0]);
    golden.check("recv_done_ps", times[1]);
    golden.check("tx_packets", tx[0]);
    std::printf("rank 0: %llu windows (lookahead %llu ps), %llu messages, %llu bytes exchanged\n",
                static_cast<unsigned long long>(sync.stats().windows), static_cast<unsigned long long>(sync.lookahead()),
                static_cast<unsigned long long>(sync.stats().messages_sent), static_cast<unsigned long long>(sync.stats().bytes_sent));
  }
}

}  // namespace
}  // namespace hpusim::testing

#include "tests/distributed/mpi_test_main.h"
