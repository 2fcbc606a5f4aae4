#include "hw/common/bus_master.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace hpusim::hw {

BusMaster::BusMaster(sc_core::sc_module_name name) : sc_module(name), socket("socket") {
  socket.register_nb_transport_bw(this, &BusMaster::backward);
  SC_HAS_PROCESS(BusMaster);
  SC_METHOD(retire_posted);
  sensitive << posted_timer_;
  dont_initialize();
}

BusMaster::Request& BusMaster::acquire(bool write, uint64_t address, uint32_t length, unsigned issuer) {
  Request* request;
  if (free_.empty()) {
    pool_.push_back(std::make_unique<Request>());
    request = pool_.back().get();
    request->set_extension(new IssuerExtension);   // the payload owns it
  } else {
    request = free_.back();
    free_.pop_back();
  }
  request->buffer.resize(length);
  request->posted = false;
  request->done = false;
  request->dropped = false;
  request->set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  request->set_address(address);
  request->set_data_ptr(request->buffer.data());
  request->set_data_length(length);
  request->set_streaming_width(length);
  request->set_byte_enable_ptr(nullptr);
  request->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  request->get_extension<IssuerExtension>()->issuer = issuer;
  write ? ++writes_ : ++reads_;
  return *request;
}

tlm::tlm_response_status BusMaster::wait_for(Request& request) {
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->nb_transport_fw(request, phase, delay);
  // Several threads may share this port: a wake-up may be for another request, and a response
  // known early (even inside nb_transport_fw) still arrives only at its annotated time.
  while (!request.done) sc_core::wait(response_event_);
  if (request.done_ps > now_ps()) sc_core::wait(delay_until(request.done_ps));
  const tlm::tlm_response_status status = request.get_response_status();
  if (status != tlm::TLM_OK_RESPONSE) ++errors_;
  return status;
}

tlm::tlm_response_status BusMaster::read(uint64_t address, void* data, uint32_t length, unsigned issuer) {
  Request& request = acquire(false, address, length, issuer);
  const tlm::tlm_response_status status = wait_for(request);
  std::memcpy(data, request.buffer.data(), length);
  free_.push_back(&request);
  return status;
}

BusMaster::ReadStream::ReadStream(BusMaster& bus, uint64_t address, uint8_t* data, uint32_t length, uint32_t chunk,
                                  uint32_t window, unsigned issuer)
    : bus_(bus), address_(address), data_(data), length_(length), chunk_(chunk), window_(window), issuer_(issuer) {
  if (chunk_ == 0 || window_ == 0) throw std::invalid_argument("bus master: a read stream needs a chunk and a window");
  issue();
}

BusMaster::ReadStream::~ReadStream() {
  for (const auto& [request, offset] : in_flight_) {
    if (request->done) {
      bus_.free_.push_back(request);
    } else {
      request->dropped = true;
    }
  }
}

void BusMaster::ReadStream::issue() {
  while (issued_ < length_ && in_flight_.size() < window_) {
    const uint32_t size = std::min(chunk_, length_ - issued_);
    Request& request = bus_.acquire(false, address_ + issued_, size, issuer_);
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    bus_.socket->nb_transport_fw(request, phase, delay);
    in_flight_.emplace_back(&request, issued_);
    issued_ += size;
  }
}

tlm::tlm_response_status BusMaster::ReadStream::wait_for(uint32_t bytes) {
  bytes = std::min(bytes, length_);
  while (arrived_ < bytes) {
    // Retire the oldest read once its data has arrived (reads complete in issue order here).
    const auto [request, offset] = in_flight_.front();
    while (!request->done) sc_core::wait(bus_.response_event_);
    if (request->done_ps > now_ps()) sc_core::wait(delay_until(request->done_ps));
    if (request->get_response_status() != tlm::TLM_OK_RESPONSE) {
      ++bus_.errors_;
      if (status_ == tlm::TLM_OK_RESPONSE) status_ = request->get_response_status();
    }
    std::memcpy(data_ + offset, request->buffer.data(), request->get_data_length());
    arrived_ = offset + request->get_data_length();
    bus_.free_.push_back(request);
    in_flight_.erase(in_flight_.begin());
    issue();
  }
  return status_;
}

tlm::tlm_response_status BusMaster::write(uint64_t address, const void* data, uint32_t length, unsigned issuer) {
  Request& request = acquire(true, address, length, issuer);
  std::memcpy(request.buffer.data(), data, length);
  const tlm::tlm_response_status status = wait_for(request);
  free_.push_back(&request);
  return status;
}

void BusMaster::post_write(uint64_t address, const void* data, uint32_t length, unsigned owner, unsigned issuer) {
  if (owner >= kMaxOwners) throw std::out_of_range("bus master: posted-write owner out of range");
  Request& request = acquire(true, address, length, issuer);
  std::memcpy(request.buffer.data(), data, length);
  request.posted = true;
  request.owner = owner;
  ++owners_[owner].in_flight;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->nb_transport_fw(request, phase, delay);
}

uint32_t BusMaster::wait_posted(unsigned owner, uint64_t* first_failed) {
  Owner& o = owners_.at(owner);
  while (o.in_flight > 0) sc_core::wait(o.drained);
  const uint32_t failures = o.failures;
  if (first_failed) *first_failed = o.first_failed;
  o.failures = 0;
  return failures;
}

void BusMaster::clear_posted_failures() {
  for (Owner& o : owners_) o.failures = 0;
}

void BusMaster::complete_posted(Request& request) {
  Owner& o = owners_[request.owner];
  if (request.get_response_status() != tlm::TLM_OK_RESPONSE) {
    ++errors_;
    if (o.failures++ == 0) o.first_failed = request.get_address();
  }
  free_.push_back(&request);
  if (--o.in_flight == 0) o.drained.notify(sc_core::SC_ZERO_TIME);
}

tlm::tlm_sync_enum BusMaster::backward(tlm::tlm_generic_payload& trans, tlm::tlm_phase&, sc_core::sc_time& delay) {
  Request& request = static_cast<Request&>(trans);
  if (request.posted) {
    // Counted when the response time is reached, so a barrier waits for the real completion.
    pending_posted_.emplace(now_ps() + delay.value(), &request);
    posted_timer_.notify(delay_until(pending_posted_.begin()->first));
    return tlm::TLM_COMPLETED;
  }
  if (request.dropped) {
    request.dropped = false;
    free_.push_back(&request);
    return tlm::TLM_COMPLETED;
  }
  request.done = true;
  request.done_ps = now_ps() + delay.value();
  response_event_.notify(delay);
  return tlm::TLM_COMPLETED;
}

void BusMaster::retire_posted() {
  while (!pending_posted_.empty() && pending_posted_.begin()->first <= now_ps()) {
    Request* request = pending_posted_.begin()->second;
    pending_posted_.erase(pending_posted_.begin());
    complete_posted(*request);
  }
  if (!pending_posted_.empty()) posted_timer_.notify(delay_until(pending_posted_.begin()->first));
}

}  // namespace hpusim::hw
