// How a NIC queue posts an operation on its port (hw/nic, the port block of arch/regs
// regs::nic_port): the buffer, the completion message and the COMMIT, as WREG_32s into the port
// block the NIC QMAN drives.
#pragma once

#include <cstdint>

#include "arch/packets/packets.h"
#include "arch/regs/gaudi1_map.h"

namespace hpusim::qman {

enum class NicOperation : uint32_t { Send = regs::nic_port::kCommitSend, Recv = regs::nic_port::kCommitRecv };

// Posts `op` of `bytes` at `address` (a send's source, a receive's destination); when it is done
// the port adds `increment` to SOB `sob` of `sm` (on the port's own card). `peer` is the other
// end's port address behind a switch (card * 256 + port; a direct link ignores it).
void append_nic_operation(CommandBufferBuilder& cb, NicOperation op, uint64_t address, uint32_t bytes,
                          regs::SyncManager sm, uint32_t sob, uint16_t increment = 1, uint32_t peer = 0);

}  // namespace hpusim::qman
