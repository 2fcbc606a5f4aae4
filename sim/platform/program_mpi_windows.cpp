// A program's one-sided communication with active-target fences, kept in step in a split box
// (program_mpi.h). Creating and freeing a window and MPI_Win_fence are collectives over the
// window's processes with no nonblocking form: each runs on a thread of its own while this one
// keeps meeting the others, and returns with the host at the latest entry, as the other
// collectives do. MPI_Put, MPI_Get and MPI_Accumulate between two fences are MPI's own and done by
// the second, so their data lands at that fence's time. Each window keeps a duplicate of its
// communicator for the entry times (the program may free its own first). Passive-target
// synchronisation (MPI_Win_lock and kin) and post-start-complete-wait are not kept (README).
#include <mpi.h>

#include <functional>
#include <map>

#include "sim/platform/program_mpi.h"

namespace {

using namespace hpusim::platform::program_mpi;

// The communicator each window of the program's keeps its processes' entry times on. (Never
// destroyed, as the other tables: MPI_Finalize may run from the platform's exit handler.)
std::map<MPI_Win, MPI_Comm>& window_comms() {
  static auto* comms = new std::map<MPI_Win, MPI_Comm>;
  return *comms;
}

// `make` creates the window on `comm`, kept in step, with its communicator kept beside it.
int create_window(MPI_Comm comm, const char* name, MPI_Win* window, const std::function<int()>& make) {
  if (split_sync() == nullptr) return make();
  MPI_Comm kept = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(comm, &kept);   // itself kept in step
  if (rc != MPI_SUCCESS) return rc;
  rc = on_own_thread(comm, name, make);
  if (rc == MPI_SUCCESS) {
    window_comms()[*window] = kept;
  } else {
    PMPI_Comm_free(&kept);
  }
  return rc;
}

MPI_Comm comm_of(MPI_Win window) {
  const auto it = window_comms().find(window);
  return it == window_comms().end() ? MPI_COMM_NULL : it->second;
}

}  // namespace

extern "C" {

int MPI_Win_create(void* base, MPI_Aint size, int displacement_unit, MPI_Info info, MPI_Comm comm, MPI_Win* window) {
  return create_window(comm, "MPI_Win_create", window,
                       [&] { return PMPI_Win_create(base, size, displacement_unit, info, comm, window); });
}

int MPI_Win_allocate(MPI_Aint size, int displacement_unit, MPI_Info info, MPI_Comm comm, void* base, MPI_Win* window) {
  return create_window(comm, "MPI_Win_allocate", window,
                       [&] { return PMPI_Win_allocate(size, displacement_unit, info, comm, base, window); });
}

int MPI_Win_fence(int assertion, MPI_Win window) {
  const MPI_Comm comm = comm_of(window);
  if (comm == MPI_COMM_NULL) return PMPI_Win_fence(assertion, window);
  return on_own_thread(comm, "MPI_Win_fence", [&] { return PMPI_Win_fence(assertion, window); });
}

int MPI_Win_free(MPI_Win* window) {
  MPI_Comm comm = comm_of(*window);
  if (comm == MPI_COMM_NULL) return PMPI_Win_free(window);
  window_comms().erase(*window);
  const int rc = on_own_thread(comm, "MPI_Win_free", [&] { return PMPI_Win_free(window); });
  PMPI_Comm_free(&comm);
  return rc;
}

}  // extern "C"
