// write_chrome_json: the output parses as JSON (Boost.PropertyTree) and holds exactly the events
// that were recorded, with microsecond timestamps and escaped strings.
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <cstdio>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/traces/trace_test_util.h"
#include "traces/trace_writer.h"

namespace hpusim::traces {
namespace {

using boost::property_tree::ptree;
using testing::temp_path;

ptree parse_json_file(const std::string& path) {
  ptree root;
  boost::property_tree::read_json(path, root);  // throws on malformed JSON
  return root;
}

std::vector<ptree> events_of(const ptree& root) {
  std::vector<ptree> out;
  for (const auto& kv : root.get_child("traceEvents")) {
    EXPECT_TRUE(kv.first.empty()) << "traceEvents must be an array";
    out.push_back(kv.second);
  }
  return out;
}

struct Recorded {
  TrackId main = 0, q1 = 0, q2 = 0;
  FlowId flow = 0;
  std::string odd_name;
};

Recorded record(TraceWriter& w) {
  Recorded r;
  const TrackId host = w.process_track(1, "host");
  r.main = w.thread_track(host, 2, "main");
  const TrackId dev = w.process_track(3, "dev");
  r.q1 = w.named_track(dev, "q");
  r.q2 = w.named_track(dev, "q");
  const TrackId bw = w.counter_track(dev, "bw", "GB/s");
  const TrackId power = w.counter_track(kNoTrack, "power", "W");
  r.flow = w.new_flow_id();
  r.odd_name = std::string("quote\" back\\ nl\n tab\t ctl\x01 micro\xc2\xb5 bad\xff end");

  w.begin_slice(r.main, 1234567, "step", {{"bytes", std::numeric_limits<std::uint64_t>::max()},
                                          {"neg", -4},
                                          {"frac", 0.1},
                                          {"ok", false},
                                          {"text", r.odd_name}});
  w.begin_slice(r.main, 1300000, r.odd_name, {}, {r.flow});
  w.end_slice(r.main, 1400000);
  w.instant(r.main, 1500000, "mark");
  w.end_slice(r.main, 2000000);
  w.complete_slice(r.q1, 1350000, 1700000, "work", {}, {}, {r.flow});
  w.complete_slice(r.q2, 10, 20, "other");
  w.begin_slice(r.q2, 30, "never ends");
  w.counter(bw, 0, 1.5);
  w.counter(bw, 1000, 2.5);
  w.counter(power, 1000, 100.0);
  return r;
}

TEST(TraceChromeJsonTest, ParsesAndHoldsEveryEvent) {
  TraceWriter w;
  const Recorded r = record(w);
  const std::string path = temp_path(".json");
  w.write_chrome_json(path);
  const ptree root = parse_json_file(path);
  EXPECT_EQ(root.get<std::string>("displayTimeUnit"), "ns");
  const std::vector<ptree> events = events_of(root);

  std::map<std::string, int> by_phase;
  for (const ptree& e : events) ++by_phase[e.get<std::string>("ph")];
  // Metadata: name + sort index for 2 processes, the "global" pseudo-process (root-level counter
  // "power") and 3 thread-like tracks (main, q, q).
  EXPECT_EQ(by_phase["M"], 2 * 3 + 2 * 3);
  EXPECT_EQ(by_phase["B"], 5);
  EXPECT_EQ(by_phase["E"], 4);  // "never ends" has no end
  EXPECT_EQ(by_phase["i"], 1);
  EXPECT_EQ(by_phase["C"], 3);
  EXPECT_EQ(by_phase["s"], 1);
  EXPECT_EQ(by_phase["f"], 1);
  EXPECT_EQ(events.size(), 12u + 5 + 4 + 1 + 3 + 2);

  // Timestamps: microseconds with exactly three decimals, non-decreasing.
  const std::regex us("^[0-9]+\\.[0-9]{3}$");
  double last = -1;
  for (const ptree& e : events) {
    if (e.get<std::string>("ph") == "M") continue;
    const std::string ts = e.get<std::string>("ts");
    EXPECT_TRUE(std::regex_match(ts, us)) << ts;
    EXPECT_GE(std::stod(ts), last);
    last = std::stod(ts);
  }
  bool saw_step = false;
  for (const ptree& e : events) {
    if (e.get<std::string>("ph") == "B" && e.get<std::string>("name") == "step") {
      saw_step = true;
      EXPECT_EQ(e.get<std::string>("ts"), "1234.567");
      EXPECT_EQ(e.get<int>("pid"), 1);
      EXPECT_EQ(e.get<int>("tid"), 2);
      EXPECT_EQ(e.get<std::string>("args.bytes"), "18446744073709551615");
      EXPECT_EQ(e.get<std::string>("args.neg"), "-4");
      EXPECT_EQ(e.get<std::string>("args.frac"), "0.1");
      EXPECT_EQ(e.get<std::string>("args.ok"), "false");
    }
    if (e.get<std::string>("ph") == "B" && e.get<std::string>("name") == "other") {
      EXPECT_EQ(e.get<std::string>("ts"), "0.010");
    }
  }
  EXPECT_TRUE(saw_step);
  std::remove(path.c_str());
}

TEST(TraceChromeJsonTest, StringsAreEscaped) {
  TraceWriter w;
  const Recorded r = record(w);
  const std::string path = temp_path(".json");
  w.write_chrome_json(path);
  const std::string text = testing::read_all(path);
  EXPECT_NE(text.find("quote\\\" back\\\\ nl\\n tab\\t ctl\\u0001"), std::string::npos);
  const ptree root = parse_json_file(path);
  // Invalid UTF-8 (the lone 0xFF) becomes U+FFFD; everything else survives unchanged.
  std::string expected = r.odd_name;
  expected.replace(expected.find('\xff'), 1, "\xef\xbf\xbd");
  int found = 0;
  for (const ptree& e : events_of(root)) {
    if (e.get<std::string>("ph") == "B" && e.get<std::string>("name") == expected) ++found;
    if (e.get<std::string>("ph") == "B" && e.get<std::string>("name") == "step") {
      EXPECT_EQ(e.get<std::string>("args.text"), expected);
    }
  }
  EXPECT_EQ(found, 1);
  std::remove(path.c_str());
}

TEST(TraceChromeJsonTest, NamedTracksAreSeparateThreadsAndFlowsBind) {
  TraceWriter w;
  const Recorded r = record(w);
  std::ostringstream out;
  w.write_chrome_json(out);
  std::istringstream in(out.str());
  ptree root;
  boost::property_tree::read_json(in, root);

  std::map<std::string, std::vector<std::int64_t>> thread_tids;  // thread name -> tids
  std::int64_t work_tid = -1;
  std::int64_t other_tid = -1;
  const ptree* s = nullptr;
  const ptree* f = nullptr;
  const std::vector<ptree> events = events_of(root);
  for (const ptree& e : events) {
    const std::string ph = e.get<std::string>("ph");
    if (ph == "M" && e.get<std::string>("name") == "thread_name") {
      thread_tids[e.get<std::string>("args.name")].push_back(e.get<std::int64_t>("tid"));
    }
    if (ph == "B" && e.get<std::string>("name") == "work") work_tid = e.get<std::int64_t>("tid");
    if (ph == "B" && e.get<std::string>("name") == "other") other_tid = e.get<std::int64_t>("tid");
    if (ph == "s") s = &e;
    if (ph == "f") f = &e;
  }
  ASSERT_EQ(thread_tids["q"].size(), 2u);
  EXPECT_NE(thread_tids["q"][0], thread_tids["q"][1]);
  EXPECT_GE(thread_tids["q"][0], std::int64_t{1} << 30);
  EXPECT_EQ(thread_tids["main"], std::vector<std::int64_t>{2});
  EXPECT_EQ(work_tid, thread_tids["q"][0]);
  EXPECT_EQ(other_tid, thread_tids["q"][1]);

  ASSERT_NE(s, nullptr);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(s->get<FlowId>("id"), r.flow);
  EXPECT_EQ(f->get<FlowId>("id"), r.flow);
  EXPECT_EQ(s->get<std::string>("ts"), "1300.000");
  EXPECT_EQ(s->get<int>("tid"), 2);
  EXPECT_EQ(f->get<std::int64_t>("tid"), work_tid);
  EXPECT_EQ(f->get<std::string>("bp"), "e");
  EXPECT_EQ(s->get<std::string>("cat"), f->get<std::string>("cat"));
}

TEST(TraceChromeJsonTest, EmptyAndDisabledWritersGiveValidJson) {
  for (bool enabled : {true, false}) {
    TraceWriter w(enabled);
    w.process_track(1, "p");
    std::ostringstream out;
    w.write_chrome_json(out);
    std::istringstream in(out.str());
    ptree root;
    ASSERT_NO_THROW(boost::property_tree::read_json(in, root)) << out.str();
    EXPECT_EQ(events_of(root).size(), enabled ? 2u : 0u);
  }
}

}  // namespace
}  // namespace hpusim::traces
