// How a queue waits on the device for a sync object and how it signals one, as the command
// buffers of the driver tests, the compiler and the runtime write them.
#pragma once

#include <cstdint>

#include "arch/packets/packets.h"
#include "arch/regs/gaudi1_map.h"

namespace hpusim::qman {

// The fence counter sync waits use (CP_FENCE2).
inline constexpr unsigned kSyncWaitFence = 2;

// Arms `monitor` of `sm` to add 1 to the fence of `queue`'s stream once SOB `sob` of `sm` reaches
// `target` (or more), then FENCEs on it: the queue goes on only after the SOB got there. Waits
// on one queue are sequential, so one monitor serves them all (it is re-armed only after its
// fence passed).
void append_sob_wait(CommandBufferBuilder& cb, regs::QueueId queue, regs::SyncManager sm, uint32_t monitor, uint32_t sob,
                     uint16_t target);

// Adds `increment` to SOB `sob` of `sm` once everything before it in the queue is done (behind an
// engine barrier).
void append_sob_increment(CommandBufferBuilder& cb, regs::SyncManager sm, uint32_t sob, uint16_t increment = 1);
// Sets SOB `sob` of `sm` to `value`, behind an engine barrier.
void append_sob_set(CommandBufferBuilder& cb, regs::SyncManager sm, uint32_t sob, uint16_t value);

}  // namespace hpusim::qman
