// A Synapse program run as `mpirun -np 2` with HPUSIM_BOX=hls1 HPUSIM_CARDS=2
// HPUSIM_DISTRIBUTED=mpi: each process brings up its own card of the box through the C API alone,
// the ranks exchange the communicator id with MPI (the platform initialised it at the first
// acquire and ends it at exit), and an all_reduce of a count no slice divides is checked against
// the host's sum. Then rank 1 alone copies the result back once more while rank 0 goes straight
// into MPI_Allreduce: rank 0's host is away in the program's own collective while rank 1 still
// needs the simulation to move (program_mpi.cpp), and both leave it at the same host time. Then the
// same with a point-to-point message: rank 1 copies back once more and sends its host time while
// rank 0 already waits in MPI_Recv, which returns at the later of the two host times; and an
// MPI_Sendrecv swaps the ranks' numbers. Exit code 0 only if every rank got the exact result and
// the host times agree.
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
  int p2p_mine = p2p_ok ? 0 : 1, p2p_bad = 0;
  MPI_Allreduce(&p2p_mine, &p2p_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  hcclCommDestroy(comm);
  synDestroy();
  return all == 0 && earliest == latest && left_ns >= entered_ns && p2p_bad == 0 ? 0 : 1;
}
