// read_chrome_json / read_trace: hpusim's own Chrome JSON round-trips into the model read_perfetto
// gives; torch.profiler-style files (X events, string pids, counters) load; bad input is named.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "traces/chrome_json_reader.h"
#include "traces/trace_writer.h"

namespace hpusim::traces {
namespace {

std::string chrome_json(const TraceWriter& w) {
  std::ostringstream out;
  w.write_chrome_json(out);
  return out.str();
}

TEST(ChromeJsonReaderTest, HpusimsOwnTraceReadsBackWithNamesNestingArgsAndCounters) {
  TraceWriter w;
  const TrackId host = w.process_track(1, "host: framework");
  const TrackId ops = w.named_track(host, "ops");
  const TrackId dev = w.process_track(2, "device (hl205)");
  const TrackId tpc = w.named_track(dev, "TPC0");
  const TrackId bw = w.counter_track(dev, "HBM read", "GB/s");
  w.complete_slice(ops, 1000, 5000, "step 0");
  w.complete_slice(ops, 1500, 2500, "record add", {{"nodes", uint64_t{3}}});
  w.complete_slice(tpc, 2600, 4000, "add_f32");
  w.instant(ops, 4500, "marker");
  w.counter(bw, 2600, 812.5);
  const TraceModel m = parse_chrome_json(chrome_json(w), "t.json");
  const TrackInfo* t = m.find_track("TPC0");
  ASSERT_NE(t, nullptr);
  const TrackInfo* p = m.track(t->parent);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "device (hl205)");
  ASSERT_EQ(m.slices_on(t->uuid).size(), 1u);
  EXPECT_EQ(m.slices_on(t->uuid)[0]->name, "add_f32");
  EXPECT_EQ(m.slices_on(t->uuid)[0]->start_ns, 2600u);
  EXPECT_EQ(m.slices_on(t->uuid)[0]->end_ns, 4000u);
  const auto host_slices = m.slices_on(m.find_track("ops")->uuid);
  ASSERT_EQ(host_slices.size(), 2u);
  EXPECT_EQ(host_slices[1]->name, "record add");
  EXPECT_EQ(host_slices[1]->depth, 1u);
  ASSERT_EQ(host_slices[1]->args.size(), 1u);
  EXPECT_EQ(host_slices[1]->args[0], Arg("nodes", uint64_t{3}));
  ASSERT_EQ(m.instants.size(), 1u);
  ASSERT_EQ(m.counters.size(), 1u);
  EXPECT_DOUBLE_EQ(m.counters[0].value, 812.5);
  EXPECT_EQ(m.track(m.counters[0].track)->name, "HBM read");
}

TEST(ChromeJsonReaderTest, ProfilerStyleEventsLoad) {
  const std::string text = R"([
    {"ph":"M","name":"process_name","pid":"Spans","tid":0,"args":{"name":"python"}},
    {"ph":"X","name":"ProfilerStep#3","pid":"Spans","tid":"7","ts":10.5,"dur":100},
    {"ph":"X","name":"aten::add","pid":"Spans","tid":"7","ts":20,"dur":5,"args":{"Input Dims":[[2,2]]}},
    {"ph":"C","name":"Memory","pid":1,"ts":30,"args":{"allocated":4096}},
    {"ph":"s","id":1,"pid":1,"tid":1,"ts":1}])";
  const TraceModel m = parse_chrome_json(text, "p.json");
  ASSERT_EQ(m.slices.size(), 2u);
  EXPECT_EQ(m.slices[0].start_ns, 10500u);
  EXPECT_EQ(m.slices[0].end_ns, 110500u);
  EXPECT_EQ(m.slices[1].depth, 1u);
  EXPECT_EQ(m.track(m.track(m.slices[0].track)->parent)->name, "python");
  ASSERT_EQ(m.counters.size(), 1u);
  EXPECT_EQ(m.track(m.counters[0].track)->name, "Memory allocated");
}

TEST(ChromeJsonReaderTest, BadInputIsNamed) {
  const auto message = [](const std::string& text) {
    try {
      parse_chrome_json(text, "bad.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{\"traceEvents\": [").find("bad.json: not JSON"), std::string::npos);
  EXPECT_NE(message("{\"events\": []}").find("not a Chrome trace"), std::string::npos);
  EXPECT_NE(message("[{\"name\":\"x\"}]").find("event #0: not an event object with a \"ph\""), std::string::npos);
  EXPECT_NE(message("[{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":5}]").find("\"E\" with no open slice"), std::string::npos);
  EXPECT_NE(message("[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":-5,\"dur\":1}]").find("negative"), std::string::npos);
}

TEST(ChromeJsonReaderTest, ReadTracePicksTheFormatFromTheFile) {
  TraceWriter w;
  const TrackId p = w.process_track(1, "host");
  w.complete_slice(w.named_track(p, "ops"), 10, 20, "x");
  const std::string dir = ::testing::TempDir();
  w.write_chrome_json(dir + "/a.json");
  w.write_perfetto(dir + "/a.pftrace");
  EXPECT_EQ(read_trace(dir + "/a.json").slices.at(0).name, "x");
  EXPECT_EQ(read_trace(dir + "/a.pftrace").slices.at(0).name, "x");
  std::ofstream(dir + "/empty.json").close();
  EXPECT_THROW(read_trace(dir + "/empty.json"), std::runtime_error);
  EXPECT_THROW(read_trace(dir + "/missing.json"), std::runtime_error);
}

}  // namespace
}  // namespace hpusim::traces
