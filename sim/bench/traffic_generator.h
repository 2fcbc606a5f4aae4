// A closed-loop memory traffic generator: several fabric master ports, each keeping up to
// `window` requests in flight. A new request is issued the moment a slot's previous response
// arrives (by time annotation, without waking a SystemC process), so the generator itself adds
// no simulation events.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hw/common/mem_protocol.h"

namespace hpusim::bench {

enum class Pattern { kSequential, kRandom };

struct TrafficSpec {
  Pattern pattern = Pattern::kSequential;
  double write_fraction = 0.0;       // 0 = all reads, 1 = all writes
  uint32_t request_bytes = 64;
  uint64_t requests = 100000;
  uint32_t ports = 1;                // how many of the generator's ports to use
  uint32_t window = 16;              // outstanding requests per port
  uint64_t region_base = 0;
  uint64_t region_bytes = 1 << 20;
  uint64_t seed = 1;
};

struct TrafficResult {
  uint64_t requests = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  hw::Picoseconds start_ps = 0;
  hw::Picoseconds end_ps = 0;         // arrival of the last response
  std::vector<uint64_t> read_latencies_ps;   // per read request, issue to response
  std::vector<uint64_t> write_latencies_ps;  // per write request
  struct Sample {
    uint32_t port;
    bool write;
    uint64_t address;
    hw::Picoseconds issued_ps;
    hw::Picoseconds done_ps;
  };
  std::vector<Sample> first_requests; // the first few requests, for the trace
};

class TrafficGenerator : public sc_core::sc_module {
 public:
  using Socket = tlm_utils::simple_initiator_socket_tagged<TrafficGenerator>;

  TrafficGenerator(sc_core::sc_module_name name, uint32_t ports);

  Socket& port(uint32_t index) { return *sockets_.at(index); }
  uint32_t port_count() const { return static_cast<uint32_t>(sockets_.size()); }

  // Runs one traffic case to completion on the calling (simulation) thread.
  TrafficResult run(const TrafficSpec& spec);

 private:
  // A request slot is its own payload, so a response leads straight back to its slot.
  struct Slot : tlm::tlm_generic_payload {
    std::vector<unsigned char> data;
    uint32_t port = 0;
    hw::Picoseconds issued_ps = 0;
  };

  void issue(Slot& slot, hw::Picoseconds at_ps);
  // Targets may answer from inside nb_transport_fw, so issuing from a response would recurse
  // once per request; responses queue their follow-up here and the outermost call drains it.
  void issue_later(Slot& slot, hw::Picoseconds at_ps);
  void drain();
  tlm::tlm_sync_enum backward(int port, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                              sc_core::sc_time& delay);

  std::vector<std::unique_ptr<Socket>> sockets_;
  std::vector<std::unique_ptr<Slot>> slots_;
  TrafficSpec spec_;
  TrafficResult result_;
  std::mt19937_64 rng_;
  uint64_t issued_ = 0;
  uint64_t completed_ = 0;
  uint64_t cursor_ = 0;
  double write_credit_ = 0.0;
  bool issuing_ = false;
  std::vector<std::pair<Slot*, hw::Picoseconds>> deferred_;
};

}  // namespace hpusim::bench
