// The host's root port: where host MMIO enters the PCIe link and where MSIs from the device are
// received. A SystemC module, used only on the simulation thread by CoSimulation.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "hw/common/mem_protocol.h"
#include "hw/common/ports.h"

namespace hpusim::cosim {

class HostPort : public sc_core::sc_module, public hw::MsiTarget {
 public:
  explicit HostPort(sc_core::sc_module_name name);

  tlm_utils::simple_initiator_socket<HostPort> socket;

  struct Completion {
    bool done = false;
    hw::Picoseconds at_ps = 0;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    uint32_t value = 0;
  };
  struct Interrupt {
    uint32_t vector;
    hw::Picoseconds at_ps;
  };

  // Issues a 32-bit access that reaches the link at `at_ps`; returns a ticket for completion().
  uint64_t issue(bool write, uint64_t address, uint32_t value, hw::Picoseconds at_ps);
  // Issues a write of data.size() (> 0) bytes that reaches the link at `at_ps`. The port owns
  // the data until the response arrives, so it may be forgotten at once (posted). Returns a
  // ticket for completion() (whose value is 0).
  uint64_t issue_write(uint64_t address, std::vector<unsigned char> data, hw::Picoseconds at_ps);
  const Completion& completion(uint64_t ticket) const;
  // Releases a ticket; one still in flight is dropped when its response arrives.
  void forget(uint64_t ticket);

  // Called by the PCIe link when an MSI write reaches the host.
  void deliver_msi(uint32_t vector, hw::Picoseconds at_ps) override;
  // The earliest received interrupt, if any, without removing it.
  const Interrupt* earliest_interrupt() const;
  Interrupt take_earliest_interrupt();

  // While true, any completion or interrupt pauses the running simulation so the host can look.
  void set_pause_on_news(bool pause) { pause_on_news_ = pause; }

 private:
  struct Outstanding {
    tlm::tlm_generic_payload payload;
    uint32_t data = 0;                  // a 32-bit access's value
    std::vector<unsigned char> block;   // an issue_write's data
    Completion completion;
    bool abandoned = false;   // the host gave up waiting; drop the response when it comes
  };
  // Registers a new outstanding access and fills in its payload except the data; returns its ticket.
  uint64_t add(bool write, uint64_t address, Outstanding*& entry);
  void send(Outstanding& o, hw::Picoseconds at_ps);
  void erase(std::map<uint64_t, std::unique_ptr<Outstanding>>::iterator it);
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  void news();

  std::map<uint64_t, std::unique_ptr<Outstanding>> outstanding_;
  std::unordered_map<const tlm::tlm_generic_payload*, uint64_t> ticket_of_;   // lookup only, never iterated
  std::multimap<hw::Picoseconds, uint32_t> interrupts_;   // ordered by arrival time, then order received
  mutable Interrupt earliest_{};
  uint64_t next_ticket_ = 1;
  bool pause_on_news_ = false;
};

}  // namespace hpusim::cosim
