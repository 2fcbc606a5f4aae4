#include "synapse/zoo_reference/gemm.h"

#include <algorithm>
#include <vector>

#include "synapse/zoo_reference/ops.h"

namespace hpusim::synapse::zoo_reference {

namespace {
// Blocks keep a few C rows and one B row slice in cache; the k order of every element stays 0..K-1.
constexpr size_t kRowBlock = 16;
constexpr size_t kColBlock = 512;

template <class T>
std::vector<T> transposed(const T* src, size_t rows, size_t cols) {
  std::vector<T> dst(rows * cols);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
  return dst;
}
}  // namespace

template <class T>
void gemm(const T* a, const T* b, T* c, size_t m, size_t n, size_t k, bool trans_a, bool trans_b) {
  std::vector<T> a_rows, b_rows;
  if (trans_a) {
    a_rows = transposed(a, k, m);
    a = a_rows.data();
  }
  if (trans_b) {
    b_rows = transposed(b, n, k);
    b = b_rows.data();
  }
  std::fill(c, c + m * n, T(0));
  for (size_t j0 = 0; j0 < n; j0 += kColBlock) {
    const size_t j1 = std::min(n, j0 + kColBlock);
    for (size_t i0 = 0; i0 < m; i0 += kRowBlock) {
      const size_t i1 = std::min(m, i0 + kRowBlock);
      for (size_t kk = 0; kk < k; ++kk) {
        const T* b_row = b + kk * n;
        for (size_t i = i0; i < i1; ++i) {
          const T a_ik = a[i * k + kk];
          T* c_row = c + i * n;
          for (size_t j = j0; j < j1; ++j) c_row[j] = c_row[j] + a_ik * b_row[j];
        }
      }
    }
  }
}

template <class T>
void linear(const T* x, const T* w, const T* bias, T* y, size_t rows, size_t in, size_t out) {
  gemm(x, w, y, rows, out, in, false, true);
  add_row(y, bias, rows, out);
}

void linear_bwd(const float* dy, const float* x, const float* w, float* dx, float* dw, float* db, size_t rows,
                size_t in, size_t out) {
  gemm(dy, x, dw, out, in, rows, true, false);
  sum_outer(dy, db, rows, out);
  if (dx) gemm(dy, w, dx, rows, in, out, false, false);
}

template void gemm<float>(const float*, const float*, float*, size_t, size_t, size_t, bool, bool);
template void gemm<double>(const double*, const double*, double*, size_t, size_t, size_t, bool, bool);
template void linear<float>(const float*, const float*, const float*, float*, size_t, size_t, size_t);
template void linear<double>(const double*, const double*, const double*, double*, size_t, size_t, size_t);

}  // namespace hpusim::synapse::zoo_reference
