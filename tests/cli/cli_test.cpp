// The hpusim program as a user runs it: info, bench memory, its JSON, statistics and trace files,
// errors for bad presets, and run-to-run determinism.
#include <gtest/gtest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <set>
#include <string>

#include "tests/cli/program_run.h"
#include "traces/trace_reader.h"

namespace {

using hpusim::cli_testing::ProgramRun;

ProgramRun run(const std::string& args) { return hpusim::cli_testing::run_hpusim(args); }

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "hpusim_cli_" + name; }

using hpusim::cli_testing::slurp;

TEST(Cli, InfoPrintsTheResolvedPreset) {
  ProgramRun r = run("info --preset hl225 --set hbm.queue_bursts=384");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("name: \"hl225\""), std::string::npos);
  EXPECT_NE(r.output.find("queue_bursts: 384"), std::string::npos);
  EXPECT_NE(r.output.find("name: \"HBM2E-3200\""), std::string::npos);  // the resolved timing set
}

// The box presets: listed beside the cards, printed with their card, refused with the reason.
TEST(Cli, BoxesAreListedAndPrintedWithTheirCard) {
  ProgramRun r = run("presets");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("hls1  HLS-1 class: 8 x hl205"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("hls2  HLS-2 class: 8 x hl225"), std::string::npos) << r.output;
  r = run("info --box hls2 --set nic.latency_ns=700");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("name: \"hls2\""), std::string::npos);
  EXPECT_NE(r.output.find("name: \"hl225\""), std::string::npos) << "the box's card follows";
  EXPECT_NE(r.output.find("latency_ns: 700"), std::string::npos) << "with --set applied";
  r = run("info --box hls2 --set nic.ports=20");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("box 'hls2': link card 0 port 20: hl225 has 20 NIC ports (nic.ports)"), std::string::npos)
      << r.output;
}

TEST(Cli, BadSetValueIsAClearErrorWithNonZeroExit) {
  ProgramRun r = run("info --set hbm.stacks=many");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("bad value 'many' for hbm.stacks"), std::string::npos) << r.output;
  r = run("info --set hbm.nonsense=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown preset field 'hbm.nonsense'"), std::string::npos) << r.output;
  r = run("bench memory --set clocks.fabric_mhz=0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("clocks.fabric_mhz"), std::string::npos) << r.output;
}

TEST(Cli, BadPresetFileIsAClearErrorWithNonZeroExit) {
  std::string path = temp_path("bad.textproto");
  std::ofstream(path) << "name: \"x\"\nhbm { stacks: 4 \n";
  ProgramRun r = run("info --preset " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
  r = run("info --preset no_such_preset");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown preset 'no_such_preset'"), std::string::npos) << r.output;
}

TEST(Cli, UnknownCommandsAndOptionsAreUsageErrors) {
  EXPECT_EQ(run("frobnicate").exit_code, 2);
  EXPECT_EQ(run("bench warp").exit_code, 2);
  EXPECT_EQ(run("report").exit_code, 2);
  EXPECT_EQ(run("report weather").exit_code, 2);
  EXPECT_EQ(run("report correlation --no-such-option").exit_code, 2);
  EXPECT_EQ(run("bench memory --no-such-option").exit_code, 2);
  ProgramRun r = run("bench memory --json /nonexistent-dir/out.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot write output file '/nonexistent-dir/out.json'"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("hbm "), std::string::npos) << "the run should not start";
  r = run("bench memory --memory dram");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("unknown memory 'dram'"), std::string::npos) << r.output;
}

TEST(Cli, BenchMemoryPrintsTheTableAndHbmStreamsWithin10PercentOfPeak) {
  std::string json = temp_path("bench.json");
  ProgramRun r = run("bench memory --preset hl205 --json " + json);  // exactly what a user runs
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GB/s"), std::string::npos);
  EXPECT_NE(r.output.find("p99 ns"), std::string::npos);

  boost::property_tree::ptree results;
  boost::property_tree::read_json(json, results);
  int cases = 0;
  bool saw_hbm_stream = false;
  std::set<std::string> memories;
  for (const auto& [key, row] : results) {
    ++cases;
    for (const char* field : {"memory", "pattern", "request_bytes", "gbps", "pct_peak", "mean_latency_ns",
                              "p99_latency_ns", "sim_requests_per_s"}) {
      EXPECT_TRUE(row.get_child_optional(field)) << "missing " << field;
    }
    memories.insert(row.get<std::string>("memory"));
    if (row.get<std::string>("memory") == "hbm" && row.get<std::string>("pattern") == "seq_read" &&
        row.get<int>("request_bytes") >= 256) {
      saw_hbm_stream = true;
      EXPECT_GE(row.get<double>("pct_peak"), 90.0) << "request_bytes " << row.get<int>("request_bytes");
      EXPECT_LE(row.get<double>("pct_peak"), 100.0);
    }
  }
  EXPECT_GE(cases, 20);
  EXPECT_TRUE(saw_hbm_stream);
  EXPECT_EQ(memories, (std::set<std::string>{"hbm", "pcie", "sram"}));
}

// One chosen case, alone: at the controller (reads and posted writes reported apart) and through
// the fabric; and the misuses of the case options.
TEST(Cli, BenchMemoryRunsOneChosenCase) {
  const std::string json = temp_path("one_case.json");
  ProgramRun r = run("bench memory --preset dramsim3-hbm2 --at controller --memory hbm --pattern rand "
                     "--write-fraction 0.3 --bytes 256 --count 3000 --window 256 --seed 7 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rand_mix70r"), std::string::npos) << r.output;
  boost::property_tree::ptree results;
  boost::property_tree::read_json(json, results);
  ASSERT_EQ(results.size(), 1u);
  const auto& row = results.begin()->second;
  EXPECT_EQ(row.get<std::string>("at"), "controller");
  EXPECT_EQ(row.get<int>("requests"), 3000);
  EXPECT_EQ(row.get<int>("seed"), 7);
  EXPECT_GT(row.get<double>("read_latency_ns"), row.get<double>("write_latency_ns"));  // writes are posted
  EXPECT_GT(row.get<double>("write_latency_ns"), 0.0);

  r = run("bench memory --memory hbm --pattern seq --count 500 --window 1");   // unloaded, mostly row hits
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("seq_read"), std::string::npos) << r.output;
  // Posted writes through the fabric (the subsystem answers them on acceptance), requests split
  // over two interleave chunks: every request is answered once, none fails.
  r = run("bench memory --preset dramsim3-hbm2 --memory hbm --pattern rand --write-fraction 0.5 --bytes 512 "
          "--count 4000 --window 128 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  boost::property_tree::read_json(json, results);
  EXPECT_EQ(results.begin()->second.get<int>("requests"), 4000);
  EXPECT_EQ(results.begin()->second.get<std::string>("at"), "fabric");

  EXPECT_EQ(run("bench memory --bytes 64").exit_code, 2);                       // a case option without a case
  EXPECT_EQ(run("bench memory --pattern seq").exit_code, 2);                    // three memories, one case
  r = run("bench memory --memory sram --at controller --pattern seq");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("sram has none"), std::string::npos) << r.output;
  r = run("bench memory --memory hbm --pattern zigzag");
  EXPECT_NE(r.output.find("unknown pattern 'zigzag'"), std::string::npos) << r.output;
  r = run("bench memory --suite dramsim3 --preset hl205");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--preset dramsim3-hbm2"), std::string::npos) << r.output;
}

TEST(Cli, TwoRunsGiveIdenticalStatisticsAndCycleCounts) {
  std::string a = temp_path("a.stats"), b = temp_path("b.stats");
  ASSERT_EQ(run("bench memory --scale 0.05 --stats " + a).exit_code, 0);
  ASSERT_EQ(run("bench memory --scale 0.05 --stats " + b).exit_code, 0);
  std::string first = slurp(a);
  EXPECT_GT(first.size(), 1000u);
  EXPECT_EQ(first, slurp(b));
  EXPECT_EQ(slurp(a + ".json"), slurp(b + ".json"));
  EXPECT_NE(first.find("hbm.ch0.activates"), std::string::npos);
  EXPECT_NE(first.find("bench.hbm.seq_read_64.sim_time_ps"), std::string::npos);
}

TEST(Cli, TheBenchTraceDecodesWithTracksSlicesCountersAndFlows) {
  std::string trace = temp_path("bench.pftrace"), chrome = temp_path("bench.json.trace");
  ProgramRun r = run("bench memory --memory hbm,sram --scale 0.02 --trace " + trace + " --chrome-trace " + chrome);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  hpusim::traces::TraceModel model = hpusim::traces::read_perfetto(trace);
  EXPECT_GE(model.tracks.size(), 5u);
  EXPECT_FALSE(model.slices.empty());
  EXPECT_FALSE(model.counters.empty());
  EXPECT_FALSE(model.flows.empty());
  boost::property_tree::ptree json;
  boost::property_tree::read_json(chrome, json);
  EXPECT_GT(json.get_child("traceEvents").size(), 10u);
}

TEST(Cli, BenchSubmitWritesItsJsonAndTrace) {
  std::string json = temp_path("submit.json");
  std::string trace = temp_path("submit.pftrace");
  ProgramRun r = run("bench submit --scale 0.1 --json " + json + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("nop_cs_round_trip"), std::string::npos);
  EXPECT_NE(r.output.find("dma_host_to_dram"), std::string::npos);
  boost::property_tree::ptree results;
  boost::property_tree::read_json(json, results);
  int cases = 0, dma_cases = 0;
  for (const auto& [key, row] : results) {
    ++cases;
    for (const char* field : {"case", "size_bytes", "sim_latency_ns", "sim_per_s", "wall_per_s", "sim_gb_per_s"}) {
      EXPECT_TRUE(row.get_child_optional(field)) << "missing " << field;
    }
    EXPECT_GT(row.get<double>("sim_per_s"), 0.0);
    if (row.get<std::string>("case").rfind("dma_", 0) == 0) {
      ++dma_cases;
      // Bounded by the PCIe Gen4 x16 payload rate (28 GB/s on hl205), and not absurdly low.
      EXPECT_GT(row.get<double>("sim_gb_per_s"), 0.0);
      EXPECT_LT(row.get<double>("sim_gb_per_s"), 28.1);
    }
  }
  EXPECT_GE(cases, 14);
  EXPECT_EQ(dma_cases, 10);
  // The trace has the driver's ioctls and the card's DMA transfers.
  hpusim::traces::TraceModel model = hpusim::traces::read_perfetto(trace);
  bool ioctl_slice = false, dma_slice = false;
  for (const auto& slice : model.slices) {
    ioctl_slice |= slice.name == "CS";
    dma_slice |= slice.name == "copy";
  }
  EXPECT_TRUE(ioctl_slice);
  EXPECT_TRUE(dma_slice);
  EXPECT_EQ(run("bench submit --set hbm.stacks=0").exit_code, 2);
}

// `hpusim bench kernels`: a row per GUID and shape with the rooflines' arithmetic, the TPCs used,
// a GUID without a case named, the timeline on request, and a bad filter refused.
TEST(Cli, BenchKernelsMeasuresEachGuidAgainstTheRooflines) {
  const std::string json = temp_path("kernels.json"), trace = temp_path("kernels_trace.json");
  std::remove(trace.c_str());
  ProgramRun r = run("bench kernels --quick --guids '^(add_fwd_f32|reduce_sum_fwd_f32|fused_sgd_f32|strided_view_f32)$' "
                     "--json " + json + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The timeline: each case's kernels on the TPC tracks, with their cycles and bundles.
  std::ifstream trace_file(trace);
  const std::string timeline((std::istreambuf_iterator<char>(trace_file)), std::istreambuf_iterator<char>());
  EXPECT_NE(timeline.find("\"name\":\"TPC7\""), std::string::npos);
  EXPECT_NE(timeline.find("\"name\":\"fused_sgd_f32\""), std::string::npos);
  EXPECT_NE(timeline.find("\"bundles\":"), std::string::npos);
  EXPECT_NE(r.output.find("hpusim bench kernels on hl205: 8 TPCs x 2048-bit VPU"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no case (the strided views and inserts the compiler inserts for layouts): strided_view_f32"), std::string::npos);
  boost::property_tree::ptree rows;
  boost::property_tree::read_json(json, rows);
  std::map<std::string, int> per_guid;
  for (const auto& [key, row] : rows) {
    const std::string guid = row.get<std::string>("guid");
    ++per_guid[guid];
    const double kernel = row.get<double>("kernel_us"), device = row.get<double>("device_us");
    EXPECT_GT(kernel, 0.0) << guid;
    EXPECT_GT(device, kernel) << guid;   // the launch frame around the kernel
    const double roof = std::max(row.get<double>("memory_us"), row.get<double>("compute_us"));
    EXPECT_NEAR(row.get<double>("pct_roofline"), 100.0 * roof / device, 1e-9) << guid;
    // The engines' span: every TPC's kernels inside it, the launch frame outside.
    const double engines = row.get<double>("engines_us");
    EXPECT_GE(engines, kernel) << guid;
    EXPECT_LT(engines, device) << guid;
    EXPECT_NEAR(row.get<double>("pct_engines"), 100.0 * roof / engines, 1e-9) << guid;
    // A reduction over dim 1 of [768, 1024] (12 output vectors, two a step: 6 TPCs) is split into
    // chunks of rows with a second pass, so it uses all 8 too.
    EXPECT_EQ(row.get<unsigned>("tpcs"), 8u) << guid << " " << row.get<std::string>("shape");
    EXPECT_EQ(row.get<std::string>("bound"), "memory") << guid;
    if (guid == "add_fwd_f32") {
      EXPECT_DOUBLE_EQ(row.get<double>("bytes"), 3.0 * 768 * 1024 * 4);   // A, B and C once each
      EXPECT_NEAR(row.get<double>("memory_us"), 3.0 * 768 * 1024 * 4 / 901.4e9 * 1e6, 0.01);
    }
  }
  EXPECT_EQ(per_guid, (std::map<std::string, int>{{"add_fwd_f32", 1}, {"fused_sgd_f32", 1}, {"reduce_sum_fwd_f32", 2}}));
  ProgramRun bad = run("bench kernels --guids '(' ");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--guids '(' is not a regular expression"), std::string::npos) << bad.output;
}

TEST(Cli, TpcAssembleDisassembleReassembleGivesIdenticalBytes) {
  const std::string kernel = std::string(HPUSIM_SOURCE_DIR) + "/tests/tpc/kernels/eltwise_add.s";
  const std::string first = temp_path("tpc_first.bin"), text = temp_path("tpc_dis.s"), second = temp_path("tpc_second.bin");
  std::remove(first.c_str());
  std::remove(second.c_str());
  ProgramRun r = run("tpc-as " + kernel + " -o " + first);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string bytes = slurp(first);
  ASSERT_EQ(bytes.size(), 16u + 39 * 32);
  EXPECT_EQ(bytes.substr(0, 6), std::string("HPTPC\0", 6));
  r = run("tpc-dis " + first + " -o " + text);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(slurp(text).find("add.f32 V3, V1, V2"), std::string::npos) << slurp(text);
  r = run("tpc-as " + text + " -o " + second);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(slurp(second), bytes);
  // Without -o the text goes to stdout.
  r = run("tpc-dis --bundle-numbers " + first);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("st_tnsr I2, 2, V3  // 32"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("halt  // 38"), std::string::npos) << r.output;
}

TEST(Cli, TpcAssemblerOptions) {
  const std::string dir = ::testing::TempDir() + "hpusim_cli_tpc_inc";
  std::system(("mkdir -p " + dir).c_str());
  std::ofstream(dir + "/consts.inc") << ".equ BASE 0x100\n";
  const std::string source = temp_path("tpc_opts.s"), out = temp_path("tpc_opts.bin");
  std::ofstream(source) << ".include \"consts.inc\"\nld_vlm.f32 V1, BASE + OFFSET\n";
  ProgramRun r = run("tpc-as " + source + " -I " + dir + " -D OFFSET=0x40 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run("tpc-dis " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ld_vlm.f32 V1, 320"), std::string::npos) << r.output;
}

TEST(Cli, TpcAssemblyErrorsNameTheFileAndLine) {
  const std::string source = temp_path("tpc_bad.s"), out = temp_path("tpc_bad.bin");
  std::remove(out.c_str());
  std::ofstream(source) << "// a kernel with mistakes\n"
                           "        ld_tnsr V1, I0, 0\n"
                           "        add.f32 V2, V1, V40\n"
                           "        frobnicate S1\n"
                           "        jmp nowhere\n";
  ProgramRun r = run("tpc-as " + source + " -o " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(source + ":3:25: V40 is out of range (V0..V39)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(source + ":4:9: unknown mnemonic 'frobnicate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(source + ":5:13: undefined label 'nowhere'"), std::string::npos) << r.output;
  EXPECT_FALSE(std::ifstream(out).good()) << "no output for a failed assembly";
  r = run("tpc-as " + temp_path("no_such_file.s") + " -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no_such_file.s: cannot read the file"), std::string::npos) << r.output;
}

TEST(Cli, TpcUsageAndFileErrors) {
  const std::string source = temp_path("tpc_ok.s"), bin = temp_path("tpc_ok.bin");
  std::ofstream(source) << "halt\n";
  EXPECT_EQ(run("tpc-as").exit_code, 2);
  ProgramRun r = run("tpc-as " + source);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("tpc-as needs -o OUTPUT.bin"), std::string::npos) << r.output;
  EXPECT_EQ(run("tpc-as " + source + " " + source + " -o " + bin).exit_code, 2);
  EXPECT_EQ(run("tpc-as " + source + " -o " + bin + " --no-such-option").exit_code, 2);
  EXPECT_EQ(run("tpc-dis").exit_code, 2);
  EXPECT_EQ(run("tpc-as --help").exit_code, 0);
  EXPECT_EQ(run("tpc-dis --help").exit_code, 0);
  r = run("tpc-as " + source + " -o /nonexistent-dir/x.bin");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot write output file '/nonexistent-dir/x.bin'"), std::string::npos) << r.output;
  // tpc-dis of something that is not a program.
  r = run("tpc-dis " + source);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("not a TPC program"), std::string::npos) << r.output;
  ASSERT_EQ(run("tpc-as " + source + " -o " + bin).exit_code, 0);
  std::string bytes = slurp(bin);
  bytes[16 + 7] = 70;   // bundle 0, SPU opcode 70: a VPU opcode
  std::ofstream(bin, std::ios::binary | std::ios::trunc) << bytes;
  r = run("tpc-dis " + bin);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bundle 0: SPU slot, opcode: 70 is not defined in the SPU slot"), std::string::npos)
      << r.output;
}

TEST(Cli, BenchTpcPrintsTheTableAndWritesItsJson) {
  const std::string json = temp_path("tpc.json");
  std::remove(json.c_str());
  ProgramRun r = run("bench tpc --scale 0.02 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("%vpu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("load latency:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("M simulated bundles per wall second"), std::string::npos) << r.output;
  boost::property_tree::ptree results;
  boost::property_tree::read_json(json, results);
  std::set<std::string> kernels;
  for (const auto& [key, row] : results) {
    for (const char* field : {"kernel", "shape", "dtype", "cycles", "pct_vpu_peak", "pct_mem_bw", "bound",
                              "sim_bundles_per_s"}) {
      ASSERT_TRUE(row.get_child_optional(field)) << "missing " << field;
    }
    const std::string kernel = row.get<std::string>("kernel");
    kernels.insert(kernel);
    EXPECT_GT(row.get<uint64_t>("cycles"), 0u) << kernel;
    EXPECT_GT(row.get<double>("sim_bundles_per_s"), 0.0) << kernel;
    EXPECT_GT(row.get<double>("pct_mem_bw"), 0.0) << kernel;
    EXPECT_LE(row.get<double>("pct_mem_bw"), 100.0) << kernel;
    EXPECT_LE(row.get<double>("pct_vpu_peak"), 100.0) << kernel;
    EXPECT_EQ(row.get<std::string>("bound"), kernel == "mac_chain" ? "compute" : "memory") << kernel;
  }
  EXPECT_EQ(kernels, (std::set<std::string>{"add", "scale", "triad", "load_latency", "mac_chain"}));
  EXPECT_GE(results.size(), 10u);
}

TEST(Cli, BenchTpcMacChainReachesNinetyPercentOfVpuPeak) {
  const std::string json = temp_path("tpc_mac.json");
  ProgramRun r = run("bench tpc --kernel mac_chain --scale 0.4 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  boost::property_tree::ptree results;
  boost::property_tree::read_json(json, results);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& [key, row] : results) {
    EXPECT_GE(row.get<double>("pct_vpu_peak"), 90.0) << row.get<std::string>("dtype");
  }
}

// The STREAM kernels prefetch as far ahead as the preset's buffer holds, so a deeper buffer shows
// in the cycles; --phases runs each case at several start phases and prints the median and spread.
TEST(Cli, BenchTpcStreamsFitThePrefetchBufferAndReportTheirSpread) {
  const std::string shallow_json = temp_path("tpc_shallow.json"), deep_json = temp_path("tpc_deep.json");
  ProgramRun r = run("bench tpc --kernel triad --scale 0.1 --phases 3 --set tpc.prefetch_entries=128 --json " +
                     shallow_json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("STREAM prefetch: 128 entries a TPC (tpc.prefetch_entries); add and triad run 48 vectors "
                          "ahead of their loads, scale 96"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("each row: the median of 3 runs of the case, each started 37 ns after the one before"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("spread"), std::string::npos) << r.output;
  r = run("bench tpc --kernel triad --scale 0.1 --phases 3 --set tpc.prefetch_entries=256 --json " + deep_json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("STREAM prefetch: 256 entries a TPC (tpc.prefetch_entries); add and triad run 112 vectors "
                          "ahead of their loads, scale 224"),
            std::string::npos)
      << r.output;
  boost::property_tree::ptree shallow, deep;
  boost::property_tree::read_json(shallow_json, shallow);
  boost::property_tree::read_json(deep_json, deep);
  ASSERT_EQ(shallow.size(), 2u);
  ASSERT_EQ(deep.size(), 2u);
  for (const auto* rows : {&shallow, &deep}) {
    for (const auto& [key, row] : *rows) {
      EXPECT_EQ(row.get<unsigned>("phases"), 3u);
      EXPECT_LE(row.get<uint64_t>("cycles_min"), row.get<uint64_t>("cycles"));
      EXPECT_LE(row.get<uint64_t>("cycles"), row.get<uint64_t>("cycles_max"));
    }
  }
  // The larger case: twice the lookahead takes it from about 79 % of the HBM peak to about 86 %.
  EXPECT_LT(deep.back().second.get<uint64_t>("cycles_max"), shallow.back().second.get<uint64_t>("cycles_min"));
  EXPECT_GT(deep.back().second.get<double>("pct_mem_bw"), shallow.back().second.get<double>("pct_mem_bw") + 4.0);
}

// bench kernels --phases: each row is the median of its launches started at several phases, with
// their spread; out of range is refused before any card is made.
TEST(Cli, BenchKernelsPhasesGiveTheMedianLaunchAndItsSpread) {
  const std::string json = temp_path("kernels_phases.json");
  std::remove(json.c_str());
  ProgramRun r = run("bench kernels --quick --guids '^add_fwd_f32$' --phases 3 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("each row: the median (by device time) of 3 launches, each started 37 ns after the one before"),
            std::string::npos)
      << r.output;
  boost::property_tree::ptree rows;
  boost::property_tree::read_json(json, rows);
  ASSERT_EQ(rows.size(), 1u);
  const auto& row = rows.front().second;
  EXPECT_EQ(row.get<unsigned>("phases"), 3u);
  EXPECT_LE(row.get<double>("device_us_min"), row.get<double>("device_us"));
  EXPECT_LE(row.get<double>("device_us"), row.get<double>("device_us_max"));
  EXPECT_GT(row.get<double>("device_us_min"), 0.0);
  r = run("bench kernels --guids '^add_fwd_f32$' --phases 65");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--phases must be 1 to 64"), std::string::npos) << r.output;
}

TEST(Cli, BenchTpcUsageErrors) {
  ProgramRun r = run("bench tpc --kernel copy");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("unknown kernel 'copy'"), std::string::npos) << r.output;
  r = run("bench tpc --scale 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--scale must be greater than 0"), std::string::npos) << r.output;
  r = run("bench tpc --phases 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--phases must be 1 to 64"), std::string::npos) << r.output;
  r = run("bench tpc --json /nonexistent-dir/tpc.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot write output file"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("add "), std::string::npos) << "the run should not start";
  EXPECT_EQ(run("bench tpc --help").exit_code, 0);
}

TEST(Cli, BenchGemmRunsEachPresetAndMergesTheJson) {
  const std::string json = temp_path("gemm.json");
  std::remove(json.c_str());
  ProgramRun r = run("bench gemm --preset hl205,hl225 --shapes 128x256x64,2*64x64x96:f32 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("preset hl205"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("preset hl225"), std::string::npos) << r.output;
  boost::property_tree::ptree results;
  boost::property_tree::read_json(json, results);
  ASSERT_EQ(results.size(), 4u);
  std::multiset<std::string> presets;
  for (const auto& [key, row] : results) {
    for (const char* field : {"preset", "m", "n", "k", "batch", "dtype", "cycles", "tflops", "pct_peak", "bound",
                              "sim_macs_per_s"}) {
      ASSERT_TRUE(row.get_child_optional(field)) << "missing " << field;
    }
    presets.insert(row.get<std::string>("preset"));
    EXPECT_GT(row.get<uint64_t>("cycles"), 0u);
    EXPECT_GT(row.get<double>("pct_peak"), 0.0);
    EXPECT_LE(row.get<double>("pct_peak"), 100.0);
    EXPECT_GT(row.get<double>("sim_macs_per_s"), 0.0);
  }
  EXPECT_EQ(presets, (std::multiset<std::string>{"hl205", "hl205", "hl225", "hl225"}));
  EXPECT_EQ(results.back().second.get<uint64_t>("batch"), 2u);
  EXPECT_EQ(results.back().second.get<std::string>("dtype"), "f32");
  std::ifstream part(json + ".part0");
  EXPECT_FALSE(part.good()) << "the per-preset parts are removed";
  // With f32 at a quarter of the bf16 rate, an f32 row's peak is a quarter of a bf16 row's.
  std::remove(json.c_str());
  r = run("bench gemm --preset hl205 --set mme.f32_array_cycles_per_k=4 --shapes 128x256x64,128x256x64:f32 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bf16; f32 a 4th of it, mme.f32_array_cycles_per_k"), std::string::npos) << r.output;
  boost::property_tree::ptree slower;
  boost::property_tree::read_json(json, slower);
  ASSERT_EQ(slower.size(), 2u);
  const double bf16_peak = slower.front().second.get<double>("peak_tflops");
  EXPECT_DOUBLE_EQ(slower.back().second.get<double>("peak_tflops"), bf16_peak / 4);
  EXPECT_LE(slower.back().second.get<double>("pct_peak"), 100.0);
}

TEST(Cli, BenchGemmRowsOnAnHbmCacheDoNotDependOnTheRowsBefore) {
  // hl325's HBM cache starts every case cold: the same shape twice gives the same row, up to the
  // HBM's own state (open rows, the refresh schedule: 6710 and 6711 cycles). With the first
  // case's lines left in the cache the second took 6128.
  const std::string json = temp_path("gemm_cold.json");
  std::remove(json.c_str());
  ProgramRun r = run("bench gemm --preset hl325 --shapes 512x768x1024:f32,512x768x1024:f32 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  boost::property_tree::ptree results;
  boost::property_tree::read_json(json, results);
  ASSERT_EQ(results.size(), 2u);
  const double first = results.front().second.get<double>("cycles"), second = results.back().second.get<double>("cycles");
  EXPECT_NEAR(second, first, first * 0.001);
}

TEST(Cli, BenchGemmUsageErrors) {
  ProgramRun r = run("bench gemm --preset hl205 --shapes 12x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("GEMM shape '12x' is not [BATCH*]MxNxK[:f32][:rowmajor]"), std::string::npos) << r.output;
  r = run("bench gemm --preset hl205 --memory disk --shapes 64x64x64");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--memory must be hbm or sram, not 'disk'"), std::string::npos) << r.output;
  EXPECT_EQ(run("bench gemm --help").exit_code, 0);
}

}  // namespace

namespace {

// hccl_demo / nccl-tests columns on a box of four HLS-1 cards: bus bandwidth is the algorithm
// bandwidth times each collective's factor, no row passes the ports' goodput, and the NIC tracks
// of the trace carry the collectives' sends and receives.
TEST(Cli, BenchCollectivesPrintsBusBandwidthUnderTheLineRate) {
  const std::string json = temp_path("collectives.json"), trace = temp_path("collectives.pftrace");
  ProgramRun r = run("bench collectives --box hls1 --cards 4 --sizes 64K,1M --collectives all_reduce,all_gather,reduce_scatter,"
                     "broadcast,reduce,all_to_all --dtype bf16 --json " + json + " --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("box hls1, 4 x hl205, 1 link per pair of cards at 100 Gb/s (12.38 GB/s goodput each), bf16 sum"),
            std::string::npos)
      << r.output;
  boost::property_tree::ptree rows;
  boost::property_tree::read_json(json, rows);
  const std::map<std::string, double> factor = {{"all_reduce", 1.5}, {"all_gather", 0.75}, {"reduce_scatter", 0.75},
                                                {"broadcast", 1.0},  {"reduce", 1.0},      {"all_to_all", 0.75}};
  std::set<std::string> seen;
  for (const auto& [key, row] : rows) {
    const std::string c = row.get<std::string>("collective");
    seen.insert(c);
    const double time = row.get<double>("time_us"), algbw = row.get<double>("algbw_gbps");
    const double bytes = row.get<double>("bytes");
    EXPECT_GT(time, 0.0) << c;
    EXPECT_NEAR(algbw, bytes / time / 1e3, 1e-9 * algbw) << c;
    EXPECT_NEAR(row.get<double>("busbw_gbps"), algbw * factor.at(c), 1e-9 * algbw) << c;
    EXPECT_LE(row.get<double>("busbw_gbps"), row.get<double>("bound_busbw_gbps")) << c << " " << bytes;
    EXPECT_NEAR(row.get<double>("bound_busbw_gbps"), 3 * 12.5 * 8192 / 8274 * (c == "broadcast" || c == "reduce" ? 4.0 / 6 : 1.0),
                1e-6) << c;
    EXPECT_EQ(row.get<unsigned>("ranks"), 4u);
    if (c == "all_gather") EXPECT_NEAR(row.get<double>("hccl_demo_algbw_gbps"), algbw / 4, 1e-9 * algbw);
  }
  EXPECT_EQ(seen.size(), 6u);
  const hpusim::traces::TraceModel model = hpusim::traces::read_perfetto(trace);
  const hpusim::traces::TrackInfo* card = model.find_track("device 1 (hl205)");
  ASSERT_NE(card, nullptr);
  size_t nic_slices = 0;
  for (const char* track : {"NIC0 send", "NIC0 recv"})
    if (const hpusim::traces::TrackInfo* t = model.find_track(track, card->uuid)) nic_slices += model.slices_on(t->uuid).size();
  EXPECT_GT(nic_slices, 0u) << "card 1's port 0 (to card 2) carries the collectives";

  ProgramRun bad = run("bench collectives --box hls1 --cards 2 --collectives all_reduce,gossip");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("unknown collective 'gossip'"), std::string::npos) << bad.output;
  ProgramRun size = run("bench collectives --box hls1 --cards 2 --sizes 3X");
  EXPECT_EQ(size.exit_code, 2) << size.output;
  EXPECT_NE(size.output.find("--sizes '3X': a byte count such as 8, 64K, 32M or 1G"), std::string::npos) << size.output;
  ProgramRun box = run("bench collectives --box hls9");
  EXPECT_EQ(box.exit_code, 2) << box.output;
  EXPECT_NE(box.output.find("unknown box 'hls9'"), std::string::npos) << box.output;
}

}  // namespace
