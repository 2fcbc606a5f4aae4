#include "sim/bench/traffic_generator.h"

#include <algorithm>
#include <stdexcept>

namespace hpusim::bench {
namespace {
constexpr size_t kSampledRequests = 8;
}

TrafficGenerator::TrafficGenerator(sc_core::sc_module_name name, uint32_t ports) : sc_module(name) {
  for (uint32_t p = 0; p < ports; ++p) {
    auto socket = std::make_unique<Socket>(("port_" + std::to_string(p)).c_str());
    socket->register_nb_transport_bw(this, &TrafficGenerator::backward, static_cast<int>(p));
    sockets_.push_back(std::move(socket));
  }
}

void TrafficGenerator::issue(Slot& slot, hw::Picoseconds at_ps) {
  const uint64_t size = spec_.request_bytes;
  const uint64_t slots_in_region = spec_.region_bytes / size;
  uint64_t index;
  if (spec_.pattern == Pattern::kSequential) {
    index = cursor_++ % slots_in_region;
  } else {
    index = rng_() % slots_in_region;
  }
  // Deterministic read/write interleaving with the exact requested fraction.
  write_credit_ += spec_.write_fraction;
  bool write = false;
  if (write_credit_ >= 1.0 - 1e-12) {
    write = true;
    write_credit_ -= 1.0;
  }
  const uint64_t address = spec_.region_base + index * size;
  tlm::tlm_generic_payload& p = slot;
  p.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  p.set_address(address);
  p.set_data_ptr(slot.data.data());
  p.set_data_length(static_cast<unsigned>(size));
  p.set_streaming_width(static_cast<unsigned>(size));
  p.set_byte_enable_ptr(nullptr);
  p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  if (write) std::fill(slot.data.begin(), slot.data.end(), static_cast<unsigned char>(issued_));
  slot.issued_ps = at_ps;
  ++issued_;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time delay = hw::delay_until(at_ps);
  (*sockets_[slot.port])->nb_transport_fw(p, phase, delay);
}

tlm::tlm_sync_enum TrafficGenerator::backward(int port, tlm::tlm_generic_payload& trans, tlm::tlm_phase&,
                                              sc_core::sc_time& delay) {
  (void)port;
  const hw::Picoseconds done = hw::now_ps() + delay.value();
  Slot* slot = static_cast<Slot*>(&trans);
  if (trans.get_response_status() != tlm::TLM_OK_RESPONSE) ++result_.errors;
  (trans.is_write() ? result_.write_latencies_ps : result_.read_latencies_ps).push_back(done - slot->issued_ps);
  if (result_.first_requests.size() < kSampledRequests) {
    result_.first_requests.push_back(
        {slot->port, trans.is_write(), trans.get_address(), slot->issued_ps, done});
  }
  result_.end_ps = std::max(result_.end_ps, done);
  ++completed_;
  if (issued_ < spec_.requests) {
    issue_later(*slot, done);
  } else if (completed_ == spec_.requests && sc_core::sc_get_status() == sc_core::SC_RUNNING) {
    sc_core::sc_pause();
  }
  return tlm::TLM_COMPLETED;
}

void TrafficGenerator::issue_later(Slot& slot, hw::Picoseconds at_ps) {
  deferred_.emplace_back(&slot, at_ps);
  if (issuing_) return;
  drain();
}

void TrafficGenerator::drain() {
  issuing_ = true;
  for (size_t i = 0; i < deferred_.size(); ++i) issue(*deferred_[i].first, deferred_[i].second);
  deferred_.clear();
  issuing_ = false;
}

TrafficResult TrafficGenerator::run(const TrafficSpec& spec) {
  if (spec.ports == 0 || spec.ports > sockets_.size()) {
    throw std::invalid_argument("traffic case needs 1.." + std::to_string(sockets_.size()) + " ports");
  }
  if (spec.request_bytes == 0 || spec.region_bytes < spec.request_bytes || spec.window == 0 || spec.requests == 0) {
    throw std::invalid_argument("traffic case needs a request size, window and count, and a region that fits them");
  }
  if (completed_ < issued_) {
    throw std::logic_error("traffic generator: an earlier case still has requests in flight");
  }
  deferred_.clear();
  issuing_ = false;
  // Sockets finish binding at the end of elaboration; complete it before the first request.
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  spec_ = spec;
  result_ = TrafficResult{};
  result_.read_latencies_ps.reserve(spec.requests);
  rng_.seed(spec.seed);
  issued_ = completed_ = cursor_ = 0;
  write_credit_ = 0.0;

  slots_.clear();
  const hw::Picoseconds start = hw::now_ps();
  result_.start_ps = start;
  const uint64_t total_slots = std::min<uint64_t>(uint64_t{spec.ports} * spec.window, spec.requests);
  for (uint64_t s = 0; s < total_slots; ++s) {
    auto slot = std::make_unique<Slot>();
    slot->data.assign(spec.request_bytes, 0);
    slot->port = static_cast<uint32_t>(s % spec.ports);
    slots_.push_back(std::move(slot));
  }
  for (auto& slot : slots_) deferred_.emplace_back(slot.get(), start);
  drain();
  // Run until the last response is known, then up to its arrival.
  uint64_t progress_mark = completed_;
  while (completed_ < spec.requests) {
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
    if (completed_ == progress_mark) {
      throw std::runtime_error("traffic stalled: " + std::to_string(spec.requests - completed_) +
                               " requests got no response within 1 ms of simulated time");
    }
    progress_mark = completed_;
  }
  if (result_.end_ps > hw::now_ps()) sc_core::sc_start(hw::delay_until(result_.end_ps));
  result_.requests = completed_;
  result_.bytes = completed_ * spec.request_bytes;
  return std::move(result_);
}

}  // namespace hpusim::bench
