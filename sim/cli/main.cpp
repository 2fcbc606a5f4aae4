// The hpusim program.
//
//   hpusim info  [--preset NAME|FILE] [--set path=value ...]
//   hpusim bench memory [--preset ...] [--set ...] [--json FILE] [--stats FILE] [--trace FILE]
//                       [--chrome-trace FILE] [--memory hbm,sram,pcie] [--scale X]
//   hpusim bench submit [--preset ...] [--set ...] [--json FILE] [--trace FILE] [--scale X]
//   hpusim bench tpc [--preset ...] [--set ...] [--json FILE] [--kernel add,scale,triad,load_latency,mac_chain]
//                    [--scale X]
//   hpusim bench gemm [--preset hl205,hl225] [--set ...] [--json FILE] [--max-size N] [--memory hbm|sram]
//   hpusim bench bridge [--rounds N] [--json FILE]     (the PyTorch bridge's costs; Python)
//   hpusim bench modes [--steps N] [--host-time modeled|measured|both] [--modes ...] [--json FILE]
//   hpusim tpc-as INPUT.s -o OUTPUT.bin [-I DIR ...] [-D NAME=VALUE ...]
//   hpusim tpc-dis INPUT.bin [-o OUTPUT.s] [--bundle-numbers]
#include <algorithm>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <systemc>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "arch/tpc/asm/assembler.h"
#include "arch/tpc/asm/disassembler.h"
#include "arch/tpc/asm/program.h"
#include "sim/bench/collectives_bench.h"
#include "sim/bench/compile_bench.h"
#include "sim/bench/kernels_bench.h"
#include "sim/bench/start_phase.h"
#include "sim/analyze/report_writers.h"
#include "sim/bench/gemm_bench.h"
#include "traces/chrome_json_reader.h"
#include "sim/zoo/run_workload.h"
#include "sim/zoo/workload.h"
#include "sim/bench/dramsim3_reference.h"
#include "sim/bench/memory_bench.h"
#include "sim/bench/submit_bench.h"
#include "sim/bench/tpc_bench.h"
#include "sim/preset/preset.h"
#include "sim/report/correlation.h"

namespace po = boost::program_options;

// libsystemc.so refers to sc_main; hpusim has its own main and drives SystemC directly.
int sc_main(int, char**) { return 0; }

namespace {

constexpr int kUsageError = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A count option (--steps, --seed, --max-size): decimal digits only, at most 2^32 - 1. Boost's own
// uint32_t conversion reads "-1" as 4294967295 and would start four billion steps.
struct Count {
  uint32_t value = 0;
};
void validate(boost::any& out, const std::vector<std::string>& values, Count*, int) {
  po::validators::check_first_occurrence(out);
  const std::string& text = po::validators::get_single_string(values);
  const bool digits = !text.empty() && text.size() <= 10 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoull(text) > UINT32_MAX) throw po::invalid_option_value(text);
  out = Count{static_cast<uint32_t>(std::stoull(text))};
}
po::typed_value<Count>* count_value(uint32_t default_value) {
  return po::value<Count>()->default_value(Count{default_value}, std::to_string(default_value));
}

void print_usage(std::ostream& out) {
  out << "usage: hpusim <command> [options]\n\n"
         "commands:\n"
         "  info                 print the resolved card preset\n"
         "  bench memory         HBM, SRAM and PCIe bandwidth/latency benchmark\n"
         "  bench submit         command-submission latency and throughput through the driver\n"
         "  bench tpc            TPC kernels (STREAM add/scale/triad, a mac chain) against the VPU and HBM peaks\n"
         "  bench gemm           GEMMs on the MME engines against the MME peak (hl205 and hl225 by default)\n"
         "  bench compile        compile time per node, host cost per launch and the zoo's modeled step times\n"
         "  bench kernels        every TPC kernel-library GUID on the zoo's shapes against the HBM and VPU rooflines\n"
         "  bench collectives    HCCL collectives on a box (hccl_demo / nccl-tests): time, algorithm and bus bandwidth\n"
         "  bench bridge         the PyTorch bridge's host cost per op and per MNIST step against native runs\n"
         "  bench modes          host and device time per step in each PyTorch execution mode (lazy, eager,\n"
         "                       torch.compile, HPU graphs)\n"
         "  report correlation   every published number hpusim reproduces: public value, source, hpusim's\n"
         "                       value, error and verdict (--quick: the fast rows)\n"
         "  run WORKLOAD         model-zoo training steps through the Synapse API (mlp, bert-layer, conv-block)\n"
         "  analyze TRACE        per-step host and device time, engine use and a verdict (host-bound,\n"
         "                       device-bound, balanced) with guidance, from a trace hpusim or torch.profiler wrote\n"
         "  presets              list the built-in presets\n"
         "  tpc-as INPUT.s -o OUTPUT.bin\n"
         "                       assemble a TPC program (arch/tpc/ASSEMBLY.md)\n"
         "  tpc-dis INPUT.bin [-o OUTPUT.s]\n"
         "                       disassemble a TPC program (to stdout by default)\n\n"
         "common options:\n"
         "  --preset NAME|FILE   card preset (default hl205); built-in: ";
  auto names = hpusim::preset::builtin_preset_names();
  for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
  out << "\n  --set PATH=VALUE     override a preset field, e.g. --set hbm.stacks=2 (repeatable)\n"
         "Run 'hpusim <command> --help' for the options of a command.\n";
}

po::options_description preset_options() {
  po::options_description options("preset");
  options.add_options()
      ("preset", po::value<std::string>()->default_value(hpusim::preset::kDefaultPreset), "built-in preset name or file")
      ("set", po::value<std::vector<std::string>>()->composing(), "override PATH=VALUE (repeatable)");
  return options;
}

// `positional`, when given, names the option the one positional argument fills.
po::variables_map parse(const std::vector<std::string>& args, const po::options_description& options,
                        const char* positional_option = nullptr) {
  po::positional_options_description positional;
  if (positional_option != nullptr) positional.add(positional_option, 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

hpusim::preset::Card load_card(const po::variables_map& vm) {
  std::vector<std::string> overrides;
  if (vm.count("set")) overrides = vm["set"].as<std::vector<std::string>>();
  return hpusim::preset::load_preset(vm["preset"].as<std::string>(), overrides);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

int command_info(const std::vector<std::string>& args) {
  po::options_description options = preset_options();
  options.add_options()("help,h", "this help")(
      "box", po::value<std::string>(), "a box preset (built-in name or file): the box, then its card with --set applied");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim info [options]\n" << options;
    return 0;
  }
  if (vm.count("box")) {
    const std::string box = vm["box"].as<std::string>();
    std::vector<std::string> overrides;
    if (vm.count("set")) overrides = vm["set"].as<std::vector<std::string>>();
    const hpusim::preset::Card card = hpusim::preset::load_preset(hpusim::preset::box_card_preset(box), overrides);
    std::cout << hpusim::preset::to_text(hpusim::preset::load_box(box, card)) << "\n" << hpusim::preset::to_text(card);
    return 0;
  }
  std::cout << hpusim::preset::to_text(load_card(vm));
  return 0;
}

int command_presets() {
  for (const std::string& name : hpusim::preset::builtin_preset_names()) {
    auto card = hpusim::preset::load_preset(name);
    std::cout << name << "  " << card.description() << "\n";
  }
  std::cout << "\nboxes (hpusim info --box NAME):\n";
  for (const std::string& name : hpusim::preset::builtin_box_names()) {
    const std::string card = hpusim::preset::box_card_preset(name);
    std::cout << name << "  " << hpusim::preset::load_box(name, hpusim::preset::load_preset(card)).description() << "\n";
  }
  return 0;
}

int command_bench_memory(const std::vector<std::string>& args) {
  po::options_description options = preset_options();
  options.add_options()
      ("help,h", "this help")
      ("json", po::value<std::string>(), "write results as a JSON array of objects")
      ("stats", po::value<std::string>(), "write statistics as text (and FILE.json)")
      ("trace", po::value<std::string>(), "write a Perfetto trace")
      ("chrome-trace", po::value<std::string>(), "write a Chrome JSON trace")
      ("memory", po::value<std::string>()->default_value("hbm,sram,pcie"), "memories to measure (one with a chosen case)")
      ("at", po::value<std::string>()->default_value("fabric"),
       "fabric: through the fabric, as engines see it; controller: straight into the HBM channel controllers")
      ("suite", po::value<std::string>(), "dramsim3: DRAMsim3's HBM2 cases beside its own results (preset dramsim3-hbm2)")
      ("pattern", po::value<std::string>(), "run one case alone: seq or rand")
      ("write-fraction", po::value<double>(), "share of writes in the chosen case, 0..1 (default 0)")
      ("bytes", po::value<uint32_t>(), "request size of the chosen case (default 64)")
      ("count", po::value<uint64_t>(), "requests of the chosen case (default 100000)")
      ("window", po::value<uint32_t>(), "requests outstanding in the chosen case, over all ports (default 512)")
      ("ports", po::value<uint32_t>(), "fabric master ports of the chosen case (default 8)")
      ("seed", po::value<uint64_t>(), "random seed of the chosen case (default 1)")
      ("scale", po::value<double>()->default_value(1.0), "multiply every case's request count");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim bench memory [options]\n"
                 "  The default cases, or one chosen case (--pattern, with --write-fraction, --bytes, --count,\n"
                 "  --window, --seed), or the DRAMsim3 comparison (--suite dramsim3).\n"
              << options;
    return 0;
  }
  hpusim::bench::MemoryBenchOptions bench;
  const bool dramsim3 = vm.count("suite") && vm["suite"].as<std::string>() == "dramsim3";
  if (dramsim3 && vm["preset"].defaulted()) {
    po::variables_map with_preset = vm;
    with_preset.erase("preset");
    with_preset.insert({"preset", po::variable_value(std::string("dramsim3-hbm2"), false)});
    bench.card = load_card(with_preset);
  } else {
    bench.card = load_card(vm);
  }
  if (vm.count("suite")) bench.suite = vm["suite"].as<std::string>();
  bench.at = vm["at"].as<std::string>();
  bench.memories = split_list(vm["memory"].as<std::string>());
  bench.scale = vm["scale"].as<double>();
  const bool chosen = vm.count("pattern") > 0;
  for (const char* option : {"write-fraction", "bytes", "count", "window", "ports", "seed"}) {
    if (!chosen && vm.count(option)) throw UsageError(std::string("--") + option + " describes a chosen case: add --pattern seq|rand");
  }
  if (chosen) {
    if (bench.memories.size() != 1) throw UsageError("a chosen case measures one memory: give --memory hbm, sram or pcie");
    if (vm.count("suite")) throw UsageError("--pattern and --suite do not go together");
    bench.has_case = true;
    hpusim::bench::MemoryCase& c = bench.single;
    c.memory = bench.memories.front();
    c.pattern = vm["pattern"].as<std::string>();
    if (vm.count("write-fraction")) c.write_fraction = vm["write-fraction"].as<double>();
    if (vm.count("bytes")) c.request_bytes = vm["bytes"].as<uint32_t>();
    if (vm.count("count")) c.requests = vm["count"].as<uint64_t>();
    if (vm.count("window")) c.window = vm["window"].as<uint32_t>();
    if (vm.count("ports")) c.ports = vm["ports"].as<uint32_t>();
    if (vm.count("seed")) c.seed = vm["seed"].as<uint64_t>();
  } else if (bench.at == "controller" && !vm.count("suite")) {
    throw UsageError("--at controller runs a chosen case (--pattern) or a suite");
  }
  if (vm.count("json")) bench.json_path = vm["json"].as<std::string>();
  if (vm.count("stats")) bench.stats_path = vm["stats"].as<std::string>();
  if (vm.count("trace")) bench.trace_path = vm["trace"].as<std::string>();
  if (vm.count("chrome-trace")) bench.chrome_trace_path = vm["chrome-trace"].as<std::string>();
  const auto results = hpusim::bench::run_memory_bench(bench, std::cout);
  if (dramsim3) {
    for (const auto& r : results) {
      if (std::fabs(r.gbps_error_pct) > r.tolerance_pct ||
          (r.reference_read_cycles > 0 && std::fabs(r.read_latency_error_pct) > r.tolerance_pct)) {
        std::cout << "some cases differ from DRAMsim3 by more than " << r.tolerance_pct << " %\n";
        return 1;
      }
    }
    std::cout << "every case within " << hpusim::bench::kDramSim3TolerancePct << " % of DRAMsim3\n";
  }
  return 0;
}

int command_bench_submit(const std::vector<std::string>& args) {
  po::options_description options = preset_options();
  options.add_options()
      ("help,h", "this help")
      ("json", po::value<std::string>(), "write results as a JSON array of objects")
      ("trace", po::value<std::string>(), "write a Perfetto trace: driver ioctls and interrupts, QMAN packets, DMA transfers")
      ("scale", po::value<double>()->default_value(1.0), "multiply every case's submission count");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim bench submit [options]\n" << options;
    return 0;
  }
  hpusim::bench::SubmitBenchOptions bench;
  bench.preset = vm["preset"].as<std::string>();
  if (vm.count("set")) bench.overrides = vm["set"].as<std::vector<std::string>>();
  hpusim::preset::load_preset(bench.preset, bench.overrides);  // report preset errors before starting
  bench.scale = vm["scale"].as<double>();
  if (vm.count("json")) bench.json_path = vm["json"].as<std::string>();
  if (vm.count("trace")) bench.trace_path = vm["trace"].as<std::string>();
  hpusim::bench::run_submit_bench(bench, std::cout);
  return 0;
}

int command_bench_tpc(const std::vector<std::string>& args) {
  po::options_description options = preset_options();
  options.add_options()
      ("help,h", "this help")
      ("json", po::value<std::string>(), "write results as a JSON array of objects")
      ("kernel", po::value<std::string>()->default_value("add,scale,triad,load_latency,mac_chain"), "kernels to run")
      ("scale", po::value<double>()->default_value(1.0), "multiply every case's tensor size")
      ("phases", po::value<unsigned>()->default_value(1),
       "run each case this many times (1-64), each start 37 ns later; print the median and the spread");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim bench tpc [options]\n" << options;
    return 0;
  }
  hpusim::bench::TpcBenchOptions bench;
  bench.card = load_card(vm);
  bench.kernels = split_list(vm["kernel"].as<std::string>());
  bench.scale = vm["scale"].as<double>();
  bench.phases = vm["phases"].as<unsigned>();
  if (vm.count("json")) bench.json_path = vm["json"].as<std::string>();
  hpusim::bench::run_tpc_bench(bench, std::cout);
  return 0;
}

// Runs `hpusim ARGS` as a child process (SystemC elaborates once per process, so each preset of
// a multi-preset bench gets its own); returns its exit status.
// The PyTorch bridge's benchmarks are Python programs (bridge/bench/): run with the build's
// Python and package, this process replaced by them.
int command_bench_python(const std::string& script, const std::string& name, const std::vector<std::string>& args) {
#ifndef HPUSIM_BRIDGE_PYTHON
  (void)script;
  (void)args;
  throw UsageError("bench " + name + " runs the PyTorch bridge, which this build does not have (scripts/build.sh "
                   "builds it)");
#else
  std::vector<std::string> words = {HPUSIM_BRIDGE_PYTHON, std::string(HPUSIM_BRIDGE_BENCH_DIR) + "/" + script};
  words.insert(words.end(), args.begin(), args.end());
  if (name == "bridge" && std::find(args.begin(), args.end(), "--hpusim") == args.end()) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) words.insert(words.begin() + 2, {"--hpusim", std::string(self, static_cast<size_t>(n))});
  }
  std::string path = HPUSIM_BRIDGE_PYTHONPATH;
  if (const char* existing = std::getenv("PYTHONPATH"); existing != nullptr && *existing != '\0') path += ":" + std::string(existing);
  setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(argv[0], argv.data());
  throw std::runtime_error("bench " + name + ": cannot run " + words[0] + ": " + std::strerror(errno));
#endif
}

// Runs this program as a child with `args`; its stdout and stderr go to `log` if one is named.
int run_child(const std::vector<std::string>& args, const std::string& log = "") {
  std::vector<std::string> all = {"/proc/self/exe"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  std::cout << std::flush;
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw std::runtime_error("cannot start a child hpusim process");
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) throw std::runtime_error("lost the child hpusim process");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}


// The JSON arrays of several files as one array.
// The records of every part file (each a JSON array of objects a child wrote), in order, as one
// array. A part a child did not write (it failed) is skipped; one that is not such an array is an
// error naming it.
std::string merge_json_arrays(const std::vector<std::string>& paths) {
  nlohmann::ordered_json merged = nlohmann::ordered_json::array();
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) continue;
    nlohmann::ordered_json part = nlohmann::ordered_json::parse(in, nullptr, false);
    if (part.is_discarded() || !part.is_array()) {
      throw std::runtime_error("'" + path + "' is not a JSON array of results");
    }
    for (auto& record : part) merged.push_back(std::move(record));
  }
  return merged.dump(2) + "\n";
}

int command_bench_gemm(const std::vector<std::string>& args) {
  po::options_description options("bench gemm");
  options.add_options()
      ("help,h", "this help")
      ("preset", po::value<std::string>()->default_value("hl205,hl225"), "built-in preset names or files, comma separated")
      ("set", po::value<std::vector<std::string>>()->composing(), "override PATH=VALUE (repeatable)")
      ("json", po::value<std::string>(), "write results as a JSON array of objects")
      ("max-size", count_value(8192), "skip shapes with a dimension above this")
      ("shapes", po::value<std::string>(), "instead of the sweep: [BATCH*]MxNxK[:f32][:rowmajor],... (bf16, A stored K x M by default)")
      ("memory", po::value<std::string>()->default_value("hbm"), "where the operands live: hbm or sram");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim bench gemm [options]\n" << options;
    return 0;
  }
  const std::vector<std::string> presets = split_list(vm["preset"].as<std::string>());
  if (presets.empty()) throw UsageError("--preset needs at least one preset");
  if (presets.size() > 1) {
    std::vector<std::string> json_parts;
    int status = 0;
    for (size_t i = 0; i < presets.size(); ++i) {
      std::vector<std::string> child = {"bench", "gemm", "--preset", presets[i], "--max-size",
                                        std::to_string(vm["max-size"].as<Count>().value), "--memory",
                                        vm["memory"].as<std::string>()};
      if (vm.count("set")) {
        for (const std::string& o : vm["set"].as<std::vector<std::string>>()) child.insert(child.end(), {"--set", o});
      }
      if (vm.count("shapes")) child.insert(child.end(), {"--shapes", vm["shapes"].as<std::string>()});
      if (vm.count("json")) {
        json_parts.push_back(vm["json"].as<std::string>() + ".part" + std::to_string(i));
        child.insert(child.end(), {"--json", json_parts.back()});
      }
      if (i > 0) std::cout << "\n";
      status = std::max(status, run_child(child));
    }
    if (vm.count("json")) {
      const std::string path = vm["json"].as<std::string>();
      std::ofstream out(path, std::ios::trunc);
      out << merge_json_arrays(json_parts);
      if (!out) throw std::runtime_error("cannot write output file '" + path + "'");
      for (const std::string& part : json_parts) std::remove(part.c_str());
    }
    return status;
  }
  std::vector<std::string> overrides;
  if (vm.count("set")) overrides = vm["set"].as<std::vector<std::string>>();
  hpusim::bench::GemmBenchOptions bench;
  bench.card = hpusim::preset::load_preset(presets[0], overrides);
  bench.max_size = vm["max-size"].as<Count>().value;
  bench.memory = vm["memory"].as<std::string>();
  if (vm.count("json")) bench.json_path = vm["json"].as<std::string>();
  if (vm.count("shapes")) {
    for (const std::string& text : split_list(vm["shapes"].as<std::string>())) {
      bench.cases.push_back(hpusim::bench::parse_gemm_case(text));
    }
  }
  hpusim::bench::run_gemm_bench(bench, std::cout);
  return 0;
}

// A command with one positional INPUT argument.
po::variables_map parse_with_input(const std::vector<std::string>& args, const po::options_description& options) {
  po::options_description all = options;
  all.add_options()("input", po::value<std::vector<std::string>>(), "input file");
  po::positional_options_description positional;
  positional.add("input", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

std::string single_input(const po::variables_map& vm, const std::string& command) {
  if (!vm.count("input")) throw UsageError(command + " needs an input file");
  const auto& inputs = vm["input"].as<std::vector<std::string>>();
  if (inputs.size() != 1) throw UsageError(command + " takes one input file, got " + std::to_string(inputs.size()));
  return inputs[0];
}

int command_tpc_as(const std::vector<std::string>& args) {
  po::options_description options("tpc-as");
  options.add_options()
      ("help,h", "this help")
      ("output,o", po::value<std::string>(), "the program file to write")
      ("include-dir,I", po::value<std::vector<std::string>>()->composing(),
       "search DIR for .include files not found next to the including file (repeatable)")
      ("define,D", po::value<std::vector<std::string>>()->composing(),
       "NAME=VALUE: as '.equ NAME VALUE' before the source (repeatable; NAME alone is 1)");
  po::variables_map vm = parse_with_input(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim tpc-as INPUT.s -o OUTPUT.bin [options]\n" << options;
    return 0;
  }
  const std::string input = single_input(vm, "tpc-as");
  if (!vm.count("output")) throw UsageError("tpc-as needs -o OUTPUT.bin");
  hpusim::tpc::AssembleOptions assemble_options;
  if (vm.count("include-dir")) assemble_options.include_dirs = vm["include-dir"].as<std::vector<std::string>>();
  if (vm.count("define")) {
    for (const std::string& define : vm["define"].as<std::vector<std::string>>()) {
      const size_t eq = define.find('=');
      if (eq == 0) throw UsageError("bad --define '" + define + "' (expected NAME=VALUE)");
      if (eq == std::string::npos) assemble_options.defines.emplace_back(define, "1");
      else assemble_options.defines.emplace_back(define.substr(0, eq), define.substr(eq + 1));
    }
  }
  const hpusim::tpc::AssembleResult result = hpusim::tpc::assemble_file(input, assemble_options);
  if (!result.ok()) {
    std::cerr << result.error_text();
    return 1;
  }
  std::string error;
  if (!hpusim::tpc::write_program_file(vm["output"].as<std::string>(), result.program, &error)) {
    throw std::runtime_error(error);
  }
  return 0;
}

int command_tpc_dis(const std::vector<std::string>& args) {
  po::options_description options("tpc-dis");
  options.add_options()
      ("help,h", "this help")
      ("output,o", po::value<std::string>(), "write the assembly text here (default: stdout)")
      ("bundle-numbers", "a '// N' comment after each bundle");
  po::variables_map vm = parse_with_input(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim tpc-dis INPUT.bin [-o OUTPUT.s] [options]\n" << options;
    return 0;
  }
  const std::string input = single_input(vm, "tpc-dis");
  std::string error;
  const auto program = hpusim::tpc::read_program_file(input, &error);
  if (!program) throw std::runtime_error(error);
  hpusim::tpc::DisassemblyOptions dis;
  dis.bundle_numbers = vm.count("bundle-numbers") != 0;
  const std::string text = hpusim::tpc::disassemble(*program, dis);
  if (!vm.count("output")) {
    std::cout << text;
    return 0;
  }
  const std::string path = vm["output"].as<std::string>();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (!out) throw std::runtime_error("cannot write output file '" + path + "'");
  return 0;
}

int command_bench_compile(const std::vector<std::string>& args) {
  po::options_description options = preset_options();
  options.add_options()("help,h", "this help")
      ("workloads", po::value<std::string>()->default_value("mlp,conv-block,bert-layer"), "zoo workloads, comma separated")
      ("steps", count_value(2), "steps per workload (>= 2: a compile, then cache hits)")
      ("json", po::value<std::string>(), "write the results as a JSON array")
      ("phases", po::value<unsigned>()->default_value(1),
       "run each workload this many times (1-64), each start 37 ns later; print the median and the spread");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim bench compile [options]\n" << options;
    return 0;
  }
  hpusim::bench::CompileBenchOptions bench;
  bench.workloads = split_list(vm["workloads"].as<std::string>());
  const auto names = hpusim::zoo::workload_names();
  for (const auto& w : bench.workloads) {
    if (std::find(names.begin(), names.end(), w) == names.end()) throw UsageError("unknown workload '" + w + "'");
  }
  bench.steps = vm["steps"].as<Count>().value;
  if (bench.steps < 2) throw UsageError("--steps must be at least 2");
  bench.phases = vm["phases"].as<unsigned>();
  if (bench.phases < 1 || bench.phases > hpusim::bench::kMaxPhases) throw UsageError("--phases must be 1 to 64");
  bench.preset = vm["preset"].as<std::string>();
  if (vm.count("set")) bench.overrides = vm["set"].as<std::vector<std::string>>();
  if (vm.count("json")) bench.json_path = vm["json"].as<std::string>();
  hpusim::preset::load_preset(bench.preset, bench.overrides);
  if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) bench.scratch_dir = tmp;
  hpusim::bench::run_compile_bench(bench, [](const std::vector<std::string>& a) { return run_child(a); }, std::cout);
  return 0;
}

// A byte count with an optional unit: 8, 64K, 32M, 1G (KiB, MiB, GiB; a trailing B or iB is allowed).
uint64_t parse_bytes(const std::string& option, const std::string& text) {
  size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (const char* suffix : {"iB", "B"}) {
    if (unit.size() > std::strlen(suffix) && unit.compare(unit.size() - std::strlen(suffix), std::string::npos, suffix) == 0) {
      unit.resize(unit.size() - std::strlen(suffix));
      break;
    }
  }
  const int shift = unit.empty() || unit == "B" ? 0 : unit == "K" || unit == "k" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (used == 0 || text[0] == '-' || shift < 0 || value > (~0ull >> shift)) {
    throw UsageError("--" + option + " '" + text + "': a byte count such as 8, 64K, 32M or 1G");
  }
  return static_cast<uint64_t>(value) << shift;
}

int command_bench_collectives(const std::vector<std::string>& args) {
  po::options_description options("bench collectives");
  options.add_options()("help,h", "this help")
      ("box", po::value<std::string>()->default_value("hls2"), "box preset: hls1, hls2 or a file")
      ("cards", count_value(0), "cards of the box to use (the first ones; 0: all)")
      ("set", po::value<std::vector<std::string>>()->composing(), "override PATH=VALUE of the box's card (repeatable)")
      ("collectives", po::value<std::string>()->default_value("all_reduce,all_gather,reduce_scatter"),
       "comma separated: all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all")
      ("min-bytes,b", po::value<std::string>()->default_value("8"), "smallest size (nccl-tests -b)")
      ("max-bytes,e", po::value<std::string>()->default_value("32M"), "largest size (nccl-tests -e)")
      ("factor,f", count_value(4), "size multiplier (nccl-tests -f)")
      ("sizes", po::value<std::string>(), "comma separated sizes instead of the range, e.g. 32M,1G")
      ("dtype", po::value<std::string>()->default_value("f32"), "f32 or bf16")
      ("op", po::value<std::string>()->default_value("sum"), "sum, min or max")
      ("algorithm", po::value<std::string>()->default_value("direct"), "all_reduce's: direct (HCCL's in-box exchange) or ring")
      ("warmup", count_value(1), "untimed calls first")
      ("iterations,n", count_value(2), "timed calls")
      ("out-of-place", "separate send and receive buffers (twice the device memory)")
      ("mpi", "split the box between the processes of an MPI run (mpirun -np N hpusim bench collectives --mpi): "
              "same cycles, rank 0 prints")
      ("trace", po::value<std::string>(), "write the timeline: NIC, DMA and host tracks (.json: Chrome JSON, else Perfetto)")
      ("json", po::value<std::string>(), "write the rows as a JSON array");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim bench collectives [options]\n" << options;
    return 0;
  }
  hpusim::bench::CollectivesBenchOptions bench;
  bench.box = vm["box"].as<std::string>();
  bench.cards = vm["cards"].as<Count>().value;
  if (vm.count("set")) bench.overrides = vm["set"].as<std::vector<std::string>>();
  bench.collectives = split_list(vm["collectives"].as<std::string>());
  bench.min_bytes = parse_bytes("min-bytes", vm["min-bytes"].as<std::string>());
  bench.max_bytes = parse_bytes("max-bytes", vm["max-bytes"].as<std::string>());
  bench.factor = vm["factor"].as<Count>().value;
  if (vm.count("sizes"))
    for (const std::string& s : split_list(vm["sizes"].as<std::string>())) bench.sizes.push_back(parse_bytes("sizes", s));
  bench.dtype = vm["dtype"].as<std::string>();
  bench.op = vm["op"].as<std::string>();
  bench.algorithm = vm["algorithm"].as<std::string>();
  bench.warmup = vm["warmup"].as<Count>().value;
  bench.iterations = vm["iterations"].as<Count>().value;
  bench.in_place = vm.count("out-of-place") == 0;
  bench.distributed = vm.count("mpi") != 0;
  if (vm.count("trace")) bench.trace_path = vm["trace"].as<std::string>();
  if (vm.count("json")) bench.json_path = vm["json"].as<std::string>();
  try {
    hpusim::preset::load_box(bench.box, hpusim::preset::load_preset(hpusim::preset::box_card_preset(bench.box), bench.overrides));
    hpusim::bench::run_collectives_bench(bench, std::cout);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const hpusim::preset::PresetError& e) {
    throw UsageError(e.what());
  }
  return 0;
}

int command_bench_kernels(const std::vector<std::string>& args) {
  po::options_description options = preset_options();
  options.add_options()("help,h", "this help")
      ("guids", po::value<std::string>()->default_value(""), "only the GUIDs this regular expression finds")
      ("quick", "the representative shape of each kernel only (no large one)")
      ("json", po::value<std::string>(), "write the rows as a JSON array")
      ("trace", po::value<std::string>(), "write the timeline of every case (.json: Chrome JSON, else Perfetto)")
      ("phases", po::value<unsigned>()->default_value(1),
       "launch each case this many times (1-64), each start 37 ns later; print the median and the spread");
  po::variables_map vm = parse(args, options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim bench kernels [options]\n" << options;
    return 0;
  }
  hpusim::bench::KernelsBenchOptions bench;
  bench.preset = vm["preset"].as<std::string>();
  if (vm.count("set")) bench.overrides = vm["set"].as<std::vector<std::string>>();
  bench.filter = vm["guids"].as<std::string>();
  bench.large = vm.count("quick") == 0;
  if (vm.count("json")) bench.json_path = vm["json"].as<std::string>();
  if (vm.count("trace")) bench.trace_path = vm["trace"].as<std::string>();
  bench.phases = vm["phases"].as<unsigned>();
  hpusim::preset::load_preset(bench.preset, bench.overrides);
  try {
    hpusim::bench::run_kernels_bench(bench, std::cout);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return 0;
}

int command_run(const std::vector<std::string>& args) {
  po::options_description options = preset_options();
  options.add_options()("help,h", "this help")
      ("workload", po::value<std::string>(), "the workload: mlp, bert-layer, conv-block")
      ("steps", count_value(5), "training steps")
      ("seed", count_value(7), "parameter and data seed")
      ("json", po::value<std::string>(), "write the per-step results as a JSON array")
      ("trace", po::value<std::string>(), "write the timeline (.json: Chrome JSON, else Perfetto)")
      ("trace-detail", po::value<std::string>()->default_value("default"),
       "default (host, launches, engines, bandwidth) or packets (also every QMAN packet and sync-object event)")
      ("stats", po::value<std::string>(), "write statistics (sorted text, and FILE.json)")
      ("quiet,q", "no table (the JSON and totals files only)")
      ("totals", po::value<std::string>(), "write the run's compile, cache and launch totals as a JSON object")
      ("start-phase-ns", po::value<uint64_t>()->default_value(0),
       "host time to wait after the set-up, before the first step (a start at another phase of the clocks)");
  const po::variables_map vm = parse(args, options, "workload");
  if (vm.count("help")) {
    std::cout << "usage: hpusim run WORKLOAD [options]\n" << options;
    return 0;
  }
  if (!vm.count("workload")) throw UsageError("run needs a workload: mlp, bert-layer or conv-block");
  const auto names = hpusim::zoo::workload_names();
  if (std::find(names.begin(), names.end(), vm["workload"].as<std::string>()) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw UsageError("unknown workload '" + vm["workload"].as<std::string>() + "' (available: " + list + ")");
  }
  hpusim::zoo::RunOptions run;
  run.workload = vm["workload"].as<std::string>();
  run.steps = vm["steps"].as<Count>().value;
  run.seed = vm["seed"].as<Count>().value;
  run.preset = vm["preset"].as<std::string>();
  if (vm.count("set")) run.overrides = vm["set"].as<std::vector<std::string>>();
  if (vm.count("json")) run.json_path = vm["json"].as<std::string>();
  if (vm.count("trace")) run.trace_path = vm["trace"].as<std::string>();
  if (vm.count("stats")) run.stats_path = vm["stats"].as<std::string>();
  run.start_phase_ns = vm["start-phase-ns"].as<uint64_t>();
  if (run.steps == 0) throw UsageError("--steps must be at least 1");
  const std::string detail = vm["trace-detail"].as<std::string>();
  if (detail != "default" && detail != "packets") {
    throw UsageError("--trace-detail '" + detail + "': default or packets");
  }
  setenv("HPUSIM_TRACE_DETAIL", detail.c_str(), 1);   // read where the Synapse layer brings the card up
  hpusim::preset::load_preset(run.preset, run.overrides);   // a bad preset is a usage error, named now
  hpusim::zoo::RunTotals totals;
  std::ostream quiet(nullptr);
  hpusim::zoo::run_workload(run, vm.count("quiet") ? quiet : std::cout, &totals);
  if (vm.count("totals")) {
    std::ofstream out(vm["totals"].as<std::string>());
    out << "{\"compiles\": " << totals.compiles << ", \"cache_hits\": " << totals.cache_hits
        << ", \"cache_misses\": " << totals.cache_misses << ", \"corrupt_recipes\": " << totals.corrupt_recipes
        << ", \"compile_ns\": " << totals.compile_ns << ", \"compiled_nodes\": " << totals.compiled_nodes
        << ", \"launches\": " << totals.launches << ", \"patches\": " << totals.patches
        << ", \"launch_host_ns\": " << totals.launch_host_ns
        << ", \"launch_prepare_ns\": " << totals.launch_prepare_ns << "}\n";
    if (!out) throw std::runtime_error("could not write '" + vm["totals"].as<std::string>() + "'");
  }
  return 0;
}


int command_report(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "correlation") {
    throw UsageError("report needs a report name: correlation");
  }
  po::options_description options;
  options.add_options()("help,h", "this help")
      ("quick", "only the quick rows (a minute or so; what the golden-tier test runs)")
      ("json", po::value<std::string>(), "also write the rows as JSON")
      ("work-dir", po::value<std::string>(), "keep the benchmarks' JSON and logs here (default: a temporary "
                                             "directory, removed unless something failed)");
  const po::variables_map vm = parse(std::vector<std::string>(args.begin() + 1, args.end()), options);
  if (vm.count("help")) {
    std::cout << "usage: hpusim report correlation [--quick] [--json FILE] [--work-dir DIR]\n"
                 "  Every published number hpusim reproduces, its source, hpusim's value, the error and a\n"
                 "  verdict against the row's tolerance. The full report runs large GEMMs and 8- and\n"
                 "  16-card all_reduces (about an hour).\n"
              << options;
    return 0;
  }
  hpusim::report::CorrelationOptions correlation;
  correlation.quick = vm.count("quick") > 0;
#ifndef HPUSIM_BRIDGE_PYTHON
  correlation.with_bridge = false;
#endif
  const bool own_dir = !vm.count("work-dir");
  if (own_dir) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/hpusim-correlation-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a directory under " + pattern);
    correlation.work_dir = pattern;
  } else {
    correlation.work_dir = vm["work-dir"].as<std::string>();
    std::filesystem::create_directories(correlation.work_dir);
  }
  if (vm.count("json") && !std::ofstream(vm["json"].as<std::string>(), std::ios::app)) {
    throw std::runtime_error("cannot write output file '" + vm["json"].as<std::string>() + "'");
  }
  std::cout << "hpusim report correlation" << (correlation.quick ? " (quick)" : "") << "\n";
  const auto rows = hpusim::report::run_correlation(
      correlation, [](const std::vector<std::string>& a, const std::string& log) { return run_child(a, log); }, std::cout);
  std::cout << "\n";
  hpusim::report::write_correlation_table(rows, std::cout);
  if (vm.count("json")) hpusim::report::write_correlation_json(rows, vm["json"].as<std::string>());
  bool complete = true;
  for (const auto& r : rows) complete = complete && r.failure.empty();
  if (own_dir && complete) std::filesystem::remove_all(correlation.work_dir);
  if (!complete) std::cout << "benchmark outputs kept in " << correlation.work_dir << "\n";
  return complete ? 0 : 1;
}

int command_analyze(const std::vector<std::string>& args) {
  po::options_description options;
  options.add_options()("help,h", "this help")
      ("trace", po::value<std::string>(), "the trace (Perfetto, or Chrome JSON: hpusim's or torch.profiler's)")
      ("html", po::value<std::string>(), "also write the report as one self-contained HTML file")
      ("json", po::value<std::string>(), "also write the report as JSON");
  const po::variables_map vm = parse(args, options, "trace");
  if (vm.count("help")) {
    std::cout << "usage: hpusim analyze TRACE [--html REPORT.html] [--json REPORT.json]\n" << options;
    return 0;
  }
  if (!vm.count("trace")) throw UsageError("analyze needs a trace file");
  const std::string path = vm["trace"].as<std::string>();
  const hpusim::analyze::Report report = hpusim::analyze::analyze(hpusim::traces::read_trace(path), path);
  hpusim::analyze::write_text(report, std::cout);
  const auto write = [](const std::string& file, auto writer) {
    std::ofstream out(file);
    writer(out);
    if (!out) throw std::runtime_error("could not write '" + file + "'");
  };
  if (vm.count("json")) write(vm["json"].as<std::string>(), [&](std::ostream& o) { hpusim::analyze::write_json(report, o); });
  if (vm.count("html")) {
    write(vm["html"].as<std::string>(), [&](std::ostream& o) { hpusim::analyze::write_html(report, o); });
    std::cout << "\nHTML report: " << vm["html"].as<std::string>() << "\n";
  }
  return 0;
}

int dispatch(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
    print_usage(argv.empty() ? std::cerr : std::cout);
    return argv.empty() ? kUsageError : 0;
  }
  const std::string& command = argv[0];
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (command == "info") return command_info(rest);
  if (command == "presets") return command_presets();
  if (command == "run") return command_run(rest);
  if (command == "analyze") return command_analyze(rest);
  if (command == "report") return command_report(rest);
  if (command == "tpc-as") return command_tpc_as(rest);
  if (command == "tpc-dis") return command_tpc_dis(rest);
  if (command == "bench") {
    if (rest.empty()) {
      throw UsageError("bench needs a benchmark name: memory, submit, tpc, gemm, compile, bridge or modes");
    }
    std::string which = rest[0];
    std::vector<std::string> bench_args(rest.begin() + 1, rest.end());
    if (which == "memory") return command_bench_memory(bench_args);
    if (which == "submit") return command_bench_submit(bench_args);
    if (which == "tpc") return command_bench_tpc(bench_args);
    if (which == "gemm") return command_bench_gemm(bench_args);
    if (which == "compile") return command_bench_compile(bench_args);
    if (which == "kernels") return command_bench_kernels(bench_args);
    if (which == "collectives") return command_bench_collectives(bench_args);
    if (which == "bridge") return command_bench_python("bench_bridge.py", "bridge", bench_args);
    if (which == "modes") return command_bench_python("bench_modes.py", "modes", bench_args);
    throw UsageError("unknown benchmark '" + which + "' (available: memory, submit, tpc, gemm, compile, kernels, bridge, modes)");
  }
  throw UsageError("unknown command '" + command + "'");
}

}  // namespace

int main(int argc, char** argv) {
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return dispatch(args);
  } catch (const UsageError& e) {
    std::cerr << "hpusim: error: " << e.what() << "\n";
    print_usage(std::cerr);
    return kUsageError;
  } catch (const hpusim::preset::PresetError& e) {
    std::cerr << "hpusim: error: " << e.what() << "\n";
    return kUsageError;
  } catch (const std::exception& e) {
    std::cerr << "hpusim: error: " << e.what() << "\n";
    return 1;
  }
}
