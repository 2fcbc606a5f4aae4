// `hpusim bench collectives`: hpusim's HCCL on a box, shaped like hccl_demo and nccl-tests. Every
// card runs on its own host thread (as one process per card would): per collective and size, a
// barrier, then warm-up and timed calls back to back on the card's collective stream, timed on
// the device by events after the barrier and after the last call. Reported per row: the time per
// call, nccl-tests' algorithm and bus bandwidths (hccl_demo's Algo BW and NW BW: the same but
// all_gather's Algo BW, which hccl_demo takes per rank), the ports' line-rate bound, a published
// figure where there is one, and the simulator's own speed (NIC bytes simulated per wall second).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace hpusim::bench {

struct CollectivesBenchOptions {
  std::string box = "hls2";
  unsigned cards = 0;                 // 0: the box's
  std::vector<std::string> overrides; // of the box's card preset
  std::vector<std::string> collectives = {"all_reduce", "all_gather", "reduce_scatter"};
  uint64_t min_bytes = 8, max_bytes = 32ull << 20;   // nccl-tests' -b, -e
  uint64_t factor = 4;                               // nccl-tests -f
  std::vector<uint64_t> sizes;        // instead of the range, when not empty
  std::string dtype = "f32";          // f32 | bf16
  std::string op = "sum";             // sum | min | max
  std::string algorithm = "direct";   // all_reduce's: direct (HCCL's) | ring
  unsigned warmup = 1, iterations = 2;
  bool in_place = true;               // false: separate send and receive buffers (more memory)
  std::string json_path;
  std::string trace_path;             // the run's timeline (.json: Chrome JSON, else Perfetto; a split
                                      // box's processes each write theirs, name.rank<r>.json)
  bool distributed = false;           // the box split between the processes of an MPI run (mpirun
                                      // -np N hpusim bench collectives --mpi): rank 0 prints
};

struct CollectivesBenchRow {
  std::string collective;
  uint64_t bytes = 0;                 // nccl-tests' size: all_gather its output, reduce_scatter its input
  uint64_t count = 0;                 // elements per call's count argument
  unsigned ranks = 0;
  double time_us = 0;                 // per call, the slowest rank
  std::vector<uint64_t> rank_time_ns; // each card's device time for the timed calls, in box order
  double algbw = 0, busbw = 0;        // GB/s (1e9 B/s)
  double hccl_algbw = 0;              // hccl_demo's Algo BW (all_gather: per-rank input / time)
  double bound_busbw = 0;             // the ports' goodput: no bus bandwidth can pass it
  double published_busbw = 0;         // 0: none known
  std::string published_source;
  double simulated_mb_per_wall_s = 0; // NIC payload simulated per wall second
  double wall_s = 0;
};

// Throws std::invalid_argument for a bad option (unknown collective, box, sizes). A split box
// returns the rows on every process; only rank 0 prints them and writes the JSON.
std::vector<CollectivesBenchRow> run_collectives_bench(const CollectivesBenchOptions& options, std::ostream& out);

}  // namespace hpusim::bench
