#include "sim/distributed/conservative_sync.h"

#include <systemc>

#include <stdexcept>
#include <string>

namespace hpusim::distributed {

ConservativeSync::ConservativeSync(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

void ConservativeSync::add(hw::NicRemoteEnd& end, int peer_rank) {
  if (peer_rank < 0 || peer_rank >= size_ || peer_rank == rank_) {
    throw std::invalid_argument("conservative sync: link " + std::to_string(end.link()) + " names rank " +
                                std::to_string(peer_rank) + " (ranks 0 .. " + std::to_string(size_ - 1) +
                                ", this one " + std::to_string(rank_) + ")");
  }
  if (!by_link_.emplace(end.link(), &end).second) {
    throw std::invalid_argument("conservative sync: link " + std::to_string(end.link()) + " is added twice");
  }
  ends_.push_back({&end, peer_rank});
}

void ConservativeSync::start(hw::Picoseconds link_latency_ps) {
  unsigned long long mine = link_latency_ps, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm_);
  if (all < 2) throw std::invalid_argument("conservative sync: a lookahead of " + std::to_string(all) + " ps is too short");
  lookahead_ = all;
}

void ConservativeSync::window() {
  if (lookahead_ == 0) throw std::logic_error("conservative sync: start() first");
  sc_core::sc_start(hw::ps_to_time(lookahead_ - 1));
  exchange();
  ++stats_.windows;
}

void ConservativeSync::exchange() {
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(size_));
  for (const auto& [end, peer] : ends_) {
    for (const hw::NicLinkMessage& m : end->take_outbox()) {
      hw::encode(m, out[static_cast<size_t>(peer)]);
      ++stats_.messages_sent;
    }
  }
  std::vector<int> send_counts(static_cast<size_t>(size_)), recv_counts(static_cast<size_t>(size_));
  std::vector<int> send_displs(static_cast<size_t>(size_)), recv_displs(static_cast<size_t>(size_));
  std::vector<uint8_t> send_bytes;
  for (int r = 0; r < size_; ++r) {
    send_displs[r] = static_cast<int>(send_bytes.size());
    send_counts[r] = static_cast<int>(out[r].size());
    send_bytes.insert(send_bytes.end(), out[r].begin(), out[r].end());
  }
  stats_.bytes_sent += send_bytes.size();
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm_);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    recv_displs[r] = total;
    total += recv_counts[r];
  }
  std::vector<uint8_t> recv_bytes(static_cast<size_t>(total));
  MPI_Alltoallv(send_bytes.data(), send_counts.data(), send_displs.data(), MPI_BYTE, recv_bytes.data(), recv_counts.data(),
                recv_displs.data(), MPI_BYTE, comm_);
  // In rank order, each rank's messages in the order they were sent.
  for (int r = 0; r < size_; ++r) {
    for (hw::NicLinkMessage& m : hw::decode_messages(recv_bytes.data() + recv_displs[r], static_cast<size_t>(recv_counts[r]))) {
      const auto it = by_link_.find(m.link);
      if (it == by_link_.end()) {
        throw std::runtime_error("conservative sync: rank " + std::to_string(r) + " sent a message on link " +
                                 std::to_string(m.link) + ", which rank " + std::to_string(rank_) + " does not have");
      }
      it->second->inject(std::move(m));
    }
  }
}

bool ConservativeSync::run_while(const std::function<bool()>& busy, hw::Picoseconds limit_ps) {
  int quiet_windows = 0;
  while (quiet_windows < 2) {
    if (hw::now_ps() >= limit_ps) return false;
    window();
    int mine = busy() ? 1 : 0, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, comm_);
    quiet_windows = any ? 0 : quiet_windows + 1;
  }
  return true;
}

}  // namespace hpusim::distributed
