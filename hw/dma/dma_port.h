// The DMA core's fabric master port. It offers what hw/common/BusMaster offers an SC_THREAD
// engine (accesses into the fabric over one initiator socket, counted reads/writes/errors) plus
// what a pipelined engine needs and BusMaster cannot give from outside its own files: accesses
// whose completion is delivered to a client callback at the response time, so dozens of bursts
// can be in flight without one SystemC thread (or one thread wake-up) per burst.
//
//  * acquire() hands out a pooled access (a tlm_generic_payload with its own data buffer);
//    issue() sends it into the fabric now; the client's access_done() runs in this port's
//    SC_METHOD at the time the response is complete (never from inside nb_transport_fw), in
//    (time, issue order) order; the client then releases the access or re-issues it (a read
//    buffer can be turned into the write of the same bytes without a copy).
//  * Every access enters the fabric at the current simulation time, so the fabric's port
//    reservations are made in time order for this initiator.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "hw/common/mem_protocol.h"

namespace hpusim::hw {

class DmaPort : public sc_core::sc_module {
 public:
  struct Access : tlm::tlm_generic_payload {
    std::vector<unsigned char> buffer;
    uint64_t tag = 0;         // the client's bookkeeping
    uint64_t tag2 = 0;
    uint32_t kind = 0;
    Picoseconds issued_ps = 0;
    Picoseconds done_ps = 0;
    bool ok() const { return get_response_status() == tlm::TLM_OK_RESPONSE; }
  };

  struct Client {
    virtual ~Client() = default;
    // The response of `access` is complete now. The client owns the access again.
    virtual void access_done(Access& access) = 0;
  };

  explicit DmaPort(sc_core::sc_module_name name);

  tlm_utils::simple_initiator_socket<DmaPort> socket;

  void set_client(Client* client) { client_ = client; }

  // A pooled access of `length` bytes (buffer sized, contents unspecified).
  Access& acquire(bool write, uint64_t address, uint32_t length);
  // Turns an access into a read or write of its current buffer at `address` (same length).
  static void retarget(Access& access, bool write, uint64_t address);
  // Sends the access into the fabric now.
  void issue(Access& access);
  void release(Access& access);

  uint32_t in_flight() const { return in_flight_; }
  uint64_t reads() const { return reads_; }
  uint64_t writes() const { return writes_; }
  uint64_t errors() const { return errors_; }
  uint64_t read_bytes() const { return read_bytes_; }
  uint64_t write_bytes() const { return write_bytes_; }

 private:
  struct Due {
    Picoseconds at;
    uint64_t seq;
    Access* access;
    bool operator>(const Due& other) const { return at != other.at ? at > other.at : seq > other.seq; }
  };
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  void deliver();   // SC_METHOD

  Client* client_ = nullptr;
  std::vector<std::unique_ptr<Access>> pool_;
  std::vector<Access*> free_;
  std::vector<Due> due_;   // min-heap on (at, seq)
  uint64_t next_seq_ = 0;
  sc_core::sc_event deliver_event_;
  uint32_t in_flight_ = 0;
  uint64_t reads_ = 0, writes_ = 0, errors_ = 0, read_bytes_ = 0, write_bytes_ = 0;
};

}  // namespace hpusim::hw
