#include "hw/hbm/timing_engine.h"

#include <stdexcept>

namespace hpusim::hbm {

const char* to_string(Command c) {
  switch (c) {
    case Command::ACT: return "ACT";
    case Command::PRE: return "PRE";
    case Command::RD: return "RD";
    case Command::WR: return "WR";
    case Command::REF: return "REF";
    case Command::REFSB: return "REFSB";
  }
  return "?";
}

namespace {
constexpr uint32_t kAct = static_cast<uint32_t>(Command::ACT);
constexpr uint32_t kPre = static_cast<uint32_t>(Command::PRE);
constexpr uint32_t kRd = static_cast<uint32_t>(Command::RD);
constexpr uint32_t kWr = static_cast<uint32_t>(Command::WR);
constexpr uint32_t kRef = static_cast<uint32_t>(Command::REF);
constexpr uint32_t kRefsb = static_cast<uint32_t>(Command::REFSB);
}  // namespace

TimingEngine::TimingEngine(const Organization& org, const Timing& timing)
    : t_(timing),
      pseudo_channels_(org.pseudo_channels),
      bank_groups_(org.bank_groups),
      banks_per_group_(org.banks_per_group),
      rows_(org.rows) {
  if (org.pseudo_channels == 0 || org.bank_groups == 0 || org.banks_per_group == 0 || org.rows == 0) {
    throw std::invalid_argument("HBM timing engine: pseudo_channels, bank_groups, banks_per_group and rows must be > 0");
  }
  if (timing.nBL == 0) throw std::invalid_argument("HBM timing engine: nBL must be > 0");
  banks_per_pc_ = bank_groups_ * banks_per_group_;
  num_banks_ = pseudo_channels_ * banks_per_pc_;
  wr_to_pre_ = uint64_t{t_.nCWL} + t_.nBL + t_.nWR;
  wr_to_rd_s_ = uint64_t{t_.nCWL} + t_.nBL + t_.nWTRS;
  wr_to_rd_l_ = uint64_t{t_.nCWL} + t_.nBL + t_.nWTRL;
  bank_next_.assign(size_t{num_banks_} * kNumCommands, 0);
  bg_next_.assign(size_t{pseudo_channels_} * bank_groups_ * kNumCommands, 0);
  pc_next_.assign(size_t{pseudo_channels_} * kNumCommands, 0);
  bank_bg_.resize(num_banks_);
  bank_pc_.resize(num_banks_);
  for (uint32_t b = 0; b < num_banks_; ++b) {
    bank_bg_[b] = b / banks_per_group_;
    bank_pc_[b] = b / banks_per_pc_;
  }
  open_row_.assign(num_banks_, kClosed);
  open_count_.assign(pseudo_channels_, 0);
  faw_.assign(pseudo_channels_, {0, 0, 0, 0});
  faw_pos_.assign(pseudo_channels_, 0);
  faw_count_.assign(pseudo_channels_, 0);
}

void TimingEngine::check_address(Command cmd, const BankAddress& a) const {
  if (a.pseudo_channel >= pseudo_channels_) {
    throw std::out_of_range("HBM timing engine: pseudo_channel " + std::to_string(a.pseudo_channel) + " out of range");
  }
  if (cmd == Command::REF) return;
  if (a.bank_group >= bank_groups_) {
    throw std::out_of_range("HBM timing engine: bank_group " + std::to_string(a.bank_group) + " out of range");
  }
  if (a.bank >= banks_per_group_) {
    throw std::out_of_range("HBM timing engine: bank " + std::to_string(a.bank) + " out of range");
  }
  if ((cmd == Command::ACT || is_column_command(cmd)) && a.row >= rows_) {
    throw std::out_of_range("HBM timing engine: row " + std::to_string(a.row) + " out of range");
  }
}

uint64_t TimingEngine::earliest(Command cmd, const BankAddress& a) const {
  check_address(cmd, a);
  if (cmd == Command::REF) return earliest_refresh(a.pseudo_channel);
  return earliest_flat(cmd, flat_bank(a.pseudo_channel, a.bank_group, a.bank));
}

std::string TimingEngine::state_problem(Command cmd, const BankAddress& a) const {
  if (cmd == Command::REF) {
    if (open_count_[a.pseudo_channel] != 0) {
      return std::to_string(open_count_[a.pseudo_channel]) + " bank(s) of the pseudo-channel are open";
    }
    return "";
  }
  const uint32_t open = open_row_[flat_bank(a.pseudo_channel, a.bank_group, a.bank)];
  switch (cmd) {
    case Command::ACT:
      if (open != kClosed) return "bank is already open (row " + std::to_string(open) + ")";
      break;
    case Command::REFSB:
      if (open != kClosed) return "bank is open (row " + std::to_string(open) + "); REFSB needs it closed";
      break;
    case Command::PRE:
      if (open == kClosed) return "bank is closed";
      break;
    case Command::RD:
    case Command::WR:
      if (open == kClosed) return "bank is closed";
      if (open != a.row) return "bank has row " + std::to_string(open) + " open, not row " + std::to_string(a.row);
      break;
    case Command::REF:
      break;
  }
  return "";
}

std::string TimingEngine::why_illegal(Command cmd, const BankAddress& a, uint64_t cycle) const {
  check_address(cmd, a);
  std::string s = state_problem(cmd, a);
  if (!s.empty()) return s;
  const uint64_t e = earliest(cmd, a);
  if (cycle < e) {
    if (cycle < last_cycle_) return "cycle is before the last issued command (cycle " + std::to_string(last_cycle_) + ")";
    const uint64_t bus = is_column_command(cmd) ? col_bus_free_ : row_bus_free_;
    if (cycle < bus) return std::string(is_column_command(cmd) ? "column" : "row") + " command bus is busy this cycle";
    return "timing constraint: earliest legal cycle is " + std::to_string(e);
  }
  return "";
}

bool TimingEngine::legal(Command cmd, const BankAddress& a, uint64_t cycle) const {
  check_address(cmd, a);
  if (!state_problem(cmd, a).empty()) return false;
  return cycle >= earliest(cmd, a);
}

void TimingEngine::issue(Command cmd, const BankAddress& a, uint64_t cycle) {
  const std::string why = why_illegal(cmd, a, cycle);
  if (!why.empty()) {
    throw std::logic_error(std::string("HBM: illegal ") + to_string(cmd) + " to pc" + std::to_string(a.pseudo_channel) +
                           " bg" + std::to_string(a.bank_group) + " ba" + std::to_string(a.bank) + " row " +
                           std::to_string(a.row) + " at cycle " + std::to_string(cycle) + ": " + why);
  }
  if (cmd == Command::REF) {
    issue_refresh(a.pseudo_channel, cycle);
  } else {
    issue_flat(cmd, flat_bank(a.pseudo_channel, a.bank_group, a.bank), a.row, cycle);
  }
}

void TimingEngine::issue_flat(Command cmd, uint32_t flat, uint32_t row, uint64_t c) {
  uint64_t* bn = &bank_next_[flat * kNumCommands];
  const uint32_t g = bank_bg_[flat];
  const uint32_t p = bank_pc_[flat];
  uint64_t* gn = &bg_next_[g * kNumCommands];
  uint64_t* pn = &pc_next_[p * kNumCommands];
  last_cycle_ = c;
  switch (cmd) {
    case Command::ACT: {
      bump(bn[kRd], c + t_.nRCDRD);
      bump(bn[kWr], c + t_.nRCDWR);
      bump(bn[kPre], c + t_.nRAS);
      bump(bn[kAct], c + t_.nRC);
      bump(bn[kRefsb], c + t_.nRC);     // the bank must finish its row cycle before a REFSB
      bump(gn[kAct], c + t_.nRRDL);
      bump(pn[kAct], c + t_.nRRDS);
      bump(pn[kRefsb], c + t_.nRRDS);   // REFSB is a row activation for nRRD (not for nFAW)
      // Four-activate window: after this ACT the ring holds the last four; the next ACT must be
      // at least nFAW after the oldest of them.
      auto& ring = faw_[p];
      ring[faw_pos_[p]] = c;
      faw_pos_[p] = (faw_pos_[p] + 1) & 3u;
      if (faw_count_[p] < 4) ++faw_count_[p];
      if (faw_count_[p] == 4) bump(pn[kAct], ring[faw_pos_[p]] + t_.nFAW);
      open_row_[flat] = row;
      ++open_count_[p];
      row_bus_free_ = c + 1;
      break;
    }
    case Command::PRE:
      bump(bn[kAct], c + t_.nRP);
      bump(bn[kRefsb], c + t_.nRP);
      bump(pn[kRef], c + t_.nRP);
      open_row_[flat] = kClosed;
      --open_count_[p];
      row_bus_free_ = c + 1;
      break;
    case Command::RD:
      bump(bn[kPre], c + t_.nRTP);
      bump(gn[kRd], c + t_.nCCDL);
      bump(pn[kRd], c + t_.nCCDS);
      bump(pn[kWr], c + t_.nRTW);
      col_bus_free_ = c + 1;
      break;
    case Command::WR:
      bump(bn[kPre], c + wr_to_pre_);
      bump(gn[kWr], c + t_.nCCDL);
      bump(gn[kRd], c + wr_to_rd_l_);
      bump(pn[kWr], c + t_.nCCDS);
      bump(pn[kRd], c + wr_to_rd_s_);
      col_bus_free_ = c + 1;
      break;
    case Command::REF:
      issue_refresh(p, c);
      break;
    case Command::REFSB:
      // Same bank: busy for nRFCSB. Other banks of the pseudo-channel: nRREFD to their REFSB and
      // nRRDS to their ACT (an ACT-like row command, outside the four-activate window). The
      // all-bank REF waits for this bank's refresh to finish.
      bump(bn[kAct], c + t_.nRFCSB);
      bump(bn[kRefsb], c + t_.nRFCSB);
      bump(pn[kRefsb], c + t_.nRREFD);
      bump(pn[kAct], c + t_.nRRDS);
      bump(pn[kRef], c + t_.nRFCSB);
      row_bus_free_ = c + 1;
      break;
  }
}

void TimingEngine::issue_refresh(uint32_t p, uint64_t c) {
  uint64_t* pn = &pc_next_[p * kNumCommands];
  last_cycle_ = c;
  bump(pn[kAct], c + t_.nRFC);
  bump(pn[kRef], c + t_.nRFC);
  bump(pn[kRefsb], c + t_.nRFC);
  row_bus_free_ = c + 1;
}

std::optional<uint32_t> TimingEngine::open_row(uint32_t pc, uint32_t bg, uint32_t bank) const {
  if (pc >= pseudo_channels_ || bg >= bank_groups_ || bank >= banks_per_group_) {
    throw std::out_of_range("HBM timing engine: open_row address out of range");
  }
  const uint32_t r = open_row_[flat_bank(pc, bg, bank)];
  if (r == kClosed) return std::nullopt;
  return r;
}

}  // namespace hpusim::hbm
