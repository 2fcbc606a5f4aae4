// The far end of a NIC link whose other port is simulated in another process: it takes what the
// local port puts on the link (packets, credits, acknowledgements, resets) into an outbox of
// messages stamped with their arrival time, and injects messages from the other process into the
// local port at theirs. A conservative synchronisation (sim/distributed) carries the messages
// between processes: every message arrives at least the link latency after it was sent, so one
// exchange per lookahead window delivers each before its time.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hw/common/mem_protocol.h"
#include "hw/nic/nic_wire.h"

namespace hpusim::hw {

class NicPort;

// One message on a link between processes.
struct NicLinkMessage {
  uint32_t link = 0;            // the link's id, the same in both processes
  Picoseconds arrival_ps = 0;   // when it reaches the far port
  NicHeader header;             // kind, epoch, send id, source, destination
  std::vector<uint8_t> payload; // data packets only
};
// Flat bytes of messages (for the transport) and back; decode throws std::runtime_error on a
// truncated buffer.
void encode(const NicLinkMessage& m, std::vector<uint8_t>& out);
std::vector<NicLinkMessage> decode_messages(const uint8_t* data, size_t size);

class NicRemoteEnd : public sc_core::sc_module {
 public:
  // `link`: the link's id in both processes.
  NicRemoteEnd(sc_core::sc_module_name name, uint32_t link);

  // Joins `port` to this end (before the simulation starts): the far port has `peer_address` and
  // a receive buffer of `peer_rx_buffer_packets` (the local port's credits).
  void attach(NicPort& port, uint32_t peer_address, uint32_t peer_rx_buffer_packets);
  // Joins `port` to a switch port in the other process (NicSwitch::attach_remote there), whose
  // input buffer holds `switch_buffer_packets` packets.
  void attach_to_switch(NicPort& port, uint32_t switch_buffer_packets);
  uint32_t link() const { return link_; }

  // What the local port sent since the last call, in the order it sent it.
  std::vector<NicLinkMessage> take_outbox();
  // Hands a message from the far port to the local one, at its arrival time (later than now).
  // Throws std::logic_error for a message due already (the lookahead was broken).
  void inject(NicLinkMessage message);

  tlm_utils::simple_target_socket<NicRemoteEnd> rx;     // from the local port's tx
  tlm_utils::simple_initiator_socket<NicRemoteEnd> tx;  // to the local port's rx

 private:
  tlm::tlm_sync_enum receive(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);

  uint32_t link_;
  std::vector<NicLinkMessage> outbox_;
};

}  // namespace hpusim::hw
