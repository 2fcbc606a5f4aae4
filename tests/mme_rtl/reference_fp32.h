// The arithmetic the MME PEs must match, computed with the host's IEEE float (SSE, round to
// nearest-even, no flush to zero), with NaN results canonicalised to 0x7FC00000.
#pragma once

#include <cstdint>
#include <vector>

namespace hpusim::mme::rtl::test {

inline constexpr uint32_t kCanonicalNan = 0x7FC00000u;

uint32_t reference_mul(uint32_t x, uint32_t y);
uint32_t reference_add(uint32_t x, uint32_t y);

// c[i][j] = sum over k of a[i][k] * b[k][j], accumulated from +0 in k order, each product and each
// sum rounded separately. a is rows x k, b is k x cols, c rows x cols, all row-major.
std::vector<uint32_t> reference_matmul(uint32_t rows, uint32_t cols, uint32_t k,
                                       const std::vector<uint32_t>& a,
                                       const std::vector<uint32_t>& b);

}  // namespace hpusim::mme::rtl::test
