#include "synapse/hccl/emit.h"

#include "arch/packets/dma_ops.h"
#include "arch/packets/nic_ops.h"
#include "arch/packets/sync_wait.h"

namespace hpusim::synapse::hccl {

uint32_t monitor_of(regs::QueueId queue) { return kMonitorBase + regs::to_index(regs::queue_qman(queue)); }

std::vector<runtime::Runtime::QueueJob> emit(const Program& program, uint32_t first_sob, regs::QueueId external_queue,
                                             uint32_t external_monitor) {
  constexpr regs::SyncManager kSm = regs::SyncManager::E_N;
  std::vector<runtime::Runtime::QueueJob> jobs;
  {
    qman::CommandBufferBuilder cb;
    qman::append_sob_increment(cb, kSm, first_sob + program.start_sob);
    jobs.push_back({external_queue, cb.take()});
  }
  for (const QueueOps& q : program.queues) {
    qman::CommandBufferBuilder cb;
    const uint32_t monitor = program.has_join_queue && q.queue == program.join_queue ? kJoinMonitor : monitor_of(q.queue);
    for (const Op& op : q.ops) {
      switch (op.kind) {
        case OpKind::Wait: qman::append_sob_wait(cb, q.queue, kSm, monitor, first_sob + op.sob, op.target); break;
        case OpKind::Send:
          qman::append_nic_operation(cb, qman::NicOperation::Send, op.source, static_cast<uint32_t>(op.bytes), kSm,
                                     first_sob + op.sob);
          break;
        case OpKind::Recv:
          qman::append_nic_operation(cb, qman::NicOperation::Recv, op.destination, static_cast<uint32_t>(op.bytes), kSm,
                                     first_sob + op.sob);
          break;
        case OpKind::Copy: cb.lin_dma(op.source, op.destination, static_cast<uint32_t>(op.bytes)); break;
        case OpKind::Reduce:
          qman::append_dma_reduce(cb, op.source, op.destination, static_cast<uint32_t>(op.bytes), op.reduce_op, op.reduce_type);
          break;
        case OpKind::Signal: qman::append_sob_increment(cb, kSm, first_sob + op.sob); break;
      }
    }
    jobs.push_back({q.queue, cb.take()});
  }
  qman::CommandBufferBuilder last;
  for (const auto& [sob, value] : program.final_values) {
    qman::append_sob_wait(last, external_queue, kSm, external_monitor, first_sob + sob, value);
  }
  for (uint32_t sob = 0; sob < program.sob_count; ++sob) qman::append_sob_set(last, kSm, first_sob + sob, 0);
  jobs.push_back({external_queue, last.take()});
  return jobs;
}

}  // namespace hpusim::synapse::hccl
