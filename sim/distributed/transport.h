// How the processes of a split simulation talk at a window's end (conservative_sync.h): every
// rank's status words to every rank, then bytes from each rank to each. Two transports: MPI (an
// mpirun job, on one machine or many) and TCP (processes started by another launcher, torchrun's
// for instance, that meet at a rendezvous address).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hpusim::distributed {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  // Collective: every rank's `mine` (of one size on every rank), rank after rank.
  virtual std::vector<uint64_t> allgather(const std::vector<uint64_t>& mine) = 0;
  // Collective: `out[r]` to rank r; returns what each rank sent this one, `in_bytes[r]` bytes from
  // rank r (known from an allgather before).
  virtual std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& out,
                                                     const std::vector<uint64_t>& in_bytes) = 0;
  // Ends every process of the run (a failure the others would otherwise wait on for ever).
  [[noreturn]] virtual void abort() = 0;
  // "MPI" or "TCP", for messages.
  virtual const char* name() const = 0;
};

// The ranks of MPI_COMM_WORLD, on a duplicate of it (MPI initialised, at least
// MPI_THREAD_SERIALIZED). Waits poll, yield, then sleep, so that a waiting rank leaves its core to
// the others.
std::unique_ptr<Transport> mpi_transport();

// Rank `rank` of `ranks` processes meeting at `host:port` (rank 0 listens there; the others
// connect, retrying for `timeout_s` seconds), then joined all to all by TCP connections. A rank
// that ends or fails closes its connections: the others' next meeting throws, naming it.
std::unique_ptr<Transport> tcp_transport(int rank, int ranks, const std::string& host, uint16_t port,
                                         double timeout_s = 300);

}  // namespace hpusim::distributed
