#include "synapse/zoo_reference/random.h"

#include <stdexcept>
#include <string>

namespace hpusim::synapse::zoo_reference {

namespace {
constexpr float kTwoPowMinus24 = 1.0f / 16777216.0f;
constexpr uint32_t kMaxDropoutSeed = 1u << 24;
}  // namespace

uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

uint32_t dropout_key(uint32_t seed) { return mix32(seed ^ 0x9e3779b9u); }

float dropout_uniform(uint32_t key, uint32_t index) {
  return static_cast<float>(mix32(index ^ key) >> 8) * kTwoPowMinus24;
}

std::vector<float> dropout_mask(size_t count, float p, uint32_t seed) {
  if (seed > kMaxDropoutSeed)
    throw std::invalid_argument("dropout seed " + std::to_string(seed) + " is above 2^24 (the kernel takes it as f32)");
  const uint32_t key = dropout_key(seed);
  std::vector<float> mask(count);
  for (size_t i = 0; i < count; ++i)
    mask[i] = dropout_uniform(key, static_cast<uint32_t>(i)) >= p ? 1.0f : 0.0f;
  return mask;
}

float dropout_scale(float p) {
  return p == 1.0f ? 0.0f : static_cast<float>(1.0 / (1.0 - static_cast<double>(p)));
}

float UniformSource::next(float bound) {
  const float u = static_cast<float>(engine_() >> 8) * kTwoPowMinus24;
  return (2.0f * u - 1.0f) * bound;
}

void UniformSource::fill(std::vector<float>& values, float bound) {
  for (float& v : values) v = next(bound);
}

}  // namespace hpusim::synapse::zoo_reference
