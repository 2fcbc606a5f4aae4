#include "sim/bench/dramsim3_reference.h"

namespace hpusim::bench {

const std::vector<DramSim3Reference>& dramsim3_references() {
  static const std::vector<DramSim3Reference> references = {
      // name               seq   w‰  bytes requests window seed  cycles    GB/s     read cycles
      {"seq_read",          true,    0,  64, 200000, 4096, 1,  54028, 236.914, 1094.05},
      {"rand_read",         false,   0,  64, 200000, 4096, 1, 207470,  61.696, 4126.07},
      {"seq_read",          true,    0, 256, 200000, 4096, 1, 217225, 235.700, 4403.39},
      {"rand_read",         false,   0, 256, 200000, 4096, 1, 220357, 232.350, 4429.79},
      {"seq_mix70r",        true,  300,  64, 200000, 4096, 1,  59691, 214.438, 1267.44},
      {"rand_mix70r",       false, 300,  64, 200000, 4096, 1, 207839,  61.586, 4419.49},
      {"rand_mix70r",       false, 300, 256, 100000, 4096, 1, 136844, 187.074, 5499.89},
      {"rand_mix50r",       false, 500,  64, 200000, 4096, 1, 208801,  61.302, 4670.43},
      {"rand_mix50r",       false, 500, 256, 100000, 4096, 1, 142118, 180.132, 5811.38},
      {"seq_write",         true, 1000,  64, 200000, 4096, 1,  54003, 237.024, 0},
      {"rand_write",        false, 1000, 64, 200000, 4096, 1, 205947,  62.152, 0},
      {"latency_read",      false,   0,  64,   2000,    1, 1,  78647,   1.628, 38.32},
      {"latency_row_hit",   true,    0,  64,   2000,    1, 1,  39715,   3.223, 18.86},
  };
  return references;
}

}  // namespace hpusim::bench
