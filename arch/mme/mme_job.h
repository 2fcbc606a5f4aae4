// One MME job: what the descriptor registers of an MME master hold (hpusim's layout inside the
// real ARCH descriptor window of the MME CTRL block), decoded, validated and lowered to a GEMM.
// Plain C++ (no SystemC): the engine, the launch helper, the tests and the bench share it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpusim::mme {

// Register offsets in the MME CTRL block (relative to regs::mme_ctrl_base). ARCH_STATUS, the
// ARCH_BASE_ADDR_HIGH_S/L/O words and CMD sit where the real block has them; the other words of
// the ARCH window (0x008..0x224) are hpusim's own layout (the real descriptor is not public in
// a form this model could follow). S is operand A, L operand B, O the output.
namespace desc {
inline constexpr uint32_t kArchStatus = 0x000;   // bit 0 idle, bit 8 the last job faulted
inline constexpr uint32_t kBaseHighA = 0x008;
inline constexpr uint32_t kBaseHighB = 0x00C;
inline constexpr uint32_t kBaseHighO = 0x010;
inline constexpr uint32_t kBaseLowA = 0x014;
inline constexpr uint32_t kBaseLowB = 0x018;
inline constexpr uint32_t kBaseLowO = 0x01C;
inline constexpr uint32_t kHeader = 0x020;
inline constexpr uint32_t kM = 0x024;
inline constexpr uint32_t kN = 0x028;
inline constexpr uint32_t kK = 0x02C;
inline constexpr uint32_t kBatch = 0x030;
inline constexpr uint32_t kLda = 0x034;            // leading dimensions, in elements
inline constexpr uint32_t kLdb = 0x038;
inline constexpr uint32_t kLdo = 0x03C;
inline constexpr uint32_t kBatchStrideA = 0x040;   // low word; high word at +4 (elements)
inline constexpr uint32_t kBatchStrideB = 0x048;
inline constexpr uint32_t kBatchStrideO = 0x050;
inline constexpr uint32_t kConvN = 0x060;          // convolutions: NHWC activations, RSCK weights
inline constexpr uint32_t kConvH = 0x064;
inline constexpr uint32_t kConvW = 0x068;
inline constexpr uint32_t kConvC = 0x06C;
inline constexpr uint32_t kConvK = 0x070;          // output channels
inline constexpr uint32_t kConvR = 0x074;          // filter height
inline constexpr uint32_t kConvS = 0x078;          // filter width
inline constexpr uint32_t kConvStride = 0x07C;     // [15:0] height, [31:16] width
inline constexpr uint32_t kConvPad = 0x080;
inline constexpr uint32_t kConvDilation = 0x084;
inline constexpr uint32_t kSoAddrLow = 0x0A0;      // end-of-job sync-object message
inline constexpr uint32_t kSoAddrHigh = 0x0A4;
inline constexpr uint32_t kSoMessage = 0x0A8;
inline constexpr uint32_t kWindowEnd = 0x0AC;      // one past the last descriptor word
inline constexpr uint32_t kCmd = 0x280;            // bit 0 EXECUTE: latch the descriptor and run it
inline constexpr uint32_t kIntrCause = 0x290;      // hpusim: bit per MmeError of a failed job; write 1 to clear
inline constexpr uint32_t kProps = 0x2A0;          // hpusim: [9:0] ASID, bit 10 MMU bypass of the engine's accesses
inline constexpr uint32_t kBlockBytes = 0x1000;

// HEADER fields.
inline constexpr unsigned kOpShift = 0;            // [1:0] MmeOp
inline constexpr unsigned kInTypeShift = 2;        // [3:2] input MmeType
inline constexpr unsigned kOutTypeShift = 4;       // [5:4] output MmeType
inline constexpr uint32_t kTransposeA = 1u << 6;
inline constexpr uint32_t kTransposeB = 1u << 7;
inline constexpr unsigned kGeometryShift = 8;      // [9:8] index into the preset's mme.geometries

inline constexpr uint32_t kStatusIdle = 1u << 0;
inline constexpr uint32_t kStatusFaulted = 1u << 8;
inline constexpr uint32_t kCmdExecute = 1u << 0;
}  // namespace desc

enum class MmeOp : uint8_t { Gemm = 0, ConvForward = 1, ConvBackwardData = 2, ConvBackwardWeight = 3 };
enum class MmeType : uint8_t { Bf16 = 0, F32 = 1 };
const char* op_name(MmeOp op);
const char* type_name(MmeType type);
inline uint32_t type_bytes(MmeType type) { return type == MmeType::Bf16 ? 2 : 4; }

// A 2-D convolution over NHWC activations x[n][h][w][c] with RSCK weights w[r][s][c][k] giving
// y[n][p][q][k], p = (h + 2 pad_h - dil_h (r - 1) - 1) / stride_h + 1 (q likewise).
struct ConvShape {
  uint32_t n = 1, h = 1, w = 1, c = 1, k = 1, r = 1, s = 1;
  uint32_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t out_h() const;   // <= 0 when the filter does not fit
  int64_t out_w() const;
};

struct MmeJob {
  MmeOp op = MmeOp::Gemm;
  MmeType in = MmeType::Bf16;
  MmeType out = MmeType::F32;
  bool transpose_a = false;   // A stored K x M (else M x K)
  bool transpose_b = false;   // B stored N x K (else K x N)
  uint32_t geometry = 0;
  uint64_t a = 0, b = 0, o = 0;
  // GEMM: O[M x N] = A[M x K] B[K x N] per batch; row-major with leading dimensions (elements).
  uint32_t m = 0, n = 0, k = 0, batch = 1;
  uint32_t lda = 0, ldb = 0, ldo = 0;
  uint64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_o = 0;
  ConvShape conv;   // the convolution ops (their A, B, O are described in README.md)
  uint64_t so_address = 0;   // 0: no message
  uint32_t so_message = 0;
};

// The GEMM a job is: for GEMM ops the job's own dims; for convolutions the implicit GEMM
// (forward M = N P Q, N = K, K = R S C; backward data M = N H W, N = C, K = R S K; backward weight
// M = R S C, N = K, K = N P Q).
struct GemmDims {
  uint64_t m = 0, n = 0, k = 0;
  uint32_t batch = 1;
};
GemmDims gemm_dims(const MmeJob& job);

// "" when the job can run on an engine with `geometries` output geometries, else what is wrong
// (naming the field). Checks dims, leading dimensions, types, the geometry index, the
// convolution shape and that every operand span stays inside the 64-bit address space.
std::string validate(const MmeJob& job, uint32_t geometries);

// The descriptor words of a job, as (offset, value) pairs in register order.
std::vector<std::pair<uint32_t, uint32_t>> encode(const MmeJob& job);
// The job the descriptor window holds (`window` indexed by offset / 4, desc::kWindowEnd bytes).
MmeJob decode(const uint32_t* window);

}  // namespace hpusim::mme
