#include "sim/distributed/conservative_sync.h"

#include <sched.h>

#include <systemc>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace hpusim::distributed {
namespace {

constexpr uint64_t kNever = UINT64_MAX;

// A rank's word at a meeting: how soon it may next send, whether it has left, and the bytes of
// messages it sends each rank.
enum Field : size_t { kEarliest = 0, kLeft = 1, kCounts = 2 };

}  // namespace

ConservativeSync::ConservativeSync(MPI_Comm comm) {
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

ConservativeSync::~ConservativeSync() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Comm_free(&comm_);
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

hw::Picoseconds ConservativeSync::start(hw::Picoseconds link_latency_ps, hw::Picoseconds start_ps) {
  unsigned long long mine = link_latency_ps, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm_);
  if (all < 2) throw std::invalid_argument("conservative sync: a lookahead of " + std::to_string(all) + " ps is too short");
  for (const auto& [end, peer] : ends_) {
    if (!end->take_outbox().empty()) {
      throw std::logic_error("conservative sync: link " + std::to_string(end->link()) + " carried data before the start");
    }
  }
  lookahead_ = all;
  const uint64_t base = agree_max(start_ps);
  // Nothing is on a link before `base`, so nothing sent from then on arrives before base + L.
  window_end_ = lookahead_ == kNever ? kNever : base + lookahead_ - 1;
  return base;
}

uint64_t ConservativeSync::agree_max(uint64_t value) {
  unsigned long long mine = value, all = 0;
  MPI_Request request;
  MPI_Iallreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm_, &request);
  wait(request);
  return all;
}

// Blocking MPI waits would spin a core the other ranks' simulations need (CI has two): poll, then
// yield, then sleep briefly between polls.
void ConservativeSync::wait(MPI_Request& request) {
  const auto began = std::chrono::steady_clock::now();
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (polls < 1000) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 10000 ? 20 : 200));
    }
  }
  stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

void ConservativeSync::run_towards(uint64_t target_ps) {
  if (finished_) throw std::logic_error("conservative sync: the device runs after every rank left");
  if (lookahead_ == 0) throw std::logic_error("conservative sync: start() first");
  const uint64_t now = hw::now_ps();
  if (target_ps <= now) return;
  if (window_end_ == kNever) {   // no links between the ranks: nothing to keep in step
    sc_core::sc_start(sc_core::sc_time::from_value(target_ps - now));
    return;
  }
  const uint64_t stop = std::min(target_ps, window_end_);
  if (stop > now) sc_core::sc_start(sc_core::sc_time::from_value(stop - now));
  if (hw::now_ps() == window_end_) meet(target_ps, false);
}

void ConservativeSync::run_to(uint64_t target_ps) {
  while (hw::now_ps() < target_ps) run_towards(target_ps);
}

void ConservativeSync::leave() {
  if (lookahead_ == 0) throw std::logic_error("conservative sync: start() first");
  if (window_end_ == kNever) {
    finished_ = true;
    return;
  }
  while (!finished_) {
    const uint64_t now = hw::now_ps();
    if (now < window_end_) sc_core::sc_start(sc_core::sc_time::from_value(window_end_ - now));
    if (hw::now_ps() == window_end_) meet(kNever, true);
  }
}

void ConservativeSync::meet(uint64_t target_ps, bool leaving) {
  const size_t n = static_cast<size_t>(size_);
  const size_t width = kCounts + n;
  std::vector<std::vector<uint8_t>> out(n);
  uint64_t earliest = target_ps;
  if (sc_core::sc_pending_activity()) earliest = std::min<uint64_t>(earliest, hw::now_ps() + sc_core::sc_time_to_pending_activity().value());
  for (const auto& [end, peer] : ends_) {
    for (const hw::NicLinkMessage& m : end->take_outbox()) {
      earliest = std::min(earliest, m.arrival_ps);
      hw::encode(m, out[static_cast<size_t>(peer)]);
      ++stats_.messages_sent;
    }
  }
  std::vector<unsigned long long> mine(width), all(width * n);
  mine[kEarliest] = earliest;
  mine[kLeft] = leaving ? 1 : 0;
  for (size_t r = 0; r < n; ++r) mine[kCounts + r] = out[r].size();
  MPI_Request request;
  MPI_Iallgather(mine.data(), static_cast<int>(width), MPI_UNSIGNED_LONG_LONG, all.data(), static_cast<int>(width),
                 MPI_UNSIGNED_LONG_LONG, comm_, &request);
  wait(request);
  ++stats_.windows;

  bool any_data = false, everyone_left = true;
  uint64_t next = kNever;
  for (size_t r = 0; r < n; ++r) {
    const unsigned long long* word = &all[r * width];
    next = std::min<uint64_t>(next, word[kEarliest]);
    everyone_left = everyone_left && word[kLeft] != 0;
    for (size_t d = 0; d < n; ++d) any_data = any_data || word[kCounts + d] != 0;
  }
  if (any_data) {
    ++stats_.windows_with_data;
    std::vector<int> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
    std::vector<uint8_t> send_bytes;
    int total = 0;
    for (size_t r = 0; r < n; ++r) {
      send_displs[r] = static_cast<int>(send_bytes.size());
      send_counts[r] = static_cast<int>(out[r].size());
      send_bytes.insert(send_bytes.end(), out[r].begin(), out[r].end());
      recv_displs[r] = total;
      recv_counts[r] = static_cast<int>(all[r * width + kCounts + static_cast<size_t>(rank_)]);
      total += recv_counts[r];
    }
    stats_.bytes_sent += send_bytes.size();
    std::vector<uint8_t> recv_bytes(static_cast<size_t>(total));
    MPI_Ialltoallv(send_bytes.data(), send_counts.data(), send_displs.data(), MPI_BYTE, recv_bytes.data(),
                   recv_counts.data(), recv_displs.data(), MPI_BYTE, comm_, &request);
    wait(request);
    // In rank order, each rank's messages in the order they were sent.
    for (size_t r = 0; r < n; ++r) {
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
  if (everyone_left) {
    finished_ = true;
    return;
  }
  // Nothing any rank sends from `next` on arrives before next + L.
  const uint64_t now = hw::now_ps();
  const uint64_t end = next >= kNever - lookahead_ ? kNever : next + lookahead_ - 1;
  window_end_ = std::max(end, now + lookahead_ - 1);
  stats_.longest_window_ps = std::max(stats_.longest_window_ps, window_end_ - now);
}

}  // namespace hpusim::distributed
