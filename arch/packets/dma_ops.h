// DMA operations beyond the LIN_DMA packet's copy and fill: the reducing copy of hpusim's DMA
// reduction mode (hw/dma, regs::dma_core::kReduceCfg), as a DMA queue's command buffer writes it.
#pragma once

#include <cstdint>

#include "arch/packets/packets.h"
#include "arch/reduction/reduction.h"

namespace hpusim::qman {

// REDUCE_CFG's value for `op` over elements of `type` (reduction enabled).
uint32_t reduce_cfg_value(reduction::ReduceOp op, reduction::ReduceType type);

// destination[i] = op(destination[i], source[i]) over `bytes`: REDUCE_CFG set, a LIN_DMA, and
// REDUCE_CFG cleared again (the engine latches it at the COMMIT), so later copies on the queue are
// plain copies.
void append_dma_reduce(CommandBufferBuilder& cb, uint64_t source, uint64_t destination, uint32_t bytes,
                       reduction::ReduceOp op, reduction::ReduceType type);

}  // namespace hpusim::qman
