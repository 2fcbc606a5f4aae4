// A bus master port for engine models whose control flow is an SC_THREAD (command processors,
// DMA engines, the firmware CPU): blocking reads and writes that return when the response has
// arrived, and posted writes whose completion can be awaited later (message barriers).
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hw/common/mem_protocol.h"

namespace hpusim::hw {

class BusMaster : public sc_core::sc_module {
  struct Request;

 public:
  explicit BusMaster(sc_core::sc_module_name name);

  tlm_utils::simple_initiator_socket<BusMaster> socket;

  // Blocking accesses, from an SC_THREAD only: they return at the time the response arrives.
  // `issuer`: which of the threads sharing the port makes it (IssuerExtension).
  tlm::tlm_response_status read(uint64_t address, void* data, uint32_t length, unsigned issuer = 0);
  tlm::tlm_response_status write(uint64_t address, const void* data, uint32_t length, unsigned issuer = 0);
  tlm::tlm_response_status write32(uint64_t address, uint32_t value, unsigned issuer = 0) {
    return write(address, &value, 4, issuer);
  }

  // Reads [address, address + length) into `data` as consecutive `chunk`-byte reads with up to
  // `window` in flight, in order, as a prefetching fetcher does, while its user consumes what has
  // arrived (a command processor running the front of its buffer while the rest comes in).
  class ReadStream {
   public:
    ReadStream(BusMaster& bus, uint64_t address, uint8_t* data, uint32_t length, uint32_t chunk, uint32_t window,
               unsigned issuer = 0);
    // Reads still in flight are dropped when their responses arrive.
    ~ReadStream();
    ReadStream(const ReadStream&) = delete;
    ReadStream& operator=(const ReadStream&) = delete;
    // SC_THREAD only: blocks until the first `bytes` bytes have arrived, keeping the window full;
    // the first failure among the reads retired so far, if any.
    tlm::tlm_response_status wait_for(uint32_t bytes);
    uint32_t arrived() const { return arrived_; }

   private:
    void issue();
    BusMaster& bus_;
    uint64_t address_;
    uint8_t* data_;
    uint32_t length_, chunk_, window_;
    unsigned issuer_;
    uint32_t issued_ = 0, arrived_ = 0;
    tlm::tlm_response_status status_ = tlm::TLM_OK_RESPONSE;
    std::vector<std::pair<Request*, uint32_t>> in_flight_;   // oldest first, with its offset
  };

  // Posted writes are tracked per owner (e.g. one per command processor sharing this port), so a
  // barrier waits only for its own owner's writes and sees only its own failures.
  static constexpr unsigned kMaxOwners = 16;
  // A posted write: returns at once; the response is counted when it arrives.
  void post_write(uint64_t address, const void* data, uint32_t length, unsigned owner = 0, unsigned issuer = 0);
  void post_write32(uint64_t address, uint32_t value, unsigned owner = 0, unsigned issuer = 0) {
    post_write(address, &value, 4, owner, issuer);
  }
  // Blocks (SC_THREAD only) until every posted write of `owner` has completed. Returns how many of
  // them failed since the last call; `first_failed`, when given, gets the first failure's address.
  uint32_t wait_posted(unsigned owner = 0, uint64_t* first_failed = nullptr);
  uint32_t posted_in_flight(unsigned owner = 0) const { return owners_.at(owner).in_flight; }
  // Forgets failures recorded for every owner (a modelled reset).
  void clear_posted_failures();

  uint64_t reads() const { return reads_; }
  uint64_t writes() const { return writes_; }
  uint64_t errors() const { return errors_; }

 private:
  struct Request : tlm::tlm_generic_payload {
    std::vector<unsigned char> buffer;
    bool posted = false;
    unsigned owner = 0;
    bool done = false;
    bool dropped = false;   // its reader went away: freed when the response arrives
    Picoseconds done_ps = 0;
  };
  Request& acquire(bool write, uint64_t address, uint32_t length, unsigned issuer);
  tlm::tlm_response_status wait_for(Request& request);
  tlm::tlm_sync_enum backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase, sc_core::sc_time& delay);
  void complete_posted(Request& request);
  void retire_posted();

  std::vector<std::unique_ptr<Request>> pool_;
  std::vector<Request*> free_;
  sc_core::sc_event response_event_;
  struct Owner {
    uint32_t in_flight = 0;
    uint32_t failures = 0;
    uint64_t first_failed = 0;
    sc_core::sc_event drained;
  };
  std::array<Owner, kMaxOwners> owners_;
  sc_core::sc_event posted_timer_;
  std::multimap<Picoseconds, Request*> pending_posted_;   // responses not yet due
  uint64_t reads_ = 0, writes_ = 0, errors_ = 0;
};

}  // namespace hpusim::hw
