#include "hw/nic/nic_switch.h"

#include <algorithm>
#include <stdexcept>

namespace hpusim::hw {
namespace {

NicHeader credit() {
  NicHeader h;
  h.kind = NicHeader::Kind::Credit;
  return h;
}

}  // namespace

NicSwitch::NicSwitch(const NicSwitchConfig& config) : NicSwitch(sc_core::sc_module_name(config.name.c_str()), config) {}

NicSwitch::NicSwitch(sc_core::sc_module_name name, const NicSwitchConfig& config) : sc_module(name), config_(config) {
  const std::string who = "switch '" + config_.name + "': ";
  if (config_.ports == 0) throw std::invalid_argument(who + "ports must be at least 1");
  if (config_.gbps == 0) throw std::invalid_argument(who + "gbps must be positive");
  if (config_.buffer_packets == 0) throw std::invalid_argument(who + "buffer_packets must be at least 1");
  for (uint32_t i = 0; i < config_.ports; ++i) {
    auto port = std::make_unique<Port>();
    port->tx = std::make_unique<tlm_utils::simple_initiator_socket_optional<NicSwitch>>(("tx" + std::to_string(i)).c_str());
    port->rx = std::make_unique<tlm_utils::simple_target_socket_tagged_optional<NicSwitch>>(("rx" + std::to_string(i)).c_str());
    port->rx->register_nb_transport_fw(this, &NicSwitch::receive, static_cast<int>(i));
    port->tx->register_nb_transport_bw(this, &NicSwitch::backward);
    ports_.push_back(std::move(port));
  }
  SC_HAS_PROCESS(NicSwitch);
  SC_METHOD(process);
  sensitive << wake_;
  dont_initialize();
}

NicSwitch::Port& NicSwitch::take_port(unsigned index, uint32_t address, uint32_t rx_buffer_packets) {
  if (index >= ports_.size())
    throw std::invalid_argument("switch '" + config_.name + "' has " + std::to_string(ports_.size()) + " ports, not " +
                                std::to_string(index + 1));
  Port& p = *ports_[index];
  if (p.attached) throw std::invalid_argument("switch '" + config_.name + "': port " + std::to_string(index) + " is taken");
  if (!route_.emplace(address, index).second)
    throw std::invalid_argument("switch '" + config_.name + "': two ports with address " + std::to_string(address));
  p.attached = true;
  p.credits = rx_buffer_packets;
  return p;
}

void NicSwitch::attach(NicPort& port, unsigned index) {
  Port& p = take_port(index, port.address(), port.config().rx_buffer_packets);
  port.attach_to_switch(config_.buffer_packets);
  port.tx.bind(*p.rx);
  p.tx->bind(port.rx);
}

void NicSwitch::attach_remote(NicRemoteEnd& end, uint32_t address, uint32_t rx_buffer_packets, unsigned index) {
  Port& p = take_port(index, address, rx_buffer_packets);
  end.tx.bind(*p.rx);
  p.tx->bind(end.rx);
}

tlm::tlm_sync_enum NicSwitch::backward(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
  return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum NicSwitch::receive(int index, tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  const NicHeader* header = trans.get_extension<NicHeader>();
  if (header == nullptr) throw std::logic_error("switch '" + config_.name + "': a transaction without a NIC header");
  Arrival a{now_ps() + delay.value(), arrival_seq_++, {}};
  a.packet.input = static_cast<uint32_t>(index);
  a.packet.header = *header;
  if (header->kind == NicHeader::Kind::Data)
    a.packet.payload.assign(trans.get_data_ptr(), trans.get_data_ptr() + trans.get_data_length());
  arrivals_.push_back(std::move(a));
  std::push_heap(arrivals_.begin(), arrivals_.end(), std::greater<Arrival>());
  wake_.notify(delay_until(arrivals_.front().at));
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  return tlm::TLM_COMPLETED;
}

void NicSwitch::send(unsigned index, const NicHeader& header, const std::vector<unsigned char>& payload, Picoseconds delay) {
  NicHeader h = header;
  tlm::tlm_generic_payload trans;
  trans.set_command(h.kind == NicHeader::Kind::Data ? tlm::TLM_WRITE_COMMAND : tlm::TLM_IGNORE_COMMAND);
  trans.set_data_ptr(const_cast<unsigned char*>(payload.data()));
  trans.set_data_length(static_cast<unsigned>(payload.size()));
  trans.set_extension(&h);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time d = ps_to_time(delay);
  (*ports_[index]->tx)->nb_transport_fw(trans, phase, d);
  trans.clear_extension(&h);
}

void NicSwitch::process() {
  const Picoseconds now = now_ps();
  while (!arrivals_.empty() && arrivals_.front().at <= now) {
    std::pop_heap(arrivals_.begin(), arrivals_.end(), std::greater<Arrival>());
    Packet packet = std::move(arrivals_.back().packet);
    arrivals_.pop_back();
    if (packet.header.kind == NicHeader::Kind::Credit) {   // the NIC on that port placed a packet
      ++ports_[packet.input]->credits;
      continue;
    }
    const auto route = route_.find(packet.header.dest);
    if (route == route_.end()) {
      if (packet.header.kind == NicHeader::Kind::Data) {   // dropped: its input buffer slot is free again
        ++unroutable_;
        send(packet.input, credit(), {}, config_.link_latency_ps);
      }
      continue;
    }
    if (packet.header.kind == NicHeader::Kind::Ack) {
      send(route->second, packet.header, {}, config_.latency_ps + config_.link_latency_ps);
      continue;
    }
    packet.ready_ps = now + config_.latency_ps;
    Port& out = *ports_[route->second];
    out.queue.push_back(std::move(packet));
    out.stats.max_queue = std::max<uint64_t>(out.stats.max_queue, out.queue.size());
  }
  Picoseconds next = arrivals_.empty() ? UINT64_MAX : arrivals_.front().at;
  for (unsigned index = 0; index < ports_.size(); ++index) {
    Port& out = *ports_[index];
    while (!out.queue.empty() && out.queue.front().ready_ps <= now && out.credits > 0 && out.wire_free_ps <= now) {
      const Packet& packet = out.queue.front();
      const uint64_t wire_bytes = packet.payload.size() + config_.packet_overhead_bytes;
      const Picoseconds wire = (wire_bytes * 8000 + config_.gbps - 1) / config_.gbps;
      out.wire_free_ps = now + wire;
      --out.credits;
      ++out.stats.packets;
      out.stats.bytes += packet.payload.size();
      out.stats.busy_ps += wire;
      send(index, packet.header, packet.payload, wire + config_.link_latency_ps);
      // The packet left its input buffer: the NIC port on that input may send one more.
      send(packet.input, credit(), {}, config_.link_latency_ps);
      out.queue.pop_front();
    }
    if (!out.queue.empty() && out.credits > 0) next = std::min(next, std::max(out.queue.front().ready_ps, out.wire_free_ps));
  }
  if (next != UINT64_MAX) wake_.notify(delay_until(next));
}

void NicSwitch::register_stats(stats::Scope scope) {
  scope.formula("unroutable", "count", "data packets for an address no port has (dropped)", [this] { return double(unroutable_); });
  for (unsigned i = 0; i < ports_.size(); ++i) {
    stats::Scope port = scope.scope("port" + std::to_string(i));
    port.formula("packets", "count", "packets sent out of the port", [this, i] { return double(ports_[i]->stats.packets); });
    port.formula("bytes", "bytes", "payload sent out of the port", [this, i] { return double(ports_[i]->stats.bytes); });
    port.formula("busy_ps", "ps", "time its wire carried packets", [this, i] { return double(ports_[i]->stats.busy_ps); });
    port.formula("max_queue", "packets", "the deepest its output queue got", [this, i] { return double(ports_[i]->stats.max_queue); });
  }
}

}  // namespace hpusim::hw
