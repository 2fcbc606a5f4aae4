// The TPC kernels' arithmetic on the host, operation by operation in the kernels' order
// (synapse/tpc_kernels/README.md): f32 operations each rounded to nearest even, special
// functions (exp, log, tanh, rsqrt) as hpusim's TPC model computes them (in double, rounded once),
// dim-0 sums in the VPU's lane order. Tensors are dense, dim 0 innermost: a "row" is the n
// contiguous elements of dim 0, and `rows` of them follow each other.
//
// The forward operations are templates instantiated for float (the reference) and double (the
// finite-difference gradient checks); the backward ones are float only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hpusim::synapse::zoo_reference {

// Lanes of an f32 vector: dim-0 reductions accumulate element i into lane i % kLanes.
inline constexpr size_t kLanes = 64;

// A dim-0 sum as the row kernels compute it: lane j adds elements j, j + 64, ... in order from
// +0, then the lanes are added as reduce.add's pairwise tree (lane 2i + lane 2i+1, repeated).
template <class T>
class LaneSum {
 public:
  void add(T value) {
    lanes_[next_] = lanes_[next_] + value;
    next_ = next_ + 1 == kLanes ? 0 : next_ + 1;
  }
  T total() const;

 private:
  T lanes_[kLanes] = {};
  size_t next_ = 0;
};

// IEEE 754-2019 maximum (NaN propagates, -0 < +0), as the VPU's max.
template <class T>
T ieee_maximum(T a, T b);

// Special functions: hpusim's TPC model evaluates them in double and rounds to the dtype once.
template <class T>
T special_exp(T x);
template <class T>
T special_log(T x);
template <class T>
T special_tanh(T x);
template <class T>
T special_rsqrt(T x);
template <class T>
T special_sqrt(T x);

// ---- elementwise ----
template <class T>
void add(const T* a, const T* b, T* c, size_t count);                         // c = a + b
template <class T>
void mul(const T* a, const T* b, T* c, size_t count);                         // c = a * b
template <class T>
void add_row(T* x, const T* row, size_t rows, size_t n);                      // x[r][j] += row[j]
template <class T>
void relu(const T* x, T* y, size_t count);                                    // maximum(x, +0)
void relu_bwd(const float* grad, const float* x, float* dx, size_t count);    // x <= 0 ? 0 : grad
template <class T>
void gelu_tanh(const T* x, T* y, size_t count);
void gelu_tanh_bwd(const float* grad, const float* x, float* dx, size_t count);
template <class T>
void dropout(const T* x, const float* mask, float scale, T* y, size_t count);  // (x * mask) * scale
void dropout_bwd(const float* grad, const float* mask, float scale, float* dx, size_t count);

// ---- reductions ----
template <class T>
T sum_dim0(const T* x, size_t count);    // reduce_sum over dim 0 of a 1-D tensor (LaneSum; long f32 rows in chunks)
template <class T>
T mean_dim0(const T* x, size_t count);   // reduce_mean: sum_dim0 / f32(count)
// reduce_sum over dim 1 of [rows, n] (dim 0 = n): out[j] = sum of x[r][j], r = 0, 1, ... from +0;
// with few outputs and many rows in chunks as the kernel library splits it (row_chunks.h).
void sum_outer(const float* x, float* out, size_t rows, size_t n);

// ---- row kernels over dim 0 ----
template <class T>
void softmax(const T* x, T* y, size_t rows, size_t n);       // exp(x - m) / s
template <class T>
void log_softmax(const T* x, T* y, size_t rows, size_t n);   // (x - m) - log(s)
void softmax_bwd(const float* grad, const float* y, float* dx, size_t rows, size_t n);       // y * (g - sum(g * y))
void log_softmax_bwd(const float* grad, const float* y, float* dx, size_t rows, size_t n);   // g - exp(y) * sum(g)

// layernorm_fwd: mean, var (biased, two passes), rstd = rsqrt(var + eps), y = ((x - mean) * rstd)
// * gamma + beta. mean / rstd hold one value per row. gamma / beta may both be null.
template <class T>
void layernorm(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, size_t rows, size_t n, float eps);
// layernorm_bwd (dx; gamma may be null) and layernorm_bwd_gamma_beta (rows in memory order; in
// chunks whose partials are then added, where the kernel library splits the rows: row_chunks.h).
void layernorm_bwd(const float* grad, const float* x, const float* mean, const float* rstd, const float* gamma,
                   float* dx, size_t rows, size_t n);
void layernorm_bwd_gamma_beta(const float* grad, const float* x, const float* mean, const float* rstd, float* dgamma,
                              float* dbeta, size_t rows, size_t n);

// ---- nll_loss, reduction mean (no class weights, no ignore_index) ----
// logp [batch, classes] (dim 0 = classes). Returns the loss; *total_weight = the sample count as
// the kernel counts it. A target outside 0 .. classes-1 gives NaN, as the kernel's NaN padding.
template <class T>
T nll_loss(const T* logp, const int32_t* target, size_t batch, size_t classes, T* total_weight = nullptr);
// dx[n][target[n]] = -(grad / total_weight), 0 elsewhere.
void nll_loss_bwd(float grad, const int32_t* target, float total_weight, float* dx, size_t batch, size_t classes);

}  // namespace hpusim::synapse::zoo_reference
