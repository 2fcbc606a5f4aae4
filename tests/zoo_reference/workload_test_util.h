// Helpers of the workload tests: inputs, bit-level comparison of parameter sets.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "synapse/zoo_reference/random.h"

namespace hpusim::synapse::zoo_reference::test_support {

inline std::vector<float> random_input(size_t count, float lo, float hi, uint32_t seed) {
  UniformSource source(seed);
  std::vector<float> v(count);
  const float half = 0.5f * (hi - lo), mid = 0.5f * (hi + lo);
  for (float& e : v) e = mid + source.next(half);
  return v;
}

// Every tensor of a and b has the same bits.
template <template <class> class Params>
bool same_bits(const Params<float>& a, const Params<float>& b) {
  const auto ta = a.tensors();
  const auto tb = b.tensors();
  for (size_t i = 0; i < ta.size(); ++i)
    if (ta[i]->size() != tb[i]->size() ||
        std::memcmp(ta[i]->data(), tb[i]->data(), ta[i]->size() * sizeof(float)) != 0)
      return false;
  return true;
}

// Adds uniform noise of `bound` to every parameter (so that no bias is 0 and no gamma is 1).
template <template <class> class Params>
void perturb(Params<float>& params, float bound, uint32_t seed) {
  UniformSource source(seed);
  for (std::vector<float>* t : params.tensors())
    for (float& v : *t) v += source.next(bound);
}

}  // namespace hpusim::synapse::zoo_reference::test_support
