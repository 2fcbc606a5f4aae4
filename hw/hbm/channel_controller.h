// Event-driven controller of ONE HBM channel (both of its pseudo-channels): a request queue,
// FR-FCFS scheduling with an open-page policy, read/write drain modes, all-bank refresh per
// pseudo-channel or per-bank refresh (REFSB, round-robin over the banks), and the TimingEngine that
// checks every command.
//
// The controller never ticks per cycle. The owner asks next_event_cycle() and calls advance() at
// that cycle; advance() issues what can issue at exactly that cycle (at most one row command and
// one column command, the command-bus rule) and reports requests whose last burst issued.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "hw/hbm/address_mapper.h"
#include "hw/hbm/hbm_config.h"
#include "hw/hbm/timing_engine.h"

namespace hpusim::hbm {

struct Request {
  uint64_t id = 0;
  bool is_write = false;
  DramAddress addr;             // first burst; must belong to this controller's channel
  uint32_t bursts = 1;          // consecutive columns from addr.column, all in the same row
  uint64_t arrival_cycle = 0;   // invisible to scheduling before this cycle
};

struct Completion {
  uint64_t id = 0;
  uint64_t done_cycle = 0;      // last data beat: RD + nCL + nBL, or WR + nCWL + nBL
};

struct ControllerStats {
  uint64_t reads = 0, writes = 0;               // completed requests
  uint64_t read_bursts = 0, write_bursts = 0;   // RD / WR commands
  uint64_t activates = 0, precharges = 0;
  uint64_t refreshes = 0;           // refresh commands: all-bank REF + per-bank REFSB
  uint64_t per_bank_refreshes = 0;  // of which REFSB
  uint64_t refresh_pull_ins = 0;    // all-bank REFs issued ahead of schedule (see README)
  uint64_t row_hits = 0;        // request found its row already open
  uint64_t row_misses = 0;      // request needed an ACT on a closed bank
  uint64_t row_conflicts = 0;   // request needed a PRE of another row first
  uint64_t busy_data_cycles = 0;  // sum of nBL per burst, over all pseudo-channels of the channel
  uint64_t mode_switches = 0;   // read->write and write->read drain-mode changes
  uint64_t self_refresh_exits = 0;  // arrivals that ended a self-refresh (refresh schedule restarted)
};

class ChannelController {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  // Throws std::invalid_argument for an inconsistent configuration.
  ChannelController(const Organization& org, const Timing& timing, const ControllerConfig& cfg,
                    uint32_t global_channel);

  // Whether a request of `bursts` bursts fits now. Capacity counts bursts not yet issued: reads and
  // writes share queue_bursts, or with write_queue_bursts > 0 writes have their own queue.
  bool can_accept(bool is_write, uint32_t bursts) const {
    if (separate_write_queue_ && is_write) return queued_write_bursts_ + bursts <= cfg_.write_queue_bursts;
    const uint32_t held = separate_write_queue_ ? queued_read_bursts_ : queued_read_bursts_ + queued_write_bursts_;
    return held + bursts <= cfg_.queue_bursts;
  }
  bool can_accept(const Request& r) const { return can_accept(r.is_write, r.bursts); }
  uint32_t queued() const { return queued_; }   // requests
  uint32_t queued_bursts() const { return queued_read_bursts_ + queued_write_bursts_; }
  bool idle() const { return queued_ == 0; }
  // With posted writes the controller reports no completion for a write: the owner answers it
  // when enqueue() accepts it.
  bool posted_writes() const { return cfg_.posted_writes; }

  // Throws std::logic_error if the request does not fit (can_accept), std::invalid_argument if it
  // does not belong to this channel or is malformed. No state changes on a throw.
  void enqueue(const Request& r);

  // The earliest cycle at which advance() can do anything (issue a command, see an arrival, or
  // start a refresh), never earlier than the last advance() cycle, and strictly later than it if
  // that advance() issued nothing. kNever when idle with refresh disabled. O(1) when nothing
  // changed since the last call; otherwise about O(banks of the pseudo-channels touched).
  uint64_t next_event_cycle() const;

  // Issue everything that can issue at exactly `cycle` (non-decreasing across calls, else
  // std::logic_error). Completions of requests whose last burst issued now are appended to `out`.
  void advance(uint64_t cycle, std::vector<Completion>& out);

  // ---- statistics ----
  const ControllerStats& stats() const { return stats_; }
  uint64_t reads() const { return stats_.reads; }
  uint64_t writes() const { return stats_.writes; }
  uint64_t read_bursts() const { return stats_.read_bursts; }
  uint64_t write_bursts() const { return stats_.write_bursts; }
  uint64_t activates() const { return stats_.activates; }
  uint64_t precharges() const { return stats_.precharges; }
  uint64_t refreshes() const { return stats_.refreshes; }
  uint64_t per_bank_refreshes() const { return stats_.per_bank_refreshes; }
  uint64_t row_hits() const { return stats_.row_hits; }
  uint64_t row_misses() const { return stats_.row_misses; }
  uint64_t row_conflicts() const { return stats_.row_conflicts; }
  uint64_t busy_data_cycles() const { return stats_.busy_data_cycles; }
  uint64_t mode_switches() const { return stats_.mode_switches; }
  // busy_data_cycles / (elapsed_cycles * pseudo_channels): 1.0 = every data bus busy every cycle.
  double data_bus_utilisation(uint64_t elapsed_cycles) const;

  // Test aid (slow: works on a copy): next_event_cycle() recomputed with every cached summary and
  // time thrown away. It must always equal next_event_cycle(); tests use it to check the caches.
  uint64_t next_event_cycle_uncached() const;

  // ---- refresh state (for owners and tests) ----
  RefreshMode refresh_mode() const { return cfg_.refresh_mode; }
  // Cycle at which pseudo-channel p's next refresh (REF, or REFSB in per-bank mode) is due; kNever
  // with refresh disabled. A refresh stays pending from then until it issues.
  uint64_t refresh_due(uint32_t p) const { return refresh_due_.at(p); }
  // Per-bank mode: flat engine bank index of pseudo-channel p's next REFSB (round-robin).
  uint32_t next_refresh_bank(uint32_t p) const { return pb_bank_.at(p); }
  // Refreshes that covered flat bank b (each REF counts for every bank of its pseudo-channel), and
  // the cycle of the last one (0 before the first).
  uint64_t bank_refreshes(uint32_t b) const { return bank_refresh_count_.at(b); }
  uint64_t last_bank_refresh(uint32_t b) const { return bank_last_refresh_.at(b); }

  bool write_mode() const { return write_mode_; }
  uint64_t last_cycle() const { return now_; }
  uint32_t global_channel() const { return global_channel_; }
  const TimingEngine& engine() const { return engine_; }

 private:
  static constexpr int32_t kNone = -1;
  static constexpr uint32_t kNotActive = 0xFFFFFFFFu;

  struct Slot {
    uint64_t id = 0;
    uint64_t arrival = 0;
    uint64_t seq = 0;          // enqueue order, breaks arrival ties
    uint32_t bank = 0;         // flat bank index in the engine
    uint32_t row = 0;
    uint32_t next_col = 0;
    uint32_t remaining = 0;    // bursts still to issue
    uint32_t bursts = 0;
    bool is_write = false;
    bool arrived = false;
    bool admitted = false;     // two-level: moved into its bank's command queue
    bool in_use = false;
    uint8_t klass = 0;         // 0 unclassified, 1 needed ACT (miss), 2 needed PRE (conflict)
  };
  struct Bank {   // the fields the scheduler reads every command first
    int32_t col = kNone;       // oldest arrived request of the current mode hitting the open row
    int32_t row = kNone;       // request whose row command (row_cmd) this bank needs
    Command col_cmd = Command::RD;
    Command row_cmd = Command::ACT;
    bool dirty = true;         // col/row must be recomputed (queue, open row or mode changed)
    bool times_stale = true;   // col_local/row_local must be re-read (a command issued to this bank)
    uint32_t active_pos = kNotActive;
    uint32_t admitted_bursts = 0;  // two-level: bursts in this bank's command queue
    uint32_t pc = 0;           // pseudo-channel of this bank
    uint32_t bg = 0;           // flat bank-group index (engine numbering)
    // The bank-level part of TimingEngine::earliest_raw() of the col and row candidates. It only
    // changes when a command issues to this bank; the bank-group and pseudo-channel parts are
    // added when used, so a command to one bank does not make its neighbours' caches stale.
    uint64_t col_local = 0, row_local = 0;
    std::vector<uint32_t> q;   // slot indices, oldest first
  };
  uint64_t col_raw(const Bank& bank) const {
    return std::max(bank.col_local, engine_.shared_constraint(bank.col_cmd, bank.bg, bank.pc));
  }
  uint64_t row_raw(const Bank& bank) const {
    return std::max(bank.row_local, engine_.shared_constraint(bank.row_cmd, bank.bg, bank.pc));
  }

  bool older(uint32_t a, uint32_t b) const {
    const Slot& x = slots_[a];
    const Slot& y = slots_[b];
    return x.arrival < y.arrival || (x.arrival == y.arrival && x.seq < y.seq);
  }
  // Per bank-group minimum of its active banks' bank-level candidate times (row candidates split by
  // command, since only ACT has bank-group and pseudo-channel terms).
  struct BgCache {
    bool dirty = true;
    uint64_t min_rd_local = 0, min_wr_local = 0, min_act_local = 0, min_pre_local = 0;
  };
  // Per pseudo-channel aggregate of its banks' candidate times, so that the scheduler only visits
  // the banks of a pseudo-channel that has something ready.
  struct PcCache {
    bool dirty = true;                 // a bank of this pseudo-channel changed
    uint64_t epoch = ~uint64_t{0};     // pc_epoch_ the mins were computed at
    uint64_t min_col_raw = 0, min_row_raw = 0;
  };

  void summarise(uint32_t b) const;
  void mark_dirty(uint32_t b) const {
    banks_[b].dirty = true;
    mark_times_stale(b);
  }
  void mark_times_stale(uint32_t b) const {
    Bank& bank = banks_[b];
    bank.times_stale = true;
    bg_cache_[bank.bg].dirty = true;
    pc_cache_[bank.pc].dirty = true;
  }
  // Make bank b's candidates and their bank-level times current.
  void refresh_bank(uint32_t b) const {
    const Bank& bank = banks_[b];
    if (!bank.dirty && !bank.times_stale) return;
    recompute_bank(b);
  }
  void recompute_bank(uint32_t b) const;
  void recompute_bg(uint32_t g) const;
  // Make every bank of pseudo-channel p and the aggregate current.
  const PcCache& refresh_pc(uint32_t p) const {
    const PcCache& c = pc_cache_[p];
    if (!c.dirty && c.epoch == pc_epoch_[p]) return c;
    return recompute_pc(p);
  }
  const PcCache& recompute_pc(uint32_t p) const;
  // The scheduler may pick this request: arrived, and admitted (two-level) or of the current mode.
  bool schedulable(const Slot& slot) const {
    return slot.arrived && (two_level_ ? slot.admitted : slot.is_write == write_mode_);
  }
  // Two-level: the queue the next admission takes from (true: writes), after the drain rule.
  bool admission_drains(bool draining) const;
  int32_t next_admission(bool writes) const;   // the oldest arrived request that fits its bank, or kNone
  uint64_t admission_event() const;
  void admit(uint64_t cycle);
  // kBankRoundRobin: the command(s) of this cycle (see ControllerConfig::Scheduler).
  void select_round_robin(uint64_t cycle, bool col_bus_ok, bool row_bus_ok, int32_t& col_slot, int32_t& row_slot,
                          Command& row_cmd);
  void select_in_group(uint32_t g, uint64_t cycle, bool want_rd, bool want_wr, bool want_row, bool act_ready, bool pc_held,
                       uint32_t target, bool forced, int32_t& col_slot, int32_t& row_slot, Command& row_cmd) const;
  void process_arrivals(uint64_t cycle);
  void note_arrival(const Slot& slot);
  void update_mode();
  void mark_all_dirty();
  void retire(uint32_t slot, uint64_t cycle, std::vector<Completion>& out);
  void check_choice(int32_t slot, Command cmd, uint64_t cycle) const;
  uint64_t compute_next_event() const;
  uint64_t refresh_step(uint32_t p, int32_t* pre_bank) const;
  // Per-bank mode: earliest cycle of pseudo-channel p's pending refresh step, the PRE of its target
  // bank or the REFSB (*cmd tells which), as seen at `now` (the overdue threshold depends on it).
  uint64_t bank_refresh_step(uint32_t p, uint64_t now, Command* cmd) const;
  // Bank b has an arrived request of the current mode that hits its open row.
  bool bank_has_hit(uint32_t b) const {
    if (banks_[b].active_pos == kNotActive) return false;
    refresh_bank(b);
    return banks_[b].col != kNone;
  }
  uint64_t per_bank_due(uint32_t p, uint64_t k) const;
  // refresh_due_[p] as the scheduler sees it: kNever once the channel is (about to be) in
  // self-refresh, so no REF/REFSB issues and no refresh event is scheduled while it idles.
  uint64_t refresh_due_at(uint32_t p) const;
  // Ends a self-refresh at cycle `a`: the refresh schedule restarts from there (refresh_epoch_).
  void exit_self_refresh(uint64_t a);
  void note_bank_refreshed(uint32_t b, uint64_t cycle) {
    ++bank_refresh_count_[b];
    bank_last_refresh_[b] = cycle;
  }
  uint64_t pull_in_window(uint32_t p, uint64_t cycle) const;
  uint64_t column_hold(bool is_write) const { return is_write ? wr_to_pre_ : timing_.nRTP; }

  Organization org_;
  Timing timing_;
  ControllerConfig cfg_;
  uint32_t global_channel_;
  uint32_t stack_, channel_;
  TimingEngine engine_;

  bool separate_write_queue_;
  bool two_level_;
  // Two-level: requests not yet in a command queue (enqueue order), the write bursts the current
  // drain still moves (0: moving reads), when the next move may happen, and the admitted requests.
  std::vector<uint32_t> waiting_reads_, waiting_writes_;
  uint32_t arrived_waiting_reads_ = 0;
  uint32_t drain_left_ = 0;
  uint64_t next_admit_cycle_ = 0;
  uint32_t admitted_ = 0;
  uint32_t rr_bank_ = 0;        // kBankRoundRobin: the bank served last
  uint32_t queued_ = 0;                 // requests with a burst still to issue
  uint32_t queued_read_bursts_ = 0, queued_write_bursts_ = 0;  // bursts still to issue
  uint32_t arrived_write_bursts_ = 0;   // of arrived writes: what the drain watermarks compare
  uint64_t seq_ = 0;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  mutable std::vector<Bank> banks_;  // summaries are refreshed lazily, also from const next_event_cycle()
  std::vector<std::vector<uint32_t>> active_;  // per pseudo-channel: banks with a non-empty queue
  mutable std::vector<BgCache> bg_cache_;  // per flat bank group
  mutable std::vector<PcCache> pc_cache_;
  std::vector<uint32_t> unarrived_;  // slots whose arrival is still in the future
  uint64_t next_arrival_ = kNever;
  uint32_t arrived_reads_ = 0, arrived_writes_ = 0;
  bool write_mode_ = false;

  // Refresh: next due cycle per pseudo-channel.
  std::vector<uint64_t> pc_epoch_;      // per pseudo-channel: commands issued there so far
  std::vector<uint64_t> refresh_due_;   // next REF (all-bank) or REFSB (per-bank)
  std::vector<uint64_t> refresh_end_;   // last REF + nRFC, per pseudo-channel
  std::vector<uint32_t> pc_arrived_;    // arrived queued requests per pseudo-channel
  // Per-bank refresh (per_bank_): REFSBs issued so far, the bank of the next one, and the cycle from
  // which the pending one no longer waits for row hits (due + pb_interval_), per pseudo-channel.
  bool per_bank_ = false;
  uint64_t pb_interval_ = 0;            // nREFI / banks per pseudo-channel
  std::vector<uint64_t> pb_count_;
  std::vector<uint32_t> pb_bank_;
  std::vector<uint64_t> pb_force_;
  std::vector<uint64_t> bank_refresh_count_;  // per flat bank
  std::vector<uint64_t> bank_last_refresh_;   // per flat bank
  // Self-refresh (cfg_.self_refresh_after_refi): idle cycles after which the channel is in it (0:
  // never), the cycle its queue last became empty, and the cycle the refresh schedule counts from.
  uint64_t sr_idle_ = 0;
  uint64_t last_empty_ = 0;
  uint64_t refresh_epoch_ = 0;

  uint64_t now_ = 0;            // cycle of the last advance()
  bool advanced_ = false;
  bool idle_at_now_ = false;    // the last advance() at now_ issued nothing, so nothing can happen at now_
  mutable bool next_dirty_ = true;
  mutable uint64_t next_cache_ = 0;

  uint64_t wr_to_pre_;
  uint64_t rd_latency_, wr_latency_;
  ControllerStats stats_;
};

}  // namespace hpusim::hbm
