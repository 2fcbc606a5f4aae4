// A program's own point-to-point MPI messages, seen through MPI's profiling interface (each MPI_X
// here runs PMPI_X; its collectives are in program_mpi_collectives.cpp). In a box split between MPI
// processes, a process's device moves only while its host calls into the simulation, so a host
// waiting for a message keeps meeting the others, its host away (program_mpi.h).
//
// Messages (MPI_Send and its modes, MPI_Recv, MPI_Sendrecv, MPI_Isend, MPI_Irecv) carry their
// sender's host time in a header packed before the data. A send is buffered (it returns at once,
// as a standard-mode send may; a nonblocking one's request is complete at once); a receive keeps
// this process meeting the others with its host away, its participant the source (whose next
// action bounds when the message can have been sent), and returns with the host at the later of
// its own entry time and the sender's: the same on every split. A nonblocking receive does that
// in MPI_Wait (MPI_Waitall request by request, MPI_Waitany / MPI_Waitsome the one sent first);
// MPI_Test and its kin complete it only once the message has arrived and was sent by the host's
// time. MPI_Probe takes the message in ahead of its receive, returning as a receive would;
// MPI_Iprobe sees it as MPI_Test would; MPI_Mprobe and MPI_Improbe hand the message taken in to
// MPI_Mrecv / MPI_Imrecv by a handle of this file's.
//
// Outside a split box run over MPI (no platform yet, one process, the TCP transport, after the
// process left the run) each call is its PMPI_X alone. libhpusim-synapse.so exports these, so a
// program linked against it before libmpi gets them (the PyTorch bridge loads it so for Python's
// MPI modules, bridge/README.md).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "sim/distributed/conservative_sync.h"
#include "sim/platform/platform.h"
#include "sim/platform/program_mpi.h"

namespace hpusim::platform::program_mpi {

using distributed::ConservativeSync;

ConservativeSync* split_sync() {
  Platform* platform = Platform::current();
  ConservativeSync* sync = platform != nullptr ? platform->sync() : nullptr;
  if (sync == nullptr || sync->finished() || sync->lookahead() == 0) return nullptr;
  if (std::strcmp(sync->transport().name(), "MPI") != 0) return nullptr;
  return sync;
}

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

int wait_away(ConservativeSync& sync, uint64_t entry_ps, const std::vector<int>& participants,
              const std::function<int(int* done)>& poll, bool any_participant) {
  cosim::CoSimulation& cosim = Platform::current()->cosim();
  cosim.step_while_away([&](uint64_t) {
    sync.away_begin(entry_ps, participants, any_participant);
    return true;
  });
  int rc = MPI_SUCCESS;
  for (unsigned idle = 0;;) {
    int done = 0;
    rc = poll(&done);
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

void say_unsettled() {
  static bool said = false;
  if (said) return;
  said = true;
  std::fprintf(stderr,
               "hpusim: MPI_Test and MPI_Iprobe in a split box answer from the messages that have reached this "
               "process; one still on its way may make the answer depend on how fast the processes ran (MPI_Wait "
               "and MPI_Probe are kept in step)\n");
}

}  // namespace hpusim::platform::program_mpi

namespace {

using hpusim::distributed::ConservativeSync;
using hpusim::platform::Platform;
using namespace hpusim::platform::program_mpi;

// A point-to-point message's header: the sender's host time and the element count that follows.
constexpr int kHeaderWords = 2;

// Buffered sends not known to be complete, with their packed bytes. (Never destroyed: MPI_Finalize
// may run from the platform's exit handler, after function-local statics are gone.)
std::vector<std::pair<MPI_Request, std::vector<char>>>& pending_sends() {
  static auto* sends = new std::vector<std::pair<MPI_Request, std::vector<char>>>;
  return *sends;
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

// Who may send a receive's message (MPI_COMM_WORLD ranks): the source, or for MPI_ANY_SOURCE every
// other process of the communicator. Empty for a source the communicator does not have.
std::vector<int> senders(MPI_Comm comm, int source) {
  if (source != MPI_ANY_SOURCE) {
    const int world = world_rank_of(comm, source);
    return world != MPI_UNDEFINED ? std::vector<int>{world} : std::vector<int>{};
  }
  std::vector<int> ranks = world_ranks(comm);
  int me = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  ranks.erase(std::remove(ranks.begin(), ranks.end(), me), ranks.end());
  return ranks;
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

// A receive of the program's: the packed message it receives into, and where the data goes.
struct Receive {
  Receive(void* buffer, int count, MPI_Datatype type, int source, MPI_Comm comm)
      : buffer(buffer), count(count), type(type), comm(comm), source(source) {}
  void* buffer = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  int source = MPI_ANY_SOURCE;
  std::vector<char> packed;
  MPI_Request inner = MPI_REQUEST_NULL;   // the receive of the packed message
  bool arrived = false;
  MPI_Status status{};   // the packed message's, once arrived
  uint64_t header[kHeaderWords] = {0, 0};
  int data_at = 0;   // where the data starts in `packed`
  int tag = MPI_ANY_TAG;
  std::vector<int> any_of;   // MPI_ANY_SOURCE among several: who may send (chosen when it completes)
  MPI_Request handle = MPI_REQUEST_NULL;   // the program's request (nonblocking receives)
};

// A message taken in before a receive asked for it (by a probe, or by a receive from any of
// several sources choosing the earliest), with its sender's host time and MPI_COMM_WORLD rank.
struct Stashed {
  MPI_Comm comm;
  MPI_Status status;
  std::vector<char> packed;
  uint64_t sent_ps = 0;
  int world_source = 0;
};

// In the order they arrived. (Never destroyed, as pending_sends.)
std::deque<Stashed>& stash() {
  static auto* messages = new std::deque<Stashed>;
  return *messages;
}

// The stashed message a receive of (source, tag) matches: the one sent first (by host time, then
// by the sender's rank; one sender's in the order they came).
std::deque<Stashed>::iterator stashed(MPI_Comm comm, int source, int tag) {
  auto best = stash().end();
  for (auto m = stash().begin(); m != stash().end(); ++m) {
    if (m->comm != comm || (source != MPI_ANY_SOURCE && m->status.MPI_SOURCE != source) ||
        (tag != MPI_ANY_TAG && m->status.MPI_TAG != tag))
      continue;
    if (best == stash().end() || m->sent_ps < best->sent_ps ||
        (m->sent_ps == best->sent_ps && m->world_source < best->world_source))
      best = m;
  }
  return best;
}

// The message Iprobe found (`status`) into the stash.
int stash_in(MPI_Comm comm, const MPI_Status& status, std::deque<Stashed>::iterator* at) {
  int length = 0;
  PMPI_Get_count(&status, MPI_PACKED, &length);
  Stashed m{comm, {}, std::vector<char>(static_cast<size_t>(length))};
  int rc = PMPI_Recv(m.packed.data(), length, MPI_PACKED, status.MPI_SOURCE, status.MPI_TAG, comm, &m.status);
  uint64_t header[kHeaderWords] = {0, 0};
  int position = 0;
  if (rc == MPI_SUCCESS) rc = PMPI_Unpack(m.packed.data(), length, &position, header, kHeaderWords, MPI_UINT64_T, comm);
  if (rc != MPI_SUCCESS) return rc;
  m.sent_ps = header[0];
  m.world_source = world_rank_of(comm, m.status.MPI_SOURCE);
  stash().push_back(std::move(m));
  if (at != nullptr) *at = std::prev(stash().end());
  return MPI_SUCCESS;
}

// Whether process `p` may still send a message sent earlier than the one `source` sent at `sent`
// (by host time, then by rank): not if it is `source` (its host time only grows), if its bound
// from the last meeting is later, or if it waits for this rank (in a collective this rank has not
// entered, say), sending nothing before this call ends. Without a sync, the first there is taken.
bool may_send_before(ConservativeSync* sync, int p, int source, uint64_t sent) {
  if (sync == nullptr || p == source) return false;
  int me = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  const uint64_t bound = sync->action_bound(p);
  return !(bound > sent || (bound == sent && p > source) || sync->waits_on(p, me));
}

// A receive (or probe) of `tag` from any of the processes `from`: every matching message that
// has reached this process taken in, and the one sent first chosen (`*done`) once none of the
// others may still send one earlier (sync's bounds from the last meeting; without a sync, the
// first there).
int earliest_sent(MPI_Comm comm, int tag, const std::vector<int>& from, ConservativeSync* sync, int* done,
                  std::deque<Stashed>::iterator* at) {
  *done = 0;
  for (;;) {
    int found = 0;
    MPI_Status status;
    int rc = PMPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &found, &status);
    if (rc == MPI_SUCCESS && found) rc = stash_in(comm, status, nullptr);
    if (rc != MPI_SUCCESS) return rc;
    if (!found) break;
  }
  *at = stashed(comm, MPI_ANY_SOURCE, tag);
  if (*at == stash().end()) return MPI_SUCCESS;
  const uint64_t sent = (*at)->sent_ps;
  const int source = (*at)->world_source;
  *done = std::none_of(from.begin(), from.end(), [&](int p) { return may_send_before(sync, p, source, sent); });
  return MPI_SUCCESS;
}

int poll_until_done(const std::function<int(int* done)>& poll) {
  int done = 0, rc = MPI_SUCCESS;
  while (rc == MPI_SUCCESS && !done) rc = poll(&done);
  return rc;
}

// Reads the header of a message that arrived.
int take_header(Receive& r) {
  r.arrived = true;
  int length = 0;
  PMPI_Get_count(&r.status, MPI_PACKED, &length);
  const int rc = PMPI_Unpack(r.packed.data(), length, &r.data_at, r.header, kHeaderWords, MPI_UINT64_T, r.comm);
  if (rc != MPI_SUCCESS) return rc;
  return r.header[1] > static_cast<uint64_t>(r.count) ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

int take_message(Receive& r, Stashed&& m) {
  r.packed = std::move(m.packed);
  r.status = m.status;
  return take_header(r);
}

int take_stashed(Receive& r, std::deque<Stashed>::iterator m) {
  Stashed taken = std::move(*m);
  stash().erase(m);
  return take_message(r, std::move(taken));
}

// The receive takes the stashed message it matches, else posts its own. From any of several
// sources it waits to choose (await_arrival): a message sent earlier may still come.
int post(Receive& r, int tag) {
  r.tag = tag;
  if (r.source == MPI_ANY_SOURCE && split_sync() != nullptr) {
    std::vector<int> from = senders(r.comm, r.source);
    if (from.size() > 1) {
      r.any_of = std::move(from);
      return MPI_SUCCESS;
    }
  }
  if (const auto m = stashed(r.comm, r.source, tag); m != stash().end()) return take_stashed(r, m);
  const int rc = packed_buffer(r.count, r.type, r.comm, r.packed);
  return rc != MPI_SUCCESS ? rc
                           : PMPI_Irecv(r.packed.data(), static_cast<int>(r.packed.size()), MPI_PACKED, r.source, tag,
                                        r.comm, &r.inner);
}

// Waits for the message with this process's host away since `entry_ps` (meeting the others, the
// sender its participant), or, outside a split box, plainly.
int await_arrival(Receive& r, uint64_t entry_ps) {
  if (r.arrived) return MPI_SUCCESS;
  ConservativeSync* sync = split_sync();
  if (!r.any_of.empty()) {
    std::deque<Stashed>::iterator at;
    const auto poll = [&](int* done) { return earliest_sent(r.comm, r.tag, r.any_of, sync, done, &at); };
    const int rc = sync != nullptr ? wait_away(*sync, entry_ps, r.any_of, poll, true) : poll_until_done(poll);   // the run ended
    return rc != MPI_SUCCESS ? rc : take_stashed(r, at);
  }
  const std::vector<int> from = sync != nullptr ? senders(r.comm, r.source) : std::vector<int>{};
  const int rc = from.empty() ? PMPI_Wait(&r.inner, &r.status)
                              : wait_away(*sync, entry_ps, from, [&](int* done) { return PMPI_Test(&r.inner, done, &r.status); });
  return rc != MPI_SUCCESS ? rc : take_header(r);
}

// The data into the program's buffer, and the status as the sender's call made it.
int deliver(Receive& r, MPI_Status* status) {
  if (r.header[1] > static_cast<uint64_t>(r.count)) return MPI_ERR_TRUNCATE;   // again, if waited for again
  int length = 0, position = r.data_at;
  PMPI_Get_count(&r.status, MPI_PACKED, &length);
  const int rc = PMPI_Unpack(r.packed.data(), length, &position, r.buffer, static_cast<int>(r.header[1]), r.type, r.comm);
  if (rc == MPI_SUCCESS && status != MPI_STATUS_IGNORE) {
    *status = r.status;
    PMPI_Status_set_elements(status, r.type, static_cast<int>(r.header[1]));
  }
  return rc;
}

int receive(void* buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (split_sync() == nullptr || source == MPI_PROC_NULL) return PMPI_Recv(buffer, count, type, source, tag, comm, status);
  reap_sends(false);
  hpusim::cosim::CoSimulation& cosim = Platform::current()->cosim();
  const uint64_t entry_ps = cosim.host_now_ps();
  Receive r(buffer, count, type, source, comm);
  int rc = post(r, tag);
  if (rc == MPI_SUCCESS) rc = await_arrival(r, entry_ps);
  if (rc == MPI_SUCCESS) rc = deliver(r, status);
  if (rc == MPI_SUCCESS) cosim.host_wait_until(std::max(entry_ps, r.header[0]));
  return rc;
}

// The program's nonblocking receives in a split box, by the request the program holds: a
// generalized request, completed when the program's MPI_Wait (or MPI_Test) completes the receive.
std::map<MPI_Request, std::unique_ptr<Receive>>& receives() {
  static auto* pending = new std::map<MPI_Request, std::unique_ptr<Receive>>;   // as pending_sends
  return *pending;
}

Receive* receive_of(MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return nullptr;
  const auto it = receives().find(request);
  return it == receives().end() ? nullptr : it->second.get();
}

// The program's persistent requests in a split box (MPI_Send_init, MPI_Recv_init and kin), by the
// request the program holds: a generalized request that stays incomplete while the operation
// lives, so MPI never frees it. MPI_Start begins one operation (a send buffered and done at once,
// as MPI_Send; a receive posted as MPI_Irecv's); MPI_Wait and its kin complete it as they complete
// a nonblocking one and leave the request, inactive, for the next MPI_Start; MPI_Request_free ends it.
struct Persistent {
  bool is_send = false;
  const void* send_buffer = nullptr;
  void* receive_buffer = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int peer = MPI_PROC_NULL;
  int tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  bool active = false;
  std::unique_ptr<Receive> receive;   // the started receive
};

std::map<MPI_Request, std::unique_ptr<Persistent>>& persistents() {
  static auto* all = new std::map<MPI_Request, std::unique_ptr<Persistent>>;   // as pending_sends
  return *all;
}

Persistent* persistent_of(MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return nullptr;
  const auto it = persistents().find(request);
  return it == persistents().end() ? nullptr : it->second.get();
}

// A request MPI_Wait would return from at once with an empty status: null, or persistent and not started.
bool inactive(MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return true;
  const Persistent* p = persistent_of(request);
  return p != nullptr && !p->active;
}

// The receive the program's request waits for: a nonblocking one, or a started persistent one.
Receive* active_receive(MPI_Request request) {
  if (Receive* r = receive_of(request)) return r;
  const Persistent* p = persistent_of(request);
  return p != nullptr && p->active ? p->receive.get() : nullptr;
}

// MPI's empty status (an inactive request's, a send's), or a receive from MPI_PROC_NULL's.
void empty_status(MPI_Status* status, int source = MPI_ANY_SOURCE) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = source;
  status->MPI_TAG = MPI_ANY_TAG;
  status->MPI_ERROR = MPI_SUCCESS;
  PMPI_Status_set_cancelled(status, 0);
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
}

// A generalized request's status: a receive's as its sender's call made it, a send's empty.
int request_status(void* state, MPI_Status* status) {
  const auto* r = static_cast<const Receive*>(state);
  PMPI_Status_set_cancelled(status, 0);
  if (r == nullptr) {
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    return PMPI_Status_set_elements(status, MPI_BYTE, 0);
  }
  status->MPI_SOURCE = r->status.MPI_SOURCE;
  status->MPI_TAG = r->status.MPI_TAG;
  return PMPI_Status_set_elements(status, r->type, static_cast<int>(r->header[1]));
}

int request_free(void* state) {
  if (state != nullptr) receives().erase(static_cast<Receive*>(state)->handle);
  return MPI_SUCCESS;
}

int request_cancel(void*, int) { return MPI_SUCCESS; }

// Completes the program's receive `request` (the message arrived, its time reached): the data
// delivered, the request freed into `status`; a persistent request stays, inactive.
int complete(MPI_Request* request, Receive& r, MPI_Status* status) {
  if (Persistent* p = persistent_of(*request)) {
    const int rc = deliver(r, status);
    if (rc == MPI_SUCCESS) p->receive.reset(), p->active = false;
    return rc;
  }
  int rc = deliver(r, MPI_STATUS_IGNORE);
  if (rc == MPI_SUCCESS) rc = PMPI_Grequest_complete(*request);
  return rc != MPI_SUCCESS ? rc : PMPI_Wait(request, status);
}

// A persistent request with no receive to wait for: not started, a send (done when started), or
// a receive from MPI_PROC_NULL.
int complete_at_once(Persistent& p, MPI_Status* status) {
  empty_status(status, p.active && !p.is_send && p.peer == MPI_PROC_NULL ? MPI_PROC_NULL : MPI_ANY_SOURCE);
  p.active = false;
  return MPI_SUCCESS;
}

int wait(MPI_Request* request, MPI_Status* status) {
  Receive* r = active_receive(*request);
  if (r == nullptr) {
    if (Persistent* p = persistent_of(*request)) return complete_at_once(*p, status);
    return is_started_collective(*request) ? wait_started(request, status) : PMPI_Wait(request, status);
  }
  Platform* platform = split_sync() != nullptr ? Platform::current() : nullptr;   // else the run has ended
  const uint64_t entry_ps = platform != nullptr ? platform->cosim().host_now_ps() : 0;
  const int rc = await_arrival(*r, entry_ps);
  if (rc != MPI_SUCCESS) return rc;
  if (platform != nullptr) platform->cosim().host_wait_until(std::max(entry_ps, r->header[0]));
  return complete(request, *r, status);
}


// Takes in the receive's message if it has reached this process (`*arrived`); from any of several
// sources, the one sent first once it is known (earliest_sent, as at the last meeting).
int take_in(Receive& r, int* arrived) {
  *arrived = r.arrived;
  if (r.arrived) return MPI_SUCCESS;
  int rc = MPI_SUCCESS;
  if (r.any_of.empty()) {
    rc = PMPI_Test(&r.inner, arrived, &r.status);
    if (rc == MPI_SUCCESS && *arrived) rc = take_header(r);
  } else {
    std::deque<Stashed>::iterator at;
    rc = earliest_sent(r.comm, r.tag, r.any_of, split_sync(), arrived, &at);
    if (rc == MPI_SUCCESS && *arrived) rc = take_stashed(r, at);
  }
  return rc;
}

// Whether `request` is done now, without completing it: a receive of the program's once its
// message has arrived and was sent by the host's time, any other as MPI says. A message sent
// earlier but still on its way between the processes cannot be told from one not sent yet: there
// the answer may depend on how fast the processes ran (said once); MPI_Wait has no such limit.
int ready(MPI_Request request, int* done) {
  Receive* r = active_receive(request);
  if (r == nullptr) {
    if (persistent_of(request) != nullptr) return *done = 1, MPI_SUCCESS;
    return is_started_collective(request) ? started_ready(request, done)
                                          : PMPI_Request_get_status(request, done, MPI_STATUS_IGNORE);
  }
  *done = 0;
  if (!r->arrived) {
    int arrived = 0;
    const int rc = take_in(*r, &arrived);
    if (rc != MPI_SUCCESS) return rc;
    if (!arrived) {
      say_unsettled();
      return MPI_SUCCESS;
    }
  }
  *done = split_sync() == nullptr || r->header[0] <= Platform::current()->cosim().host_now_ps();
  return MPI_SUCCESS;
}

// Completes a request ready() found done.
int finish(MPI_Request* request, MPI_Status* status) {
  if (Receive* r = active_receive(*request)) return complete(request, *r, status);
  if (Persistent* p = persistent_of(*request)) return complete_at_once(*p, status);
  return is_started_collective(*request) ? finish_started(request, status) : PMPI_Wait(request, status);
}

// Whether any of the requests is a receive, a persistent request or a collective of the
// program's, kept in step here.
bool any_kept(int count, const MPI_Request requests[]) {
  return std::any_of(requests, requests + count, [](MPI_Request r) {
    return receive_of(r) != nullptr || persistent_of(r) != nullptr || is_started_collective(r);
  });
}

int test_any(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  *index = MPI_UNDEFINED;
  *flag = 1;   // also when no request is active
  for (int i = 0; i < count; ++i) {
    if (inactive(requests[i])) continue;
    *flag = 0;
    int done = 0;
    const int rc = ready(requests[i], &done);
    if (rc != MPI_SUCCESS) return rc;
    if (done) {
      *index = i;
      *flag = 1;
      return finish(&requests[i], status);
    }
  }
  return MPI_SUCCESS;
}

// The status a probe gives for a stashed message: the count is the data's bytes, so
// MPI_Get_count with the sender's type counts its elements.
int probe_status(const Stashed& m, MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return MPI_SUCCESS;
  int length = 0, position = 0;
  PMPI_Get_count(&m.status, MPI_PACKED, &length);
  uint64_t header[kHeaderWords] = {0, 0};
  const int rc = PMPI_Unpack(m.packed.data(), length, &position, header, kHeaderWords, MPI_UINT64_T, m.comm);
  if (rc != MPI_SUCCESS) return rc;
  *status = m.status;
  return PMPI_Status_set_elements_x(status, MPI_BYTE, static_cast<MPI_Count>(length - position));
}

// A matching message that has reached this process, taken into the stash (`*found` 0: none).
int stash_arrived(MPI_Comm comm, int source, int tag, int* found, std::deque<Stashed>::iterator* at) {
  *at = stashed(comm, source, tag);
  *found = *at != stash().end();
  if (*found) return MPI_SUCCESS;
  MPI_Status status;
  const int rc = PMPI_Iprobe(source, tag, comm, found, &status);
  return rc != MPI_SUCCESS || !*found ? rc : stash_in(comm, status, at);
}

// A probe's search: from one source, the first matching message there; from any of several,
// the one sent first once it is known (earliest_sent).
int probe_poll(MPI_Comm comm, int source, int tag, const std::vector<int>& from, int* found,
               std::deque<Stashed>::iterator* at) {
  if (source == MPI_ANY_SOURCE && from.size() > 1) return earliest_sent(comm, tag, from, split_sync(), found, at);
  return stash_arrived(comm, source, tag, found, at);
}


// A nonblocking send is buffered as MPI_Send is: its request is complete at once.
int isend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  int rc = send(buffer, count, type, dest, tag, comm);
  if (rc == MPI_SUCCESS) rc = PMPI_Grequest_start(request_status, request_free, request_cancel, nullptr, request);
  return rc != MPI_SUCCESS ? rc : PMPI_Grequest_complete(*request);
}

// The program's nonblocking receive `r`, under the generalized request it gets.
int start_receive(std::unique_ptr<Receive> r, MPI_Request* request) {
  const int rc = PMPI_Grequest_start(request_status, request_free, request_cancel, r.get(), request);
  if (rc != MPI_SUCCESS) return rc;
  r->handle = *request;
  receives().emplace(*request, std::move(r));
  return MPI_SUCCESS;
}

// A probe from a source the communicator has (`from`, its senders) in a split box: the matching
// message taken in (`*at`, in the stash), the host leaving at the later of the probe's entry and
// the send time.
int probe(ConservativeSync& sync, int source, int tag, MPI_Comm comm, const std::vector<int>& from, MPI_Status* status,
          std::deque<Stashed>::iterator* at) {
  reap_sends(false);
  hpusim::cosim::CoSimulation& cosim = Platform::current()->cosim();
  const uint64_t entry_ps = cosim.host_now_ps();
  int rc = wait_away(
      sync, entry_ps, from, [&](int* found) { return probe_poll(comm, source, tag, from, found, at); },
      source == MPI_ANY_SOURCE && from.size() > 1);
  if (rc == MPI_SUCCESS) rc = probe_status(**at, status);
  if (rc == MPI_SUCCESS) cosim.host_wait_until(std::max(entry_ps, (*at)->sent_ps));
  return rc;
}

// An immediate probe in a split box, as MPI_Test: a message that has reached this process and was
// sent by the host's time (`*at`, in the stash).
int probe_now(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status, std::deque<Stashed>::iterator* at) {
  int rc = probe_poll(comm, source, tag, senders(comm, source), flag, at);
  if (rc != MPI_SUCCESS || !*flag) {
    if (rc == MPI_SUCCESS) say_unsettled();
    return rc;
  }
  *flag = (*at)->sent_ps <= Platform::current()->cosim().host_now_ps();
  return *flag ? probe_status(**at, status) : MPI_SUCCESS;
}

// Messages a matched probe (MPI_Mprobe, MPI_Improbe) took out of the stash for MPI_Mrecv /
// MPI_Imrecv. The program's handle is the element's address, never one of MPI's. (Never
// destroyed, as pending_sends.)
std::list<Stashed>& matched() {
  static auto* messages = new std::list<Stashed>;
  return *messages;
}

MPI_Message match(std::deque<Stashed>::iterator at) {
  matched().push_back(std::move(*at));
  stash().erase(at);
  return reinterpret_cast<MPI_Message>(&matched().back());
}

std::list<Stashed>::iterator matched_message(MPI_Message handle) {
  return std::find_if(matched().begin(), matched().end(),
                      [&](const Stashed& m) { return static_cast<const void*>(&m) == static_cast<const void*>(handle); });
}

// The matched message into the receive `r`, its handle spent.
int take_matched(Receive& r, std::list<Stashed>::iterator m, MPI_Message* handle) {
  Stashed taken = std::move(*m);
  matched().erase(m);
  *handle = MPI_MESSAGE_NULL;
  return take_message(r, std::move(taken));
}

// MPI_Waitany among receives of the program's: the one whose message was sent first (by host
// time, then by the sender's rank), once no other request's sender may still send one earlier;
// the host leaves at the later of the call's entry and that send. `*index` -1: not all of the
// active requests are receives (the caller waits otherwise).
int wait_earliest(ConservativeSync& sync, int count, MPI_Request requests[], int* index, MPI_Status* status) {
  *index = -1;
  std::vector<int> active, participants;
  for (int i = 0; i < count; ++i) {
    if (inactive(requests[i])) continue;
    Receive* r = active_receive(requests[i]);
    if (r == nullptr) return MPI_SUCCESS;
    active.push_back(i);
    for (int p : r->any_of.empty() ? senders(r->comm, r->source) : r->any_of) participants.push_back(p);
  }
  if (active.empty()) return MPI_SUCCESS;
  std::sort(participants.begin(), participants.end());
  participants.erase(std::unique(participants.begin(), participants.end()), participants.end());
  const auto world_source = [](const Receive& r) { return world_rank_of(r.comm, r.status.MPI_SOURCE); };
  const auto sent_before = [&](const Receive& a, const Receive& b) {
    return std::pair(a.header[0], world_source(a)) < std::pair(b.header[0], world_source(b));
  };
  int chosen = -1;
  const auto poll = [&](int* done) {
    *done = 0;
    chosen = -1;
    for (int i : active) {
      Receive& r = *active_receive(requests[i]);
      int arrived = 0;
      const int rc = take_in(r, &arrived);
      if (rc != MPI_SUCCESS) return rc;
      if (arrived && (chosen < 0 || sent_before(r, *active_receive(requests[chosen])))) chosen = i;
    }
    if (chosen < 0) return MPI_SUCCESS;
    const Receive& first = *active_receive(requests[chosen]);
    const uint64_t sent = first.header[0];
    const int source = world_source(first);
    *done = std::none_of(active.begin(), active.end(), [&](int i) {
      const Receive& r = *active_receive(requests[i]);
      if (r.arrived) return false;
      const std::vector<int> from = r.any_of.empty() ? senders(r.comm, r.source) : r.any_of;
      return std::any_of(from.begin(), from.end(), [&](int p) { return may_send_before(&sync, p, source, sent); });
    });
    return MPI_SUCCESS;
  };
  hpusim::cosim::CoSimulation& cosim = Platform::current()->cosim();
  const uint64_t entry_ps = cosim.host_now_ps();
  const int rc = participants.empty() ? poll_until_done(poll) : wait_away(sync, entry_ps, participants, poll, true);
  if (rc != MPI_SUCCESS) return rc;
  Receive& r = *active_receive(requests[chosen]);
  cosim.host_wait_until(std::max(entry_ps, r.header[0]));
  *index = chosen;
  return complete(&requests[chosen], r, status);
}

// MPI_Send_init and kin, MPI_Recv_init: the operation kept, the program given its request.
int make_persistent(std::unique_ptr<Persistent> p, MPI_Request* request) {
  const int rc = PMPI_Grequest_start(request_status, request_free, request_cancel, nullptr, request);
  if (rc == MPI_SUCCESS) persistents().emplace(*request, std::move(p));
  return rc;
}

int send_init(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  auto p = std::make_unique<Persistent>();
  p->is_send = true;
  p->send_buffer = buffer, p->count = count, p->type = type, p->peer = dest, p->tag = tag, p->comm = comm;
  return make_persistent(std::move(p), request);
}

int start_persistent(Persistent& p) {
  if (p.active) return MPI_ERR_REQUEST;   // started twice without completing
  p.active = true;
  if (p.peer == MPI_PROC_NULL) return MPI_SUCCESS;
  if (p.is_send) return send(p.send_buffer, p.count, p.type, p.peer, p.tag, p.comm);
  reap_sends(false);
  p.receive = std::make_unique<Receive>(p.receive_buffer, p.count, p.type, p.peer, p.comm);
  return post(*p.receive, p.tag);
}

int start(MPI_Request* request) {
  Persistent* p = persistent_of(*request);
  return p != nullptr ? start_persistent(*p) : PMPI_Start(request);
}

// Frees a persistent request; a receive still started is cancelled (its message, if it comes,
// stays for a later receive).
int free_persistent(MPI_Request* request) {
  const auto it = persistents().find(*request);
  if (Receive* r = it->second->receive.get(); r != nullptr && r->inner != MPI_REQUEST_NULL) {
    PMPI_Cancel(&r->inner);
    PMPI_Request_free(&r->inner);
  }
  persistents().erase(it);
  const int rc = PMPI_Grequest_complete(*request);
  return rc != MPI_SUCCESS ? rc : PMPI_Request_free(request);
}

}  // namespace

extern "C" {

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

// The other send modes are buffered as MPI_Send is (a synchronous or ready send's condition is
// not kept: the message is sent at the sender's host time either way).
int MPI_Ssend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return split_sync() == nullptr ? PMPI_Ssend(buffer, count, type, dest, tag, comm) : send(buffer, count, type, dest, tag, comm);
}

int MPI_Bsend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return split_sync() == nullptr ? PMPI_Bsend(buffer, count, type, dest, tag, comm) : send(buffer, count, type, dest, tag, comm);
}

int MPI_Rsend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return split_sync() == nullptr ? PMPI_Rsend(buffer, count, type, dest, tag, comm) : send(buffer, count, type, dest, tag, comm);
}

// The send is packed before the receive, so the buffer is free for it.
int MPI_Sendrecv_replace(void* buffer, int count, MPI_Datatype type, int dest, int send_tag, int source, int recv_tag,
                         MPI_Comm comm, MPI_Status* status) {
  if (split_sync() == nullptr) {
    return PMPI_Sendrecv_replace(buffer, count, type, dest, send_tag, source, recv_tag, comm, status);
  }
  const int rc = send(buffer, count, type, dest, send_tag, comm);
  return rc != MPI_SUCCESS ? rc : receive(buffer, count, type, source, recv_tag, comm, status);
}

int MPI_Isend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (split_sync() == nullptr || dest == MPI_PROC_NULL) return PMPI_Isend(buffer, count, type, dest, tag, comm, request);
  return isend(buffer, count, type, dest, tag, comm, request);
}

int MPI_Issend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (split_sync() == nullptr || dest == MPI_PROC_NULL) return PMPI_Issend(buffer, count, type, dest, tag, comm, request);
  return isend(buffer, count, type, dest, tag, comm, request);
}

int MPI_Ibsend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (split_sync() == nullptr || dest == MPI_PROC_NULL) return PMPI_Ibsend(buffer, count, type, dest, tag, comm, request);
  return isend(buffer, count, type, dest, tag, comm, request);
}

int MPI_Irsend(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (split_sync() == nullptr || dest == MPI_PROC_NULL) return PMPI_Irsend(buffer, count, type, dest, tag, comm, request);
  return isend(buffer, count, type, dest, tag, comm, request);
}

// A nonblocking receive completes in MPI_Wait / MPI_Waitall as MPI_Recv would at that call.
int MPI_Irecv(void* buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  if (split_sync() == nullptr || source == MPI_PROC_NULL) return PMPI_Irecv(buffer, count, type, source, tag, comm, request);
  reap_sends(false);
  auto r = std::make_unique<Receive>(buffer, count, type, source, comm);
  const int rc = post(*r, tag);
  return rc != MPI_SUCCESS ? rc : start_receive(std::move(r), request);
}

// Persistent requests: each start is the send or receive it was made for, at the start's host time.
int MPI_Send_init(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  MPI_Request* request) {
  if (split_sync() == nullptr) return PMPI_Send_init(buffer, count, type, dest, tag, comm, request);
  return send_init(buffer, count, type, dest, tag, comm, request);
}

int MPI_Ssend_init(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  if (split_sync() == nullptr) return PMPI_Ssend_init(buffer, count, type, dest, tag, comm, request);
  return send_init(buffer, count, type, dest, tag, comm, request);
}

int MPI_Bsend_init(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  if (split_sync() == nullptr) return PMPI_Bsend_init(buffer, count, type, dest, tag, comm, request);
  return send_init(buffer, count, type, dest, tag, comm, request);
}

int MPI_Rsend_init(const void* buffer, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  if (split_sync() == nullptr) return PMPI_Rsend_init(buffer, count, type, dest, tag, comm, request);
  return send_init(buffer, count, type, dest, tag, comm, request);
}

int MPI_Recv_init(void* buffer, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  if (split_sync() == nullptr) return PMPI_Recv_init(buffer, count, type, source, tag, comm, request);
  auto p = std::make_unique<Persistent>();
  p->receive_buffer = buffer, p->count = count, p->type = type, p->peer = source, p->tag = tag, p->comm = comm;
  return make_persistent(std::move(p), request);
}

int MPI_Start(MPI_Request* request) { return start(request); }

int MPI_Startall(int count, MPI_Request requests[]) {
  for (int i = 0; i < count; ++i) {
    const int rc = start(&requests[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request* request) {
  return persistent_of(*request) != nullptr ? free_persistent(request) : PMPI_Request_free(request);
}

// Whether a request is done, without completing it: kept-in-step ones as MPI_Test finds them.
int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (!any_kept(1, &request)) return PMPI_Request_get_status(request, flag, status);
  const int rc = ready(request, flag);
  if (rc != MPI_SUCCESS || !*flag || status == MPI_STATUS_IGNORE) return rc;
  const Receive* r = active_receive(request);
  if (r == nullptr) return empty_status(status), MPI_SUCCESS;
  return request_status(const_cast<Receive*>(r), status);
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) { return wait(request, status); }

// Each request in turn: the host leaves at the latest of the messages' times, as waiting for all.
int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  if (!any_kept(count, requests)) return PMPI_Waitall(count, requests, statuses);
  for (int i = 0; i < count; ++i) {
    const int rc = wait(&requests[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// MPI_Test and its kin: a receive has completed when its message has arrived and was sent no
// later than the host's time (ready()).
int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!any_kept(1, request)) return PMPI_Test(request, flag, status);
  const int rc = ready(*request, flag);
  return rc != MPI_SUCCESS || !*flag ? rc : finish(request, status);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  if (!any_kept(count, requests)) return PMPI_Testall(count, requests, flag, statuses);
  *flag = 1;
  for (int i = 0; i < count && *flag; ++i) {
    if (inactive(requests[i])) continue;
    const int rc = ready(requests[i], flag);
    if (rc != MPI_SUCCESS) return rc;
  }
  for (int i = 0; i < count && *flag; ++i) {
    if (inactive(requests[i])) continue;
    const int rc = finish(&requests[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  if (!any_kept(count, requests)) return PMPI_Testany(count, requests, index, flag, status);
  return test_any(count, requests, index, flag, status);
}

int MPI_Testsome(int count, MPI_Request requests[], int* done, int indices[], MPI_Status statuses[]) {
  if (!any_kept(count, requests)) return PMPI_Testsome(count, requests, done, indices, statuses);
  *done = 0;
  for (int i = 0; i < count; ++i) {
    if (inactive(requests[i])) continue;
    int flag = 0;
    int rc = ready(requests[i], &flag);
    if (rc == MPI_SUCCESS && flag)
      rc = finish(&requests[i], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[*done]);
    if (rc != MPI_SUCCESS) return rc;
    if (flag) indices[(*done)++] = i;
  }
  return MPI_SUCCESS;
}

// A send (done when made) at once; among receives, the one whose message was sent first
// (wait_earliest); with other kinds of request among them, the first active one, waited for as MPI_Wait would (MPI would take any
// that completed, so that may return later than it must: said in the README).
int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!any_kept(count, requests)) return PMPI_Waitany(count, requests, index, status);
  // A request done however fast the processes ran (a send, buffered and done when made) first.
  for (int i = 0; i < count; ++i) {
    if (inactive(requests[i]) || active_receive(requests[i]) != nullptr || is_started_collective(requests[i])) continue;
    int done = 1;
    if (persistent_of(requests[i]) == nullptr) {
      const int rc = PMPI_Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return rc;
    }
    if (done) {
      *index = i;
      return finish(&requests[i], status);
    }
  }
  if (ConservativeSync* sync = split_sync(); sync != nullptr) {
    const int rc = wait_earliest(*sync, count, requests, index, status);
    if (rc != MPI_SUCCESS || *index >= 0) return rc;
  }
  *index = MPI_UNDEFINED;
  for (int i = 0; i < count; ++i) {
    if (inactive(requests[i])) continue;
    *index = i;
    return wait(&requests[i], status);
  }
  return MPI_SUCCESS;
}

int MPI_Waitsome(int count, MPI_Request requests[], int* done, int indices[], MPI_Status statuses[]) {
  if (!any_kept(count, requests)) return PMPI_Waitsome(count, requests, done, indices, statuses);
  int index = MPI_UNDEFINED;
  const int rc = MPI_Waitany(count, requests, &index, statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[0]);
  *done = index == MPI_UNDEFINED ? MPI_UNDEFINED : 1;
  if (index != MPI_UNDEFINED) indices[0] = index;
  return rc;
}

// A probe takes the message in (so its header can be read) and keeps it for the receive that
// matches it; the host leaves at the later of the probe's entry and the send time.
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  ConservativeSync* sync = split_sync();
  const std::vector<int> from = sync != nullptr && source != MPI_PROC_NULL ? senders(comm, source) : std::vector<int>{};
  if (from.empty()) return PMPI_Probe(source, tag, comm, status);   // also a source the communicator lacks: MPI's error
  std::deque<Stashed>::iterator at;
  return probe(*sync, source, tag, comm, from, status, &at);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  if (split_sync() == nullptr || source == MPI_PROC_NULL) return PMPI_Iprobe(source, tag, comm, flag, status);
  std::deque<Stashed>::iterator at;
  return probe_now(source, tag, comm, flag, status, &at);
}

// A matched probe hands the message it took in to MPI_Mrecv / MPI_Imrecv (mpi4py's recv uses them).
int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  ConservativeSync* sync = split_sync();
  const std::vector<int> from = sync != nullptr && source != MPI_PROC_NULL ? senders(comm, source) : std::vector<int>{};
  if (from.empty()) return PMPI_Mprobe(source, tag, comm, message, status);
  std::deque<Stashed>::iterator at;
  const int rc = probe(*sync, source, tag, comm, from, status, &at);
  if (rc == MPI_SUCCESS) *message = match(at);
  return rc;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status) {
  if (split_sync() == nullptr || source == MPI_PROC_NULL) return PMPI_Improbe(source, tag, comm, flag, message, status);
  std::deque<Stashed>::iterator at;
  const int rc = probe_now(source, tag, comm, flag, status, &at);
  if (rc == MPI_SUCCESS && *flag) *message = match(at);
  return rc;
}

// The probe already waited for the message's time: the receive returns at once.
int MPI_Mrecv(void* buffer, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  const auto m = matched_message(*message);
  if (m == matched().end()) return PMPI_Mrecv(buffer, count, type, message, status);
  Receive r(buffer, count, type, m->status.MPI_SOURCE, m->comm);
  const int rc = take_matched(r, m, message);
  return rc != MPI_SUCCESS ? rc : deliver(r, status);
}

int MPI_Imrecv(void* buffer, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  const auto m = matched_message(*message);
  if (m == matched().end()) return PMPI_Imrecv(buffer, count, type, message, request);
  auto r = std::make_unique<Receive>(buffer, count, type, m->status.MPI_SOURCE, m->comm);
  const int rc = take_matched(*r, m, message);
  return rc != MPI_SUCCESS ? rc : start_receive(std::move(r), request);
}

// The buffered sends complete before MPI ends, and a process of a split box leaves the run first:
// the others may still need it to meet them (mpi4py ends MPI as Python exits, before the
// platform's own exit handler would leave).
int MPI_Finalize() {
  if (split_sync() != nullptr) {
    try {
      Platform::current()->leave();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hpusim: a process of a split box could not leave the run: %s\n", e.what());
    }
  }
  reap_sends(true);
  return PMPI_Finalize();
}

}  // extern "C"
