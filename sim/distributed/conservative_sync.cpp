#include "sim/distributed/conservative_sync.h"

#include <systemc>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace hpusim::distributed {
namespace {

constexpr uint64_t kNever = UINT64_MAX;

// A rank's words at a meeting: how soon its device may next send (or its host act, if it is not
// away), whether it has left, whether its host is away in a program's call (kAwayAll: until every
// participant has entered; kAwayAny: until the first may have acted) and since when, the bytes of
// messages it sends each rank, then the participants of its call, a bit each.
enum Field : size_t { kEarliest = 0, kLeft = 1, kAway = 2, kEntry = 3, kCounts = 4 };
enum Away : uint64_t { kHere = 0, kAwayAll = 1, kAwayAny = 2 };

size_t mask_words(size_t ranks) { return (ranks + 63) / 64; }
bool in_mask(const uint64_t* mask, size_t rank) { return (mask[rank / 64] >> (rank % 64)) & 1u; }

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

hw::Picoseconds ConservativeSync::action_bound(int rank) const {
  return rank >= 0 && static_cast<size_t>(rank) < action_bounds_.size() ? action_bounds_[static_cast<size_t>(rank)] : 0;
}

bool ConservativeSync::waits_on(int rank, int other) const {
  if (rank < 0 || static_cast<size_t>(rank) >= waits_for_.size()) return false;
  std::vector<bool> seen(waits_for_.size(), false);
  std::vector<int> todo{rank};
  seen[static_cast<size_t>(rank)] = true;
  while (!todo.empty()) {
    const int r = todo.back();
    todo.pop_back();
    for (int p : waits_for_[static_cast<size_t>(r)]) {
      if (p == other) return true;
      if (!seen[static_cast<size_t>(p)]) {
        seen[static_cast<size_t>(p)] = true;
        todo.push_back(p);
      }
    }
  }
  return false;
}

void ConservativeSync::away_begin(hw::Picoseconds entry_ps, const std::vector<int>& participants, bool any_participant) {
  if (away_) throw std::logic_error("conservative sync: the host is already away");
  away_mask_.assign(mask_words(static_cast<size_t>(size_)), 0);
  for (int p : participants) {
    if (p < 0 || p >= size_) throw std::invalid_argument("conservative sync: participant " + std::to_string(p) + " is no rank");
    away_mask_[static_cast<size_t>(p) / 64] |= uint64_t{1} << (p % 64);
  }
  away_mask_[static_cast<size_t>(rank_) / 64] |= uint64_t{1} << (rank_ % 64);
  away_ = true;
  away_any_ = any_participant;
  away_entry_ps_ = away_resume_ps_ = entry_ps;
}

bool ConservativeSync::away_step(hw::Picoseconds cap_ps) {
  if (!away_) throw std::logic_error("conservative sync: away_step while the host is not away");
  if (finished_ || lookahead_ == 0 || window_end_ == kNever) return false;
  const uint64_t now = hw::now_ps();
  const uint64_t stop = std::min({away_resume_ps_, cap_ps, window_end_});
  if (stop > now) sc_core::sc_start(sc_core::sc_time::from_value(stop - now));
  meet(kNever, false);
  return true;
}

void ConservativeSync::away_end() { away_ = false; }

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
  const size_t mask_at = kCounts + n;
  const size_t width = mask_at + mask_words(n);
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
  mine[kAway] = !away_ ? kHere : away_any_ ? kAwayAny : kAwayAll;
  mine[kEntry] = away_ ? away_entry_ps_ : 0;
  for (size_t r = 0; r < n; ++r) mine[kCounts + r] = out[r].size();
  if (away_) std::copy(away_mask_.begin(), away_mask_.end(), mine.begin() + static_cast<std::ptrdiff_t>(mask_at));
  const std::vector<uint64_t> all = allgather(mine);
  ++stats_.windows;

  bool any_data = false, everyone_left = true;
  uint64_t next = kNever;
  // How soon each rank's host may act: for one still running, its earliest; for one away, no
  // sooner than its entry time nor than its participants let it (below).
  std::vector<uint64_t> acts(n);
  for (size_t p = 0; p < n; ++p) acts[p] = all[p * width + kAway] != kHere ? all[p * width + kEntry] : all[p * width + kEarliest];
  // An away rank's host acts again at the latest of its participants' times (kAwayAny: the
  // earliest), and no sooner than its entry time.
  const auto resume_bound = [&](size_t r) {
    const uint64_t* word = &all[r * width];
    const bool any = word[kAway] == kAwayAny;
    uint64_t first = kNever, last = 0;
    for (size_t p = 0; p < n; ++p) {
      if (p == r || !in_mask(word + mask_at, p)) continue;
      first = std::min(first, acts[p]);
      last = std::max(last, acts[p]);
    }
    return std::max<uint64_t>(word[kEntry], any ? (first == kNever ? 0 : first) : last);
  };
  // Away ranks wait on each other (a receive from any source whose senders sit in a collective
  // that waits for it): their times rise together to the fixed point (each only rises, and takes
  // one of the words' times, so this ends).
  for (bool rose = true; rose;) {
    rose = false;
    for (size_t p = 0; p < n; ++p) {
      if (all[p * width + kAway] == kHere) continue;
      const uint64_t bound = resume_bound(p);
      if (bound > acts[p]) {
        acts[p] = bound;
        rose = true;
      }
    }
  }
  for (size_t r = 0; r < n; ++r) {
    const uint64_t* word = &all[r * width];
    const uint64_t earliest_r = word[kAway] != kHere ? std::min<uint64_t>(word[kEarliest], resume_bound(r)) : word[kEarliest];
    next = std::min<uint64_t>(next, earliest_r);
    everyone_left = everyone_left && word[kLeft] != 0;
    for (size_t d = 0; d < n; ++d) any_data = any_data || word[kCounts + d] != 0;
  }
  if (away_) away_resume_ps_ = std::max(away_resume_ps_, resume_bound(static_cast<size_t>(rank_)));
  action_bounds_ = std::move(acts);
  waits_for_.assign(n, {});
  for (size_t r = 0; r < n; ++r) {
    const uint64_t* word = &all[r * width];
    if (word[kAway] != kAwayAll) continue;
    for (size_t p = 0; p < n; ++p)
      if (p != r && in_mask(word + mask_at, p)) waits_for_[r].push_back(static_cast<int>(p));
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
  // Nothing any rank sends from `next` on arrives before next + L. A rank whose host is away may
  // have stopped its device short of the window's end: then `next` may be earlier than it, and
  // the window stays where it is until that rank's participants move on.
  const uint64_t previous_end = window_end_;
  const uint64_t end = next >= kNever - lookahead_ ? kNever : next + lookahead_ - 1;
  window_end_ = std::max(end, previous_end);
  stats_.longest_window_ps = std::max(stats_.longest_window_ps, window_end_ - previous_end);
}

}  // namespace hpusim::distributed
