#include "sim/cosim/host_port.h"

#include <stdexcept>

namespace hpusim::cosim {

HostPort::HostPort(sc_core::sc_module_name name) : sc_module(name), socket("socket") {
  socket.register_nb_transport_bw(this, &HostPort::backward);
}

uint64_t HostPort::issue(bool write, uint64_t address, uint32_t value, hw::Picoseconds at_ps) {
  const uint64_t ticket = next_ticket_++;
  auto entry = std::make_unique<Outstanding>();
  Outstanding& o = *entry;
  outstanding_.emplace(ticket, std::move(entry));
  o.data = value;
  o.payload.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  o.payload.set_address(address);
  o.payload.set_data_ptr(reinterpret_cast<unsigned char*>(&o.data));
  o.payload.set_data_length(4);
  o.payload.set_streaming_width(4);
  o.payload.set_byte_enable_ptr(nullptr);
  o.payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = hw::delay_until(at_ps);
  socket->nb_transport_fw(o.payload, phase, delay);
  return ticket;
}

const HostPort::Completion& HostPort::completion(uint64_t ticket) const {
  auto it = outstanding_.find(ticket);
  if (it == outstanding_.end()) throw std::logic_error("host port: unknown ticket");
  return it->second->completion;
}

void HostPort::forget(uint64_t ticket) {
  auto it = outstanding_.find(ticket);
  if (it == outstanding_.end()) return;
  // A transaction still in flight keeps its payload alive until the response arrives.
  if (it->second->completion.done) {
    outstanding_.erase(it);
  } else {
    it->second->abandoned = true;
  }
}

tlm::tlm_sync_enum HostPort::backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  for (auto& [ticket, o] : outstanding_) {
    if (&o->payload != &trans) continue;
    if (o->abandoned) {
      const uint64_t finished = ticket;
      outstanding_.erase(finished);
      return tlm::TLM_COMPLETED;
    }
    o->completion.done = true;
    o->completion.at_ps = hw::now_ps() + delay.value();
    o->completion.status = trans.get_response_status();
    o->completion.value = o->data;
    news();
    return tlm::TLM_COMPLETED;
  }
  throw std::logic_error("host port: response for a transaction it never issued");
}

void HostPort::deliver_msi(uint32_t vector, hw::Picoseconds at_ps) {
  interrupts_.emplace(at_ps, vector);
  news();
}

const HostPort::Interrupt* HostPort::earliest_interrupt() const {
  if (interrupts_.empty()) return nullptr;
  earliest_ = {interrupts_.begin()->second, interrupts_.begin()->first};
  return &earliest_;
}

HostPort::Interrupt HostPort::take_earliest_interrupt() {
  if (interrupts_.empty()) throw std::logic_error("host port: no interrupt pending");
  Interrupt first{interrupts_.begin()->second, interrupts_.begin()->first};
  interrupts_.erase(interrupts_.begin());
  return first;
}

void HostPort::news() {
  if (pause_on_news_ && sc_core::sc_get_status() == sc_core::SC_RUNNING) sc_core::sc_pause();
}

}  // namespace hpusim::cosim
