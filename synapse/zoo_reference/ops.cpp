#include "synapse/zoo_reference/ops.h"

#include "synapse/tpc_kernels/row_chunks.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace hpusim::synapse::zoo_reference {

namespace {
// The gelu kernels' f32 immediates (ops.inc): PyTorch's kBeta = sqrt(2 / pi), kKappa, and
// 3 * kKappa as its own literal (not 3 * f32(kKappa)).
constexpr float kGeluBeta = 0.7978845608028654f;
constexpr float kGeluKappa = 0.044715f;
constexpr float kGelu3Kappa = 0.134145f;

template <class T>
T row_max(const T* x, size_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (size_t j = 0; j < n; ++j) m = ieee_maximum(m, x[j]);
  return m;
}
}  // namespace

template <class T>
T LaneSum<T>::total() const {
  T tree[kLanes];
  for (size_t i = 0; i < kLanes; ++i) tree[i] = lanes_[i];
  for (size_t width = kLanes; width > 1; width /= 2)
    for (size_t i = 0; i < width / 2; ++i) tree[i] = tree[2 * i] + tree[2 * i + 1];
  return tree[0];
}

template <class T>
T ieee_maximum(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

template <class T>
T special_exp(T x) {
  return static_cast<T>(std::exp(static_cast<double>(x)));
}
template <class T>
T special_log(T x) {
  return static_cast<T>(std::log(static_cast<double>(x)));
}
template <class T>
T special_tanh(T x) {
  return static_cast<T>(std::tanh(static_cast<double>(x)));
}
template <class T>
T special_rsqrt(T x) {
  return static_cast<T>(1.0 / std::sqrt(static_cast<double>(x)));
}
template <class T>
T special_sqrt(T x) {
  return static_cast<T>(std::sqrt(static_cast<double>(x)));
}

template <class T>
void add(const T* a, const T* b, T* c, size_t count) {
  for (size_t i = 0; i < count; ++i) c[i] = a[i] + b[i];
}

template <class T>
void mul(const T* a, const T* b, T* c, size_t count) {
  for (size_t i = 0; i < count; ++i) c[i] = a[i] * b[i];
}

template <class T>
void add_row(T* x, const T* row, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < n; ++j) x[r * n + j] = x[r * n + j] + row[j];
}

template <class T>
void relu(const T* x, T* y, size_t count) {
  for (size_t i = 0; i < count; ++i) y[i] = ieee_maximum(x[i], T(0));
}

void relu_bwd(const float* grad, const float* x, float* dx, size_t count) {
  for (size_t i = 0; i < count; ++i) dx[i] = x[i] <= 0.0f ? 0.0f : grad[i];
}

template <class T>
void gelu_tanh(const T* x, T* y, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const T v = x[i];
    T inner = v * v;
    inner = inner * v;
    inner = inner * T(kGeluKappa);
    inner = v + inner;
    inner = inner * T(kGeluBeta);
    const T t = special_tanh(inner) + T(1);
    y[i] = (v * T(0.5f)) * t;
  }
}

void gelu_tanh_bwd(const float* grad, const float* x, float* dx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float v2 = v * v;
    float inner = v2 * v;
    inner = inner * kGeluKappa;
    inner = v + inner;
    inner = inner * kGeluBeta;
    const float t = special_tanh(inner);
    float dinner = v2 * kGelu3Kappa;
    dinner = dinner + 1.0f;
    dinner = dinner * kGeluBeta;
    const float sech2 = 1.0f - t * t;
    float right = v * 0.5f;
    right = right * sech2;
    right = right * dinner;
    float left = t + 1.0f;
    left = left * 0.5f;
    dx[i] = grad[i] * (left + right);
  }
}

template <class T>
void dropout(const T* x, const float* mask, float scale, T* y, size_t count) {
  for (size_t i = 0; i < count; ++i) y[i] = (x[i] * T(mask[i])) * T(scale);
}

void dropout_bwd(const float* grad, const float* mask, float scale, float* dx, size_t count) {
  for (size_t i = 0; i < count; ++i) dx[i] = (grad[i] * mask[i]) * scale;
}

template <class T>
T sum_dim0(const T* x, size_t count) {
  // f32 rows the kernel library splits (row_chunks.h): each chunk's sum, then those summed alike.
  const uint32_t chunk = std::is_same_v<T, float> ? tpc_kernels::dim0_chunk_length(count) : 0;
  if (chunk != 0) {
    std::vector<T> partials(count / chunk);
    for (size_t c = 0; c < partials.size(); ++c) partials[c] = sum_dim0(x + c * chunk, chunk);
    return sum_dim0(partials.data(), partials.size());
  }
  LaneSum<T> sum;
  for (size_t i = 0; i < count; ++i) sum.add(x[i]);
  return sum.total();
}

template <class T>
T mean_dim0(const T* x, size_t count) {
  return sum_dim0(x, count) / T(static_cast<float>(count));
}

void sum_outer(const float* x, float* out, size_t rows, size_t n) {
  // Split as the kernel library splits it (row_chunks.h): a partial per chunk of rows from +0,
  // then the partials added in chunk order from +0; unsplit, one chunk of every row.
  const uint32_t split = tpc_kernels::split_row_chunk(rows, n);
  const size_t length = split != 0 ? split : rows;
  std::vector<float> part(n);
  for (size_t j = 0; j < n; ++j) out[j] = 0.0f;
  for (size_t first = 0; first < rows; first += length) {
    for (size_t j = 0; j < n; ++j) part[j] = 0.0f;
    for (size_t r = first; r < first + length; ++r)
      for (size_t j = 0; j < n; ++j) part[j] = part[j] + x[r * n + j];
    for (size_t j = 0; j < n; ++j) out[j] = split != 0 ? out[j] + part[j] : part[j];
  }
}

template <class T>
void softmax(const T* x, T* y, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T m = row_max(xr, n);
    LaneSum<T> s;
    for (size_t j = 0; j < n; ++j) s.add(special_exp(xr[j] - m));
    const T total = s.total();
    for (size_t j = 0; j < n; ++j) y[r * n + j] = special_exp(xr[j] - m) / total;
  }
}

template <class T>
void log_softmax(const T* x, T* y, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T m = row_max(xr, n);
    LaneSum<T> s;
    for (size_t j = 0; j < n; ++j) s.add(special_exp(xr[j] - m));
    const T log_s = special_log(s.total());
    for (size_t j = 0; j < n; ++j) y[r * n + j] = (xr[j] - m) - log_s;
  }
}

void softmax_bwd(const float* grad, const float* y, float* dx, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r) {
    const float* g = grad + r * n;
    const float* yr = y + r * n;
    LaneSum<float> s;
    for (size_t j = 0; j < n; ++j) s.add(g[j] * yr[j]);
    const float total = s.total();
    for (size_t j = 0; j < n; ++j) dx[r * n + j] = yr[j] * (g[j] - total);
  }
}

void log_softmax_bwd(const float* grad, const float* y, float* dx, size_t rows, size_t n) {
  for (size_t r = 0; r < rows; ++r) {
    const float* g = grad + r * n;
    const float* yr = y + r * n;
    LaneSum<float> s;
    for (size_t j = 0; j < n; ++j) s.add(g[j]);
    const float total = s.total();
    for (size_t j = 0; j < n; ++j) dx[r * n + j] = g[j] - special_exp(yr[j]) * total;
  }
}

template <class T>
void layernorm(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd, size_t rows, size_t n, float eps) {
  const T nf = T(static_cast<float>(n));
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    LaneSum<T> s1;
    for (size_t j = 0; j < n; ++j) s1.add(xr[j]);
    const T mu = s1.total() / nf;
    LaneSum<T> s2;
    for (size_t j = 0; j < n; ++j) {
      const T d = xr[j] - mu;
      s2.add(d * d);
    }
    const T rs = special_rsqrt(s2.total() / nf + T(eps));
    mean[r] = mu;
    rstd[r] = rs;
    for (size_t j = 0; j < n; ++j) {
      T v = (xr[j] - mu) * rs;
      if (gamma) v = v * gamma[j] + beta[j];
      y[r * n + j] = v;
    }
  }
}

void layernorm_bwd(const float* grad, const float* x, const float* mean, const float* rstd, const float* gamma,
                   float* dx, size_t rows, size_t n) {
  const float nf = static_cast<float>(n);
  for (size_t r = 0; r < rows; ++r) {
    const float* g = grad + r * n;
    const float* xr = x + r * n;
    const float mu = mean[r], rs = rstd[r];
    LaneSum<float> sum_dxhat, sum_dxhat_xhat;
    for (size_t j = 0; j < n; ++j) {
      const float dxhat = gamma ? g[j] * gamma[j] : g[j];
      const float xhat = (xr[j] - mu) * rs;
      sum_dxhat.add(dxhat);
      sum_dxhat_xhat.add(xhat * dxhat);
    }
    const float a = sum_dxhat.total() / nf;
    const float b = sum_dxhat_xhat.total() / nf;
    for (size_t j = 0; j < n; ++j) {
      const float dxhat = gamma ? g[j] * gamma[j] : g[j];
      const float xhat = (xr[j] - mu) * rs;
      dx[r * n + j] = ((dxhat - a) - xhat * b) * rs;
    }
  }
}

void layernorm_bwd_gamma_beta(const float* grad, const float* x, const float* mean, const float* rstd, float* dgamma,
                              float* dbeta, size_t rows, size_t n) {
  // Split as the kernel library splits it (row_chunks.h): a partial per chunk of rows, then the
  // partials added in chunk order from +0; unsplit, one chunk of every row.
  const uint32_t split = tpc_kernels::split_row_chunk(rows, n);
  const size_t length = split != 0 ? split : rows;
  std::vector<float> part_gamma(n), part_beta(n);
  for (size_t j = 0; j < n; ++j) dgamma[j] = dbeta[j] = 0.0f;
  for (size_t first = 0; first < rows; first += length) {
    for (size_t j = 0; j < n; ++j) part_gamma[j] = part_beta[j] = 0.0f;
    for (size_t r = first; r < first + length; ++r)
      for (size_t j = 0; j < n; ++j) {
        const float g = grad[r * n + j];
        const float xhat = (x[r * n + j] - mean[r]) * rstd[r];
        part_gamma[j] = part_gamma[j] + g * xhat;
        part_beta[j] = part_beta[j] + g;
      }
    for (size_t j = 0; j < n; ++j) {
      dgamma[j] = split != 0 ? dgamma[j] + part_gamma[j] : part_gamma[j];
      dbeta[j] = split != 0 ? dbeta[j] + part_beta[j] : part_beta[j];
    }
  }
}

template <class T>
T nll_loss(const T* logp, const int32_t* target, size_t batch, size_t classes, T* total_weight) {
  T sum = T(0), count = T(0);
  for (size_t i = 0; i < batch; ++i) {
    const int32_t t = target[i];
    const T value = t >= 0 && static_cast<size_t>(t) < classes ? logp[i * classes + static_cast<size_t>(t)]
                                                               : std::numeric_limits<T>::quiet_NaN();
    sum = sum - value;
    count = count + T(1);
  }
  if (total_weight) *total_weight = count;
  return sum / count;
}

void nll_loss_bwd(float grad, const int32_t* target, float total_weight, float* dx, size_t batch, size_t classes) {
  const float value = -(grad / total_weight);
  for (size_t i = 0; i < batch; ++i)
    for (size_t c = 0; c < classes; ++c)
      dx[i * classes + c] = static_cast<int64_t>(c) == target[i] ? value : 0.0f;
}

#define ZOO_INSTANTIATE_FORWARD(T)                                                                      \
  template class LaneSum<T>;                                                                            \
  template T ieee_maximum<T>(T, T);                                                                     \
  template T special_exp<T>(T);                                                                         \
  template T special_log<T>(T);                                                                         \
  template T special_tanh<T>(T);                                                                        \
  template T special_rsqrt<T>(T);                                                                       \
  template T special_sqrt<T>(T);                                                                        \
  template void add<T>(const T*, const T*, T*, size_t);                                                 \
  template void mul<T>(const T*, const T*, T*, size_t);                                                 \
  template void add_row<T>(T*, const T*, size_t, size_t);                                               \
  template void relu<T>(const T*, T*, size_t);                                                          \
  template void gelu_tanh<T>(const T*, T*, size_t);                                                     \
  template void dropout<T>(const T*, const float*, float, T*, size_t);                                  \
  template T sum_dim0<T>(const T*, size_t);                                                             \
  template T mean_dim0<T>(const T*, size_t);                                                            \
  template void softmax<T>(const T*, T*, size_t, size_t);                                               \
  template void log_softmax<T>(const T*, T*, size_t, size_t);                                           \
  template void layernorm<T>(const T*, const T*, const T*, T*, T*, T*, size_t, size_t, float);          \
  template T nll_loss<T>(const T*, const int32_t*, size_t, size_t, T*);

ZOO_INSTANTIATE_FORWARD(float)
ZOO_INSTANTIATE_FORWARD(double)
#undef ZOO_INSTANTIATE_FORWARD

}  // namespace hpusim::synapse::zoo_reference
