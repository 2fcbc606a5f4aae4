#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "hw/hbm/address_mapper.h"
#include "hw/hbm/channel_controller.h"
#include "tests/hbm/hbm_timing_sets.h"

namespace hpusim::hbm {

// Test names and failure messages show the timing set's name instead of its bytes.
void PrintTo(const Timing& t, std::ostream* os) { *os << t.name; }

namespace {

constexpr uint64_t kNever = ChannelController::kNever;

uint64_t total_commands(const ControllerStats& s) {
  return s.read_bursts + s.write_bursts + s.activates + s.precharges + s.refreshes;
}

// Watches the per-bank refresh counters of a controller after every advance(): refreshes per bank,
// the first one, the longest gap between two refreshes of one bank, and (per-bank mode) how late
// each REFSB issued after its due cycle. Also checks that no bank is activated while its per-bank
// refresh is pending.
struct RefreshTracker {
  std::vector<uint64_t> count, first, last, max_gap;
  std::vector<uint64_t> due_before;  // per pseudo-channel, refresh_due() before the step
  std::vector<uint32_t> closed_target;  // per pseudo-channel: pending REFSB's bank if closed, else ~0
  uint64_t max_lateness = 0;
  uint64_t pending_checks = 0;  // steps that checked a closed bank with a pending refresh
  uint64_t late_refreshes = 0;  // REFSBs that issued at least `late_threshold` after their due cycle
  uint64_t late_threshold = ChannelController::kNever;

  void before(const ChannelController& c, uint32_t pcs, uint64_t cycle) {
    if (count.empty()) {
      const uint32_t n = c.engine().num_banks();
      count.assign(n, 0);
      first.assign(n, 0);
      last.assign(n, 0);
      max_gap.assign(n, 0);
    }
    due_before.resize(pcs);
    closed_target.assign(pcs, ~0u);
    for (uint32_t p = 0; p < pcs; ++p) {
      due_before[p] = c.refresh_due(p);
      const uint32_t b = c.next_refresh_bank(p);
      if (c.refresh_mode() == RefreshMode::kPerBank && due_before[p] <= cycle &&
          c.engine().open_row_flat(b) == TimingEngine::kClosed) {
        closed_target[p] = b;
      }
    }
  }
  void after(const ChannelController& c) {
    for (uint32_t b : closed_target) {
      if (b == ~0u) continue;
      ++pending_checks;
      EXPECT_EQ(c.engine().open_row_flat(b), TimingEngine::kClosed) << "bank " << b << " activated with its refresh pending";
    }
    for (uint32_t b = 0; b < count.size(); ++b) {
      const uint64_t n = c.bank_refreshes(b);
      if (n == count[b]) continue;
      EXPECT_EQ(n, count[b] + 1) << "bank " << b << " refreshed twice in one step";
      const uint64_t at = c.last_bank_refresh(b);
      if (count[b] == 0) {
        first[b] = at;
      } else {
        max_gap[b] = std::max(max_gap[b], at - last[b]);
      }
      last[b] = at;
      count[b] = n;
      if (c.refresh_mode() == RefreshMode::kPerBank) {
        const uint64_t due = due_before[c.engine().pc_of(b)];
        EXPECT_GE(at, due) << "REFSB of bank " << b << " before it was due";
        max_lateness = std::max(max_lateness, at - due);
        if (at - due >= late_threshold) ++late_refreshes;
      }
    }
  }
};

// Drives one ChannelController the way the SystemC wrapper will: advance() only at
// next_event_cycle(). Checks on every call that time never goes back and that a call which
// issues nothing moves time forward (no busy loop).
class Harness {
 public:
  explicit Harness(const Timing& t, ControllerConfig cfg = ControllerConfig{}, Organization org = Organization{})
      : org_(org), t_(t), cfg_(cfg), ctrl_(org, t, cfg, 0) {}

  DramAddress addr(uint32_t pc, uint32_t bg, uint32_t ba, uint32_t row, uint32_t col = 0) const {
    DramAddress a;
    a.stack = 0;
    a.channel = 0;
    a.channels_per_stack = org_.channels_per_stack;
    a.pseudo_channel = pc;
    a.bank_group = bg;
    a.bank = ba;
    a.row = row;
    a.column = col;
    return a;
  }

  void read(uint64_t id, const DramAddress& a, uint64_t arrival, uint32_t bursts = 1) {
    ctrl_.enqueue(Request{id, false, a, bursts, arrival});
  }
  void write(uint64_t id, const DramAddress& a, uint64_t arrival, uint32_t bursts = 1) {
    ctrl_.enqueue(Request{id, true, a, bursts, arrival});
  }

  // One event step; returns false when there is no event at or before `until`.
  bool step(uint64_t until = kNever) {
    const uint64_t t = ctrl_.next_event_cycle();
    if (t == kNever || t > until) return false;
    EXPECT_GE(t, ctrl_.last_cycle());
    const uint64_t before = total_commands(ctrl_.stats());
    out_.clear();
    refresh_.before(ctrl_, org_.pseudo_channels, t);
    ctrl_.advance(t, out_);
    refresh_.after(ctrl_);
    ++calls_;
    for (const Completion& c : out_) {
      EXPECT_GE(c.done_cycle, t);
      const bool inserted = done_.emplace(c.id, c.done_cycle).second;
      EXPECT_TRUE(inserted) << "request " << c.id << " completed twice";
      if (c.done_cycle > last_done_) last_done_ = c.done_cycle;
    }
    EXPECT_EQ(ctrl_.next_event_cycle(), ctrl_.next_event_cycle_uncached()) << "stale cache after advance(" << t << ")";
    if (total_commands(ctrl_.stats()) == before) {
      EXPECT_GT(ctrl_.next_event_cycle(), t) << "advance(" << t << ") did nothing and time did not move";
      ++idle_calls_;
    }
    return true;
  }
  void run_until(uint64_t cycle) {
    while (step(cycle)) {
    }
  }
  void run_until_idle(uint64_t limit = 100000000) {
    while (!ctrl_.idle()) {
      ASSERT_TRUE(step(limit)) << "no event while " << ctrl_.queued() << " requests are queued";
    }
  }

  uint64_t done(uint64_t id) const {
    auto it = done_.find(id);
    return it == done_.end() ? kNever : it->second;
  }

  Organization org_;
  Timing t_;
  ControllerConfig cfg_;
  ChannelController ctrl_;
  std::vector<Completion> out_;
  std::unordered_map<uint64_t, uint64_t> done_;
  uint64_t last_done_ = 0;
  uint64_t calls_ = 0;
  uint64_t idle_calls_ = 0;
  RefreshTracker refresh_;
};

ControllerConfig no_refresh() {
  ControllerConfig c;
  c.refresh_enabled = false;
  return c;
}

ControllerConfig all_bank() {
  ControllerConfig c;
  c.refresh_mode = RefreshMode::kAllBank;
  return c;
}

ControllerConfig per_bank() {
  ControllerConfig c;
  c.refresh_mode = RefreshMode::kPerBank;
  return c;
}

class HbmControllerSet : public ::testing::TestWithParam<Timing> {};

INSTANTIATE_TEST_SUITE_P(Sets, HbmControllerSet, ::testing::ValuesIn(testing::standard_timing_sets()),
                         [](const ::testing::TestParamInfo<Timing>& info) {
                           std::string n = info.param.name;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

TEST_P(HbmControllerSet, UnloadedReadLatencyClosedOpenConflict) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  const auto row7 = h.addr(1, 2, 3, 7, 4);
  // Closed bank: ACT at arrival, RD nRCDRD later.
  h.read(1, row7, 100);
  h.run_until_idle();
  EXPECT_EQ(h.done(1), 100 + t.nRCDRD + t.nCL + t.nBL);
  EXPECT_EQ(h.ctrl_.row_misses(), 1u);
  // Open row (open-page policy keeps it open).
  const uint64_t a2 = h.done(1) + 50;
  h.read(2, h.addr(1, 2, 3, 7, 9), a2);
  h.run_until_idle();
  EXPECT_EQ(h.done(2), a2 + t.nCL + t.nBL);
  EXPECT_EQ(h.ctrl_.row_hits(), 1u);
  // Conflicting row of the same bank: PRE, ACT, RD.
  const uint64_t a3 = a2 + 1000;
  h.read(3, h.addr(1, 2, 3, 8, 0), a3);
  h.run_until_idle();
  EXPECT_EQ(h.done(3), a3 + t.nRP + t.nRCDRD + t.nCL + t.nBL);
  EXPECT_EQ(h.ctrl_.row_conflicts(), 1u);
  EXPECT_EQ(h.ctrl_.activates(), 2u);
  EXPECT_EQ(h.ctrl_.precharges(), 1u);
  EXPECT_EQ(h.ctrl_.reads(), 3u);
}

TEST_P(HbmControllerSet, UnloadedWriteLatency) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  h.write(1, h.addr(0, 1, 1, 3, 0), 20);
  h.run_until_idle();
  EXPECT_EQ(h.done(1), 20 + t.nRCDWR + t.nCWL + t.nBL);
  const uint64_t a2 = h.done(1) + 100;
  h.write(2, h.addr(0, 1, 1, 3, 1), a2);
  h.run_until_idle();
  EXPECT_EQ(h.done(2), a2 + t.nCWL + t.nBL);
  EXPECT_EQ(h.ctrl_.writes(), 2u);
  EXPECT_EQ(h.ctrl_.write_bursts(), 2u);
}

// Bursts of one request go to one bank, so consecutive RDs are nCCDL apart.
TEST_P(HbmControllerSet, MultiBurstRequestSpacesBurstsByCcdL) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  h.read(1, h.addr(0, 0, 0, 1, 8), 10, 8);
  h.run_until_idle();
  EXPECT_EQ(h.done(1), 10 + t.nRCDRD + 7 * t.nCCDL + t.nCL + t.nBL);
  EXPECT_EQ(h.ctrl_.read_bursts(), 8u);
  EXPECT_EQ(h.ctrl_.busy_data_cycles(), 8u * t.nBL);
}

// FR-FCFS: a younger row hit is served before an older request to another row of the same bank,
// and the open row is not closed while that hit is pending.
TEST_P(HbmControllerSet, YoungerRowHitIsServedBeforeOlderRowConflict) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  h.read(1, h.addr(0, 3, 2, 5, 0), 0);
  h.run_until_idle();
  const uint64_t T = h.done(1) + 500;
  h.read(10, h.addr(0, 3, 2, 9, 0), T);  // older, conflicting row
  h.read(11, h.addr(0, 3, 2, 5, 1), T);  // younger (enqueued later), row hit
  h.run_until_idle();
  EXPECT_EQ(h.done(11), T + t.nCL + t.nBL);
  EXPECT_EQ(h.done(10), T + t.nRTP + t.nRP + t.nRCDRD + t.nCL + t.nBL);
  EXPECT_LT(h.done(11), h.done(10));
}

// The oldest request wins among requests that are all ready.
TEST_P(HbmControllerSet, OldestReadyRowHitFirst) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  h.read(1, h.addr(0, 0, 0, 5, 0), 0);
  h.read(2, h.addr(0, 1, 0, 5, 0), 0);
  h.run_until_idle();
  const uint64_t T = h.done(2) + 500;
  h.read(20, h.addr(0, 1, 0, 5, 3), T);  // older
  h.read(21, h.addr(0, 0, 0, 5, 3), T + 0);
  h.run_until_idle();
  EXPECT_EQ(h.done(20), T + t.nCL + t.nBL);
  EXPECT_EQ(h.done(21), T + t.nCCDS + t.nCL + t.nBL);
}

// The row and column command buses are separate: an ACT for one bank issues in the same cycle
// as a RD to another bank.
TEST_P(HbmControllerSet, RowAndColumnCommandsIssueInTheSameCycle) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  h.read(1, h.addr(0, 0, 0, 1, 0), 0);
  h.run_until_idle();
  const uint64_t T = h.done(1) + 500;
  h.read(2, h.addr(0, 0, 0, 1, 4), T, 4);  // row hit, 4 bursts
  h.read(3, h.addr(0, 1, 0, 2, 0), T);     // closed bank in another bank group
  h.run_until_idle();
  EXPECT_EQ(h.done(2), T + 3 * t.nCCDL + t.nCL + t.nBL);
  EXPECT_EQ(h.done(3), T + t.nRCDRD + t.nCL + t.nBL);
}

// Bus turnarounds are charged through the engine: RD->WR waits nRTW, WR->RD (same bank group)
// waits nCWL + nBL + nWTRL. Reads go first while writes are below the high watermark.
TEST_P(HbmControllerSet, ReadWriteTurnaround) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  h.read(1, h.addr(0, 2, 2, 6, 0), 0);
  h.run_until_idle();
  const uint64_t T = h.done(1) + 500;
  h.write(2, h.addr(0, 2, 2, 6, 1), T);  // older write
  h.read(3, h.addr(0, 2, 2, 6, 2), T);   // read mode: the read goes first
  h.run_until_idle();
  EXPECT_EQ(h.done(3), T + t.nCL + t.nBL);
  EXPECT_EQ(h.done(2), T + t.nRTW + t.nCWL + t.nBL);
  const uint64_t U = h.done(2) + 500;
  h.write(4, h.addr(0, 2, 2, 6, 3), U);      // alone: write mode, WR at U
  h.read(5, h.addr(0, 2, 2, 6, 4), U + 1);   // arrives after the WR issued
  h.run_until_idle();
  EXPECT_EQ(h.done(4), U + t.nCWL + t.nBL);
  EXPECT_EQ(h.done(5), U + t.nCWL + t.nBL + t.nWTRL + t.nCL + t.nBL);
  EXPECT_EQ(h.ctrl_.row_hits(), 4u);
}

TEST_P(HbmControllerSet, FutureArrivalIsInvisibleUntilItArrives) {
  const Timing t = GetParam();
  Harness h(t, no_refresh());
  h.read(1, h.addr(1, 1, 1, 1, 0), 5000);
  EXPECT_EQ(h.ctrl_.next_event_cycle(), 5000u);
  h.run_until(4999);
  EXPECT_EQ(h.ctrl_.activates(), 0u);
  h.run_until_idle();
  EXPECT_EQ(h.done(1), 5000 + t.nRCDRD + t.nCL + t.nBL);
}

// A source that keeps one controller's queue full: sequential reads over channel 0's share of the
// address space, or uniformly random banks, rows and columns. Addresses are generated before the
// timed loop, so `seconds` measures the controller and the event loop only.
struct StreamResult {
  double utilisation;
  uint64_t elapsed;
  ControllerStats stats;
  uint64_t calls;
  double seconds;
};

StreamResult stream(const Timing& t, uint64_t requests, bool random, bool refresh = true,
                    RefreshMode mode = RefreshMode::kAllBank, uint32_t bursts_per_request = 2, uint64_t seed = 1) {
  ControllerConfig cfg;
  cfg.refresh_enabled = refresh;
  cfg.refresh_mode = mode;
  // 64 requests of 2 bursts, as the queue held when it counted requests: the speeds recorded in
  // hw/hbm/README.md stay comparable (a deeper queue means longer bank queues to scan).
  cfg.queue_bursts = 128;
  cfg.write_high_watermark = 80;
  cfg.write_low_watermark = 32;
  Organization org;
  AddressMapper mapper(org, t, cfg);
  std::mt19937_64 rng(seed);
  const uint32_t req_bytes = bursts_per_request * t.burst_bytes;
  std::vector<DramAddress> addrs;
  addrs.reserve(requests);
  uint64_t offset = 0;
  while (addrs.size() < requests) {
    if (random) {
      DramAddress a;
      a.channels_per_stack = org.channels_per_stack;
      a.pseudo_channel = static_cast<uint32_t>(rng() % org.pseudo_channels);
      a.bank_group = static_cast<uint32_t>(rng() % org.bank_groups);
      a.bank = static_cast<uint32_t>(rng() % org.banks_per_group);
      a.row = static_cast<uint32_t>(rng() % org.rows);
      a.column = static_cast<uint32_t>(rng() % (org.columns / bursts_per_request)) * bursts_per_request;
      addrs.push_back(a);
    } else {
      const DramAddress a = mapper.map(offset % mapper.capacity_bytes());
      offset += req_bytes;
      if (a.global_channel() == 0) addrs.push_back(a);
    }
  }
  ChannelController ctrl(org, t, cfg, 0);
  std::vector<Completion> out;
  out.reserve(cfg.queue_bursts);
  uint64_t sent = 0, completed = 0, last_done = 0, calls = 0;
  uint64_t now = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (completed < requests) {
    while (sent < requests && ctrl.can_accept(false, bursts_per_request)) {
      ctrl.enqueue(Request{sent, false, addrs[sent], bursts_per_request, now});
      ++sent;
    }
    now = ctrl.next_event_cycle();
    out.clear();
    ctrl.advance(now, out);
    ++calls;
    completed += out.size();
    for (const auto& c : out) last_done = std::max(last_done, c.done_cycle);
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {ctrl.data_bus_utilisation(last_done), last_done, ctrl.stats(), calls, sec};
}

TEST_P(HbmControllerSet, StreamingReadsKeepTheDataBusBusy) {
  const Timing t = GetParam();
  // 200k bursts: sequential 64-byte reads over channel 0's share of the address space.
  const StreamResult r = stream(t, 100000, false);
  // Refresh-limited ceiling: of every nREFI, each pseudo-channel loses at least nRFC plus the
  // precharge before it (nRP) and the activate after it (nRCDRD).
  const double ceiling = 1.0 - static_cast<double>(t.nRP + t.nRFC + t.nRCDRD) / t.nREFI;
  std::printf("[ stream ] %s: utilisation %.4f (refresh ceiling %.4f) over %llu cycles, %llu ACT, %llu REF "
              "(%llu pulled in), %llu advance calls\n",
              t.name.c_str(), r.utilisation, ceiling, static_cast<unsigned long long>(r.elapsed),
              static_cast<unsigned long long>(r.stats.activates), static_cast<unsigned long long>(r.stats.refreshes),
              static_cast<unsigned long long>(r.stats.refresh_pull_ins), static_cast<unsigned long long>(r.calls));
  EXPECT_GE(r.utilisation, 0.98 * ceiling);
  if (t.name == "HBM2-1760") {
    EXPECT_GE(r.utilisation, 0.90);
  }
  // No data while a pseudo-channel refreshes: busy cycles fit in what refresh leaves.
  const double pcs = 2.0;
  EXPECT_LE(r.utilisation, 1.0 - static_cast<double>(r.stats.refreshes) * t.nRFC / (pcs * r.elapsed) + 1e-9);
  EXPECT_LE(r.utilisation, 1.0);
  EXPECT_EQ(r.stats.read_bursts, 200000u);
  EXPECT_EQ(r.stats.row_hits + r.stats.row_misses + r.stats.row_conflicts, r.stats.reads);
  // Refresh kept its pace under load: each pseudo-channel refreshed once per nREFI (pull-in lets
  // one run at most one interval ahead; one may still be pending at the end).
  const uint64_t per_pc = r.elapsed / t.nREFI;
  EXPECT_GE(r.stats.refreshes + 4, 2 * per_pc);
  EXPECT_LE(r.stats.refreshes, 2 * per_pc + 2);
  // Sequential: one ACT per 1 KB row (32 bursts), not per request; refresh reopens rows.
  EXPECT_LE(r.stats.activates, r.stats.read_bursts / 32 + r.stats.refreshes * 16 + 64);
  // Without refresh the scheduler keeps both data buses busy.
  const StreamResult nr = stream(t, 100000, false, /*refresh=*/false);
  std::printf("[ stream ] %s without refresh: utilisation %.4f\n", t.name.c_str(), nr.utilisation);
  EXPECT_GE(nr.utilisation, 0.99);
  EXPECT_LE(nr.utilisation, 1.0);
}

TEST_P(HbmControllerSet, RandomReadsActivateForNearlyEveryRequest) {
  const Timing t = GetParam();
  const StreamResult seq = stream(t, 20000, false);
  const StreamResult rnd = stream(t, 20000, true);
  std::printf("[ random ] %s: utilisation %.4f (sequential %.4f), %llu ACT for %llu reads\n", t.name.c_str(),
              rnd.utilisation, seq.utilisation, static_cast<unsigned long long>(rnd.stats.activates),
              static_cast<unsigned long long>(rnd.stats.reads));
  EXPECT_GE(rnd.stats.activates, rnd.stats.reads * 95 / 100);
  EXPECT_LE(rnd.stats.activates, rnd.stats.reads + rnd.stats.refreshes * 16);
  EXPECT_LT(rnd.utilisation, seq.utilisation * 0.8);
  EXPECT_EQ(rnd.stats.row_hits + rnd.stats.row_misses + rnd.stats.row_conflicts, rnd.stats.reads);
}

TEST_P(HbmControllerSet, IdleRefreshEveryNrefiPerPseudoChannelStaggered) {
  const Timing t = GetParam();
  Harness h(t, all_bank());
  const uint32_t pcs = h.org_.pseudo_channels;
  // First refresh of pseudo-channel p is due at nREFI + p * nREFI / pcs.
  h.run_until(t.nREFI - 1);
  EXPECT_EQ(h.ctrl_.refreshes(), 0u);
  h.run_until(t.nREFI);
  EXPECT_EQ(h.ctrl_.refreshes(), 1u);
  h.run_until(t.nREFI + t.nREFI / pcs - 1);
  EXPECT_EQ(h.ctrl_.refreshes(), 1u);
  h.run_until(t.nREFI + t.nREFI / pcs);
  EXPECT_EQ(h.ctrl_.refreshes(), 2u);
  const uint64_t L = 25 * uint64_t{t.nREFI} + 123;
  h.run_until(L);
  uint64_t expect = 0;
  for (uint32_t p = 0; p < pcs; ++p) {
    const uint64_t first = t.nREFI + uint64_t{p} * (t.nREFI / pcs);
    if (L >= first) expect += (L - first) / t.nREFI + 1;
  }
  EXPECT_EQ(h.ctrl_.refreshes(), expect);
  EXPECT_EQ(h.ctrl_.precharges(), 0u);
  // An idle channel costs one event per refresh, nothing per cycle.
  EXPECT_EQ(h.calls_, expect);
}

TEST_P(HbmControllerSet, RefreshClosesOpenRowsFirst) {
  const Timing t = GetParam();
  Harness h(t, all_bank());
  h.read(1, h.addr(0, 0, 0, 3, 0), 10);
  h.read(2, h.addr(0, 2, 1, 4, 0), 10);
  h.run_until_idle();
  EXPECT_EQ(h.ctrl_.engine().open_banks(0), 2u);
  h.run_until(t.nREFI + 100);
  EXPECT_EQ(h.ctrl_.refreshes(), 1u);
  EXPECT_EQ(h.ctrl_.precharges(), 2u);
  EXPECT_EQ(h.ctrl_.engine().open_banks(0), 0u);
  // The two PREs take the row bus at nREFI and nREFI + 1; REF follows nRP after the second. A
  // read arriving during the refresh waits for nRFC after the REF.
  const uint64_t ref_at = t.nREFI + 1 + t.nRP;
  h.read(3, h.addr(0, 0, 0, 3, 1), t.nREFI + 100);
  h.run_until_idle();
  EXPECT_EQ(h.done(3), ref_at + t.nRFC + t.nRCDRD + t.nCL + t.nBL);
}

// While pseudo-channel 0 refreshes and the queue only holds work for it, idle pseudo-channel 1
// refreshes ahead of schedule (pull-in); its next refresh then moves a full nREFI later.
TEST_P(HbmControllerSet, IdlePseudoChannelPullsInItsRefresh) {
  const Timing t = GetParam();
  Harness h(t, all_bank());
  for (uint32_t i = 0; i < 8; ++i) h.read(i, h.addr(0, i % 4, 0, 1, i / 4), t.nREFI + 1);
  h.run_until(t.nREFI);
  EXPECT_EQ(h.ctrl_.refreshes(), 1u);  // pseudo-channel 0, on schedule
  EXPECT_EQ(h.ctrl_.stats().refresh_pull_ins, 0u);
  h.run_until(t.nREFI + 1);
  EXPECT_EQ(h.ctrl_.refreshes(), 2u);  // pseudo-channel 1, half an interval early
  EXPECT_EQ(h.ctrl_.stats().refresh_pull_ins, 1u);
  h.run_until_idle();
  // The reads waited for pseudo-channel 0's refresh.
  EXPECT_GE(h.done(0), t.nREFI + t.nRFC + t.nRCDRD + t.nCL + t.nBL);
  // Pseudo-channel 1 is not due again until nREFI + nREFI/2 + nREFI.
  h.run_until(2 * t.nREFI + t.nREFI / 2 - 1);
  EXPECT_EQ(h.ctrl_.refreshes(), 3u);  // only pseudo-channel 0's second one
  h.run_until(2 * t.nREFI + t.nREFI / 2);
  EXPECT_EQ(h.ctrl_.refreshes(), 4u);
  EXPECT_EQ(h.ctrl_.stats().refresh_pull_ins, 1u);  // the queue was empty: no more pull-ins
}

// ---- per-bank refresh (REFSB) ----

constexpr uint32_t kBanksPerPc = 16;  // default Organization: 4 bank groups x 4 banks

// Per-bank interval: one REFSB per pseudo-channel every nREFI / banks.
uint64_t refsb_interval(const Timing& t) { return t.nREFI / kBanksPerPc; }

// How late a REFSB may issue after its due cycle (the stated tolerance): it waits for row hits
// until it is one per-bank interval overdue, then for its bank's precharge (at most nRAS after
// the ACT, or the write recovery after the last WR; nRTP after a RD is shorter), nRP, an ACT or
// REFSB of another bank just before it (nRRDS, nRREFD), and a cycle or two of row-bus contention.
uint64_t refsb_lateness_bound(const Timing& t) {
  return refsb_interval(t) + std::max<uint64_t>(t.nRAS, uint64_t{t.nCWL} + t.nBL + t.nWR) + t.nRP + t.nRRDS +
         t.nRREFD + 2;
}

// Keeps h's queue full with requests from make(i) (arriving now) until cycle `until`, then drains.
template <typename Make>
void feed(Harness& h, uint64_t until, Make make) {
  uint64_t id = 0;
  while (h.ctrl_.last_cycle() < until) {
    for (;;) {
      Request r = make(id);
      if (!h.ctrl_.can_accept(r)) break;
      r.id = id++;
      r.arrival_cycle = h.ctrl_.last_cycle();
      h.ctrl_.enqueue(r);
    }
    ASSERT_TRUE(h.step());
  }
  h.run_until_idle();
}

// Idle channel: REFSBs exactly on the staggered per-bank schedule, round-robin over the banks, so
// every bank is refreshed once per nREFI; one event per REFSB and nothing else.
TEST_P(HbmControllerSet, PerBankIdleRefreshesEveryBankOncePerNrefi) {
  const Timing t = GetParam();
  Harness h(t, per_bank());
  const uint64_t I = refsb_interval(t);
  const uint32_t pcs = h.org_.pseudo_channels;
  EXPECT_EQ(h.ctrl_.refresh_due(0), I);
  EXPECT_EQ(h.ctrl_.refresh_due(1), I + I / pcs);  // staggered by half an interval
  h.run_until(I - 1);
  EXPECT_EQ(h.ctrl_.refreshes(), 0u);
  h.run_until(I);
  EXPECT_EQ(h.ctrl_.refreshes(), 1u);
  EXPECT_EQ(h.ctrl_.bank_refreshes(h.ctrl_.engine().flat_bank(0, 0, 0)), 1u);
  EXPECT_EQ(h.ctrl_.last_bank_refresh(h.ctrl_.engine().flat_bank(0, 0, 0)), I);
  EXPECT_EQ(h.ctrl_.next_refresh_bank(0), h.ctrl_.engine().flat_bank(0, 0, 1));
  h.run_until(I + I / pcs - 1);
  EXPECT_EQ(h.ctrl_.refreshes(), 1u);
  h.run_until(I + I / pcs);
  EXPECT_EQ(h.ctrl_.refreshes(), 2u);
  EXPECT_EQ(h.ctrl_.bank_refreshes(h.ctrl_.engine().flat_bank(1, 0, 0)), 1u);

  const uint64_t L = 20 * uint64_t{t.nREFI} + 123;
  h.run_until(L);
  uint64_t expect = 0;
  for (uint32_t p = 0; p < pcs; ++p) {
    for (uint32_t j = 0; j < kBanksPerPc; ++j) {
      const uint32_t b = p * kBanksPerPc + j;
      // Bank j of pseudo-channel p: first due at stagger + (j + 1) * nREFI / banks, then every nREFI.
      const uint64_t first = p * I / pcs + (uint64_t{j} + 1) * t.nREFI / kBanksPerPc;
      const uint64_t n = L >= first ? (L - first) / t.nREFI + 1 : 0;
      EXPECT_EQ(h.ctrl_.bank_refreshes(b), n) << "bank " << b;
      EXPECT_GE(h.ctrl_.bank_refreshes(b), L / t.nREFI - 1) << "bank " << b;
      EXPECT_LE(h.ctrl_.bank_refreshes(b), L / t.nREFI) << "bank " << b;
      EXPECT_EQ(h.ctrl_.last_bank_refresh(b), first + (n - 1) * t.nREFI) << "bank " << b;
      EXPECT_EQ(h.refresh_.first[b], first) << "bank " << b;
      if (n > 1) {
        EXPECT_EQ(h.refresh_.max_gap[b], t.nREFI) << "bank " << b;
      }
      expect += n;
    }
  }
  EXPECT_EQ(h.ctrl_.refreshes(), expect);
  EXPECT_EQ(h.ctrl_.per_bank_refreshes(), expect);
  EXPECT_EQ(h.ctrl_.precharges(), 0u);
  EXPECT_EQ(h.refresh_.max_lateness, 0u);
  EXPECT_EQ(h.calls_, expect);
}

// A request to a bank whose refresh is not pending sees exactly the refresh-off latencies
// (compare UnloadedReadLatencyClosedOpenConflict and UnloadedWriteLatency), with refreshes of
// other banks going on between the requests.
TEST_P(HbmControllerSet, PerBankUnloadedLatencyUnchangedWhenNoRefreshIsPending) {
  const Timing t = GetParam();
  Harness h(t, per_bank());
  const uint32_t b = h.ctrl_.engine().flat_bank(1, 2, 3);
  const TimingEngine& e = h.ctrl_.engine();
  const BankAddress ba{1, 2, 3, 0};
  // The first cycle A >= from at which no refresh is pending and none is due within `window`
  // cycles, and `ready(A)` holds (the bank is free of earlier refreshes' constraints).
  auto quiet = [&](uint64_t from, uint64_t window, auto ready) {
    uint64_t A = from;
    for (int tries = 0; tries < 10000; ++tries) {
      h.run_until(A - 1);
      const uint64_t next_due = std::min(h.ctrl_.refresh_due(0), h.ctrl_.refresh_due(1));
      if (next_due < A + window) {
        A = next_due + 1;
      } else if (!ready(A)) {
        ++A;
      } else {
        return A;
      }
    }
    ADD_FAILURE() << "no quiet window";
    return A;
  };
  // Start right after this bank's own first refresh, so it is not refreshed again (nor its row
  // closed) during the test.
  const uint64_t own = uint64_t{t.nREFI} / kBanksPerPc / 2 + 12 * uint64_t{t.nREFI} / kBanksPerPc;
  h.run_until(own);
  ASSERT_EQ(h.ctrl_.bank_refreshes(b), 1u);
  ASSERT_EQ(h.ctrl_.last_bank_refresh(b), own);

  // Closed bank: ACT, RD.
  BankAddress r7 = ba;
  r7.row = 7;
  const uint64_t a1 = quiet(own + 1, t.nRCDRD + 1, [&](uint64_t A) { return e.earliest(Command::ACT, r7) <= A; });
  h.read(1, h.addr(1, 2, 3, 7, 4), a1);
  h.run_until_idle();
  EXPECT_EQ(h.done(1), a1 + t.nRCDRD + t.nCL + t.nBL);
  // Row hit.
  const uint64_t a2 = quiet(h.done(1) + 50, 1, [&](uint64_t A) { return e.earliest(Command::RD, r7) <= A; });
  h.read(2, h.addr(1, 2, 3, 7, 9), a2);
  h.run_until_idle();
  EXPECT_EQ(h.done(2), a2 + t.nCL + t.nBL);
  // Row conflict: PRE, ACT, RD.
  const uint64_t a3 = quiet(a2 + 1000, t.nRP + t.nRCDRD + 1, [&](uint64_t A) {
    return e.earliest(Command::PRE, r7) <= A && e.earliest(Command::ACT, r7) <= A + t.nRP;
  });
  h.read(3, h.addr(1, 2, 3, 8, 0), a3);
  h.run_until_idle();
  EXPECT_EQ(h.done(3), a3 + t.nRP + t.nRCDRD + t.nCL + t.nBL);
  // Write hit on the row now open.
  BankAddress r8 = ba;
  r8.row = 8;
  const uint64_t a4 = quiet(h.done(3) + 100, 1, [&](uint64_t A) { return e.earliest(Command::WR, r8) <= A; });
  h.write(4, h.addr(1, 2, 3, 8, 1), a4);
  h.run_until_idle();
  EXPECT_EQ(h.done(4), a4 + t.nCWL + t.nBL);

  EXPECT_EQ(h.ctrl_.row_misses(), 1u);
  EXPECT_EQ(h.ctrl_.row_hits(), 2u);
  EXPECT_EQ(h.ctrl_.row_conflicts(), 1u);
  // Other banks were refreshed meanwhile, this one was not.
  EXPECT_EQ(h.ctrl_.bank_refreshes(b), 1u);
  EXPECT_GT(h.ctrl_.per_bank_refreshes(), 8u);
}

// A due refresh waits for the arrived row hits of its bank, then precharges it and issues REFSB;
// the hits and other banks of the pseudo-channel keep their refresh-off timing, and the bank is
// busy for nRFCSB afterwards.
TEST_P(HbmControllerSet, PerBankRefreshWaitsForRowHitsThenPrecharges) {
  const Timing t = GetParam();
  Harness h(t, per_bank());
  const uint32_t b0 = h.ctrl_.engine().flat_bank(0, 0, 0);
  const uint64_t due = h.ctrl_.refresh_due(0);
  ASSERT_EQ(h.ctrl_.next_refresh_bank(0), b0);
  h.read(1, h.addr(0, 0, 0, 3, 0), 10);  // opens row 3
  h.run_until_idle();
  for (uint32_t i = 0; i < 4; ++i) h.read(10 + i, h.addr(0, 0, 0, 3, 1 + i), due);
  h.read(20, h.addr(0, 1, 0, 8, 0), due);  // another bank of the same pseudo-channel
  h.run_until(due + 3 * t.nCCDL + t.nRTP - 1);
  EXPECT_EQ(h.ctrl_.precharges(), 0u);  // hits still being served
  const uint64_t pre = due + 3 * t.nCCDL + t.nRTP;  // after the last hit's RD
  h.run_until(pre + t.nRP);
  EXPECT_TRUE(h.ctrl_.idle());
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(h.done(10 + i), due + i * t.nCCDL + t.nCL + t.nBL);
  EXPECT_EQ(h.done(20), due + t.nRCDRD + t.nCL + t.nBL);
  EXPECT_EQ(h.ctrl_.precharges(), 1u);
  EXPECT_EQ(h.ctrl_.bank_refreshes(b0), 1u);
  EXPECT_EQ(h.ctrl_.last_bank_refresh(b0), pre + t.nRP);
  EXPECT_FALSE(h.ctrl_.engine().open_row(0, 0, 0).has_value());
  EXPECT_EQ(h.ctrl_.engine().open_row(0, 1, 0), std::optional<uint32_t>(8));  // untouched
  // The refreshed bank reopens nRFCSB after its REFSB.
  const uint64_t refsb = pre + t.nRP;
  h.read(30, h.addr(0, 0, 0, 3, 9), refsb + 1);
  h.run_until_idle();
  EXPECT_EQ(h.done(30), refsb + t.nRFCSB + t.nRCDRD + t.nCL + t.nBL);
}

// Row hits that never stop do not starve the refresh: once it is one per-bank interval overdue
// the bank is precharged (column commands that would delay that stop) and refreshed.
TEST_P(HbmControllerSet, PerBankRefreshIsForcedWhenOverdue) {
  const Timing t = GetParam();
  Harness h(t, per_bank());
  const uint32_t b0 = h.ctrl_.engine().flat_bank(0, 0, 0);
  const uint64_t due = h.ctrl_.refresh_due(0);
  const uint64_t I = refsb_interval(t);
  h.read(1000000, h.addr(0, 0, 0, 3, 0), 10);
  h.run_until_idle();
  feed(h, due + 3 * I, [&](uint64_t id) {
    return Request{0, false, h.addr(0, 0, 0, 3, static_cast<uint32_t>(id % h.org_.columns)), 1, 0};
  });
  ASSERT_EQ(h.ctrl_.bank_refreshes(b0), 1u);
  const uint64_t refsb = h.ctrl_.last_bank_refresh(b0);
  // Hits held the precharge until the refresh was I overdue; then PRE (after the last RD's nRTP
  // at most) and REFSB nRP later.
  EXPECT_GE(refsb, due + I + t.nRP);
  EXPECT_LE(refsb, due + I + t.nRTP + t.nRP + 1);
  uint64_t served_while_pending = 0;
  for (const auto& [id, done] : h.done_) {
    if (done > due + t.nCL + t.nBL && done <= due + I + t.nCL + t.nBL) ++served_while_pending;
  }
  EXPECT_GE(served_while_pending, I / t.nCCDL - 1);
  EXPECT_LE(h.refresh_.max_lateness, refsb_lateness_bound(t));
}

// Streaming sequential reads with per-bank refresh: the refreshing bank is rarely the one the
// stream needs, so refresh costs almost nothing (all-bank: ~9% with HBM2E/HBM3).
TEST_P(HbmControllerSet, PerBankStreamingReadsReach97Percent) {
  const Timing t = GetParam();
  const StreamResult r = stream(t, 100000, false, true, RefreshMode::kPerBank);
  const StreamResult ab = stream(t, 100000, false, true, RefreshMode::kAllBank);
  std::printf("[ stream ] %s per-bank refresh: utilisation %.4f (all-bank %.4f) over %llu cycles, %llu ACT, "
              "%llu REFSB, %llu advance calls\n",
              t.name.c_str(), r.utilisation, ab.utilisation, static_cast<unsigned long long>(r.elapsed),
              static_cast<unsigned long long>(r.stats.activates),
              static_cast<unsigned long long>(r.stats.per_bank_refreshes), static_cast<unsigned long long>(r.calls));
  EXPECT_GE(r.utilisation, 0.97);
  EXPECT_GT(r.utilisation, ab.utilisation);
  EXPECT_LE(r.utilisation, 1.0);
  EXPECT_EQ(r.stats.read_bursts, 200000u);
  EXPECT_EQ(r.stats.per_bank_refreshes, r.stats.refreshes);
  EXPECT_EQ(r.stats.refresh_pull_ins, 0u);
  // One REFSB per pseudo-channel per nREFI / banks kept pace under load.
  const uint64_t per_pc = r.elapsed * kBanksPerPc / t.nREFI;
  EXPECT_GE(r.stats.refreshes + 4, 2 * per_pc);
  EXPECT_LE(r.stats.refreshes, 2 * per_pc + 2);
}

// Same stream through the checking harness: every bank keeps its once-per-nREFI refresh.
TEST_P(HbmControllerSet, PerBankRefreshKeepsPaceUnderSequentialStream) {
  const Timing t = GetParam();
  Harness h(t, per_bank());
  AddressMapper mapper(h.org_, t, h.cfg_);
  uint64_t offset = 0;
  feed(h, 25 * uint64_t{t.nREFI}, [&](uint64_t) {
    DramAddress a;
    do {
      a = mapper.map(offset % mapper.capacity_bytes());
      offset += 64;
    } while (a.global_channel() != 0);
    return Request{0, false, a, 2, 0};
  });
  const uint64_t end = h.ctrl_.last_cycle();
  const RefreshTracker& r = h.refresh_;
  const uint64_t bound = refsb_lateness_bound(t);
  uint64_t max_gap = 0;
  for (uint32_t b = 0; b < r.count.size(); ++b) {
    EXPECT_GE(r.count[b] + 1, end / t.nREFI) << "bank " << b;
    EXPECT_LE(r.count[b], end / t.nREFI + 1) << "bank " << b;
    EXPECT_LE(r.first[b], t.nREFI + refsb_interval(t) + bound) << "bank " << b;
    EXPECT_LE(r.max_gap[b], t.nREFI + bound) << "bank " << b;
    max_gap = std::max(max_gap, r.max_gap[b]);
  }
  std::printf("[ refsb  ] %s sequential stream: utilisation %.4f, longest gap between refreshes of a bank "
              "%llu (nREFI %u), latest REFSB %llu cycles after due (bound %llu)\n",
              t.name.c_str(), h.ctrl_.data_bus_utilisation(h.last_done_), static_cast<unsigned long long>(max_gap),
              t.nREFI, static_cast<unsigned long long>(r.max_lateness), static_cast<unsigned long long>(bound));
  EXPECT_GE(h.ctrl_.data_bus_utilisation(h.last_done_), 0.97);
  EXPECT_LE(r.max_lateness, bound);
}

// A load that keeps hitting the open row of every bank (two queued hits per bank): each due
// refresh finds hits, waits until it is overdue and is then forced. No bank goes longer than
// nREFI + refsb_lateness_bound() between refreshes.
TEST_P(HbmControllerSet, PerBankRefreshIsNotStarvedByRowHits) {
  const Timing t = GetParam();
  Harness h(t, per_bank());
  h.refresh_.late_threshold = refsb_interval(t);
  feed(h, 20 * uint64_t{t.nREFI}, [&](uint64_t id) {
    const uint32_t b = static_cast<uint32_t>(id % 32);
    return Request{0, false, h.addr(b / 16, (b / 4) % 4, b % 4, 5, static_cast<uint32_t>((id / 32) % 32)), 1, 0};
  });
  const uint64_t end = h.ctrl_.last_cycle();
  const RefreshTracker& r = h.refresh_;
  const uint64_t bound = refsb_lateness_bound(t);
  uint64_t max_gap = 0;
  for (uint32_t b = 0; b < r.count.size(); ++b) {
    EXPECT_GE(r.count[b] + 1, end / t.nREFI) << "bank " << b;
    EXPECT_LE(r.count[b], end / t.nREFI + 1) << "bank " << b;
    EXPECT_LE(r.first[b], t.nREFI + refsb_interval(t) + bound) << "bank " << b;
    EXPECT_LE(r.max_gap[b], t.nREFI + bound) << "bank " << b;
    max_gap = std::max(max_gap, r.max_gap[b]);
  }
  std::printf("[ refsb  ] %s row-hit load: %llu of %llu REFSBs overdue, longest gap %llu (nREFI %u + bound %llu), "
              "latest %llu after due, utilisation %.4f\n",
              t.name.c_str(), static_cast<unsigned long long>(r.late_refreshes),
              static_cast<unsigned long long>(h.ctrl_.per_bank_refreshes()), static_cast<unsigned long long>(max_gap),
              t.nREFI, static_cast<unsigned long long>(bound), static_cast<unsigned long long>(r.max_lateness),
              h.ctrl_.data_bus_utilisation(h.last_done_));
  // The load did postpone refreshes until they were overdue (so the rule was exercised)...
  EXPECT_GT(r.late_refreshes, h.ctrl_.per_bank_refreshes() / 2);
  // ...and never for longer than the bound.
  EXPECT_LE(r.max_lateness, bound);
  EXPECT_EQ(h.ctrl_.reads(), h.done_.size());
}

TEST(HbmController, IdleWithoutRefreshHasNoEvents) {
  Harness h(testing::hbm2_1760(), no_refresh());
  EXPECT_EQ(h.ctrl_.next_event_cycle(), kNever);
  h.read(1, h.addr(0, 0, 0, 0, 0), 7);
  h.run_until_idle();
  EXPECT_EQ(h.ctrl_.next_event_cycle(), kNever);
}

// Mixed 70/30 traffic: the controller drains writes in batches between the watermarks instead of
// turning the bus around for every request.
TEST(HbmController, WriteDrainModeSwitchesAreBounded) {
  const Timing t = testing::hbm2e_3200();
  ControllerConfig cfg;
  Organization org;
  Harness h(t, cfg, org);
  AddressMapper mapper(org, t, cfg);
  std::mt19937_64 rng(7);
  const uint64_t N = 30000;
  uint64_t sent = 0, writes = 0, offset = 0;
  while (h.done_.size() < N) {
    while (sent < N && h.ctrl_.can_accept(false, 2)) {
      DramAddress a;
      do {
        a = mapper.map(offset);
        offset += 64;
      } while (a.global_channel() != 0);
      const bool w = (rng() % 10) < 3;
      writes += w;
      h.ctrl_.enqueue(Request{sent++, w, a, 2, h.ctrl_.last_cycle()});
    }
    ASSERT_TRUE(h.step());
  }
  const uint64_t batch = (cfg.write_high_watermark - cfg.write_low_watermark) / 2;   // 2-burst writes
  std::printf("[ mix    ] %llu writes, %llu mode switches, utilisation %.4f\n", static_cast<unsigned long long>(writes),
              static_cast<unsigned long long>(h.ctrl_.mode_switches()), h.ctrl_.data_bus_utilisation(h.last_done_));
  EXPECT_GT(h.ctrl_.mode_switches(), 0u);
  EXPECT_LE(h.ctrl_.mode_switches(), 2 * (writes / batch) + 4);
  EXPECT_EQ(h.ctrl_.writes(), writes);
  EXPECT_EQ(h.ctrl_.reads(), N - writes);
}

// Random mixes (reads and writes, random banks and rows, 1..4 bursts, arrivals now or later):
// every request completes exactly once, after its arrival plus the minimum latency. All-bank: the
// original four seeds (refresh on for odd seeds). Per-bank: refresh always on, and two seeds with
// nREFI cut to 60 cycles per bank, so several banks are refreshing at once and refreshes are
// constantly overdue.
struct MixCase {
  uint64_t seed;
  RefreshMode mode;
  bool frequent_refresh;
};

void PrintTo(const MixCase& c, std::ostream* os) {
  *os << "seed " << c.seed << (c.mode == RefreshMode::kAllBank ? " all-bank" : " per-bank")
      << (c.frequent_refresh ? " frequent" : "");
}

class HbmControllerMix : public ::testing::TestWithParam<MixCase> {};

INSTANTIATE_TEST_SUITE_P(
    Seeds, HbmControllerMix,
    ::testing::Values(MixCase{1, RefreshMode::kAllBank, false}, MixCase{2, RefreshMode::kAllBank, false},
                      MixCase{3, RefreshMode::kAllBank, false}, MixCase{4, RefreshMode::kAllBank, false},
                      MixCase{1, RefreshMode::kPerBank, false}, MixCase{2, RefreshMode::kPerBank, false},
                      MixCase{3, RefreshMode::kPerBank, false}, MixCase{4, RefreshMode::kPerBank, false},
                      MixCase{5, RefreshMode::kPerBank, true}, MixCase{6, RefreshMode::kPerBank, true}),
    [](const ::testing::TestParamInfo<MixCase>& info) {
      return std::string(info.param.mode == RefreshMode::kAllBank ? "AllBank" : "PerBank") +
             (info.param.frequent_refresh ? "Frequent" : "") + "_" + std::to_string(info.param.seed);
    });

TEST_P(HbmControllerMix, NoRequestLostOrDuplicated) {
  const MixCase mc = GetParam();
  std::mt19937_64 rng(mc.seed);
  const auto sets = testing::standard_timing_sets();
  Timing t = sets[mc.seed % sets.size()];
  if (mc.frequent_refresh) t.nREFI = 60 * 16;
  ControllerConfig cfg;
  cfg.queue_bursts = 8 + static_cast<uint32_t>(rng() % 200);
  cfg.write_queue_bursts = rng() % 2 ? 8 + static_cast<uint32_t>(rng() % 100) : 0;
  cfg.write_high_watermark =
      1 + static_cast<uint32_t>(rng() % (cfg.write_queue_bursts ? cfg.write_queue_bursts : cfg.queue_bursts));
  cfg.write_low_watermark = static_cast<uint32_t>(rng() % (cfg.write_high_watermark + 1));
  cfg.refresh_mode = mc.mode;
  cfg.refresh_enabled = mc.mode == RefreshMode::kPerBank || (mc.seed % 2) == 1;
  // Half of the seeds run the two-level queues, and some of those the round-robin scheduler.
  if (mc.seed % 2 == 0) cfg.bank_queue_bursts = 8 + static_cast<uint32_t>(rng() % 8);
  if (mc.seed % 4 == 0 || mc.seed == 5) cfg.scheduler = ControllerConfig::Scheduler::kBankRoundRobin;
  Harness h(t, cfg);
  const uint64_t N = 20000;
  std::unordered_map<uint64_t, std::pair<uint64_t, Request>> sent_reqs;
  uint64_t sent = 0;
  while (h.done_.size() < N) {
    while (sent < N && rng() % 4 != 0) {
      Request r;
      r.id = 1000 + sent * 3;  // ids need not be dense
      r.is_write = rng() % 3 == 0;
      const uint32_t bursts = 1 + static_cast<uint32_t>(rng() % 4);
      r.addr = h.addr(static_cast<uint32_t>(rng() % 2), static_cast<uint32_t>(rng() % 4),
                      static_cast<uint32_t>(rng() % 4), static_cast<uint32_t>(rng() % 8),
                      static_cast<uint32_t>(rng() % (h.org_.columns - bursts + 1)));
      r.bursts = bursts;
      r.arrival_cycle = h.ctrl_.last_cycle() + (rng() % 3 == 0 ? rng() % 200 : 0);
      if (!h.ctrl_.can_accept(r)) {
        EXPECT_THROW(h.ctrl_.enqueue(r), std::logic_error);
        break;
      }
      h.ctrl_.enqueue(r);
      sent_reqs.emplace(r.id, std::make_pair(r.arrival_cycle, r));
      ++sent;
    }
    ASSERT_EQ(h.ctrl_.next_event_cycle(), h.ctrl_.next_event_cycle_uncached());
    ASSERT_TRUE(h.step()) << "stalled with " << h.ctrl_.queued() << " queued";
  }
  ASSERT_EQ(h.done_.size(), N);
  for (const auto& [id, info] : sent_reqs) {
    const Request& r = info.second;
    const uint64_t d = h.done(id);
    ASSERT_NE(d, kNever) << "request " << id << " lost";
    const uint64_t min_lat = r.is_write ? uint64_t{t.nCWL} + t.nBL : uint64_t{t.nCL} + t.nBL;
    EXPECT_GE(d, r.arrival_cycle + min_lat + (r.bursts - 1) * uint64_t{t.nCCDL});
  }
  const ControllerStats& s = h.ctrl_.stats();
  EXPECT_EQ(s.reads + s.writes, N);
  EXPECT_EQ(s.row_hits + s.row_misses + s.row_conflicts, N);
  EXPECT_TRUE(h.ctrl_.idle());
  // No busy loop: idle calls are rare compared with command-issuing calls.
  EXPECT_LT(h.idle_calls_, h.calls_ / 2);
  if (mc.mode == RefreshMode::kPerBank) {
    // Every bank was refreshed, in round-robin order (counts differ by at most one).
    EXPECT_EQ(s.per_bank_refreshes, s.refreshes);
    const auto [lo, hi] = std::minmax_element(h.refresh_.count.begin(), h.refresh_.count.end());
    EXPECT_GT(*lo, 0u);
    EXPECT_LE(*hi - *lo, 1u);
  } else {
    EXPECT_EQ(s.per_bank_refreshes, 0u);
  }
}

TEST(HbmController, RejectsBadRequestsWithoutChangingState) {
  const Timing t = testing::hbm2_1760();
  ControllerConfig cfg;
  cfg.queue_bursts = 8;   // one 256-byte chunk of 32-byte bursts
  Harness h(t, cfg);
  auto a = h.addr(0, 0, 0, 0, 0);
  auto other_channel = a;
  other_channel.channel = 1;
  EXPECT_THROW(h.read(1, other_channel, 0), std::invalid_argument);
  auto bad_row = a;
  bad_row.row = h.org_.rows;
  EXPECT_THROW(h.read(1, bad_row, 0), std::invalid_argument);
  auto last_col = a;
  last_col.column = h.org_.columns - 1;
  EXPECT_THROW(h.read(1, last_col, 0, 2), std::invalid_argument);  // crosses the row end
  EXPECT_THROW(h.read(1, a, 0, 0), std::invalid_argument);
  EXPECT_EQ(h.ctrl_.queued(), 0u);
  h.read(1, a, 0, 4);
  h.read(2, a, 0, 3);
  EXPECT_TRUE(h.ctrl_.can_accept(false, 1));
  EXPECT_FALSE(h.ctrl_.can_accept(false, 2));   // capacity counts bursts, not requests
  EXPECT_THROW(h.read(3, a, 0, 2), std::logic_error);
  EXPECT_EQ(h.ctrl_.queued_bursts(), 7u);
  h.run_until_idle();
  EXPECT_EQ(h.done_.size(), 2u);
  std::vector<Completion> out;
  EXPECT_THROW(h.ctrl_.advance(h.ctrl_.last_cycle() - 1, out), std::logic_error);
}

// Posted writes: the controller reports no completion for a write (its owner answers it when it
// is accepted), but still writes it to the DRAM.
TEST(HbmController, PostedWritesReportNoCompletionButIssue) {
  ControllerConfig cfg = no_refresh();
  cfg.posted_writes = true;
  Harness h(testing::hbm2_1760(), cfg);
  EXPECT_TRUE(h.ctrl_.posted_writes());
  h.write(1, h.addr(0, 0, 0, 3), 0, 2);
  h.read(2, h.addr(0, 1, 0, 3), 0, 1);
  h.run_until_idle();
  EXPECT_EQ(h.done(1), kNever);
  EXPECT_NE(h.done(2), kNever);
  EXPECT_EQ(h.ctrl_.write_bursts(), 2u);
  EXPECT_EQ(h.ctrl_.writes(), 1u);
}

// A separate write queue: reads and writes each have their own burst capacity.
TEST(HbmController, SeparateWriteQueueHasItsOwnCapacity) {
  ControllerConfig cfg = no_refresh();
  cfg.queue_bursts = 8;
  cfg.write_queue_bursts = 8;
  cfg.write_high_watermark = 8;
  cfg.write_low_watermark = 0;
  Harness h(testing::hbm2_1760(), cfg);
  h.read(1, h.addr(0, 0, 0, 1), 0, 8);
  EXPECT_FALSE(h.ctrl_.can_accept(false, 1));
  EXPECT_TRUE(h.ctrl_.can_accept(true, 8));
  h.write(2, h.addr(0, 1, 0, 1), 0, 8);
  EXPECT_FALSE(h.ctrl_.can_accept(true, 1));
  h.run_until_idle();
  EXPECT_NE(h.done(1), kNever);
  EXPECT_NE(h.done(2), kNever);
}

// Two-level queues: a request leaves the read queue when it moves into its bank's command queue,
// one burst per cycle, and a full command queue holds it back.
TEST(HbmController, TwoLevelQueuesMoveOneBurstPerCycleIntoBankQueues) {
  ControllerConfig cfg = no_refresh();
  cfg.queue_bursts = 16;
  cfg.bank_queue_bursts = 8;
  const Timing t = testing::hbm2_1760();
  Harness h(t, cfg);
  for (uint64_t id = 0; id < 4; ++id) h.read(id, h.addr(0, 0, 0, 5, static_cast<uint32_t>(4 * id)), 0, 4);
  EXPECT_FALSE(h.ctrl_.can_accept(false, 1));      // 16 bursts wait in the read queue
  ASSERT_TRUE(h.step());                            // cycle 0: the first request moves (4 bursts)
  EXPECT_EQ(h.ctrl_.last_cycle(), 0u);
  EXPECT_TRUE(h.ctrl_.can_accept(false, 4));
  EXPECT_FALSE(h.ctrl_.can_accept(false, 5));
  h.run_until_idle();
  // Same row: ACT, then 16 bursts back to back. The second request moved at cycle 4 (one burst a
  // cycle); the third waited for room in the bank queue (8 bursts) until the first's bursts issued.
  const uint64_t first_rd = t.nRCDRD;
  EXPECT_EQ(h.done(0), first_rd + 3 * uint64_t{t.nCCDL} + t.nCL + t.nBL);
  EXPECT_EQ(h.done(3), first_rd + 15 * uint64_t{t.nCCDL} + t.nCL + t.nBL);
}

// Two-level drains: a drain starts at the high watermark and moves the write bursts that were
// waiting then; reads already in the command queues keep issuing meanwhile.
TEST(HbmController, TwoLevelDrainMovesTheWritesWaitingAtItsStart) {
  ControllerConfig cfg = no_refresh();
  cfg.queue_bursts = 32;
  cfg.write_queue_bursts = 8;
  cfg.write_high_watermark = 8;
  cfg.write_low_watermark = 4;
  cfg.bank_queue_bursts = 8;
  Harness h(testing::hbm2_1760(), cfg);
  for (uint64_t id = 0; id < 8; ++id) h.read(id, h.addr(0, id % 4, 0, 2), 0, 1);
  for (uint64_t id = 8; id < 16; ++id) h.write(id, h.addr(0, id % 4, 1, 2), 0, 1);
  h.run_until_idle();
  for (uint64_t id = 0; id < 16; ++id) EXPECT_NE(h.done(id), kNever) << id;
  EXPECT_EQ(h.ctrl_.mode_switches(), 2u);   // one drain: started, ended
  // The drain started at once (8 waiting write bursts), so reads moved after the writes.
  uint64_t last_write = 0, last_read = 0;
  for (uint64_t id = 0; id < 8; ++id) last_read = std::max(last_read, h.done(id));
  for (uint64_t id = 8; id < 16; ++id) last_write = std::max(last_write, h.done(id));
  EXPECT_LT(last_write, last_read);
}

// Bank round robin: with row hits ready in two banks of one bank group, the banks take turns
// instead of the oldest requests going first.
TEST(HbmController, RoundRobinSchedulerAlternatesBanks) {
  const Timing t = testing::hbm2_1760();
  auto order = [&](ControllerConfig::Scheduler scheduler) {
    ControllerConfig cfg = no_refresh();
    cfg.scheduler = scheduler;
    Harness h(t, cfg);
    for (uint64_t id = 0; id < 4; ++id) h.read(id, h.addr(0, 0, 0, 1, static_cast<uint32_t>(id)), 0);
    for (uint64_t id = 4; id < 8; ++id) h.read(id, h.addr(0, 0, 1, 1, static_cast<uint32_t>(id)), 0);
    h.run_until_idle();
    std::vector<uint64_t> ids(8);
    for (uint64_t id = 0; id < 8; ++id) ids[id] = id;
    std::sort(ids.begin(), ids.end(), [&](uint64_t a, uint64_t b) { return h.done(a) < h.done(b); });
    return ids;
  };
  EXPECT_EQ(order(ControllerConfig::Scheduler::kFrFcfs), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const std::vector<uint64_t> rr = order(ControllerConfig::Scheduler::kBankRoundRobin);
  // Once both rows are open, consecutive column commands go to different banks.
  EXPECT_NE(rr, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE((rr[4] < 4) != (rr[5] < 4)) << "no alternation in the steady state";
}

TEST(HbmController, RejectsBadConfiguration) {
  const Timing t = testing::hbm2_1760();
  ControllerConfig cfg;
  cfg.write_low_watermark = 50;
  cfg.write_high_watermark = 40;
  EXPECT_THROW(ChannelController(Organization{}, t, cfg, 0), std::invalid_argument);
  EXPECT_THROW(ChannelController(Organization{}, t, ControllerConfig{}, 32), std::invalid_argument);
  ControllerConfig q0;
  q0.queue_bursts = 4;   // below one 256-byte interleave chunk
  EXPECT_THROW(ChannelController(Organization{}, t, q0, 0), std::invalid_argument);
  ControllerConfig w0;
  w0.write_queue_bursts = 4;
  EXPECT_THROW(ChannelController(Organization{}, t, w0, 0), std::invalid_argument);
  ControllerConfig b0;
  b0.bank_queue_bursts = 4;
  EXPECT_THROW(ChannelController(Organization{}, t, b0, 0), std::invalid_argument);
}

// Simulation speed of one controller (reported, not asserted: absolute times are machine-bound).
void report_speed(const char* what, const Timing& t, const StreamResult& r, uint64_t n) {
  std::printf("[ speed  ] %s, %s, one controller: %llu requests in %.3f s: %.2f M requests/s, %.2f M advance "
              "calls/s (%.0f ns per advance+next_event), %.1f M simulated cycles/s, utilisation %.4f\n",
              what, t.name.c_str(), static_cast<unsigned long long>(n), r.seconds, n / r.seconds / 1e6,
              r.calls / r.seconds / 1e6, r.seconds / r.calls * 1e9, r.elapsed / r.seconds / 1e6, r.utilisation);
}

TEST(HbmControllerSpeed, SequentialReads64B) {
  const Timing t = testing::hbm2e_3200();
  const uint64_t N = 1000000;
  const StreamResult r = stream(t, N, false);
  report_speed("sequential 64 B reads", t, r, N);
  RecordProperty("requests_per_second", std::to_string(static_cast<uint64_t>(N / r.seconds)));
  EXPECT_EQ(r.stats.reads, N);
}

TEST(HbmControllerSpeed, SequentialReads64BPerBankRefresh) {
  const Timing t = testing::hbm2e_3200();
  const uint64_t N = 1000000;
  const StreamResult r = stream(t, N, false, true, RefreshMode::kPerBank);
  report_speed("sequential 64 B reads, per-bank refresh", t, r, N);
  RecordProperty("requests_per_second", std::to_string(static_cast<uint64_t>(N / r.seconds)));
  EXPECT_EQ(r.stats.reads, N);
}

TEST(HbmControllerSpeed, RandomReads64BPerBankRefresh) {
  const Timing t = testing::hbm2e_3200();
  const uint64_t N = 300000;
  const StreamResult r = stream(t, N, true, true, RefreshMode::kPerBank);
  report_speed("random 64 B reads, per-bank refresh", t, r, N);
  RecordProperty("requests_per_second", std::to_string(static_cast<uint64_t>(N / r.seconds)));
  EXPECT_EQ(r.stats.reads, N);
}

TEST(HbmControllerSpeed, RandomReads64B) {
  const Timing t = testing::hbm2e_3200();
  const uint64_t N = 300000;
  const StreamResult r = stream(t, N, true);
  report_speed("random 64 B reads", t, r, N);
  RecordProperty("requests_per_second", std::to_string(static_cast<uint64_t>(N / r.seconds)));
  EXPECT_EQ(r.stats.reads, N);
}


// Self-refresh (ControllerConfig::self_refresh_after_refi): a stream that follows an idle period
// meets the same refreshes whatever the idle period's length, so a launch's cycles do not depend on
// how long the host kept the card idle before it (a modeled compile, a slower step).
struct StreamRun {
  std::vector<uint64_t> done;   // completion cycles relative to the stream's start
  uint64_t refreshes = 0;       // during the stream
};

StreamRun stream_after_idle(const ControllerConfig& cfg, uint64_t start) {
  Timing t;
  t.nREFI = 3432;
  t.nRFC = 229;
  ChannelController c(Organization{}, t, cfg, 0);
  std::mt19937 rng(1);
  std::vector<Completion> out;
  uint64_t id = 0;
  StreamRun run;
  auto feed = [&](uint64_t t0, int n, bool keep) {
    int sent = 0;
    uint64_t now = t0;
    while (sent < n || c.queued() > 0) {
      while (sent < n && c.can_accept(false, 2)) {
        DramAddress a;
        a.channels_per_stack = Organization{}.channels_per_stack;
        a.pseudo_channel = rng() % 2;
        a.bank_group = rng() % 4;
        a.bank = rng() % 4;
        a.row = rng() % 64;
        a.column = (rng() % 16) * 2;
        c.enqueue(Request{++id, rng() % 3 == 0, a, 2, t0 + uint64_t(sent) * 3});
        ++sent;
      }
      now = std::max(now, c.next_event_cycle());
      out.clear();
      c.advance(now, out);
      if (keep) {
        for (const Completion& x : out) run.done.push_back(x.done_cycle - t0);
      }
    }
  };
  feed(0, 2000, false);
  // Idle until `start`, handling whatever events the controller asks for (refreshes).
  for (uint64_t e = c.next_event_cycle(); e < start; e = c.next_event_cycle()) {
    out.clear();
    c.advance(e, out);
  }
  const uint64_t before = c.refreshes();
  feed(start, 20000, true);
  run.refreshes = c.refreshes() - before;
  return run;
}

TEST(HbmSelfRefresh, AStreamAfterAnIdlePeriodIsTheSameWhateverItsLength) {
  ControllerConfig on;
  on.self_refresh_after_refi = 2;
  const StreamRun first = stream_after_idle(on, 100000);
  ASSERT_EQ(first.done.size(), 20000u);
  EXPECT_GT(first.refreshes, 0u);
  for (uint64_t start : {100001ull, 100037ull, 101144ull, 117161ull, 5600000ull}) {
    const StreamRun run = stream_after_idle(on, start);
    EXPECT_EQ(run.done, first.done) << "stream started at " << start;
    EXPECT_EQ(run.refreshes, first.refreshes) << "stream started at " << start;
  }
  // Without it, refresh runs on a schedule counted from cycle 0 and the same stream meets it at
  // another phase: this is what the option removes.
  const ControllerConfig off;
  EXPECT_NE(stream_after_idle(off, 100000).done, stream_after_idle(off, 101144).done);
}

TEST(HbmSelfRefresh, AnIdleChannelStopsRefreshingAndAsksForNoEvent) {
  Timing t;
  t.nREFI = 3432;
  t.nRFC = 229;
  ControllerConfig cfg;
  cfg.self_refresh_after_refi = 2;
  ChannelController c(Organization{}, t, cfg, 0);
  std::vector<Completion> out;
  uint64_t last = 0;
  for (uint64_t e = c.next_event_cycle(); e != ChannelController::kNever && e < 100 * uint64_t{t.nREFI};
       e = c.next_event_cycle()) {
    out.clear();
    c.advance(e, out);
    last = e;
  }
  EXPECT_EQ(c.next_event_cycle(), ChannelController::kNever) << "still asking for events at " << last;
  EXPECT_LE(last, 2 * uint64_t{t.nREFI});
  EXPECT_GT(c.refreshes(), 0u);   // it did refresh before it stopped
  EXPECT_EQ(c.stats().self_refresh_exits, 0u);
  DramAddress a;
  a.channels_per_stack = Organization{}.channels_per_stack;
  c.enqueue(Request{1, false, a, 1, 50 * uint64_t{t.nREFI}});
  EXPECT_EQ(c.stats().self_refresh_exits, 1u);
}

TEST(HbmSelfRefresh, OneIntervalIsRefused) {
  ControllerConfig cfg;
  cfg.self_refresh_after_refi = 1;
  EXPECT_THROW(ChannelController(Organization{}, Timing{}, cfg, 0), std::invalid_argument);
}

}  // namespace
}  // namespace hpusim::hbm
