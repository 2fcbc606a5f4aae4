#include "hw/dma/dma_port.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace hpusim::hw {

DmaPort::DmaPort(sc_core::sc_module_name name) : sc_module(name), socket("socket") {
  socket.register_nb_transport_bw(this, &DmaPort::backward);
  SC_HAS_PROCESS(DmaPort);
  SC_METHOD(deliver);
  sensitive << deliver_event_;
  dont_initialize();
}

DmaPort::Access& DmaPort::acquire(bool write, uint64_t address, uint32_t length) {
  Access* access;
  if (free_.empty()) {
    pool_.push_back(std::make_unique<Access>());
    access = pool_.back().get();
  } else {
    access = free_.back();
    free_.pop_back();
  }
  access->buffer.resize(length);
  access->set_data_ptr(access->buffer.data());
  access->set_data_length(length);
  access->set_streaming_width(length);
  access->set_byte_enable_ptr(nullptr);
  access->set_dmi_allowed(false);
  access->tag = access->tag2 = 0;
  access->kind = 0;
  retarget(*access, write, address);
  return *access;
}

void DmaPort::retarget(Access& access, bool write, uint64_t address) {
  access.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  access.set_address(address);
  access.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
}

void DmaPort::issue(Access& access) {
  access.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  access.issued_ps = now_ps();
  access.done_ps = 0;
  ++in_flight_;
  if (access.is_write()) {
    ++writes_;
    write_bytes_ += access.get_data_length();
  } else {
    ++reads_;
    read_bytes_ += access.get_data_length();
  }
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->nb_transport_fw(access, phase, delay);
}

void DmaPort::release(Access& access) { free_.push_back(&access); }

tlm::tlm_sync_enum DmaPort::backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_RESP) throw std::logic_error(std::string(name()) + ": unexpected phase on the response path");
  Access& access = static_cast<Access&>(trans);
  const Picoseconds at = now_ps() + delay.value();
  due_.push_back({at, next_seq_++, &access});
  std::push_heap(due_.begin(), due_.end(), std::greater<Due>());
  deliver_event_.notify(delay_until(due_.front().at));
  return tlm::TLM_COMPLETED;
}

void DmaPort::deliver() {
  const Picoseconds now = now_ps();
  while (!due_.empty() && due_.front().at <= now) {
    std::pop_heap(due_.begin(), due_.end(), std::greater<Due>());
    Access* access = due_.back().access;
    due_.pop_back();
    --in_flight_;
    access->done_ps = now;
    if (!access->ok()) ++errors_;
    if (client_ != nullptr) {
      client_->access_done(*access);
    } else {
      release(*access);
    }
  }
  if (!due_.empty()) deliver_event_.notify(delay_until(due_.front().at));
}

}  // namespace hpusim::hw
