// What the program's MPI calls in a split box share (program_mpi.cpp, program_mpi_collectives.cpp,
// program_mpi_windows.cpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/distributed/conservative_sync.h"

namespace hpusim::platform::program_mpi {

// This process's split-box synchronisation over MPI, while it runs windows; nullptr otherwise
// (no platform yet, one process, the TCP transport, or after the process left the run).
distributed::ConservativeSync* split_sync();

// The MPI_COMM_WORLD ranks of a communicator's processes (both groups of an intercommunicator).
std::vector<int> world_ranks(MPI_Comm comm);

// Waits until `poll` says done with this process's host away since `entry_ps`, meeting the
// others, `participants` bounding when its host may act again (the latest of them, or with
// `any_participant` the earliest).
int wait_away(distributed::ConservativeSync& sync, uint64_t entry_ps, const std::vector<int>& participants,
              const std::function<int(int* done)>& poll, bool any_participant = false);

// A collective of the program's (program_mpi_collectives.cpp): `start` posts its nonblocking
// form, `blocking` is the call itself (outside a split box, all there is). It returns with the host
// at the latest entry of the communicator's processes, away meanwhile for them, or, given `any_of`,
// until the first of those may act.
int collective(MPI_Comm comm, const std::function<int(MPI_Request*)>& start, const std::function<int()>& blocking,
               const std::vector<int>& any_of = {});
// The same for a call with no nonblocking form, run on a thread of its own (needs MPI_THREAD_MULTIPLE;
// with less it waits in MPI, said on stderr under `name`).
int on_own_thread(MPI_Comm comm, const char* name, const std::function<int()>& blocking,
                  const std::vector<int>& any_of = {});

// A test that found nothing done may answer from what has reached this process so far (said once).
void say_unsettled();

// The program's own nonblocking collectives (MPI_Ibarrier and kin, program_mpi_collectives.cpp), by
// the request the program holds: whether `request` is one; a wait for it, the host leaving at the
// latest entry of its processes; whether it is done now (every process entered by the host's time);
// and the completion of one found done.
bool is_started_collective(MPI_Request request);
int wait_started(MPI_Request* request, MPI_Status* status);
int started_ready(MPI_Request request, int* done);
int finish_started(MPI_Request* request, MPI_Status* status);

}  // namespace hpusim::platform::program_mpi
