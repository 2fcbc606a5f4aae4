#include "arch/packets/dma_ops.h"

#include "arch/regs/gaudi1_map.h"

namespace hpusim::qman {

uint32_t reduce_cfg_value(reduction::ReduceOp op, reduction::ReduceType type) {
  namespace dc = regs::dma_core;
  return dc::kReduceEn | (static_cast<uint32_t>(op) << dc::kReduceOpShift) |
         (static_cast<uint32_t>(type) << dc::kReduceTypeShift);
}

void append_dma_reduce(CommandBufferBuilder& cb, uint64_t source, uint64_t destination, uint32_t bytes,
                       reduction::ReduceOp op, reduction::ReduceType type) {
  namespace dc = regs::dma_core;
  cb.wreg32(dc::kReduceCfg, reduce_cfg_value(op, type), kNoBarriers)
      .lin_dma(source, destination, bytes)
      .wreg32(dc::kReduceCfg, 0, kNoBarriers);
}

}  // namespace hpusim::qman
