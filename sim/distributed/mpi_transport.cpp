#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <thread>

#include "sim/distributed/transport.h"

namespace hpusim::distributed {
namespace {

// Its communication calls are MPI's PMPI_ ones: the program's own MPI calls, which a split box's
// library sees (sim/platform/program_mpi*.cpp), never include the synchronisation's.
class MpiTransport final : public Transport {
 public:
  MpiTransport() {
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiTransport() override {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) PMPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int ranks() const override { return size_; }
  const char* name() const override { return "MPI"; }

  std::vector<uint64_t> allgather(const std::vector<uint64_t>& mine) override {
    std::vector<uint64_t> all(mine.size() * static_cast<size_t>(size_));
    MPI_Request request;
    PMPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(), static_cast<int>(mine.size()),
                    MPI_UINT64_T, comm_, &request);
    wait(request);
    return all;
  }

  std::vector<std::vector<uint8_t>> exchange(const std::vector<std::vector<uint8_t>>& out,
                                             const std::vector<uint64_t>& in_bytes) override {
    const size_t n = static_cast<size_t>(size_);
    std::vector<int> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
    std::vector<uint8_t> send_bytes;
    int total = 0;
    for (size_t r = 0; r < n; ++r) {
      send_displs[r] = static_cast<int>(send_bytes.size());
      send_counts[r] = static_cast<int>(out[r].size());
      send_bytes.insert(send_bytes.end(), out[r].begin(), out[r].end());
      recv_displs[r] = total;
      recv_counts[r] = static_cast<int>(in_bytes[r]);
      total += recv_counts[r];
    }
    std::vector<uint8_t> recv_bytes(static_cast<size_t>(total));
    MPI_Request request;
    PMPI_Ialltoallv(send_bytes.data(), send_counts.data(), send_displs.data(), MPI_BYTE, recv_bytes.data(),
                    recv_counts.data(), recv_displs.data(), MPI_BYTE, comm_, &request);
    wait(request);
    std::vector<std::vector<uint8_t>> in(n);
    for (size_t r = 0; r < n; ++r) {
      in[r].assign(recv_bytes.begin() + recv_displs[r], recv_bytes.begin() + recv_displs[r] + recv_counts[r]);
    }
    return in;
  }

  [[noreturn]] void abort() override {
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }

 private:
  // Blocking MPI waits would spin a core the other ranks' simulations need (CI has two): poll,
  // then yield, then sleep briefly between polls.
  static void wait(MPI_Request& request) {
    for (unsigned polls = 0;; ++polls) {
      int done = 0;
      PMPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (polls < 1000) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(polls < 10000 ? 20 : 200));
      }
    }
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Transport> mpi_transport() { return std::make_unique<MpiTransport>(); }

}  // namespace hpusim::distributed
