// Plain parameter structs for the HBM model. The preset loader fills them from the card preset;
// the model itself never sees protobuf.
#pragma once

#include <cstdint>
#include <string>

namespace hpusim::hbm {

// Geometry of the whole HBM subsystem of a card.
struct Organization {
  uint32_t stacks = 4;
  uint32_t channels_per_stack = 8;
  uint32_t pseudo_channels = 2;      // per channel; each has its own banks and data bus
  uint32_t bank_groups = 4;          // per pseudo-channel
  uint32_t banks_per_group = 4;
  uint32_t rows = 16384;             // per bank
  uint32_t columns = 32;             // column commands (bursts) per row
  uint32_t pc_width_bits = 64;       // data bus width of one pseudo-channel
};

// One JEDEC-style timing set. Every n* value is in cycles of tCK.
struct Timing {
  std::string name;                  // e.g. "HBM2-1760"
  uint32_t tck_ps = 1136;
  uint32_t burst_bytes = 32;         // bytes moved by one RD or WR command
  uint32_t nBL = 2;                  // data-bus cycles of one burst
  uint32_t nCL = 14, nCWL = 4;
  uint32_t nRCDRD = 14, nRCDWR = 10;
  uint32_t nRP = 14, nRAS = 33, nRC = 47;
  uint32_t nWR = 16, nRTP = 5;
  uint32_t nCCDS = 2, nCCDL = 4;
  uint32_t nRRDS = 4, nRRDL = 6, nFAW = 30;
  uint32_t nWTRS = 6, nWTRL = 8;
  uint32_t nRTW = 18;
  uint32_t nRFC = 260, nREFI = 3900;
  uint32_t nRFCSB = 141;             // single-bank (HBM2 REFSB) / per-bank (HBM3 REFpb) refresh cycle time
  uint32_t nRREFD = 8;               // per-bank refresh to per-bank refresh, different banks of one pseudo-channel
};

// How the controller refreshes: one all-bank REF per pseudo-channel every nREFI, or one
// single-bank REFSB every nREFI / banks-per-pseudo-channel, round-robin over the banks.
enum class RefreshMode { kAllBank, kPerBank };

// Controller policy.
struct ControllerConfig {
  // Queue capacity and drain watermarks count bursts (column commands), as real controllers and
  // DRAMsim3 do: a 256-byte request of 32-byte bursts takes eight entries.
  uint32_t queue_bursts = 512;             // reads and writes together, or reads only with a write queue
  uint32_t write_queue_bursts = 0;         // > 0: writes wait in a queue of their own, this many bursts
  uint32_t write_high_watermark = 320;     // start draining writes at this many queued write bursts
  uint32_t write_low_watermark = 128;      // stop draining at this many
  bool posted_writes = false;              // a write is done when the controller accepts it
  // > 0: two-level queues (DRAMsim3 style). Requests wait in the read and write queues above and
  // move, one burst per cycle, into per-bank command queues of this many bursts; the scheduler
  // sees the command queues only, reads and writes together. The watermarks decide which queue
  // moves: a drain starts at write_high_watermark waiting write bursts (or with more than
  // write_low_watermark waiting while the command queues are empty, or any with no read waiting)
  // and moves the write bursts waiting at its start. 0: one level, reads and writes issued in
  // separate drain modes.
  uint32_t bank_queue_bursts = 0;
  // Which ready command issues. kFrFcfs: the oldest ready column command that hits an open row and
  // the oldest ready row command, each cycle. kBankRoundRobin (DRAMsim3): the banks take turns; the
  // first bank after the last served with a ready command issues it, and the next one in turn
  // issues too only if it is of the other class (column vs row: HBM's dual command issue).
  enum class Scheduler { kFrFcfs, kBankRoundRobin };
  Scheduler scheduler = Scheduler::kFrFcfs;
  uint32_t interleave_bytes = 256;         // contiguous bytes kept on one bank row
  std::string address_mapping = "ro-ba-co-bg-pc-ch-st";  // fields, most significant first
  bool channel_hash = false;   // rotate (stack, channel) by a hash of the chunk's other fields
  bool refresh_enabled = true;
  RefreshMode refresh_mode = RefreshMode::kPerBank;
  // Self-refresh: a channel whose queue has been empty for this many nREFI intervals is in
  // self-refresh (the DRAM refreshes itself; the controller issues no REF/REFSB) and the refresh
  // schedule restarts at the arrival that ends it. So a request stream meets the same refreshes
  // however long the channel was idle before it. 0: never (refresh on the absolute schedule).
  // At least 2 when set: every bank has been refreshed, and the last refresh is over, when the
  // channel enters it.
  uint32_t self_refresh_after_refi = 0;
};

}  // namespace hpusim::hbm
