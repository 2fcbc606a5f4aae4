#include "sim/bench/tpc_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <regex>
#include <stdexcept>

#include "hw/card/card.h"
#include "arch/regs/gaudi1_map.h"
#include "arch/tpc/asm/assembler.h"
#include "arch/tpc/numerics.h"
#include "hw/tpc/tpc_core.h"
#include "arch/tpc/tpc_launch.h"
#include "sim/bench/bench_card.h"
#include "sim/bench/start_phase.h"
#include "sim/cosim/cosimulation.h"
#include "sim/cosim/host_port.h"
#include "sim/report/json_records.h"

namespace hpusim::bench {

namespace {

const char* find_source(const std::string& name) {
  for (const TpcBenchKernelSource& k : tpc_bench_kernel_sources()) {
    if (name == k.name) return k.text;
  }
  return nullptr;
}

// ADD and TRIAD share stream_binary.s; its `COMPUTE Vd, Vb` becomes the kernel's vector op.
std::optional<std::string> stream_binary_source(const std::string& name) {
  std::string op;
  if (name == "stream_add") op = "add.f32 $1, $1, $2";
  else if (name == "stream_triad") op = "mac.f32 $1, $2, S0";
  else return std::nullopt;
  const char* shared = find_source("stream_binary");
  if (shared == nullptr) throw std::logic_error("the bench kernel stream_binary is not embedded");
  static const std::regex compute(R"(COMPUTE (V[^,]+), (V[^,;\s]+))");
  return std::regex_replace(std::string(shared), compute, op);
}

}  // namespace

uint32_t tpc_bench_stream_lookahead(const std::string& name, uint32_t prefetch_entries) {
  // stream_binary.s keeps two reads a vector in flight, for AHEAD vectors and its group of 16;
  // stream_scale.s one a vector, for AHEAD vectors and its group of 32.
  int64_t ahead = 0;
  if (name == "stream_add" || name == "stream_triad") ahead = int64_t{prefetch_entries} / 2 - 16;
  else if (name == "stream_scale") ahead = int64_t{prefetch_entries} - 32;
  else return 0;
  return static_cast<uint32_t>(std::max<int64_t>(ahead, 1));
}

tpc::Program assemble_tpc_bench_kernel(const std::string& name, tpc::DType dtype, uint32_t prefetch_entries) {
  std::string source;
  if (auto binary = stream_binary_source(name)) {
    source = *binary;
  } else {
    const char* text = name == "stream_binary" ? nullptr : find_source(name);
    if (text == nullptr) throw std::invalid_argument("unknown bench TPC kernel '" + name + "'");
    source = text;
  }
  if (const uint32_t ahead = tpc_bench_stream_lookahead(name, prefetch_entries); ahead != 0) {
    static const std::regex ahead_line(R"(\.equ AHEAD \d+)");
    if (!std::regex_search(source, ahead_line)) throw std::logic_error("bench kernel " + name + " has no AHEAD");
    source = std::regex_replace(source, ahead_line, ".equ AHEAD " + std::to_string(ahead));
  }
  if (name == "mac_chain") {
    if (dtype == tpc::DType::F32) source += "\n        MAC_CHAIN f32, 64\n";
    else if (dtype == tpc::DType::BF16) source += "\n        MAC_CHAIN bf16, 128\n";
    else throw std::invalid_argument("mac_chain runs on f32 or bf16, not " + std::string(tpc::dtype_name(dtype)));
  } else if (dtype != tpc::DType::F32) {
    throw std::invalid_argument(name + " runs on f32 only");
  }
  const tpc::AssembleResult result = tpc::assemble(source, "tpc_kernels/" + name + ".s");
  if (!result.ok()) throw std::runtime_error("bench kernel " + name + " does not assemble:\n" + result.error_text());
  return result.program;
}

uint32_t tpc_bench_kernel_group(const std::string& name, tpc::DType dtype) {
  if (name == "stream_add" || name == "stream_triad") return 1024;
  if (name == "stream_scale") return 2048;
  if (name == "mac_chain") return 16 * (2048 / tpc::dtype_bits(dtype));
  if (name == "load_latency") return 64;
  throw std::invalid_argument("unknown bench TPC kernel '" + name + "'");
}

namespace {

constexpr unsigned kFirstSob = 200;              // one sync object per case from here

// What a kernel reads, writes and computes per element, and how it is launched.
struct KernelInfo {
  const char* file;          // tpc_kernels/<file>.s
  unsigned inputs;           // tensors 0 .. inputs-1 are read, tensor `inputs` is written
  double flops_per_element;  // mac = 2, add / mul = 1 (mac_chain: times K)
};

const std::map<std::string, KernelInfo>& kernel_table() {
  static const std::map<std::string, KernelInfo> table = {
      {"add", {"stream_add", 2, 1.0}},
      {"scale", {"stream_scale", 1, 1.0}},
      {"triad", {"stream_triad", 2, 2.0}},
      {"mac_chain", {"mac_chain", 1, 2.0}},
      {"load_latency", {"load_latency", 1, 1.0}},
  };
  return table;
}

struct CaseDef {
  std::string kernel;
  tpc::DType dtype;
  uint64_t tensor_bytes;     // at scale 1
  unsigned tpcs;
  uint32_t macs = 0;         // mac_chain: K
};

// Input values (exact in f32; periodic, so a 4096-element chunk fills any tensor).
float input_a(uint64_t i) { return static_cast<float>((i * 37) % 1024) * 0.25f - 100.0f; }
float input_b(uint64_t i) { return static_cast<float>((i * 11) % 512) * 0.125f + 0.5f; }
float input_x(uint64_t i) { return 1.0f + static_cast<float>(i % 1024) / 1024.0f; }
constexpr float kScale = 0.75f;            // SCALE's s
constexpr float kTriad = 0.375f;           // TRIAD's s
constexpr float kChainStep = 1.0f / 256;   // mac_chain's s (exact in bf16)
constexpr uint64_t kChunk = 4096;

// The references compute exactly what the kernels do (non-fused mac: the product is rounded
// first; volatile keeps the compiler from contracting it into an FMA).
float ref_mac(float d, float a, float b) {
  volatile float product = a * b;
  return d + product;
}
uint32_t reference(const CaseDef& c, uint64_t i) {
  if (c.kernel == "add") return tpc::f32_bits(input_a(i) + input_b(i));
  if (c.kernel == "scale") return tpc::f32_bits(input_a(i) * kScale);
  if (c.kernel == "triad") return tpc::f32_bits(ref_mac(input_a(i), input_b(i), kTriad));
  if (c.dtype == tpc::DType::F32) {
    float y = input_x(i);
    for (uint32_t k = 0; k < c.macs; ++k) y = ref_mac(y, y, kChainStep);
    return tpc::f32_bits(y);
  }
  uint16_t y = tpc::f32_to_bf16(input_x(i));
  for (uint32_t k = 0; k < c.macs; ++k) {
    const float f = tpc::bf16_to_f32(y);
    y = tpc::f32_to_bf16(ref_mac(f, f, kChainStep));
  }
  return y;
}

std::vector<CaseDef> default_cases(const std::vector<std::string>& kernels, unsigned tpcs) {
  std::vector<CaseDef> cases;
  auto wanted = [&](const std::string& k) { return std::find(kernels.begin(), kernels.end(), k) != kernels.end(); };
  for (const char* stream : {"add", "scale", "triad"}) {
    if (!wanted(stream)) continue;
    cases.push_back({stream, tpc::DType::F32, 16ull << 20, tpcs});
    cases.push_back({stream, tpc::DType::F32, 64ull << 20, tpcs});
  }
  if (wanted("add")) cases.push_back({"add", tpc::DType::F32, 4ull << 20, 1});   // what one TPC reaches
  if (wanted("load_latency")) cases.push_back({"load_latency", tpc::DType::F32, 512ull << 10, 1});
  if (wanted("mac_chain")) {
    cases.push_back({"mac_chain", tpc::DType::F32, 16ull << 20, tpcs, 64});
    cases.push_back({"mac_chain", tpc::DType::BF16, 16ull << 20, tpcs, 64});
  }
  return cases;
}

// Elements of one tensor: the scaled size, a whole number of groups on every TPC (at least one).
uint64_t case_elements(const CaseDef& c, double scale) {
  const uint64_t element_bytes = tpc::dtype_bits(c.dtype) / 8;
  const uint64_t unit = uint64_t{tpc_bench_kernel_group(kernel_table().at(c.kernel).file, c.dtype)} * c.tpcs;
  const double wanted = double(c.tensor_bytes) * scale / double(element_bytes);
  return std::max<uint64_t>(1, static_cast<uint64_t>(wanted / double(unit))) * unit;
}

std::string format_bytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (1ull << 20)) std::snprintf(text, sizeof text, "%g MB", double(bytes) / double(1ull << 20));
  else std::snprintf(text, sizeof text, "%g KB", double(bytes) / 1024.0);
  return text;
}

void print_header(std::ostream& out, const preset::Card& card, double tpc_ghz, double mem_peak_gbps, unsigned phases) {
  const unsigned tpcs = card.tpc().count();
  const unsigned f32_lanes = card.tpc().vector_bits() / 32;
  char line[512];
  out << "hpusim bench tpc — preset " << card.name() << " (" << tpcs << " TPC at " << tpc_ghz << " GHz, "
      << card.tpc().vector_bits() << "-bit vectors, HBM " << card.hbm().timing_set() << ")\n";
  std::snprintf(line, sizeof line,
                "VPU peak: one VPU op per TPC cycle on every lane, a mac = 2 flop: TPCs x lanes x 2 x clock "
                "(f32, %u TPC: %.0f GFLOP/s; bf16 twice that)\n",
                tpcs, tpcs * f32_lanes * 2 * tpc_ghz);
  out << line;
  std::snprintf(line, sizeof line,
                "memory roof: the preset's HBM peak, %.1f GB/s (the TPC ports reach %.1f GB/s through the fabric, "
                "so HBM is the limit); bytes = global loads + stores\n",
                mem_peak_gbps, tpcs * card.fabric().master_port_bytes_per_cycle() * card.fabric().clock_mhz() / 1000.0);
  out << line;
  const uint32_t entries = card.tpc().prefetch_entries();
  std::snprintf(line, sizeof line,
                "STREAM prefetch: %u entries a TPC (tpc.prefetch_entries); add and triad run %u vectors ahead of "
                "their loads, scale %u\n",
                entries, tpc_bench_stream_lookahead("stream_add", entries),
                tpc_bench_stream_lookahead("stream_scale", entries));
  out << line;
  if (phases > 1) {
    std::snprintf(line, sizeof line,
                  "each row: the median of %u runs of the case, each started %u ns after the one before (a memory "
                  "bound case's cycles move with the phase of its start against the clocks); spread: (most - "
                  "fewest cycles) / the median's\n",
                  phases, static_cast<unsigned>(kPhaseStepNs));
    out << line;
  }
  std::snprintf(line, sizeof line, "%-12s %-5s %9s %4s %10s %8s %7s %9s %7s %-8s %7s %10s%s\n", "kernel", "dtype",
                "tensor", "TPCs", "cycles", "GB/s", "%mem", "GFLOP/s", "%vpu", "bound", "%idle", "Mbundle/s",
                phases > 1 ? "   spread" : "");
  out << line << std::string(phases > 1 ? 118 : 109, '-') << "\n";
}

void print_row(std::ostream& out, const TpcCaseResult& r) {
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %-5s %9s %4u %10llu %8.1f %6.1f%% %9.1f %6.1f%% %-8s %6.1f%% %10.2f",
                r.kernel.c_str(), r.dtype.c_str(), format_bytes(r.tensor_bytes).c_str(), r.tpcs,
                static_cast<unsigned long long>(r.cycles), r.gbps, r.pct_mem_bw, r.gflops, r.pct_vpu_peak,
                r.bound.c_str(),
                r.cycles ? 100.0 * (1.0 - double(r.bundles) / double(r.cycles * r.tpcs)) : 0.0,
                r.sim_bundles_per_s / 1e6);
  out << line;
  if (r.phases > 1) {
    std::snprintf(line, sizeof line, " %7.1f%%",
                  r.cycles ? 100.0 * double(r.cycles_max - r.cycles_min) / double(r.cycles) : 0.0);
    out << line;
  }
  out << "\n" << std::flush;
}

}  // namespace

std::vector<TpcCaseResult> run_tpc_bench(const TpcBenchOptions& options, std::ostream& out) {
  if (!(options.scale > 0)) throw std::invalid_argument("--scale must be greater than 0");
  if (options.phases < 1 || options.phases > kMaxPhases) throw std::invalid_argument("--phases must be 1 to 64");
  for (const std::string& k : options.kernels) {
    if (!kernel_table().count(k)) {
      throw std::invalid_argument("unknown kernel '" + k + "' (expected add, scale, triad, load_latency or mac_chain)");
    }
  }
  if (!options.json_path.empty() && !std::ofstream(options.json_path, std::ios::app)) {
    throw std::runtime_error("cannot write output file '" + options.json_path + "'");
  }
  const preset::Card& preset = options.card;
  if (preset.tpc().count() == 0) throw std::invalid_argument("the preset has no TPC (tpc.count is 0)");

  BenchCard bench(preset);
  const unsigned tpcs = preset.tpc().count();
  const hw::Picoseconds cycle_ps = hw::period_ps_from_mhz(preset.clocks().tpc_mhz());
  const double tpc_ghz = 1000.0 / double(cycle_ps);
  const double mem_peak = bench.on_sim_thread([&] { return bench.card().memory().hbm().peak_bytes_per_second(); });
  print_header(out, preset, tpc_ghz, mem_peak / 1e9, options.phases);
  for (unsigned t = 0; t < tpcs; ++t) bench.open_stream(regs::tpc_qman(t));

  const uint64_t dram = preset.memory_map().dram_user_base();
  const uint64_t kernel_address = dram;
  const uint64_t tensor_base = dram + (16ull << 20);
  std::map<std::string, tpc::Program> programs;
  std::vector<TpcCaseResult> results;
  unsigned sob = kFirstSob;

  for (const CaseDef& c : default_cases(options.kernels, tpcs)) {
    const KernelInfo& info = kernel_table().at(c.kernel);
    const bool latency = c.kernel == "load_latency";
    const uint64_t n = case_elements(c, options.scale);
    const uint32_t element_bytes = tpc::dtype_bits(c.dtype) / 8;
    const uint64_t tensor_bytes = n * element_bytes;
    // Tensors start 2 MB-aligned plus 256 KB per tensor: with hl205's mapping (bank above the
    // 256 KB column block) A[i], B[i] and C[i] then sit in different HBM banks, instead of three
    // rows of one bank (that costs ADD about 15% of its bandwidth; README.md).
    const uint64_t tensor_stride = (tensor_bytes + (2ull << 20) - 1) / (2ull << 20) * (2ull << 20) + (256ull << 10);

    // The program (assembled once per kernel and type), placed at the start of user DRAM.
    const std::string program_key = std::string(info.file) + "." + tpc::dtype_name(c.dtype);
    if (!programs.count(program_key)) {
      programs[program_key] = assemble_tpc_bench_kernel(info.file, c.dtype, preset.tpc().prefetch_entries());
    }
    std::vector<uint8_t> code;
    for (const tpc::Bundle& b : programs[program_key].bundles) {
      const auto bytes = tpc::encode(b);
      code.insert(code.end(), bytes.begin(), bytes.end());
    }
    bench.dram_write(kernel_address, code.data(), code.size());

    // Inputs.
    std::vector<uint8_t> chunk(kChunk * element_bytes);
    for (unsigned t = 0; t < info.inputs; ++t) {
      for (uint64_t i = 0; i < kChunk; ++i) {
        if (c.kernel == "mac_chain" && c.dtype == tpc::DType::BF16) {
          const uint16_t v = tpc::f32_to_bf16(input_x(i));
          std::memcpy(&chunk[i * 2], &v, 2);
        } else {
          const float v = c.kernel == "mac_chain" ? input_x(i) : t == 0 ? input_a(i) : input_b(i);
          std::memcpy(&chunk[i * 4], &v, 4);
        }
      }
      bench.on_sim_thread([&] {
        auto& store = bench.card().memory().hbm().store();
        for (uint64_t offset = 0; offset < tensor_bytes; offset += chunk.size()) {
          store.write(tensor_base + t * tensor_stride + offset, chunk.data(),
                      std::min<uint64_t>(chunk.size(), tensor_bytes - offset));
        }
      });
    }

    tpc::TpcLaunchSpec spec;
    spec.kernel_address = kernel_address;
    for (unsigned t = 0; t <= info.inputs; ++t) {
      tpc::TensorDescriptor d;
      d.base = tensor_base + t * tensor_stride;
      d.dtype = c.dtype;
      d.dims = 1;
      d.size = {static_cast<uint32_t>(n), 1, 1, 1, 1};
      d.stride = {1, static_cast<int64_t>(n), static_cast<int64_t>(n), static_cast<int64_t>(n), static_cast<int64_t>(n)};
      spec.tensors.push_back(d);
    }
    if (c.kernel == "scale") spec.srf[0] = tpc::f32_bits(kScale);
    if (c.kernel == "triad") spec.srf[0] = tpc::f32_bits(kTriad);
    if (c.kernel == "mac_chain") {
      spec.srf[0] = tpc::f32_bits(kChainStep);
      spec.srf[1] = c.macs;
    }
    spec.index_space = {static_cast<int32_t>(n), 1, 1, 1, 1};
    spec.granule = {static_cast<int32_t>(tpc_bench_kernel_group(info.file, c.dtype)), 1, 1, 1, 1};
    spec.tpcs = c.tpcs;
    // One run of the case, its start `phase_ns` later than the memory settles.
    const auto run_once = [&](uint64_t phase_ns) {
      spec.sob_address = bench.sob_address(sob);
      const auto buffers = tpc::build_tpc_command_buffers(spec);
      bench.start_cold("tpc", phase_ns);

      std::vector<size_t> before(tpcs);
      bench.on_sim_thread([&] {
        for (unsigned t = 0; t < tpcs; ++t) before[t] = bench.card().tpc_core(t)->kernel_totals().kernels;
      });

      // Launch, then let the device run until every TPC with work has finished its kernel.
      const auto wall_start = std::chrono::steady_clock::now();
      for (const auto& cb : buffers) bench.submit(regs::tpc_qman(cb.tpc), cb.bytes);
      const uint64_t device_start = bench.sim().device_now_ps();
      const uint64_t limit_ps = 100 * uint64_t(1e9);   // 100 ms of device time
      bool done = false;
      while (!done) {
        bench.sim().charge_ns(1000);
        bench.sim().sync_device();
        done = bench.on_sim_thread([&] {
          for (const auto& cb : buffers) {
            if (bench.card().tpc_core(cb.tpc)->kernel_totals().kernels <= before[cb.tpc]) return false;
          }
          return true;
        });
        if (!done && bench.sim().device_now_ps() - device_start > limit_ps) {
          throw std::runtime_error(c.kernel + ": the kernel did not finish within 100 ms of device time");
        }
      }
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

      TpcCaseResult r;
      r.kernel = c.kernel;
      r.dtype = tpc::dtype_name(c.dtype);
      r.shape = std::to_string(n);
      r.elements = n;
      r.tensor_bytes = tensor_bytes;
      r.tpcs = static_cast<unsigned>(buffers.size());
      r.macs_per_element = c.macs;
      hw::Picoseconds first = ~hw::Picoseconds{0}, last = 0;
      std::string fault;
      bench.on_sim_thread([&] {
        for (const auto& cb : buffers) {
          const hw::TpcKernelStats* kernel = bench.card().tpc_core(cb.tpc)->kernel(before[cb.tpc] + 1);
          if (kernel == nullptr) throw std::runtime_error("bench tpc: the core's kernel record is gone");
          const hw::TpcKernelStats& k = *kernel;
          first = std::min(first, k.start_ps);
          last = std::max(last, k.end_ps);
          r.bundles += k.bundles;
          r.stall_cycles += k.stall_cycles;
          r.fetch_stall_cycles += k.fetch_stall_cycles;
          r.window_stall_cycles += k.window_stall_cycles;
          r.prefetches += k.prefetches;
          r.prefetch_hits += k.prefetch_hits;
          r.prefetch_dropped += k.prefetch_dropped;
          r.bytes += k.load_bytes + k.store_bytes;
          if (k.faulted && fault.empty()) {
            fault = "TPC " + std::to_string(cb.tpc) + ": " + bench.card().tpc_core(cb.tpc)->last_fault().message;
          }
        }
      });
      if (!fault.empty()) throw std::runtime_error(c.kernel + " faulted: " + fault);
      r.sim_time_ps = last - first;
      r.cycles = (r.sim_time_ps + cycle_ps / 2) / cycle_ps;
      const double ns = double(r.sim_time_ps) / 1000.0;
      r.flops = double(n) * info.flops_per_element * (c.kernel == "mac_chain" ? c.macs : 1);
      r.gflops = ns > 0 ? r.flops / ns : 0;
      r.gbps = ns > 0 ? double(r.bytes) / ns : 0;
      const unsigned lanes = preset.tpc().vector_bits() / tpc::dtype_bits(c.dtype);
      r.vpu_peak_gflops = double(r.tpcs) * lanes * 2.0 * tpc_ghz;
      r.mem_peak_gbps = mem_peak / 1e9;
      r.pct_vpu_peak = 100.0 * r.gflops / r.vpu_peak_gflops;
      r.pct_mem_bw = 100.0 * r.gbps / r.mem_peak_gbps;
      const double intensity = r.bytes ? r.flops / double(r.bytes) : 0;
      r.bound = intensity >= r.vpu_peak_gflops / r.mem_peak_gbps ? "compute" : "memory";
      if (latency) {
        // Every pass waits for its load: the stall per pass plus the load's own issue cycle.
        r.load_latency_cycles = double(r.stall_cycles) / double(n / 64) + 1.0;
        r.load_latency_ns = r.load_latency_cycles * double(cycle_ps) / 1000.0;
      }
      r.wall_seconds = wall;
      r.sim_bundles_per_s = wall > 0 ? double(r.bundles) / wall : 0;

      // Check the output on sampled elements (spread over the tensor, both ends included) and the
      // completion count of the sync object.
      const uint64_t out_base = tensor_base + info.inputs * tensor_stride;
      for (uint64_t k = 0; k < (latency ? 64 : 512); ++k) {
        // load_latency writes one vector: twice the last one it loaded.
        const uint64_t i = latency ? k : std::min(n - 1, k * (n - 1) / 511 + (k * 13) % 64);
        uint32_t got = 0;
        bench.dram_read(out_base + i * element_bytes, &got, element_bytes);
        const uint32_t expect = latency ? tpc::f32_bits(input_a(n - 64 + k) * 2.0f) : reference(c, i);
        if (got != expect) {
          char text[160];
          std::snprintf(text, sizeof text, "%s %s: wrong result at element %llu: 0x%08x, expected 0x%08x",
                        c.kernel.c_str(), r.dtype.c_str(), static_cast<unsigned long long>(i), got, expect);
          throw std::runtime_error(text);
        }
      }
      if (const uint32_t value = bench.sob_value(sob); value != buffers.size()) {
        throw std::runtime_error(c.kernel + ": sync object " + std::to_string(sob) + " is " + std::to_string(value) +
                                 ", expected " + std::to_string(buffers.size()));
      }
      ++sob;
      return r;
    };
    // The row is the median run (by cycles) of those started at each phase, with the spread.
    std::vector<TpcCaseResult> runs;
    for (unsigned p = 0; p < options.phases; ++p) runs.push_back(run_once(uint64_t{p} * kPhaseStepNs));
    std::sort(runs.begin(), runs.end(),
              [](const TpcCaseResult& a, const TpcCaseResult& b) { return a.cycles < b.cycles; });
    TpcCaseResult r = runs[(runs.size() - 1) / 2];
    r.phases = options.phases;
    r.cycles_min = runs.front().cycles;
    r.cycles_max = runs.back().cycles;
    print_row(out, r);
    results.push_back(r);
  }

  for (const TpcCaseResult& r : results) {
    if (r.kernel != "load_latency") continue;
    char line[256];
    std::snprintf(line, sizeof line,
                  "load latency: %.1f TPC cycles (%.1f ns) from issuing a 256-byte ld_tnsr to its data, on an idle card\n",
                  r.load_latency_cycles, r.load_latency_ns);
    out << line;
  }
  for (const TpcCaseResult& r : results) {
    if (r.kernel != "mac_chain") continue;
    char line[256];
    std::snprintf(line, sizeof line,
                  "speed: mac_chain %s (compute bound, %u TPC): %.2f M simulated bundles per wall second "
                  "(%.2f M TPC cycles per wall second per core)\n",
                  r.dtype.c_str(), r.tpcs, r.sim_bundles_per_s / 1e6,
                  r.wall_seconds > 0 ? double(r.cycles) / r.wall_seconds / 1e6 : 0.0);
    out << line;
  }
  if (!options.json_path.empty()) write_tpc_bench_json(results, preset.name(), options.json_path);
  return results;
}

void write_tpc_bench_json(const std::vector<TpcCaseResult>& results, const std::string& preset,
                          const std::string& path) {
  std::vector<report::JsonRecord> records;
  for (const TpcCaseResult& r : results) {
    report::JsonRecord record;
    record.add("preset", preset)
        .add("kernel", r.kernel)
        .add("shape", r.shape)
        .add("dtype", r.dtype)
        .add("tpcs", uint64_t{r.tpcs})
        .add("elements", r.elements)
        .add("tensor_bytes", r.tensor_bytes)
        .add("macs_per_element", uint64_t{r.macs_per_element})
        .add("cycles", r.cycles)
        .add("phases", uint64_t{r.phases})
        .add("cycles_min", r.cycles_min)
        .add("cycles_max", r.cycles_max)
        .add("sim_time_ps", r.sim_time_ps)
        .add("bundles", r.bundles)
        .add("stall_cycles", r.stall_cycles)
        .add("fetch_stall_cycles", r.fetch_stall_cycles)
        .add("window_stall_cycles", r.window_stall_cycles)
        .add("prefetches", r.prefetches)
        .add("prefetch_hits", r.prefetch_hits)
        .add("prefetch_dropped", r.prefetch_dropped)
        .add("bytes", r.bytes)
        .add("flops", r.flops)
        .add("gflops", r.gflops)
        .add("gbps", r.gbps)
        .add("vpu_peak_gflops", r.vpu_peak_gflops)
        .add("mem_peak_gbps", r.mem_peak_gbps)
        .add("pct_vpu_peak", r.pct_vpu_peak)
        .add("pct_mem_bw", r.pct_mem_bw)
        .add("bound", r.bound)
        .add("load_latency_ns", r.load_latency_ns)
        .add("wall_seconds", r.wall_seconds)
        .add("sim_bundles_per_s", r.sim_bundles_per_s);
    records.push_back(std::move(record));
  }
  report::write_json_records(records, path);
}

}  // namespace hpusim::bench
