// TraceWriter -> write_perfetto -> read_perfetto round trips and writer-side error handling.
#include <gtest/gtest.h>

#include <cstdio>
#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "perfetto_trace.pb.h"
#include "tests/traces/trace_test_util.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace hpusim::traces {
namespace {

using testing::file_exists;
using testing::read_all;
using testing::temp_path;
namespace pb = ::perfetto::protos;

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

// Everything a TraceWriter can record, with known values.
struct Sample {
  TrackId host = 0, host_thread = 0, device = 0, dma = 0, mme = 0, hbm = 0, power = 0;
  FlowId launch_flow = 0;
};

Sample record_sample(TraceWriter& w) {
  Sample s;
  s.host = w.process_track(100, "host");
  s.host_thread = w.thread_track(s.host, 101, "python");
  s.device = w.process_track(200, "hpu0");
  s.dma = w.named_track(s.device, "DMA queue 0");
  s.mme = w.named_track(s.device, "MME");
  s.hbm = w.counter_track(s.device, "HBM read", "GB/s");
  s.power = w.counter_track(kNoTrack, "power", "W");
  s.launch_flow = w.new_flow_id();

  // Nested host slices: step > launch > ioctl.
  w.begin_slice(s.host_thread, 1000, "step", {{"step", std::int64_t{-3}}});
  w.begin_slice(s.host_thread, 1200, "launch",
                {{"bytes", kU64Max}, {"ratio", 0.125}, {"sync", true}, {"graph", "g \"1\"\n"}},
                {s.launch_flow});
  w.begin_slice(s.host_thread, 1300, "ioctl");
  w.end_slice(s.host_thread, 1400);
  w.end_slice(s.host_thread, 1500);
  w.instant(s.host_thread, 1600, "mark_step", {{"n", 7}});
  w.end_slice(s.host_thread, 5000);

  // Device work caused by the launch: the flow ends here.
  w.complete_slice(s.mme, 2000, 4000, "gemm", {{"flops", std::uint64_t{1} << 40}}, {},
                   {s.launch_flow});
  w.complete_slice(s.dma, 1800, 2100, "h2d");
  w.counter(s.hbm, 2000, 812.5);
  w.counter(s.hbm, 4000, 0.0);
  w.counter(s.power, 0, 150.25);
  return s;
}

TEST(TraceWriterTest, RoundTripsEveryRecordKind) {
  TraceWriter w;
  const Sample ids = record_sample(w);
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);
  const TraceModel m = read_perfetto(path);

  // Tracks.
  ASSERT_EQ(m.tracks.size(), 7u);
  const TrackInfo* host = m.track(ids.host);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->kind, TrackKind::kProcess);
  EXPECT_EQ(host->name, "host");
  EXPECT_EQ(host->pid, 100);
  const TrackInfo* thread = m.track(ids.host_thread);
  ASSERT_NE(thread, nullptr);
  EXPECT_EQ(thread->kind, TrackKind::kThread);
  EXPECT_EQ(thread->name, "python");
  EXPECT_EQ(thread->pid, 100);
  EXPECT_EQ(thread->tid, 101);
  EXPECT_EQ(thread->parent, ids.host);
  const TrackInfo* mme = m.find_track("MME");
  ASSERT_NE(mme, nullptr);
  EXPECT_EQ(mme->uuid, ids.mme);
  EXPECT_EQ(mme->kind, TrackKind::kNamed);
  EXPECT_EQ(mme->parent, ids.device);
  EXPECT_EQ(mme->pid, 200);
  EXPECT_TRUE(mme->merge_none);
  const TrackInfo* hbm = m.find_track("HBM read", ids.device);
  ASSERT_NE(hbm, nullptr);
  EXPECT_EQ(hbm->kind, TrackKind::kCounter);
  EXPECT_EQ(hbm->unit_name, "GB/s");
  const TrackInfo* power = m.find_track("power", kNoTrack);
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(power->kind, TrackKind::kCounter);
  EXPECT_EQ(power->pid, 0);
  EXPECT_EQ(power->unit_name, "W");

  // Nested slices on the host thread, with depth and args of every type.
  const auto host_slices = m.slices_on(ids.host_thread);
  ASSERT_EQ(host_slices.size(), 3u);
  EXPECT_EQ(host_slices[0]->name, "step");
  EXPECT_EQ(host_slices[0]->start_ns, 1000u);
  EXPECT_EQ(host_slices[0]->end_ns, 5000u);
  EXPECT_TRUE(host_slices[0]->closed);
  EXPECT_EQ(host_slices[0]->depth, 0u);
  EXPECT_EQ(host_slices[0]->args, (std::vector<Arg>{{"step", std::int64_t{-3}}}));
  EXPECT_EQ(host_slices[1]->name, "launch");
  EXPECT_EQ(host_slices[1]->start_ns, 1200u);
  EXPECT_EQ(host_slices[1]->end_ns, 1500u);
  EXPECT_EQ(host_slices[1]->depth, 1u);
  ASSERT_EQ(host_slices[1]->args.size(), 4u);
  EXPECT_EQ(host_slices[1]->args[0], Arg("bytes", kU64Max));
  EXPECT_EQ(host_slices[1]->args[1], Arg("ratio", 0.125));
  EXPECT_EQ(host_slices[1]->args[2], Arg("sync", true));
  EXPECT_EQ(host_slices[1]->args[3], Arg("graph", "g \"1\"\n"));
  EXPECT_TRUE(std::holds_alternative<std::uint64_t>(host_slices[1]->args[0].value));
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(host_slices[0]->args[0].value));
  EXPECT_EQ(host_slices[2]->name, "ioctl");
  EXPECT_EQ(host_slices[2]->depth, 2u);
  EXPECT_EQ(host_slices[2]->duration_ns(), 100u);

  // Instant, inside "step" only.
  const auto instants = m.instants_on(ids.host_thread);
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]->name, "mark_step");
  EXPECT_EQ(instants[0]->ts_ns, 1600u);
  EXPECT_EQ(instants[0]->depth, 1u);
  EXPECT_EQ(instants[0]->args, (std::vector<Arg>{{"n", std::int64_t{7}}}));

  // Complete slices on named tracks.
  const auto mme_slices = m.slices_on(ids.mme);
  ASSERT_EQ(mme_slices.size(), 1u);
  EXPECT_EQ(mme_slices[0]->name, "gemm");
  EXPECT_EQ(mme_slices[0]->start_ns, 2000u);
  EXPECT_EQ(mme_slices[0]->end_ns, 4000u);
  EXPECT_EQ(mme_slices[0]->args, (std::vector<Arg>{{"flops", std::uint64_t{1} << 40}}));
  ASSERT_EQ(m.slices_on(ids.dma).size(), 1u);
  EXPECT_EQ(m.slices_on(ids.dma)[0]->end_ns, 2100u);

  // Counters.
  const auto hbm_samples = m.counters_on(ids.hbm);
  ASSERT_EQ(hbm_samples.size(), 2u);
  EXPECT_EQ(hbm_samples[0].ts_ns, 2000u);
  EXPECT_DOUBLE_EQ(hbm_samples[0].value, 812.5);
  EXPECT_EQ(hbm_samples[1].ts_ns, 4000u);
  EXPECT_DOUBLE_EQ(hbm_samples[1].value, 0.0);
  const auto power_samples = m.counters_on(ids.power);
  ASSERT_EQ(power_samples.size(), 1u);
  EXPECT_DOUBLE_EQ(power_samples[0].value, 150.25);

  // The flow links the host launch to the device gemm and terminates there.
  ASSERT_EQ(m.flows.size(), 1u);
  const auto linked = m.flow_slices(ids.launch_flow);
  ASSERT_EQ(linked.size(), 2u);
  EXPECT_EQ(linked[0]->name, "launch");
  EXPECT_EQ(linked[0]->track, ids.host_thread);
  EXPECT_EQ(linked[1]->name, "gemm");
  EXPECT_EQ(linked[1]->track, ids.mme);
  EXPECT_TRUE(m.flows.at(ids.launch_flow).terminated);
  EXPECT_EQ(linked[1]->terminating_flow_ids, std::vector<FlowId>{ids.launch_flow});
  EXPECT_TRUE(linked[1]->flow_ids.empty());
  std::remove(path.c_str());
}

TEST(TraceWriterTest, FlowChainThroughThreeTracks) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId a = w.named_track(p, "a");
  const TrackId b = w.named_track(p, "b");
  const TrackId c = w.named_track(p, "c");
  const FlowId f = w.new_flow_id();
  const FlowId g = w.new_flow_id();
  EXPECT_NE(f, g);
  // Recorded out of time order on purpose: arrows follow start times.
  w.complete_slice(c, 300, 400, "irq", {}, {}, {f});
  w.complete_slice(a, 0, 100, "launch", {}, {f, g});
  w.complete_slice(b, 150, 250, "kernel", {}, {f}, {g});
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);
  const TraceModel m = read_perfetto(path);
  const auto chain = m.flow_slices(f);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0]->name, "launch");
  EXPECT_EQ(chain[1]->name, "kernel");
  EXPECT_EQ(chain[2]->name, "irq");
  EXPECT_TRUE(m.flows.at(f).terminated);
  const auto direct = m.flow_slices(g);
  ASSERT_EQ(direct.size(), 2u);
  EXPECT_EQ(direct[0]->track, a);
  EXPECT_EQ(direct[1]->track, b);
  std::remove(path.c_str());
}

TEST(TraceWriterTest, IdenticalRecordingsGiveIdenticalBytes) {
  TraceWriter w1;
  TraceWriter w2;
  record_sample(w1);
  record_sample(w2);
  const std::string p1 = temp_path("_1.pftrace");
  const std::string p2 = temp_path("_2.pftrace");
  const std::string p3 = temp_path("_3.pftrace");
  w1.write_perfetto(p1);
  w2.write_perfetto(p2);
  w1.write_perfetto(p3);  // writing does not change the writer
  const std::string b1 = read_all(p1);
  EXPECT_FALSE(b1.empty());
  EXPECT_EQ(b1, read_all(p2));
  EXPECT_EQ(b1, read_all(p3));
  std::ostringstream stream;
  w2.write_perfetto(stream);
  EXPECT_EQ(b1, stream.str());
  for (const auto& p : {p1, p2, p3}) std::remove(p.c_str());
}

TEST(TraceWriterTest, DescriptorsPrecedeEventsAndPacketsAreSorted) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId early = w.named_track(p, "early");
  w.complete_slice(early, 50, 60, "x");
  // A track created after events were recorded still gets its descriptor first in the file.
  const TrackId late = w.named_track(p, "late");
  w.complete_slice(late, 10, 20, "y");
  const TrackId ctr = w.counter_track(p, "ctr");
  w.counter(ctr, 5, 1.0);
  w.instant(early, 70, "i");
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);

  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_all(path)));
  ASSERT_GT(trace.packet_size(), 0);
  EXPECT_EQ(trace.packet(0).sequence_flags(),
            static_cast<std::uint32_t>(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED));
  std::vector<std::uint64_t> declared;
  std::uint64_t last_ts = 0;
  int events = 0;
  for (const pb::TracePacket& packet : trace.packet()) {
    EXPECT_TRUE(packet.has_trusted_packet_sequence_id());
    EXPECT_EQ(packet.trusted_packet_sequence_id(), 1u);
    if (packet.has_track_descriptor()) {
      EXPECT_EQ(events, 0) << "descriptor after an event";
      declared.push_back(packet.track_descriptor().uuid());
    } else if (packet.has_track_event()) {
      ++events;
      const std::uint64_t uuid = packet.track_event().track_uuid();
      EXPECT_NE(std::find(declared.begin(), declared.end(), uuid), declared.end());
      EXPECT_GE(packet.timestamp(), last_ts) << "events not sorted by timestamp";
      last_ts = packet.timestamp();
    }
  }
  EXPECT_EQ(declared, (std::vector<std::uint64_t>{p, early, late, ctr}));
  EXPECT_EQ(events, 2 + 2 + 1 + 1);
  std::remove(path.c_str());
}

TEST(TraceWriterTest, SameNamedSiblingTracksStayDistinct) {
  TraceWriter w;
  const TrackId dev = w.process_track(7, "hpu0");
  const TrackId q1 = w.named_track(dev, "stream");
  const TrackId q2 = w.named_track(dev, "stream");
  EXPECT_NE(q1, q2);
  w.complete_slice(q1, 0, 10, "cs A");
  w.complete_slice(q2, 0, 10, "cs B");
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);

  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_all(path)));
  int merge_none = 0;
  for (const pb::TracePacket& packet : trace.packet()) {
    if (packet.has_track_descriptor() && packet.track_descriptor().name() == "stream") {
      EXPECT_EQ(packet.track_descriptor().sibling_merge_behavior(),
                pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
      ++merge_none;
    }
  }
  EXPECT_EQ(merge_none, 2);

  const TraceModel m = read_perfetto(path);
  const auto streams = m.find_tracks("stream");
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_NE(streams[0]->uuid, streams[1]->uuid);
  ASSERT_EQ(m.slices_on(q1).size(), 1u);
  ASSERT_EQ(m.slices_on(q2).size(), 1u);
  EXPECT_EQ(m.slices_on(q1)[0]->name, "cs A");
  EXPECT_EQ(m.slices_on(q2)[0]->name, "cs B");
  EXPECT_EQ(m.slices_on(q1)[0]->depth, 0u);
  EXPECT_EQ(m.slices_on(q2)[0]->depth, 0u);
  std::remove(path.c_str());
}

TEST(TraceWriterTest, EndWithoutBeginThrowsNamingTheTrack) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId t = w.named_track(p, "engine TPC3");
  try {
    w.end_slice(t, 10);
    FAIL() << "end_slice without begin did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("engine TPC3"), std::string::npos) << e.what();
  }
  w.begin_slice(t, 10, "k");
  w.end_slice(t, 20);
  EXPECT_THROW(w.end_slice(t, 30), std::logic_error);
  EXPECT_EQ(w.slice_count(), 1u);
}

TEST(TraceWriterTest, BadTimesAndOverlapsAreRejected) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId t = w.named_track(p, "t");
  w.begin_slice(t, 100, "outer");
  EXPECT_THROW(w.begin_slice(t, 50, "inner before outer"), std::logic_error);
  EXPECT_THROW(w.end_slice(t, 99), std::logic_error);  // before its start
  w.begin_slice(t, 110, "inner");
  w.end_slice(t, 200);
  EXPECT_THROW(w.end_slice(t, 150), std::logic_error);  // before the nested slice's end
  EXPECT_EQ(w.open_slice_count(t), 1u);
  w.end_slice(t, 200);
  EXPECT_EQ(w.open_slice_count(t), 0u);
  EXPECT_THROW(w.complete_slice(t, 10, 5, "backwards"), std::logic_error);

  // Partially overlapping complete slices cannot nest: writing fails and creates no file.
  const TrackId u = w.named_track(p, "u");
  w.complete_slice(u, 0, 100, "a");
  w.complete_slice(u, 50, 150, "b");
  const std::string path = temp_path(".pftrace");
  std::remove(path.c_str());
  try {
    w.write_perfetto(path);
    FAIL() << "overlap not detected";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("'u'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(file_exists(path));
}

TEST(TraceWriterTest, CompleteSlicesRecordedChildFirstNest) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId t = w.named_track(p, "t");
  // Post-order recording (children before their parent), back-to-back siblings, and zero-length
  // slices at the parent's end: one recorded before the parent (a child), one after (a sibling).
  w.complete_slice(t, 0, 40, "child1");
  w.complete_slice(t, 40, 100, "child2");
  w.complete_slice(t, 100, 100, "tick");
  w.complete_slice(t, 0, 100, "parent");
  w.complete_slice(t, 100, 100, "after");
  // Second track: a zero-length slice where one slice ends and another starts belongs to the one
  // that starts there (slices cover [start, end)).
  const TrackId u = w.named_track(p, "u");
  w.complete_slice(u, 0, 100, "prev");
  w.complete_slice(u, 100, 100, "zero");
  w.complete_slice(u, 100, 130, "next");
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);
  const TraceModel m = read_perfetto(path);
  std::map<std::string, const SliceInfo*> by_name;
  for (const SliceInfo& s : m.slices) by_name[s.name] = &s;
  ASSERT_EQ(by_name.size(), 8u);
  EXPECT_EQ(by_name["parent"]->depth, 0u);
  EXPECT_EQ(by_name["parent"]->end_ns, 100u);
  EXPECT_EQ(by_name["child1"]->depth, 1u);
  EXPECT_EQ(by_name["child1"]->end_ns, 40u);
  EXPECT_EQ(by_name["child2"]->depth, 1u);
  EXPECT_EQ(by_name["child2"]->start_ns, 40u);
  EXPECT_EQ(by_name["child2"]->end_ns, 100u);
  EXPECT_EQ(by_name["tick"]->depth, 1u);  // after child2 (recorded later), inside parent
  EXPECT_EQ(by_name["after"]->depth, 0u);
  EXPECT_EQ(by_name["prev"]->depth, 0u);
  EXPECT_EQ(by_name["next"]->depth, 0u);
  EXPECT_EQ(by_name["zero"]->depth, 1u);
  EXPECT_EQ(by_name["zero"]->track, u);
  for (const SliceInfo& s : m.slices) EXPECT_TRUE(s.closed) << s.name;
  // Slices come back in begin order: by start time, enclosing slices first.
  std::vector<std::string> t_order;
  for (const SliceInfo* s : m.slices_on(t)) t_order.push_back(s->name);
  EXPECT_EQ(t_order, (std::vector<std::string>{"parent", "child1", "child2", "tick", "after"}));
  std::remove(path.c_str());
}

TEST(TraceWriterTest, OpenSlicesAreWrittenWithoutEnd) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId t = w.thread_track(p, 2, "t");
  w.begin_slice(t, 5, "running");
  w.complete_slice(t, 6, 8, "done");
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);
  const TraceModel m = read_perfetto(path);
  const auto s = m.slices_on(t);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]->name, "running");
  EXPECT_FALSE(s[0]->closed);
  EXPECT_EQ(s[1]->name, "done");
  EXPECT_EQ(s[1]->depth, 1u);
  EXPECT_TRUE(s[1]->closed);
  std::remove(path.c_str());
}

TEST(TraceWriterTest, DisabledWriterRecordsNothing) {
  TraceWriter w = TraceWriter::disabled();
  EXPECT_FALSE(w.enabled());
  const TrackId p = w.process_track(1, "p");
  EXPECT_EQ(p, kNoTrack);
  EXPECT_EQ(w.named_track(p, "x"), kNoTrack);
  EXPECT_EQ(w.new_flow_id(), 0u);
  w.begin_slice(p, 0, "a");
  w.end_slice(p, 1);  // no throw: disabled calls do nothing
  w.counter(p, 0, 1.0);
  w.instant(p, 0, "i");
  EXPECT_EQ(w.track_count(), 0u);
  EXPECT_EQ(w.slice_count(), 0u);
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);
  const TraceModel m = read_perfetto(path);
  EXPECT_TRUE(m.tracks.empty());
  EXPECT_TRUE(m.slices.empty());
  EXPECT_EQ(m.packet_count, 1u);
  EXPECT_TRUE(TraceWriter().enabled());
  std::remove(path.c_str());
}

TEST(TraceWriterTest, InvalidTracksAndKindsAreRejected) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId c = w.counter_track(p, "c", "B");
  const TrackId n = w.named_track(p, "n");
  EXPECT_THROW(w.begin_slice(99, 0, "x"), std::invalid_argument);
  EXPECT_THROW(w.begin_slice(kNoTrack, 0, "x"), std::invalid_argument);
  EXPECT_THROW(w.begin_slice(c, 0, "x"), std::invalid_argument);
  EXPECT_THROW(w.instant(c, 0, "x"), std::invalid_argument);
  EXPECT_THROW(w.counter(n, 0, 1.0), std::invalid_argument);
  EXPECT_THROW(w.counter(c, 0, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  EXPECT_THROW(w.begin_slice(n, 0, "x", {}, {0}), std::invalid_argument);
  EXPECT_THROW(w.thread_track(n, 3, "not under a process"), std::invalid_argument);
  EXPECT_THROW(w.thread_track(p, 0, "tid 0"), std::invalid_argument);
  EXPECT_THROW(w.named_track(c, "under a counter"), std::invalid_argument);
  EXPECT_THROW(w.process_track(1, "same pid"), std::invalid_argument);
  EXPECT_THROW(w.process_track(0, "pid 0"), std::invalid_argument);
  w.thread_track(p, 3, "t");
  EXPECT_THROW(w.thread_track(p, 3, "same tid"), std::invalid_argument);
  EXPECT_EQ(w.track_count(), 4u);
  EXPECT_EQ(w.slice_count(), 0u);
  EXPECT_EQ(w.counter_sample_count(), 0u);
}

TEST(TraceWriterTest, UnwritablePathThrowsNamingThePath) {
  TraceWriter w;
  w.process_track(1, "p");
  const std::string path = "/nonexistent-dir-hpusim/sub/trace.pftrace";
  try {
    w.write_perfetto(path);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  try {
    w.write_chrome_json(path);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(TraceWriterTest, InvalidUtf8IsReplacedInThePerfettoOutput) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "proc\xff");
  const TrackId t = w.named_track(p, "ok \xc2\xb5s");
  w.complete_slice(t, 0, 1, std::string("bad\xc0\x80"), {{"s", std::string("x\xed\xa0\x80")}});
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);
  const TraceModel m = read_perfetto(path);
  ASSERT_NE(m.track(p), nullptr);
  EXPECT_EQ(m.track(p)->name, "proc\xef\xbf\xbd");
  EXPECT_EQ(m.track(t)->name, "ok \xc2\xb5s");  // valid UTF-8 is kept as is
  ASSERT_EQ(m.slices.size(), 1u);
  EXPECT_EQ(m.slices[0].name, "bad\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(m.slices[0].args[0], Arg("s", "x\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
  std::remove(path.c_str());
}

TEST(TraceWriterTest, SameTimestampAcrossTracksKeepsRecordingOrder) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "p");
  const TrackId late_track = w.named_track(p, "created first");
  const TrackId early_track = w.named_track(p, "created second");
  const FlowId f = w.new_flow_id();
  // Both slices start at 10: the one recorded first is the flow's source.
  w.complete_slice(early_track, 10, 20, "source", {}, {f});
  w.complete_slice(late_track, 10, 20, "destination", {}, {}, {f});
  const std::string path = temp_path(".pftrace");
  w.write_perfetto(path);
  const TraceModel m = read_perfetto(path);
  const auto chain = m.flow_slices(f);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0]->name, "source");
  EXPECT_EQ(chain[1]->name, "destination");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hpusim::traces

namespace hpusim::traces {
namespace {

TEST(TraceWriterTest, PausedDropsEventsKeepsTracksAndClearEventsEmptiesIt) {
  TraceWriter w;
  w.set_paused(true);
  EXPECT_FALSE(w.enabled());
  const TrackId p = w.process_track(1, "host");
  const TrackId t = w.named_track(p, "ops");
  ASSERT_NE(t, kNoTrack);   // tracks are made while paused: their ids stay valid
  w.complete_slice(t, 10, 20, "dropped");
  w.instant(t, 15, "dropped");
  EXPECT_EQ(w.slice_count() + w.instant_count(), 0u);
  w.set_paused(false);
  w.complete_slice(t, 30, 40, "kept");
  w.begin_slice(t, 50, "open");
  EXPECT_EQ(w.slice_count(), 2u);
  w.clear_events();
  EXPECT_EQ(w.slice_count(), 0u);
  EXPECT_EQ(w.open_slice_count(t), 0u);
  EXPECT_EQ(w.track_count(), 2u);
  w.complete_slice(t, 60, 70, "after");   // still usable
  EXPECT_EQ(w.slice_count(), 1u);
}

}  // namespace
}  // namespace hpusim::traces
