#include "sim/report/correlation.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>

#include "sim/report/json_records.h"

namespace hpusim::report {
namespace {

using nlohmann::json;

constexpr const char* kHotChips = "Hot Chips 2024, Kaplan, Intel Gaudi 3 (generation table)";
constexpr const char* kDebunking = "Lee et al., arXiv:2501.00210 (ISCA 2025), via summaries";
constexpr const char* kHpuGraphs = "docs.habana.ai HPU Graphs for Training (MNIST example)";
constexpr const char* kDramsim3 = "DRAMsim3 29817593, HBM2_8Gb_x128 (measured; hw/hbm/README.md)";
constexpr const char* kHccl = "HCCL all_reduce fp32, HLS-Gaudi2, 8 cards (hccl_demo-style report)";

CorrelationRow row(std::string id, std::string quantity, std::string preset, std::string unit, double published,
                   std::string source, Comparison comparison, double tolerance_pct, bool quick) {
  CorrelationRow r;
  r.id = std::move(id);
  r.quantity = std::move(quantity);
  r.preset = std::move(preset);
  r.unit = std::move(unit);
  r.published = published;
  r.source = std::move(source);
  r.comparison = comparison;
  r.tolerance_pct = tolerance_pct;
  r.quick = quick;
  return r;
}

// One benchmark run: its arguments ("{json}" stands for its output file) and how its JSON fills
// rows.
struct Job {
  std::string name;
  bool quick;
  bool bridge;
  std::vector<std::string> args;
  std::function<void(const json&, std::map<std::string, double>&)> extract;
};

const json& only_row(const json& results) {
  if (!results.is_array() || results.empty()) throw std::runtime_error("the benchmark wrote no results");
  return results.front();
}

std::vector<Job> jobs() {
  std::vector<Job> list;
  list.push_back({"HBM controller vs DRAMsim3 (13 cases)", true, false, {"bench", "memory", "--suite", "dramsim3", "--json", "{json}"},
                  [](const json& results, std::map<std::string, double>& values) {
                    for (const json& r : results) {
                      const std::string key = r.at("pattern").get<std::string>() + "_" +
                                              std::to_string(r.at("request_bytes").get<int>());
                      values["dramsim3." + key + ".gbps"] = r.at("gbps").get<double>();
                      values["dramsim3." + key + ".read_cycles"] = r.at("read_latency_ns").get<double>();   // tCK 1 ns
                    }
                  }});
  for (const char* preset : {"hl205", "hl225", "hl325"}) {
    const bool quick = std::string(preset) != "hl325";
    list.push_back({std::string("HBM sequential read, ") + preset, quick, false,
                    {"bench", "memory", "--preset", preset, "--memory", "hbm", "--pattern", "seq", "--bytes", "1024",
                     "--count", "60000", "--window", "512", "--json", "{json}"},
                    [preset](const json& results, std::map<std::string, double>& values) {
                      values[std::string("hbm.") + preset + ".stream"] = only_row(results).at("gbps").get<double>();
                    }});
    list.push_back({std::string("PCIe host reads (DMA from host), ") + preset, quick, false,
                    {"bench", "memory", "--preset", preset, "--memory", "pcie", "--pattern", "seq", "--bytes", "4096",
                     "--count", "20000", "--window", "64", "--ports", "2", "--json", "{json}"},
                    [preset](const json& results, std::map<std::string, double>& values) {
                      values[std::string("pcie.") + preset + ".read"] = only_row(results).at("gbps").get<double>();
                    }});
  }
  list.push_back({"DMA through the driver (CS with LIN_DMA), hl205", true, false,
                  {"bench", "submit", "--preset", "hl205", "--json", "{json}"},
                  [](const json& results, std::map<std::string, double>& values) {
                    // The largest transfer of each direction.
                    std::map<std::string, std::pair<double, double>> best;   // case -> (bytes, GB/s)
                    for (const json& r : results) {
                      const std::string name = r.at("case").get<std::string>();
                      if (name.rfind("dma_", 0) != 0) continue;
                      const double bytes = r.at("size_bytes").get<double>();
                      if (bytes >= best[name].first) best[name] = {bytes, r.at("sim_gb_per_s").get<double>()};
                    }
                    for (const auto& [name, b] : best) values["dma.hl205." + name.substr(4)] = b.second;
                  }});
  list.push_back({"TPC gathers of random 256 B and 64 B rows (embedding_fwd_f32), hl225", true, false,
                  {"bench", "kernels", "--preset", "hl225", "--guids", "^embedding_fwd_f32$", "--json", "{json}"},
                  [](const json& results, std::map<std::string, double>& values) {
                    for (const json& r : results) {
                      const std::string shape = r.at("shape").get<std::string>();
                      for (const char* bytes : {"256", "64"}) {
                        if (shape.rfind(std::string("gather") + bytes + "B ", 0) == 0) {
                          values[std::string("tpc.hl225.gather_") + bytes] = r.at("pct_roofline").get<double>();
                        }
                      }
                    }
                  }});
  list.push_back({"TPC STREAM add/scale/triad, hl225", true, false,
                  {"bench", "tpc", "--preset", "hl225", "--kernel", "add,scale,triad", "--json", "{json}"},
                  [](const json& results, std::map<std::string, double>& values) {
                    // The largest tensor of each kernel.
                    std::map<std::string, std::pair<double, double>> best;   // kernel -> (bytes, % of HBM)
                    for (const json& r : results) {
                      const std::string kernel = r.at("kernel").get<std::string>();
                      const double bytes = r.at("tensor_bytes").get<double>();
                      if (r.at("tpcs").get<int>() > 1 && bytes >= best[kernel].first) {
                        best[kernel] = {bytes, r.at("pct_mem_bw").get<double>()};
                      }
                    }
                    for (const auto& [kernel, b] : best) values["tpc.hl225.stream_" + kernel] = b.second;
                  }});
  list.push_back({"BF16 GEMM 8192^3, hl225 (about 4 min)", false, false,
                  {"bench", "gemm", "--preset", "hl225", "--shapes", "8192x8192x8192", "--json", "{json}"},
                  [](const json& results, std::map<std::string, double>& values) {
                    values["gemm.hl225.bf16_8192"] = only_row(results).at("tflops").get<double>();
                  }});
  for (const char* preset : {"hl205", "hl325"}) {
    list.push_back({std::string("BF16 GEMM 4096^3, ") + preset, false, false,
                    {"bench", "gemm", "--preset", preset, "--shapes", "4096x4096x4096", "--json", "{json}"},
                    [preset](const json& results, std::map<std::string, double>& values) {
                      values[std::string("gemm.") + preset + ".bf16_4096"] = only_row(results).at("tflops").get<double>();
                    }});
  }
  for (const auto& [size, minutes] : {std::make_pair(std::string("32M"), std::string("about 3 min")),
                                      std::make_pair(std::string("1G"), std::string("about 40 min"))}) {
    list.push_back({"HCCL all_reduce " + size + ", 8 cards of hls2 (" + minutes + ")", false, false,
                    {"bench", "collectives", "--box", "hls2", "--collectives", "all_reduce", "--sizes", size, "--warmup",
                     size == "1G" ? "0" : "1", "--iterations", size == "1G" ? "1" : "2", "--json", "{json}"},
                    [size](const json& results, std::map<std::string, double>& values) {
                      values[std::string("allreduce.hls2.") + (size == "1G" ? "1gib" : "32mib")] =
                          only_row(results).at("busbw_gbps").get<double>();
                    }});
  }
  list.push_back({"HCCL all_reduce 32M, 16 cards of hls2x2 (about 7 min)", false, false,
                  {"bench", "collectives", "--box", "hls2x2", "--collectives", "all_reduce", "--sizes", "32M", "--json",
                   "{json}"},
                  [](const json& results, std::map<std::string, double>& values) {
                    values["allreduce.hls2x2.32mib"] = only_row(results).at("busbw_gbps").get<double>();
                  }});
  list.push_back({"host time per execution mode (seeds' MNIST, modeled host)", false, true,
                  {"bench", "modes", "--host-time", "modeled", "--modes", "lazy,make_graphed_callables,capture_replay",
                   "--json", "{json}"},
                  [](const json& results, std::map<std::string, double>& values) {
                    const json& modeled = results.at("results").at("modeled");
                    for (const char* mode : {"lazy", "make_graphed_callables", "capture_replay"}) {
                      values[std::string("modes.") + mode + ".host_ms"] = modeled.at(mode).at("host_ms").get<double>();
                    }
                    values["modes.lazy_over_capture_replay"] = modeled.at("lazy").at("host_ms").get<double>() /
                                                                modeled.at("capture_replay").at("host_ms").get<double>();
                  }});
  return list;
}

std::string format_number(double v) {
  char buffer[32];
  const double a = std::fabs(v);
  std::snprintf(buffer, sizeof buffer, a >= 100 ? "%.1f" : a >= 10 ? "%.2f" : "%.3f", v);
  return buffer;
}

}  // namespace

std::vector<CorrelationRow> correlation_rows() {
  using C = Comparison;
  std::vector<CorrelationRow> rows;
  // The HBM controller against DRAMsim3 on DRAMsim3's own configuration (the same request streams).
  rows.push_back(row("dramsim3.seq_read_64.gbps", "HBM2 sequential read 64 B vs DRAMsim3", "dramsim3-hbm2", "GB/s",
                     236.914, kDramsim3, C::kValue, 1.0, true));
  rows.push_back(row("dramsim3.rand_read_64.gbps", "HBM2 random read 64 B vs DRAMsim3", "dramsim3-hbm2", "GB/s",
                     61.696, kDramsim3, C::kValue, 1.0, true));
  rows.push_back(row("dramsim3.rand_mix70r_256.gbps", "HBM2 random 70/30 read/write 256 B vs DRAMsim3",
                     "dramsim3-hbm2", "GB/s", 187.074, kDramsim3, C::kValue, 1.0, true));
  rows.push_back(row("dramsim3.rand_mix50r_256.gbps", "HBM2 random 50/50 read/write 256 B vs DRAMsim3",
                     "dramsim3-hbm2", "GB/s", 180.132, kDramsim3, C::kValue, 1.0, true));
  rows.push_back(row("dramsim3.latency_read_64.read_cycles", "HBM2 unloaded random read latency vs DRAMsim3",
                     "dramsim3-hbm2", "cycles", 38.32, kDramsim3, C::kValue, 1.0, true));
  // HBM streaming against the published peaks (hpusim may not exceed a peak).
  rows.push_back(row("hbm.hl205.stream", "HBM sequential read 1 KB, of the 900 GB/s peak", "hl205", "GB/s", 900,
                     kHotChips, C::kBelowPeak, 15, true));
  rows.push_back(row("hbm.hl225.stream", "HBM sequential read 1 KB, of the 2.46 TB/s peak", "hl225", "GB/s", 2460,
                     kHotChips, C::kBelowPeak, 15, true));
  rows.push_back(row("hbm.hl325.stream", "HBM sequential read 1 KB, of the 3.67 TB/s peak", "hl325", "GB/s", 3670,
                     kHotChips, C::kBelowPeak, 15, false));
  // Random access as the paper measures it: TPC gathers of random rows (>= 256 B: ~64 % of peak;
  // < 256 B: ~15 %), here the kernel library's embedding_fwd on 16 MB tables, all bytes it moves.
  rows.push_back(row("tpc.hl225.gather_256", "TPC gather of random 256 B rows, 24 TPCs (embedding_fwd_f32)", "hl225",
                     "% of HBM", 64, kDebunking, C::kValue, 25, true));
  rows.push_back(row("tpc.hl225.gather_64", "TPC gather of random 64 B rows, 24 TPCs (embedding_fwd_f32)", "hl225",
                     "% of HBM", 15, kDebunking, C::kValue, 25, true));
  // TPC STREAM shapes, as % of the memory roofline (the paper: ADD/SCALE ~50 %, TRIAD ~99 %).
  rows.push_back(row("tpc.hl225.stream_add", "TPC STREAM ADD, f32, 24 TPCs", "hl225", "% of HBM", 50, kDebunking,
                     C::kValue, 15, true));
  rows.push_back(row("tpc.hl225.stream_scale", "TPC STREAM SCALE, f32, 24 TPCs", "hl225", "% of HBM", 50, kDebunking,
                     C::kValue, 15, true));
  rows.push_back(row("tpc.hl225.stream_triad", "TPC STREAM TRIAD, f32, 24 TPCs", "hl225", "% of HBM", 99, kDebunking,
                     C::kValue, 15, true));
  // Host-device DMA: the PCIe link's published rate per direction.
  rows.push_back(row("pcie.hl205.read", "PCIe Gen4 x16 reads of host memory, 4 KB (64 GB/s both ways)", "hl205",
                     "GB/s", 32, kHotChips, C::kBelowPeak, 20, true));
  rows.push_back(row("pcie.hl225.read", "PCIe Gen4 x16 reads of host memory, 4 KB (64 GB/s both ways)", "hl225",
                     "GB/s", 32, kHotChips, C::kBelowPeak, 20, true));
  rows.push_back(row("pcie.hl325.read", "PCIe Gen5 x16 reads of host memory, 4 KB (128 GB/s both ways)", "hl325",
                     "GB/s", 64, kHotChips, C::kBelowPeak, 20, false));
  rows.push_back(row("dma.hl205.host_to_dram", "DMA host -> HBM through the driver, 64 MB", "hl205", "GB/s", 32,
                     kHotChips, C::kBelowPeak, 20, true));
  rows.push_back(row("dma.hl205.dram_to_host", "DMA HBM -> host through the driver, 64 MB", "hl205", "GB/s", 32,
                     kHotChips, C::kBelowPeak, 20, true));
  // GEMM efficiency.
  rows.push_back(row("gemm.hl225.bf16_8192", "BF16 GEMM 8192^3 (~99.3 % of 432 TFLOPS)", "hl225", "TFLOPS", 429,
                     kDebunking, C::kValue, 5, false));
  rows.push_back(row("gemm.hl205.bf16_4096", "BF16 GEMM 4096^3, of the 60 TFLOPS peak", "hl205", "TFLOPS", 60,
                     kHotChips, C::kBelowPeak, 15, false));
  rows.push_back(row("gemm.hl325.bf16_4096", "BF16 GEMM 4096^3, of the 1835 TFLOPS peak", "hl325", "TFLOPS", 1835,
                     kHotChips, C::kBelowPeak, 15, false));
  // The seeds' host time per execution mode (modeled host time of the bridge).
  rows.push_back(row("modes.lazy.host_ms", "MNIST training step host time, lazy", "hl205", "ms", 4.8, kHpuGraphs,
                     C::kValue, 25, false));
  rows.push_back(row("modes.make_graphed_callables.host_ms", "... with make_graphed_callables", "hl205", "ms", 3.9,
                     kHpuGraphs, C::kValue, 25, false));
  rows.push_back(row("modes.capture_replay.host_ms", "... with HPU graph capture and replay", "hl205", "ms", 1.3,
                     kHpuGraphs, C::kValue, 25, false));
  rows.push_back(row("modes.lazy_over_capture_replay", "host time lazy / capture-replay", "hl205", "x", 4.8 / 1.3,
                     kHpuGraphs, C::kValue, 25, false));
  // Collectives: hccl_demo's NW BW (nccl-tests' bus bandwidth) of all_reduce on 8 cards.
  rows.push_back(row("allreduce.hls2.32mib", "all_reduce 32 MiB bus bandwidth, 8 cards", "hls2", "GB/s", 258.26,
                     std::string(kHccl) + "; HabanaAI vllm-fork DeepSeek-on-Gaudi guide", C::kValue, 15, false));
  rows.push_back(row("allreduce.hls2.1gib", "all_reduce 1 GiB bus bandwidth, 8 cards", "hls2", "GB/s", 258.2,
                     std::string(kHccl) + "; a third-party hccl_demo note", C::kValue, 15, false));
  // Two boxes joined rail by rail: HCCL's hierarchical all_reduce.
  rows.push_back(row("allreduce.hls2x2.32mib", "all_reduce 32 MiB bus bandwidth, 16 cards (2 boxes)", "hls2x2", "GB/s",
                     205.90, "HCCL all_reduce, 16 Gaudi 2 cards in 2 boxes; HabanaAI vllm-fork examples/deepseek_on_gaudi",
                     C::kValue, 15, false));
  return rows;
}

void judge(CorrelationRow& row, double hpusim) {
  row.measured = true;
  row.hpusim = hpusim;
  row.error_pct = row.published != 0 ? 100.0 * (hpusim - row.published) / row.published : 0.0;
  if (row.comparison == Comparison::kBelowPeak) {
    row.pass = row.error_pct <= 1e-9 && -row.error_pct <= row.tolerance_pct;
  } else {
    row.pass = std::fabs(row.error_pct) <= row.tolerance_pct;
  }
}

std::vector<CorrelationRow> run_correlation(const CorrelationOptions& options, const ChildRunner& run_child,
                                            std::ostream& progress) {
  std::vector<CorrelationRow> rows = correlation_rows();
  std::map<std::string, double> values;
  std::map<std::string, std::string> failures;   // job -> why
  const std::vector<Job> all = jobs();
  size_t index = 0;
  size_t wanted = 0;
  for (const Job& job : all) wanted += (!options.quick || job.quick) ? 1 : 0;
  for (const Job& job : all) {
    if (options.quick && !job.quick) continue;
    ++index;
    const std::string stem = options.work_dir + "/job" + std::to_string(index);
    std::vector<std::string> args = job.args;
    for (std::string& a : args) {
      if (a == "{json}") a = stem + ".json";
    }
    progress << "[" << index << "/" << wanted << "] " << job.name << " ..." << std::flush;
    std::string failure;
    if (job.bridge && !options.with_bridge) {
      failure = "this build has no PyTorch bridge";
    } else if (run_child(args, stem + ".log") != 0) {
      failure = "the benchmark failed (log: " + stem + ".log)";
    } else {
      try {
        std::ifstream in(stem + ".json");
        job.extract(json::parse(in), values);
      } catch (const std::exception& e) {
        failure = std::string("unreadable results (") + e.what() + ", " + stem + ".json)";
      }
    }
    progress << (failure.empty() ? " done" : " FAILED: " + failure) << "\n";
    if (!failure.empty()) failures[job.name] = failure;
  }
  for (CorrelationRow& r : rows) {
    if (!r.pending.empty() || (options.quick && !r.quick)) continue;
    const auto it = values.find(r.id);
    if (it != values.end()) {
      judge(r, it->second);
    } else {
      r.failure = failures.empty() ? "no value in the benchmark's results"
                                   : "not measured: a benchmark failed (see its line above the table)";
    }
  }
  return rows;
}

void write_correlation_table(const std::vector<CorrelationRow>& rows, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %-13s %-10s %10s %10s %8s %9s  %-7s %s\n", "id", "preset", "unit",
                "public", "hpusim", "error %", "tolerance", "verdict", "quantity (source)");
  out << line << std::string(150, '-') << "\n";
  size_t measured = 0, passed = 0;
  for (const CorrelationRow& r : rows) {
    std::string verdict, value = "-", error = "-";
    if (!r.pending.empty()) {
      verdict = "pending";
    } else if (!r.measured) {
      verdict = r.failure.empty() ? "skipped" : "missing";
    } else {
      ++measured;
      passed += r.pass ? 1 : 0;
      verdict = r.pass ? "pass" : "FAIL";
      value = format_number(r.hpusim);
      char e[32];
      std::snprintf(e, sizeof e, "%+.2f", r.error_pct);
      error = e;
    }
    char tolerance[32];
    std::snprintf(tolerance, sizeof tolerance, "%s%g %%", r.comparison == Comparison::kBelowPeak ? "-" : "±",
                  r.tolerance_pct);
    std::snprintf(line, sizeof line, "%-40s %-13s %-10s %10s %10s %8s %9s  %-7s %s (%s)\n", r.id.c_str(),
                  r.preset.c_str(), r.unit.c_str(), format_number(r.published).c_str(), value.c_str(), error.c_str(),
                  tolerance, verdict.c_str(), r.quantity.c_str(), r.source.c_str());
    out << line;
    if (!r.pending.empty()) out << "    pending: " << r.pending << "\n";
    if (!r.measured && !r.failure.empty()) out << "    " << r.failure << "\n";
  }
  out << passed << " of " << measured << " measured rows within tolerance";
  std::vector<std::string> failing;
  for (const CorrelationRow& r : rows) {
    if (r.measured && !r.pass) failing.push_back(r.id);
  }
  if (!failing.empty()) {
    out << "; outside:";
    for (const std::string& id : failing) out << " " << id;
  }
  out << "\n";
}

void write_correlation_json(const std::vector<CorrelationRow>& rows, const std::string& path) {
  std::vector<JsonRecord> records;
  for (const CorrelationRow& r : rows) {
    JsonRecord record;
    record.add("id", r.id)
        .add("quantity", r.quantity)
        .add("preset", r.preset)
        .add("unit", r.unit)
        .add("published", r.published)
        .add("source", r.source)
        .add("comparison", std::string(r.comparison == Comparison::kBelowPeak ? "below_peak" : "value"))
        .add("tolerance_pct", r.tolerance_pct)
        .add("quick", r.quick)
        .add("measured", r.measured);
    if (r.measured) {
      record.add("hpusim", r.hpusim).add("error_pct", r.error_pct).add("pass", r.pass);
    }
    if (!r.pending.empty()) record.add("pending", r.pending);
    if (!r.failure.empty()) record.add("failure", r.failure);
    records.push_back(std::move(record));
  }
  write_json_records(records, path);
}

}  // namespace hpusim::report
