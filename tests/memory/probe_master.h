// A test bus master: issues single accesses at chosen times and records when each completes.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <deque>
#include <vector>

#include "hw/common/mem_protocol.h"

namespace hpusim::testing {

class ProbeMaster : public sc_core::sc_module {
 public:
  explicit ProbeMaster(sc_core::sc_module_name name) : sc_module(name), socket("socket") {
    socket.register_nb_transport_bw(this, &ProbeMaster::backward);
  }

  struct Access {
    tlm::tlm_generic_payload payload;
    std::vector<unsigned char> data;
    hw::Picoseconds issued_ps = 0;
    hw::Picoseconds done_ps = 0;
    bool done = false;
  };

  // Issues an access that enters the fabric at `at_ps` (>= now).
  Access& issue(bool write, uint64_t address, uint32_t bytes, hw::Picoseconds at_ps, unsigned char fill = 0) {
    accesses_.emplace_back();
    Access& a = accesses_.back();
    a.data.assign(bytes, fill);
    a.payload.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    a.payload.set_address(address);
    a.payload.set_data_ptr(a.data.data());
    a.payload.set_data_length(bytes);
    a.payload.set_streaming_width(bytes);
    a.payload.set_byte_enable_ptr(nullptr);
    a.payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    a.issued_ps = at_ps;
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = hw::delay_until(at_ps);
    socket->nb_transport_fw(a.payload, phase, delay);
    return a;
  }

  // Issues one access and simulates until its response has arrived; returns its latency.
  hw::Picoseconds access_and_wait(bool write, uint64_t address, uint32_t bytes, Access** out = nullptr) {
    if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
    Access& a = issue(write, address, bytes, hw::now_ps());
    while (!a.done) sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_NS));
    if (a.done_ps > hw::now_ps()) sc_core::sc_start(hw::delay_until(a.done_ps));
    if (out != nullptr) *out = &a;
    return a.done_ps - a.issued_ps;
  }

  tlm_utils::simple_initiator_socket<ProbeMaster> socket;

 private:
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
    for (Access& a : accesses_) {
      if (&a.payload == &trans) {
        a.done = true;
        a.done_ps = hw::now_ps() + delay.value();
        return tlm::TLM_COMPLETED;
      }
    }
    ADD_FAILURE() << "response for an access the probe never issued";
    return tlm::TLM_COMPLETED;
  }

  std::deque<Access> accesses_;
};

}  // namespace hpusim::testing
