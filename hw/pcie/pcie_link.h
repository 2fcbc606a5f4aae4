// The PCIe link between the card and the host: both directions of a Gen3..Gen6 link with the TLP
// and DLLP overheads of the protocol, plus the host memory that device DMA reaches through it
// (hw::HostMemory: a sparse store plus the pinned process buffers).
//
//  * Outbound (device -> host): the fabric routes the host window to `device_side`. Writes are
//    posted TLPs upstream; reads send read-request TLPs upstream, wait for host memory and return
//    completions downstream.
//  * Inbound (host -> device, MMIO on the BARs): the host port binds to `host_side`; requests go
//    downstream and enter the fabric through `to_fabric`, read data comes back upstream.
#pragma once

#include <functional>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "hw/common/bandwidth_server.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/ports.h"
#include "hw/pcie/host_memory.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct PcieConfig {
  uint32_t generation = 4;
  uint32_t lanes = 16;
  uint32_t max_payload_bytes = 256;
  uint32_t max_read_request_bytes = 512;
  uint32_t tlp_overhead_bytes = 26;
  double dllp_overhead_pct = 2.0;
  Picoseconds link_latency_ps = 250000;
  Picoseconds host_memory_latency_ps = 100000;
  uint64_t host_window_base = 0x8000000000ull;
  uint64_t host_window_size = 1ull << 48;
};

struct PcieStats {
  uint64_t upstream_tlps = 0;
  uint64_t downstream_tlps = 0;
  uint64_t upstream_bytes = 0;       // on the wire, overheads included
  uint64_t downstream_bytes = 0;
  uint64_t device_reads = 0, device_writes = 0, device_read_bytes = 0, device_write_bytes = 0;
  uint64_t mmio_reads = 0, mmio_writes = 0;
  uint64_t msis = 0;
  uint64_t errors = 0;
};

class PcieLink : public sc_core::sc_module {
 public:
  PcieLink(sc_core::sc_module_name name, const PcieConfig& config, HostMemory& host_memory);

  tlm_utils::simple_target_socket<PcieLink> device_side;
  tlm_utils::simple_target_socket_optional<PcieLink> host_side;   // unbound when no host is attached
  tlm_utils::simple_initiator_socket<PcieLink> to_fabric;

  // Data rate of one direction after line encoding, before TLP/DLLP overhead (bytes/s): the
  // "theoretical peak" that benchmarks compare against.
  double raw_bytes_per_second() const;
  // Payload bytes per second one direction sustains for transfers of `bytes` each, after TLP
  // framing and DLLP overhead.
  double payload_bytes_per_second(uint64_t bytes, bool device_reads) const;
  // Unloaded latency of one device read / write of `bytes` from/to host memory.
  Picoseconds unloaded_read_latency_ps(uint64_t bytes) const;
  Picoseconds unloaded_write_latency_ps(uint64_t bytes) const;

  // Message-signalled interrupts: a 4-byte device write to the host bus address the port is
  // bound to is an MSI; the bound target receives the written vector and the time it reaches the
  // host.
  MsiPort& msi() { return msi_; }
  // Sends the MSI memory write for `vector` upstream, as the PCIe core does when a device block
  // requests an interrupt at `at_ps`.
  void raise_msi(uint32_t vector, Picoseconds at_ps);

  const PcieStats& stats() const { return stats_; }
  // Registers this block's counters under `scope` (a dump reads them on the simulation thread).
  void register_stats(stats::Scope scope);
  const PcieConfig& config() const { return config_; }

 private:
  tlm::tlm_sync_enum device_forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  unsigned device_debug(tlm::tlm_generic_payload& trans);
  tlm::tlm_sync_enum host_forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  tlm::tlm_sync_enum fabric_backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  unsigned host_debug(tlm::tlm_generic_payload& trans);
  bool move_host_data(tlm::tlm_generic_payload& trans);
  uint64_t tlps(uint64_t bytes, uint64_t per_tlp) const { return bytes == 0 ? 1 : (bytes + per_tlp - 1) / per_tlp; }

  PcieConfig config_;
  HostMemory& host_memory_;
  BandwidthServer upstream_;     // device -> host
  BandwidthServer downstream_;   // host -> device
  PcieStats stats_;
  MsiPort msi_{"msi"};
};

}  // namespace hpusim::hw
