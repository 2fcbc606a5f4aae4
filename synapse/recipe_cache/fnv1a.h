// 64-bit FNV-1a, the checksum of a recipe file's payload.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hpusim::synapse::recipe_cache {

inline uint64_t fnv1a64(const void* data, size_t size) {
  uint64_t hash = 14695981039346656037ull;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace hpusim::synapse::recipe_cache
