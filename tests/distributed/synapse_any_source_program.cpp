// A Synapse program run as `mpirun -np 3` with HPUSIM_BOX=hls1 HPUSIM_CARDS=3
// HPUSIM_DISTRIBUTED=mpi: receives and a probe from MPI_ANY_SOURCE among two senders take the
// message sent first in simulated time. Twice, ranks 1 and 2 each send rank 0 their host time:
// one at once, the other after copying 4 MB back from its card (later in simulated time), and
// then each enters a final MPI_Allreduce, where it waits for rank 0. Rank 0 receives (first
// round) or probes then receives (second round) from any source: the earlier send comes first,
// at its send time; the later one is chosen while its sender's peer already waits in the
// collective for rank 0 (so it cannot send again before rank 0 acts). Exit code 0 only if every
// rank agrees it did.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "synapse_api.h"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "any-source program: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  constexpr uint64_t kBytes = 4u << 20;
  synDeviceId device = 0;
  synStreamHandle stream = nullptr;
  if (synInitialize() != synSuccess || synDeviceAcquire(&device, nullptr) != synSuccess) return fail("acquire");
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 3) return fail("run it on three processes");
  if (synStreamCreate(&stream, device, STREAM_TYPE_COPY_DEVICE_TO_HOST, 0) != synSuccess) return fail("stream");
  uint64_t buffer = 0;
  if (synDeviceMalloc(device, kBytes, 0, 0, &buffer) != synSuccess) return fail("malloc");
  std::vector<char> back(kBytes);
  const auto now_ns = [] {
    uint64_t ns = 0;
    hpusim_hostTimeNs(&ns);
    return static_cast<unsigned long long>(ns);
  };
  MPI_Barrier(MPI_COMM_WORLD);
  bool ok = true;
  for (int round = 0; round < 2; ++round) {
    const int tag = 5 + round;
    const int late = round == 0 ? 1 : 2;   // the sender whose message is later in simulated time
    if (rank == late) {
      for (int copy = 0; copy <= round; ++copy) {   // later than the other's send in both rounds
        if (synMemCopyAsync(stream, buffer, kBytes, reinterpret_cast<uint64_t>(back.data()), DRAM_TO_HOST) != synSuccess ||
            synStreamSynchronize(stream) != synSuccess)
          return fail("copy");
      }
      const unsigned long long sent = now_ns();
      MPI_Send(&sent, 1, MPI_UNSIGNED_LONG_LONG, 0, tag, MPI_COMM_WORLD);
    } else if (rank != 0) {
      const unsigned long long sent = now_ns();
      MPI_Send(&sent, 1, MPI_UNSIGNED_LONG_LONG, 0, tag, MPI_COMM_WORLD);
    } else {
      unsigned long long sent[2] = {0, 0}, received[2] = {0, 0};
      int from[2] = {-1, -1};
      const unsigned long long entered = now_ns();
      for (int k = 0; k < 2; ++k) {
        MPI_Status status;
        if (round == 1 && k == 0) {
          MPI_Status probed;
          MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &probed);
          from[0] = probed.MPI_SOURCE;
          const unsigned long long at_probe = now_ns();
          MPI_Recv(&sent[0], 1, MPI_UNSIGNED_LONG_LONG, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &status);
          ok = ok && status.MPI_SOURCE == probed.MPI_SOURCE && now_ns() == at_probe;
        } else {
          MPI_Recv(&sent[k], 1, MPI_UNSIGNED_LONG_LONG, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &status);
          from[k] = status.MPI_SOURCE;
        }
        received[k] = now_ns();
      }
      const int early = 3 - late;
      ok = ok && from[0] == early && from[1] == late && sent[0] < sent[1] &&
           received[0] == std::max(entered, sent[0]) && received[1] == sent[1];
      std::printf("round %d (%s): rank 0 entered at %llu ns; rank %d's message (sent at %llu ns) came first, at %llu "
                  "ns; rank %d's (sent at %llu ns) at %llu ns\n",
                  round, round == 0 ? "MPI_Recv" : "MPI_Probe", entered, from[0], sent[0], received[0], from[1], sent[1],
                  received[1]);
    }
  }
  int mine = ok ? 0 : 1, bad = 0;
  MPI_Allreduce(&mine, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  synDestroy();
  return bad == 0 ? 0 : 1;
}
