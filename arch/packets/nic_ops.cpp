#include "arch/packets/nic_ops.h"

namespace hpusim::qman {

void append_nic_operation(CommandBufferBuilder& cb, NicOperation op, uint64_t address, uint32_t bytes,
                          regs::SyncManager sm, uint32_t sob, uint16_t increment, uint32_t peer) {
  namespace np = regs::nic_port;
  const uint64_t completion = regs::cfg_address(regs::sm_sob(sm, sob));
  // Register writes reach the port in order; only the COMMIT needs them all in place, which their
  // order already gives.
  cb.wreg32(np::kPeer, peer, kNoBarriers)
      .wreg32(np::kAddrLo, static_cast<uint32_t>(address), kNoBarriers)
      .wreg32(np::kAddrHi, static_cast<uint32_t>(address >> 32), kNoBarriers)
      .wreg32(np::kSize, bytes, kNoBarriers)
      .wreg32(np::kCompAddrLo, static_cast<uint32_t>(completion), kNoBarriers)
      .wreg32(np::kCompAddrHi, static_cast<uint32_t>(completion >> 32), kNoBarriers)
      .wreg32(np::kCompWdata, sob_write_value(increment, true), kNoBarriers)
      .wreg32(np::kCommit, static_cast<uint32_t>(op) | np::kCommitCompEn, kNoBarriers);
}

}  // namespace hpusim::qman
