// The MME's 2-D convolutions (arch/mme/mme_job.h ConvShape, hw/mme/README.md) as their implicit
// GEMMs, in the array's accumulation order: NHWC activations x[n][h][w][c], RSCK weights
// w[r][s][c][k], NPQK outputs y[n][p][q][k], p = (h + 2 pad - (r - 1) - 1) / stride + 1 (q
// likewise; no dilation). Padding contributes zero products, as the implicit GEMM's zeros.
#pragma once

#include <cstddef>

namespace hpusim::synapse::zoo_reference {

struct ConvGeometry {
  size_t n = 1, h = 1, w = 1, c = 1, k = 1, r = 1, s = 1;
  size_t stride = 1, pad = 0;
  size_t out_h() const { return (h + 2 * pad - (r - 1) - 1) / stride + 1; }
  size_t out_w() const { return (w + 2 * pad - (s - 1) - 1) / stride + 1; }
};

// Forward (spatial_convolution): each y element sums over k = (r, s, c) in that order.
template <class T>
void conv2d(const ConvGeometry& g, const T* x, const T* w, T* y);

// Backward weight (dedw): dw[r][s][c][k] sums x * dy over k = (n, p, q) in that order.
void conv2d_dedw(const ConvGeometry& g, const float* x, const float* dy, float* dw);

}  // namespace hpusim::synapse::zoo_reference
