// The analyser on constructed traces with the names hpusim's layers write: per-step times against
// the intervals put in, the verdict, and guidance naming syncs, fallback ops and the constant a
// recompiling graph changes; the HTML and JSON reports.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/analyze/report_writers.h"
#include "traces/chrome_json_reader.h"
#include "traces/trace_writer.h"

namespace hpusim::analyze {
namespace {

using traces::Arg;
using traces::TrackId;
using traces::TraceWriter;

constexpr uint64_t kUs = 1000;

struct Scene {
  TraceWriter w;
  TrackId ops, api, ioctls, tpc0, tpc1, mme0, dma0;
  Scene() {
    const TrackId framework = w.process_track(1, "host: framework");
    ops = w.named_track(framework, "ops");
    api = w.named_track(w.process_track(2, "host: synapse"), "api");
    ioctls = w.named_track(w.process_track(3, "host: driver"), "ioctls");
    const TrackId device = w.process_track(4, "device (hl205)");
    tpc0 = w.named_track(device, "TPC0");
    tpc1 = w.named_track(device, "TPC1");
    mme0 = w.named_track(device, "MME0");
    dma0 = w.named_track(device, "DMA0 core");
  }
  // Through Chrome JSON and back, as `hpusim analyze` reads a file.
  Report analyze() const {
    std::ostringstream out;
    w.write_chrome_json(out);
    return hpusim::analyze::analyze(traces::parse_chrome_json(out.str(), "scene.json"), "scene.json");
  }
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// Steps of 1000 us: the host records 8 ops of 100 us, launches, and waits 50 us for 100 us of TPC work.
TEST(StepAnalysisTest, ATinyOpLoopIsHostBoundWithTheTimesPutIn) {
  Scene s;
  for (uint64_t step = 0; step < 3; ++step) {
    const uint64_t t = step * 1000 * kUs;
    for (uint64_t i = 0; i < 8; ++i) s.w.complete_slice(s.ops, t + i * 100 * kUs, t + (i + 1) * 100 * kUs, "record add");
    s.w.complete_slice(s.ops, t + 800 * kUs, t + 950 * kUs, "mark_step");
    s.w.complete_slice(s.api, t + 810 * kUs, t + 900 * kUs, "launch mark_step");
    s.w.complete_slice(s.tpc0, t + 900 * kUs, t + 1000 * kUs, "add_f32");
    s.w.complete_slice(s.ops, t + 950 * kUs, t + 1000 * kUs, "wait: synchronize");
    s.w.complete_slice(s.ops, t, t + 1000 * kUs, "step " + std::to_string(step));
  }
  const Report r = s.analyze();
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.first_steady, 1u);
  const StepMetrics& m = r.steps[1];
  EXPECT_EQ(m.duration_ns(), 1000 * kUs);
  EXPECT_EQ(m.host_wait_ns, 50 * kUs);
  EXPECT_EQ(m.host_busy_ns, 950 * kUs);
  EXPECT_EQ(m.device_busy_ns, 100 * kUs);
  EXPECT_EQ(m.idle_for_host_ns, 900 * kUs);
  EXPECT_EQ(m.ops, 8u);
  EXPECT_EQ(m.mark_steps, 1u);
  EXPECT_DOUBLE_EQ(m.engine_class_use.at("TPC"), 0.05);   // TPC0 10 %, TPC1 idle
  EXPECT_EQ(r.verdict, "host-bound");
  EXPECT_NE(joined(r.guidance).find("HPU graphs"), std::string::npos) << joined(r.guidance);
  EXPECT_NE(joined(r.guidance).find("raise the batch size"), std::string::npos);
  // Host costs are exclusive: op record 800 us, the flush's own walk 60 us, the launch 90 us.
  std::map<std::string, uint64_t> costs(r.top_host.begin(), r.top_host.end());
  EXPECT_EQ(costs.at("op record"), 800 * kUs);
  EXPECT_EQ(costs.at("launch"), 90 * kUs);
  EXPECT_EQ(costs.at("flush (graph walk)"), 60 * kUs);
  EXPECT_EQ(r.top_host.front().first, "op record");
}

TEST(StepAnalysisTest, ALargeGemmLoopIsDeviceBound) {
  Scene s;
  for (uint64_t step = 0; step < 3; ++step) {
    const uint64_t t = step * 1000 * kUs;
    s.w.complete_slice(s.ops, t, t + 50 * kUs, "record mm");
    s.w.complete_slice(s.mme0, t + 60 * kUs, t + 990 * kUs, "gemm 4096x4096x4096");
    s.w.complete_slice(s.ops, t + 100 * kUs, t + 1000 * kUs, "wait: synchronize");
    s.w.complete_slice(s.ops, t, t + 1000 * kUs, "step " + std::to_string(step));
  }
  const Report r = s.analyze();
  EXPECT_EQ(r.verdict, "device-bound");
  EXPECT_EQ(r.steady.device_busy_ns, 930 * kUs);
  EXPECT_EQ(r.steady.host_wait_ns, 900 * kUs);
  EXPECT_EQ(r.guidance.size(), 1u);
  EXPECT_NE(r.guidance[0].find("device is the bottleneck"), std::string::npos);
  std::map<std::string, double> use;
  for (const EngineUse& e : r.engines) use[e.instance] = e.busy_fraction;
  EXPECT_DOUBLE_EQ(use.at("MME0"), 0.93);
  EXPECT_DOUBLE_EQ(use.at("TPC0"), 0.0);   // an engine with no work counts as idle
  EXPECT_DOUBLE_EQ(r.steady.engine_class_use.at("MME"), 0.93);
}

TEST(StepAnalysisTest, SyncsFallbacksAndARecompilingConstantAreNamed) {
  Scene s;
  for (uint64_t step = 0; step < 3; ++step) {
    const uint64_t t = step * 1000 * kUs;
    s.w.complete_slice(s.ops, t, t + 100 * kUs, "record mul");
    char scalar[32];
    std::snprintf(scalar, sizeof scalar, "mul_f32(%.9g) add_f32", 1.5 + 0.25 * static_cast<double>(step));
    s.w.complete_slice(s.api, t + 100 * kUs, t + 300 * kUs, "compile",
                       {{"graph", std::string("mark_step")}, {"nodes", uint64_t{2}}, {"nodes and constants", std::string(scalar)}});
    s.w.complete_slice(s.ops, t + 300 * kUs, t + 400 * kUs, "cpu fallback aten::cumsum");
    s.w.complete_slice(s.ops, t + 400 * kUs, t + 450 * kUs, "wait: fallback copy to host");
    for (uint64_t k = 0; k < 2; ++k) {
      s.w.complete_slice(s.ops, t + (500 + 200 * k) * kUs, t + (600 + 200 * k) * kUs, "wait: copy to host");
    }
    s.w.complete_slice(s.tpc1, t + 500 * kUs, t + 600 * kUs, "mul_f32");
    s.w.complete_slice(s.ops, t, t + 1000 * kUs, "step " + std::to_string(step));
  }
  const Report r = s.analyze();
  EXPECT_EQ(r.steady.syncs, 2u);
  EXPECT_EQ(r.steady.compiles, 1u);
  EXPECT_EQ(r.fallbacks.at("cumsum"), 3u);
  ASSERT_EQ(r.recompiles.size(), 1u);
  EXPECT_EQ(r.recompiles[0].graph, "mark_step");
  EXPECT_EQ(r.recompiles[0].compiles, 2u);
  EXPECT_EQ(r.recompiles[0].change, "a constant of node #0 changed: mul_f32(1.75) -> mul_f32(2)");
  const std::string g = joined(r.guidance);
  EXPECT_NE(g.find("2 host synchronisations per step"), std::string::npos) << g;
  EXPECT_NE(g.find(".item()"), std::string::npos);
  EXPECT_NE(g.find("CPU fallbacks: cumsum (3x)"), std::string::npos) << g;
  EXPECT_NE(g.find("Graph 'mark_step' is compiled again"), std::string::npos) << g;
}

TEST(StepAnalysisTest, ATraceWithoutStepsIsOneStepAndAnEmptyOneIsAnError) {
  Scene s;
  s.w.complete_slice(s.ops, 0, 100 * kUs, "record add");
  s.w.complete_slice(s.dma0, 100 * kUs, 300 * kUs, "copy");
  const Report r = s.analyze();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].name, "whole trace");
  EXPECT_EQ(r.steps[0].device_busy_ns, 200 * kUs);
  EXPECT_DOUBLE_EQ(r.steady.engine_class_use.at("DMA"), 2.0 / 3.0);
  EXPECT_THROW(analyze(traces::TraceModel{}, "empty"), std::runtime_error);
}

TEST(StepAnalysisTest, ReportsAreWellFormed) {
  Scene s;
  s.w.complete_slice(s.ops, 0, 100 * kUs, "record <add> & \"mul\"");
  s.w.complete_slice(s.tpc0, 100 * kUs, 150 * kUs, "add_f32");
  s.w.complete_slice(s.ops, 0, 200 * kUs, "step 0");
  const Report r = s.analyze();
  std::ostringstream html, json, text;
  write_html(r, html);
  write_json(r, json);
  write_text(r, text);
  EXPECT_EQ(html.str().rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.str().find("<svg"), std::string::npos);
  EXPECT_EQ(html.str().find("<script"), std::string::npos);   // self-contained, nothing to run
  EXPECT_EQ(html.str().find("http://") , html.str().find("http://www.w3.org/2000/svg"));   // no external resource
  EXPECT_NE(json.str().find("\"verdict\": \"host-bound\""), std::string::npos) << json.str();
  EXPECT_NE(text.str().find("verdict: host-bound"), std::string::npos);
}

}  // namespace
}  // namespace hpusim::analyze
