#include "hw/fabric/fabric.h"

#include <algorithm>
#include <tuple>
#include <sstream>
#include <stdexcept>

#include "arch/hex.h"

namespace hpusim::hw {
namespace {

// Remembers which master port a transaction entered by, so its response can find the way back.
struct FabricRoute : tlm::tlm_extension<FabricRoute> {
  int master = -1;
  int target = -1;
  tlm_extension_base* clone() const override { return new FabricRoute(*this); }
  void copy_from(const tlm_extension_base& other) override {
    *this = static_cast<const FabricRoute&>(other);
  }
};

FabricRoute& route_of(tlm::tlm_generic_payload& trans) {
  FabricRoute* route = nullptr;
  trans.get_extension(route);
  if (route == nullptr) {
    route = new FabricRoute;
    trans.set_extension(route);
  }
  return *route;
}

}  // namespace

Fabric::Fabric(sc_core::sc_module_name name, const FabricConfig& config)
    : sc_module(name), masters_socket("masters_socket"), targets_socket("targets_socket"), config_(config) {
  masters_socket.register_nb_transport_fw(this, &Fabric::forward);
  masters_socket.register_transport_dbg(this, &Fabric::debug_transport);
  targets_socket.register_nb_transport_bw(this, &Fabric::backward);
  end_of_delta_.on_update = [this] { pass_entered(); };
}

void Fabric::enter(bool forward, int port, tlm::tlm_generic_payload& trans, Picoseconds at) {
  // From outside the kernel's evaluation (the host's access between runs) nothing else is running:
  // it goes through at once, and a target's error reaches the host synchronously.
  if (sc_core::sc_get_status() != sc_core::SC_RUNNING) {
    if (forward) {
      pass_forward(port, trans, at);
    } else {
      pass_backward(port, trans, at);
    }
    return;
  }
  if (passing_now_) {   // entered while the delta's entries pass (a target answering at once)
    late_.push_back({forward, port, entered_seq_++, forward ? issuer_of(trans) : 0, &trans, at});
    return;
  }
  entered_.push_back({forward, port, entered_seq_++, forward ? issuer_of(trans) : 0, &trans, at});
  if (entered_.size() == 1) end_of_delta_.request_update();
}

void Fabric::pass_entered() {
  passing_.swap(entered_);
  entered_.clear();
  // A round-robin arbiter: each port's k-th transaction of the cycle goes after every port's
  // (k-1)-th, and among the k-th ones the first in line moves on by one port each pass.
  const int masters = static_cast<int>(masters_.size()), targets = static_cast<int>(targets_.size());
  const int first_master = static_cast<int>(passes_ % static_cast<uint64_t>(masters));
  const int first_target = static_cast<int>(passes_ % static_cast<uint64_t>(targets));
  ++passes_;
  // A port's turns go in order of entry, but one master port's requests in issuer order first,
  // each issuer's in the order it made them.
  order_.resize(passing_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(), [this](size_t x, size_t y) {
    const Entered &a = passing_[x], &b = passing_[y];
    return std::tie(a.forward, a.port, a.issuer, a.seq) < std::tie(b.forward, b.port, b.issuer, b.seq);
  });
  turns_.assign(masters_.size() + targets_.size(), 0);
  for (const size_t i : order_) {
    Entered& e = passing_[i];
    e.turn = turns_[static_cast<size_t>(e.forward ? e.port : masters + e.port)]++;
    e.in_line = e.forward ? (e.port - first_master + masters) % masters : (e.port - first_target + targets) % targets;
  }
  std::sort(passing_.begin(), passing_.end(), [](const Entered& a, const Entered& b) {
    if (a.forward != b.forward) return a.forward;
    if (a.turn != b.turn) return a.turn < b.turn;
    if (a.in_line != b.in_line) return a.in_line < b.in_line;
    return a.seq < b.seq;
  });
  // Passing one on may make another enter (a target that answers at once): it is caused by the
  // one passing, so it passes right after the delta's own, in the order they came.
  passing_now_ = true;
  for (size_t i = 0; i < passing_.size(); ++i) pass(passing_[i]);
  for (size_t i = 0; i < late_.size(); ++i) pass(late_[i]);   // late_ may grow while passing
  late_.clear();
  passing_now_ = false;
  passing_.clear();
}

void Fabric::pass(const Entered& e) {
  if (e.forward) {
    pass_forward(e.port, *e.trans, e.at);
  } else {
    pass_backward(e.port, *e.trans, e.at);
  }
}

unsigned Fabric::add_port(std::vector<Port>& ports, const std::string& name, double bytes_per_cycle) {
  if (bytes_per_cycle <= 0) throw std::invalid_argument("fabric port " + name + " needs a positive bandwidth");
  Port port;
  port.name = name;
  port.towards_target = BandwidthServer(bytes_per_cycle, config_.period_ps);
  port.towards_master = BandwidthServer(bytes_per_cycle, config_.period_ps);
  ports.push_back(std::move(port));
  return static_cast<unsigned>(ports.size() - 1);
}

void Fabric::map_range(unsigned target, uint64_t base, uint64_t size) {
  if (target >= targets_.size()) throw std::out_of_range("fabric: no target port " + std::to_string(target));
  Range range{base, base + size, target};
  for (const Range& other : ranges_) {
    if (range.base < other.end && other.base < range.end) {
      throw std::invalid_argument("fabric: range " + hex(base) + "+" + hex(size) + " of " + targets_[target].name +
                                  " overlaps " + targets_[other.target].name);
    }
  }
  ranges_.push_back(range);
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.base < b.base; });
}

int Fabric::decode(uint64_t address) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return -1;
  --it;
  return address < it->end ? static_cast<int>(it->target) : -1;
}

bool Fabric::fits_in_range(uint64_t address, uint64_t length) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == ranges_.begin()) return false;
  --it;
  return length <= it->end - address;
}

tlm::tlm_sync_enum Fabric::forward(int master, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                   sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) throw std::logic_error("fabric: unexpected phase on the forward path");
  enter(true, master, trans, now_ps() + delay.value());
  return tlm::TLM_ACCEPTED;
}

void Fabric::pass_forward(int master, tlm::tlm_generic_payload& trans, Picoseconds arrival) {
  const uint64_t length = trans.get_data_length();
  const int target = decode(trans.get_address());
  FabricRoute& route = route_of(trans);
  route.master = master;
  route.target = target;
  Port& in = masters_[master];
  ++in.transactions;

  if (target < 0 || !fits_in_range(trans.get_address(), length)) {
    // Unmapped, or crossing the end of a target's range: answer with an address error after one traversal there and back.
    ++unmapped_accesses_;
    razwi_.report({in.name, trans.get_address(), trans.is_write(), arrival});
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    tlm::tlm_phase response = tlm::BEGIN_RESP;
    sc_core::sc_time back = delay_until(arrival + 2 * latency_ps());
    masters_socket[master]->nb_transport_bw(trans, response, back);
    return;
  }

  Port& out = targets_[target];
  ++out.transactions;
  const uint64_t data = trans.is_write() ? length : 0;
  // A read request carries no data: it does not queue behind data transfers (the port's
  // request and data paths are separate).
  Picoseconds left_master = data ? in.towards_target.reserve(arrival, data) : arrival;
  Picoseconds left_port = data ? out.towards_target.reserve(arrival, data) : arrival;
  Picoseconds at_target = std::max(left_master, left_port) + latency_ps();
  tlm::tlm_phase request = tlm::BEGIN_REQ;
  sc_core::sc_time forward_delay = delay_until(at_target);
  targets_socket[target]->nb_transport_fw(trans, request, forward_delay);
}

tlm::tlm_sync_enum Fabric::backward(int target, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                    sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_RESP) throw std::logic_error("fabric: unexpected phase on the backward path");
  FabricRoute& route = route_of(trans);
  if (route.target != target || route.master < 0) {
    throw std::logic_error("fabric: response from " + targets_[target].name + " for a transaction it never received");
  }
  enter(false, target, trans, now_ps() + delay.value());
  return tlm::TLM_COMPLETED;
}

void Fabric::pass_backward(int target, tlm::tlm_generic_payload& trans, Picoseconds ready) {
  FabricRoute& route = route_of(trans);
  const uint64_t data = trans.is_read() ? trans.get_data_length() : 0;
  Port& out = targets_[target];
  Port& in = masters_[route.master];
  Picoseconds left_port = data ? out.towards_master.reserve(ready, data) : ready;
  Picoseconds left_master = data ? in.towards_master.reserve(ready, data) : ready;
  Picoseconds at_master = std::max(left_port, left_master) + latency_ps();
  tlm::tlm_phase response = tlm::BEGIN_RESP;
  sc_core::sc_time back = delay_until(at_master);
  int master = route.master;
  route.master = -1;
  masters_socket[master]->nb_transport_bw(trans, response, back);
}

unsigned Fabric::debug_transport(int, tlm::tlm_generic_payload& trans) {
  int target = decode(trans.get_address());
  if (target < 0) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return 0;
  }
  return targets_socket[target]->transport_dbg(trans);
}

FabricPortStats Fabric::stats_of(const Port& port) {
  FabricPortStats s;
  s.name = port.name;
  s.transactions = port.transactions;
  s.request_bytes = port.towards_target.bytes();
  s.response_bytes = port.towards_master.bytes();
  s.busy_ps = port.towards_target.busy_ps() + port.towards_master.busy_ps();
  s.waited_ps = port.towards_target.waited_ps() + port.towards_master.waited_ps();
  return s;
}

std::vector<FabricPortStats> Fabric::master_stats() const {
  std::vector<FabricPortStats> out;
  for (const Port& p : masters_) out.push_back(stats_of(p));
  return out;
}

std::vector<FabricPortStats> Fabric::target_stats() const {
  std::vector<FabricPortStats> out;
  for (const Port& p : targets_) out.push_back(stats_of(p));
  return out;
}

void Fabric::register_stats(stats::Scope scope) {
  scope.formula("unmapped_accesses", "count", "accesses to no target", [this] { return double(unmapped_accesses_); });
  const auto targets = target_stats();
  for (size_t i = 0; i < targets.size(); ++i) {
    stats::Scope t = scope.scope("target_" + stats::path_component(targets[i].name));
    t.formula("transactions", "count", "transactions through the port", [this, i] { return double(target_stats()[i].transactions); });
    t.formula("request_bytes", "bytes", "write data towards the target", [this, i] { return double(target_stats()[i].request_bytes); });
    t.formula("response_bytes", "bytes", "read data back from the target",
              [this, i] { return double(target_stats()[i].response_bytes); });
    t.formula("waited_ps", "ps", "time transfers queued behind others on the port",
              [this, i] { return double(target_stats()[i].waited_ps); });
  }
}

}  // namespace hpusim::hw
