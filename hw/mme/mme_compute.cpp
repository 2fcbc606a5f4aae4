#include "hw/mme/mme_compute.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "arch/hex.h"

namespace hpusim::mme {
namespace {

constexpr uint32_t kCanonicalNan = 0x7FC00000u;

// The column-vectorised kernel. Each accumulator lane is one output element and sees its
// products in k order, so vector width changes nothing in the values. This file is compiled
// with -ffp-contract=off: a * b + c must stay two roundings.
typedef float V4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));

template <typename Vec, int kLanes>
struct Kernel {
  static constexpr int kRows = 6;
  static constexpr int kVecs = 2;                  // columns per block: kVecs * kLanes
  static constexpr int kCols = kVecs * kLanes;

  // Everything below is always inlined into the per-ISA entry points (gemm_avx512 ...), which
  // carry the target attribute: a separately compiled template would get the default ISA.
  __attribute__((always_inline)) static Vec load(const float* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  __attribute__((always_inline)) static void store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }

  // A full kRows x kCols block.
  __attribute__((always_inline)) static void block(const float* a, size_t lda, const float* b, size_t ldb, float* c,
                                                   size_t ldc, size_t k) {
    Vec acc[kRows][kVecs] = {};
    for (size_t kk = 0; kk < k; ++kk) {
      const float* brow = b + kk * ldb;
      Vec bv[kVecs];
      for (int v = 0; v < kVecs; ++v) bv[v] = load(brow + v * kLanes);
      for (int r = 0; r < kRows; ++r) {
        const float s = a[r * lda + kk];
        for (int v = 0; v < kVecs; ++v) {
          const Vec p = bv[v] * s;
          acc[r][v] = acc[r][v] + p;
        }
      }
    }
    for (int r = 0; r < kRows; ++r) {
      for (int v = 0; v < kVecs; ++v) store(c + r * ldc + v * kLanes, acc[r][v]);
    }
  }
};

// Rows and columns the blocks do not cover: scalar, same order.
void edge(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t r0, size_t r1,
          size_t c0, size_t c1, size_t k) {
  for (size_t i = r0; i < r1; ++i) {
    for (size_t j = c0; j < c1; ++j) {
      float acc = 0.0f;
      for (size_t kk = 0; kk < k; ++kk) {
        const float p = a[i * lda + kk] * b[kk * ldb + j];
        acc = acc + p;
      }
      c[i * ldc + j] = acc;
    }
  }
}

template <typename K>
__attribute__((always_inline)) inline void gemm_with(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows, size_t cols,
               size_t k) {
  const size_t full_rows = rows / K::kRows * K::kRows;
  const size_t full_cols = cols / K::kCols * K::kCols;
  // A strip of B's columns is packed contiguous (k x kCols), so the blocks that reuse it stream
  // it from cache instead of touching one page per k.
  thread_local std::vector<float> strip;
  strip.resize(k * K::kCols);
  for (size_t j = 0; j < full_cols; j += K::kCols) {
    for (size_t kk = 0; kk < k; ++kk) std::memcpy(strip.data() + kk * K::kCols, b + kk * ldb + j, K::kCols * 4);
    for (size_t i = 0; i < full_rows; i += K::kRows) {
      K::block(a + i * lda, lda, strip.data(), K::kCols, c + i * ldc + j, ldc, k);
    }
  }
  edge(a, lda, b, ldb, c, ldc, 0, full_rows, full_cols, cols, k);
  edge(a, lda, b, ldb, c, ldc, full_rows, rows, 0, cols, k);
}

__attribute__((target("avx512f"))) void gemm_avx512(const float* a, size_t lda, const float* b, size_t ldb, float* c,
                                                     size_t ldc, size_t rows, size_t cols, size_t k) {
  gemm_with<Kernel<V16, 16>>(a, lda, b, ldb, c, ldc, rows, cols, k);
}

__attribute__((target("avx2"))) void gemm_avx2(const float* a, size_t lda, const float* b, size_t ldb, float* c,
                                               size_t ldc, size_t rows, size_t cols, size_t k) {
  gemm_with<Kernel<V8, 8>>(a, lda, b, ldb, c, ldc, rows, cols, k);
}

void gemm_sse(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows, size_t cols,
              size_t k) {
  gemm_with<Kernel<V4, 4>>(a, lda, b, ldb, c, ldc, rows, cols, k);
}

float element(const uint8_t* p, MmeType type) {
  if (type == MmeType::Bf16) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return bf16_to_f32(v);
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// Reads `count` elements at `address` and widens them to f32 into `dst`.
bool read_elements(const MemoryReader& read, uint64_t address, uint64_t count, MmeType type, float* dst,
                   std::vector<uint8_t>& scratch) {
  const uint32_t e = type_bytes(type);
  scratch.resize(count * e);
  if (!read(address, scratch.size(), scratch.data())) return false;
  for (uint64_t i = 0; i < count; ++i) dst[i] = element(scratch.data() + i * e, type);
  return true;
}

}  // namespace

uint32_t f32_bits(float value) {
  uint32_t u;
  std::memcpy(&u, &value, 4);
  return u;
}
float f32_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float bf16_to_f32(uint16_t bits) { return f32_from_bits(uint32_t{bits} << 16); }
uint16_t f32_to_bf16(float value) {
  const uint32_t u = f32_bits(value);
  if (std::isnan(value)) return static_cast<uint16_t>(kCanonicalNan >> 16);
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

const char* gemm_path_name(GemmPath path) {
  switch (path) {
    case GemmPath::kSse: return "sse";
    case GemmPath::kAvx2: return "avx2";
    case GemmPath::kAvx512: return "avx512";
  }
  return "?";
}

bool gemm_path_supported(GemmPath path) {
  switch (path) {
    case GemmPath::kSse: return true;   // x86-64 baseline
    case GemmPath::kAvx2: return __builtin_cpu_supports("avx2");
    case GemmPath::kAvx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

GemmPath gemm_path_chosen() {
  static const GemmPath chosen = gemm_path_supported(GemmPath::kAvx512) ? GemmPath::kAvx512
                                 : gemm_path_supported(GemmPath::kAvx2) ? GemmPath::kAvx2
                                                                        : GemmPath::kSse;
  return chosen;
}

void gemm_f32_on(GemmPath path, const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc,
                 size_t rows, size_t cols, size_t k) {
  if (!gemm_path_supported(path)) {
    throw std::invalid_argument(std::string("gemm_f32_on: this host cannot run the ") + gemm_path_name(path) + " path");
  }
  switch (path) {
    case GemmPath::kAvx512: return gemm_avx512(a, lda, b, ldb, c, ldc, rows, cols, k);
    case GemmPath::kAvx2: return gemm_avx2(a, lda, b, ldb, c, ldc, rows, cols, k);
    case GemmPath::kSse: return gemm_sse(a, lda, b, ldb, c, ldc, rows, cols, k);
  }
}

void gemm_f32(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows, size_t cols,
              size_t k) {
  gemm_f32_on(gemm_path_chosen(), a, lda, b, ldb, c, ldc, rows, cols, k);
}

void gemm_f32_reference(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows,
                        size_t cols, size_t k) {
  edge(a, lda, b, ldb, c, ldc, 0, rows, 0, cols, k);
}

std::vector<MemoryRegion> operand_reads(const MmeJob& job, uint32_t index) {
  const GemmDims g = gemm_dims(job);
  const uint32_t e = type_bytes(job.in);
  std::vector<MemoryRegion> regions;
  if (job.op == MmeOp::Gemm) {
    const uint64_t a_base = job.a + uint64_t{index} * job.batch_stride_a * e;
    const uint64_t b_base = job.b + uint64_t{index} * job.batch_stride_b * e;
    // Stored rows of A: M rows of K, or (transposed) K rows of M; B likewise.
    const uint64_t a_rows = job.transpose_a ? g.k : g.m, a_cols = job.transpose_a ? g.m : g.k;
    const uint64_t b_rows = job.transpose_b ? g.n : g.k, b_cols = job.transpose_b ? g.k : g.n;
    regions.reserve(a_rows + b_rows);
    for (uint64_t r = 0; r < a_rows; ++r) regions.push_back({a_base + r * job.lda * e, a_cols * e});
    for (uint64_t r = 0; r < b_rows; ++r) regions.push_back({b_base + r * job.ldb * e, b_cols * e});
    return regions;
  }
  const ConvShape& s = job.conv;
  const uint64_t x_elems = uint64_t{s.n} * s.h * s.w * s.c, w_elems = uint64_t{s.r} * s.s * s.c * s.k;
  const uint64_t y_elems = uint64_t{s.n} * static_cast<uint64_t>(s.out_h() * s.out_w()) * s.k;
  const uint64_t a_elems = job.op == MmeOp::ConvBackwardData ? y_elems : x_elems;
  const uint64_t b_elems = job.op == MmeOp::ConvBackwardWeight ? y_elems : w_elems;
  return {{job.a, a_elems * e}, {job.b, b_elems * e}};
}

bool snapshot_operands(const MmeJob& job, uint32_t index, const MemoryReader& read, OperandSnapshot& snapshot,
                       std::string& error) {
  snapshot.regions = operand_reads(job, index);
  uint64_t total = 0;
  for (const MemoryRegion& r : snapshot.regions) total += r.bytes;
  snapshot.bytes.resize(total);
  uint64_t at = 0;
  for (size_t i = 0; i < snapshot.regions.size(); ++i) {
    const MemoryRegion& r = snapshot.regions[i];
    if (!read(r.address, r.bytes, snapshot.bytes.data() + at)) {
      const GemmDims g = gemm_dims(job);
      const uint64_t a_count = job.op == MmeOp::Gemm ? (job.transpose_a ? g.k : g.m) : 1;
      const bool is_a = i < a_count;
      error = std::string("operand ") + (is_a ? "A" : "B") + " read at " + hex(r.address) + " refused";
      return false;
    }
    at += r.bytes;
  }
  return true;
}

MemoryReader OperandSnapshot::reader() const {
  auto next = std::make_shared<size_t>(0);
  auto offset = std::make_shared<uint64_t>(0);
  return [this, next, offset](uint64_t address, size_t bytes, void* dst) {
    if (*next >= regions.size() || regions[*next].address != address || regions[*next].bytes != bytes) return false;
    std::memcpy(dst, this->bytes.data() + *offset, bytes);
    *offset += bytes;
    ++*next;
    return true;
  };
}

bool gather_operands(const MmeJob& job, uint32_t index, const MemoryReader& read, std::vector<float>& a,
                     std::vector<float>& b, std::string& error) {
  const GemmDims g = gemm_dims(job);
  const std::vector<MemoryRegion> regions = operand_reads(job, index);
  a.assign(g.m * g.k, 0.0f);
  b.assign(g.k * g.n, 0.0f);
  std::vector<uint8_t> scratch;
  std::vector<float> row;
  const auto fail = [&](const char* operand, uint64_t address) {
    error = std::string("operand ") + operand + " read at " + hex(address) + " refused";
    return false;
  };

  if (job.op == MmeOp::Gemm) {
    const uint64_t a_rows = job.transpose_a ? g.k : g.m, a_cols = job.transpose_a ? g.m : g.k;
    row.resize(std::max(a_cols, job.transpose_b ? g.k : g.n));
    for (uint64_t r = 0; r < a_rows; ++r) {
      const uint64_t address = regions[r].address;
      if (!read_elements(read, address, a_cols, job.in, row.data(), scratch)) return fail("A", address);
      for (uint64_t c = 0; c < a_cols; ++c) {
        if (job.transpose_a) a[c * g.k + r] = row[c];
        else a[r * g.k + c] = row[c];
      }
    }
    const uint64_t b_rows = job.transpose_b ? g.n : g.k, b_cols = job.transpose_b ? g.k : g.n;
    for (uint64_t r = 0; r < b_rows; ++r) {
      const uint64_t address = regions[a_rows + r].address;
      if (!read_elements(read, address, b_cols, job.in, row.data(), scratch)) return fail("B", address);
      for (uint64_t c = 0; c < b_cols; ++c) {
        if (job.transpose_b) b[c * g.n + r] = row[c];
        else b[r * g.n + c] = row[c];
      }
    }
    return true;
  }

  // Convolutions: read the tensors whole, then lower.
  const ConvShape& s = job.conv;
  const int64_t p = s.out_h(), q = s.out_w();
  const uint64_t x_elems = uint64_t{s.n} * s.h * s.w * s.c, w_elems = uint64_t{s.r} * s.s * s.c * s.k;
  const uint64_t y_elems = uint64_t{s.n} * static_cast<uint64_t>(p * q) * s.k;
  std::vector<float> ta, tb;
  const uint64_t a_elems = job.op == MmeOp::ConvBackwardData ? y_elems : x_elems;
  const uint64_t b_elems = job.op == MmeOp::ConvBackwardWeight ? y_elems : w_elems;
  ta.resize(a_elems);
  tb.resize(b_elems);
  if (!read_elements(read, regions[0].address, a_elems, job.in, ta.data(), scratch)) return fail("A", job.a);
  if (!read_elements(read, regions[1].address, b_elems, job.in, tb.data(), scratch)) return fail("B", job.b);
  const auto x_at = [&](uint64_t n, int64_t h, int64_t w, uint64_t c) -> float {
    if (h < 0 || w < 0 || h >= s.h || w >= s.w) return 0.0f;
    return ta[((n * s.h + static_cast<uint64_t>(h)) * s.w + static_cast<uint64_t>(w)) * s.c + c];
  };
  switch (job.op) {
    case MmeOp::ConvForward:
      // A[(n, p, q)][(r, s, c)] = x[n][p stride - pad + r dil][...][c]; B = w as (R S C) x K.
      for (uint64_t n = 0; n < s.n; ++n)
        for (int64_t op = 0; op < p; ++op)
          for (int64_t oq = 0; oq < q; ++oq) {
            float* arow = a.data() + ((n * p + op) * q + oq) * g.k;
            for (uint32_t r = 0; r < s.r; ++r)
              for (uint32_t t = 0; t < s.s; ++t)
                for (uint32_t c = 0; c < s.c; ++c)
                  arow[(r * s.s + t) * s.c + c] = x_at(n, op * s.stride_h - s.pad_h + int64_t{r} * s.dil_h,
                                                       oq * s.stride_w - s.pad_w + int64_t{t} * s.dil_w, c);
          }
      b = tb;
      return true;
    case MmeOp::ConvBackwardData:
      // dx[(n, h, w)][c] = sum over (r, s, k) of dy[n][p][q][k] w[r][s][c][k] where
      // h = p stride - pad + r dil (likewise w): A[(n, h, w)][(r, s, k)] = that dy or 0.
      for (uint64_t n = 0; n < s.n; ++n)
        for (int64_t h = 0; h < s.h; ++h)
          for (int64_t w = 0; w < s.w; ++w) {
            float* arow = a.data() + ((n * s.h + h) * s.w + w) * g.k;
            for (uint32_t r = 0; r < s.r; ++r) {
              const int64_t ph = h + s.pad_h - int64_t{r} * s.dil_h;
              if (ph < 0 || ph % s.stride_h != 0 || ph / s.stride_h >= p) continue;
              for (uint32_t t = 0; t < s.s; ++t) {
                const int64_t qw = w + s.pad_w - int64_t{t} * s.dil_w;
                if (qw < 0 || qw % s.stride_w != 0 || qw / s.stride_w >= q) continue;
                const float* dy = ta.data() + ((n * p + ph / s.stride_h) * q + qw / s.stride_w) * s.k;
                std::copy(dy, dy + s.k, arow + (r * s.s + t) * s.k);
              }
            }
          }
      // B[(r, s, k)][c] = w[r][s][c][k].
      for (uint32_t r = 0; r < s.r; ++r)
        for (uint32_t t = 0; t < s.s; ++t)
          for (uint32_t c = 0; c < s.c; ++c)
            for (uint32_t k = 0; k < s.k; ++k)
              b[((r * s.s + t) * s.k + k) * g.n + c] = tb[((uint64_t{r} * s.s + t) * s.c + c) * s.k + k];
      return true;
    case MmeOp::ConvBackwardWeight:
      // dw[(r, s, c)][k] = sum over (n, p, q) of x[n][...][c] dy[n][p][q][k]: A[(r, s, c)][(n, p, q)].
      for (uint32_t r = 0; r < s.r; ++r)
        for (uint32_t t = 0; t < s.s; ++t)
          for (uint32_t c = 0; c < s.c; ++c) {
            float* arow = a.data() + ((uint64_t{r} * s.s + t) * s.c + c) * g.k;
            for (uint64_t n = 0; n < s.n; ++n)
              for (int64_t op = 0; op < p; ++op)
                for (int64_t oq = 0; oq < q; ++oq)
                  arow[(n * p + op) * q + oq] = x_at(n, op * s.stride_h - s.pad_h + int64_t{r} * s.dil_h,
                                                     oq * s.stride_w - s.pad_w + int64_t{t} * s.dil_w, c);
          }
      b = tb;   // dy as (N P Q) x K
      return true;
    case MmeOp::Gemm:
      break;
  }
  return true;
}

uint64_t output_row_offset(const MmeJob& job, uint32_t index, uint64_t row) {
  if (job.op == MmeOp::Gemm) return uint64_t{index} * job.batch_stride_o + row * job.ldo;
  return row * gemm_dims(job).n;   // convolution outputs are dense
}

void convert_output(const float* values, size_t count, MmeType out, uint8_t* dst) {
  if (out == MmeType::Bf16) {
    for (size_t i = 0; i < count; ++i) {
      const uint16_t v = f32_to_bf16(values[i]);
      std::memcpy(dst + 2 * i, &v, 2);
    }
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const uint32_t v = std::isnan(values[i]) ? kCanonicalNan : f32_bits(values[i]);
    std::memcpy(dst + 4 * i, &v, 4);
  }
}

}  // namespace hpusim::mme
