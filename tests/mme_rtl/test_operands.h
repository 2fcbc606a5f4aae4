// binary32 operands for the MME RTL tests: edge values and seeded random bit patterns.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace hpusim::mme::rtl::test {

// Zeros, subnormals (smallest, largest, around the middle), the smallest normals, one and its
// neighbours, rounding-tie makers, powers of two near the extremes, the largest finite value,
// infinities and NaNs (quiet, signalling, largest payload), each with both signs.
std::vector<uint32_t> edge_values();

enum class OperandKind {
  AnyBits,         // uniformly random patterns: huge, tiny, infinities and NaNs included
  Moderate,        // |x| in [2^-20, 2^20): sums of products stay finite
  Bf16,            // Moderate with the low 16 bits cleared (a bf16 value widened)
  SparseMantissa,  // Moderate with at most three fraction bits set: exact ties are common
  Tiny,            // |x| in [2^-75, 2^-62): products from underflow to just above 2^-126
  Huge,            // |x| in [2^60, 2^128): products overflow
  Edge,            // one of edge_values()
};

uint32_t random_operand(std::mt19937& rng, OperandKind kind);

// A y close to x for addition: the exponent differs by 0..30 (around the alignment limits) and
// the sign is random, so x + y ranges from exact cancellation to a sticky-only addend.
uint32_t random_near_operand(std::mt19937& rng, uint32_t x);

// Operand kinds and their relative weights.
using OperandMix = std::vector<std::pair<OperandKind, double>>;

std::vector<uint32_t> random_operands(std::mt19937& rng, uint64_t count, const OperandMix& mix);

}  // namespace hpusim::mme::rtl::test
