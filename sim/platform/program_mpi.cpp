// A program's own MPI collectives, seen through MPI's profiling interface (each MPI_X here runs
// PMPI_X). In a box split between MPI processes, a process's device moves only while its host
// calls into the simulation; a host blocked in MPI_Allreduce would hold every other process at
// its host time while they may still need their devices to reach the same call. So a collective
// of the program runs in its nonblocking form, and while it is not done this process keeps
// meeting the others, its host away (distributed::ConservativeSync::away_step). It returns with
// the host at the latest entry time of the participants, the time every one of them has arrived,
// which every process computes alike: the cycles do not depend on which process arrived first.
//
// Point-to-point messages (MPI_Send, MPI_Recv, MPI_Sendrecv) carry their sender's host time in a
// header packed before the data. A send is buffered (it returns at once, as a standard-mode send
// may); a receive keeps this process meeting the others with its host away, its participant the
// source (whose next action bounds when the message can have been sent), and returns with the
// host at the later of its own entry time and the sender's: again the same on every split.
//
// Outside a split box run over MPI (no platform yet, one process, the TCP transport, after the
// process left the run) each call is its PMPI_X alone. libhpusim-synapse.so exports these, so a
// program linked against it before libmpi gets them.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <thread>
#include <utility>
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

// Waits for `requests` with this process's host away since `entry_ps`, meeting the others,
// `participants` bounding when its host may act again.
int wait_away(ConservativeSync& sync, uint64_t entry_ps, const std::vector<int>& participants, int count,
              MPI_Request* requests, MPI_Status* statuses) {
  hpusim::cosim::CoSimulation& cosim = Platform::current()->cosim();
  cosim.step_while_away([&](uint64_t) {
    sync.away_begin(entry_ps, participants);
    return true;
  });
  int rc = MPI_SUCCESS;
  for (unsigned idle = 0;;) {
    int done = 0;
    rc = PMPI_Testall(count, requests, &done, statuses);
    if (rc != MPI_SUCCESS || done) break;
    if (cosim.step_while_away([&](uint64_t cap_ps) { return sync.away_step(cap_ps); })) {
      idle = 0;
    } else if (++idle > 100) {   // nothing to meet: leave the core to the other processes
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  cosim.step_while_away([&](uint64_t) {
    sync.away_end();
    return true;
  });
  return rc;
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
  rc = wait_away(*sync, entry_ps, world_ranks(comm), 2, requests, MPI_STATUSES_IGNORE);
  if (rc == MPI_SUCCESS) cosim.host_wait_until(exit_ps);
  return rc;
}

// A point-to-point message's header: the sender's host time and the element count that follows.
constexpr int kHeaderWords = 2;

// Buffered sends not known to be complete, with their packed bytes.
std::vector<std::pair<MPI_Request, std::vector<char>>>& pending_sends() {
  static std::vector<std::pair<MPI_Request, std::vector<char>>> sends;
  return sends;
}

// Drops the buffered sends that completed (all of them, waiting, with `wait`).
void reap_sends(bool wait) {
  auto& sends = pending_sends();
  for (auto it = sends.begin(); it != sends.end();) {
    int done = 0;
    if (wait) {
      PMPI_Wait(&it->first, MPI_STATUS_IGNORE);
      done = 1;
    } else {
      PMPI_Test(&it->first, &done, MPI_STATUS_IGNORE);
    }
    it = done ? sends.erase(it) : it + 1;
  }
}

// The MPI_COMM_WORLD rank of `rank` of `comm` (of its remote group, for an intercommunicator).
int world_rank_of(MPI_Comm comm, int rank) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Group group, world;
  if (inter) {
    PMPI_Comm_remote_group(comm, &group);
  } else {
    PMPI_Comm_group(comm, &group);
  }
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  int out = MPI_UNDEFINED;
  PMPI_Group_translate_ranks(group, 1, &rank, world, &out);
  PMPI_Group_free(&group);
  PMPI_Group_free(&world);
  return out;   // MPI_UNDEFINED for a rank the communicator does not have
}

// Who may send a receive's message: the source, or for MPI_ANY_SOURCE the other process of a
// two-process communicator. Empty when that cannot be known (any source among several): the
// receive then waits without meeting the others.
std::vector<int> senders(MPI_Comm comm, int source) {
  if (source != MPI_ANY_SOURCE) {
    const int world = world_rank_of(comm, source);
    return world != MPI_UNDEFINED ? std::vector<int>{world} : std::vector<int>{};
  }
  std::vector<int> ranks = world_ranks(comm);
  int me = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  ranks.erase(std::remove(ranks.begin(), ranks.end(), me), ranks.end());
  if (ranks.size() == 1) return ranks;
  static bool warned = false;
  if (!warned) {
    warned = true;
    std::fprintf(stderr,
                 "hpusim: MPI_Recv from MPI_ANY_SOURCE among %zu other processes is not kept in step with the "
                 "split box: it waits without the simulation moving, so a sender that needs its device to reach "
                 "its send waits for ever\n",
                 ranks.size());
  }
  return {};
}

// Sizes `packed` for a message of `count` elements of `type` behind its header.
int packed_buffer(int count, MPI_Datatype type, MPI_Comm comm, std::vector<char>& packed) {
  int header_bytes = 0, data_bytes = 0;
  int rc = PMPI_Pack_size(kHeaderWords, MPI_UINT64_T, comm, &header_bytes);
  if (rc == MPI_SUCCESS) rc = PMPI_Pack_size(count, type, comm, &data_bytes);
  if (rc == MPI_SUCCESS) packed.resize(static_cast<size_t>(header_bytes) + static_cast<size_t>(data_bytes));
  return rc;
}

int send(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  ConservativeSync* sync = split_sync();
  if (sync == nullptr || dest == MPI_PROC_NULL) return PMPI_Send(buffer, count, type, dest, tag, comm);
  reap_sends(false);
  std::vector<char> packed;
  int rc = packed_buffer(count, type, comm, packed);
  if (rc != MPI_SUCCESS) return rc;
  const uint64_t header[kHeaderWords] = {Platform::current()->cosim().host_now_ps(), static_cast<uint64_t>(count)};
  int position = 0;
  rc = PMPI_Pack(header, kHeaderWords, MPI_UINT64_T, packed.data(), static_cast<int>(packed.size()), &position, comm);
  if (rc == MPI_SUCCESS) rc = PMPI_Pack(buffer, count, type, packed.data(), static_cast<int>(packed.size()), &position, comm);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Request request;
  rc = PMPI_Isend(packed.data(), position, MPI_PACKED, dest, tag, comm, &request);
  if (rc == MPI_SUCCESS) pending_sends().emplace_back(request, std::move(packed));
  return rc;
}

int receive(void* buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  ConservativeSync* sync = split_sync();
  if (sync == nullptr || source == MPI_PROC_NULL) return PMPI_Recv(buffer, count, type, source, tag, comm, status);
  reap_sends(false);
  hpusim::cosim::CoSimulation& cosim = Platform::current()->cosim();
  const uint64_t entry_ps = cosim.host_now_ps();
  std::vector<char> packed;
  int rc = packed_buffer(count, type, comm, packed);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Request request;
  rc = PMPI_Irecv(packed.data(), static_cast<int>(packed.size()), MPI_PACKED, source, tag, comm, &request);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status received;
  const std::vector<int> from = senders(comm, source);
  rc = from.empty() ? PMPI_Wait(&request, &received) : wait_away(*sync, entry_ps, from, 1, &request, &received);
  if (rc != MPI_SUCCESS) return rc;
  int length = 0, position = 0;
  PMPI_Get_count(&received, MPI_PACKED, &length);
  uint64_t header[kHeaderWords] = {0, 0};
  rc = PMPI_Unpack(packed.data(), length, &position, header, kHeaderWords, MPI_UINT64_T, comm);
  if (rc != MPI_SUCCESS) return rc;
  if (header[1] > static_cast<uint64_t>(count)) return MPI_ERR_TRUNCATE;
  rc = PMPI_Unpack(packed.data(), length, &position, buffer, static_cast<int>(header[1]), type, comm);
  if (rc != MPI_SUCCESS) return rc;
  if (status != MPI_STATUS_IGNORE) {
    *status = received;
    PMPI_Status_set_elements(status, type, static_cast<int>(header[1]));
  }
  cosim.host_wait_until(std::max(entry_ps, header[0]));
  return MPI_SUCCESS;
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

int MPI_Send(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return send(buffer, count, type, dest, tag, comm);
}

int MPI_Recv(void* buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  return receive(buffer, count, type, source, tag, comm, status);
}

int MPI_Sendrecv(const void* send_buffer, int send_count, MPI_Datatype send_type, int dest, int send_tag,
                 void* recv_buffer, int recv_count, MPI_Datatype recv_type, int source, int recv_tag, MPI_Comm comm,
                 MPI_Status* status) {
  if (split_sync() == nullptr) {
    return PMPI_Sendrecv(send_buffer, send_count, send_type, dest, send_tag, recv_buffer, recv_count, recv_type, source,
                         recv_tag, comm, status);
  }
  const int rc = send(send_buffer, send_count, send_type, dest, send_tag, comm);
  return rc != MPI_SUCCESS ? rc : receive(recv_buffer, recv_count, recv_type, source, recv_tag, comm, status);
}

// The buffered sends complete before MPI ends.
int MPI_Finalize() {
  reap_sends(true);
  return PMPI_Finalize();
}

}  // extern "C"
