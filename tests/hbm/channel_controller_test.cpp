#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
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
    ctrl_.advance(t, out_);
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
};

ControllerConfig no_refresh() {
  ControllerConfig c;
  c.refresh_enabled = false;
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
                    uint32_t bursts_per_request = 2, uint64_t seed = 1) {
  ControllerConfig cfg;
  cfg.refresh_enabled = refresh;
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
  out.reserve(cfg.queue_depth);
  uint64_t sent = 0, completed = 0, last_done = 0, calls = 0;
  uint64_t now = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (completed < requests) {
    while (sent < requests && ctrl.can_accept()) {
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
  Harness h(t);
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
  Harness h(t);
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
  Harness h(t);
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
    while (sent < N && h.ctrl_.can_accept()) {
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
  const uint64_t batch = cfg.write_high_watermark - cfg.write_low_watermark;
  std::printf("[ mix    ] %llu writes, %llu mode switches, utilisation %.4f\n", static_cast<unsigned long long>(writes),
              static_cast<unsigned long long>(h.ctrl_.mode_switches()), h.ctrl_.data_bus_utilisation(h.last_done_));
  EXPECT_GT(h.ctrl_.mode_switches(), 0u);
  EXPECT_LE(h.ctrl_.mode_switches(), 2 * (writes / batch) + 4);
  EXPECT_EQ(h.ctrl_.writes(), writes);
  EXPECT_EQ(h.ctrl_.reads(), N - writes);
}

// Random mixes (reads and writes, random banks and rows, 1..4 bursts, arrivals now or later):
// every request completes exactly once, after its arrival plus the minimum latency.
class HbmControllerMix : public ::testing::TestWithParam<uint64_t> {};

INSTANTIATE_TEST_SUITE_P(Seeds, HbmControllerMix, ::testing::Values(1, 2, 3, 4));

TEST_P(HbmControllerMix, NoRequestLostOrDuplicated) {
  std::mt19937_64 rng(GetParam());
  const auto sets = testing::standard_timing_sets();
  const Timing t = sets[GetParam() % sets.size()];
  ControllerConfig cfg;
  cfg.queue_depth = 8 + static_cast<uint32_t>(rng() % 57);
  cfg.write_high_watermark = 1 + static_cast<uint32_t>(rng() % cfg.queue_depth);
  cfg.write_low_watermark = static_cast<uint32_t>(rng() % (cfg.write_high_watermark + 1));
  cfg.refresh_enabled = (GetParam() % 2) == 1;
  Harness h(t, cfg);
  const uint64_t N = 20000;
  std::unordered_map<uint64_t, std::pair<uint64_t, Request>> sent_reqs;
  uint64_t sent = 0;
  while (h.done_.size() < N) {
    while (sent < N && h.ctrl_.can_accept() && rng() % 4 != 0) {
      Request r;
      r.id = 1000 + sent * 3;  // ids need not be dense
      r.is_write = rng() % 3 == 0;
      const uint32_t bursts = 1 + static_cast<uint32_t>(rng() % 4);
      r.addr = h.addr(static_cast<uint32_t>(rng() % 2), static_cast<uint32_t>(rng() % 4),
                      static_cast<uint32_t>(rng() % 4), static_cast<uint32_t>(rng() % 8),
                      static_cast<uint32_t>(rng() % (h.org_.columns - bursts + 1)));
      r.bursts = bursts;
      r.arrival_cycle = h.ctrl_.last_cycle() + (rng() % 3 == 0 ? rng() % 200 : 0);
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
}

TEST(HbmController, RejectsBadRequestsWithoutChangingState) {
  const Timing t = testing::hbm2_1760();
  ControllerConfig cfg;
  cfg.queue_depth = 2;
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
  h.read(1, a, 0);
  h.read(2, a, 0);
  EXPECT_FALSE(h.ctrl_.can_accept());
  EXPECT_THROW(h.read(3, a, 0), std::logic_error);
  h.run_until_idle();
  EXPECT_EQ(h.done_.size(), 2u);
  std::vector<Completion> out;
  EXPECT_THROW(h.ctrl_.advance(h.ctrl_.last_cycle() - 1, out), std::logic_error);
}

TEST(HbmController, RejectsBadConfiguration) {
  const Timing t = testing::hbm2_1760();
  ControllerConfig cfg;
  cfg.write_low_watermark = 50;
  cfg.write_high_watermark = 40;
  EXPECT_THROW(ChannelController(Organization{}, t, cfg, 0), std::invalid_argument);
  EXPECT_THROW(ChannelController(Organization{}, t, ControllerConfig{}, 32), std::invalid_argument);
  ControllerConfig q0;
  q0.queue_depth = 0;
  EXPECT_THROW(ChannelController(Organization{}, t, q0, 0), std::invalid_argument);
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

TEST(HbmControllerSpeed, RandomReads64B) {
  const Timing t = testing::hbm2e_3200();
  const uint64_t N = 300000;
  const StreamResult r = stream(t, N, true);
  report_speed("random 64 B reads", t, r, N);
  RecordProperty("requests_per_second", std::to_string(static_cast<uint64_t>(N / r.seconds)));
  EXPECT_EQ(r.stats.reads, N);
}

}  // namespace
}  // namespace hpusim::hbm
