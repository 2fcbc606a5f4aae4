// The MME's arithmetic, computed on the host in the order the array accumulates (README.md,
// "Arithmetic"): every output element starts from +0 and adds the products of k = 0, 1, ...,
// K - 1 in order, the product and the sum each rounded to nearest-even in f32 (not fused).
// bf16 inputs widen exactly to f32; a bf16 output is the f32 result rounded to nearest-even;
// NaN outputs are the canonical quiet NaN. Plain C++ (no SystemC).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "arch/mme/mme_job.h"

namespace hpusim::mme {

// C[rows x cols] (leading dimension ldc) = A[rows x k] (lda) B[k x cols] (ldb), all row-major
// f32, in the order above. Vectorised over columns (AVX-512 or AVX2 where the host has them;
// the values do not depend on it).
void gemm_f32(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows, size_t cols,
              size_t k);

// The same with plain scalar loops: the reference the tests compare against.
void gemm_f32_reference(const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc, size_t rows,
                        size_t cols, size_t k);

// The vector paths gemm_f32 picks from (the widest the host runs). Each gives the reference's bits,
// except that a NaN's sign and payload may differ (the output conversion makes NaNs canonical); the
// tests run every path the host supports, not only the one gemm_f32 picks.
enum class GemmPath { kSse, kAvx2, kAvx512 };
const char* gemm_path_name(GemmPath path);
bool gemm_path_supported(GemmPath path);
GemmPath gemm_path_chosen();
// gemm_f32 on `path`; std::invalid_argument if the host cannot run it.
void gemm_f32_on(GemmPath path, const float* a, size_t lda, const float* b, size_t ldb, float* c, size_t ldc,
                 size_t rows, size_t cols, size_t k);

// Reads `bytes` of device memory at `address` into `dst`; false if the memory refuses.
using MemoryReader = std::function<bool(uint64_t address, size_t bytes, void* dst)>;

// The device memory gather_operands reads for batch `index`, in its order: for a GEMM each stored
// row of A, then each stored row of B; for a convolution the A tensor, then the B tensor.
struct MemoryRegion {
  uint64_t address = 0;
  uint64_t bytes = 0;
};
std::vector<MemoryRegion> operand_reads(const MmeJob& job, uint32_t index);

// The bytes of those regions, read once (a snapshot), and a reader that serves gather_operands
// from them: so the simulation thread only copies bytes and another thread converts, transposes
// and lowers them.
struct OperandSnapshot {
  std::vector<MemoryRegion> regions;
  std::vector<uint8_t> bytes;   // the regions' bytes, one after another
  MemoryReader reader() const;  // serves the regions in order; anything else is refused
};
bool snapshot_operands(const MmeJob& job, uint32_t index, const MemoryReader& read, OperandSnapshot& snapshot,
                       std::string& error);

// The GEMM operands of batch `index` of a job as dense f32 matrices: A as gemm_dims().m x k, B as
// k x n (transposes undone, convolutions lowered to their implicit GEMM, padding zeros). On a
// refused read returns false and names the operand and address in `error`.
bool gather_operands(const MmeJob& job, uint32_t index, const MemoryReader& read, std::vector<float>& a,
                     std::vector<float>& b, std::string& error);

// Element offset (in the output tensor, elements of job.out) of output row `row` of batch
// `index`; the row's gemm_dims().n elements are contiguous from there.
uint64_t output_row_offset(const MmeJob& job, uint32_t index, uint64_t row);

// f32 results to the output type's bytes (rounding bf16 to nearest-even, canonical NaNs).
void convert_output(const float* values, size_t count, MmeType out, uint8_t* dst);

uint32_t f32_bits(float value);
float f32_from_bits(uint32_t bits);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);   // nearest-even; NaN -> 0x7FC0

}  // namespace hpusim::mme
