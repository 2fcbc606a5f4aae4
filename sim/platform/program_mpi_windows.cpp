// A program's one-sided communication with active-target fences, kept in step in a split box
// (program_mpi.h). Creating and freeing a window and MPI_Win_fence are collectives over the
// window's processes with no nonblocking form: each runs on a thread of its own while this one
// keeps meeting the others, and returns with the host at the latest entry, as the other
// collectives do. MPI_Put, MPI_Get and MPI_Accumulate between two fences are MPI's own and done by
// the second, so their data lands at that fence's time. Each window keeps a duplicate of its
// communicator for the entry times (the program may free its own first).
//
// Post-start-complete-wait epochs name their partners by group. MPI_Win_post and
// MPI_Win_complete tell each partner their host time on that communicator; MPI_Win_start waits
// for every target's post and MPI_Win_wait for every origin's complete with this process's host
// away (meeting the others, the partners its participants), leaves at the latest of its entry and
// those times, and only then enters MPI's own call, which by then has nothing left to wait for.
// MPI_Win_test answers as MPI_Test does. Passive-target synchronisation (MPI_Win_lock and kin) is
// not kept (README).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <utility>
#include <vector>

#include "sim/platform/platform.h"
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

// The tags of the host times a post and a complete send their partners on a window's communicator
// (the library's own duplicate: no message of the program's is there).
constexpr int kPostTag = 1, kCompleteTag = 2;

// A window's epochs in progress.
struct Epochs {
  std::vector<int> targets;                // the access epoch's, ranks of the window's communicator
  std::vector<int> origins_world;          // the exposure epoch's origins, MPI_COMM_WORLD ranks
  std::vector<uint64_t> complete_ps;       // each origin's complete time, as its message brings it
  std::vector<MPI_Request> completes;      // their receives
};

std::map<MPI_Win, Epochs>& epochs() {
  static auto* all = new std::map<MPI_Win, Epochs>;
  return *all;
}

// The ranks `group` has in `comm`, and in MPI_COMM_WORLD (this process left out of both).
void partners(MPI_Group group, MPI_Comm comm, std::vector<int>* in_comm, std::vector<int>* in_world) {
  int size = 0, me = 0;
  PMPI_Group_size(group, &size);
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::vector<int> ranks(static_cast<size_t>(size)), local(ranks.size()), world(ranks.size());
  for (int i = 0; i < size; ++i) ranks[static_cast<size_t>(i)] = i;
  MPI_Group comm_group, world_group;
  PMPI_Comm_group(comm, &comm_group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  PMPI_Group_translate_ranks(group, size, ranks.data(), comm_group, local.data());
  PMPI_Group_translate_ranks(group, size, ranks.data(), world_group, world.data());
  PMPI_Group_free(&comm_group);
  PMPI_Group_free(&world_group);
  in_comm->clear();
  in_world->clear();
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (world[i] == me || local[i] == MPI_UNDEFINED) continue;
    in_comm->push_back(local[i]);
    in_world->push_back(world[i]);
  }
}

uint64_t host_now_ps() { return hpusim::platform::Platform::current()->cosim().host_now_ps(); }

// Sends this process's host time to `to` (ranks of `comm`); the values stay until their sends end.
int tell_host_time(MPI_Comm comm, const std::vector<int>& to, int tag) {
  static auto* sending = new std::list<std::pair<uint64_t, MPI_Request>>;
  for (auto it = sending->begin(); it != sending->end();) {
    int done = 0;
    if (const int rc = PMPI_Test(&it->second, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) return rc;
    it = done ? sending->erase(it) : std::next(it);
  }
  const uint64_t now = host_now_ps();
  for (int rank : to) {
    sending->emplace_back(now, MPI_REQUEST_NULL);
    const int rc = PMPI_Isend(&sending->back().first, 1, MPI_UINT64_T, rank, tag, comm, &sending->back().second);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// Waits, the host away since `entry_ps`, until every receive in `requests` (from `from_world`) is
// done, then brings the host to the latest of `entry_ps` and `times`.
int await_host_times(std::vector<MPI_Request>& requests, const std::vector<uint64_t>& times,
                     const std::vector<int>& from_world, uint64_t entry_ps) {
  const auto poll = [&](int* done) {
    return PMPI_Testall(static_cast<int>(requests.size()), requests.data(), done, MPI_STATUSES_IGNORE);
  };
  const int rc = wait_away(*split_sync(), entry_ps, from_world, poll);
  if (rc != MPI_SUCCESS) return rc;
  const uint64_t latest = std::max(entry_ps, times.empty() ? 0 : *std::max_element(times.begin(), times.end()));
  hpusim::platform::Platform::current()->cosim().host_wait_until(latest);
  return MPI_SUCCESS;
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

int MPI_Win_post(MPI_Group group, int assertion, MPI_Win window) {
  const MPI_Comm comm = comm_of(window);
  if (comm == MPI_COMM_NULL || split_sync() == nullptr) return PMPI_Win_post(group, assertion, window);
  Epochs& e = epochs()[window];
  std::vector<int> origins;
  partners(group, comm, &origins, &e.origins_world);
  e.complete_ps.assign(origins.size(), 0);
  e.completes.assign(origins.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < origins.size(); ++i) {
    const int rc = PMPI_Irecv(&e.complete_ps[i], 1, MPI_UINT64_T, origins[i], kCompleteTag, comm, &e.completes[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  const int rc = PMPI_Win_post(group, assertion, window);
  return rc != MPI_SUCCESS ? rc : tell_host_time(comm, origins, kPostTag);
}

int MPI_Win_start(MPI_Group group, int assertion, MPI_Win window) {
  const MPI_Comm comm = comm_of(window);
  if (comm == MPI_COMM_NULL || split_sync() == nullptr) return PMPI_Win_start(group, assertion, window);
  Epochs& e = epochs()[window];
  std::vector<int> targets_world;
  partners(group, comm, &e.targets, &targets_world);
  std::vector<uint64_t> post_ps(e.targets.size(), 0);
  std::vector<MPI_Request> posts(e.targets.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < e.targets.size(); ++i) {
    const int rc = PMPI_Irecv(&post_ps[i], 1, MPI_UINT64_T, e.targets[i], kPostTag, comm, &posts[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  const int rc = await_host_times(posts, post_ps, targets_world, host_now_ps());
  return rc != MPI_SUCCESS ? rc : PMPI_Win_start(group, assertion, window);
}

int MPI_Win_complete(MPI_Win window) {
  const MPI_Comm comm = comm_of(window);
  const auto it = epochs().find(window);
  if (comm == MPI_COMM_NULL || split_sync() == nullptr || it == epochs().end()) return PMPI_Win_complete(window);
  const int rc = PMPI_Win_complete(window);
  if (rc != MPI_SUCCESS) return rc;
  const std::vector<int> targets = std::move(it->second.targets);
  it->second.targets.clear();
  return tell_host_time(comm, targets, kCompleteTag);
}

int MPI_Win_wait(MPI_Win window) {
  const auto it = epochs().find(window);
  if (split_sync() == nullptr || it == epochs().end()) return PMPI_Win_wait(window);
  Epochs& e = it->second;
  const int rc = await_host_times(e.completes, e.complete_ps, e.origins_world, host_now_ps());
  return rc != MPI_SUCCESS ? rc : PMPI_Win_wait(window);
}

// Done once every origin's complete has arrived and was made by the host's time; one still on its
// way cannot be told from one not made yet (as MPI_Test, said once).
int MPI_Win_test(MPI_Win window, int* flag) {
  const auto it = epochs().find(window);
  if (split_sync() == nullptr || it == epochs().end()) return PMPI_Win_test(window, flag);
  Epochs& e = it->second;
  int arrived = 0;
  int rc = PMPI_Testall(static_cast<int>(e.completes.size()), e.completes.data(), &arrived, MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS) return rc;
  *flag = 0;
  if (!arrived) {
    say_unsettled();
    return MPI_SUCCESS;
  }
  if (!e.complete_ps.empty() && *std::max_element(e.complete_ps.begin(), e.complete_ps.end()) > host_now_ps()) {
    return MPI_SUCCESS;
  }
  rc = PMPI_Win_wait(window);
  if (rc == MPI_SUCCESS) *flag = 1;
  return rc;
}

int MPI_Win_free(MPI_Win* window) {
  MPI_Comm comm = comm_of(*window);
  if (comm == MPI_COMM_NULL) return PMPI_Win_free(window);
  window_comms().erase(*window);
  epochs().erase(*window);
  const int rc = on_own_thread(comm, "MPI_Win_free", [&] { return PMPI_Win_free(window); });
  PMPI_Comm_free(&comm);
  return rc;
}

}  // extern "C"
