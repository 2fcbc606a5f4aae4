// Processes (ranks of an MPI run, or of a TCP rendezvous: transport.h) that each simulate part of
// a system joined at NIC links, kept in step by conservative synchronisation, as SST does
// (reference: collectives-and-scale-out, section 4). The lookahead L is the smallest latency of
// the links between processes, agreed by all ranks.
//
// Time is cut in windows that end at the same time on every rank. A rank runs its device freely
// inside the current window; at its end it meets the others: each hands over what its links'
// remote ends sent (delivered to the far ports before it is due) and says how soon it could next
// send anything: e = the earliest of its run's target (its host acts no sooner), its next pending
// event and the arrivals it just sent. The next window ends at min(e) + L - 1 over all ranks, so
// anything sent inside it arrives after it ends, and idle stretches pass in one window. A port
// therefore sees the same arrivals at the same times as with its peer in its own process.
//
// A rank runs windows only when its own host or loop asks it to (through the co-simulation, as
// its DeviceRunner), so every rank must keep calling in until all are done: leave() says this
// rank is done and keeps it meeting the others until every rank has left.
//
// A rank's host may also be away in a collective call of its program (MPI_Allreduce, a barrier:
// calls that return only once every participant has entered them). It keeps meeting the others
// (away_step), and its host acts again no sooner than the latest entry time of the participants:
// at each meeting a participant still running counts with how soon it may act (it enters later),
// one already away with its own such bound (no sooner than its entry time; the bounds of ranks
// away waiting on each other are their fixed point). So the others are not held at the away
// host's entry time, and its own device runs no further than its host may already be. A host
// away in a receive from any of several sources waits for the first of them instead.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "hw/common/mem_protocol.h"
#include "hw/nic/nic_remote_end.h"
#include "sim/cosim/device_runner.h"
#include "sim/distributed/transport.h"

namespace hpusim::distributed {

struct SyncStats {
  uint64_t windows = 0;             // meetings at a window's end
  uint64_t windows_with_data = 0;   // of which some rank sent messages
  uint64_t messages_sent = 0, bytes_sent = 0;
  uint64_t longest_window_ps = 0;
  double wait_s = 0;                // wall time waiting for the other ranks
};

class ConservativeSync : public cosim::DeviceRunner {
 public:
  // Every rank of `transport` takes part (by default MPI_COMM_WORLD's, on a duplicate of it, so
  // the program's own MPI messages never mix with the synchronisation's).
  explicit ConservativeSync(std::unique_ptr<Transport> transport = mpi_transport());
  ~ConservativeSync() override;
  ConservativeSync(const ConservativeSync&) = delete;
  ConservativeSync& operator=(const ConservativeSync&) = delete;

  int rank() const { return rank_; }
  int ranks() const { return size_; }
  // A link end whose far port is simulated by `peer_rank` (before start()).
  void add(hw::NicRemoteEnd& end, int peer_rank);
  // Collective, before any window: the lookahead is the smallest of every rank's
  // `link_latency_ps` (the latency of its links to other ranks; UINT64_MAX for none) and the first
  // window starts at the latest of every rank's `start_ps`, which it returns: no link may carry
  // anything before it (std::logic_error otherwise). Throws std::invalid_argument for a lookahead
  // under 2 ps.
  hw::Picoseconds start(hw::Picoseconds link_latency_ps, hw::Picoseconds start_ps);
  hw::Picoseconds lookahead() const { return lookahead_; }
  hw::Picoseconds window_end() const { return window_end_; }

  // Simulation thread (DeviceRunner): runs towards `target_ps`, stopping at the window's end
  // (after meeting the others there) or when the kernel is paused.
  void run_towards(uint64_t target_ps) override;
  // Simulation thread: runs to `target_ps`, window by window.
  void run_to(uint64_t target_ps);
  // Simulation thread, collective: this rank has nothing more of its own to simulate; it keeps
  // running windows (its ports still answer) until every rank has left. Nothing runs after.
  void leave();
  bool finished() const { return finished_; }

  // Simulation thread, between away_begin and away_end: this rank's host is in a collective call
  // of its program that it entered at host time `entry_ps`, with the ranks `participants` (itself
  // among them). away_step runs the device no further than the host may act again (the latest
  // entry time the participants may still have) nor past `cap_ps`, then meets the others once;
  // false when there is nothing to meet (no links between the ranks). With `any_participant`
  // the host waits for the first of them instead (a receive from any of several sources): it may
  // act again as soon as the earliest of them may.
  void away_begin(hw::Picoseconds entry_ps, const std::vector<int>& participants, bool any_participant = false);
  bool away_step(hw::Picoseconds cap_ps);
  void away_end();

  // How soon `rank`'s host may act again, as the last meeting told (its entry time when it is
  // away; 0 before any meeting): nothing it does from now on happens at an earlier host time.
  hw::Picoseconds action_bound(int rank) const;
  // Whether `rank`'s host, as the last meeting told, is away in a call that cannot end before
  // `other`'s host acts again: it waits for `other` (a collective `other` has not entered, a
  // receive from it), or for a rank that does, and so on.
  bool waits_on(int rank, int other) const;

  // Collective, outside the windows (before start() or after leave()): the largest `value` of any
  // rank.
  uint64_t agree_max(uint64_t value);

  const SyncStats& stats() const { return stats_; }
  Transport& transport() { return *transport_; }

 private:
  // `target_ps`: when this rank's host asked the device to be (kNever when it is away or left).
  void meet(uint64_t target_ps, bool leaving);
  // Every rank's words, the time spent waiting counted.
  std::vector<uint64_t> allgather(const std::vector<uint64_t>& mine);

  std::unique_ptr<Transport> transport_;
  int rank_ = 0, size_ = 1;
  hw::Picoseconds lookahead_ = 0;
  hw::Picoseconds window_end_ = 0;
  bool finished_ = false;
  // Away in a program's collective: the entry time, the participants as a bit per rank, and the
  // earliest time the host may act again as known from the last meeting.
  bool away_ = false, away_any_ = false;
  hw::Picoseconds away_entry_ps_ = 0, away_resume_ps_ = 0;
  std::vector<uint64_t> away_mask_;
  std::vector<uint64_t> action_bounds_;   // each rank's, from the last meeting
  std::vector<std::vector<int>> waits_for_;   // each rank away in a call for all its participants: them
  std::vector<std::pair<hw::NicRemoteEnd*, int>> ends_;
  std::map<uint32_t, hw::NicRemoteEnd*> by_link_;
  SyncStats stats_;
};

}  // namespace hpusim::distributed
