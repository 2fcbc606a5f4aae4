#include "hw/pcie/pcie_link.h"

#include <cstring>
#include <stdexcept>

#include "hw/common/store_access.h"

namespace hpusim::hw {
namespace {

double transfer_rate_gt(uint32_t generation) {
  switch (generation) {
    case 3: return 8.0;
    case 4: return 16.0;
    case 5: return 32.0;
    case 6: return 64.0;
  }
  throw std::invalid_argument("PCIe generation " + std::to_string(generation) + " is not modelled (3..6)");
}

// Gen3-5 use 128b/130b line coding; Gen6 uses 256-byte FLITs carrying 242 bytes of TLP data.
double encoding_efficiency(uint32_t generation) { return generation >= 6 ? 242.0 / 256.0 : 128.0 / 130.0; }

}  // namespace

PcieLink::PcieLink(sc_core::sc_module_name name, const PcieConfig& config, HostMemory& host_memory)
    : sc_module(name),
      device_side("device_side"),
      host_side("host_side"),
      to_fabric("to_fabric"),
      config_(config),
      host_memory_(host_memory) {
  const double wire_bytes_per_ps = raw_bytes_per_second() * (1.0 - config_.dllp_overhead_pct / 100.0) / 1e12;
  upstream_ = BandwidthServer(wire_bytes_per_ps, 1);
  downstream_ = BandwidthServer(wire_bytes_per_ps, 1);
  device_side.register_nb_transport_fw(this, &PcieLink::device_forward);
  device_side.register_transport_dbg(this, &PcieLink::device_debug);
  host_side.register_nb_transport_fw(this, &PcieLink::host_forward);
  host_side.register_transport_dbg(this, &PcieLink::host_debug);
  to_fabric.register_nb_transport_bw(this, &PcieLink::fabric_backward);
}

double PcieLink::raw_bytes_per_second() const {
  return config_.lanes * transfer_rate_gt(config_.generation) * 1e9 * encoding_efficiency(config_.generation) / 8.0;
}

double PcieLink::payload_bytes_per_second(uint64_t bytes, bool device_reads) const {
  const double link = raw_bytes_per_second() * (1.0 - config_.dllp_overhead_pct / 100.0);
  // Reads return data in completions of at most max_payload bytes; writes send it in posted TLPs.
  const uint64_t wire = bytes + tlps(bytes, config_.max_payload_bytes) * config_.tlp_overhead_bytes;
  (void)device_reads;
  return link * double(bytes) / double(wire);
}

Picoseconds PcieLink::unloaded_read_latency_ps(uint64_t bytes) const {
  const uint64_t requests = tlps(bytes, config_.max_read_request_bytes);
  const uint64_t completions = tlps(bytes, config_.max_payload_bytes);
  return upstream_.duration_ps(requests * config_.tlp_overhead_bytes) + 2 * config_.link_latency_ps +
         config_.host_memory_latency_ps + downstream_.duration_ps(bytes + completions * config_.tlp_overhead_bytes);
}

Picoseconds PcieLink::unloaded_write_latency_ps(uint64_t bytes) const {
  const uint64_t packets = tlps(bytes, config_.max_payload_bytes);
  return upstream_.duration_ps(bytes + packets * config_.tlp_overhead_bytes) + config_.link_latency_ps;
}

bool PcieLink::move_host_data(tlm::tlm_generic_payload& trans) {
  // The host window is the whole host bus address space, shifted by host_window_base.
  const uint64_t address = trans.get_address();
  if (address >= config_.host_window_base &&
      apply_to_store(host_memory_, trans, address - config_.host_window_base)) {
    return true;
  }
  trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ++stats_.errors;
  return false;
}

tlm::tlm_sync_enum PcieLink::device_forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&,
                                            sc_core::sc_time& delay) {
  const Picoseconds arrival = now_ps() + delay.value();
  const uint64_t length = trans.get_data_length();
  Picoseconds done = arrival + config_.link_latency_ps;
  if (move_host_data(trans)) {
    if (trans.is_write()) {
      // Posted: complete once the last TLP is on the wire and across the link.
      const uint64_t packets = tlps(length, config_.max_payload_bytes);
      const uint64_t wire = length + packets * config_.tlp_overhead_bytes;
      done = upstream_.reserve(arrival, wire) + config_.link_latency_ps;
      stats_.upstream_tlps += packets;
      stats_.upstream_bytes += wire;
      ++stats_.device_writes;
      stats_.device_write_bytes += length;
      if (msi_.is_msi(trans.get_address() - config_.host_window_base, length)) {
        uint32_t vector = 0;
        std::memcpy(&vector, trans.get_data_ptr(), 4);
        ++stats_.msis;
        msi_.send(vector, done);
      }
    } else {
      const uint64_t requests = tlps(length, config_.max_read_request_bytes);
      const uint64_t completions = tlps(length, config_.max_payload_bytes);
      const uint64_t request_wire = requests * config_.tlp_overhead_bytes;
      const uint64_t completion_wire = length + completions * config_.tlp_overhead_bytes;
      Picoseconds at_host = upstream_.reserve(arrival, request_wire) + config_.link_latency_ps;
      Picoseconds data_ready = at_host + config_.host_memory_latency_ps;
      done = downstream_.reserve(data_ready, completion_wire) + config_.link_latency_ps;
      stats_.upstream_tlps += requests;
      stats_.upstream_bytes += request_wire;
      stats_.downstream_tlps += completions;
      stats_.downstream_bytes += completion_wire;
      ++stats_.device_reads;
      stats_.device_read_bytes += length;
    }
  }
  tlm::tlm_phase response = tlm::BEGIN_RESP;
  sc_core::sc_time back = delay_until(done);
  device_side->nb_transport_bw(trans, response, back);
  return tlm::TLM_ACCEPTED;
}

void PcieLink::raise_msi(uint32_t vector, Picoseconds at_ps) {
  const uint64_t wire = 4 + config_.tlp_overhead_bytes;
  const Picoseconds at_host = upstream_.reserve(at_ps, wire) + config_.link_latency_ps;
  ++stats_.upstream_tlps;
  stats_.upstream_bytes += wire;
  ++stats_.msis;
  msi_.send(vector, at_host);
}

unsigned PcieLink::device_debug(tlm::tlm_generic_payload& trans) {
  return move_host_data(trans) ? trans.get_data_length() : 0;
}

tlm::tlm_sync_enum PcieLink::host_forward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                          sc_core::sc_time& delay) {
  const Picoseconds arrival = now_ps() + delay.value();
  const uint64_t data = trans.is_write() ? trans.get_data_length() : 0;
  const uint64_t wire = data + config_.tlp_overhead_bytes;
  Picoseconds at_device = downstream_.reserve(arrival, wire) + config_.link_latency_ps;
  ++stats_.downstream_tlps;
  stats_.downstream_bytes += wire;
  trans.is_write() ? ++stats_.mmio_writes : ++stats_.mmio_reads;
  sc_core::sc_time forward_delay = delay_until(at_device);
  return to_fabric->nb_transport_fw(trans, phase, forward_delay);
}

tlm::tlm_sync_enum PcieLink::fabric_backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
  const Picoseconds ready = now_ps() + delay.value();
  Picoseconds at_host = ready;
  if (trans.is_read()) {
    // The read completion carries the data upstream.
    const uint64_t wire = trans.get_data_length() + config_.tlp_overhead_bytes;
    at_host = upstream_.reserve(ready, wire) + config_.link_latency_ps;
    ++stats_.upstream_tlps;
    stats_.upstream_bytes += wire;
  }
  sc_core::sc_time back = delay_until(at_host);
  host_side->nb_transport_bw(trans, phase, back);
  return tlm::TLM_COMPLETED;
}

unsigned PcieLink::host_debug(tlm::tlm_generic_payload& trans) { return to_fabric->transport_dbg(trans); }

void PcieLink::register_stats(stats::Scope scope) {
  scope.formula("upstream_tlps", "count", "TLPs device to host", [this] { return double(stats_.upstream_tlps); });
  scope.formula("downstream_tlps", "count", "TLPs host to device", [this] { return double(stats_.downstream_tlps); });
  scope.formula("upstream_wire_bytes", "bytes", "bytes on the wire device to host, overheads included",
                [this] { return double(stats_.upstream_bytes); });
  scope.formula("downstream_wire_bytes", "bytes", "bytes on the wire host to device, overheads included",
                [this] { return double(stats_.downstream_bytes); });
  scope.formula("device_read_bytes", "bytes", "host memory bytes read by the device",
                [this] { return double(stats_.device_read_bytes); });
  scope.formula("device_write_bytes", "bytes", "host memory bytes written by the device",
                [this] { return double(stats_.device_write_bytes); });
  scope.formula("msis", "count", "message-signalled interrupts delivered", [this] { return double(stats_.msis); });
}

}  // namespace hpusim::hw
