// A program's own MPI collectives, seen through MPI's profiling interface (each MPI_X here runs
// PMPI_X). In a box split between MPI processes, a process's device moves only while its host
// calls into the simulation; a host blocked in MPI_Allreduce would hold every other process at
// its host time while they may still need their devices to reach the same call. So a collective
// of the program runs in its nonblocking form, and while it is not done this process keeps
// meeting the others, its host away (program_mpi.h). It returns with the host at the latest entry
// time of the participants, the time every one of them has arrived, which every process computes
// alike: the cycles do not depend on which process arrived first. A nonblocking collective of the
// program's is waited for so in MPI_Wait and its kin (program_mpi.cpp). Outside a split box run over
// MPI each call is its PMPI_X alone.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "sim/platform/platform.h"
#include "sim/platform/program_mpi.h"

namespace hpusim::platform::program_mpi {

// `start` posts the nonblocking form of the program's call; `blocking` is the call itself. The
// entry times' reduction is posted first (every process issues the two in the same order). The
// host is away for the communicator's processes, or, given, for the first of `any_of` to act.
int collective(MPI_Comm comm, const std::function<int(MPI_Request*)>& start, const std::function<int()>& blocking,
               const std::vector<int>& any_of) {
  distributed::ConservativeSync* sync = split_sync();
  if (sync == nullptr) return blocking();
  cosim::CoSimulation& cosim = Platform::current()->cosim();
  const uint64_t entry_ps = cosim.host_now_ps();
  uint64_t exit_ps = 0;
  MPI_Request requests[2];
  int rc = PMPI_Iallreduce(&entry_ps, &exit_ps, 1, MPI_UINT64_T, MPI_MAX, comm, &requests[0]);
  if (rc != MPI_SUCCESS) return rc;
  rc = start(&requests[1]);
  if (rc != MPI_SUCCESS) {
    PMPI_Wait(&requests[0], MPI_STATUS_IGNORE);
    return rc;
  }
  rc = wait_away(*sync, entry_ps, any_of.empty() ? world_ranks(comm) : any_of,
                 [&](int* done) { return PMPI_Testall(2, requests, done, MPI_STATUSES_IGNORE); }, !any_of.empty());
  if (rc == MPI_SUCCESS) cosim.host_wait_until(exit_ps);
  return rc;
}

namespace {
int call_status(void*, MPI_Status* status) {
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;
  return PMPI_Status_set_elements(status, MPI_BYTE, 0);
}
int call_free(void*) { return MPI_SUCCESS; }
int call_cancel(void*, int) { return MPI_SUCCESS; }
}  // namespace

// A collective with no nonblocking form (the communicator constructors) runs on a thread of its
// own, its end a generalized request, while this thread keeps meeting the others as for any
// collective. That needs MPI_THREAD_MULTIPLE (the platform asks for it, as mpi4py does); with less,
// the call waits in MPI, and may wait for ever for a process whose card must still move (said).
int on_own_thread(MPI_Comm comm, const char* name, const std::function<int()>& blocking,
                  const std::vector<int>& any_of) {
  if (split_sync() == nullptr) return blocking();
  int level = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "hpusim: %s in a split box is kept in step only with MPI_THREAD_MULTIPLE; it waits in MPI, "
                         "for ever if a process's card must still move before it gets there\n", name);
    return blocking();
  }
  int call_rc = MPI_SUCCESS;
  std::thread caller;
  const int rc = collective(
      comm,
      [&](MPI_Request* request) {
        const int started = PMPI_Grequest_start(call_status, call_free, call_cancel, nullptr, request);
        if (started == MPI_SUCCESS) {
          caller = std::thread([&call_rc, &blocking, done = *request] {
            call_rc = blocking();
            PMPI_Grequest_complete(done);
          });
        }
        return started;
      },
      blocking, any_of);
  if (caller.joinable()) caller.join();
  return rc != MPI_SUCCESS ? rc : call_rc;
}


}  // namespace hpusim::platform::program_mpi

namespace {

using hpusim::distributed::ConservativeSync;
using hpusim::platform::Platform;
using namespace hpusim::platform::program_mpi;

// The program's nonblocking collectives in a split box, by the request it holds, each with the
// reduction of its processes' entry times, posted before it (as in collective()), so that its wait
// leaves at the latest entry; and its processes, kept for the wait (the program may free the
// communicator first). (Never destroyed: MPI_Finalize may run from the platform's exit handler.)
struct Started {
  std::vector<int> participants;
  uint64_t entry_ps = 0;
  uint64_t exit_ps = 0;
  MPI_Request entries = MPI_REQUEST_NULL;
};

std::map<MPI_Request, std::unique_ptr<Started>>& started() {
  static auto* collectives = new std::map<MPI_Request, std::unique_ptr<Started>>;
  return *collectives;
}

// `start` posts the program's nonblocking collective on `comm` into `request`.
int nonblocking(MPI_Comm comm, MPI_Request* request, const std::function<int(MPI_Request*)>& start) {
  if (split_sync() == nullptr) return start(request);
  auto collective = std::make_unique<Started>();
  collective->participants = world_ranks(comm);
  collective->entry_ps = Platform::current()->cosim().host_now_ps();
  int rc = PMPI_Iallreduce(&collective->entry_ps, &collective->exit_ps, 1, MPI_UINT64_T, MPI_MAX, comm,
                           &collective->entries);
  if (rc != MPI_SUCCESS) return rc;
  rc = start(request);
  if (rc != MPI_SUCCESS) {
    PMPI_Wait(&collective->entries, MPI_STATUS_IGNORE);
    return rc;
  }
  started().emplace(*request, std::move(collective));
  return MPI_SUCCESS;
}

// Whether the program's collective and its entry times' reduction are both done (the first not
// completed yet).
int both_done(MPI_Request request, Started& collective, int* done) {
  int finished = 0, entered = 0;
  int rc = PMPI_Request_get_status(request, &finished, MPI_STATUS_IGNORE);
  if (rc == MPI_SUCCESS) rc = PMPI_Test(&collective.entries, &entered, MPI_STATUS_IGNORE);
  *done = finished && entered;
  return rc;
}

}  // namespace

namespace hpusim::platform::program_mpi {

bool is_started_collective(MPI_Request request) {
  return request != MPI_REQUEST_NULL && started().count(request) != 0;
}

int finish_started(MPI_Request* request, MPI_Status* status) {
  started().erase(*request);
  return PMPI_Wait(request, status);
}

int wait_started(MPI_Request* request, MPI_Status* status) {
  Started& collective = *started().at(*request);
  ConservativeSync* sync = split_sync();
  if (sync == nullptr) {   // the run has ended
    PMPI_Wait(&collective.entries, MPI_STATUS_IGNORE);
    return finish_started(request, status);
  }
  hpusim::cosim::CoSimulation& cosim = Platform::current()->cosim();
  const uint64_t entry_ps = cosim.host_now_ps();
  const int rc = wait_away(*sync, entry_ps, collective.participants,
                           [&](int* done) { return both_done(*request, collective, done); });
  if (rc != MPI_SUCCESS) return rc;
  cosim.host_wait_until(std::max(entry_ps, collective.exit_ps));
  return finish_started(request, status);
}

// Done once every process entered by the host's time; one not known to have entered may still be
// on its way (said once).
int started_ready(MPI_Request request, int* done) {
  Started& collective = *started().at(request);
  const int rc = both_done(request, collective, done);
  if (rc != MPI_SUCCESS) return rc;
  if (!*done) {
    say_unsettled();
    return MPI_SUCCESS;
  }
  *done = split_sync() == nullptr || collective.exit_ps <= Platform::current()->cosim().host_now_ps();
  return MPI_SUCCESS;
}

}  // namespace hpusim::platform::program_mpi

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

int MPI_Gatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
                const int displacements[], MPI_Datatype recv_type, int root, MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) {
        return PMPI_Igatherv(send, send_count, send_type, recv, recv_counts, displacements, recv_type, root, comm, r);
      },
      [&] { return PMPI_Gatherv(send, send_count, send_type, recv, recv_counts, displacements, recv_type, root, comm); });
}

int MPI_Allgatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
                   const int displacements[], MPI_Datatype recv_type, MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) {
        return PMPI_Iallgatherv(send, send_count, send_type, recv, recv_counts, displacements, recv_type, comm, r);
      },
      [&] { return PMPI_Allgatherv(send, send_count, send_type, recv, recv_counts, displacements, recv_type, comm); });
}

int MPI_Scatterv(const void* send, const int send_counts[], const int displacements[], MPI_Datatype send_type,
                 void* recv, int recv_count, MPI_Datatype recv_type, int root, MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) {
        return PMPI_Iscatterv(send, send_counts, displacements, send_type, recv, recv_count, recv_type, root, comm, r);
      },
      [&] { return PMPI_Scatterv(send, send_counts, displacements, send_type, recv, recv_count, recv_type, root, comm); });
}

int MPI_Alltoallv(const void* send, const int send_counts[], const int send_displacements[], MPI_Datatype send_type,
                  void* recv, const int recv_counts[], const int recv_displacements[], MPI_Datatype recv_type,
                  MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) {
        return PMPI_Ialltoallv(send, send_counts, send_displacements, send_type, recv, recv_counts, recv_displacements,
                               recv_type, comm, r);
      },
      [&] {
        return PMPI_Alltoallv(send, send_counts, send_displacements, send_type, recv, recv_counts, recv_displacements,
                              recv_type, comm);
      });
}

int MPI_Alltoallw(const void* send, const int send_counts[], const int send_displacements[],
                  const MPI_Datatype send_types[], void* recv, const int recv_counts[], const int recv_displacements[],
                  const MPI_Datatype recv_types[], MPI_Comm comm) {
  return collective(
      comm,
      [&](MPI_Request* r) {
        return PMPI_Ialltoallw(send, send_counts, send_displacements, send_types, recv, recv_counts, recv_displacements,
                               recv_types, comm, r);
      },
      [&] {
        return PMPI_Alltoallw(send, send_counts, send_displacements, send_types, recv, recv_counts, recv_displacements,
                              recv_types, comm);
      });
}

int MPI_Reduce_scatter(const void* send, void* recv, const int recv_counts[], MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Ireduce_scatter(send, recv, recv_counts, type, op, comm, r); },
      [&] { return PMPI_Reduce_scatter(send, recv, recv_counts, type, op, comm); });
}

int MPI_Reduce_scatter_block(const void* send, void* recv, int recv_count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Ireduce_scatter_block(send, recv, recv_count, type, op, comm, r); },
      [&] { return PMPI_Reduce_scatter_block(send, recv, recv_count, type, op, comm); });
}

int MPI_Scan(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Iscan(send, recv, count, type, op, comm, r); },
      [&] { return PMPI_Scan(send, recv, count, type, op, comm); });
}

int MPI_Exscan(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Iexscan(send, recv, count, type, op, comm, r); },
      [&] { return PMPI_Exscan(send, recv, count, type, op, comm); });
}

// Communicators (mpi4py duplicates a program's communicator for its own messages).
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* copy) {
  return collective(
      comm, [&](MPI_Request* r) { return PMPI_Comm_idup(comm, copy, r); }, [&] { return PMPI_Comm_dup(comm, copy); });
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* copy) {
  return on_own_thread(comm, "MPI_Comm_dup_with_info", [&] { return PMPI_Comm_dup_with_info(comm, info, copy); });
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* part) {
  return on_own_thread(comm, "MPI_Comm_split", [&] { return PMPI_Comm_split(comm, color, key, part); });
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* part) {
  return on_own_thread(comm, "MPI_Comm_split_type", [&] { return PMPI_Comm_split_type(comm, split_type, key, info, part); });
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* created) {
  return on_own_thread(comm, "MPI_Comm_create", [&] { return PMPI_Comm_create(comm, group, created); });
}

int MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* merged) {
  return on_own_thread(intercomm, "MPI_Intercomm_merge", [&] { return PMPI_Intercomm_merge(intercomm, high, merged); });
}

// Each group makes it among its own processes, waiting for the other group, whose processes are
// not known before: the host is away until the first process of MPI_COMM_WORLD may act (the
// communicator's alone would hold the others at the entry of a group of one). A barrier on the
// new intercommunicator then takes both groups to the latest entry of all (a reduction there
// gives each group the other's).
int MPI_Intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer, int remote_leader, int tag,
                         MPI_Comm* intercomm) {
  const int rc = on_own_thread(
      local, "MPI_Intercomm_create",
      [&] { return PMPI_Intercomm_create(local, local_leader, peer, remote_leader, tag, intercomm); },
      split_sync() != nullptr ? world_ranks(MPI_COMM_WORLD) : std::vector<int>{});
  if (rc != MPI_SUCCESS || split_sync() == nullptr) return rc;
  return collective(
      *intercomm, [&](MPI_Request* r) { return PMPI_Ibarrier(*intercomm, r); }, [&] { return PMPI_Barrier(*intercomm); });
}

int MPI_Cart_create(MPI_Comm comm, int dimensions, const int sizes[], const int periodic[], int reorder,
                    MPI_Comm* cartesian) {
  return on_own_thread(comm, "MPI_Cart_create", [&] { return PMPI_Cart_create(comm, dimensions, sizes, periodic, reorder, cartesian); });
}

// The nonblocking collectives: their waits and tests are program_mpi.cpp's, which ask
// is_started_collective().
int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) { return PMPI_Ibarrier(comm, r); });
}

int MPI_Ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) { return PMPI_Ibcast(buffer, count, type, root, comm, r); });
}

int MPI_Ireduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Ireduce(send, recv, count, type, op, root, comm, r);
  });
}

int MPI_Iallreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Iallreduce(send, recv, count, type, op, comm, r);
  });
}

int MPI_Igather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                MPI_Datatype recv_type, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Igather(send, send_count, send_type, recv, recv_count, recv_type, root, comm, r);
  });
}

int MPI_Igatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
                 const int displacements[], MPI_Datatype recv_type, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Igatherv(send, send_count, send_type, recv, recv_counts, displacements, recv_type, root, comm, r);
  });
}

int MPI_Iallgather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                   MPI_Datatype recv_type, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Iallgather(send, send_count, send_type, recv, recv_count, recv_type, comm, r);
  });
}

int MPI_Iallgatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
                    const int displacements[], MPI_Datatype recv_type, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Iallgatherv(send, send_count, send_type, recv, recv_counts, displacements, recv_type, comm, r);
  });
}

int MPI_Iscatter(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                 MPI_Datatype recv_type, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Iscatter(send, send_count, send_type, recv, recv_count, recv_type, root, comm, r);
  });
}

int MPI_Iscatterv(const void* send, const int send_counts[], const int displacements[], MPI_Datatype send_type,
                  void* recv, int recv_count, MPI_Datatype recv_type, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Iscatterv(send, send_counts, displacements, send_type, recv, recv_count, recv_type, root, comm, r);
  });
}

int MPI_Ialltoall(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
                  MPI_Datatype recv_type, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Ialltoall(send, send_count, send_type, recv, recv_count, recv_type, comm, r);
  });
}

int MPI_Ialltoallv(const void* send, const int send_counts[], const int send_displacements[], MPI_Datatype send_type,
                   void* recv, const int recv_counts[], const int recv_displacements[], MPI_Datatype recv_type,
                   MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Ialltoallv(send, send_counts, send_displacements, send_type, recv, recv_counts, recv_displacements,
                           recv_type, comm, r);
  });
}

int MPI_Ialltoallw(const void* send, const int send_counts[], const int send_displacements[],
                   const MPI_Datatype send_types[], void* recv, const int recv_counts[],
                   const int recv_displacements[], const MPI_Datatype recv_types[], MPI_Comm comm,
                   MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Ialltoallw(send, send_counts, send_displacements, send_types, recv, recv_counts, recv_displacements,
                           recv_types, comm, r);
  });
}

int MPI_Ireduce_scatter(const void* send, void* recv, const int recv_counts[], MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Ireduce_scatter(send, recv, recv_counts, type, op, comm, r);
  });
}

int MPI_Ireduce_scatter_block(const void* send, void* recv, int recv_count, MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm, MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Ireduce_scatter_block(send, recv, recv_count, type, op, comm, r);
  });
}

int MPI_Iscan(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
              MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) { return PMPI_Iscan(send, recv, count, type, op, comm, r); });
}

int MPI_Iexscan(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  return nonblocking(comm, request, [&](MPI_Request* r) {
    return PMPI_Iexscan(send, recv, count, type, op, comm, r);
  });
}

}  // extern "C"
