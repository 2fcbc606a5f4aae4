// The scenario both the one-process and the two-process switch tests run: cards 0 and 1 of an
// HLS-1 box, each driven by a host thread (or a process) of its own, swap buffers through the box's
// scale-out switch: each card's port 7 receives the other card's buffer while it sends its own,
// both operations in one command buffer on port 7's queue, the CS done when both are. What each
// port and the switch did is golden (tests/golden/switch_link.txt), so a box split between two
// processes, the switch in the first one, must give the picoseconds of the box in one process.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "arch/packets/nic_ops.h"
#include "arch/packets/sync_wait.h"
#include "hw/card/card.h"
#include "hw/nic/nic_port.h"
#include "tests/nic/card_commands.h"

namespace hpusim::testing {

inline constexpr unsigned kScaleOutPort = 7;
inline uint32_t swapped_bytes(unsigned card) { return card == 0 ? 300000 : 200000; }
inline std::vector<uint8_t> swapped_data(unsigned card) {
  std::vector<uint8_t> data(swapped_bytes(card));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + 7 * card + 3);
  return data;
}

struct SwapResult {
  bool completed = false, data_ok = false;
  hw::NicPortStats port;   // card's port 7
};

// Card `card` of the box (its device file `device` in this process) swaps buffers with the other,
// on host track `track` (reserved at the start, one per card, as a process per card would have).
inline SwapResult swap_through_switch(platform::Platform& box, unsigned track, unsigned device, unsigned card) {
  constexpr uint32_t kSob = 40, kMonitor = 40;
  platform::HostThread on(box, track);
  SwapResult result;
  const int fd = driver::hl_open(platform::Platform::device_path(device).c_str());
  if (fd < 0) return result;
  const uint64_t send = box.preset().memory_map().dram_user_base() + 0x200000, recv = send + 0x100000;
  const uint64_t sram = box.preset().memory_map().sram_base() + 0x10000;
  const std::vector<uint8_t> mine = swapped_data(card), theirs = swapped_data(1 - card);
  Aligned out(mine.size()), back(theirs.size());
  std::memcpy(out.p, mine.data(), mine.size());
  if (!copy(fd, out.p, send, static_cast<uint32_t>(mine.size()), true)) return result;

  const regs::SyncManager sm = regs::SyncManager::E_N;
  const uint32_t peer = hw::nic_address(1 - card, kScaleOutPort);
  qman::CommandBufferBuilder nic;
  qman::append_nic_operation(nic, qman::NicOperation::Recv, recv, static_cast<uint32_t>(theirs.size()), sm, kSob, 1, peer);
  qman::append_nic_operation(nic, qman::NicOperation::Send, send, static_cast<uint32_t>(mine.size()), sm, kSob, 1, peer);
  const std::vector<uint8_t> nic_bytes = nic.take();
  Aligned cb(nic_bytes.size());
  std::memcpy(cb.p, nic_bytes.data(), nic_bytes.size());
  if (!copy(fd, cb.p, sram, static_cast<uint32_t>(nic_bytes.size()), true)) return result;
  qman::CommandBufferBuilder wait;
  qman::append_sob_wait(wait, regs::QueueId::DMA_0_0, sm, kMonitor, kSob, 2);
  qman::append_sob_set(wait, sm, kSob, 0);
  uapi::hl_cs_chunk internal{};
  internal.cb_handle = sram;
  internal.queue_index = regs::to_index(regs::make_queue(regs::QueueKind::Nic, kScaleOutPort, 0));
  internal.cb_size = static_cast<uint32_t>(nic_bytes.size());
  result.completed = run_cs(fd, {internal, external(fd, uapi::GAUDI_QUEUE_ID_DMA_0_0, wait.take())});
  if (result.completed && copy(fd, back.p, recv, static_cast<uint32_t>(theirs.size()), false)) {
    result.data_ok = std::memcmp(back.p, theirs.data(), theirs.size()) == 0;
  }
  result.port = box.cosim().on_sim_thread([&] { return box.card(device).nic_port(kScaleOutPort)->stats(); });
  driver::hl_close(fd);
  return result;
}

}  // namespace hpusim::testing
