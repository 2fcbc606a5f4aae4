#include "sim/cosim/host_port.h"

#include <cstdint>
#include <stdexcept>

namespace hpusim::cosim {

HostPort::HostPort(sc_core::sc_module_name name) : sc_module(name), socket("socket") {
  socket.register_nb_transport_bw(this, &HostPort::backward);
}

uint64_t HostPort::add(bool write, uint64_t address, Outstanding*& entry) {
  const uint64_t ticket = next_ticket_++;
  auto created = std::make_unique<Outstanding>();
  entry = created.get();
  outstanding_.emplace(ticket, std::move(created));
  ticket_of_.emplace(&entry->payload, ticket);
  tlm::tlm_generic_payload& payload = entry->payload;
  payload.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  payload.set_address(address);
  payload.set_byte_enable_ptr(nullptr);
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  return ticket;
}

void HostPort::send(Outstanding& o, hw::Picoseconds at_ps) {
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = hw::delay_until(at_ps);
  socket->nb_transport_fw(o.payload, phase, delay);
}

uint64_t HostPort::issue(bool write, uint64_t address, uint32_t value, hw::Picoseconds at_ps) {
  Outstanding* o = nullptr;
  const uint64_t ticket = add(write, address, o);
  o->data = value;
  o->payload.set_data_ptr(reinterpret_cast<unsigned char*>(&o->data));
  o->payload.set_data_length(4);
  o->payload.set_streaming_width(4);
  send(*o, at_ps);
  return ticket;
}

uint64_t HostPort::issue_write(uint64_t address, std::vector<unsigned char> data, hw::Picoseconds at_ps) {
  if (data.empty()) throw std::invalid_argument("host port: empty write");
  if (data.size() > UINT32_MAX) throw std::invalid_argument("host port: write of more than 4 GB");
  Outstanding* o = nullptr;
  const uint64_t ticket = add(true, address, o);
  o->block = std::move(data);
  const auto length = static_cast<unsigned int>(o->block.size());
  o->payload.set_data_ptr(o->block.data());
  o->payload.set_data_length(length);
  o->payload.set_streaming_width(length);
  send(*o, at_ps);
  return ticket;
}

void HostPort::erase(std::map<uint64_t, std::unique_ptr<Outstanding>>::iterator it) {
  ticket_of_.erase(&it->second->payload);
  outstanding_.erase(it);
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
    erase(it);
  } else {
    it->second->abandoned = true;
  }
}

tlm::tlm_sync_enum HostPort::backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  auto found = ticket_of_.find(&trans);
  if (found == ticket_of_.end()) throw std::logic_error("host port: response for a transaction it never issued");
  auto it = outstanding_.find(found->second);
  Outstanding& o = *it->second;
  if (o.abandoned) {
    erase(it);
    return tlm::TLM_COMPLETED;
  }
  o.completion.done = true;
  o.completion.at_ps = hw::now_ps() + delay.value();
  o.completion.status = trans.get_response_status();
  o.completion.value = o.block.empty() ? o.data : 0;
  news();
  return tlm::TLM_COMPLETED;
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
