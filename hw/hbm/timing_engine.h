// Timing and bank-state engine for ONE HBM channel: its pseudo-channels, bank groups and banks.
//
// Ramulator-style: every node of the hierarchy (pseudo-channel, bank group, bank) keeps, per
// command, the first cycle at which that command may next issue under the constraints recorded
// there. issue() pushes those cycles forward; earliest() is the maximum over the path's nodes plus
// the command-bus and time-order terms. No command history is scanned.
//
// Commands must be issued in non-decreasing cycle order (a model never goes back in time); a
// command earlier than the last issued one is illegal.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/hbm/hbm_config.h"

namespace hpusim::hbm {

// REF refreshes every bank of one pseudo-channel (all-bank refresh); REFSB refreshes one closed
// bank (HBM2 single-bank refresh REFSB, HBM3 per-bank refresh REFpb).
enum class Command : uint8_t { ACT = 0, PRE = 1, RD = 2, WR = 3, REF = 4, REFSB = 5 };
constexpr uint32_t kNumCommands = 6;
const char* to_string(Command c);
inline bool is_column_command(Command c) { return c == Command::RD || c == Command::WR; }

struct BankAddress {
  uint32_t pseudo_channel = 0;
  uint32_t bank_group = 0;
  uint32_t bank = 0;
  uint32_t row = 0;   // used by ACT (row to open) and RD/WR (row that must be open)
};

class TimingEngine {
 public:
  // Throws std::invalid_argument for a zero-sized organization or a zero nBL.
  TimingEngine(const Organization& org, const Timing& timing);

  // ---- Public, checked API (addresses are range-checked, std::out_of_range otherwise) ----

  // Earliest cycle at which `cmd` satisfies every timing constraint, the command-bus rule and the
  // time order. Bank state (open/closed) is ignored.
  uint64_t earliest(Command cmd, const BankAddress& a) const;
  // State legality AND cycle >= earliest(cmd, a).
  bool legal(Command cmd, const BankAddress& a, uint64_t cycle) const;
  // Throws std::logic_error (with the reason) if the command is not legal at `cycle`.
  void issue(Command cmd, const BankAddress& a, uint64_t cycle);
  // Why `cmd` is illegal at `cycle` ("" when it is legal).
  std::string why_illegal(Command cmd, const BankAddress& a, uint64_t cycle) const;

  std::optional<uint32_t> open_row(uint32_t pc, uint32_t bg, uint32_t bank) const;
  uint32_t open_banks(uint32_t pc) const { return open_count_.at(pc); }

  // ---- Fast, unchecked API on flat bank indices (for the channel controller) ----
  // flat bank index = (pc * bank_groups + bg) * banks_per_group + bank
  uint32_t flat_bank(uint32_t pc, uint32_t bg, uint32_t bank) const {
    return (pc * bank_groups_ + bg) * banks_per_group_ + bank;
  }
  uint32_t num_banks() const { return num_banks_; }
  uint32_t banks_per_pc() const { return banks_per_pc_; }
  uint32_t pc_of(uint32_t flat) const { return bank_pc_[flat]; }

  static constexpr uint32_t kClosed = 0xFFFFFFFFu;
  uint32_t open_row_flat(uint32_t flat) const { return open_row_[flat]; }

  // earliest() for a bank-addressed command (ACT, PRE, RD, WR, REFSB) on a flat bank index.
  uint64_t earliest_flat(Command cmd, uint32_t flat) const {
    const uint64_t* bn = &bank_next_[flat * kNumCommands];
    const uint32_t g = bank_bg_[flat];
    const uint32_t p = bank_pc_[flat];
    const uint32_t c = static_cast<uint32_t>(cmd);
    uint64_t t = bn[c];
    if (cmd != Command::PRE) {
      t = max(t, bg_next_[g * kNumCommands + c]);
      t = max(t, pc_next_[p * kNumCommands + c]);
    }
    t = max(t, is_column_command(cmd) ? col_bus_free_ : row_bus_free_);
    return max(t, last_cycle_);
  }
  // earliest_flat() without the command-bus and time-order terms. It only changes when a command
  // is issued to the same pseudo-channel, so a caller may cache it per pseudo-channel issue.
  uint64_t earliest_raw(Command cmd, uint32_t flat) const {
    const uint32_t c = static_cast<uint32_t>(cmd);
    uint64_t t = bank_next_[flat * kNumCommands + c];
    if (cmd != Command::PRE) {
      t = max(t, bg_next_[bank_bg_[flat] * kNumCommands + c]);
      t = max(t, pc_next_[bank_pc_[flat] * kNumCommands + c]);
    }
    return t;
  }
  // The bank-group and pseudo-channel terms of earliest_raw() for a bank of flat bank group g in
  // pseudo-channel p: earliest_raw(cmd, b) == max(bank_constraint(cmd, b),
  // shared_constraint(cmd, bg_of(b), pc_of(b))).
  uint64_t shared_constraint(Command cmd, uint32_t g, uint32_t p) const {
    if (cmd == Command::PRE) return 0;
    const uint32_t c = static_cast<uint32_t>(cmd);
    return max(bg_next_[g * kNumCommands + c], pc_next_[p * kNumCommands + c]);
  }
  uint32_t bg_of(uint32_t flat) const { return bank_bg_[flat]; }
  uint32_t bank_groups_per_pc() const { return bank_groups_; }
  uint32_t banks_per_group() const { return banks_per_group_; }
  // First cycle the row / column command bus is free (the bus terms of earliest()).
  uint64_t row_bus_free() const { return row_bus_free_; }
  uint64_t col_bus_free() const { return col_bus_free_; }
  // Bank-level constraint alone (no bus/order terms): e.g. when the bank may next be precharged.
  uint64_t bank_constraint(Command cmd, uint32_t flat) const {
    return bank_next_[flat * kNumCommands + static_cast<uint32_t>(cmd)];
  }
  uint64_t earliest_refresh(uint32_t pc) const {
    return max(max(pc_next_[pc * kNumCommands + static_cast<uint32_t>(Command::REF)], row_bus_free_), last_cycle_);
  }
  // Unchecked issue: the caller guarantees legality (the controller checks with earliest_flat and
  // its own bank-state bookkeeping). `row` is only read for ACT. REFSB goes through issue_flat.
  void issue_flat(Command cmd, uint32_t flat, uint32_t row, uint64_t cycle);
  void issue_refresh(uint32_t pc, uint64_t cycle);

  uint64_t last_issue_cycle() const { return last_cycle_; }
  const Timing& timing() const { return t_; }

 private:
  static uint64_t max(uint64_t a, uint64_t b) { return a > b ? a : b; }
  static void bump(uint64_t& slot, uint64_t v) {
    if (v > slot) slot = v;
  }
  void check_address(Command cmd, const BankAddress& a) const;
  std::string state_problem(Command cmd, const BankAddress& a) const;

  Timing t_;
  uint32_t pseudo_channels_, bank_groups_, banks_per_group_, rows_;
  uint32_t banks_per_pc_, num_banks_;

  // Derived distances.
  uint64_t wr_to_pre_, wr_to_rd_s_, wr_to_rd_l_;

  std::vector<uint64_t> bank_next_;  // num_banks * kNumCommands
  std::vector<uint64_t> bg_next_;    // pcs * bank_groups * kNumCommands
  std::vector<uint64_t> pc_next_;    // pcs * kNumCommands
  std::vector<uint32_t> bank_bg_;    // per flat bank: flat bank-group index (pc * bank_groups + bg)
  std::vector<uint32_t> bank_pc_;    // per flat bank: pseudo-channel (lookups instead of divisions)
  std::vector<uint32_t> open_row_;   // per flat bank, kClosed when closed
  std::vector<uint32_t> open_count_; // open banks per pseudo-channel
  std::vector<std::array<uint64_t, 4>> faw_;  // last four ACT cycles per pseudo-channel (ring)
  std::vector<uint32_t> faw_pos_;
  std::vector<uint32_t> faw_count_;
  uint64_t row_bus_free_ = 0;  // first cycle the row command bus is free
  uint64_t col_bus_free_ = 0;  // first cycle the column command bus is free
  uint64_t last_cycle_ = 0;    // cycle of the last issued command (time order)
};

}  // namespace hpusim::hbm
