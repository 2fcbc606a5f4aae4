// On-die SRAM: a banked scratchpad. Consecutive `interleave_bytes` chunks rotate over the banks;
// each bank moves `bank_width_bytes` per cycle, so accesses that hit the same bank serialise.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include <string>
#include <vector>

#include "hw/backing_store/backing_store.h"
#include "hw/common/bandwidth_server.h"
#include "hw/common/mem_protocol.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct SramConfig {
  uint64_t base = 0;
  uint64_t size_bytes = 0;
  uint32_t banks = 16;
  uint32_t bank_width_bytes = 128;
  uint32_t interleave_bytes = 128;
  Picoseconds period_ps = 909;
  uint32_t latency_cycles = 16;
};

struct SramStats {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  uint64_t bank_wait_ps = 0;     // time accesses waited for a busy bank
  uint64_t errors = 0;
};

class Sram : public sc_core::sc_module {
 public:
  Sram(sc_core::sc_module_name name, const SramConfig& config);

  tlm_utils::simple_target_socket<Sram> socket;

  // Peak bandwidth of all banks, bytes per second.
  double peak_bytes_per_second() const;
  // Unloaded latency of one access of `bytes` (formula of this model), picoseconds.
  Picoseconds unloaded_latency_ps(uint64_t bytes) const;

  // Occupies the banks holding [offset, offset + length) of the SRAM (offsets from its start, the
  // HBM cache's lines included) for an access arriving at `arrival`; returns when it completes.
  Picoseconds reserve_banks(uint64_t offset, uint64_t length, Picoseconds arrival);

  const SramStats& stats() const { return stats_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  mem::BackingStore& store() { return store_; }
  const SramConfig& config() const { return config_; }

 private:
  tlm::tlm_sync_enum forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  unsigned debug_transport(tlm::tlm_generic_payload& trans);
  bool move_data(tlm::tlm_generic_payload& trans);

  SramConfig config_;
  mem::BackingStore store_;
  std::vector<BandwidthServer> banks_;
  SramStats stats_;
};

}  // namespace hpusim::hw
