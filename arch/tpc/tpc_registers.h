// Fields of the TPC CFG registers as hpusim's TPC reads them: TPC_CMD, STATUS and a tensor
// descriptor's tensor_config (the offsets are in arch/regs/gaudi1_map.h, regs::tpc_cfg).
// Pure C++.
#pragma once

#include <cstdint>

#include "arch/tpc/isa.h"

namespace hpusim::regs {

// TPC_CMD bits (hpusim's reading of tpc0_cfg_masks.h: the cache-invalidate bits the driver and
// Synapse write before TPC_EXECUTE). Only ICACHE_INVALIDATE acts; the others are accepted.
namespace tpc_cmd {
inline constexpr uint32_t kIcacheInvalidate = 1u << 0;
inline constexpr uint32_t kDcacheInvalidate = 1u << 1;
inline constexpr uint32_t kLcacheInvalidate = 1u << 2;
inline constexpr uint32_t kTcacheInvalidate = 1u << 3;
inline constexpr uint32_t kIcachePrefetch64K = 1u << 4;
inline constexpr uint32_t kIcachePrefetch32K = 1u << 5;
inline constexpr uint32_t kAllInvalidate = kIcacheInvalidate | kDcacheInvalidate | kLcacheInvalidate | kTcacheInvalidate;
}  // namespace tpc_cmd

// STATUS (0x91C) as this model reads it: bits [5:0] (scalar pipe empty, vector pipe empty, IQ
// empty, SB empty, QM idle, QM ready) all set when no kernel runs or is queued, all clear
// otherwise (the driver's IS_TPC_IDLE tests them together). Bit 8 (hpusim): the last kernel
// faulted (cleared by the next TPC_EXECUTE).
namespace tpc_status {
inline constexpr uint32_t kIdleMask = 0x3F;
inline constexpr uint32_t kFaulted = 1u << 8;
}  // namespace tpc_status

// Tensor descriptor tensor_config fields (block_tpc_tensor): data_type [2:0] (hpusim: the ISA's
// dtype encoding, 0 f32, 1 bf16, 2 i32, 3 i16, 4 i8, 5 u32, 6 u16, 7 u8), valid_dim_mask [12:8]
// (0 = the tensor is not set), last_dim [18:16] (dims = last_dim + 1, at most 5).
namespace tpc_tensor_config {
inline constexpr uint32_t kDataTypeMask = 0x7;
inline constexpr unsigned kValidDimMaskShift = 8;
inline constexpr uint32_t kValidDimMaskMask = 0x1F;
inline constexpr unsigned kLastDimShift = 16;
inline constexpr uint32_t kLastDimMask = 0x7;
constexpr uint32_t make(tpc::DType dtype, unsigned dims) {
  return (static_cast<uint32_t>(dtype) & kDataTypeMask) |
         ((((1u << dims) - 1) & kValidDimMaskMask) << kValidDimMaskShift) |
         (((dims == 0 ? 0 : dims - 1) & kLastDimMask) << kLastDimShift);
}
}  // namespace tpc_tensor_config

}  // namespace hpusim::regs
