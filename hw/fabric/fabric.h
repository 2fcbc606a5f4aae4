// The on-chip fabric: routes memory-protocol transactions from master ports (engines, DMA, the
// PCIe endpoint, bench traffic) to target ports (HBM, SRAM, CFG space, the PCIe host window) by
// address. Each port direction is a bandwidth server, so traffic through a shared port contends;
// each traversal adds a fixed latency. Transactions that enter in the same delta cycle reserve
// the ports as a round-robin arbiter grants them (one transaction of each port in turn, requests
// by master port and responses by target port, the first in line moving on each cycle), not in
// the order the kernel happened to run their initiators: same-time contention resolves the same way
// whatever else the process simulates (another card, or a card's peer in another process).
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <functional>
#include <string>
#include <vector>

#include "hw/common/bandwidth_server.h"
#include "hw/common/mem_protocol.h"
#include "hw/common/ports.h"
#include "sim/stats/stats.h"

namespace hpusim::hw {

struct FabricConfig {
  Picoseconds period_ps = 909;
  uint32_t latency_cycles = 24;
};

struct FabricPortStats {
  std::string name;
  uint64_t transactions = 0;
  uint64_t request_bytes = 0;     // write data carried towards targets
  uint64_t response_bytes = 0;    // read data carried back to masters
  uint64_t busy_ps = 0;           // both directions
  uint64_t waited_ps = 0;         // time transfers queued behind others
};

class Fabric : public sc_core::sc_module {
 public:
  Fabric(sc_core::sc_module_name name, const FabricConfig& config);

  // Binds a master's initiator socket; masters must be bound before simulation starts.
  template <typename Socket>
  unsigned bind_master(Socket& socket, const std::string& name, double bytes_per_cycle) {
    socket.bind(masters_socket);
    return add_port(masters_, name, bytes_per_cycle);
  }

  // Binds a target's socket and maps the address range [base, base + size) to it. More ranges can
  // be added with map_range.
  template <typename Socket>
  unsigned bind_target(Socket& socket, const std::string& name, double bytes_per_cycle, uint64_t base,
                       uint64_t size) {
    targets_socket.bind(socket);
    unsigned index = add_port(targets_, name, bytes_per_cycle);
    map_range(index, base, size);
    return index;
  }

  void map_range(unsigned target, uint64_t base, uint64_t size);

  // Which target port serves `address`; -1 if none.
  int decode(uint64_t address) const;

  // An access to an address no target serves (a RAZWI on Gaudi): the fabric answers it with an
  // address error and tells the hook (the card routes it to the device CPU's event path).
  using IllegalAccess = hw::IllegalAccess;
  // Accesses no target serves (RAZWI), reported where the card binds it.
  RazwiPort& razwi() { return razwi_; }

  std::vector<FabricPortStats> master_stats() const;
  std::vector<FabricPortStats> target_stats() const;
  uint64_t unmapped_accesses() const { return unmapped_accesses_; }
  // Registers the fabric's counters (and each target port's) under `scope`.
  void register_stats(stats::Scope scope);
  Picoseconds latency_ps() const { return config_.period_ps * config_.latency_cycles; }

  tlm_utils::multi_passthrough_target_socket<Fabric> masters_socket;
  tlm_utils::multi_passthrough_initiator_socket<Fabric> targets_socket;

 private:
  struct Port {
    std::string name;
    BandwidthServer towards_target;   // request direction
    BandwidthServer towards_master;   // response direction
    uint64_t transactions = 0;
  };
  struct Range {
    uint64_t base;
    uint64_t end;
    unsigned target;
  };

  // A transaction as it entered, to pass on once its delta cycle's processes have run.
  struct Entered {
    bool forward;               // towards a target (else a response towards its master)
    int port;                   // the master port it came by (forward) or the target port
    uint64_t seq;               // order of entry
    unsigned issuer = 0;        // forward: which of its master's threads made it (IssuerExtension)
    tlm::tlm_generic_payload* trans;
    Picoseconds at;             // when it reached the fabric (now + the caller's delay)
    uint32_t turn = 0;          // its port's how-manieth in the cycle (0: first)
    int in_line = 0;            // its port's place in the round-robin this cycle
  };

  unsigned add_port(std::vector<Port>& ports, const std::string& name, double bytes_per_cycle);
  tlm::tlm_sync_enum forward(int master, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                             sc_core::sc_time& delay);
  tlm::tlm_sync_enum backward(int target, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                              sc_core::sc_time& delay);
  void enter(bool forward, int port, tlm::tlm_generic_payload& trans, Picoseconds at);
  // The update phase of the delta cycle: passes on what entered in it, in a fixed order.
  void pass_entered();
  void pass(const Entered& e);
  // Calls back in the update phase of a delta cycle in which it was asked to (a primitive
  // channel's update: after every process of the cycle has run).
  struct EndOfDelta : sc_core::sc_prim_channel {
    EndOfDelta() : sc_core::sc_prim_channel(sc_core::sc_gen_unique_name("end_of_delta")) {}
    std::function<void()> on_update;
    void request_update() { sc_core::sc_prim_channel::request_update(); }
    void update() override { on_update(); }
  };
  void pass_forward(int master, tlm::tlm_generic_payload& trans, Picoseconds arrival);
  void pass_backward(int target, tlm::tlm_generic_payload& trans, Picoseconds ready);
  unsigned debug_transport(int master, tlm::tlm_generic_payload& trans);
  bool fits_in_range(uint64_t address, uint64_t length) const;
  static FabricPortStats stats_of(const Port& port);

  FabricConfig config_;
  std::vector<Port> masters_;
  std::vector<Port> targets_;
  std::vector<Range> ranges_;   // sorted by base
  uint64_t unmapped_accesses_ = 0;
  RazwiPort razwi_{"razwi"};
  std::vector<Entered> entered_;
  std::vector<Entered> passing_;
  std::vector<Entered> late_;
  bool passing_now_ = false;
  uint64_t entered_seq_ = 0;
  std::vector<size_t> order_;   // pass_entered's scratch
  uint64_t passes_ = 0;
  std::vector<uint32_t> turns_;   // per port (masters, then targets): transactions this cycle
  EndOfDelta end_of_delta_;
};

}  // namespace hpusim::hw
