// A rank's collective program (schedule.h) as the command buffers of one command submission: the
// engine queues' jobs (NIC operations, DMA copies and reducing copies, sync-object waits and
// signals) between a first and a last job on the stream's external queue.
#pragma once

#include <cstdint>
#include <vector>

#include "synapse/hccl/schedule.h"
#include "synapse/runtime/runtime.h"

namespace hpusim::synapse::hccl {

// E_N monitors of the collectives' engine queues: one per QMAN, from 128 (the compiler's recipes
// use 256 .. 503, the runtime's external-queue waits 504 .. 511).
inline constexpr uint32_t kMonitorBase = 128;
uint32_t monitor_of(regs::QueueId queue);
// The monitor of a chained program's join queue (schedule.h chain()): past the QMANs' (128 + 114).
inline constexpr uint32_t kJoinMonitor = 250;
static_assert(kMonitorBase + regs::kNumQmans <= kJoinMonitor && kJoinMonitor < 256, "between the QMANs' and the recipes'");

// The jobs of `program` with its sync objects at E_N [first_sob, first_sob + sob_count):
// - on `external_queue`, first: the start sync object set to 1 once the queue's earlier work is done;
// - each engine queue's ops, behind a wait for the start;
// - on `external_queue`, last: waits for every sync object's final value, then all of them back to 0.
// `external_monitor` is the monitor the external queue's waits use.
std::vector<runtime::Runtime::QueueJob> emit(const Program& program, uint32_t first_sob, regs::QueueId external_queue,
                                             uint32_t external_monitor);

}  // namespace hpusim::synapse::hccl
