#include "hw/hbm/channel_controller.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpusim::hbm {

ChannelController::ChannelController(const Organization& org, const Timing& timing, const ControllerConfig& cfg,
                                     uint32_t global_channel)
    : org_(org),
      timing_(timing),
      cfg_(cfg),
      global_channel_(global_channel),
      stack_(0),
      channel_(0),
      engine_(org, timing),
      separate_write_queue_(cfg.write_queue_bursts > 0),
      two_level_(cfg.bank_queue_bursts > 0) {
  if (org.channels_per_stack == 0 || org.stacks == 0) {
    throw std::invalid_argument("HBM controller: stacks and channels_per_stack must be > 0");
  }
  if (global_channel >= org.stacks * org.channels_per_stack) {
    throw std::invalid_argument("HBM controller: global channel " + std::to_string(global_channel) +
                                " does not exist (" + std::to_string(org.stacks * org.channels_per_stack) +
                                " channels)");
  }
  if (timing.burst_bytes == 0 || cfg.interleave_bytes < timing.burst_bytes) {
    throw std::invalid_argument("HBM controller: interleave_bytes must be at least one burst");
  }
  // The largest channel request (one interleave chunk) must fit, or it could never be accepted.
  const uint32_t chunk_bursts = cfg.interleave_bytes / timing.burst_bytes;
  if (cfg.queue_bursts < chunk_bursts) {
    throw std::invalid_argument("HBM controller: queue_bursts (" + std::to_string(cfg.queue_bursts) +
                                ") is smaller than one interleave chunk (" + std::to_string(chunk_bursts) + " bursts)");
  }
  if (separate_write_queue_ && cfg.write_queue_bursts < chunk_bursts) {
    throw std::invalid_argument("HBM controller: write_queue_bursts (" + std::to_string(cfg.write_queue_bursts) +
                                ") is smaller than one interleave chunk (" + std::to_string(chunk_bursts) + " bursts)");
  }
  if (two_level_ && cfg.bank_queue_bursts < chunk_bursts) {
    throw std::invalid_argument("HBM controller: bank_queue_bursts (" + std::to_string(cfg.bank_queue_bursts) +
                                ") is smaller than one interleave chunk (" + std::to_string(chunk_bursts) + " bursts)");
  }
  if (cfg.write_low_watermark > cfg.write_high_watermark) {
    throw std::invalid_argument("HBM controller: write_low_watermark (" + std::to_string(cfg.write_low_watermark) +
                                ") is above write_high_watermark (" + std::to_string(cfg.write_high_watermark) + ")");
  }
  if (cfg.refresh_enabled && timing.nREFI == 0) {
    throw std::invalid_argument("HBM controller: refresh is enabled but nREFI is 0");
  }
  if (org.columns == 0) throw std::invalid_argument("HBM controller: columns must be > 0");
  if (cfg.refresh_enabled && cfg.self_refresh_after_refi == 1) {
    throw std::invalid_argument("HBM controller: self_refresh_after_refi must be 0 (off) or at least 2");
  }
  sr_idle_ = cfg.refresh_enabled ? uint64_t{cfg.self_refresh_after_refi} * timing.nREFI : 0;
  stack_ = global_channel / org.channels_per_stack;
  channel_ = global_channel % org.channels_per_stack;

  wr_to_pre_ = uint64_t{timing.nCWL} + timing.nBL + timing.nWR;
  rd_latency_ = uint64_t{timing.nCL} + timing.nBL;
  wr_latency_ = uint64_t{timing.nCWL} + timing.nBL;

  // A request holds at least one burst, so there are never more requests than burst entries (in
  // the queues, and with two levels also in the command queues).
  const uint32_t max_requests =
      cfg.queue_bursts + cfg.write_queue_bursts + (two_level_ ? engine_.num_banks() * cfg.bank_queue_bursts : 0);
  slots_.resize(max_requests);
  free_.reserve(max_requests);
  for (uint32_t i = max_requests; i > 0; --i) free_.push_back(i - 1);
  banks_.resize(engine_.num_banks());
  for (uint32_t b = 0; b < engine_.num_banks(); ++b) {
    banks_[b].q.reserve(max_requests);
    banks_[b].pc = engine_.pc_of(b);
    banks_[b].bg = engine_.bg_of(b);
  }
  bg_cache_.resize(size_t{org.pseudo_channels} * engine_.bank_groups_per_pc());
  pc_epoch_.assign(org.pseudo_channels, 0);
  active_.resize(org.pseudo_channels);
  for (auto& a : active_) a.reserve(engine_.banks_per_pc());
  pc_cache_.resize(org.pseudo_channels);
  unarrived_.reserve(max_requests);
  waiting_reads_.reserve(max_requests);
  waiting_writes_.reserve(max_requests);

  refresh_due_.resize(org.pseudo_channels);
  refresh_end_.assign(org.pseudo_channels, 0);
  pc_arrived_.assign(org.pseudo_channels, 0);
  per_bank_ = cfg.refresh_enabled && cfg.refresh_mode == RefreshMode::kPerBank;
  pb_interval_ = timing.nREFI / engine_.banks_per_pc();
  pb_count_.assign(org.pseudo_channels, 0);
  pb_bank_.resize(org.pseudo_channels);
  pb_force_.assign(org.pseudo_channels, kNever);
  bank_refresh_count_.assign(engine_.num_banks(), 0);
  bank_last_refresh_.assign(engine_.num_banks(), 0);
  for (uint32_t p = 0; p < org.pseudo_channels; ++p) {
    pb_bank_[p] = p * engine_.banks_per_pc();
    if (!cfg.refresh_enabled) {
      refresh_due_[p] = kNever;
    } else if (per_bank_) {
      refresh_due_[p] = per_bank_due(p, 0);
      pb_force_[p] = refresh_due_[p] + pb_interval_;
    } else {
      refresh_due_[p] = uint64_t{timing.nREFI} + uint64_t{p} * (timing.nREFI / org.pseudo_channels);
    }
  }
}

// Due cycle of pseudo-channel p's k-th REFSB (k from 0): (k+1) * nREFI / banks, without rounding
// drift, so bank j of the pseudo-channel (refreshes j, j + banks, ...) is due exactly every nREFI.
// The pseudo-channels are staggered by a fraction of the per-bank interval.
uint64_t ChannelController::per_bank_due(uint32_t p, uint64_t k) const {
  const uint64_t stagger = uint64_t{p} * pb_interval_ / org_.pseudo_channels;
  return refresh_epoch_ + stagger + (k + 1) * uint64_t{timing_.nREFI} / engine_.banks_per_pc();
}

// Self-refresh entry: with the queue empty since last_empty_, no refresh is started from
// last_empty_ + sr_idle_ - nRFC(SB) on, so the last one is over by last_empty_ + sr_idle_, the
// earliest cycle an arrival ends the self-refresh (enqueue). By then every bank has been refreshed
// (closed) at least once since the queue emptied (sr_idle_ >= 2 nREFI).
uint64_t ChannelController::refresh_due_at(uint32_t p) const {
  if (sr_idle_ == 0 || queued_ != 0) return refresh_due_[p];
  const uint64_t stop = last_empty_ + sr_idle_ - (per_bank_ ? timing_.nRFCSB : timing_.nRFC);
  return (refresh_due_[p] >= stop || now_ >= stop) ? kNever : refresh_due_[p];
}

// Self-refresh exit: the refresh schedule (and the per-bank round robin) starts again at `a`, as
// at cycle 0, so what follows does not depend on how long the channel idled.
void ChannelController::exit_self_refresh(uint64_t a) {
  refresh_epoch_ = a;
  ++stats_.self_refresh_exits;
  for (uint32_t p = 0; p < org_.pseudo_channels; ++p) {
    pb_count_[p] = 0;
    pb_bank_[p] = p * engine_.banks_per_pc();
    if (per_bank_) {
      refresh_due_[p] = per_bank_due(p, 0);
      pb_force_[p] = refresh_due_[p] + pb_interval_;
    } else {
      refresh_due_[p] = a + uint64_t{timing_.nREFI} + uint64_t{p} * (timing_.nREFI / org_.pseudo_channels);
      refresh_end_[p] = 0;
    }
    ++pc_epoch_[p];
  }
  next_dirty_ = true;
}

void ChannelController::enqueue(const Request& r) {
  const DramAddress& a = r.addr;
  if (a.stack != stack_ || a.channel != channel_) {
    throw std::invalid_argument("HBM controller " + std::to_string(global_channel_) + ": request " +
                                std::to_string(r.id) + " addresses stack " + std::to_string(a.stack) +
                                " channel " + std::to_string(a.channel));
  }
  if (a.pseudo_channel >= org_.pseudo_channels || a.bank_group >= org_.bank_groups ||
      a.bank >= org_.banks_per_group || a.row >= org_.rows || a.column >= org_.columns) {
    throw std::invalid_argument("HBM controller: request " + std::to_string(r.id) +
                                " has an address outside the organization: " + to_string(a));
  }
  if (r.bursts == 0 || uint64_t{a.column} + r.bursts > org_.columns) {
    throw std::invalid_argument("HBM controller: request " + std::to_string(r.id) + " has " +
                                std::to_string(r.bursts) + " bursts from column " + std::to_string(a.column) +
                                "; they must stay within the row (" + std::to_string(org_.columns) + " columns)");
  }
  if (!can_accept(r)) {
    throw std::logic_error("HBM controller " + std::to_string(global_channel_) + ": no room for request " +
                           std::to_string(r.id) + " (" + std::to_string(r.bursts) + " bursts; " +
                           std::to_string(queued_read_bursts_) + " read and " + std::to_string(queued_write_bursts_) +
                           " write bursts queued)");
  }

  if (sr_idle_ != 0 && queued_ == 0 && std::max(r.arrival_cycle, now_) >= last_empty_ + sr_idle_) {
    exit_self_refresh(std::max(r.arrival_cycle, now_));
  }
  const uint32_t s = free_.back();
  free_.pop_back();
  ++queued_;
  (r.is_write ? queued_write_bursts_ : queued_read_bursts_) += r.bursts;
  Slot& slot = slots_[s];
  slot.id = r.id;
  slot.arrival = r.arrival_cycle;
  slot.seq = seq_++;
  slot.bank = engine_.flat_bank(a.pseudo_channel, a.bank_group, a.bank);
  slot.row = a.row;
  slot.next_col = a.column;
  slot.remaining = r.bursts;
  slot.bursts = r.bursts;
  slot.is_write = r.is_write;
  slot.klass = 0;
  slot.admitted = false;
  slot.in_use = true;
  if (two_level_) (slot.is_write ? waiting_writes_ : waiting_reads_).push_back(s);

  Bank& bank = banks_[slot.bank];
  // Keep the bank queue oldest first; arrivals are almost always in order, so this is an append.
  size_t pos = bank.q.size();
  while (pos > 0 && older(s, bank.q[pos - 1])) --pos;
  bank.q.insert(bank.q.begin() + static_cast<std::ptrdiff_t>(pos), s);
  if (bank.active_pos == kNotActive) {
    auto& list = active_[bank.pc];
    bank.active_pos = static_cast<uint32_t>(list.size());
    list.push_back(slot.bank);
    // Its summary is from an earlier life (or none): the pseudo-channel's aggregate must not be
    // trusted until it is recomputed.
    mark_dirty(slot.bank);
  }

  if (r.arrival_cycle <= now_) {
    slot.arrived = true;
    note_arrival(slot);
    ++pc_arrived_[engine_.pc_of(slot.bank)];
    mark_dirty(slot.bank);
    update_mode();
  } else {
    slot.arrived = false;
    unarrived_.push_back(s);
    if (r.arrival_cycle < next_arrival_) next_arrival_ = r.arrival_cycle;
  }
  idle_at_now_ = false;
  next_dirty_ = true;
}

void ChannelController::process_arrivals(uint64_t cycle) {
  if (cycle < next_arrival_) return;
  uint64_t next = kNever;
  for (size_t i = 0; i < unarrived_.size();) {
    const uint32_t s = unarrived_[i];
    Slot& slot = slots_[s];
    if (slot.arrival <= cycle) {
      slot.arrived = true;
      note_arrival(slot);
      ++pc_arrived_[engine_.pc_of(slot.bank)];
      mark_dirty(slot.bank);
      unarrived_[i] = unarrived_.back();
      unarrived_.pop_back();
    } else {
      if (slot.arrival < next) next = slot.arrival;
      ++i;
    }
  }
  next_arrival_ = next;
}

void ChannelController::mark_all_dirty() {
  for (const auto& list : active_) {
    for (uint32_t b : list) mark_dirty(b);
  }
}

void ChannelController::update_mode() {
  if (two_level_) return;   // the drain rule decides what is admitted, not what issues
  bool to_write = write_mode_;
  if (!write_mode_) {
    if (arrived_writes_ > 0 && (arrived_write_bursts_ >= cfg_.write_high_watermark || arrived_reads_ == 0)) {
      to_write = true;
    }
  } else {
    if (arrived_writes_ == 0 || (arrived_write_bursts_ <= cfg_.write_low_watermark && arrived_reads_ > 0)) {
      to_write = false;
    }
  }
  if (to_write != write_mode_) {
    write_mode_ = to_write;
    ++stats_.mode_switches;
    mark_all_dirty();
  }
}

// Recompute which request of bank b is its column candidate and which needs a row command, for
// the current read/write mode. Only arrived requests of the current mode count: a request of the
// other mode neither issues nor keeps a row open.
void ChannelController::summarise(uint32_t b) const {
  Bank& bank = banks_[b];
  bank.dirty = false;
  bank.col = kNone;
  bank.row = kNone;
  const uint32_t open = engine_.open_row_flat(b);
  for (uint32_t s : bank.q) {
    const Slot& slot = slots_[s];
    if (!schedulable(slot)) continue;
    if (slot.row == open) {
      bank.col = static_cast<int32_t>(s);
      bank.col_cmd = slot.is_write ? Command::WR : Command::RD;
      bank.row = kNone;  // a pending hit keeps the row open (open-page FR-FCFS)
      return;
    }
    if (bank.row == kNone) bank.row = static_cast<int32_t>(s);
  }
  bank.row_cmd = (open == TimingEngine::kClosed) ? Command::ACT : Command::PRE;
}

void ChannelController::recompute_bank(uint32_t b) const {
  Bank& bank = banks_[b];
  if (bank.dirty) summarise(b);
  bank.times_stale = false;
  if (bank.col != kNone) bank.col_local = engine_.bank_constraint(bank.col_cmd, b);
  if (bank.row != kNone) bank.row_local = engine_.bank_constraint(bank.row_cmd, b);
}

void ChannelController::recompute_bg(uint32_t g) const {
  BgCache& c = bg_cache_[g];
  c.min_rd_local = kNever;
  c.min_wr_local = kNever;
  c.min_act_local = kNever;
  c.min_pre_local = kNever;
  const uint32_t first = g * engine_.banks_per_group();
  for (uint32_t b = first; b < first + engine_.banks_per_group(); ++b) {
    if (banks_[b].active_pos == kNotActive) continue;
    refresh_bank(b);
    const Bank& bank = banks_[b];
    if (bank.col != kNone) {
      uint64_t& m = bank.col_cmd == Command::RD ? c.min_rd_local : c.min_wr_local;
      m = std::min(m, bank.col_local);
    }
    if (bank.row != kNone) {
      uint64_t& m = bank.row_cmd == Command::ACT ? c.min_act_local : c.min_pre_local;
      m = std::min(m, bank.row_local);
    }
  }
  c.dirty = false;
}

// min over banks of max(bank part, shared part) == min over bank groups of max(min bank part,
// shared part), since every bank of a group shares the group's and pseudo-channel's terms.
const ChannelController::PcCache& ChannelController::recompute_pc(uint32_t p) const {
  PcCache& c = pc_cache_[p];
  c.min_col_raw = kNever;
  c.min_row_raw = kNever;
  const uint32_t groups = engine_.bank_groups_per_pc();
  for (uint32_t g = p * groups; g < (p + 1) * groups; ++g) {
    if (bg_cache_[g].dirty) recompute_bg(g);
    const BgCache& bc = bg_cache_[g];
    if (bc.min_rd_local != kNever) {
      c.min_col_raw =
          std::min(c.min_col_raw, std::max(bc.min_rd_local, engine_.shared_constraint(Command::RD, g, p)));
    }
    if (bc.min_wr_local != kNever) {
      c.min_col_raw =
          std::min(c.min_col_raw, std::max(bc.min_wr_local, engine_.shared_constraint(Command::WR, g, p)));
    }
    if (bc.min_act_local != kNever) {
      c.min_row_raw =
          std::min(c.min_row_raw, std::max(bc.min_act_local, engine_.shared_constraint(Command::ACT, g, p)));
    }
    c.min_row_raw = std::min(c.min_row_raw, bc.min_pre_local);
  }
  c.epoch = pc_epoch_[p];
  c.dirty = false;
  return c;
}

// Cheap guard on the scheduler's bookkeeping, once per issued command: the chosen request must be
// queued, arrived, of the current mode, and the command legal for the engine right now.
void ChannelController::check_choice(int32_t s, Command cmd, uint64_t cycle) const {
  const Slot& slot = slots_[s];
  const uint32_t open = engine_.open_row_flat(slot.bank);
  bool ok = slot.in_use && schedulable(slot) && slot.remaining > 0 &&
            engine_.earliest_flat(cmd, slot.bank) <= cycle;
  if (cmd == Command::ACT) ok = ok && open == TimingEngine::kClosed;
  if (cmd == Command::PRE) ok = ok && open != TimingEngine::kClosed && open != slot.row;
  if (is_column_command(cmd)) ok = ok && open == slot.row;
  if (!ok) {
    throw std::logic_error("HBM controller " + std::to_string(global_channel_) + ": internal scheduling error: " +
                           to_string(cmd) + " for request " + std::to_string(slot.id) + " at cycle " +
                           std::to_string(cycle));
  }
}

void ChannelController::retire(uint32_t s, uint64_t cycle, std::vector<Completion>& out) {
  Slot& slot = slots_[s];
  if (!(slot.is_write && cfg_.posted_writes)) {
    out.push_back(Completion{slot.id, cycle + (slot.is_write ? wr_latency_ : rd_latency_)});
  }
  if (slot.is_write) {
    ++stats_.writes;
    --arrived_writes_;
  } else {
    ++stats_.reads;
    --arrived_reads_;
  }
  --pc_arrived_[engine_.pc_of(slot.bank)];
  Bank& bank = banks_[slot.bank];
  // The retiring request is normally the oldest of its bank.
  for (size_t i = 0; i < bank.q.size(); ++i) {
    if (bank.q[i] == s) {
      bank.q.erase(bank.q.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  mark_dirty(slot.bank);
  if (bank.q.empty()) {
    auto& list = active_[bank.pc];
    const uint32_t pos = bank.active_pos;
    const uint32_t moved = list.back();
    list[pos] = moved;
    banks_[moved].active_pos = pos;
    list.pop_back();
    bank.active_pos = kNotActive;
  }
  slot.in_use = false;
  if (two_level_) --admitted_;
  free_.push_back(s);
  if (--queued_ == 0) last_empty_ = cycle;
}

// The oldest ready column candidate and the oldest ready row candidate among the active banks of
// bank group g, against the best found so far (FR-FCFS: the order of the scan does not matter).
// want_col: the group's column terms are ready (so a bank's column candidate is ready when its
// bank-level time is); act_ready: likewise for ACT (PRE has no group terms).
void ChannelController::select_in_group(uint32_t g, uint64_t cycle, bool want_rd, bool want_wr, bool want_row,
                                        bool act_ready,
                                        bool pc_held, uint32_t target, bool forced, int32_t& col_slot,
                                        int32_t& row_slot, Command& row_cmd) const {
  const uint32_t first = g * engine_.banks_per_group();
  for (uint32_t b = first; b < first + engine_.banks_per_group(); ++b) {
    const Bank& bank = banks_[b];
    if (bank.active_pos == kNotActive) continue;
    const bool want_col = bank.col_cmd == Command::RD ? want_rd : want_wr;
    if (want_col && bank.col != kNone && bank.col_local <= cycle &&
        (col_slot == kNone || older(static_cast<uint32_t>(bank.col), static_cast<uint32_t>(col_slot)))) {
      const bool restricted = pc_held || (b == target && forced);
      if (!restricted ||
          cycle + column_hold(slots_[bank.col].is_write) <= engine_.bank_constraint(Command::PRE, b)) {
        col_slot = bank.col;
      }
    }
    if (want_row && b != target && bank.row != kNone && bank.row_local <= cycle &&
        (bank.row_cmd == Command::PRE || act_ready) &&
        (row_slot == kNone || older(static_cast<uint32_t>(bank.row), static_cast<uint32_t>(row_slot)))) {
      row_slot = bank.row;
      row_cmd = bank.row_cmd;
    }
  }
}

void ChannelController::select_round_robin(uint64_t cycle, bool col_bus_ok, bool row_bus_ok, int32_t& col_slot,
                                           int32_t& row_slot, Command& row_cmd) {
  // A bank's candidate is a column command (it has a hit) or a row command, never both.
  auto ready = [&](uint32_t b, bool& col, bool& row) {
    col = row = false;
    const Bank& bank = banks_[b];
    if (bank.active_pos == kNotActive) return;
    refresh_bank(b);
    const uint32_t p = bank.pc;
    const bool refresh_pending = cycle >= refresh_due_[p];
    const bool pc_held = refresh_pending && !per_bank_;
    const uint32_t target = (refresh_pending && per_bank_) ? pb_bank_[p] : kNotActive;
    const bool forced = target != kNotActive && cycle >= pb_force_[p];
    if (col_bus_ok && bank.col != kNone && col_raw(bank) <= cycle) {
      const bool restricted = pc_held || (b == target && forced);
      col = !restricted ||
            cycle + column_hold(slots_[bank.col].is_write) <= engine_.bank_constraint(Command::PRE, b);
    }
    row = row_bus_ok && !pc_held && b != target && bank.row != kNone && row_raw(bank) <= cycle;
  };
  const uint32_t n = engine_.num_banks();
  uint32_t first = kNotActive;
  bool first_col = false;
  for (uint32_t k = 1; k <= n && first == kNotActive; ++k) {
    const uint32_t b = (rr_bank_ + k) % n;
    bool col = false, row = false;
    ready(b, col, row);
    if (col || row) {
      first = b;
      first_col = col;
    }
  }
  if (first == kNotActive) return;
  rr_bank_ = first;
  if (first_col) {
    col_slot = banks_[first].col;
  } else {
    row_slot = banks_[first].row;
    row_cmd = banks_[first].row_cmd;
  }
  // The second command: the next bank in turn that has one ready once the first has issued (the
  // column bus is then taken; an ACT holds off other ACTs for nRRD). Issued only if of the other class.
  for (uint32_t k = 1; k < n; ++k) {
    const uint32_t b = (first + k) % n;
    bool col = false, row = false;
    ready(b, col, row);
    if (first_col) col = false;
    if (!first_col && row && row_cmd == Command::ACT && banks_[b].row_cmd == Command::ACT) row = false;
    if (!col && !row) continue;
    rr_bank_ = b;
    if (first_col && row) {
      row_slot = banks_[b].row;
      row_cmd = banks_[b].row_cmd;
    } else if (!first_col && col) {
      col_slot = banks_[b].col;
    }
    break;
  }
}

void ChannelController::advance(uint64_t cycle, std::vector<Completion>& out) {
  if (advanced_ && cycle < now_) {
    throw std::logic_error("HBM controller " + std::to_string(global_channel_) + ": advance(" +
                           std::to_string(cycle) + ") after advance(" + std::to_string(now_) + ")");
  }
  advanced_ = true;
  now_ = cycle;
  next_dirty_ = true;
  process_arrivals(cycle);
  if (two_level_) admit(cycle);
  update_mode();

  // ---- choose: the oldest ready row-hit column command and the oldest ready row command ----
  int32_t col_slot = kNone;
  int32_t row_slot = kNone;
  Command row_cmd = Command::ACT;
  const bool col_bus_ok = engine_.col_bus_free() <= cycle && engine_.last_issue_cycle() <= cycle;
  const bool row_bus_ok = engine_.row_bus_free() <= cycle && engine_.last_issue_cycle() <= cycle;
  const uint32_t groups = engine_.bank_groups_per_pc();
  if (cfg_.scheduler == ControllerConfig::Scheduler::kBankRoundRobin) {
    select_round_robin(cycle, col_bus_ok, row_bus_ok, col_slot, row_slot, row_cmd);
  }
  for (uint32_t p = 0; p < org_.pseudo_channels && cfg_.scheduler == ControllerConfig::Scheduler::kFrFcfs; ++p) {
    const PcCache& pcc = refresh_pc(p);
    const bool refresh_pending = cycle >= refresh_due_[p];
    // All-bank: a pending REF stops the pseudo-channel's row commands and restricts its column
    // commands. Per-bank: only the target bank is affected (no ACT; once the refresh is overdue,
    // column commands only if they do not delay its PRE).
    const bool pc_held = refresh_pending && !per_bank_;
    const uint32_t target = (refresh_pending && per_bank_) ? pb_bank_[p] : kNotActive;
    const bool forced = target != kNotActive && cycle >= pb_force_[p];
    const bool want_col = col_bus_ok && pcc.min_col_raw <= cycle;
    const bool want_row = row_bus_ok && !pc_held && pcc.min_row_raw <= cycle;
    if (!want_col && !want_row) continue;
    // Only the bank groups with a ready candidate are scanned (their caches are current: refresh_pc).
    for (uint32_t g = p * groups; g < (p + 1) * groups; ++g) {
      const BgCache& bc = bg_cache_[g];
      const bool group_rd =
          want_col && bc.min_rd_local <= cycle && engine_.shared_constraint(Command::RD, g, p) <= cycle;
      const bool group_wr =
          want_col && bc.min_wr_local <= cycle && engine_.shared_constraint(Command::WR, g, p) <= cycle;
      const bool act_ready = want_row && bc.min_act_local <= cycle && engine_.shared_constraint(Command::ACT, g, p) <= cycle;
      const bool group_row = want_row && (bc.min_pre_local <= cycle || act_ready);
      if (group_rd || group_wr || group_row) {
        select_in_group(g, cycle, group_rd, group_wr, group_row, act_ready, pc_held, target, forced, col_slot,
                        row_slot, row_cmd);
      }
    }
  }

  // Refresh has priority on the row bus: precharge the due pseudo-channel, then REF it (all-bank),
  // or precharge the due bank, then REFSB it (per-bank).
  int32_t refresh_pc = kNone;
  int32_t refresh_pre_bank = kNone;
  Command refresh_cmd = Command::REF;
  bool pull_in = false;
  if (per_bank_) {
    for (uint32_t p = 0; p < org_.pseudo_channels && refresh_pc == kNone; ++p) {
      if (cycle < refresh_due_at(p)) continue;
      if (bank_refresh_step(p, cycle, &refresh_cmd) <= cycle) refresh_pc = static_cast<int32_t>(p);
    }
  } else if (cfg_.refresh_enabled) {
    for (uint32_t p = 0; p < org_.pseudo_channels && refresh_pc == kNone; ++p) {
      if (cycle < refresh_due_at(p)) continue;
      int32_t pre_bank = kNone;
      if (refresh_step(p, &pre_bank) <= cycle) {
        refresh_pc = static_cast<int32_t>(p);
        refresh_pre_bank = pre_bank;
      }
    }
    // Opportunistic pull-in, only when the row bus has nothing better to do.
    if (refresh_pc == kNone && row_slot == kNone) {
      for (uint32_t p = 0; p < org_.pseudo_channels && refresh_pc == kNone; ++p) {
        if (cycle >= pull_in_window(p, cycle)) continue;
        int32_t pre_bank = kNone;
        if (refresh_step(p, &pre_bank) <= cycle) {
          refresh_pc = static_cast<int32_t>(p);
          refresh_pre_bank = pre_bank;
          pull_in = true;
        }
      }
    }
  }

  bool issued = false;
  // ---- column command ----
  if (col_slot != kNone) {
    Slot& slot = slots_[col_slot];
    check_choice(col_slot, slot.is_write ? Command::WR : Command::RD, cycle);
    engine_.issue_flat(slot.is_write ? Command::WR : Command::RD, slot.bank, slot.row, cycle);
    ++pc_epoch_[banks_[slot.bank].pc];
    // The bank's own candidate times stay: RD and WR move only its PRE time, and a bank with a
    // column candidate has no row candidate. The group and pseudo-channel terms moved (epoch).
    issued = true;
    if (slot.remaining == slot.bursts) {
      if (slot.klass == 0) ++stats_.row_hits;
      else if (slot.klass == 1) ++stats_.row_misses;
      else ++stats_.row_conflicts;
    }
    if (slot.is_write) ++stats_.write_bursts; else ++stats_.read_bursts;
    if (two_level_) {
      --banks_[slot.bank].admitted_bursts;   // the queues were freed when it moved
    } else if (slot.is_write) {
      --queued_write_bursts_;
      --arrived_write_bursts_;
    } else {
      --queued_read_bursts_;
    }
    stats_.busy_data_cycles += timing_.nBL;
    ++slot.next_col;
    if (--slot.remaining == 0) retire(static_cast<uint32_t>(col_slot), cycle, out);
  }

  // ---- row command ----
  // The column command above cannot make the chosen row command illegal (a bank with a column
  // candidate has no row candidate, and a refresh-time RD/WR never delays its bank's PRE), but the
  // choice is re-checked: it is cheap and keeps the engine's unchecked issue path safe.
  if (refresh_pc != kNone && per_bank_) {
    const uint32_t p = static_cast<uint32_t>(refresh_pc);
    const uint32_t b = pb_bank_[p];
    if (refresh_cmd == Command::PRE) {
      if (engine_.open_row_flat(b) == TimingEngine::kClosed || engine_.earliest_flat(Command::PRE, b) > cycle) {
        throw std::logic_error("HBM controller " + std::to_string(global_channel_) +
                               ": internal scheduling error: refresh PRE at cycle " + std::to_string(cycle));
      }
      engine_.issue_flat(Command::PRE, b, 0, cycle);
      ++stats_.precharges;
      mark_dirty(b);
    } else {
      if (engine_.open_row_flat(b) != TimingEngine::kClosed || engine_.earliest_flat(Command::REFSB, b) > cycle) {
        throw std::logic_error("HBM controller " + std::to_string(global_channel_) +
                               ": internal scheduling error: REFSB at cycle " + std::to_string(cycle));
      }
      engine_.issue_flat(Command::REFSB, b, 0, cycle);
      mark_times_stale(b);
      ++stats_.refreshes;
      ++stats_.per_bank_refreshes;
      note_bank_refreshed(b, cycle);
      const uint64_t k = ++pb_count_[p];
      pb_bank_[p] = p * engine_.banks_per_pc() + static_cast<uint32_t>(k % engine_.banks_per_pc());
      refresh_due_[p] = per_bank_due(p, k);
      pb_force_[p] = refresh_due_[p] + pb_interval_;
    }
    ++pc_epoch_[p];
    issued = true;
  } else if (refresh_pc != kNone) {
    if (refresh_pre_bank != kNone) {
      const uint32_t b = static_cast<uint32_t>(refresh_pre_bank);
      if (engine_.earliest_flat(Command::PRE, b) <= cycle) {
        engine_.issue_flat(Command::PRE, b, 0, cycle);
        ++pc_epoch_[banks_[b].pc];
        ++stats_.precharges;
        mark_dirty(b);
        issued = true;
      }
    } else {
      const uint32_t p = static_cast<uint32_t>(refresh_pc);
      if (engine_.open_banks(p) == 0 && engine_.earliest_refresh(p) <= cycle) {
        engine_.issue_refresh(p, cycle);
        ++pc_epoch_[p];
        ++stats_.refreshes;
        const uint32_t first = p * engine_.banks_per_pc();
        for (uint32_t b = first; b < first + engine_.banks_per_pc(); ++b) note_bank_refreshed(b, cycle);
        if (pull_in) ++stats_.refresh_pull_ins;
        refresh_due_[p] += timing_.nREFI;
        refresh_end_[p] = cycle + timing_.nRFC;
        issued = true;
      }
    }
  } else if (row_slot != kNone && engine_.earliest_flat(row_cmd, slots_[row_slot].bank) <= cycle) {
    Slot& slot = slots_[row_slot];
    const uint32_t b = slot.bank;
    check_choice(row_slot, row_cmd, cycle);
    engine_.issue_flat(row_cmd, b, slot.row, cycle);
    ++pc_epoch_[banks_[b].pc];
    if (row_cmd == Command::ACT) {
      ++stats_.activates;
      if (slot.klass == 0) slot.klass = 1;
    } else {
      ++stats_.precharges;
      slot.klass = 2;
    }
    mark_dirty(b);
    issued = true;
  }

  update_mode();
  idle_at_now_ = !issued;
}

// Earliest cycle of pseudo-channel p's next refresh step: the PRE of one of its open banks, or
// the REF itself once every bank is closed. *pre_bank tells which (kNone for the REF).
uint64_t ChannelController::refresh_step(uint32_t p, int32_t* pre_bank) const {
  *pre_bank = kNone;
  if (engine_.open_banks(p) == 0) return engine_.earliest_refresh(p);
  uint64_t best = kNever;
  const uint32_t first = p * engine_.banks_per_pc();
  for (uint32_t b = first; b < first + engine_.banks_per_pc(); ++b) {
    if (engine_.open_row_flat(b) == TimingEngine::kClosed) continue;
    const uint64_t e = engine_.earliest_flat(Command::PRE, b);
    if (e < best) {
      best = e;
      *pre_bank = static_cast<int32_t>(b);
    }
  }
  return best;
}

// Per-bank mode. The target bank is precharged once no arrived request of the current mode hits
// its open row, or as soon as possible once the refresh is pb_interval_ overdue (pb_force_), so a
// stream of row hits cannot postpone it for long. Then REFSB.
uint64_t ChannelController::bank_refresh_step(uint32_t p, uint64_t now, Command* cmd) const {
  const uint32_t b = pb_bank_[p];
  if (engine_.open_row_flat(b) != TimingEngine::kClosed) {
    *cmd = Command::PRE;
    const uint64_t e = engine_.earliest_flat(Command::PRE, b);
    if (now < pb_force_[p] && bank_has_hit(b)) return std::max(e, pb_force_[p]);
    return e;
  }
  *cmd = Command::REFSB;
  return engine_.earliest_flat(Command::REFSB, b);
}

// Refresh pull-in (JEDEC lets a controller issue REFs ahead of schedule): pseudo-channel p may
// refresh early when it has no arrived request while the queue holds work for the others and
// another pseudo-channel of the channel is refreshing (due or within its nRFC). That is the
// moment a shared queue starves p anyway (the queue fills with requests for the refreshing
// pseudo-channel), so p's refresh then costs little. At most one REF ahead of schedule.
// Returns the cycle until which the pull-in stays allowed (exclusive; <= cycle means not now).
uint64_t ChannelController::pull_in_window(uint32_t p, uint64_t cycle) const {
  if (!cfg_.refresh_enabled || per_bank_ || cycle >= refresh_due_[p] || refresh_due_[p] - cycle > timing_.nREFI ||
      pc_arrived_[p] != 0 || queued_ == 0) {
    return 0;
  }
  uint64_t until = 0;
  for (uint32_t q = 0; q < org_.pseudo_channels; ++q) {
    if (q == p) continue;
    if (cycle >= refresh_due_[q]) return kNever;  // stays refreshing at least until its REF, an event
    if (cycle < refresh_end_[q] && refresh_end_[q] > until) until = refresh_end_[q];
  }
  return until;
}

void ChannelController::note_arrival(const Slot& slot) {
  if (slot.is_write) {
    ++arrived_writes_;
    arrived_write_bursts_ += slot.remaining;
  } else {
    ++arrived_reads_;
    ++arrived_waiting_reads_;
  }
}

// Two-level queues, DRAMsim3's rule: a drain starts when the waiting write bursts reach the high
// watermark, or when the command queues are empty and more than the low watermark wait (or any,
// with no read waiting, so that no write is left behind at the end of a stream).
bool ChannelController::admission_drains(bool draining) const {
  if (draining) return true;
  const uint32_t writes = arrived_write_bursts_;
  if (writes == 0) return false;
  if (writes >= cfg_.write_high_watermark) return true;
  return admitted_ == 0 && (writes > cfg_.write_low_watermark || arrived_waiting_reads_ == 0);
}

int32_t ChannelController::next_admission(bool writes) const {
  for (uint32_t s : writes ? waiting_writes_ : waiting_reads_) {
    const Slot& slot = slots_[s];
    if (slot.arrived && banks_[slot.bank].admitted_bursts + slot.bursts <= cfg_.bank_queue_bursts) {
      return static_cast<int32_t>(s);
    }
  }
  return kNone;
}

uint64_t ChannelController::admission_event() const {
  if (!two_level_ || next_admission(admission_drains(drain_left_ > 0)) == kNone) return kNever;
  return std::max(next_admit_cycle_, now_);
}

// Moves the oldest waiting request that fits its bank's command queue, one burst per cycle: from
// the write queue while draining, else from the read queue.
void ChannelController::admit(uint64_t cycle) {
  if (cycle < next_admit_cycle_) return;
  if (drain_left_ == 0 && admission_drains(false)) {
    drain_left_ = arrived_write_bursts_;
    ++stats_.mode_switches;
  }
  const bool writes = drain_left_ > 0;
  const int32_t chosen = next_admission(writes);
  if (chosen == kNone) return;
  const uint32_t s = static_cast<uint32_t>(chosen);
  Slot& slot = slots_[s];
  std::vector<uint32_t>& list = writes ? waiting_writes_ : waiting_reads_;
  list.erase(std::find(list.begin(), list.end(), s));
  slot.admitted = true;
  // Its age in the command queue counts from now, as in a FIFO command queue: it goes behind the
  // requests admitted before it (the waiting ones it passes are not schedulable yet).
  slot.arrival = cycle;
  slot.seq = seq_++;
  std::vector<uint32_t>& q = banks_[slot.bank].q;
  q.erase(std::find(q.begin(), q.end(), s));
  size_t pos = q.size();
  while (pos > 0 && older(s, q[pos - 1])) --pos;
  q.insert(q.begin() + static_cast<std::ptrdiff_t>(pos), s);
  banks_[slot.bank].admitted_bursts += slot.bursts;
  ++admitted_;
  if (writes) {
    queued_write_bursts_ -= slot.bursts;
    arrived_write_bursts_ -= slot.bursts;
    drain_left_ -= std::min(drain_left_, slot.bursts);
    if (drain_left_ == 0) ++stats_.mode_switches;
  } else {
    queued_read_bursts_ -= slot.bursts;
    --arrived_waiting_reads_;
  }
  next_admit_cycle_ = cycle + slot.bursts;
  mark_dirty(slot.bank);
  next_dirty_ = true;
}

uint64_t ChannelController::compute_next_event() const {
  uint64_t t = std::min(next_arrival_, admission_event());
  const uint64_t now = now_;
  if (per_bank_) {
    for (uint32_t p = 0; p < org_.pseudo_channels; ++p) {
      if (refresh_due_at(p) == kNever) continue;   // self-refresh
      if (now < refresh_due_[p]) {
        t = std::min(t, refresh_due_[p]);
      } else {
        Command cmd = Command::REFSB;
        t = std::min(t, bank_refresh_step(p, now, &cmd));
      }
    }
  } else if (cfg_.refresh_enabled) {
    for (uint32_t p = 0; p < org_.pseudo_channels; ++p) {
      int32_t pre_bank = kNone;
      if (refresh_due_at(p) == kNever) continue;   // self-refresh
      if (now < refresh_due_[p]) {
        if (refresh_due_[p] < t) t = refresh_due_[p];
        // A pull-in step counts only while its window lasts.
        const uint64_t window = pull_in_window(p, now);
        if (window > now) {
          const uint64_t e = refresh_step(p, &pre_bank);
          if (e < t && e < window) t = e;
        }
      } else {
        const uint64_t e = refresh_step(p, &pre_bank);
        if (e < t) t = e;
      }
    }
  }
  const uint64_t col_floor = std::max(std::max(engine_.col_bus_free(), engine_.last_issue_cycle()), now);
  const uint64_t row_floor = std::max(std::max(engine_.row_bus_free(), engine_.last_issue_cycle()), now);
  for (uint32_t p = 0; p < org_.pseudo_channels; ++p) {
    const PcCache& pcc = refresh_pc(p);
    // A refresh that becomes due later is itself an event no later than anything it would block.
    if (now < refresh_due_[p] || (per_bank_ && banks_[pb_bank_[p]].active_pos == kNotActive)) {
      if (pcc.min_col_raw != kNever) t = std::min(t, std::max(pcc.min_col_raw, col_floor));
      if (pcc.min_row_raw != kNever) t = std::min(t, std::max(pcc.min_row_raw, row_floor));
      continue;
    }
    if (per_bank_) {
      // Per-bank refresh pending on a bank with queued requests: its ACT waits for the REFSB (the
      // refresh step above covers its PRE); its column commands are restricted from pb_force_ on.
      const uint32_t target = pb_bank_[p];
      const Bank& tb = banks_[target];  // current: refresh_pc() refreshed every active bank
      bool target_col_ok = true;
      if (tb.col != kNone) {
        const uint64_t e = std::max(col_raw(tb), col_floor);
        target_col_ok = e < pb_force_[p] ||
                        e + column_hold(slots_[tb.col].is_write) <= engine_.bank_constraint(Command::PRE, target);
      }
      // Fast path: the aggregate is exact when the target's excluded candidates are not its minima.
      if ((target_col_ok || col_raw(tb) > pcc.min_col_raw) && (tb.row == kNone || row_raw(tb) > pcc.min_row_raw)) {
        if (pcc.min_col_raw != kNever) t = std::min(t, std::max(pcc.min_col_raw, col_floor));
        if (pcc.min_row_raw != kNever) t = std::min(t, std::max(pcc.min_row_raw, row_floor));
        continue;
      }
      for (uint32_t b : active_[p]) {
        const Bank& bank = banks_[b];
        if (bank.col != kNone) {
          const uint64_t e = std::max(col_raw(bank), col_floor);
          if (e < t && (b != target || e < pb_force_[p] ||
                        e + column_hold(slots_[bank.col].is_write) <= engine_.bank_constraint(Command::PRE, b))) {
            t = e;
          }
        }
        if (bank.row != kNone && b != target) t = std::min(t, std::max(row_raw(bank), row_floor));
      }
      continue;
    }
    // Refresh pending: no row commands for requests, and column commands only while they do not
    // delay their bank's precharge.
    for (uint32_t b : active_[p]) {
      const Bank& bank = banks_[b];
      if (bank.col == kNone) continue;
      const uint64_t e = std::max(col_raw(bank), col_floor);
      if (e < t && e + column_hold(slots_[bank.col].is_write) <= engine_.bank_constraint(Command::PRE, b)) t = e;
    }
  }
  if (t == kNever) return t;
  if (t < now) t = now;
  if (idle_at_now_ && t <= now) t = now + 1;
  return t;
}

uint64_t ChannelController::next_event_cycle() const {
  if (next_dirty_) {
    next_cache_ = compute_next_event();
    next_dirty_ = false;
  }
  return next_cache_;
}

uint64_t ChannelController::next_event_cycle_uncached() const {
  // On a copy, so the check cannot repair (and hide) stale state of this controller.
  const ChannelController copy(*this);
  for (uint32_t b = 0; b < copy.banks_.size(); ++b) copy.mark_dirty(b);
  return copy.compute_next_event();
}

double ChannelController::data_bus_utilisation(uint64_t elapsed_cycles) const {
  if (elapsed_cycles == 0) return 0.0;
  return static_cast<double>(stats_.busy_data_cycles) /
         (static_cast<double>(elapsed_cycles) * static_cast<double>(org_.pseudo_channels));
}

}  // namespace hpusim::hbm
