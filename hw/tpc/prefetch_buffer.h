#pragma once
// The TPC core's prefetch buffer: the bookkeeping of `prefetch` reads (ISA.md, "Prefetch").
// Timing only: entries hold address ranges and arrival cycles, never data (the functional value
// of a load is always read when the load executes).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace hpusim::hw {

class TpcPrefetchBuffer {
 public:
  static constexpr uint64_t kPending = ~uint64_t{0};
  static constexpr int kNoWaiter = -1;

  TpcPrefetchBuffer(uint32_t entries, uint64_t stale_cycles) : entries_(entries), stale_cycles_(stale_cycles) {}

  uint32_t capacity() const { return static_cast<uint32_t>(entries_.size()); }
  void clear();

  // An untaken entry (arrived or not) already covers [address, address + bytes).
  bool covers(uint64_t address, uint32_t bytes) const;
  // Records a prefetch of [address, address + bytes) at cycle `now` in a free entry and returns
  // the entry's id (the tag its read carries). With every entry in use, the oldest entry whose
  // data arrived at least `stale_cycles` (tpc.prefetch_stale_cycles) ago unused is evicted for it;
  // otherwise nullopt: the prefetch is dropped (a hint; those reads were asked for earlier, and
  // the kernel needs them sooner).
  std::optional<uint32_t> allocate(uint64_t address, uint32_t bytes, uint64_t now);

  enum class Take { Miss, Arrived, Pending };
  // A load of [address, address + bytes) takes the entry covering it. Arrived: `arrival` is the
  // cycle its data came; the entry is freed. Pending: the entry remembers `waiter` (a scoreboard
  // slot) for arrived().
  Take take(uint64_t address, uint32_t bytes, int waiter, uint64_t& arrival);
  // The answer of entry `id` came at `cycle`. Returns the waiting scoreboard slot or kNoWaiter;
  // an entry a load took or a store made stale is freed.
  int arrived(uint32_t id, uint64_t cycle);
  // A store to [address, address + bytes): entries overlapping it are no longer used.
  void invalidate(uint64_t address, uint32_t bytes);

  uint64_t dropped() const { return dropped_; }   // since clear()
  uint64_t evicted() const { return evicted_; }   // since clear()

 private:
  struct Entry {
    bool in_use = false;
    bool taken = false;   // a load took it before it arrived
    bool stale = false;   // a store overlapped it before it arrived
    int waiter = kNoWaiter;
    uint64_t address = 0;
    uint32_t bytes = 0;
    uint64_t arrival = kPending;
  };
  bool usable(const Entry& e) const { return e.in_use && !e.taken && !e.stale; }

  std::vector<Entry> entries_;
  uint64_t stale_cycles_;
  uint64_t dropped_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace hpusim::hw
