// Compiled with -ffp-contract=off (CMakeLists.txt): acc + x * y must not become a fused multiply-add.
#include "tests/mme_rtl/reference_fp32.h"

#include <cmath>
#include <cstring>

namespace hpusim::mme::rtl::test {
namespace {

float to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  if (std::isnan(f)) return kCanonicalNan;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

}  // namespace

uint32_t reference_mul(uint32_t x, uint32_t y) { return to_bits(to_float(x) * to_float(y)); }

uint32_t reference_add(uint32_t x, uint32_t y) { return to_bits(to_float(x) + to_float(y)); }

std::vector<uint32_t> reference_matmul(uint32_t rows, uint32_t cols, uint32_t k,
                                       const std::vector<uint32_t>& a,
                                       const std::vector<uint32_t>& b) {
  std::vector<uint32_t> c(uint64_t{rows} * cols);
  for (uint32_t i = 0; i < rows; ++i) {
    for (uint32_t j = 0; j < cols; ++j) {
      float acc = 0.0f;
      for (uint32_t kk = 0; kk < k; ++kk) {
        acc = acc + to_float(a[uint64_t{i} * k + kk]) * to_float(b[uint64_t{kk} * cols + j]);
      }
      c[uint64_t{i} * cols + j] = to_bits(acc);
    }
  }
  return c;
}

}  // namespace hpusim::mme::rtl::test
