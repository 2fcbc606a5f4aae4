#include "hw/mme/rtl/rtl_tile.h"

#include <stdexcept>
#include <string>

#include "verilated.h"
#include "Vmme_tile_4x16.h"
#include "Vmme_tile_8x8.h"

namespace hpusim::mme::rtl {
namespace {

struct TileProblem {
  uint32_t rows;
  uint32_t cols;
  uint32_t k;
  const std::vector<uint32_t>& a;
  const std::vector<uint32_t>& b;

  // Column kk of A and row kk of B. Lanes outside the tile get 1.0 rather than 0, so their PEs
  // hold non-zero sums that the next tile must not pick up; after the last k nothing is read.
  uint32_t a_at(uint32_t row, uint64_t kk) const {
    if (kk >= k) return 0;
    return row < rows ? a[row * k + kk] : kOutsideLane;
  }
  uint32_t b_at(uint64_t kk, uint32_t col) const {
    if (kk >= k) return 0;
    return col < cols ? b[kk * cols + col] : kOutsideLane;
  }

  static constexpr uint32_t kOutsideLane = 0x3F800000u;  // 1.0
};

std::string shape_name(uint32_t rows, uint32_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

void check_problem(const TileArray& array, const TileProblem& p) {
  if (p.rows == 0 || p.cols == 0 || p.rows > array.rows || p.cols > array.cols) {
    throw std::invalid_argument("mme rtl: a " + shape_name(p.rows, p.cols) + " tile does not fit the " +
                                shape_name(array.rows, array.cols) + " array");
  }
  if (p.k == 0 || p.k > kMaxTileK) {
    throw std::invalid_argument("mme rtl: k = " + std::to_string(p.k) + " is not in [1, " +
                                std::to_string(kMaxTileK) + "]");
  }
  if (p.a.size() != uint64_t{p.rows} * p.k || p.b.size() != uint64_t{p.k} * p.cols) {
    throw std::invalid_argument("mme rtl: operand sizes do not match a " + shape_name(p.rows, p.cols) +
                                " tile with k = " + std::to_string(p.k));
  }
}

// One verilated tile, reset once; run() drives one operation: start with the first operands, one
// operand vector per cycle, then collect the result rows until done.
template <class Model>
class ClockedTile {
 public:
  explicit ClockedTile(const TileArray& array) : array_(array) {
    tile_.clk = 0;
    tile_.rst = 1;
    tile_.start = 0;
    tile_.eval();
    clock_edge();
    tile_.rst = 0;
  }
  ~ClockedTile() { tile_.final(); }
  ClockedTile(const ClockedTile&) = delete;
  ClockedTile& operator=(const ClockedTile&) = delete;

  TileRun run(const TileProblem& p) {
    tile_.start = 1;
    tile_.k_len = static_cast<uint16_t>(p.k);
    tile_.active_rows = static_cast<uint8_t>(p.rows);
    tile_.active_cols = static_cast<uint8_t>(p.cols);

    TileRun run;
    run.c.assign(uint64_t{p.rows} * p.cols, 0);
    uint32_t rows_seen = 0;
    // Slack, so a wrong cycle count shows up in the caller's comparison rather than here.
    const uint64_t cycle_limit = tile_cycles(p.rows, p.cols, p.k) + 64;
    for (uint64_t cycle = 0;; ++cycle) {
      for (uint32_t i = 0; i < array_.rows; ++i) tile_.a_col[i] = p.a_at(i, cycle);
      for (uint32_t j = 0; j < array_.cols; ++j) tile_.b_row[j] = p.b_at(cycle, j);
      clock_edge();
      tile_.start = 0;
      ++run.cycles;
      if (tile_.c_valid) {
        const uint32_t row = tile_.c_row_index;
        if (row >= p.rows) throw std::logic_error("mme rtl: drained row " + std::to_string(row));
        for (uint32_t j = 0; j < p.cols; ++j) run.c[row * p.cols + j] = tile_.c_row[j];
        ++rows_seen;
      }
      if (tile_.done) break;
      if (run.cycles > cycle_limit) throw std::logic_error("mme rtl: the tile never raised done");
    }
    if (rows_seen != p.rows) throw std::logic_error("mme rtl: done before every result row");
    return run;
  }

 private:
  void clock_edge() {
    tile_.clk = 1;
    tile_.eval();
    tile_.clk = 0;
    tile_.eval();
  }

  TileArray array_;
  VerilatedContext context_;
  Model tile_{&context_, "mme_tile"};
};

}  // namespace

struct TileRunner::Models {
  ClockedTile<Vmme_tile_8x8> square{kTileArrays[0]};
  ClockedTile<Vmme_tile_4x16> wide{kTileArrays[1]};
};

TileRunner::TileRunner() : models_(std::make_unique<Models>()) {}

TileRunner::~TileRunner() = default;

TileRun TileRunner::run(uint32_t rows, uint32_t cols, uint32_t k, const std::vector<uint32_t>& a,
                        const std::vector<uint32_t>& b) {
  for (const TileArray& array : kTileArrays) {
    if (rows <= array.rows && cols <= array.cols) return run_on(array, rows, cols, k, a, b);
  }
  throw std::invalid_argument("mme rtl: no array holds a " + shape_name(rows, cols) + " tile");
}

TileRun TileRunner::run_on(const TileArray& array, uint32_t rows, uint32_t cols, uint32_t k,
                           const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  const TileProblem problem{rows, cols, k, a, b};
  check_problem(array, problem);
  static_assert(kTileArrays.size() == 2, "one model per array");
  if (array.rows == kTileArrays[0].rows && array.cols == kTileArrays[0].cols) {
    return models_->square.run(problem);
  }
  if (array.rows == kTileArrays[1].rows && array.cols == kTileArrays[1].cols) {
    return models_->wide.run(problem);
  }
  throw std::invalid_argument("mme rtl: no model of a " + shape_name(array.rows, array.cols) + " array");
}

bool tile_fits(uint32_t rows, uint32_t cols) {
  for (const TileArray& array : kTileArrays) {
    if (rows <= array.rows && cols <= array.cols) return true;
  }
  return false;
}

TileRun run_tile(uint32_t rows, uint32_t cols, uint32_t k, const std::vector<uint32_t>& a,
                 const std::vector<uint32_t>& b) {
  return TileRunner().run(rows, cols, k, a, b);
}

TileRun run_tile_on(const TileArray& array, uint32_t rows, uint32_t cols, uint32_t k,
                    const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  return TileRunner().run_on(array, rows, cols, k, a, b);
}

}  // namespace hpusim::mme::rtl
