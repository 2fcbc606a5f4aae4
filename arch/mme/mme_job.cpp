#include "arch/mme/mme_job.h"

#include <limits>

namespace hpusim::mme {
namespace {

// Gathered operands are held as f32 on the host: a bound on each keeps a bad descriptor from
// asking for more host memory than a simulation can have.
constexpr uint64_t kMaxOperandElements = uint64_t{1} << 28;

uint64_t join(uint32_t high, uint32_t low) { return (uint64_t{high} << 32) | low; }

// Bytes from the first to one past the last element of `batch` row-major rows x cols matrices.
bool span_fits(uint64_t base, uint64_t rows, uint64_t cols, uint64_t ld, uint32_t batch, uint64_t batch_stride,
               uint32_t elem) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const unsigned __int128 last = (static_cast<unsigned __int128>(rows - 1) * ld + cols) +
                                 static_cast<unsigned __int128>(batch - 1) * batch_stride;
  const unsigned __int128 bytes = last * elem;
  return bytes <= max - base;
}

}  // namespace

const char* op_name(MmeOp op) {
  switch (op) {
    case MmeOp::Gemm: return "gemm";
    case MmeOp::ConvForward: return "conv_fwd";
    case MmeOp::ConvBackwardData: return "conv_dgrad";
    case MmeOp::ConvBackwardWeight: return "conv_wgrad";
  }
  return "?";
}

const char* type_name(MmeType type) { return type == MmeType::Bf16 ? "bf16" : "f32"; }

int64_t ConvShape::out_h() const {
  return (int64_t{h} + 2 * int64_t{pad_h} - int64_t{dil_h} * (int64_t{r} - 1) - 1) / int64_t{stride_h} + 1;
}
int64_t ConvShape::out_w() const {
  return (int64_t{w} + 2 * int64_t{pad_w} - int64_t{dil_w} * (int64_t{s} - 1) - 1) / int64_t{stride_w} + 1;
}

GemmDims gemm_dims(const MmeJob& job) {
  const ConvShape& c = job.conv;
  const uint64_t pq = static_cast<uint64_t>(std::max<int64_t>(c.out_h(), 0) * std::max<int64_t>(c.out_w(), 0));
  switch (job.op) {
    case MmeOp::Gemm: return {job.m, job.n, job.k, job.batch};
    case MmeOp::ConvForward: return {uint64_t{c.n} * pq, c.k, uint64_t{c.r} * c.s * c.c, 1};
    case MmeOp::ConvBackwardData: return {uint64_t{c.n} * c.h * c.w, c.c, uint64_t{c.r} * c.s * c.k, 1};
    case MmeOp::ConvBackwardWeight: return {uint64_t{c.r} * c.s * c.c, c.k, uint64_t{c.n} * pq, 1};
  }
  return {};
}

std::string validate(const MmeJob& job, uint32_t geometries) {
  if (static_cast<unsigned>(job.op) > 3) return "op " + std::to_string(static_cast<unsigned>(job.op)) + " is not defined";
  if (static_cast<unsigned>(job.in) > 1) return "input type " + std::to_string(static_cast<unsigned>(job.in)) + " is not bf16 (0) or f32 (1)";
  if (static_cast<unsigned>(job.out) > 1) return "output type " + std::to_string(static_cast<unsigned>(job.out)) + " is not bf16 (0) or f32 (1)";
  if (job.geometry >= geometries) {
    return "geometry " + std::to_string(job.geometry) + " does not exist (the engine has " + std::to_string(geometries) + ")";
  }
  const uint32_t ein = type_bytes(job.in), eout = type_bytes(job.out);
  if (job.op == MmeOp::Gemm) {
    if (job.m == 0 || job.n == 0 || job.k == 0) {
      return "GEMM dims must be positive (M " + std::to_string(job.m) + ", N " + std::to_string(job.n) + ", K " +
             std::to_string(job.k) + ")";
    }
    if (job.batch == 0) return "batch must be at least 1";
    const uint64_t a_rows = job.transpose_a ? job.k : job.m, a_cols = job.transpose_a ? job.m : job.k;
    const uint64_t b_rows = job.transpose_b ? job.n : job.k, b_cols = job.transpose_b ? job.k : job.n;
    if (job.lda < a_cols) return "lda " + std::to_string(job.lda) + " is below A's row length " + std::to_string(a_cols);
    if (job.ldb < b_cols) return "ldb " + std::to_string(job.ldb) + " is below B's row length " + std::to_string(b_cols);
    if (job.ldo < job.n) return "ldo " + std::to_string(job.ldo) + " is below N " + std::to_string(job.n);
    if (uint64_t{job.m} * job.k > kMaxOperandElements || uint64_t{job.k} * job.n > kMaxOperandElements ||
        uint64_t{job.m} * job.n > kMaxOperandElements) {
      return "an operand of M " + std::to_string(job.m) + ", N " + std::to_string(job.n) + ", K " + std::to_string(job.k) +
             " exceeds 2^28 elements";
    }
    if (!span_fits(job.a, a_rows, a_cols, job.lda, job.batch, job.batch_stride_a, ein)) return "operand A runs past the address space";
    if (!span_fits(job.b, b_rows, b_cols, job.ldb, job.batch, job.batch_stride_b, ein)) return "operand B runs past the address space";
    if (!span_fits(job.o, job.m, job.n, job.ldo, job.batch, job.batch_stride_o, eout)) return "output O runs past the address space";
    return "";
  }
  const ConvShape& c = job.conv;
  if (c.n == 0 || c.h == 0 || c.w == 0 || c.c == 0 || c.k == 0 || c.r == 0 || c.s == 0) {
    return "convolution dims N, H, W, C, K, R, S must be positive";
  }
  if (c.stride_h == 0 || c.stride_w == 0) return "convolution strides must be positive";
  if (c.dil_h == 0 || c.dil_w == 0) return "convolution dilations must be positive";
  if (c.out_h() <= 0 || c.out_w() <= 0) return "the filter does not fit the padded input (output would be empty)";
  const GemmDims g = gemm_dims(job);
  if (g.m * g.k > kMaxOperandElements || g.k * g.n > kMaxOperandElements || g.m * g.n > kMaxOperandElements) {
    return "the convolution's implicit GEMM exceeds 2^28 elements in an operand";
  }
  const uint64_t x = uint64_t{c.n} * c.h * c.w * c.c, w = uint64_t{c.r} * c.s * c.c * c.k;
  const uint64_t y = uint64_t{c.n} * static_cast<uint64_t>(c.out_h()) * static_cast<uint64_t>(c.out_w()) * c.k;
  uint64_t a_elems = x, b_elems = w, o_elems = y;
  if (job.op == MmeOp::ConvBackwardData) a_elems = y, b_elems = w, o_elems = x;
  if (job.op == MmeOp::ConvBackwardWeight) a_elems = x, b_elems = y, o_elems = w;
  if (!span_fits(job.a, 1, a_elems, a_elems, 1, 0, ein)) return "operand A runs past the address space";
  if (!span_fits(job.b, 1, b_elems, b_elems, 1, 0, ein)) return "operand B runs past the address space";
  if (!span_fits(job.o, 1, o_elems, o_elems, 1, 0, eout)) return "output O runs past the address space";
  return "";
}

std::vector<std::pair<uint32_t, uint32_t>> encode(const MmeJob& job) {
  using namespace desc;
  const uint32_t header = (static_cast<uint32_t>(job.op) << kOpShift) | (static_cast<uint32_t>(job.in) << kInTypeShift) |
                          (static_cast<uint32_t>(job.out) << kOutTypeShift) | (job.transpose_a ? kTransposeA : 0) |
                          (job.transpose_b ? kTransposeB : 0) | ((job.geometry & 3) << kGeometryShift);
  const auto lo = [](uint64_t v) { return static_cast<uint32_t>(v); };
  const auto hi = [](uint64_t v) { return static_cast<uint32_t>(v >> 32); };
  const ConvShape& c = job.conv;
  return {{kBaseHighA, hi(job.a)},
          {kBaseHighB, hi(job.b)},
          {kBaseHighO, hi(job.o)},
          {kBaseLowA, lo(job.a)},
          {kBaseLowB, lo(job.b)},
          {kBaseLowO, lo(job.o)},
          {kHeader, header},
          {kM, job.m},
          {kN, job.n},
          {kK, job.k},
          {kBatch, job.batch},
          {kLda, job.lda},
          {kLdb, job.ldb},
          {kLdo, job.ldo},
          {kBatchStrideA, lo(job.batch_stride_a)},
          {kBatchStrideA + 4, hi(job.batch_stride_a)},
          {kBatchStrideB, lo(job.batch_stride_b)},
          {kBatchStrideB + 4, hi(job.batch_stride_b)},
          {kBatchStrideO, lo(job.batch_stride_o)},
          {kBatchStrideO + 4, hi(job.batch_stride_o)},
          {kConvN, c.n},
          {kConvH, c.h},
          {kConvW, c.w},
          {kConvC, c.c},
          {kConvK, c.k},
          {kConvR, c.r},
          {kConvS, c.s},
          {kConvStride, (c.stride_h & 0xFFFF) | (c.stride_w << 16)},
          {kConvPad, (c.pad_h & 0xFFFF) | (c.pad_w << 16)},
          {kConvDilation, (c.dil_h & 0xFFFF) | (c.dil_w << 16)},
          {kSoAddrLow, lo(job.so_address)},
          {kSoAddrHigh, hi(job.so_address)},
          {kSoMessage, job.so_message}};
}

MmeJob decode(const uint32_t* window) {
  using namespace desc;
  const auto w = [window](uint32_t offset) { return window[offset / 4]; };
  MmeJob job;
  const uint32_t header = w(kHeader);
  job.op = static_cast<MmeOp>((header >> kOpShift) & 3);
  job.in = static_cast<MmeType>((header >> kInTypeShift) & 3);
  job.out = static_cast<MmeType>((header >> kOutTypeShift) & 3);
  job.transpose_a = (header & kTransposeA) != 0;
  job.transpose_b = (header & kTransposeB) != 0;
  job.geometry = (header >> kGeometryShift) & 3;
  job.a = join(w(kBaseHighA), w(kBaseLowA));
  job.b = join(w(kBaseHighB), w(kBaseLowB));
  job.o = join(w(kBaseHighO), w(kBaseLowO));
  job.m = w(kM);
  job.n = w(kN);
  job.k = w(kK);
  job.batch = w(kBatch);
  job.lda = w(kLda);
  job.ldb = w(kLdb);
  job.ldo = w(kLdo);
  job.batch_stride_a = join(w(kBatchStrideA + 4), w(kBatchStrideA));
  job.batch_stride_b = join(w(kBatchStrideB + 4), w(kBatchStrideB));
  job.batch_stride_o = join(w(kBatchStrideO + 4), w(kBatchStrideO));
  ConvShape& c = job.conv;
  c.n = w(kConvN);
  c.h = w(kConvH);
  c.w = w(kConvW);
  c.c = w(kConvC);
  c.k = w(kConvK);
  c.r = w(kConvR);
  c.s = w(kConvS);
  c.stride_h = w(kConvStride) & 0xFFFF;
  c.stride_w = w(kConvStride) >> 16;
  c.pad_h = w(kConvPad) & 0xFFFF;
  c.pad_w = w(kConvPad) >> 16;
  c.dil_h = w(kConvDilation) & 0xFFFF;
  c.dil_w = w(kConvDilation) >> 16;
  job.so_address = join(w(kSoAddrHigh), w(kSoAddrLow));
  job.so_message = w(kSoMessage);
  return job;
}

}  // namespace hpusim::mme
