// A program's own MPI collectives, seen through MPI's profiling interface (each MPI_X here runs
// PMPI_X). In a box split between MPI processes, a process's device moves only while its host
// calls into the simulation; a host blocked in MPI_Allreduce would hold every other process at
// its host time while they may still need their devices to reach the same call. So a collective
// of the program runs in its nonblocking form, and while it is not done this process keeps
// meeting the others, its host away (distributed::ConservativeSync::away_step). It returns with
// the host at the latest entry time of the participants, the time every one of them has arrived,
// which every process computes alike: the cycles do not depend on which process arrived first.
//
// Outside a split box run over MPI (no platform yet, one process, the TCP transport, after the
// process left the run) each call is its PMPI_X alone. libhpusim-synapse.so exports these, so a
// program linked against it before libmpi gets them.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "sim/distributed/conservative_sync.h"
#include "sim/platform/platform.h"

namespace {

using hpusim::distributed::ConservativeSync;
using hpusim::platform::Platform;

// This process's split-box synchronisation over MPI, while it runs windows; nullptr otherwise.
ConservativeSync* split_sync() {
  Platform* platform = Platform::current();
  ConservativeSync* sync = platform != nullptr ? platform->sync() : nullptr;
  if (sync == nullptr || sync->finished() || sync->lookahead() == 0) return nullptr;
  if (std::strcmp(sync->transport().name(), "MPI") != 0) return nullptr;
  return sync;
}

// The MPI_COMM_WORLD ranks of a communicator's processes (both groups of an intercommunicator).
std::vector<int> world_ranks(MPI_Comm comm) {
  MPI_Group world;
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> ranks;
  const auto add = [&](MPI_Group group) {
    int size = 0;
    PMPI_Group_size(group, &size);
    std::vector<int> in(static_cast<size_t>(size)), out(static_cast<size_t>(size));
    std::iota(in.begin(), in.end(), 0);
    PMPI_Group_translate_ranks(group, size, in.data(), world, out.data());
    for (int r : out)
      if (r != MPI_UNDEFINED) ranks.push_back(r);
    PMPI_Group_free(&group);
  };
  MPI_Group local;
  PMPI_Comm_group(comm, &local);
  add(local);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    MPI_Group remote;
    PMPI_Comm_remote_group(comm, &remote);
    add(remote);
  }
  PMPI_Group_free(&world);
  return ranks;
}

// `start` posts the nonblocking form of the program's call; `blocking` is the call itself.
int collective(MPI_Comm comm, const std::function<int(MPI_Request*)>& start, const std::function<int()>& blocking) {
  ConservativeSync* sync = split_sync();
  if (sync == nullptr) return blocking();
  hpusim::cosim::CoSimulation& cosim = Platform::current()->cosim();
  const uint64_t entry_ps = cosim.host_now_ps();
  uint64_t exit_ps = 0;
  MPI_Request requests[2];
  int rc = start(&requests[0]);
  if (rc != MPI_SUCCESS) return rc;
  rc = PMPI_Iallreduce(&entry_ps, &exit_ps, 1, MPI_UINT64_T, MPI_MAX, comm, &requests[1]);
  if (rc != MPI_SUCCESS) {
    PMPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    return rc;
  }
  const std::vector<int> participants = world_ranks(comm);
  cosim.step_while_away([&](uint64_t) {
    sync->away_begin(entry_ps, participants);
    return true;
  });
  for (unsigned idle = 0;;) {
    int done = 0;
    rc = PMPI_Testall(2, requests, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS || done) break;
    if (cosim.step_while_away([&](uint64_t cap_ps) { return sync->away_step(cap_ps); })) {
      idle = 0;
    } else if (++idle > 100) {   // nothing to meet: leave the core to the other processes
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  cosim.step_while_away([&](uint64_t) {
    sync->away_end();
    return true;
  });
  if (rc == MPI_SUCCESS) cosim.host_wait_until(exit_ps);
  return rc;
}

}  // namespace

extern "C" {

int MPI_Barrier(MPI_Comm comm) {
  return collective(comm, [&](MPI_Request* r) { return PMPI_Ibarrier(comm, r); }, [&] { return PMPI_Barrier(comm); });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Ibcast(buffer, count, type, root, comm, r); },
      [&] { return PMPI_Bcast(buffer, count, type, root, comm); });
}

int MPI_Reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Ireduce(send, recv, count, type, op, root, comm, r); },
      [&] { return PMPI_Reduce(send, recv, count, type, op, root, comm); });
}

int MPI_Allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Iallreduce(send, recv, count, type, op, comm, r); },
      [&] { return PMPI_Allreduce(send, recv, count, type, op, comm); });
}

int MPI_Gather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
               MPI_Datatype recv_type, int root, MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) { return PMPI_Igather(send, send_count, send_type, recv, recv_count, recv_type, root, comm, r); },
      [&] { return PMPI_Gather(send, send_count, send_type, recv, recv_count, recv_type, root, comm); });
}

int MPI_Allgather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                  MPI_Datatype recv_type, MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) { return PMPI_Iallgather(send, send_count, send_type, recv, recv_count, recv_type, comm, r); },
      [&] { return PMPI_Allgather(send, send_count, send_type, recv, recv_count, recv_type, comm); });
}

int MPI_Scatter(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                MPI_Datatype recv_type, int root, MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) { return PMPI_Iscatter(send, send_count, send_type, recv, recv_count, recv_type, root, comm, r); },
      [&] { return PMPI_Scatter(send, send_count, send_type, recv, recv_count, recv_type, root, comm); });
}

int MPI_Alltoall(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                 MPI_Datatype recv_type, MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) { return PMPI_Ialltoall(send, send_count, send_type, recv, recv_count, recv_type, comm, r); },
      [&] { return PMPI_Alltoall(send, send_count, send_type, recv, recv_count, recv_type, comm); });
}

}  // extern "C"
