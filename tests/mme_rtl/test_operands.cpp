#include "tests/mme_rtl/test_operands.h"

namespace hpusim::mme::rtl::test {
namespace {

constexpr uint32_t kSignBit = 0x80000000u;

uint32_t uniform(std::mt19937& rng, uint32_t lo, uint32_t hi) {
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
}

// A random sign and fraction with a biased exponent in [lo, hi].
uint32_t with_exponent(std::mt19937& rng, uint32_t lo, uint32_t hi) {
  const uint32_t sign = rng() & kSignBit;
  return sign | uniform(rng, lo, hi) << 23 | (rng() & 0x7FFFFFu);
}

uint32_t sparse_fraction(std::mt19937& rng) {
  uint32_t fraction = 0;
  for (uint32_t bits = uniform(rng, 0, 3); bits > 0; --bits) fraction |= 1u << uniform(rng, 0, 22);
  return fraction;
}

}  // namespace

std::vector<uint32_t> edge_values() {
  const uint32_t magnitudes[] = {
      0x00000000u,  // zero
      0x00000001u, 0x00000002u, 0x00000003u, 0x003FFFFFu, 0x00400000u,
      0x007FFFFFu,  // subnormals
      0x00800000u, 0x00800001u, 0x00FFFFFFu, 0x01000000u,  // smallest normals
      0x0D800000u,  // 2^-100
      0x1F800000u, 0x20000000u,  // 2^-64, 2^-63: squares near the subnormal range
      0x32800000u, 0x33800000u, 0x33800001u, 0x34000000u,  // 2^-26, 2^-24 (+ulp), 2^-23
      0x3EAAAAABu,  // 1/3
      0x3F000000u, 0x3F7FFFFFu, 0x3F800000u, 0x3F800001u, 0x3F800800u, 0x3FC00000u,
      0x3FFFFFFFu, 0x40000000u, 0x40400000u,  // around one; 1 + 2^-12 squares to a tie
      0x4B000000u, 0x4B800000u,  // 2^23, 2^24
      0x5F800000u,  // 2^64
      0x73000000u,  // 2^103: half an ulp of the largest finite value
      0x7EFFFFFFu, 0x7F000000u, 0x7F7FFFFFu,  // near overflow, largest finite
      0x7F800000u,  // infinity
      0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu,  // quiet, signalling, largest-payload NaN
  };
  std::vector<uint32_t> values;
  for (uint32_t magnitude : magnitudes) {
    values.push_back(magnitude);
    values.push_back(magnitude | kSignBit);
  }
  return values;
}

uint32_t random_operand(std::mt19937& rng, OperandKind kind) {
  switch (kind) {
    case OperandKind::AnyBits:
      return rng();
    case OperandKind::Moderate:
      return with_exponent(rng, 127 - 20, 127 + 19);
    case OperandKind::Bf16:
      return with_exponent(rng, 127 - 20, 127 + 19) & 0xFFFF0000u;
    case OperandKind::SparseMantissa:
      return (with_exponent(rng, 127 - 20, 127 + 19) & 0xFF800000u) | sparse_fraction(rng);
    case OperandKind::Tiny:
      return with_exponent(rng, 127 - 75, 127 - 63);
    case OperandKind::Huge:
      return with_exponent(rng, 127 + 60, 254);
    case OperandKind::Edge: {
      static const std::vector<uint32_t> edges = edge_values();
      return edges[uniform(rng, 0, static_cast<uint32_t>(edges.size() - 1))];
    }
  }
  return 0;
}

uint32_t random_near_operand(std::mt19937& rng, uint32_t x) {
  const uint32_t exponent = (x >> 23) & 0xFFu;
  const uint32_t shift = uniform(rng, 0, 30);
  const uint32_t near_exponent = exponent > shift ? exponent - shift : 0;
  // Fractions equal to x's, or off in a few low bits, make exact and near cancellation likely.
  const uint32_t fraction = rng() % 4 == 0 ? rng() & 0x7FFFFFu : (x ^ (rng() & 0xFu)) & 0x7FFFFFu;
  return (rng() & kSignBit) | near_exponent << 23 | fraction;
}

std::vector<uint32_t> random_operands(std::mt19937& rng, uint64_t count, const OperandMix& mix) {
  std::vector<double> weights;
  for (const auto& entry : mix) weights.push_back(entry.second);
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::vector<uint32_t> values(count);
  for (uint32_t& value : values) value = random_operand(rng, mix[pick(rng)].first);
  return values;
}

}  // namespace hpusim::mme::rtl::test
