// read_perfetto on damaged and hand-built inputs, and an independent check with protoc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

using testing::read_all;
using testing::temp_path;
using testing::write_all;
namespace pb = ::perfetto::protos;

// A small valid trace as bytes.
std::string small_trace() {
  TraceWriter w;
  const TrackId p = w.process_track(10, "proc");
  const TrackId t = w.thread_track(p, 11, "thr");
  const TrackId c = w.counter_track(p, "queue depth", "entries");
  w.begin_slice(t, 100, "outer", {{"k", "v"}});
  w.complete_slice(t, 120, 180, "inner", {{"x", 1.5}});
  w.end_slice(t, 200);
  w.counter(c, 150, 3.0);
  w.instant(t, 210, "done");
  std::ostringstream out;
  w.write_perfetto(out);
  return out.str();
}

// Byte offsets where a packet ends (a cut there leaves a shorter but valid trace).
std::vector<std::size_t> packet_boundaries(const std::string& bytes) {
  std::vector<std::size_t> ends;
  std::size_t off = 0;
  while (off < bytes.size()) {
    ++off;  // tag 0x0A
    std::uint64_t len = 0;
    int shift = 0;
    unsigned char b = 0;
    do {
      b = static_cast<unsigned char>(bytes[off++]);
      len |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      shift += 7;
    } while (b & 0x80);
    off += len;
    ends.push_back(off);
  }
  return ends;
}

std::string serialize(const pb::Trace& trace) {
  std::string bytes;
  trace.SerializeToString(&bytes);
  return bytes;
}

void expect_runtime_error_containing(const std::string& bytes, const std::string& needle) {
  try {
    parse_perfetto(bytes, "test input");
    FAIL() << "no exception; expected one containing '" << needle << "'";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test input"), std::string::npos) << e.what();
  }
}

TEST(TraceReaderTest, ReadsTheSmallTrace) {
  const TraceModel m = parse_perfetto(small_trace());
  ASSERT_EQ(m.tracks.size(), 3u);
  const TrackInfo* thr = m.find_track("thr");
  ASSERT_NE(thr, nullptr);
  const auto slices = m.slices_on(thr->uuid);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[1]->name, "inner");
  EXPECT_EQ(slices[1]->depth, 1u);
  EXPECT_EQ(m.instants.size(), 1u);
  EXPECT_EQ(m.instants[0].depth, 0u);
  const TrackInfo* proc = m.find_track("proc");
  ASSERT_NE(proc, nullptr);
  EXPECT_EQ(m.children(proc->uuid).size(), 2u);
  EXPECT_EQ(m.find_track("queue depth")->pid, 10);
  EXPECT_EQ(m.find_track("nope"), nullptr);
  EXPECT_EQ(m.track(12345), nullptr);
  EXPECT_TRUE(m.flow_slices(1).empty());
}

TEST(TraceReaderTest, EveryTruncationIsRejectedOrAShorterValidTrace) {
  const std::string bytes = small_trace();
  const std::vector<std::size_t> ends = packet_boundaries(bytes);
  ASSERT_EQ(ends.back(), bytes.size());
  int rejected = 0;
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    const std::string part = bytes.substr(0, cut);
    const bool at_boundary = std::find(ends.begin(), ends.end(), cut) != ends.end();
    if (cut == 0 || !at_boundary) {
      EXPECT_THROW(parse_perfetto(part), std::runtime_error) << "cut at " << cut;
      ++rejected;
    } else {
      // A whole number of packets: valid, though it may lack slice ends or later packets.
      EXPECT_NO_THROW(parse_perfetto(part)) << "cut at " << cut;
    }
  }
  EXPECT_GT(rejected, static_cast<int>(bytes.size() / 2));
  expect_runtime_error_containing(bytes.substr(0, bytes.size() - 1), "truncated");
}

TEST(TraceReaderTest, TruncatedFileOnDiskThrows) {
  const std::string bytes = small_trace();
  const std::string path = temp_path(".pftrace");
  write_all(path, bytes.substr(0, bytes.size() - 3));
  try {
    read_perfetto(path);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(TraceReaderTest, GarbageAndMissingFilesThrow) {
  expect_runtime_error_containing("", "empty");
  expect_runtime_error_containing("this is not a perfetto trace", "not a Perfetto trace");
  expect_runtime_error_containing(std::string("\x0a\x05\xff\xff\xff\xff\xff", 7),
                                  "not a valid TracePacket");
  expect_runtime_error_containing(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11),
                                  "truncated");
  // A deterministic pseudo-random blob.
  std::string noise;
  std::uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) {
    x = x * 1664525u + 1013904223u;
    noise.push_back(static_cast<char>(x >> 24));
  }
  EXPECT_THROW(parse_perfetto(noise), std::runtime_error);
  EXPECT_THROW(read_perfetto("/nonexistent-dir-hpusim/none.pftrace"), std::runtime_error);
}

TEST(TraceReaderTest, EventBeforeItsDescriptorIsRejected) {
  pb::Trace trace;
  pb::TracePacket* ev = trace.add_packet();
  ev->set_trusted_packet_sequence_id(1);
  ev->set_timestamp(5);
  ev->mutable_track_event()->set_type(pb::TrackEvent::TYPE_INSTANT);
  ev->mutable_track_event()->set_track_uuid(42);
  ev->mutable_track_event()->set_name("early");
  pb::TracePacket* d = trace.add_packet();
  d->set_trusted_packet_sequence_id(1);
  d->mutable_track_descriptor()->set_uuid(42);
  d->mutable_track_descriptor()->set_name("t");
  expect_runtime_error_containing(serialize(trace), "precedes its descriptor");

  pb::Trace undeclared;
  *undeclared.add_packet() = trace.packet(0);
  expect_runtime_error_containing(serialize(undeclared), "undeclared track");
}

TEST(TraceReaderTest, UnbalancedEndAndBadEventsAreRejected) {
  pb::Trace trace;
  pb::TracePacket* d = trace.add_packet();
  d->mutable_track_descriptor()->set_uuid(1);
  d->mutable_track_descriptor()->set_name("lonely");
  pb::TracePacket* e = trace.add_packet();
  e->set_timestamp(10);
  e->mutable_track_event()->set_type(pb::TrackEvent::TYPE_SLICE_END);
  e->mutable_track_event()->set_track_uuid(1);
  expect_runtime_error_containing(serialize(trace), "SLICE_END with no open slice");

  e->mutable_track_event()->set_type(pb::TrackEvent::TYPE_COUNTER);
  e->mutable_track_event()->set_double_counter_value(1.0);
  expect_runtime_error_containing(serialize(trace), "non-counter track");

  e->mutable_track_event()->set_type(pb::TrackEvent::TYPE_INSTANT);
  e->mutable_track_event()->set_name_iid(3);
  expect_runtime_error_containing(serialize(trace), "interned");

  e->clear_timestamp();
  expect_runtime_error_containing(serialize(trace), "without a timestamp");
}

TEST(TraceReaderTest, DecodesWithProtocAgainstTheSchema) {
  const char* src = HPUSIM_SOURCE_DIR;  // compiled in by hpusim_add_gtest
  if (!testing::file_exists(std::string(src) + "/traces/perfetto_trace.proto")) {
    GTEST_SKIP() << "no traces/perfetto_trace.proto under " << src;
  }
  if (std::system("command -v protoc > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "protoc is not on PATH";
  }
  const std::string trace_path = temp_path(".pftrace");
  const std::string text_path = temp_path(".txt");
  write_all(trace_path, small_trace());
  const std::string dir = std::string(src) + "/traces";
  const std::string cmd = "protoc --decode=perfetto.protos.Trace -I '" + dir + "' '" + dir +
                          "/perfetto_trace.proto' < '" + trace_path + "' > '" + text_path + "'";
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << cmd;
  const std::string text = read_all(text_path);
  EXPECT_NE(text.find("track_descriptor"), std::string::npos) << text;
  EXPECT_NE(text.find("TYPE_SLICE_BEGIN"), std::string::npos) << text;
  EXPECT_NE(text.find("\"inner\""), std::string::npos) << text;
  EXPECT_NE(text.find("trusted_packet_sequence_id: 1"), std::string::npos) << text;
  std::remove(trace_path.c_str());
  std::remove(text_path.c_str());
}

}  // namespace
}  // namespace hpusim::traces
