#include "hw/nic/nic_remote_end.h"

#include <cstring>
#include <stdexcept>

#include "hw/nic/nic_port.h"

namespace hpusim::hw {
namespace {

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}
template <class T>
T get(const uint8_t* data, size_t size, size_t& at) {
  if (at + sizeof(T) > size) throw std::runtime_error("NIC link messages: a truncated buffer");
  T v;
  std::memcpy(&v, data + at, sizeof(T));
  at += sizeof(T);
  return v;
}

}  // namespace

void encode(const NicLinkMessage& m, std::vector<uint8_t>& out) {
  put<uint32_t>(out, m.link);
  put<uint64_t>(out, m.arrival_ps);
  put<uint8_t>(out, static_cast<uint8_t>(m.header.kind));
  put<uint32_t>(out, m.header.epoch);
  put<uint64_t>(out, m.header.send_id);
  put<uint32_t>(out, m.header.source);
  put<uint32_t>(out, m.header.dest);
  put<uint32_t>(out, static_cast<uint32_t>(m.payload.size()));
  out.insert(out.end(), m.payload.begin(), m.payload.end());
}

std::vector<NicLinkMessage> decode_messages(const uint8_t* data, size_t size) {
  std::vector<NicLinkMessage> out;
  size_t at = 0;
  while (at < size) {
    NicLinkMessage m;
    m.link = get<uint32_t>(data, size, at);
    m.arrival_ps = get<uint64_t>(data, size, at);
    m.header.kind = static_cast<NicHeader::Kind>(get<uint8_t>(data, size, at));
    m.header.epoch = get<uint32_t>(data, size, at);
    m.header.send_id = get<uint64_t>(data, size, at);
    m.header.source = get<uint32_t>(data, size, at);
    m.header.dest = get<uint32_t>(data, size, at);
    const uint32_t bytes = get<uint32_t>(data, size, at);
    if (at + bytes > size) throw std::runtime_error("NIC link messages: a truncated payload");
    m.payload.assign(data + at, data + at + bytes);
    at += bytes;
    out.push_back(std::move(m));
  }
  return out;
}

NicRemoteEnd::NicRemoteEnd(sc_core::sc_module_name name, uint32_t link)
    : sc_core::sc_module(name), rx("rx"), tx("tx"), link_(link) {
  rx.register_nb_transport_fw(this, &NicRemoteEnd::receive);
  tx.register_nb_transport_bw(this, &NicRemoteEnd::backward);
}

void NicRemoteEnd::attach(NicPort& port, uint32_t peer_address, uint32_t peer_rx_buffer_packets) {
  port.mark_remote(peer_address, peer_rx_buffer_packets);
  port.tx.bind(rx);
  tx.bind(port.rx);
}

void NicRemoteEnd::attach_to_switch(NicPort& port, uint32_t switch_buffer_packets) {
  port.attach_to_switch(switch_buffer_packets);
  port.tx.bind(rx);
  tx.bind(port.rx);
}

tlm::tlm_sync_enum NicRemoteEnd::receive(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  const NicHeader* header = trans.get_extension<NicHeader>();
  if (header == nullptr) throw std::logic_error("NIC remote end: a transaction without a NIC header");
  NicLinkMessage m;
  m.link = link_;
  m.arrival_ps = now_ps() + delay.value();
  m.header = *header;
  if (header->kind == NicHeader::Kind::Data) m.payload.assign(trans.get_data_ptr(), trans.get_data_ptr() + trans.get_data_length());
  outbox_.push_back(std::move(m));
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum NicRemoteEnd::backward(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
  return tlm::TLM_COMPLETED;
}

std::vector<NicLinkMessage> NicRemoteEnd::take_outbox() { return std::move(outbox_); }

void NicRemoteEnd::inject(NicLinkMessage m) {
  if (m.arrival_ps <= now_ps()) {
    throw std::logic_error("NIC remote end '" + std::string(name()) + "': a message due at " +
                           std::to_string(m.arrival_ps) + " ps arrived at " + std::to_string(now_ps()) +
                           " ps (the synchronisation's lookahead is longer than the link's latency)");
  }
  NicHeader header = m.header;
  tlm::tlm_generic_payload trans;
  trans.set_command(header.kind == NicHeader::Kind::Data ? tlm::TLM_WRITE_COMMAND : tlm::TLM_IGNORE_COMMAND);
  trans.set_address(0);
  trans.set_data_ptr(m.payload.empty() ? nullptr : m.payload.data());
  trans.set_data_length(static_cast<unsigned>(m.payload.size()));
  trans.set_extension(&header);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = ps_to_time(m.arrival_ps - now_ps());
  tx->nb_transport_fw(trans, phase, delay);
  trans.clear_extension(&header);
}

}  // namespace hpusim::hw
