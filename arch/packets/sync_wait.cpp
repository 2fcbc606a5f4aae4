#include "arch/packets/sync_wait.h"

namespace hpusim::qman {

void append_sob_wait(CommandBufferBuilder& cb, regs::QueueId queue, regs::SyncManager sm, uint32_t monitor, uint32_t sob,
                     uint16_t target) {
  const uint64_t fence = regs::cfg_address(regs::qman_fence_rdata(regs::queue_qman(queue), kSyncWaitFence,
                                                                   regs::queue_stream(queue)));
  // The four messages reach the sync manager in order, so they need no barriers between them.
  cb.msg_long(regs::cfg_address(regs::sm_mon_pay_addrl(sm, monitor)), static_cast<uint32_t>(fence), kNoBarriers)
      .msg_long(regs::cfg_address(regs::sm_mon_pay_addrh(sm, monitor)), static_cast<uint32_t>(fence >> 32), kNoBarriers)
      .msg_long(regs::cfg_address(regs::sm_mon_pay_data(sm, monitor)), 1, kNoBarriers)
      .msg_long(regs::cfg_address(regs::sm_mon_arm(sm, monitor)),
                monitor_arm_value(static_cast<uint8_t>(sob / 8), single_sob_mask(static_cast<uint16_t>(sob)), false, target),
                kNoBarriers)
      .fence(kSyncWaitFence, 1, 1);
}

void append_sob_increment(CommandBufferBuilder& cb, regs::SyncManager sm, uint32_t sob, uint16_t increment) {
  cb.msg_long(regs::cfg_address(regs::sm_sob(sm, sob)), sob_write_value(increment, true), Barriers{true, true, true});
}

void append_sob_set(CommandBufferBuilder& cb, regs::SyncManager sm, uint32_t sob, uint16_t value) {
  cb.msg_long(regs::cfg_address(regs::sm_sob(sm, sob)), sob_write_value(value, false), Barriers{true, true, true});
}

}  // namespace hpusim::qman
