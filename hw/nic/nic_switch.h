// An Ethernet switch for the NIC ports' scale-out (hw/nic): each switch port is joined to one NIC
// port by a cable; data packets are routed by their destination address, wait in the output
// port's queue, and leave at the port's line rate. Flow control is per hop, as PFC gives it: a
// NIC port holds credits for its switch port's input buffer, and the switch holds credits for
// each NIC port's receive buffer, so a congested output stalls its senders and nothing is lost.
// Acknowledgements are forwarded to their destination after the switch latency.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hw/common/mem_protocol.h"
#include "hw/nic/nic_port.h"
#include "hw/nic/nic_remote_end.h"
#include "hw/nic/nic_wire.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct NicSwitchConfig {
  std::string name = "switch";
  uint32_t ports = 2;
  uint32_t gbps = 100;                   // each port's line rate
  uint32_t packet_overhead_bytes = 82;   // wire bytes per packet beyond the payload
  Picoseconds latency_ps = 500000;       // a packet's arrival at an input to its output queue
  Picoseconds link_latency_ps = 100000;  // a packet's last bit leaving a port to its arrival at the far end
  uint32_t buffer_packets = 16;          // each input's buffer: the credits of the NIC port on it
};

struct NicSwitchPortStats {
  uint64_t packets = 0, bytes = 0;       // sent out of the port (payload)
  uint64_t busy_ps = 0;                  // its wire carrying them
  uint64_t max_queue = 0;                // the deepest its output queue got (packets)
};

class NicSwitch : public sc_core::sc_module {
 public:
  // Throws std::invalid_argument for a bad configuration.
  explicit NicSwitch(const NicSwitchConfig& config);

  // Joins `port` to switch port `index` (both directions, before the simulation starts); packets
  // for `port.address()` go out there. The port gets the input buffer's credits.
  void attach(NicPort& port, unsigned index);
  // Joins switch port `index` to a NIC port in another process, through `end` (its stand-in here):
  // the far port has `address` and a receive buffer of `rx_buffer_packets` packets.
  void attach_remote(NicRemoteEnd& end, uint32_t address, uint32_t rx_buffer_packets, unsigned index);

  const NicSwitchConfig& config() const { return config_; }
  NicSwitchPortStats port_stats(unsigned index) const { return ports_.at(index)->stats; }
  uint64_t unroutable() const { return unroutable_; }   // data for an address no port has: dropped
  void register_stats(stats::Scope scope);

 private:
  struct Packet {
    uint32_t input = 0;
    Picoseconds ready_ps = 0;   // in its output queue from then on
    NicHeader header;
    std::vector<unsigned char> payload;
  };
  struct Port {
    std::unique_ptr<tlm_utils::simple_initiator_socket_optional<NicSwitch>> tx;
    std::unique_ptr<tlm_utils::simple_target_socket_tagged_optional<NicSwitch>> rx;
    bool attached = false;
    uint32_t credits = 0;         // room in the NIC port's receive buffer
    Picoseconds wire_free_ps = 0;
    std::deque<Packet> queue;     // output queue
    NicSwitchPortStats stats;
  };
  struct Arrival {
    Picoseconds at;
    uint64_t seq;
    Packet packet;
    // Same-time arrivals in input order (then in their order on the input): the order packets
    // reach the switch's code may differ between one process and a box split between processes.
    bool operator>(const Arrival& o) const {
      if (at != o.at) return at > o.at;
      if (packet.input != o.packet.input) return packet.input > o.packet.input;
      return seq > o.seq;
    }
  };

  NicSwitch(sc_core::sc_module_name name, const NicSwitchConfig& config);
  Port& take_port(unsigned index, uint32_t address, uint32_t rx_buffer_packets);
  tlm::tlm_sync_enum receive(int index, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  void process();   // SC_METHOD: arrivals due, then every output that can send
  void send(unsigned index, const NicHeader& header, const std::vector<unsigned char>& payload, Picoseconds delay);

  NicSwitchConfig config_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::map<uint32_t, unsigned> route_;   // NIC address -> switch port
  std::vector<Arrival> arrivals_;        // min-heap
  uint64_t arrival_seq_ = 0;
  uint64_t unroutable_ = 0;
  sc_core::sc_event wake_;
};

}  // namespace hpusim::hw
