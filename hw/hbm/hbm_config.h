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
  uint32_t queue_depth = 64;               // requests held per channel controller
  uint32_t write_high_watermark = 40;      // start draining writes at this many queued writes
  uint32_t write_low_watermark = 16;       // stop draining at this many
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
