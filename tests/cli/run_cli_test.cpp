// `hpusim run` as a user runs it: the per-step table and JSON, a warm disk cache that compiles
// nothing in a second process, a corrupted cached recipe recompiled, run-to-run determinism, the
// trace, and usage errors.
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/program_run.h"
#include "traces/trace_reader.h"

namespace {

namespace fs = std::filesystem;

using hpusim::cli_testing::ProgramRun;
using hpusim::cli_testing::run_hpusim;
using hpusim::cli_testing::slurp;

std::string temp(const std::string& name) { return ::testing::TempDir() + "hpusim_run_" + name; }

std::vector<boost::property_tree::ptree> steps_of(const std::string& json_path) {
  boost::property_tree::ptree root;
  boost::property_tree::read_json(json_path, root);
  std::vector<boost::property_tree::ptree> steps;
  for (const auto& [key, step] : root) steps.push_back(step);
  return steps;
}


TEST(CliRun, MlpPrintsEveryStepAndWritesJsonAndTrace) {
  const std::string json = temp("mlp.json"), trace = temp("mlp_trace.json"), stats = temp("mlp.stats");
  const ProgramRun r = run_hpusim("run mlp --steps 3 --json " + json + " --trace " + trace + " --stats " + stats);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("hpusim run mlp on hl205: 3 steps"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 compiles"), std::string::npos) << r.output;
  const auto steps = steps_of(json);
  ASSERT_EQ(steps.size(), 3u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].get<std::string>("workload"), "mlp");
    EXPECT_EQ(steps[i].get<uint32_t>("step"), i);
    EXPECT_GT(steps[i].get<uint64_t>("device_ns"), 0u);
    EXPECT_GT(steps[i].get<double>("loss"), 0.0);
    EXPECT_GT(steps[i].get<double>("utilisation.tpc"), 0.0);
    EXPECT_GE(steps[i].get<double>("utilisation.mme"), 0.0);
    // The roofline's MME time: the step's GEMMs (784-128-10 at batch 200: forward, the weight
    // gradients and the hidden layer's input gradient) at hl205's 16384 MACs per cycle, 1830 MHz.
    const double macs = 2.0 * 200 * 784 * 128 + 3.0 * 200 * 128 * 10;
    EXPECT_NEAR(steps[i].get<double>("roofline.mme_ns"), macs / (16384 * 1.830), 1e-6 * macs);
    const double bound = steps[i].get<double>("roofline.bound_ns");
    EXPECT_DOUBLE_EQ(bound, std::max({steps[i].get<double>("roofline.mme_ns"), steps[i].get<double>("roofline.tpc_ns"),
                                      steps[i].get<double>("roofline.hbm_ns")}));
    EXPECT_GE(double(steps[i].get<uint64_t>("device_ns")), bound);   // no launch beats its roofline
    // When the engines ran: inside the launch, the MMEs at least as long as their peak needs, and
    // the overlap no longer than either.
    const double mme_active = steps[i].get<double>("engines_active.mme_ns");
    const double tpc_active = steps[i].get<double>("engines_active.tpc_ns");
    const double both = steps[i].get<double>("engines_active.both_ns");
    EXPECT_TRUE(steps[i].get<bool>("engines_active.complete"));
    EXPECT_GE(mme_active, steps[i].get<double>("roofline.mme_ns"));
    EXPECT_GT(tpc_active, 0.0);
    EXPECT_LE(std::max(mme_active, tpc_active), double(steps[i].get<uint64_t>("device_ns")));
    EXPECT_LE(both, std::min(mme_active, tpc_active));
    // The engines' span: at least each engine's active time, at most the launch (which adds the
    // submission before the first kernel and the completion after the last).
    const double span = steps[i].get<double>("engines_active.span_ns");
    EXPECT_GE(span, std::max(mme_active, tpc_active));
    EXPECT_LE(span, double(steps[i].get<uint64_t>("device_ns")));
    EXPECT_GE(span, mme_active + tpc_active - both);
    EXPECT_EQ(steps[i].get<uint64_t>("compiles"), i == 0 ? 1u : 0u);
    EXPECT_EQ(steps[i].get<uint64_t>("cache_hits"), i == 0 ? 0u : 1u);
    EXPECT_EQ(steps[i].get<uint64_t>("cache_misses"), i == 0 ? 1u : 0u);
  }
  // The first step compiles (modeled compile cost): host-bound; the others are not.
  EXPECT_GT(steps[0].get<uint64_t>("host_ns"), steps[1].get<uint64_t>("host_ns"));
  const std::string text = slurp(trace);
  EXPECT_NE(text.find("\"compile\""), std::string::npos);
  EXPECT_NE(text.find("\"recipe cache hit\""), std::string::npos);
  EXPECT_NE(text.find("\"launch mlp_step\""), std::string::npos);   // launches named by the graph
  // Engines by instance, TPC kernels named by the node's GUID, MME jobs by their dimensions,
  // bandwidth counters; no packet-level events by default.
  for (const char* name : {"\"TPC7\"", "\"MME2\"", "\"DMA0 core\"", "\"adadelta_f32\"", "\"gemm 200x128x784\"",
                           "\"HBM read\"", "\"PCIe to device\"", "\"step 2\""}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(text.find("\"WREG_32\""), std::string::npos);
  EXPECT_NE(text.find("host: synapse"), std::string::npos);
  EXPECT_NE(text.find("device: recipes"), std::string::npos);
  const std::string counters = slurp(stats);
  EXPECT_NE(counters.find("synapse.compiles 1 count"), std::string::npos) << counters.substr(0, 500);
  EXPECT_NE(counters.find("synapse.cache_hits 2 count"), std::string::npos);
  EXPECT_NE(counters.find("mme.engine0.jobs "), std::string::npos);
  EXPECT_NE(counters.find("tpc.core7.kernels "), std::string::npos);
  EXPECT_NE(counters.find("hbm.read_bytes "), std::string::npos);
  // Every block by path: each QMAN, DMA channel, sync manager and MMU, and the engines' totals.
  for (const char* key : {"qman.dma0_qm.packets", "qman.tpc7_qm.command_buffers", "dma.ch0.bytes", "dma.ch7.transfers",
                          "syncmgr.e_n.sob_writes", "mmu.tpc0.tlb_misses", "mmu.dma2.walks", "tpc.core7.busy_ps",
                          "mme.engine2.macs"}) {
    EXPECT_NE(counters.find(std::string("\n") + key + " "), std::string::npos) << key;
  }
}

TEST(CliRun, PacketDetailIsOptInAndTheAnalyserReadsTheTrace) {
  const std::string trace = temp("detail.json"), packets = temp("detail_packets.json"), report = temp("detail.html");
  ASSERT_EQ(run_hpusim("run mlp --steps 3 -q --trace " + trace).exit_code, 0);
  const ProgramRun p = run_hpusim("run mlp --steps 3 -q --trace-detail packets --trace " + packets);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const std::string lean = slurp(trace), full = slurp(packets);
  EXPECT_NE(full.find("\"WREG_32\""), std::string::npos);
  EXPECT_NE(full.find("\"SOB "), std::string::npos);
  EXPECT_GT(full.size(), 5 * lean.size());
  // The zoo's steps: the first compiles (warm-up), the steady ones are the analyser's.
  const ProgramRun a = run_hpusim("analyze " + trace + " --html " + report);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("3 steps (the first is warm-up)"), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("verdict: "), std::string::npos);
  EXPECT_NE(a.output.find("MME0"), std::string::npos);
  EXPECT_NE(slurp(report).find("<svg"), std::string::npos);
  // The same trace as Perfetto gives the same report.
  const std::string pftrace = temp("detail.pftrace");
  ASSERT_EQ(run_hpusim("run mlp --steps 3 -q --trace " + pftrace).exit_code, 0);
  const ProgramRun b = run_hpusim("analyze " + pftrace);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(a.output.substr(a.output.find("\n")), b.output.substr(b.output.find("\n")) + "\nHTML report: " + report + "\n");
  const ProgramRun bad = run_hpusim("run mlp --steps 1 --trace-detail everything");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--trace-detail 'everything': default or packets"), std::string::npos) << bad.output;
  const ProgramRun missing = run_hpusim("analyze " + temp("no_such_trace.json"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("cannot open trace"), std::string::npos) << missing.output;
}

// The conv block's dgamma / dbeta is one node of three kernels (row chunks, then two sums of the
// partials on two cores): the TPC tracks (hl205: 8) name them by the layernorm node, the
// forward's two pool sums by their own reduce_sum nodes, and nothing by address.
TEST(CliRun, KernelsAreNamedByTheNodeWhoseOwnKernelTheyAre) {
  const std::string trace = temp("conv_block_kernels.pftrace");
  const ProgramRun r = run_hpusim("run conv-block --steps 2 -q --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const hpusim::traces::TraceModel model = hpusim::traces::read_perfetto(trace);
  size_t gamma_beta = 0, pool_sums = 0, unnamed = 0;
  for (const auto& s : model.slices) {
    if (model.track(s.track)->name.rfind("TPC", 0) != 0 || model.track(s.track)->name.find("QM") != std::string::npos)
      continue;
    gamma_beta += s.name == "layernorm_bwd_gamma_beta_f32" ? 1 : 0;
    pool_sums += s.name == "reduce_sum_fwd_f32" ? 1 : 0;
    unnamed += s.name.rfind("kernel @", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(gamma_beta, 2u * (8 + 2)) << "a step: the chunk kernel on 8 cores and the sums of its partials on 2";
  EXPECT_EQ(pool_sums, 2u * (8 + 8)) << "a step: the pool's two sums, each on 8 cores";
  EXPECT_EQ(unnamed, 0u);
}

// Each launch is one flow: the host's launch slice, the driver's CS ioctl, the launch on the
// device, the card's command buffers that run its external jobs, the completion interrupt, and the
// wait that saw it complete. The launch's device time runs from the ioctl's return (its doorbells
// rung) to the completion MSI's arrival: the ioctl and the interrupt's handling are host time.
TEST(CliRun, EachLaunchIsOneFlowFromTheHostThroughTheCardToTheWaitingHost) {
  const std::string trace = temp("flows.pftrace"), json = temp("flows.json");
  const ProgramRun r = run_hpusim("run mlp --steps 3 -q --trace " + trace + " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const hpusim::traces::TraceModel model = hpusim::traces::read_perfetto(trace);
  size_t launches = 0;
  std::vector<uint64_t> device_ns;
  for (const auto& s : model.slices) {
    if (s.name != "launch mlp_step" || s.flow_ids.empty() || model.track(s.track)->name.rfind("api", 0) != 0) continue;
    ++launches;
    const auto& flow = model.flows.at(s.flow_ids[0]);
    std::vector<std::string> chain;
    for (const auto* f : model.flow_slices(s.flow_ids[0])) chain.push_back(model.track(f->track)->name + ": " + f->name);
    std::string text;
    for (const auto& c : chain) text += c + " | ";
    ASSERT_GE(chain.size(), 6u) << text;
    EXPECT_EQ(chain.front(), model.track(s.track)->name + ": launch mlp_step") << text;
    EXPECT_EQ(chain[1], "ioctls: CS") << text;
    EXPECT_NE(std::find(chain.begin(), chain.end(), "launches: launch mlp_step"), chain.end()) << text;
    EXPECT_NE(std::find(chain.begin(), chain.end(), "DMA0_QM stream 0: command buffer"), chain.end()) << text;
    EXPECT_EQ(chain[chain.size() - 2], "interrupts: CS completion") << text;
    EXPECT_EQ(chain.back(), "ioctls: CS waited") << text;
    EXPECT_TRUE(flow.terminated) << text;
    const auto order = model.flow_slices(s.flow_ids[0]);
    for (size_t i = 1; i < order.size(); ++i) EXPECT_LE(order[i - 1]->start_ns, order[i]->start_ns) << text;
    const auto on = [&](const std::string& name) {
      const auto found = std::find(chain.begin(), chain.end(), name);
      return found == chain.end() ? nullptr : order[static_cast<size_t>(found - chain.begin())];
    };
    const auto *ioctl = on("ioctls: CS"), *device = on("launches: launch mlp_step"), *msi = on("interrupts: CS completion");
    ASSERT_TRUE(ioctl && device && msi) << text;
    EXPECT_EQ(device->start_ns, ioctl->end_ns) << text;
    EXPECT_EQ(device->end_ns, msi->start_ns) << text;
    EXPECT_GT(msi->duration_ns(), 0u) << text;
    device_ns.push_back(device->duration_ns());
  }
  EXPECT_EQ(launches, 3u);
  // The run's device time per step is the launch's span on the timeline.
  const auto steps = steps_of(json);
  ASSERT_EQ(steps.size(), device_ns.size());
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].get<uint64_t>("device_ns"), device_ns[i]) << i;
}

TEST(CliRun, AWarmDiskCacheCompilesNothingAndACorruptRecipeIsRecompiled) {
  const std::string dir = temp("cache");
  fs::remove_all(dir);
  const std::string cold = "PT_HPU_RECIPE_CACHE_CONFIG=" + dir + ",true,64";
  const std::string warm = "PT_HPU_RECIPE_CACHE_CONFIG=" + dir + ",false,64";
  const std::string json = temp("cache.json");
  ProgramRun r = run_hpusim("run mlp --steps 2 --json " + json, cold);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(steps_of(json)[0].get<uint64_t>("compiles"), 1u);

  r = run_hpusim("run mlp --steps 2 --json " + json, warm);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto steps = steps_of(json);
  EXPECT_EQ(steps[0].get<uint64_t>("compiles"), 0u) << r.output;
  EXPECT_EQ(steps[0].get<uint64_t>("cache_hits"), 1u);
  EXPECT_EQ(steps[1].get<uint64_t>("compiles"), 0u);
  EXPECT_NE(r.output.find("0 compiles"), std::string::npos) << r.output;

  // Flip a byte in the middle of every cached recipe: the cache's checksum catches it, the
  // graph is recompiled, and the results do not change.
  size_t corrupted = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".recipe") continue;
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(entry.path()) / 2));
    f.put('\x77');
    ++corrupted;
  }
  ASSERT_EQ(corrupted, 1u);
  const std::string json2 = temp("cache2.json");
  r = run_hpusim("run mlp --steps 2 --json " + json2, warm);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto again = steps_of(json2);
  EXPECT_EQ(again[0].get<uint64_t>("compiles"), 1u) << r.output;
  EXPECT_EQ(again[0].get<double>("loss"), steps[0].get<double>("loss"));
  fs::remove_all(dir);
}

// A launch's device time does not depend on where its recipe came from (compiled in the process,
// read from the disk cache, found in the memory cache), on whether the run is traced, nor on how
// long the host kept the card idle before it (the modeled compile time): every step of each run
// has the same device time as in the others. With the HBM's refresh off (its own device times),
// two runs give the same times step for step. Steps are not all equal within a run (refresh off,
// steps 3 to 6 of the MLP: 21679, 21685, 21686, 21708 ns): where a step falls against the refresh
// interval, and where its submission falls against the clock domains' cycles (it decides which of
// two requests meeting at a shared port goes first), move it by a few to tens of nanoseconds. "The same" is to the
// nanosecond but for 1 ns: the device time is the host clock's span from the submission to the
// completion interrupt, and where a submission falls within a cycle of each clock domain (TPC
// 556 ps, ...) moves the completion by less than a cycle.
TEST(CliRun, DeviceTimeDoesNotDependOnWhereTheRecipeCameFrom) {
  const std::string dir = temp("origin_cache");
  fs::remove_all(dir);
  struct Variant {
    std::string name, args, env;
    uint64_t first_compiles;
    bool steady = false;   // refresh off: its own device times, the same in a second run
  };
  const std::vector<Variant> variants = {
      {"compiled, disk cache cold", "", "PT_HPU_RECIPE_CACHE_CONFIG=" + dir + ",true,64", 1},
      {"disk cache hit", "", "PT_HPU_RECIPE_CACHE_CONFIG=" + dir + ",false,64", 0},
      {"memory cache only", "", "", 1},
      {"traced", " --trace " + temp("origin.pftrace"), "", 1},
      {"no modeled compile time", " --set host.compile_per_node_ns=0", "", 1},
      {"no refresh", " --set hbm.refresh_enabled=false", "", 1, true},
  };
  std::vector<uint64_t> reference;
  for (const Variant& v : variants) {
    const std::string json = temp("origin.json");
    const ProgramRun r = run_hpusim("run mlp --steps 4 --quiet --json " + json + v.args, v.env);
    ASSERT_EQ(r.exit_code, 0) << v.name << ": " << r.output;
    const auto steps = steps_of(json);
    ASSERT_EQ(steps.size(), 4u) << v.name;
    EXPECT_EQ(steps[0].get<uint64_t>("compiles"), v.first_compiles) << v.name;
    std::vector<uint64_t> device;
    for (const auto& step : steps) device.push_back(step.get<uint64_t>("device_ns"));
    const auto near = [](uint64_t a, uint64_t b) { return a + 1 >= b && b + 1 >= a; };
    if (v.steady) {
      const ProgramRun again = run_hpusim("run mlp --steps 4 --quiet --json " + json + v.args, v.env);
      ASSERT_EQ(again.exit_code, 0) << v.name << ": " << again.output;
      const auto steps_again = steps_of(json);
      ASSERT_EQ(steps_again.size(), 4u) << v.name;
      for (size_t i = 0; i < device.size(); ++i)
        EXPECT_EQ(steps_again[i].get<uint64_t>("device_ns"), device[i]) << v.name << ", step " << i;
      continue;
    }
    if (reference.empty()) {
      reference = device;
      continue;
    }
    for (size_t i = 0; i < device.size(); ++i) {
      EXPECT_TRUE(near(device[i], reference[i]))
          << v.name << ", step " << i << ": " << device[i] << " ns, first run " << reference[i] << " ns";
    }
  }
  fs::remove_all(dir);
}

// Two processes at a time share one cache directory with a 1 MB limit while recipes for 16
// targets (8 TPC counts x 2 workloads, about 120 KB each) go through it: the directory never
// exceeds the limit (the parent watches it), no run reads a bad recipe, every run succeeds.
TEST(CliRun, ProcessesSharingASmallCacheDirectoryStayUnderItsLimit) {
  const std::string dir = temp("shared_cache");
  fs::remove_all(dir);
  const std::string env = "PT_HPU_RECIPE_CACHE_CONFIG=" + dir + ",false,1";
  constexpr uint64_t kLimit = 1ull << 20;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> peak{0};
  std::thread watcher([&] {
    while (!done) {
      uint64_t bytes = 0;
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const uint64_t size = fs::file_size(entry.path(), ec);
        if (!ec) bytes += size;
      }
      peak = std::max<uint64_t>(peak, bytes);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::string> failures;
  std::mutex failures_mutex;
  const auto worker = [&](const std::string& workload, int first_tpcs) {
    for (int i = 0; i < 4; ++i) {
      const int tpcs = first_tpcs + 2 * i;
      const std::string totals = temp("shared_" + workload + std::to_string(tpcs) + ".totals.json");
      const ProgramRun r = run_hpusim("run " + workload + " --steps 1 --quiet --set tpc.count=" +
                                          std::to_string(tpcs) + " --totals " + totals,
                                      env);
      boost::property_tree::ptree t;
      if (r.exit_code == 0) boost::property_tree::read_json(totals, t);
      std::lock_guard<std::mutex> lock(failures_mutex);
      if (r.exit_code != 0) failures.push_back(workload + " tpc.count=" + std::to_string(tpcs) + ": " + r.output);
      else if (t.get<uint64_t>("corrupt_recipes") != 0) failures.push_back(workload + ": read a bad recipe");
    }
  };
  std::vector<std::thread> runs;
  for (const char* workload : {"mlp", "conv-block"}) {
    runs.emplace_back(worker, workload, 1);
    runs.emplace_back(worker, workload, 2);
  }
  for (auto& t : runs) t.join();
  done = true;
  watcher.join();
  RecordProperty("peak_bytes", std::to_string(peak.load()));
  EXPECT_TRUE(failures.empty()) << (failures.empty() ? "" : failures.front());
  EXPECT_GT(peak.load(), kLimit / 4) << "the recipes never reached the directory";
  EXPECT_LE(peak.load(), kLimit) << "the directory exceeded its limit";
  size_t recipes = 0;
  for (const auto& entry : fs::directory_iterator(dir)) recipes += entry.path().extension() == ".recipe";
  RecordProperty("recipes_left", std::to_string(recipes));
  EXPECT_LT(recipes, 16u) << "with 16 recipes of ~120 KB, eviction must have removed some";
  fs::remove_all(dir);
}

// What a preset asks for that the card does not build is said, not hidden: hl225's 24 TPCs and
// 10 DMA channels on the Gaudi 1 engine map (8 and 8).
// Every engine a preset names is built and counted: hl225's 24 TPCs and 10 DMA channels,
// hl325's 64 TPCs and 8 MME masters; what the engine map cannot hold is refused by field name.
TEST(CliRun, EveryEngineThePresetNamesIsBuiltAndCounted) {
  struct Case {
    const char* preset;
    unsigned tpcs, mme_masters;
  };
  for (const Case c : {Case{"hl225", 24, 2}, Case{"hl325", 64, 8}}) {
    SCOPED_TRACE(c.preset);
    const std::string stats = temp(std::string("engines_") + c.preset + ".txt");
    const ProgramRun r = run_hpusim(std::string("run mlp --steps 1 --quiet --preset ") + c.preset + " --stats " + stats);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string text = slurp(stats);
    for (unsigned t = 0; t < c.tpcs; ++t) {
      EXPECT_NE(text.find("tpc.core" + std::to_string(t) + ".kernels "), std::string::npos) << "TPC " << t;
      EXPECT_NE(text.find("qman.tpc" + std::to_string(t) + "_qm.packets "), std::string::npos) << "TPC " << t;
    }
    EXPECT_EQ(text.find("tpc.core" + std::to_string(c.tpcs) + "."), std::string::npos);
    for (unsigned m = 0; m < c.mme_masters; ++m) {
      EXPECT_NE(text.find("mme.engine" + std::to_string(2 * m) + ".jobs "), std::string::npos) << "MME " << 2 * m;
    }
    EXPECT_NE(text.find("dma.ch9.transfers "), std::string::npos);
    // The MLP's TPC work is split over every TPC: the last one ran kernels too.
    const std::string last = "tpc.core" + std::to_string(c.tpcs - 1) + ".kernels ";
    const size_t at = text.find(last);
    ASSERT_NE(at, std::string::npos);
    EXPECT_GT(std::stoull(text.substr(at + last.size())), 0u) << text.substr(at, 80);
  }
  const ProgramRun refused = run_hpusim("run mlp --steps 1 --set tpc.count=9");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.output.find("tpc.count = 9: a generation 1 card has at most 8 TPCs"), std::string::npos)
      << refused.output;
  const ProgramRun too_many = run_hpusim("run mlp --steps 1 --preset hl325 --set tpc.count=65");
  EXPECT_EQ(too_many.exit_code, 2);
  EXPECT_NE(too_many.output.find("tpc.count = 65: the engine map holds at most 64 TPCs"), std::string::npos)
      << too_many.output;
  const ProgramRun masters = run_hpusim("run mlp --steps 1 --preset hl325 --set mme.masters=9 --set mme.cores=18");
  EXPECT_EQ(masters.exit_code, 2);
  EXPECT_NE(masters.output.find("mme.masters = 9"), std::string::npos) << masters.output;
}

TEST(CliRun, TwoRunsGiveTheSameTimesAndLosses) {
  const std::string a = temp("det_a.json"), b = temp("det_b.json");
  ASSERT_EQ(run_hpusim("run mlp --steps 2 --preset hl225 --json " + a).exit_code, 0);
  ASSERT_EQ(run_hpusim("run mlp --steps 2 --preset hl225 --json " + b).exit_code, 0);
  EXPECT_EQ(slurp(a), slurp(b));
}

// The JSON stays valid whatever the strings in it: a preset file whose name has a quote and a
// backslash comes back as it was.
TEST(CliRun, JsonEscapesThePresetPath) {
  const std::string preset = temp("we\"ird\\name.textproto");
  const ProgramRun info = run_hpusim("info --preset hl205 > '" + preset + "'");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  const std::string json = temp("escaped.json");
  const ProgramRun r = run_hpusim("run mlp --steps 1 --quiet --preset '" + preset + "' --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto steps = steps_of(json);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].get<std::string>("preset"), preset);
}

TEST(CliRun, UsageErrors) {
  ProgramRun r = run_hpusim("run");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("run needs a workload"), std::string::npos) << r.output;
  r = run_hpusim("run resnet");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown workload 'resnet'"), std::string::npos) << r.output;
  r = run_hpusim("run mlp --steps 0");
  EXPECT_EQ(r.exit_code, 2);
  // A negative or fractional count is refused naming the option, not read as four billion steps.
  const std::vector<std::pair<std::string, std::string>> bad_counts = {
      {"--steps -1", "--steps"}, {"--steps 1.5", "--steps"}, {"--steps 4294967296", "--steps"},
      {"--steps ''", "--steps"}, {"--seed -3", "--seed"}};
  for (const auto& [arguments, option] : bad_counts) {
    r = run_hpusim("run mlp " + arguments);
    EXPECT_EQ(r.exit_code, 2) << arguments << ": " << r.output;
    EXPECT_NE(r.output.find(option), std::string::npos) << arguments << ": " << r.output;
  }
  r = run_hpusim("run mlp --preset hl999");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("hl999"), std::string::npos) << r.output;
  r = run_hpusim("run mlp --steps 1", "PT_HPU_RECIPE_CACHE_CONFIG=/tmp,maybe,5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("PT_HPU_RECIPE_CACHE_CONFIG"), std::string::npos) << r.output;
}

}  // namespace

namespace {

TEST(CliBenchCompile, ReportsCompileAndLaunchCostsAndStepTimes) {
  const std::string json = temp("bench_compile.json");
  const ProgramRun r = run_hpusim("bench compile --workloads mlp,conv-block --steps 2 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("compile us/n"), std::string::npos) << r.output;
  const auto rows = steps_of(json);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].get<std::string>("workload"), "mlp");
  EXPECT_EQ(rows[1].get<std::string>("workload"), "conv-block");
  for (const auto& row : rows) {
    EXPECT_GT(row.get<uint64_t>("nodes"), 10u);
    EXPECT_GT(row.get<double>("compile_us_per_node"), 0.0);
    EXPECT_GT(row.get<double>("launch_prepare_us"), 0.0);
    EXPECT_GT(row.get<double>("launch_modeled_us"), 0.0);
    EXPECT_GT(row.get<uint64_t>("patches_per_launch"), 0u);
    // The first step pays the modeled compile; the steady step does not.
    EXPECT_GT(row.get<uint64_t>("first_step_ns"), row.get<uint64_t>("step_ns"));
    EXPECT_GT(row.get<uint64_t>("device_ns"), 0u);
    // Against the roofline: the bound is the longest resource, named, and never beaten.
    EXPECT_GT(row.get<double>("roofline_ns"), 0.0);
    EXPECT_GE(row.get<double>("x_roofline"), 1.0);
    const std::string limit = row.get<std::string>("roofline_limit");
    EXPECT_TRUE(limit == "mme" || limit == "tpc" || limit == "hbm") << limit;
    EXPECT_GE(row.get<double>("tpc_busy"), 0.0);
    EXPECT_LE(row.get<double>("tpc_busy"), 1.0);
    EXPECT_GE(row.get<double>("overlap"), 0.0);
    EXPECT_LT(row.get<double>("overlap"), 1.0);
    // The engines' span leaves out the submission and the completion: shorter than the launch,
    // and no faster than the roofline either.
    EXPECT_LT(row.get<double>("engines_span_ns"), double(row.get<uint64_t>("device_ns")));
    EXPECT_GE(row.get<double>("x_roofline_engines"), 1.0);
    EXPECT_LT(row.get<double>("x_roofline_engines"), row.get<double>("x_roofline"));
  }
  EXPECT_NE(r.output.find("x roofline"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("x engines"), std::string::npos) << r.output;
  const ProgramRun bad = run_hpusim("bench compile --workloads resnet");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("unknown workload 'resnet'"), std::string::npos) << bad.output;
}

// --phases runs each workload at several start phases (`hpusim run --start-phase-ns`) and reports
// the median run with the spread of the last step's device time.
TEST(CliBenchCompile, PhasesGiveTheMedianRunAndItsSpread) {
  const std::string json = temp("bench_compile_phases.json");
  const ProgramRun r = run_hpusim("bench compile --workloads mlp --steps 2 --phases 3 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("each row: the median (by the last step's device time) of 3 runs, each started 37 ns after"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("spread"), std::string::npos) << r.output;
  const auto rows = steps_of(json);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].get<unsigned>("phases"), 3u);
  EXPECT_LE(rows[0].get<uint64_t>("device_ns_min"), rows[0].get<uint64_t>("device_ns"));
  EXPECT_LE(rows[0].get<uint64_t>("device_ns"), rows[0].get<uint64_t>("device_ns_max"));
  const ProgramRun bad = run_hpusim("bench compile --workloads mlp --phases 0");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--phases must be 1 to 64"), std::string::npos) << bad.output;
}

}  // namespace
