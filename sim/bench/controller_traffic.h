// Traffic straight into the HBM channel controllers, without the fabric: the interface point a
// DRAM simulator such as DRAMsim3 models, so hpusim's controller can be compared with one request
// stream on both sides.
//
// The stream (also what the DRAMsim3 comparison harness does, see hw/hbm/README.md):
//   - splitmix64 seeded with `seed`; request i first draws w, a write iff w % 1000 < write_permille;
//     then its address: sequential i * request_bytes (mod capacity), or random
//     (next() % (capacity / request_bytes)) * request_bytes;
//   - at most `window` requests outstanding; a new request is generated in the cycle a slot frees
//     and goes to the FIFO of its channel (split at interleave boundaries like the subsystem);
//   - each cycle, each channel in order moves requests from its FIFO head into its controller
//     while the controller accepts them; they are schedulable from the next cycle;
//   - a read completes with its last burst's data; a posted write one cycle after it is accepted,
//     a non-posted one with its last burst's data.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/hbm/channel_controller.h"

namespace hpusim::bench {

struct ControllerTrafficSpec {
  bool random = false;
  uint32_t write_permille = 0;   // 0..1000
  uint32_t request_bytes = 64;
  uint64_t count = 100000;
  uint32_t window = 4096;        // requests outstanding at most
  uint64_t seed = 1;
};

struct ControllerTrafficResult {
  uint64_t cycles = 0;           // last completion + 1, in tCK
  uint64_t bytes = 0;
  uint64_t reads = 0, writes = 0;
  std::vector<uint64_t> read_latency_cycles;    // generation to completion, per read request
  std::vector<uint64_t> write_latency_cycles;
  hbm::ControllerStats totals;   // summed over the channels, once every queued write has issued
  uint64_t controller_calls = 0; // advance() calls
};

// Throws std::invalid_argument for a bad spec (request size not a multiple of the burst or not
// dividing the capacity, write_permille > 1000, zero count or window).
ControllerTrafficResult run_controller_traffic(const hbm::Organization& org, const hbm::Timing& timing,
                                               const hbm::ControllerConfig& config, const ControllerTrafficSpec& spec);

// splitmix64 (Steele, Lea and Flood), the generator both sides of the comparison use.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace hpusim::bench
