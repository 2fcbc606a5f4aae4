// The scenario both the one-process and the two-process NIC link tests run: card a's port 0
// sends a buffer of a little over 1 MiB to card b's port 0, which receives it; the times the send
// and the receive complete are golden (tests/golden/nic_link.txt), so the two runs must give the
// same picoseconds.
#pragma once

#include "tests/nic/nic_bench.h"

namespace hpusim::testing {

inline constexpr uint32_t kLinkBytes = (1u << 20) + 4100;
inline uint64_t link_source(const Side& s) { return s.dram(0x100000); }
inline uint64_t link_destination(const Side& s) { return s.dram(0x400000); }

// Posts `op` by writing the port's registers directly, now (no register bus: its time would be
// simulated outside the synchronisation's windows).
inline void post_now(NicPort& nic, hw::NicOp op, uint64_t address, uint32_t bytes) {
  const hw::Picoseconds now = hw::now_ps();
  nic.write_register(NicPort::kCfg, 1, now);
  nic.write_register(NicPort::kPeer, 0, now);
  nic.write_register(NicPort::kAddrLo, static_cast<uint32_t>(address), now);
  nic.write_register(NicPort::kAddrHi, static_cast<uint32_t>(address >> 32), now);
  nic.write_register(NicPort::kSize, bytes, now);
  nic.write_register(NicPort::kCommit, static_cast<uint32_t>(op) << NicPort::kCommitOpShift, now);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);   // the writes take effect (no time passes)
}

}  // namespace hpusim::testing
