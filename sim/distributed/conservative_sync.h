// Processes (MPI ranks) that each simulate part of a system joined at NIC links, kept in step by
// conservative synchronisation, as SST does (reference: collectives-and-scale-out, section 4): the
// lookahead is the smallest latency of the links between processes, agreed by all ranks. Each
// window, every rank simulates one lookahead (less a picosecond, so a message is always due after
// the window it was sent in), then the ranks exchange what their links' remote ends sent and each
// injects what came for it, before it is due. The result does not depend on the number of
// processes: a port sees the same arrivals at the same times as with its peer in its own process.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "hw/common/mem_protocol.h"
#include "hw/nic/nic_remote_end.h"

namespace hpusim::distributed {

struct SyncStats {
  uint64_t windows = 0;
  uint64_t messages_sent = 0, bytes_sent = 0;
};

class ConservativeSync {
 public:
  // MPI must be initialised (and outlive this object).
  explicit ConservativeSync(MPI_Comm comm = MPI_COMM_WORLD);

  int rank() const { return rank_; }
  int ranks() const { return size_; }
  // A link end whose far port is simulated by `peer_rank` (before start()).
  void add(hw::NicRemoteEnd& end, int peer_rank);
  // Collective: the lookahead is the smallest of every rank's `link_latency_ps` (the latency of
  // its links to other ranks). Throws std::invalid_argument for a lookahead under 2 ps.
  void start(hw::Picoseconds link_latency_ps);
  hw::Picoseconds lookahead() const { return lookahead_; }

  // Collective: simulates window by window while `busy` holds on any rank (and one window after,
  // for what is still on the links), at most until `limit_ps` of simulated time. False if the
  // limit was reached first.
  bool run_while(const std::function<bool()>& busy, hw::Picoseconds limit_ps);

  const SyncStats& stats() const { return stats_; }

 private:
  void window();
  void exchange();

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  hw::Picoseconds lookahead_ = 0;
  std::vector<std::pair<hw::NicRemoteEnd*, int>> ends_;
  std::map<uint32_t, hw::NicRemoteEnd*> by_link_;
  SyncStats stats_;
};

}  // namespace hpusim::distributed
