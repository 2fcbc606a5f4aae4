// `hpusim bench gemm`: GEMMs on the card's MME masters, launched through their QMANs (each GEMM
// split over the masters by output columns, batched GEMMs by batch), operands in HBM (or SRAM).
// Per shape: MME cycles, achieved TFLOPS and share of the preset's MME peak, whether the
// roofline puts it on the compute or memory side, and the simulator's speed in simulated MACs
// per wall second. Every case's output is checked against the C++ reference on sampled
// elements. README.md states the definitions.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "card_preset.pb.h"

namespace hpusim::bench {

struct GemmCase {
  uint32_t m = 0, n = 0, k = 0, batch = 1;
  std::string dtype = "bf16";       // bf16 or f32 inputs and output (f32 accumulation)
  bool transpose_a = true;          // A stored K x M: a k step of a super-tile is one wide read
  std::string label;                // square, skinny, batched, layout
};

struct GemmBenchOptions {
  preset::Card card;
  uint32_t max_size = 8192;         // cases with a dimension above it are skipped
  std::string memory = "hbm";       // hbm or sram (cases that do not fit SRAM are skipped)
  std::vector<GemmCase> cases;      // empty: the default sweep
  std::string json_path;
};

struct GemmCaseResult {
  GemmCase shape;
  unsigned engines = 0;
  uint64_t cycles = 0;              // MME cycles from the first job start to the last job end
  uint64_t sim_time_ps = 0;
  uint64_t macs = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t operand_stall_cycles = 0;   // the worst engine's
  uint64_t chunk_fetch_cycles = 0;     // the worst engine's mean time from a chunk's reads sent to its last answer
  double tflops = 0;
  double peak_tflops = 0;
  double pct_peak = 0;
  double mem_peak_gbps = 0;
  double gbps = 0;
  std::string bound;                // compute or memory (intensity against the ridge point)
  std::string supertile;            // e.g. "512x512 kc 32"
  double hbm_row_hit_pct = 0, hbm_row_conflict_pct = 0;   // of the HBM channel requests of the case
  // What reached the HBM itself, and with the SRAM's HBM cache (hl325) its line hit rate.
  uint64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  double cache_hit_pct = 0;
  double wall_seconds = 0;
  double host_compute_seconds = 0;  // the arithmetic's share of it (worker threads, summed)
  double host_gather_seconds = 0;   // reading its operands (simulation thread, summed over engines)
  double sim_macs_per_s = 0;
};

// The default sweep: M = N = K from 64 to 8192, skinny and batched shapes, an f32 and an
// untransposed-A case.
std::vector<GemmCase> default_gemm_cases();

// A case from text: "[BATCH*]MxNxK[:f32][:rowmajor]" (label "custom"). Throws
// std::invalid_argument naming the text.
GemmCase parse_gemm_case(const std::string& text);

// Runs the cases on one preset (at most once per process: SystemC elaborates once); prints the
// table to `out`. A wrong result or an MME fault throws std::runtime_error.
std::vector<GemmCaseResult> run_gemm_bench(const GemmBenchOptions& options, std::ostream& out);

void write_gemm_bench_json(const std::vector<GemmCaseResult>& results, const std::string& preset,
                           const std::string& path);

}  // namespace hpusim::bench
