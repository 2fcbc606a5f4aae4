#include "sim/cosim/cosimulation.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "arch/hex.h"

namespace hpusim::cosim {
namespace {

// Host-side RAII: measured host time counts only the host's own work between simulator calls.
class HostCall {
 public:
  explicit HostCall(HostClock& clock) : clock_(clock) { clock_.enter(); }
  ~HostCall() { clock_.leave(); }

 private:
  HostClock& clock_;
};

// PCIe completion timeout of the root port (the specification's default range is 50 us to 50 ms).
constexpr uint64_t kCompletionTimeoutPs = 50ull * 1000 * 1000 * 1000;

}  // namespace

CoSimulation::CoSimulation(HostTimeSource source, const HostCostsNs& costs) : clock_(source), costs_(costs) {}

CoSimulation::~CoSimulation() = default;

void CoSimulation::attach(HostPort& port) {
  port_ = &port;
  // Sockets finish binding at the end of elaboration; complete it before the first access.
  sim_.call([] {
    if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  });
}

uint64_t CoSimulation::device_now_ps() {
  return sim_.call([] { return hw::now_ps(); });
}

void CoSimulation::charge_ns(uint64_t ns) {
  std::lock_guard<std::recursive_mutex> lock(host_mutex_);
  clock_.charge_ns(ns);
}

void CoSimulation::advance_device_to(uint64_t ps) {
  const uint64_t now = hw::now_ps();
  if (ps > now) sc_core::sc_start(sc_core::sc_time::from_value(ps - now));
}

void CoSimulation::run_until(uint64_t ps) {
  port_->set_pause_on_news(true);
  advance_device_to(ps);
  port_->set_pause_on_news(false);
}

void CoSimulation::sync_device() {
  std::lock_guard<std::recursive_mutex> lock(host_mutex_);
  HostCall call(clock_);
  const uint64_t at = clock_.now_ps();
  sim_.call([&] { advance_device_to(at); });
}

void CoSimulation::mmio_write32(uint64_t device_address, uint32_t value) {
  std::lock_guard<std::recursive_mutex> lock(host_mutex_);
  HostCall call(clock_);
  if (port_ == nullptr) throw std::logic_error("co-simulation: no host port attached");
  const uint64_t at = clock_.now_ps();
  sim_.call([&] {
    advance_device_to(at);
    uint64_t ticket = port_->issue(true, device_address, value, at);
    // Posted: the host does not wait, but a synchronous error is reported right away.
    const auto& done = port_->completion(ticket);
    bool failed = done.done && done.status != tlm::TLM_OK_RESPONSE;
    port_->forget(ticket);   // a write still in flight is dropped when its response arrives
    if (failed) throw std::runtime_error("MMIO write to " + hex(device_address) + " failed");
  });
  clock_.charge_ns(costs_.mmio_write_ns);
}

void CoSimulation::mmio_write_block(uint64_t device_address, const void* data, uint64_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(host_mutex_);
  HostCall call(clock_);
  if (port_ == nullptr) throw std::logic_error("co-simulation: no host port attached");
  if (bytes == 0) return;
  if (bytes - 1 > UINT64_MAX - device_address) {
    throw std::invalid_argument("MMIO block write to " + hex(device_address) + " of " + std::to_string(bytes) +
                                " bytes wraps around the address space");
  }
  const auto* source = static_cast<const unsigned char*>(data);
  const uint64_t at = clock_.now_ps();
  std::optional<uint64_t> failed_at = sim_.call([&]() -> std::optional<uint64_t> {
    advance_device_to(at);
    // Every write goes out before any is checked: a posted write that fails does not stop the
    // ones behind it.
    std::vector<std::pair<uint64_t, uint64_t>> tickets;   // (ticket, address)
    tickets.reserve(bytes / kBlockWriteBytes + 2);
    uint64_t address = device_address;
    uint64_t left = bytes;
    while (left > 0) {
      const uint64_t n = std::min(left, kBlockWriteBytes - address % kBlockWriteBytes);
      const uint64_t offset = address - device_address;
      std::vector<unsigned char> chunk(source + offset, source + offset + n);
      tickets.emplace_back(port_->issue_write(address, std::move(chunk), at), address);
      address += n;
      left -= n;
    }
    std::optional<uint64_t> first_failure;
    for (const auto& [ticket, chunk_address] : tickets) {
      const auto& done = port_->completion(ticket);
      if (!first_failure && done.done && done.status != tlm::TLM_OK_RESPONSE) first_failure = chunk_address;
      port_->forget(ticket);   // writes still in flight are dropped when their responses arrive
    }
    return first_failure;
  });
  if (failed_at) {
    throw std::runtime_error("MMIO block write to " + hex(device_address) + " (" + std::to_string(bytes) +
                             " bytes) failed at " + hex(*failed_at));
  }
  const uint64_t lines = (bytes - 1) / kWriteCombiningBytes + 1;
  clock_.charge_ns(lines * costs_.mmio_write_ns);
}

uint32_t CoSimulation::mmio_read32(uint64_t device_address) {
  std::lock_guard<std::recursive_mutex> lock(host_mutex_);
  HostCall call(clock_);
  if (port_ == nullptr) throw std::logic_error("co-simulation: no host port attached");
  const uint64_t at = clock_.now_ps();
  HostPort::Completion result = sim_.call([&] {
    advance_device_to(at);
    uint64_t ticket = port_->issue(false, device_address, 0, at);
    // Run until the response is known, then until it arrives. A device that never answers ends
    // the read with a completion timeout, as a PCIe root port does.
    const uint64_t give_up = hw::now_ps() + kCompletionTimeoutPs;
    uint64_t horizon = hw::now_ps();
    while (!port_->completion(ticket).done) {
      if (hw::now_ps() >= give_up) {
        port_->forget(ticket);
        HostPort::Completion timed_out;
        timed_out.at_ps = give_up;
        timed_out.status = tlm::TLM_GENERIC_ERROR_RESPONSE;
        return timed_out;
      }
      horizon += 1000000;  // look 1 us ahead at a time
      run_until(horizon);
    }
    HostPort::Completion done = port_->completion(ticket);
    port_->forget(ticket);
    advance_device_to(done.at_ps);
    return done;
  });
  clock_.wait_until(result.at_ps);
  clock_.charge_ns(costs_.mmio_read_ns);
  if (!result.done) throw std::runtime_error("MMIO read from " + hex(device_address) + ": completion timeout");
  if (result.status != tlm::TLM_OK_RESPONSE) {
    throw std::runtime_error("MMIO read from " + hex(device_address) + " failed");
  }
  return result.value;
}

std::optional<uint32_t> CoSimulation::wait_for_interrupt(uint64_t timeout_ps) {
  std::lock_guard<std::recursive_mutex> lock(host_mutex_);
  HostCall call(clock_);
  if (port_ == nullptr) throw std::logic_error("co-simulation: no host port attached");
  const uint64_t deadline = timeout_ps > UINT64_MAX - clock_.now_ps() ? UINT64_MAX : clock_.now_ps() + timeout_ps;
  const uint64_t start = clock_.now_ps();
  std::optional<HostPort::Interrupt> got = sim_.call([&]() -> std::optional<HostPort::Interrupt> {
    advance_device_to(start);
    while (true) {
      const HostPort::Interrupt* first = port_->earliest_interrupt();
      if (first != nullptr && first->at_ps <= hw::now_ps()) return port_->take_earliest_interrupt();
      if (hw::now_ps() >= deadline) return std::nullopt;
      // Run towards the earliest known interrupt (or the deadline); new ones pause the run.
      uint64_t target = first != nullptr ? std::min(first->at_ps, deadline) : deadline;
      run_until(target);
    }
  });
  if (!got) {
    clock_.wait_until(deadline);
    return std::nullopt;
  }
  clock_.wait_until(got->at_ps);
  clock_.charge_ns(costs_.irq_latency_ns);
  return got->vector;
}

}  // namespace hpusim::cosim
