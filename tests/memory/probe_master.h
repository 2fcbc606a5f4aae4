// The test bus master: issues accesses at chosen times (filled buffers or 32/64-bit register
// words) and records when each completes. Shared by the memory, sync-manager, DMA and MMU tests.
#pragma once

#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <algorithm>
#include <cstring>
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
    uint32_t value() const {
      uint32_t v = 0;
      std::memcpy(&v, data.data(), std::min<size_t>(4, data.size()));
      return v;
    }
    tlm::tlm_response_status status() const { return payload.get_response_status(); }
  };

  // Issues an access that enters the fabric at `at_ps` (>= now), made by `issuer` of the threads
  // sharing this port (hw::IssuerExtension; 0: none).
  Access& issue(bool write, uint64_t address, uint32_t bytes, hw::Picoseconds at_ps, unsigned char fill = 0,
                unsigned issuer = 0) {
    accesses_.emplace_back();
    Access& a = accesses_.back();
    a.data.assign(bytes, fill);
    if (issuer != 0) {
      auto* extension = new hw::IssuerExtension;   // the payload owns it
      extension->issuer = issuer;
      a.payload.set_extension(extension);
    }
    prepare(a, write, address, bytes, at_ps);
    return a;
  }

  // A register access of `bytes` (4 or 8) carrying `value` in its low word.
  Access& issue_word(bool write, uint64_t address, uint32_t value, hw::Picoseconds at_ps, unsigned bytes = 4) {
    accesses_.emplace_back();
    Access& a = accesses_.back();
    a.data.assign(bytes, 0);
    std::memcpy(a.data.data(), &value, std::min<size_t>(4, bytes));
    prepare(a, write, address, bytes, at_ps);
    return a;
  }
  // Issues a register access now and simulates until its response has arrived.
  Access& run_word(bool write, uint64_t address, uint32_t value = 0, unsigned bytes = 4) {
    if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
    Access& a = issue_word(write, address, value, hw::now_ps(), bytes);
    while (!a.done) sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_NS));
    if (a.done_ps > hw::now_ps()) sc_core::sc_start(hw::delay_until(a.done_ps));
    return a;
  }
  void write32(uint64_t address, uint32_t value) {
    EXPECT_EQ(run_word(true, address, value).status(), tlm::TLM_OK_RESPONSE) << "write of 0x" << std::hex << address;
  }
  uint32_t read32(uint64_t address) {
    Access& a = run_word(false, address);
    EXPECT_EQ(a.status(), tlm::TLM_OK_RESPONSE) << "read of 0x" << std::hex << address;
    return a.value();
  }
  // One 4-byte access; returns its status (the read value in `value`).
  tlm::tlm_response_status access(bool write, uint64_t address, uint32_t& value) {
    Access& a = run_word(write, address, value);
    if (!write) value = a.value();
    return a.status();
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
  void prepare(Access& a, bool write, uint64_t address, uint32_t bytes, hw::Picoseconds at_ps) {
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
  }

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
