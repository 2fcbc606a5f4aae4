// Deterministic random numbers of the reference workloads: the dropout kernel's counter-based
// mask generator (bit for bit) and the parameter initialisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace hpusim::synapse::zoo_reference {

// Wellons' "lowbias32" integer hash: the dropout kernel's MIX32.
uint32_t mix32(uint32_t x);

// The key the dropout_fwd glue derives from its seed: mix32(seed ^ 0x9e3779b9).
uint32_t dropout_key(uint32_t seed);

// Element `index`'s draw in [0, 1): (mix32(index ^ key) >> 8) * 2^-24, exact in f32.
float dropout_uniform(uint32_t key, uint32_t index);

// The dropout_fwd kernel's mask over `count` elements in dense order (dim 0 fastest): 1 where
// the draw is >= p (kept), 0 elsewhere. The kernel takes the seed as an f32 scalar, so it must be
// an integer 0 .. 2^24 (std::invalid_argument otherwise).
std::vector<float> dropout_mask(size_t count, float p, uint32_t seed);

// The kernels' scale 1 / (1 - p), in double rounded to f32; 0 when p = 1.
float dropout_scale(float p);

// Uniform values for parameter initialisation. std::mt19937's output sequence is fixed by the
// standard (its distributions are not), so values are made here: u = (bits >> 8) * 2^-24 in
// [0, 1), value = (2u - 1) * bound, in [-bound, bound).
class UniformSource {
 public:
  explicit UniformSource(uint32_t seed) : engine_(seed) {}
  float next(float bound);
  void fill(std::vector<float>& values, float bound);

 private:
  std::mt19937 engine_;
};

}  // namespace hpusim::synapse::zoo_reference
