// A Synapse program run as `mpirun -np 2` with HPUSIM_BOX=hls1 HPUSIM_CARDS=2
// HPUSIM_DISTRIBUTED=mpi: each process brings up its own card of the box through the C API alone,
// the ranks exchange the communicator id with MPI (the platform initialised it at the first
// acquire and ends it at exit), and an all_reduce of a count no slice divides is checked against
// the host's sum. Then rank 1 alone copies the result back once more while rank 0 goes straight
// into MPI_Allreduce: rank 0's host is away in the program's own collective while rank 1 still
// needs the simulation to move (program_mpi.cpp), and both leave it at the same host time. Then the
// same with a point-to-point message: rank 1 copies back once more and sends its host time while
// rank 0 already waits in MPI_Recv, which returns at the later of the two host times; an
// MPI_Sendrecv swaps the ranks' numbers; and rank 0 posts two MPI_Irecv, finds the first not done
// with MPI_Test (rank 1 sends it later), and MPI_Waitall returns at the second send's time while
// rank 1 sends each after a copy of its own (MPI_Isend); then waits, tests and probes, matched
// probes (MPI_Improbe, MPI_Mprobe, MPI_Mrecv, MPI_Imrecv) of synchronous-mode sends, persistent
// requests started twice, a communicator split while rank 1's device still copies with an
// MPI_Allgatherv on it, an intercommunicator made while it still copies, a put between window
// fences, and an MPI_Iallreduce
// (tested, then waited for) on the split communicator. Exit code 0 only if every rank got the exact
// result and the host times agree.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "hccl_api.h"
#include "synapse_api.h"

namespace {

float value(int rank, uint64_t i) { return static_cast<float>((i * 7 + static_cast<uint64_t>(rank) * 13) % 1000) * 0.37f - 11.0f; }

int fail(const char* what) {
  std::fprintf(stderr, "synapse split program: %s: %s\n", what, hcclGetLastErrorMessage());
  return 1;
}

}  // namespace

int main() {
  constexpr uint64_t kCount = 1'000'003;
  synDeviceId device = 0;
  synStreamHandle stream = nullptr;
  if (synInitialize() != synSuccess || synDeviceAcquire(&device, nullptr) != synSuccess) return fail("acquire");
  int initialised = 0, rank = 0, ranks = 0;
  MPI_Initialized(&initialised);
  if (!initialised) return fail("MPI is not initialised after the first acquire");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  hcclUniqueId id{};
  if (rank == 0 && hcclGetUniqueId(&id) != hcclSuccess) return fail("hcclGetUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);   // before any card is used
  hcclComm_t comm = nullptr;
  if (hcclCommInitRank(&comm, ranks, id, rank) != hcclSuccess) return fail("hcclCommInitRank");
  if (synStreamCreate(&stream, device, STREAM_TYPE_NETWORK_COLLECTIVE, 0) != synSuccess) return fail("stream");
  uint64_t buffer = 0;
  if (synDeviceMalloc(device, kCount * 4, 0, 0, &buffer) != synSuccess) return fail("malloc");
  std::vector<float> data(kCount), back(kCount);
  for (uint64_t i = 0; i < kCount; ++i) data[i] = value(rank, i);
  if (synMemCopyAsync(stream, reinterpret_cast<uint64_t>(data.data()), kCount * 4, buffer, HOST_TO_DRAM) != synSuccess) return fail("upload");
  const auto as_pointer = [](uint64_t a) { return reinterpret_cast<void*>(a); };
  if (hcclAllReduce(as_pointer(buffer), as_pointer(buffer), kCount, hcclFloat32, hcclSum, comm, stream) != hcclSuccess) return fail("hcclAllReduce");
  if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("download");
  if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize");
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < kCount; ++i) {
    float sum = value(0, i);
    for (int r = 1; r < ranks; ++r) sum += value(r, i);   // the device's order: rank 0 first
    if (back[i] != sum) ++wrong;
  }
  if (rank == 1) {
    if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("second download");
    if (synStreamSynchronize(stream) != synSuccess) return fail("second synchronize");
  }
  uint64_t entered_ns = 0, left_ns = 0;
  if (hpusim_hostTimeNs(&entered_ns) != synSuccess) return fail("host time");
  unsigned long long mine = wrong, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (hpusim_hostTimeNs(&left_ns) != synSuccess) return fail("host time");
  unsigned long long times[2] = {left_ns, ~0ull - left_ns}, extremes[2] = {0, 0};
  MPI_Allreduce(times, extremes, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  const unsigned long long latest = extremes[0], earliest = ~0ull - extremes[1];
  if (rank == 0) {
    std::printf("all_reduce of %llu floats on %d processes: %llu wrong\n", static_cast<unsigned long long>(kCount), ranks, all);
    std::printf("MPI_Allreduce: rank 0 entered at %llu ns, every rank left at %llu ns%s\n",
                static_cast<unsigned long long>(entered_ns), latest, earliest == latest ? "" : " (not all at once)");
  }
  // Point to point: rank 0 waits for rank 1, whose device still has a copy to make.
  bool p2p_ok = true;
  if (rank == 1) {
    if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("third download");
    if (synStreamSynchronize(stream) != synSuccess) return fail("third synchronize");
    unsigned long long sent_ns = 0;
    if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&sent_ns)) != synSuccess) return fail("host time");
    MPI_Send(&sent_ns, 1, MPI_UNSIGNED_LONG_LONG, 0, 7, MPI_COMM_WORLD);
  } else if (rank == 0) {
    uint64_t waited_ns = 0, received_ns = 0;
    unsigned long long sent_ns = 0;
    MPI_Status status;
    if (hpusim_hostTimeNs(&waited_ns) != synSuccess) return fail("host time");
    MPI_Recv(&sent_ns, 4, MPI_UNSIGNED_LONG_LONG, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &status);
    if (hpusim_hostTimeNs(&received_ns) != synSuccess) return fail("host time");
    int elements = 0;
    MPI_Get_count(&status, MPI_UNSIGNED_LONG_LONG, &elements);
    p2p_ok = received_ns == std::max<uint64_t>(waited_ns, sent_ns) && sent_ns > waited_ns && elements == 1 &&
             status.MPI_SOURCE == 1 && status.MPI_TAG == 7;
    std::printf("MPI_Recv: rank 0 waited from %llu ns, rank 1 sent at %llu ns, received at %llu ns (%d element from rank %d)\n",
                static_cast<unsigned long long>(waited_ns), sent_ns, static_cast<unsigned long long>(received_ns), elements,
                status.MPI_SOURCE);
  }
  if (ranks == 2) {
    int other = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, 1 - rank, 9, &other, 1, MPI_INT, 1 - rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    p2p_ok = p2p_ok && other == 1 - rank;
  }
  // Nonblocking: rank 0 posts two receives and tests one at once (rank 1 sends both only after
  // more device work: not yet), then waits for both; rank 1 sends each after a copy of its own.
  if (rank == 1) {
    unsigned long long sent_ns[2] = {0, 0};
    MPI_Request sends[2];
    for (int k = 0; k < 2; ++k) {
      if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a send");
      if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a send");
      if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&sent_ns[k])) != synSuccess) return fail("host time");
      MPI_Isend(&sent_ns[k], 1, MPI_UNSIGNED_LONG_LONG, 0, 11 + k, MPI_COMM_WORLD, &sends[k]);
    }
    MPI_Waitall(2, sends, MPI_STATUSES_IGNORE);
    p2p_ok = p2p_ok && sends[0] == MPI_REQUEST_NULL && sends[1] == MPI_REQUEST_NULL;
    // Tag 13 at once, tag 14 after one more copy.
    unsigned long long late_ns = 0;
    MPI_Send(&sent_ns[1], 1, MPI_UNSIGNED_LONG_LONG, 0, 13, MPI_COMM_WORLD);
    if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a send");
    if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a send");
    if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&late_ns)) != synSuccess) return fail("host time");
    MPI_Send(&late_ns, 1, MPI_UNSIGNED_LONG_LONG, 0, 14, MPI_COMM_WORLD);
    if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a send");
    if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a send");
    if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&late_ns)) != synSuccess) return fail("host time");
    MPI_Send(&late_ns, 1, MPI_UNSIGNED_LONG_LONG, 0, 15, MPI_COMM_WORLD);
    // Three numbers for rank 0's probe, after one more copy.
    if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a send");
    if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a send");
    unsigned long long three[3] = {0, 5, 6};
    if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&three[0])) != synSuccess) return fail("host time");
    MPI_Send(three, 3, MPI_UNSIGNED_LONG_LONG, 0, 16, MPI_COMM_WORLD);
    // Two synchronous-mode sends for rank 0's matched probes, each after one more copy.
    for (int tag = 17; tag <= 18; ++tag) {
      if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a send");
      if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a send");
      unsigned long long two[2] = {0, static_cast<unsigned long long>(tag)};
      if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&two[0])) != synSuccess) return fail("host time");
      MPI_Ssend(two, 2, MPI_UNSIGNED_LONG_LONG, 0, tag, MPI_COMM_WORLD);
    }
  } else if (rank == 0) {
    unsigned long long got[2] = {0, 0};
    MPI_Request receives[2];
    MPI_Status statuses[2];
    for (int k = 0; k < 2; ++k) MPI_Irecv(&got[k], 1, MPI_UNSIGNED_LONG_LONG, 1, 11 + k, MPI_COMM_WORLD, &receives[k]);
    uint64_t posted_ns = 0, done_ns = 0;
    if (hpusim_hostTimeNs(&posted_ns) != synSuccess) return fail("host time");
    int flag = 1;
    MPI_Test(&receives[0], &flag, MPI_STATUS_IGNORE);
    MPI_Waitall(2, receives, statuses);
    if (hpusim_hostTimeNs(&done_ns) != synSuccess) return fail("host time");
    int elements[2] = {0, 0};
    for (int k = 0; k < 2; ++k) MPI_Get_count(&statuses[k], MPI_UNSIGNED_LONG_LONG, &elements[k]);
    p2p_ok = p2p_ok && flag == 0 && got[0] > posted_ns && got[1] > got[0] && done_ns == got[1] &&
             elements[0] == 1 && elements[1] == 1 && statuses[0].MPI_SOURCE == 1 && statuses[1].MPI_TAG == 12 &&
             receives[0] == MPI_REQUEST_NULL && receives[1] == MPI_REQUEST_NULL;
    std::printf("MPI_Irecv x2: rank 0 posted at %llu ns (MPI_Test: %d), rank 1 sent at %llu and %llu ns, MPI_Waitall "
                "returned at %llu ns\n",
                static_cast<unsigned long long>(posted_ns), flag, got[0], got[1], static_cast<unsigned long long>(done_ns));
    // MPI_Waitany completes the request whose message was sent first: here the one rank 1 already
    // sent, listed after one it sends only after another copy.
    unsigned long long more[2] = {0, 0};
    MPI_Irecv(&more[0], 1, MPI_UNSIGNED_LONG_LONG, 1, 14, MPI_COMM_WORLD, &receives[0]);
    MPI_Irecv(&more[1], 1, MPI_UNSIGNED_LONG_LONG, 1, 13, MPI_COMM_WORLD, &receives[1]);
    int index = -1;
    MPI_Waitany(2, receives, &index, MPI_STATUS_IGNORE);
    uint64_t any_ns = 0, last_ns = 0;
    if (hpusim_hostTimeNs(&any_ns) != synSuccess) return fail("host time");
    MPI_Wait(&receives[index == 0 ? 1 : 0], MPI_STATUS_IGNORE);
    if (hpusim_hostTimeNs(&last_ns) != synSuccess) return fail("host time");
    p2p_ok = p2p_ok && index == 1 && more[1] == got[1] && more[0] > got[1] && any_ns == done_ns && last_ns == more[0];
    std::printf("MPI_Waitany: index %d at %llu ns; the other at %llu ns\n", index, static_cast<unsigned long long>(any_ns),
                static_cast<unsigned long long>(last_ns));
    // MPI_Testall / MPI_Testany before rank 1 sent (its device still copies): not done; then
    // MPI_Waitsome at the send's time.
    unsigned long long last = 0;
    MPI_Request pair[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Irecv(&last, 1, MPI_UNSIGNED_LONG_LONG, 1, 15, MPI_COMM_WORLD, &pair[1]);
    int all_done = 1, any_done = 1, which = -1, some = 0, indices[2] = {-1, -1};
    MPI_Testall(2, pair, &all_done, MPI_STATUSES_IGNORE);
    MPI_Testany(2, pair, &which, &any_done, MPI_STATUS_IGNORE);
    MPI_Waitsome(2, pair, &some, indices, statuses);
    uint64_t some_ns = 0;
    if (hpusim_hostTimeNs(&some_ns) != synSuccess) return fail("host time");
    p2p_ok = p2p_ok && all_done == 0 && any_done == 0 && which == MPI_UNDEFINED && some == 1 && indices[0] == 1 &&
             some_ns == last && last > last_ns && statuses[0].MPI_TAG == 15 && pair[1] == MPI_REQUEST_NULL;
    std::printf("MPI_Testall %d, MPI_Testany %d, MPI_Waitsome %d request(s) at %llu ns (sent at %llu)\n", all_done,
                any_done, some, static_cast<unsigned long long>(some_ns), last);
    // MPI_Iprobe before rank 1 sent: nothing; MPI_Probe returns at the send's time with its count,
    // and the receive after it takes that message at once.
    int probed = 1, counted = 0;
    MPI_Status probe;
    MPI_Iprobe(1, 16, MPI_COMM_WORLD, &probed, MPI_STATUS_IGNORE);
    MPI_Probe(MPI_ANY_SOURCE, 16, MPI_COMM_WORLD, &probe);
    uint64_t probe_ns = 0, received_ns = 0;
    if (hpusim_hostTimeNs(&probe_ns) != synSuccess) return fail("host time");
    MPI_Get_count(&probe, MPI_UNSIGNED_LONG_LONG, &counted);
    std::vector<unsigned long long> three(static_cast<size_t>(std::max(counted, 1)));
    MPI_Recv(three.data(), counted, MPI_UNSIGNED_LONG_LONG, probe.MPI_SOURCE, 16, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (hpusim_hostTimeNs(&received_ns) != synSuccess) return fail("host time");
    p2p_ok = p2p_ok && probed == 0 && counted == 3 && probe.MPI_SOURCE == 1 && three[0] == probe_ns &&
             three[0] > some_ns && three[1] == 5 && three[2] == 6 && received_ns == probe_ns;
    std::printf("MPI_Iprobe %d; MPI_Probe at %llu ns: %d elements from rank %d, sent at %llu ns, received at %llu ns\n",
                probed, static_cast<unsigned long long>(probe_ns), counted, probe.MPI_SOURCE, three[0],
                static_cast<unsigned long long>(received_ns));
    // Matched probes (mpi4py's recv): MPI_Improbe before rank 1 sent finds nothing; MPI_Mprobe
    // returns at the send's time and MPI_Mrecv takes that message; MPI_Imrecv's wait returns at
    // the next send's time.
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status matched;
    unsigned long long first[2] = {0, 0}, second[2] = {0, 0};
    uint64_t mprobe_ns = 0, mrecv_ns = 0, imrecv_ns = 0;
    int found = 1, matched_count = 0;
    MPI_Improbe(1, 17, MPI_COMM_WORLD, &found, &message, MPI_STATUS_IGNORE);
    MPI_Mprobe(1, 17, MPI_COMM_WORLD, &message, &matched);
    if (hpusim_hostTimeNs(&mprobe_ns) != synSuccess) return fail("host time");
    MPI_Get_count(&matched, MPI_UNSIGNED_LONG_LONG, &matched_count);
    MPI_Mrecv(first, 2, MPI_UNSIGNED_LONG_LONG, &message, MPI_STATUS_IGNORE);
    if (hpusim_hostTimeNs(&mrecv_ns) != synSuccess) return fail("host time");
    const bool mrecv_ok = found == 0 && matched_count == 2 && message == MPI_MESSAGE_NULL && first[1] == 17 &&
                          first[0] == mprobe_ns && mprobe_ns > received_ns && mrecv_ns == mprobe_ns;
    MPI_Request request;
    MPI_Mprobe(MPI_ANY_SOURCE, 18, MPI_COMM_WORLD, &message, &matched);
    MPI_Imrecv(second, 2, MPI_UNSIGNED_LONG_LONG, &message, &request);
    MPI_Wait(&request, &matched);
    if (hpusim_hostTimeNs(&imrecv_ns) != synSuccess) return fail("host time");
    MPI_Get_count(&matched, MPI_UNSIGNED_LONG_LONG, &matched_count);
    p2p_ok = p2p_ok && mrecv_ok && second[1] == 18 && second[0] == imrecv_ns && imrecv_ns > mrecv_ns &&
             matched_count == 2 && matched.MPI_SOURCE == 1 && request == MPI_REQUEST_NULL;
    std::printf("MPI_Improbe %d; MPI_Mprobe at %llu ns (sent at %llu), MPI_Mrecv at %llu ns; MPI_Imrecv at %llu ns "
                "(sent at %llu)\n", found, static_cast<unsigned long long>(mprobe_ns), first[0],
                static_cast<unsigned long long>(mrecv_ns), static_cast<unsigned long long>(imrecv_ns), second[0]);
  }
  // Persistent requests, each started twice: rank 1 sends its host time after a copy each time
  // (MPI_Send_init, MPI_Start, then MPI_Startall); rank 0's receive (MPI_Recv_init), tested at once
  // after its first start (not sent yet), returns at each send's time, stays inactive between
  // (MPI_Test of it is done at once, MPI_Request_get_status too) and is freed by MPI_Request_free.
  if (rank == 1) {
    unsigned long long stamp = 0;
    MPI_Request persistent = MPI_REQUEST_NULL;
    MPI_Send_init(&stamp, 1, MPI_UNSIGNED_LONG_LONG, 0, 19, MPI_COMM_WORLD, &persistent);
    for (int k = 0; k < 2; ++k) {
      if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a persistent send");
      if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a persistent send");
      if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&stamp)) != synSuccess) return fail("host time");
      if (k == 0) {
        MPI_Start(&persistent);
      } else {
        MPI_Startall(1, &persistent);
      }
      MPI_Wait(&persistent, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&persistent);
    int from_waitany = 0;
    MPI_Recv(&from_waitany, 1, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&from_waitany, 1, MPI_INT, 0, 22, MPI_COMM_WORLD);
    p2p_ok = p2p_ok && persistent == MPI_REQUEST_NULL && from_waitany == 20;
  } else if (rank == 0) {
    // MPI_Waitany over a receive rank 1 answers only at the end and a send (done when made):
    // the send, at once.
    int twenty = 20, echoed = 0, mixed_index = -1;
    MPI_Request mixed[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Irecv(&echoed, 1, MPI_INT, 1, 22, MPI_COMM_WORLD, &mixed[0]);
    MPI_Isend(&twenty, 1, MPI_INT, 1, 20, MPI_COMM_WORLD, &mixed[1]);
    uint64_t mixed_entry_ns = 0, mixed_left_ns = 0;
    if (hpusim_hostTimeNs(&mixed_entry_ns) != synSuccess) return fail("host time");
    MPI_Waitany(2, mixed, &mixed_index, MPI_STATUS_IGNORE);
    if (hpusim_hostTimeNs(&mixed_left_ns) != synSuccess) return fail("host time");
    p2p_ok = p2p_ok && mixed_index == 1 && mixed_left_ns == mixed_entry_ns && mixed[1] == MPI_REQUEST_NULL;
    unsigned long long stamp = 0, stamps[2] = {0, 0};
    uint64_t returned_ns[2] = {0, 0};
    MPI_Request persistent = MPI_REQUEST_NULL;
    MPI_Status status;
    int early = 1, between = 0, between_status = 0, elements = 0;
    MPI_Recv_init(&stamp, 1, MPI_UNSIGNED_LONG_LONG, 1, 19, MPI_COMM_WORLD, &persistent);
    const MPI_Request made = persistent;
    for (int k = 0; k < 2; ++k) {
      MPI_Start(&persistent);
      if (k == 0) MPI_Test(&persistent, &early, MPI_STATUS_IGNORE);
      MPI_Wait(&persistent, &status);
      if (hpusim_hostTimeNs(&returned_ns[k]) != synSuccess) return fail("host time");
      stamps[k] = stamp;
      if (k == 0) {
        MPI_Test(&persistent, &between, MPI_STATUS_IGNORE);
        MPI_Request_get_status(persistent, &between_status, MPI_STATUS_IGNORE);
      }
    }
    MPI_Get_count(&status, MPI_UNSIGNED_LONG_LONG, &elements);
    const bool kept = persistent == made;
    MPI_Request_free(&persistent);
    p2p_ok = p2p_ok && early == 0 && between == 1 && between_status == 1 && kept && persistent == MPI_REQUEST_NULL &&
             returned_ns[0] == stamps[0] && returned_ns[1] == stamps[1] && stamps[1] > stamps[0] && elements == 1 &&
             status.MPI_SOURCE == 1 && status.MPI_TAG == 19;
    std::printf("MPI_Recv_init: started twice (MPI_Test at once: %d), returned at %llu and %llu ns (sent at %llu and %llu)\n",
                early, static_cast<unsigned long long>(returned_ns[0]), static_cast<unsigned long long>(returned_ns[1]),
                stamps[0], stamps[1]);
    MPI_Wait(&mixed[0], MPI_STATUS_IGNORE);
    p2p_ok = p2p_ok && echoed == 20;
    std::printf("MPI_Waitany over a receive and a send: index %d, host at %llu ns from %llu\n", mixed_index,
                static_cast<unsigned long long>(mixed_left_ns), static_cast<unsigned long long>(mixed_entry_ns));
  }
  // A communicator made while rank 1's device still copies (mpi4py duplicates its communicator so),
  // and a collective of varying counts on it: every rank leaves each at the latest entry.
  if (rank == 1) {
    if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a split");
    if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a split");
  }
  uint64_t split_entry_ns = 0, split_left_ns = 0, gathered_ns = 0;
  if (hpusim_hostTimeNs(&split_entry_ns) != synSuccess) return fail("host time");
  MPI_Comm everyone = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &everyone);
  if (hpusim_hostTimeNs(&split_left_ns) != synSuccess) return fail("host time");
  std::vector<int> counts(static_cast<size_t>(ranks)), offsets(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) counts[static_cast<size_t>(r)] = r + 1, offsets[static_cast<size_t>(r)] = r * (r + 1) / 2;
  std::vector<int> mine_v(static_cast<size_t>(rank + 1), rank), all_v(static_cast<size_t>(ranks * (ranks + 1) / 2), -1);
  MPI_Allgatherv(mine_v.data(), rank + 1, MPI_INT, all_v.data(), counts.data(), offsets.data(), MPI_INT, everyone);
  if (hpusim_hostTimeNs(&gathered_ns) != synSuccess) return fail("host time");
  unsigned long long split_entries[2] = {split_entry_ns, ~0ull - split_left_ns}, split_max[2] = {0, 0};
  MPI_Allreduce(split_entries, split_max, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, everyone);
  bool values_ok = true;
  for (int r = 0; r < ranks; ++r)
    for (int k = 0; k <= r; ++k) values_ok = values_ok && all_v[static_cast<size_t>(offsets[static_cast<size_t>(r)] + k)] == r;
  p2p_ok = p2p_ok && values_ok && split_left_ns == split_max[0] && ~0ull - split_max[1] == split_max[0] &&
           gathered_ns == split_left_ns;
  if (rank == 0) {
    std::printf("MPI_Comm_split: rank 0 entered at %llu ns, every rank left at %llu ns; MPI_Allgatherv %s\n",
                static_cast<unsigned long long>(split_entry_ns), split_max[0], values_ok ? "right" : "wrong");
  }
  // An intercommunicator between the two halves of MPI_COMM_WORLD, made while rank 1's card still
  // copies: both ranks leave at the later entry.
  if (ranks == 2) {
    MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &half);
    if (rank == 1) {
      if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before an intercommunicator");
      if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before an intercommunicator");
    }
    uint64_t inter_entry_ns = 0, inter_left_ns = 0;
    if (hpusim_hostTimeNs(&inter_entry_ns) != synSuccess) return fail("host time");
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank, 21, &inter);
    if (hpusim_hostTimeNs(&inter_left_ns) != synSuccess) return fail("host time");
    int remote = 0;
    MPI_Comm_remote_size(inter, &remote);
    unsigned long long inter_times[2] = {inter_entry_ns, ~0ull - inter_left_ns}, inter_max[2] = {0, 0};
    MPI_Allreduce(inter_times, inter_max, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    p2p_ok = p2p_ok && remote == 1 && inter_left_ns == inter_max[0] && ~0ull - inter_max[1] == inter_max[0] &&
             (rank != 0 || inter_entry_ns < inter_left_ns);
    if (rank == 0) {
      std::printf("MPI_Intercomm_create: rank 0 entered at %llu ns, every rank left at %llu ns\n",
                  static_cast<unsigned long long>(inter_entry_ns), inter_max[0]);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  // One-sided: between two fences rank 1 puts its host time into rank 0's window after a copy,
  // while rank 0 goes straight into the second fence; both leave it at the later entry, and rank 0
  // then holds rank 1's time.
  {
    unsigned long long slot = 0, put_ns = 0;
    MPI_Win window = MPI_WIN_NULL;
    MPI_Win_create(&slot, sizeof(slot), sizeof(slot), MPI_INFO_NULL, MPI_COMM_WORLD, &window);
    MPI_Win_fence(0, window);
    if (rank == 1) {
      if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a put");
      if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a put");
      if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&put_ns)) != synSuccess) return fail("host time");
      MPI_Put(&put_ns, 1, MPI_UNSIGNED_LONG_LONG, 0, 0, 1, MPI_UNSIGNED_LONG_LONG, window);
    }
    uint64_t fence_entry_ns = 0, fence_left_ns = 0;
    if (hpusim_hostTimeNs(&fence_entry_ns) != synSuccess) return fail("host time");
    MPI_Win_fence(0, window);
    if (hpusim_hostTimeNs(&fence_left_ns) != synSuccess) return fail("host time");
    unsigned long long fence_times[2] = {fence_entry_ns, ~0ull - fence_left_ns}, fence_max[2] = {0, 0};
    MPI_Allreduce(fence_times, fence_max, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    p2p_ok = p2p_ok && fence_left_ns == fence_max[0] && ~0ull - fence_max[1] == fence_max[0] &&
             (rank != 0 || (slot == fence_max[0] && fence_entry_ns < fence_left_ns));
    if (rank == 0) {
      std::printf("MPI_Win_fence: rank 0 entered at %llu ns, every rank left at %llu ns; rank 1 put %llu\n",
                  static_cast<unsigned long long>(fence_entry_ns), fence_max[0], slot);
    }
    MPI_Win_free(&window);
    p2p_ok = p2p_ok && window == MPI_WIN_NULL;
  }
  // Post-start-complete-wait: rank 0 exposes its window to rank 1 after a copy; rank 1's
  // MPI_Win_start, entered before that, leaves at the post's time; rank 1 copies, puts its host time
  // and completes. Rank 0 tests at once (not done: rank 1 completes later), then its MPI_Win_wait
  // leaves at rank 1's complete.
  {
    unsigned long long slot = 0, put_ns = 0;
    MPI_Win window = MPI_WIN_NULL;
    MPI_Win_create(&slot, sizeof(slot), sizeof(slot), MPI_INFO_NULL, MPI_COMM_WORLD, &window);
    MPI_Group world_group = MPI_GROUP_NULL, peer = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    const int other = 1 - rank;
    MPI_Group_incl(world_group, 1, &other, &peer);
    uint64_t post_ns = 0, start_entry_ns = 0, started_ns = 0, waited_ns = 0;
    int tested = 1;
    if (rank == 0) {
      if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a post");
      if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a post");
      if (hpusim_hostTimeNs(&post_ns) != synSuccess) return fail("host time");
      MPI_Win_post(peer, 0, window);
      MPI_Win_test(window, &tested);
      MPI_Win_wait(window);
      if (hpusim_hostTimeNs(&waited_ns) != synSuccess) return fail("host time");
    } else {
      if (hpusim_hostTimeNs(&start_entry_ns) != synSuccess) return fail("host time");
      MPI_Win_start(peer, 0, window);
      if (hpusim_hostTimeNs(&started_ns) != synSuccess) return fail("host time");
      if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before a put");
      if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before a put");
      if (hpusim_hostTimeNs(reinterpret_cast<uint64_t*>(&put_ns)) != synSuccess) return fail("host time");
      MPI_Put(&put_ns, 1, MPI_UNSIGNED_LONG_LONG, 0, 0, 1, MPI_UNSIGNED_LONG_LONG, window);
      MPI_Win_complete(window);
    }
    unsigned long long epoch_times[4] = {post_ns, start_entry_ns, started_ns, put_ns}, epoch_max[4] = {0, 0, 0, 0};
    MPI_Allreduce(epoch_times, epoch_max, 4, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    p2p_ok = p2p_ok && epoch_max[1] < epoch_max[0] && epoch_max[2] == epoch_max[0] && epoch_max[3] > epoch_max[0] &&
             (rank != 0 || (tested == 0 && waited_ns == epoch_max[3] && slot == epoch_max[3]));
    if (rank == 0) {
      std::printf("MPI_Win_post at %llu ns (rank 1's MPI_Win_start entered at %llu, left at %llu); rank 1 put %llu "
                  "and completed, rank 0's MPI_Win_test: %d, MPI_Win_wait left at %llu ns\n",
                  epoch_max[0], epoch_max[1], epoch_max[2], slot, tested, static_cast<unsigned long long>(waited_ns));
    }
    MPI_Group_free(&peer);
    MPI_Group_free(&world_group);
    MPI_Win_free(&window);
  }
  // A nonblocking collective on the split communicator: rank 0 tests at once (not done: rank 1 enters after one more
  // copy), then both wait, leaving at the later entry.
  if (rank == 1) {
    if (synMemCopyAsync(stream, buffer, kCount * 4, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess) return fail("copy before an MPI_Iallreduce");
    if (synStreamSynchronize(stream) != synSuccess) return fail("synchronize before an MPI_Iallreduce");
  }
  uint64_t posted_ns = 0, reduced_ns = 0;
  if (hpusim_hostTimeNs(&posted_ns) != synSuccess) return fail("host time");
  int one = rank + 1, sum = 0, tested = 1;
  MPI_Request reduction;
  MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, everyone, &reduction);
  if (rank == 0) MPI_Test(&reduction, &tested, MPI_STATUS_IGNORE);
  MPI_Wait(&reduction, MPI_STATUS_IGNORE);
  if (hpusim_hostTimeNs(&reduced_ns) != synSuccess) return fail("host time");
  unsigned long long posts[2] = {posted_ns, ~0ull - reduced_ns}, posts_max[2] = {0, 0};
  MPI_Allreduce(posts, posts_max, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, everyone);
  p2p_ok = p2p_ok && sum == ranks * (ranks + 1) / 2 && reduced_ns == posts_max[0] && ~0ull - posts_max[1] == posts_max[0] &&
           (rank != 0 || (tested == 0 && posted_ns < reduced_ns)) && reduction == MPI_REQUEST_NULL;
  if (rank == 0) {
    std::printf("MPI_Iallreduce: rank 0 posted at %llu ns (MPI_Test: %d), every rank's MPI_Wait returned at %llu ns\n",
                static_cast<unsigned long long>(posted_ns), tested, posts_max[0]);
  }
  MPI_Comm_free(&everyone);
  int p2p_mine = p2p_ok ? 0 : 1, p2p_bad = 0;
  MPI_Allreduce(&p2p_mine, &p2p_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  hcclCommDestroy(comm);
  synDestroy();
  return all == 0 && earliest == latest && left_ns >= entered_ns && p2p_bad == 0 ? 0 : 1;
}
