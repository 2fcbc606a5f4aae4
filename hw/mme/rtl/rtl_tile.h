// The MME tile RTL (mme_tile.sv), verilated: C = A * B on an output-stationary PE array, with the
// cycle count measured on the RTL. Values are binary32 bit patterns; bf16 values are passed
// widened to binary32 (bits << 16). Each PE accumulates from +0 in k order, rounding the product
// and the sum separately (nearest-even); NaN results are 0x7FC00000. See README.md.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace hpusim::mme::rtl {

// The size of one verilated PE array; a tile uses its top-left rows x cols corner.
struct TileArray {
  uint32_t rows;
  uint32_t cols;
};

// The arrays built (CMakeLists.txt verilates one model per entry), tried in this order.
inline constexpr std::array<TileArray, 2> kTileArrays{{{8, 8}, {4, 16}}};
inline constexpr uint32_t kMaxTileRows = 8;
inline constexpr uint32_t kMaxTileCols = 16;
inline constexpr uint32_t kMaxTileK = 65535;  // the tile's K input is 16 bits

// Clock cycles from the start cycle to done (done rises on the tile_cycles-th clock edge, counting
// the edge that takes start as the first) for a rows x cols tile over k (all >= 1): the skew
// until PE(rows-1, cols-1) gets its first operands, k MAC cycles, one drain cycle per row.
constexpr uint64_t tile_cycles(uint32_t rows, uint32_t cols, uint32_t k) {
  const uint64_t fill = (uint64_t{rows} - 1) + (uint64_t{cols} - 1);
  const uint64_t drain = rows;
  return fill + k + drain;
}

struct TileRun {
  std::vector<uint32_t> c;  // rows x cols, row-major
  uint64_t cycles = 0;      // clock edges counted on the RTL, as in tile_cycles()
};

// Whether an array of kTileArrays holds a rows x cols tile (rows, cols >= 1).
bool tile_fits(uint32_t rows, uint32_t cols);

// One verilated model per array of kTileArrays, kept between runs: a run's start comes in the
// cycle where the previous run's done is high, as back-to-back tiles do on the hardware.
class TileRunner {
 public:
  TileRunner();
  ~TileRunner();
  TileRunner(const TileRunner&) = delete;
  TileRunner& operator=(const TileRunner&) = delete;

  // C = A * B for a (rows x k) and b (k x cols), both row-major, on the first array of
  // kTileArrays that holds the tile. Throws std::invalid_argument if none does, if k is not in
  // [1, kMaxTileK] or if the operand sizes do not match.
  TileRun run(uint32_t rows, uint32_t cols, uint32_t k, const std::vector<uint32_t>& a,
              const std::vector<uint32_t>& b);

  // The same on a given array of kTileArrays (the result and the cycles do not depend on it).
  TileRun run_on(const TileArray& array, uint32_t rows, uint32_t cols, uint32_t k,
                 const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);

 private:
  struct Models;
  std::unique_ptr<Models> models_;
};

// TileRunner::run and run_on on fresh models.
TileRun run_tile(uint32_t rows, uint32_t cols, uint32_t k, const std::vector<uint32_t>& a,
                 const std::vector<uint32_t>& b);
TileRun run_tile_on(const TileArray& array, uint32_t rows, uint32_t cols, uint32_t k,
                    const std::vector<uint32_t>& a, const std::vector<uint32_t>& b);

}  // namespace hpusim::mme::rtl
