// How an MME master (a master core and its slave) walks a job: its output geometry, the
// super-tiles its accumulators hold, the k-chunks its staging buffer streams, the operand reads
// and output writes of each, and the cycles the array spends. Plain C++ (no SystemC).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "arch/mme/mme_job.h"

namespace hpusim::mme {

// The output tile the engine's PEs form in one geometry: rows x cols PEs, each one output element.
struct Geometry {
  uint32_t rows = 0;
  uint32_t cols = 0;
};

// Parses a preset geometry: "RxC" in PEs ("256x256") or "Nw x Mh" in core arrays ("2wx1h": 2 core
// widths by 1 core height). The PE count must be cores_per_engine x core_rows x core_cols.
// Throws std::invalid_argument naming the string.
Geometry parse_geometry(const std::string& text, uint32_t core_rows, uint32_t core_cols, uint32_t cores_per_engine);

// Cycles one output tile of rows x cols PEs takes over k on the systolic array, from its first
// operands entering to its last result leaving: the skew until the far corner PE gets operands,
// k MAC cycles, one drain cycle per row. The RTL tile (hw/mme/rtl) is measured against this.
constexpr uint64_t tile_cycles(uint32_t rows, uint32_t cols, uint64_t k) {
  return (uint64_t{rows} - 1) + (uint64_t{cols} - 1) + k + rows;
}

struct PlanParams {
  Geometry geometry;
  uint32_t accumulators = 1;        // output tiles the engine holds at once
  uint64_t staging_bytes = 65536;   // operand staging buffer
  uint32_t min_chunks_in_buffer = 8;   // k-chunks sized so this many fit the staging buffer
  uint32_t max_request_bytes = 4096;   // an operand read or output write is split at this size
  uint32_t array_cycles_per_k = 1;     // array cycles per common-dim value (the input type's rate)
};

// A contiguous device-memory span.
struct Run {
  uint64_t address = 0;
  uint32_t bytes = 0;
};

class JobPlan {
 public:
  // `job` must be valid (validate() == "").
  JobPlan(const MmeJob& job, const PlanParams& params);

  const GemmDims& dims() const { return dims_; }
  // Super-tile: tiles_high x tiles_wide output tiles, (tiles_high rows) x (tiles_wide cols) elements.
  uint32_t tiles_high() const { return tiles_high_; }
  uint32_t tiles_wide() const { return tiles_wide_; }
  uint64_t super_rows() const { return uint64_t{tiles_high_} * params_.geometry.rows; }
  uint64_t super_cols() const { return uint64_t{tiles_wide_} * params_.geometry.cols; }
  uint64_t kc() const { return kc_; }   // k values per chunk
  // k values one read of an operand whose rows run along k covers (a staging line, at least kc).
  uint64_t line_k() const { return line_k_; }
  static constexpr uint64_t kLineBytes = 128;   // the staging buffer's line
  uint64_t supertiles_per_batch() const { return st_rows_ * st_cols_; }
  uint64_t supertiles() const { return supertiles_per_batch() * dims_.batch; }
  uint64_t chunks_per_supertile() const { return (dims_.k + kc_ - 1) / kc_; }
  uint64_t chunks() const { return supertiles() * chunks_per_supertile(); }

  struct SuperTile {
    uint32_t batch = 0;
    uint64_t row0 = 0, rows = 0;   // output rows and columns it covers
    uint64_t col0 = 0, cols = 0;
  };
  SuperTile supertile(uint64_t index) const;   // batch-major, then row-major over super-tiles

  struct Chunk {
    uint64_t supertile = 0;
    uint64_t k0 = 0, kc = 0;
    uint64_t tile_steps = 0;   // cycles the array spends on it: tiles used x kc x array_cycles_per_k
    uint64_t bytes = 0;        // operand bytes it reads
    uint64_t release = 0;      // operand bytes that leave the staging buffer when it is done
    bool last_of_supertile = false;
  };
  Chunk chunk(uint64_t index) const;
  // The operand reads of a chunk (A's then B's), contiguous runs split at max_request_bytes.
  void chunk_reads(const Chunk& chunk, std::vector<Run>& runs) const;
  // The output writes of a super-tile (one run per row, split at max_request_bytes); `offset` of
  // each is the element index in the super-tile's row-major rows x cols result.
  struct Write {
    Run run;
    uint64_t row = 0, col = 0;   // the first element's super-tile coordinates
  };
  void supertile_writes(uint64_t index, std::vector<Write>& writes) const;

  // Array cycles outside the chunks: the fill skew of the first tile and the drain of the last.
  uint64_t fill_cycles() const { return uint64_t{params_.geometry.rows} - 1 + params_.geometry.cols - 1; }
  uint64_t drain_cycles() const { return params_.geometry.rows; }

 private:
  void add_run(std::vector<Run>& runs, uint64_t address, uint64_t bytes) const;
  // k values of an operand a chunk reads (kc, or for rows along k a line at its first chunk, else 0).
  uint64_t operand_k(bool along_k, uint64_t k0, uint64_t kc) const;
  // Device address of A(m, k) / B(k, n) of batch `b`; false for a padding zero (convolutions).
  bool a_address(uint32_t b, uint64_t m, uint64_t k, uint64_t& address) const;
  bool b_address(uint32_t b, uint64_t k, uint64_t n, uint64_t& address) const;

  MmeJob job_;
  PlanParams params_;
  GemmDims dims_;
  uint32_t tiles_high_ = 1, tiles_wide_ = 1;
  uint64_t st_rows_ = 1, st_cols_ = 1;   // super-tiles per batch along M and N
  uint64_t kc_ = 1, line_k_ = 1;
  bool a_along_k_ = false, b_along_k_ = false;
  uint32_t ein_ = 2, eout_ = 4;
};

}  // namespace hpusim::mme
