// Register writes that take effect at a time: a block accepts a CFG write carrying an effective
// time `at_ps`, queues it, and applies it when simulated time reaches `at_ps` (through an SC_METHOD
// of the block made sensitive to event()), or earlier-in-real-order when a read or a query at a
// later time needs the register state of that time (apply_due()).
//
// Writes apply in (time, arrival) order. The block owns the SC_METHOD (so its process is created
// where it always was) and calls on_event() from it:
//
//   SC_METHOD(apply_due); sensitive << writes_.event(); dont_initialize();
//   void Block::apply_due() { writes_.on_event(); }
//
// The options keep each block's exact timing: whether a due write arriving with nothing queued is
// applied at once, which time the event is (re)notified for on submit, and whether an apply_due()
// re-entered from inside an apply (a write the block makes to itself) only queues.
#pragma once

#include <systemc>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "hw/common/mem_protocol.h"

namespace hpusim::hw {

// The usual payload: a register offset and the value written there.
struct RegisterWrite {
  uint64_t offset;
  uint32_t value;
};

template <typename Write = RegisterWrite>
class TimedWrites {
 public:
  // Applies one write; `at_ps` is its effective time.
  using Apply = std::function<void(const Write& write, Picoseconds at_ps)>;

  struct Options {
    // submit(): a write already due (at_ps <= now) with nothing queued is applied at once instead
    // of queued.
    bool apply_if_due_and_idle = false;
    // submit(): notify the event for the earliest queued write (true) or for the submitted one
    // (false; an earlier pending notification still wins).
    bool notify_earliest = true;
    // apply_due() called while a write is being applied returns at once: the re-entering write
    // only queues.
    bool queue_while_applying = false;
  };

  TimedWrites(Apply apply, Options options) : apply_(std::move(apply)), options_(options) {}

  void submit(Picoseconds at_ps, const Write& write) {
    if (options_.apply_if_due_and_idle && at_ps <= now_ps() && pending_.empty()) {
      apply_(write, at_ps);
      return;
    }
    pending_.push_back(Pending{at_ps, next_seq_++, write});
    std::push_heap(pending_.begin(), pending_.end(), Later{});
    event_.notify(delay_until(options_.notify_earliest ? pending_.front().at : at_ps));
  }
  void submit(uint64_t offset, uint32_t value, Picoseconds at_ps) { submit(at_ps, Write{offset, value}); }

  // Applies, in (time, arrival) order, every queued write due by `until_ps`.
  void apply_due(Picoseconds until_ps) {
    if (options_.queue_while_applying) {
      if (applying_) return;
      applying_ = true;
    }
    while (!pending_.empty() && pending_.front().at <= until_ps) {
      std::pop_heap(pending_.begin(), pending_.end(), Later{});
      const Pending p = pending_.back();
      pending_.pop_back();
      apply_(p.write, p.at);
    }
    if (options_.queue_while_applying) applying_ = false;
  }

  // The body of the block's SC_METHOD: applies what is due now, then waits for the next write.
  void on_event() {
    apply_due(now_ps());
    if (!pending_.empty()) event_.notify(delay_until(pending_.front().at));
  }

  // Drops every queued write and the pending notification.
  void clear() {
    pending_.clear();
    event_.cancel();
  }

  void reserve(size_t writes) { pending_.reserve(writes); }
  bool empty() const { return pending_.empty(); }
  const sc_core::sc_event& event() const { return event_; }

 private:
  struct Pending {
    Picoseconds at;
    uint64_t seq;
    Write write;
  };
  // Heap order: the earliest (at, seq) on top.
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const { return a.at != b.at ? a.at > b.at : a.seq > b.seq; }
  };

  Apply apply_;
  Options options_;
  std::vector<Pending> pending_;   // min-heap on (at, seq)
  uint64_t next_seq_ = 0;
  bool applying_ = false;
  sc_core::sc_event event_;
};

}  // namespace hpusim::hw
