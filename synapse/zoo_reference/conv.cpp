#include "synapse/zoo_reference/conv.h"

#include <algorithm>
#include <vector>

namespace hpusim::synapse::zoo_reference {

namespace {
// The implicit GEMM's A row of output pixel (n, p, q): x values in (r, s, c) order, 0 in the padding.
template <class T>
void gather_patch(const ConvGeometry& g, const T* x, size_t n, size_t p, size_t q, T* patch) {
  for (size_t r = 0; r < g.r; ++r)
    for (size_t s = 0; s < g.s; ++s) {
      const long hi = static_cast<long>(p * g.stride + r) - static_cast<long>(g.pad);
      const long wi = static_cast<long>(q * g.stride + s) - static_cast<long>(g.pad);
      const bool inside = hi >= 0 && wi >= 0 && hi < static_cast<long>(g.h) && wi < static_cast<long>(g.w);
      T* dst = patch + (r * g.s + s) * g.c;
      for (size_t c = 0; c < g.c; ++c)
        dst[c] = inside ? x[((n * g.h + static_cast<size_t>(hi)) * g.w + static_cast<size_t>(wi)) * g.c + c] : T(0);
    }
}
}  // namespace

template <class T>
void conv2d(const ConvGeometry& g, const T* x, const T* w, T* y) {
  const size_t depth = g.r * g.s * g.c;
  const size_t out_h = g.out_h(), out_w = g.out_w();
  std::vector<T> patch(depth);
  for (size_t n = 0; n < g.n; ++n)
    for (size_t p = 0; p < out_h; ++p)
      for (size_t q = 0; q < out_w; ++q) {
        gather_patch(g, x, n, p, q, patch.data());
        T* out = y + ((n * out_h + p) * out_w + q) * g.k;
        std::fill(out, out + g.k, T(0));
        for (size_t d = 0; d < depth; ++d)
          for (size_t k = 0; k < g.k; ++k) out[k] = out[k] + patch[d] * w[d * g.k + k];
      }
}

void conv2d_dedw(const ConvGeometry& g, const float* x, const float* dy, float* dw) {
  const size_t depth = g.r * g.s * g.c;
  const size_t out_h = g.out_h(), out_w = g.out_w();
  std::vector<float> patch(depth);
  std::fill(dw, dw + depth * g.k, 0.0f);
  for (size_t n = 0; n < g.n; ++n)
    for (size_t p = 0; p < out_h; ++p)
      for (size_t q = 0; q < out_w; ++q) {
        gather_patch(g, x, n, p, q, patch.data());
        const float* grad = dy + ((n * out_h + p) * out_w + q) * g.k;
        for (size_t d = 0; d < depth; ++d)
          for (size_t k = 0; k < g.k; ++k) dw[d * g.k + k] = dw[d * g.k + k] + patch[d] * grad[k];
      }
}

template void conv2d<float>(const ConvGeometry&, const float*, const float*, float*);
template void conv2d<double>(const ConvGeometry&, const double*, const double*, double*);

}  // namespace hpusim::synapse::zoo_reference
