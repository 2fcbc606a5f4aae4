#include "sim/bench/controller_traffic.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>

#include "hw/hbm/address_mapper.h"

namespace hpusim::bench {
namespace {

constexpr uint64_t kNever = hbm::ChannelController::kNever;

void add_stats(hbm::ControllerStats& sum, const hbm::ControllerStats& s) {
  sum.reads += s.reads;
  sum.writes += s.writes;
  sum.read_bursts += s.read_bursts;
  sum.write_bursts += s.write_bursts;
  sum.activates += s.activates;
  sum.precharges += s.precharges;
  sum.refreshes += s.refreshes;
  sum.per_bank_refreshes += s.per_bank_refreshes;
  sum.refresh_pull_ins += s.refresh_pull_ins;
  sum.row_hits += s.row_hits;
  sum.row_misses += s.row_misses;
  sum.row_conflicts += s.row_conflicts;
  sum.busy_data_cycles += s.busy_data_cycles;
  sum.mode_switches += s.mode_switches;
  sum.self_refresh_exits += s.self_refresh_exits;
}

struct Outstanding {
  uint64_t generated = 0;
  uint64_t done = 0;
  uint32_t remaining = 0;   // channel requests not yet complete
  bool write = false;
};

}  // namespace

ControllerTrafficResult run_controller_traffic(const hbm::Organization& org, const hbm::Timing& timing,
                                               const hbm::ControllerConfig& config,
                                               const ControllerTrafficSpec& spec) {
  const hbm::AddressMapper mapper(org, timing, config);
  const uint64_t capacity = mapper.capacity_bytes();
  if (spec.request_bytes == 0 || spec.request_bytes % timing.burst_bytes != 0 || capacity % spec.request_bytes != 0) {
    throw std::invalid_argument("request size " + std::to_string(spec.request_bytes) +
                                " B must be a multiple of the " + std::to_string(timing.burst_bytes) +
                                "-byte burst that divides the HBM capacity");
  }
  if (spec.write_permille > 1000) throw std::invalid_argument("the write share must be between 0 and 1000 per mille");
  if (spec.count == 0) throw std::invalid_argument("the request count must be at least 1");
  if (spec.window == 0) throw std::invalid_argument("the window must be at least 1");

  const uint32_t channels = mapper.total_channels();
  std::vector<std::unique_ptr<hbm::ChannelController>> controllers;
  for (uint32_t c = 0; c < channels; ++c) {
    controllers.push_back(std::make_unique<hbm::ChannelController>(org, timing, config, c));
  }
  std::vector<std::deque<hbm::Request>> fifo(channels);
  std::vector<uint64_t> next_event(channels, kNever);

  // Outstanding requests live in `window` slots; a channel request's id is its slot.
  std::vector<Outstanding> slots(spec.window);
  std::vector<uint32_t> free_slots;
  for (uint32_t s = spec.window; s > 0; --s) free_slots.push_back(s - 1);
  using Done = std::pair<uint64_t, uint32_t>;   // (completion cycle, slot)
  std::priority_queue<Done, std::vector<Done>, std::greater<Done>> done;

  ControllerTrafficResult result;
  SplitMix64 rng(spec.seed);
  const uint64_t interleave = mapper.interleave_bytes();
  const uint64_t burst = mapper.burst_bytes();
  uint64_t generated = 0, completed = 0, last_done = 0;
  std::vector<hbm::Completion> out;

  auto finish_chunk = [&](uint32_t slot, uint64_t cycle) {
    Outstanding& o = slots[slot];
    o.done = std::max(o.done, cycle);
    if (--o.remaining == 0) done.push({o.done, slot});
  };

  // Runs on after the last completion until every controller is idle, so that posted writes still
  // queued reach the DRAM too (counted in the statistics, not in `cycles`).
  auto busy = [&] {
    for (const auto& controller : controllers) {
      if (!controller->idle()) return true;
    }
    return false;
  };
  uint64_t now = 0;
  while (completed < spec.count || busy()) {
    // A request completing at cycle d frees its slot for a request generated at d + 1.
    while (!done.empty() && done.top().first < now) {
      const auto [cycle, slot] = done.top();
      done.pop();
      const Outstanding& o = slots[slot];
      (o.write ? result.write_latency_cycles : result.read_latency_cycles).push_back(cycle - o.generated);
      last_done = std::max(last_done, cycle);
      ++completed;
      free_slots.push_back(slot);
    }
    while (!free_slots.empty() && generated < spec.count) {
      const bool write = rng.next() % 1000 < spec.write_permille;
      const uint64_t address = spec.random ? (rng.next() % (capacity / spec.request_bytes)) * spec.request_bytes
                                           : (generated * spec.request_bytes) % capacity;
      const uint32_t slot = free_slots.back();
      free_slots.pop_back();
      slots[slot] = Outstanding{now, 0, 0, write};
      for (uint64_t offset = address, end = address + spec.request_bytes; offset < end;) {
        const uint64_t chunk_end = std::min(end, (offset / interleave + 1) * interleave);
        hbm::Request r;
        r.id = slot;
        r.is_write = write;
        r.addr = mapper.map(offset);
        r.bursts = static_cast<uint32_t>((chunk_end - offset + burst - 1) / burst);
        ++slots[slot].remaining;
        fifo[r.addr.global_channel()].push_back(r);
        offset = chunk_end;
      }
      (write ? result.writes : result.reads) += 1;
      result.bytes += spec.request_bytes;
      ++generated;
    }

    uint64_t next = kNever;
    for (uint32_t c = 0; c < channels; ++c) {
      hbm::ChannelController& controller = *controllers[c];
      bool changed = false;
      while (!fifo[c].empty() && controller.can_accept(fifo[c].front())) {
        hbm::Request r = fifo[c].front();
        fifo[c].pop_front();
        r.arrival_cycle = now + 1;
        controller.enqueue(r);
        if (r.is_write && controller.posted_writes()) finish_chunk(static_cast<uint32_t>(r.id), now + 1);
        changed = true;
      }
      if (changed || next_event[c] == kNever) next_event[c] = controller.next_event_cycle();
      if (next_event[c] <= now) {
        out.clear();
        controller.advance(now, out);
        ++result.controller_calls;
        for (const hbm::Completion& completion : out) finish_chunk(static_cast<uint32_t>(completion.id), completion.done_cycle);
        next_event[c] = controller.next_event_cycle();
      }
      next = std::min(next, next_event[c]);
      // Room may have opened for the FIFO: try again next cycle.
      if (!fifo[c].empty() && controller.can_accept(fifo[c].front())) next = std::min(next, now + 1);
    }
    if (!done.empty()) next = std::min(next, done.top().first + 1);
    if (next == kNever) {
      if (completed == spec.count && !busy()) break;
      throw std::logic_error("controller traffic stalled at cycle " + std::to_string(now));
    }
    now = std::max(next, now);   // equal to now: a controller can still act in this cycle
  }
  result.cycles = last_done + 1;
  for (const auto& controller : controllers) add_stats(result.totals, controller->stats());
  return result;
}

}  // namespace hpusim::bench
