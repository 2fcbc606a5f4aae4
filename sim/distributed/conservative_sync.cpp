#include "sim/distributed/conservative_sync.h"

#include <systemc>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace hpusim::distributed {
namespace {

constexpr uint64_t kNever = UINT64_MAX;

// A rank's word at a meeting: how soon it may next send, whether it has left, and the bytes of
// messages it sends each rank.
enum Field : size_t { kEarliest = 0, kLeft = 1, kCounts = 2 };

}  // namespace

ConservativeSync::ConservativeSync(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {
  rank_ = transport_->rank();
  size_ = transport_->ranks();
}

ConservativeSync::~ConservativeSync() = default;

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
  const std::vector<uint64_t> latencies = allgather({link_latency_ps});
  const uint64_t all = *std::min_element(latencies.begin(), latencies.end());
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
  const std::vector<uint64_t> all = allgather({value});
  return *std::max_element(all.begin(), all.end());
}

std::vector<uint64_t> ConservativeSync::allgather(const std::vector<uint64_t>& mine) {
  const auto began = std::chrono::steady_clock::now();
  std::vector<uint64_t> all = transport_->allgather(mine);
  stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return all;
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
  std::vector<uint64_t> mine(width);
  mine[kEarliest] = earliest;
  mine[kLeft] = leaving ? 1 : 0;
  for (size_t r = 0; r < n; ++r) mine[kCounts + r] = out[r].size();
  const std::vector<uint64_t> all = allgather(mine);
  ++stats_.windows;

  bool any_data = false, everyone_left = true;
  uint64_t next = kNever;
  for (size_t r = 0; r < n; ++r) {
    const uint64_t* word = &all[r * width];
    next = std::min<uint64_t>(next, word[kEarliest]);
    everyone_left = everyone_left && word[kLeft] != 0;
    for (size_t d = 0; d < n; ++d) any_data = any_data || word[kCounts + d] != 0;
  }
  if (any_data) {
    ++stats_.windows_with_data;
    std::vector<uint64_t> in_bytes(n);
    for (size_t r = 0; r < n; ++r) {
      in_bytes[r] = all[r * width + kCounts + static_cast<size_t>(rank_)];
      stats_.bytes_sent += out[r].size();
    }
    const auto began = std::chrono::steady_clock::now();
    const std::vector<std::vector<uint8_t>> in = transport_->exchange(out, in_bytes);
    stats_.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    // In rank order, each rank's messages in the order they were sent.
    for (size_t r = 0; r < n; ++r) {
      for (hw::NicLinkMessage& m : hw::decode_messages(in[r].data(), in[r].size())) {
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
