// `hpusim bench tpc`: TPC kernels (sim/bench/tpc_kernels/*.s: STREAM ADD, SCALE and TRIAD, a
// long mac chain) assembled, placed in DRAM and launched on a card through the TPC QMANs, the
// index space split over the TPCs. Per kernel and size: TPC cycles, achieved share of the VPU
// peak and of the HBM peak, whether the roofline puts it on the compute or the memory side, and
// the simulator's speed (simulated bundles per wall second). README.md states the definitions.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "card_preset.pb.h"
#include "arch/tpc/asm/program.h"
#include "arch/tpc/isa.h"

namespace hpusim::bench {

// The embedded kernel sources (generated from tpc_kernels/*.s at build time), by file stem.
struct TpcBenchKernelSource {
  const char* name;
  const char* text;
};
const std::vector<TpcBenchKernelSource>& tpc_bench_kernel_sources();

// How far ahead of its loads (in vectors) a STREAM kernel prefetches on a TPC whose prefetch buffer
// has `prefetch_entries` entries (the preset's tpc.prefetch_entries): as far as fills the buffer
// with the reads its loop keeps in flight besides (at least 1). 0 for the other kernels.
uint32_t tpc_bench_stream_lookahead(const std::string& name, uint32_t prefetch_entries);

// Assembles bench kernel `name` (stream_add, stream_scale, stream_triad: f32 only; mac_chain:
// f32 or bf16), the STREAM kernels with the lookahead that fits `prefetch_entries`. Throws
// std::invalid_argument for an unknown name or dtype, std::runtime_error with the assembler's
// messages if the source does not assemble.
tpc::Program assemble_tpc_bench_kernel(const std::string& name, tpc::DType dtype = tpc::DType::F32,
                                       uint32_t prefetch_entries = 128);

// Elements of one loop group of a bench kernel: a TPC's slice must be a positive multiple of it.
uint32_t tpc_bench_kernel_group(const std::string& name, tpc::DType dtype = tpc::DType::F32);

struct TpcBenchOptions {
  preset::Card card;
  double scale = 1.0;              // multiplies every case's tensor size (at least one group per TPC)
  std::vector<std::string> kernels = {"add", "scale", "triad", "load_latency", "mac_chain"};
  std::string json_path;           // results as a JSON array of objects
  unsigned phases = 1;             // runs of each case, started 37 ns apart; the row is their median (1..64)
};

struct TpcCaseResult {
  std::string kernel;              // add, scale, triad, mac_chain
  std::string dtype;               // f32, bf16
  std::string shape;               // elements of each tensor, e.g. "4194304"
  uint64_t elements = 0;
  uint64_t tensor_bytes = 0;       // bytes of one tensor
  unsigned tpcs = 0;
  uint32_t macs_per_element = 0;   // mac_chain: K
  uint64_t cycles = 0;             // TPC cycles, first TPC_EXECUTE taking effect to the last core idle
  unsigned phases = 1;             // runs of the case: the row is the median one (by cycles)
  uint64_t cycles_min = 0, cycles_max = 0;   // the fewest and most cycles of the runs
  uint64_t sim_time_ps = 0;
  uint64_t bundles = 0;            // over all TPCs
  uint64_t stall_cycles = 0;       // scoreboard / window stalls, summed over the TPCs
  uint64_t fetch_stall_cycles = 0;
  uint64_t window_stall_cycles = 0;   // of stall_cycles, waiting for the load, store or prefetch window
  uint64_t prefetches = 0, prefetch_hits = 0, prefetch_dropped = 0;
  uint64_t bytes = 0;              // global loads + stores
  double flops = 0;
  double gflops = 0;
  double gbps = 0;
  double vpu_peak_gflops = 0;      // over the TPCs the case runs on
  double mem_peak_gbps = 0;        // HBM peak of the preset
  double pct_vpu_peak = 0;
  double pct_mem_bw = 0;
  std::string bound;               // "memory" or "compute" (roofline: intensity against the ridge point)
  double load_latency_cycles = 0;  // load_latency: issue of a 256-byte load to its data
  double load_latency_ns = 0;
  double wall_seconds = 0;         // launch to completion seen, wall clock
  double sim_bundles_per_s = 0;    // simulated bundles per wall second
};

// Runs the benchmark; prints the table (row by row) to `out`. At most once per process (SystemC
// elaborates once). Every case's output is checked against a C++ reference on sampled elements;
// a wrong result or a kernel fault throws std::runtime_error.
std::vector<TpcCaseResult> run_tpc_bench(const TpcBenchOptions& options, std::ostream& out);

void write_tpc_bench_json(const std::vector<TpcCaseResult>& results, const std::string& preset,
                          const std::string& path);

}  // namespace hpusim::bench
