// Timing-gate tests: every constraint of the HBM timing engine is illegal one cycle early and
// legal exactly on time, for a synthetic all-distinct timing set and the HBM2 / HBM2E / HBM3 sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "hw/hbm/timing_engine.h"
#include "tests/hbm/hbm_timing_sets.h"

namespace hpusim::hbm {
namespace {

using testing::distinct_timing;
using testing::hbm2_1760;
using testing::hbm2e_3200;
using testing::hbm3_6400;

constexpr uint64_t kC0 = 10000;  // cycle of the preceding command; setup happens well before

BankAddress at(uint32_t pc, uint32_t bg, uint32_t ba, uint32_t row = 0) { return BankAddress{pc, bg, ba, row}; }

// A gate: `setup` issues the preceding command at kC0 (and whatever must come before it); then
// `follow` to `addr` must be illegal at kC0 + n - 1 and legal at kC0 + n, n = distance(timing).
struct GateCase {
  std::string name;
  std::function<void(TimingEngine&, const Timing&)> setup;
  Command follow;
  BankAddress addr;
  std::function<uint64_t(const Timing&)> distance;
};

void open_bank(TimingEngine& e, const BankAddress& a, uint64_t cycle) { e.issue(Command::ACT, a, cycle); }

std::vector<GateCase> gate_cases() {
  std::vector<GateCase> v;
  const auto A = at(0, 0, 0, 7);   // pc0 bg0 ba0
  const auto B = at(0, 0, 1, 9);   // same bank group, other bank
  const auto C = at(0, 1, 0, 11);  // other bank group
  const auto D = at(1, 0, 0, 13);  // other pseudo-channel

  // ---- same bank ----
  v.push_back({"ACT_to_RD_nRCDRD", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::RD, A, [](const Timing& t) { return uint64_t{t.nRCDRD}; }});
  v.push_back({"ACT_to_WR_nRCDWR", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::WR, A, [](const Timing& t) { return uint64_t{t.nRCDWR}; }});
  v.push_back({"ACT_to_PRE_nRAS", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::PRE, A, [](const Timing& t) { return uint64_t{t.nRAS}; }});
  // ACT->ACT on one bank needs a PRE in between, so nRAS + nRP also bounds it; with the
  // distinct set (and HBM3) nRC is the binding one.
  v.push_back({"ACT_to_ACT_same_bank_nRC",
               [=](TimingEngine& e, const Timing& t) {
                 open_bank(e, A, kC0);
                 e.issue(Command::PRE, A, kC0 + t.nRAS);
               },
               Command::ACT, A, [](const Timing& t) { return std::max<uint64_t>(t.nRC, uint64_t{t.nRAS} + t.nRP); }});
  v.push_back({"PRE_to_ACT_nRP",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::PRE, A, kC0);
               },
               Command::ACT, A, [](const Timing& t) { return uint64_t{t.nRP}; }});
  v.push_back({"RD_to_PRE_nRTP",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::RD, A, kC0);
               },
               Command::PRE, A, [](const Timing& t) { return uint64_t{t.nRTP}; }});
  v.push_back({"WR_to_PRE_nCWL_nBL_nWR",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::WR, A, kC0);
               },
               Command::PRE, A, [](const Timing& t) { return uint64_t{t.nCWL} + t.nBL + t.nWR; }});

  // ---- same bank group ----
  v.push_back({"ACT_to_ACT_same_bg_nRRDL", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::ACT, B, [](const Timing& t) { return uint64_t{t.nRRDL}; }});
  v.push_back({"RD_to_RD_same_bg_nCCDL",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, B, kC0 - 400);
                 e.issue(Command::RD, A, kC0);
               },
               Command::RD, B, [](const Timing& t) { return uint64_t{t.nCCDL}; }});
  v.push_back({"RD_to_RD_same_bank_nCCDL",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::RD, A, kC0);
               },
               Command::RD, A, [](const Timing& t) { return uint64_t{t.nCCDL}; }});
  v.push_back({"WR_to_WR_same_bg_nCCDL",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, B, kC0 - 400);
                 e.issue(Command::WR, A, kC0);
               },
               Command::WR, B, [](const Timing& t) { return uint64_t{t.nCCDL}; }});
  v.push_back({"WR_to_RD_same_bg_nCWL_nBL_nWTRL",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, B, kC0 - 400);
                 e.issue(Command::WR, A, kC0);
               },
               Command::RD, B, [](const Timing& t) { return uint64_t{t.nCWL} + t.nBL + t.nWTRL; }});
  v.push_back({"WR_to_RD_same_bank_nCWL_nBL_nWTRL",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::WR, A, kC0);
               },
               Command::RD, A, [](const Timing& t) { return uint64_t{t.nCWL} + t.nBL + t.nWTRL; }});
  v.push_back({"RD_to_WR_same_bank_nRTW",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::RD, A, kC0);
               },
               Command::WR, A, [](const Timing& t) { return uint64_t{t.nRTW}; }});

  // ---- same pseudo-channel, different bank group ----
  v.push_back({"ACT_to_ACT_other_bg_nRRDS", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::ACT, C, [](const Timing& t) { return uint64_t{t.nRRDS}; }});
  v.push_back({"RD_to_RD_other_bg_nCCDS",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, C, kC0 - 400);
                 e.issue(Command::RD, A, kC0);
               },
               Command::RD, C, [](const Timing& t) { return uint64_t{t.nCCDS}; }});
  v.push_back({"WR_to_WR_other_bg_nCCDS",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, C, kC0 - 400);
                 e.issue(Command::WR, A, kC0);
               },
               Command::WR, C, [](const Timing& t) { return uint64_t{t.nCCDS}; }});
  v.push_back({"WR_to_RD_other_bg_nCWL_nBL_nWTRS",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, C, kC0 - 400);
                 e.issue(Command::WR, A, kC0);
               },
               Command::RD, C, [](const Timing& t) { return uint64_t{t.nCWL} + t.nBL + t.nWTRS; }});
  v.push_back({"RD_to_WR_other_bg_nRTW",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, C, kC0 - 400);
                 e.issue(Command::RD, A, kC0);
               },
               Command::WR, C, [](const Timing& t) { return uint64_t{t.nRTW}; }});
  // Four ACTs at kC0, +nRRDS, +2nRRDS, +3nRRDS in four bank groups; the fifth (bank group 0,
  // another bank) waits for the window that started at kC0.
  v.push_back({"FAW_fifth_ACT_nFAW",
               [=](TimingEngine& e, const Timing& t) {
                 for (uint32_t g = 0; g < 4; ++g) open_bank(e, at(0, g, 0, 100 + g), kC0 + g * uint64_t{t.nRRDS});
               },
               Command::ACT, at(0, 0, 2, 5), [](const Timing& t) { return uint64_t{t.nFAW}; }});
  // The window slides: with ACTs at kC0-1000 (long gone) plus four recent ones, the gate is the
  // window of the most recent four, not of the oldest ever.
  v.push_back({"FAW_window_slides",
               [=](TimingEngine& e, const Timing& t) {
                 open_bank(e, at(0, 3, 3, 1), kC0 - 1000);
                 for (uint32_t g = 0; g < 4; ++g) open_bank(e, at(0, g, 1, 100 + g), kC0 + g * uint64_t{t.nRRDS});
               },
               Command::ACT, at(0, 0, 2, 5), [](const Timing& t) { return uint64_t{t.nFAW}; }});
  v.push_back({"PRE_to_REF_nRP",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::PRE, A, kC0);
               },
               Command::REF, at(0, 0, 0), [](const Timing& t) { return uint64_t{t.nRP}; }});
  v.push_back({"REF_to_ACT_nRFC", [=](TimingEngine& e, const Timing&) { e.issue(Command::REF, at(0, 0, 0), kC0); },
               Command::ACT, C, [](const Timing& t) { return uint64_t{t.nRFC}; }});
  v.push_back({"REF_to_REF_nRFC", [=](TimingEngine& e, const Timing&) { e.issue(Command::REF, at(0, 0, 0), kC0); },
               Command::REF, at(0, 0, 0), [](const Timing& t) { return uint64_t{t.nRFC}; }});

  // ---- per-bank refresh (REFSB) ----
  // Same bank.
  v.push_back({"PRE_to_REFSB_same_bank_nRP",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::PRE, A, kC0);
               },
               Command::REFSB, A, [](const Timing& t) { return uint64_t{t.nRP}; }});
  // The bank must complete its row cycle: with the distinct set (and HBM3) nRC > nRAS + nRP binds.
  v.push_back({"ACT_to_REFSB_same_bank_nRC",
               [=](TimingEngine& e, const Timing& t) {
                 open_bank(e, A, kC0);
                 e.issue(Command::PRE, A, kC0 + t.nRAS);
               },
               Command::REFSB, A, [](const Timing& t) { return std::max<uint64_t>(t.nRC, uint64_t{t.nRAS} + t.nRP); }});
  v.push_back({"REFSB_to_ACT_same_bank_nRFCSB", [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); },
               Command::ACT, A, [](const Timing& t) { return uint64_t{t.nRFCSB}; }});
  v.push_back({"REFSB_to_REFSB_same_bank_nRFCSB",
               [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); }, Command::REFSB, A,
               [](const Timing& t) { return uint64_t{t.nRFCSB}; }});
  // Other banks of the pseudo-channel, same and other bank group: nRREFD between REFSBs, nRRDS
  // between a REFSB and an ACT either way (nRRDS even in the same bank group: no nRRDL).
  v.push_back({"REFSB_to_REFSB_same_bg_nRREFD", [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); },
               Command::REFSB, B, [](const Timing& t) { return uint64_t{t.nRREFD}; }});
  v.push_back({"REFSB_to_REFSB_other_bg_nRREFD",
               [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); }, Command::REFSB, C,
               [](const Timing& t) { return uint64_t{t.nRREFD}; }});
  v.push_back({"REFSB_to_ACT_same_bg_nRRDS", [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); },
               Command::ACT, B, [](const Timing& t) { return uint64_t{t.nRRDS}; }});
  v.push_back({"REFSB_to_ACT_other_bg_nRRDS", [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); },
               Command::ACT, C, [](const Timing& t) { return uint64_t{t.nRRDS}; }});
  v.push_back({"ACT_to_REFSB_same_bg_nRRDS", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::REFSB, B, [](const Timing& t) { return uint64_t{t.nRRDS}; }});
  v.push_back({"ACT_to_REFSB_other_bg_nRRDS", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::REFSB, C, [](const Timing& t) { return uint64_t{t.nRRDS}; }});
  // A PRE gates only its own bank's REFSB (nRP is not a pseudo-channel constraint for REFSB).
  v.push_back({"PRE_other_bank_to_REFSB_row_bus_only",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, B, kC0 - 500);
                 e.issue(Command::PRE, B, kC0);
               },
               Command::REFSB, A, [](const Timing&) { return uint64_t{1}; }});
  // All-bank and per-bank refresh of one pseudo-channel.
  v.push_back({"REF_to_REFSB_nRFC", [=](TimingEngine& e, const Timing&) { e.issue(Command::REF, at(0, 0, 0), kC0); },
               Command::REFSB, C, [](const Timing& t) { return uint64_t{t.nRFC}; }});
  v.push_back({"REFSB_to_REF_nRFCSB", [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); },
               Command::REF, at(0, 0, 0), [](const Timing& t) { return uint64_t{t.nRFCSB}; }});
  // REFSB is not an activate for the four-activate window: after four ACTs it only waits nRRDS...
  v.push_back({"REFSB_not_gated_by_nFAW",
               [=](TimingEngine& e, const Timing& t) {
                 for (uint32_t g = 0; g < 4; ++g) open_bank(e, at(0, g, 0, 100 + g), kC0 - (3 - g) * uint64_t{t.nRRDS});
               },
               Command::REFSB, at(0, 0, 2), [](const Timing& t) { return uint64_t{t.nRRDS}; }});
  // ...and does not fill the window: ACT, ACT, ACT, REFSB, ACT, then the next ACT is nFAW after
  // the first ACT (had the REFSB counted, nFAW after the second).
  v.push_back({"REFSB_not_counted_in_nFAW",
               [=](TimingEngine& e, const Timing& t) {
                 for (uint32_t g = 0; g < 3; ++g) open_bank(e, at(0, g, 0, 100 + g), kC0 + g * uint64_t{t.nRRDS});
                 e.issue(Command::REFSB, at(0, 3, 0), kC0 + 3 * uint64_t{t.nRRDS});
                 open_bank(e, at(0, 3, 1, 7), kC0 + 4 * uint64_t{t.nRRDS});
               },
               Command::ACT, at(0, 0, 2, 5), [](const Timing& t) { return uint64_t{t.nFAW}; }});
  // The row bus is shared with the other pseudo-channel; nothing else is.
  v.push_back({"row_bus_REFSB_then_ACT_other_pc", [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); },
               Command::ACT, D, [](const Timing&) { return uint64_t{1}; }});
  v.push_back({"row_bus_ACT_then_REFSB_other_pc", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::REFSB, D, [](const Timing&) { return uint64_t{1}; }});
  v.push_back({"row_bus_REFSB_then_REFSB_other_pc",
               [=](TimingEngine& e, const Timing&) { e.issue(Command::REFSB, A, kC0); }, Command::REFSB, D,
               [](const Timing&) { return uint64_t{1}; }});
  v.push_back({"row_bus_REF_then_REFSB_other_pc",
               [=](TimingEngine& e, const Timing&) { e.issue(Command::REF, at(0, 0, 0), kC0); }, Command::REFSB, D,
               [](const Timing&) { return uint64_t{1}; }});
  v.push_back({"REFSB_same_cycle_as_column_command",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::RD, A, kC0);
               },
               Command::REFSB, D, [](const Timing&) { return uint64_t{0}; }});

  // ---- command bus: one row and one column command per channel per cycle ----
  v.push_back({"row_bus_ACT_then_ACT_other_pc", [=](TimingEngine& e, const Timing&) { open_bank(e, A, kC0); },
               Command::ACT, D, [](const Timing&) { return uint64_t{1}; }});
  v.push_back({"row_bus_PRE_then_REF_other_pc",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::PRE, A, kC0);
               },
               Command::REF, at(1, 0, 0), [](const Timing&) { return uint64_t{1}; }});
  v.push_back({"col_bus_RD_then_RD_other_pc",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, D, kC0 - 400);
                 e.issue(Command::RD, A, kC0);
               },
               Command::RD, D, [](const Timing&) { return uint64_t{1}; }});
  // Also shows that nRTW is per pseudo-channel: a WR on the other one only waits for the bus.
  v.push_back({"col_bus_RD_then_WR_other_pc",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 open_bank(e, D, kC0 - 400);
                 e.issue(Command::RD, A, kC0);
               },
               Command::WR, D, [](const Timing&) { return uint64_t{1}; }});
  // A column command does not occupy the row bus: an ACT may issue in the same cycle (n = 0).
  v.push_back({"row_and_column_same_cycle",
               [=](TimingEngine& e, const Timing&) {
                 open_bank(e, A, kC0 - 500);
                 e.issue(Command::RD, A, kC0);
               },
               Command::ACT, D, [](const Timing&) { return uint64_t{0}; }});
  return v;
}

struct TimingSetCase {
  std::string name;
  Timing timing;
};

// Short parameter descriptions: the default printer dumps raw bytes (including pointers), which
// ctest then shows in every test name.
void PrintTo(const GateCase& g, std::ostream* os) { *os << g.name; }
void PrintTo(const TimingSetCase& t, std::ostream* os) { *os << t.name; }

std::vector<TimingSetCase> timing_cases() {
  return {{"Distinct", distinct_timing()}, {"HBM2_1760", hbm2_1760()}, {"HBM2E_3200", hbm2e_3200()},
          {"HBM3_6400", hbm3_6400()}};
}

class HbmTimingGate : public ::testing::TestWithParam<std::tuple<GateCase, TimingSetCase>> {};

TEST_P(HbmTimingGate, IllegalOneCycleEarlyLegalOnTime) {
  const GateCase& g = std::get<0>(GetParam());
  const Timing& t = std::get<1>(GetParam()).timing;
  Organization org;
  TimingEngine e(org, t);
  g.setup(e, t);
  const uint64_t n = g.distance(t);
  EXPECT_EQ(e.earliest(g.follow, g.addr), kC0 + n) << g.name << " with " << t.name;
  if (n > 0) {
    EXPECT_FALSE(e.legal(g.follow, g.addr, kC0 + n - 1)) << g.name << " with " << t.name;
    EXPECT_THROW(e.issue(g.follow, g.addr, kC0 + n - 1), std::logic_error);
  }
  EXPECT_TRUE(e.legal(g.follow, g.addr, kC0 + n)) << e.why_illegal(g.follow, g.addr, kC0 + n);
  EXPECT_NO_THROW(e.issue(g.follow, g.addr, kC0 + n));
}

INSTANTIATE_TEST_SUITE_P(
    Sets, HbmTimingGate, ::testing::Combine(::testing::ValuesIn(gate_cases()), ::testing::ValuesIn(timing_cases())),
    [](const ::testing::TestParamInfo<HbmTimingGate::ParamType>& info) {
      return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
    });

// The distinct set really separates the parameters the gates rely on.
TEST(HbmTimingSets, DistinctSetHasNoCoincidences) {
  const Timing t = distinct_timing();
  std::vector<uint64_t> v = {t.nBL,   t.nCL,   t.nCWL,  t.nRCDRD, t.nRCDWR, t.nRP,   t.nRAS,
                             t.nRC,   t.nWR,   t.nRTP,  t.nCCDS,  t.nCCDL,  t.nRRDS, t.nRRDL,
                             t.nFAW,  t.nWTRS, t.nWTRL, t.nRTW,   t.nRFC,   t.nREFI,  t.nRFCSB, t.nRREFD,
                             uint64_t{t.nCWL} + t.nBL + t.nWR, uint64_t{t.nCWL} + t.nBL + t.nWTRS,
                             uint64_t{t.nCWL} + t.nBL + t.nWTRL};
  std::sort(v.begin(), v.end());
  EXPECT_TRUE(std::adjacent_find(v.begin(), v.end()) == v.end());
  EXPECT_GT(t.nRC, t.nRAS + t.nRP);
  EXPECT_GT(t.nFAW, 4 * t.nRRDS);
}

// The three JEDEC-style sets keep the relations the controller relies on.
TEST(HbmTimingSets, StandardSetsAreConsistent) {
  for (const Timing& t : testing::standard_timing_sets()) {
    SCOPED_TRACE(t.name);
    EXPECT_NEAR(double(t.nRC), double(t.nRAS + t.nRP), 1.0);  // tRC = tRAS + tRP, within rounding
    EXPECT_GE(t.nCCDS, t.nBL);             // back-to-back bursts never overlap on the data bus
    EXPECT_GT(t.nCCDL, t.nCCDS);
    EXPECT_GT(t.nRRDL, t.nRRDS);
    EXPECT_GT(t.nWTRL, t.nWTRS);
    EXPECT_GT(t.nFAW, 4 * t.nRRDS);
    EXPECT_LT(t.nRFC, t.nREFI);
    // Per-bank refresh: shorter than an all-bank one, longer than a row cycle, and REFSBs to
    // different banks are at least an ACT-to-ACT distance apart.
    EXPECT_LT(t.nRFCSB, t.nRFC);
    EXPECT_GT(t.nRFCSB, t.nRC);
    EXPECT_GE(t.nRREFD, t.nRRDS);
    // tREFI = 3.9 us.
    EXPECT_NEAR(static_cast<double>(t.nREFI) * t.tck_ps, 3.9e6, 0.01e6);
  }
}

// ---- state legality ----

class HbmTimingState : public ::testing::Test {
 protected:
  Organization org;
  Timing t = distinct_timing();
};

TEST_F(HbmTimingState, ColumnCommandsNeedTheRowOpen) {
  TimingEngine e(org, t);
  const auto a = at(0, 1, 2, 5);
  for (uint64_t c : {uint64_t{0}, uint64_t{100}, uint64_t{1000000}}) {
    EXPECT_FALSE(e.legal(Command::RD, a, c));
    EXPECT_FALSE(e.legal(Command::WR, a, c));
    EXPECT_FALSE(e.legal(Command::PRE, a, c));
  }
  EXPECT_THROW(e.issue(Command::RD, a, 500), std::logic_error);
  EXPECT_THROW(e.issue(Command::PRE, a, 500), std::logic_error);
  e.issue(Command::ACT, a, 1000);
  EXPECT_EQ(e.open_row(0, 1, 2), std::optional<uint32_t>(5));
  // Another row of the same bank is not open.
  auto other = a;
  other.row = 6;
  for (uint64_t c : {uint64_t{1000}, uint64_t{5000}, uint64_t{1000000}}) EXPECT_FALSE(e.legal(Command::RD, other, c));
  EXPECT_THROW(e.issue(Command::WR, other, 5000), std::logic_error);
  EXPECT_TRUE(e.legal(Command::RD, a, 5000));
}

TEST_F(HbmTimingState, ActivateNeedsTheBankClosed) {
  TimingEngine e(org, t);
  const auto a = at(1, 3, 3, 5);
  e.issue(Command::ACT, a, 10);
  auto again = a;
  again.row = 9;
  for (uint64_t c : {uint64_t{10}, uint64_t{1000}, uint64_t{1000000}}) {
    EXPECT_FALSE(e.legal(Command::ACT, a, c));
    EXPECT_FALSE(e.legal(Command::ACT, again, c));
  }
  EXPECT_THROW(e.issue(Command::ACT, again, 5000), std::logic_error);
  e.issue(Command::PRE, a, 5000);
  EXPECT_FALSE(e.open_row(1, 3, 3).has_value());
  EXPECT_TRUE(e.legal(Command::ACT, again, 5000 + t.nRP));
}

TEST_F(HbmTimingState, RefreshNeedsEveryBankOfThePseudoChannelClosed) {
  TimingEngine e(org, t);
  e.issue(Command::ACT, at(0, 2, 1, 5), 10);
  for (uint64_t c : {uint64_t{11}, uint64_t{1000}, uint64_t{1000000}}) EXPECT_FALSE(e.legal(Command::REF, at(0, 0, 0), c));
  EXPECT_THROW(e.issue(Command::REF, at(0, 0, 0), 5000), std::logic_error);
  // The other pseudo-channel is unaffected.
  EXPECT_TRUE(e.legal(Command::REF, at(1, 0, 0), 5000));
  e.issue(Command::PRE, at(0, 2, 1), 5000);
  EXPECT_EQ(e.open_banks(0), 0u);
  EXPECT_TRUE(e.legal(Command::REF, at(0, 0, 0), 5000 + t.nRP));
  // While refreshing no bank is open, so column commands stay illegal.
  e.issue(Command::REF, at(0, 0, 0), 5000 + t.nRP);
  EXPECT_FALSE(e.legal(Command::RD, at(0, 2, 1, 5), 1000000));
}

TEST_F(HbmTimingState, PerBankRefreshNeedsItsBankClosed) {
  TimingEngine e(org, t);
  const auto a = at(0, 2, 1, 5);
  e.issue(Command::ACT, a, 10);
  for (uint64_t c : {uint64_t{11}, uint64_t{1000}, uint64_t{1000000}}) EXPECT_FALSE(e.legal(Command::REFSB, a, c));
  EXPECT_THROW(e.issue(Command::REFSB, a, 5000), std::logic_error);
  EXPECT_NE(e.why_illegal(Command::REFSB, a, 5000).find("open"), std::string::npos);
  // Only its own bank matters: other banks of the pseudo-channel may be refreshed meanwhile.
  EXPECT_TRUE(e.legal(Command::REFSB, at(0, 2, 2), 5000));
  EXPECT_TRUE(e.legal(Command::REFSB, at(0, 0, 1), 5000));
  e.issue(Command::REFSB, at(0, 2, 2), 5000);
  EXPECT_EQ(e.open_banks(0), 1u);
  e.issue(Command::PRE, a, 6000);
  EXPECT_FALSE(e.legal(Command::REFSB, a, 6000 + t.nRP - 1));
  EXPECT_TRUE(e.legal(Command::REFSB, a, 6000 + t.nRP));
  e.issue(Command::REFSB, a, 6000 + t.nRP);
  // A refreshed bank stays closed: no column command, no PRE, and no second REFSB before nRFCSB.
  EXPECT_FALSE(e.open_row(0, 2, 1).has_value());
  EXPECT_EQ(e.open_banks(0), 0u);
  EXPECT_FALSE(e.legal(Command::RD, a, 1000000));
  EXPECT_FALSE(e.legal(Command::PRE, a, 1000000));
  EXPECT_TRUE(e.legal(Command::ACT, a, 6000 + t.nRP + t.nRFCSB));
  EXPECT_STREQ(to_string(Command::REFSB), "REFSB");
  EXPECT_THROW(e.earliest(Command::REFSB, at(0, 0, org.banks_per_group)), std::out_of_range);
  EXPECT_THROW(e.earliest(Command::REFSB, at(0, org.bank_groups, 0)), std::out_of_range);
}

TEST_F(HbmTimingState, CommandsCannotGoBackInTime) {
  TimingEngine e(org, t);
  e.issue(Command::ACT, at(0, 0, 0, 1), 1000);
  // A command on an unrelated pseudo-channel before the last issued cycle is rejected.
  EXPECT_FALSE(e.legal(Command::ACT, at(1, 0, 0, 1), 999));
  EXPECT_THROW(e.issue(Command::ACT, at(1, 0, 0, 1), 999), std::logic_error);
  EXPECT_TRUE(e.legal(Command::ACT, at(1, 0, 0, 1), 1001));
}

TEST_F(HbmTimingState, RejectsAddressesOutsideTheChannel) {
  TimingEngine e(org, t);
  EXPECT_THROW(e.earliest(Command::ACT, at(org.pseudo_channels, 0, 0)), std::out_of_range);
  EXPECT_THROW(e.earliest(Command::ACT, at(0, org.bank_groups, 0)), std::out_of_range);
  EXPECT_THROW(e.earliest(Command::ACT, at(0, 0, org.banks_per_group)), std::out_of_range);
  EXPECT_THROW(e.issue(Command::ACT, at(0, 0, 0, org.rows), 0), std::out_of_range);
  EXPECT_THROW(e.open_row(0, 0, org.banks_per_group), std::out_of_range);
}

TEST_F(HbmTimingState, IllegalIssueLeavesStateUnchanged) {
  TimingEngine e(org, t);
  e.issue(Command::ACT, at(0, 0, 0, 1), 100);
  const uint64_t before = e.earliest(Command::RD, at(0, 0, 0, 1));
  EXPECT_THROW(e.issue(Command::RD, at(0, 0, 0, 1), 101), std::logic_error);
  EXPECT_EQ(e.earliest(Command::RD, at(0, 0, 0, 1)), before);
  EXPECT_EQ(e.last_issue_cycle(), 100u);
  EXPECT_NE(e.why_illegal(Command::RD, at(0, 0, 0, 1), 101).find("earliest"), std::string::npos);
}

}  // namespace
}  // namespace hpusim::hbm
