#include "sim/cosim/cosimulation.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "arch/hex.h"

namespace hpusim::cosim {

// A host thread's clock and what it is doing. Fields other than `calls` change under the box
// mutex (the clock of a bound track too: other tracks read it to know how far the device may go).
struct CoSimulation::Track {
  Track(unsigned id_, std::string name_, HostTimeSource source) : id(id_), name(std::move(name_)), clock(source) {}

  enum class Phase { kHost, kActing, kWaiting, kLocking };

  const unsigned id;
  const std::string name;
  HostClock clock;
  std::recursive_mutex calls;   // threads sharing a track (the default one) take turns
  bool bound = false;           // reserved or bound: it holds the device back while it runs host code
  std::optional<std::thread::id> holder;
  Phase phase = Phase::kHost;
  uint64_t act_ps = 0;          // kActing: when its access happens
  // kWaiting: the earliest known time of its event (UINT64_MAX: none yet) and its deadline,
  // checked on the simulation thread; woken_ps once the device got there.
  std::function<uint64_t()> next_event;
  uint64_t deadline_ps = UINT64_MAX;
  std::optional<uint64_t> woken_ps;
  // kLocking: the lock it asked for and when.
  const HostLock* wants = nullptr;
  uint64_t lock_request_ps = 0;
};

struct CoSimulation::HostLock {
  unsigned depth = 0;                  // 0: free
  std::thread::id holder;
  const Track* holder_track = nullptr;
  uint64_t released_ps = 0;            // the holder's host time when it last let go
};

namespace {

thread_local CoSimulation* t_cosim = nullptr;   // the co-simulation the thread's binding is for
thread_local void* t_track = nullptr;

// Host-side RAII: measured host time counts only the host's own work between simulator calls.
class HostCall {
 public:
  explicit HostCall(HostClock& clock) : clock_(clock) { clock_.enter(); }
  ~HostCall() { clock_.leave(); }

 private:
  HostClock& clock_;
};

// Runs `f` when the scope ends, however it ends.
template <typename F>
class OnExit {
 public:
  explicit OnExit(F f) : f_(std::move(f)) {}
  ~OnExit() { f_(); }
  OnExit(const OnExit&) = delete;
  OnExit& operator=(const OnExit&) = delete;

 private:
  F f_;
};

// PCIe completion timeout of the root port (the specification's default range is 50 us to 50 ms).
constexpr uint64_t kCompletionTimeoutPs = 50ull * 1000 * 1000 * 1000;

}  // namespace

CoSimulation::CoSimulation(HostTimeSource source, const HostCostsNs& costs) : source_(source), costs_(costs) {
  tracks_.push_back(std::make_unique<Track>(kDefaultTrack, "host", source));
}

CoSimulation::~CoSimulation() {
  if (t_cosim == this) {
    t_cosim = nullptr;
    t_track = nullptr;
  }
}

void CoSimulation::attach(HostPort& port) {
  ports_.push_back(&port);
  // Sockets finish binding at the end of elaboration; complete it before the first access.
  sim_.call([] {
    if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  });
}

HostPort& CoSimulation::first_port() {
  if (ports_.empty()) throw std::logic_error("co-simulation: no host port attached");
  return *ports_.front();
}

// ---------------------------------------------------------------------------------------------
// Tracks
// ---------------------------------------------------------------------------------------------

CoSimulation::Track& CoSimulation::my_track() {
  if (t_cosim == this && t_track != nullptr) return *static_cast<Track*>(t_track);
  return *tracks_.front();   // never reallocated: the default track is created with the loop
}

unsigned CoSimulation::add_track(const std::string& name, uint64_t start_ps) {
  const uint64_t from = std::max(host_now_ps(), start_ps);
  std::lock_guard<std::mutex> box(box_mutex_);
  const auto id = static_cast<unsigned>(tracks_.size());
  tracks_.push_back(std::make_unique<Track>(id, name, source_));
  tracks_.back()->clock.wait_until(from);
  tracks_.back()->bound = true;   // reserved for the thread that will bind it
  return id;
}

void CoSimulation::bind_thread(unsigned id) {
  unbind_thread();
  std::lock_guard<std::mutex> box(box_mutex_);
  if (id >= tracks_.size()) throw std::invalid_argument("co-simulation: no host track " + std::to_string(id));
  Track& track = *tracks_[id];
  if (id == kDefaultTrack) return;   // unbound threads use it already
  if (track.holder) throw std::invalid_argument("co-simulation: host track '" + track.name + "' is bound to another thread");
  track.bound = true;
  track.holder = std::this_thread::get_id();
  t_cosim = this;
  t_track = &track;
}

void CoSimulation::unbind_thread() {
  if (t_cosim != this || t_track == nullptr) return;
  Track& track = *static_cast<Track*>(t_track);
  {
    std::lock_guard<std::mutex> box(box_mutex_);
    track.bound = false;
    track.holder.reset();
  }
  box_changed_.notify_all();
  t_cosim = nullptr;
  t_track = nullptr;
}

unsigned CoSimulation::current_track() { return my_track().id; }

const std::string& CoSimulation::track_name(unsigned id) {
  std::lock_guard<std::mutex> box(box_mutex_);
  if (id >= tracks_.size()) throw std::invalid_argument("co-simulation: no host track " + std::to_string(id));
  return tracks_[id]->name;
}

uint64_t CoSimulation::track_now_ps(unsigned id) {
  std::lock_guard<std::mutex> box(box_mutex_);
  if (id >= tracks_.size()) throw std::invalid_argument("co-simulation: no host track " + std::to_string(id));
  return tracks_[id]->clock.now_ps();
}

uint64_t CoSimulation::host_now_ps() {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  return me.clock.now_ps();
}

uint64_t CoSimulation::device_now_ps() {
  return sim_.call([] { return hw::now_ps(); });
}

void CoSimulation::charge_ns(uint64_t ns) {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  std::lock_guard<std::mutex> box(box_mutex_);
  HostCall call(me.clock);   // measured: the CPU time up to this charge is the work it stands for
  me.clock.charge_ns(ns);
}

void CoSimulation::host_wait_until(uint64_t ps) {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  std::lock_guard<std::mutex> box(box_mutex_);
  me.clock.wait_until(ps);
}

// ---------------------------------------------------------------------------------------------
// Keeping the tracks in step
// ---------------------------------------------------------------------------------------------

std::optional<uint64_t> CoSimulation::holds_back_at(const Track& t, const Track& me, size_t depth) const {
  switch (t.phase) {
    case Track::Phase::kHost: return t.bound ? std::optional<uint64_t>(t.clock.now_ps()) : std::nullopt;
    case Track::Phase::kActing: return t.act_ps;
    case Track::Phase::kWaiting: return t.woken_ps;
    case Track::Phase::kLocking: {
      const HostLock& lock = *t.wants;
      if (lock.depth == 0) return t.lock_request_ps;   // it may take the lock now
      // It goes on only after the holder lets go, at the holder's time or later.
      if (lock.holder_track == &me || lock.holder_track == &t || depth >= tracks_.size()) return std::nullopt;
      const auto holder = holds_back_at(*lock.holder_track, me, depth + 1);
      if (!holder) return std::nullopt;
      return std::max(t.lock_request_ps, *holder);
    }
  }
  return std::nullopt;
}

uint64_t CoSimulation::horizon(const Track& me) const {
  uint64_t limit = UINT64_MAX;
  for (const auto& t : tracks_) {
    if (t.get() == &me) continue;
    if (const auto at = holds_back_at(*t, me)) limit = std::min(limit, *at);
  }
  return limit;
}

bool CoSimulation::may_act(const Track& me, uint64_t at) const {
  for (const auto& t : tracks_) {
    if (t.get() == &me) continue;
    const auto other = holds_back_at(*t, me);
    if (other && (*other < at || (*other == at && t->id < me.id))) return false;
  }
  return true;
}

void CoSimulation::advance_device_to(uint64_t ps) {
  const uint64_t now = hw::now_ps();
  if (ps > now) {
    if (runner_ != nullptr) {
      runner_->run_towards(ps);
    } else {
      sc_core::sc_start(sc_core::sc_time::from_value(ps - now));
    }
  }
  device_ps_ = hw::now_ps();
}

bool CoSimulation::advance(uint64_t target) {
  const bool anyone_waits = std::any_of(tracks_.begin(), tracks_.end(), [](const auto& t) {
    return t->phase == Track::Phase::kWaiting && !t->woken_ps;
  });
  if (!anyone_waits) {   // no event to stop at: one run (a runner may cut it in windows)
    while (hw::now_ps() < target) advance_device_to(target);
    return true;
  }
  for (HostPort* port : ports_) port->set_pause_on_news(true);
  bool woke = false;
  while (true) {
    // A waiter wakes exactly when the device reaches its event or deadline; no run goes past one.
    uint64_t bound = target;
    for (const auto& t : tracks_) {
      if (t->phase != Track::Phase::kWaiting || t->woken_ps) continue;
      const uint64_t due = std::min(t->next_event(), t->deadline_ps);
      if (due <= hw::now_ps()) {
        t->woken_ps = due;
        woke = true;
      } else {
        bound = std::min(bound, due);
      }
    }
    if (woke || hw::now_ps() >= target) break;
    advance_device_to(bound);   // stops early on news: the loop looks again
  }
  for (HostPort* port : ports_) port->set_pause_on_news(false);
  return !woke;
}

void CoSimulation::finish_call(Track& me) {
  me.phase = Track::Phase::kHost;
  me.next_event = nullptr;
  me.woken_ps.reset();
  box_changed_.notify_all();
}

template <typename Act>
auto CoSimulation::act_at(Track& me, std::unique_lock<std::mutex>& box, uint64_t at, Act&& act) {
  me.phase = Track::Phase::kActing;
  me.act_ps = at;
  using Result = std::invoke_result_t<Act&>;
  std::optional<std::conditional_t<std::is_void_v<Result>, bool, Result>> result;
  while (!result) {
    enum class Outcome { kActed, kWoke, kHeldBack } outcome = Outcome::kHeldBack;
    sim_.call([&] {
      // The device may already be past `at` when the default track acts while bound tracks run:
      // its access happens when the device is.
      me.act_ps = std::max(me.act_ps, hw::now_ps());
      if (!may_act(me, me.act_ps)) return;
      if (!advance(me.act_ps)) {
        outcome = Outcome::kWoke;
        return;
      }
      if constexpr (std::is_void_v<Result>) {
        act();
        result = true;
      } else {
        result = act();
      }
      outcome = Outcome::kActed;
    });
    if (outcome == Outcome::kActed) break;
    box_changed_.notify_all();
    if (outcome == Outcome::kHeldBack) box_changed_.wait(box);
  }
  me.clock.wait_until(me.act_ps);
  if constexpr (!std::is_void_v<Result>) return std::move(*result);
}

void CoSimulation::begin_wait(Track& me, const ReadyCheck& ready, uint64_t deadline_ps) {
  me.phase = Track::Phase::kWaiting;
  me.next_event = [&ready] { return ready().value_or(UINT64_MAX); };
  me.deadline_ps = deadline_ps;
  me.woken_ps.reset();
}

CoSimulation::Step CoSimulation::wait_step(Track& me) {
  if (me.woken_ps) return Step::kWoke;
  const uint64_t limit = horizon(me);
  const bool nobody_woke = advance(std::min(limit, std::max(hw::now_ps(), me.deadline_ps)));
  if (me.woken_ps) return Step::kWoke;
  return nobody_woke ? Step::kHeldBack : Step::kOtherWoke;
}

uint64_t CoSimulation::finish_wait(Track& me, std::unique_lock<std::mutex>& box, const std::function<void()>& on_woken) {
  while (true) {
    Step step = Step::kHeldBack;
    sim_.call([&] {
      step = wait_step(me);
      if (step == Step::kWoke && on_woken) on_woken();
    });
    if (step == Step::kWoke) break;
    box_changed_.notify_all();
    if (step == Step::kHeldBack) box_changed_.wait(box);
  }
  me.clock.wait_until(*me.woken_ps);
  return *me.woken_ps;
}

// ---------------------------------------------------------------------------------------------
// Host locks
// ---------------------------------------------------------------------------------------------

unsigned CoSimulation::create_lock() {
  std::lock_guard<std::mutex> box(box_mutex_);
  locks_.push_back(std::make_unique<HostLock>());
  return static_cast<unsigned>(locks_.size() - 1);
}

CoSimulation::HostLock& CoSimulation::host_lock(unsigned id) {
  if (id >= locks_.size()) throw std::invalid_argument("co-simulation: no host lock " + std::to_string(id));
  return *locks_[id];
}

bool CoSimulation::first_in_line(const HostLock& lock, const Track& me) const {
  for (const auto& t : tracks_) {
    if (t.get() == &me || t->phase != Track::Phase::kLocking || t->wants != &lock) continue;
    if (t->lock_request_ps < me.lock_request_ps || (t->lock_request_ps == me.lock_request_ps && t->id < me.id)) {
      return false;
    }
  }
  return true;
}

void CoSimulation::lock(unsigned id) {
  Track& me = my_track();
  const auto self = std::this_thread::get_id();
  std::unique_lock<std::mutex> box(box_mutex_);
  HostLock& lock = host_lock(id);
  if (lock.depth > 0 && lock.holder == self) {
    ++lock.depth;
    return;
  }
  // Only a thread bound to its own track is ordered; the default track may be shared.
  const bool ordered = me.holder == self;
  const uint64_t request = me.clock.now_ps();
  // A track waiting for the device may still wake before `request` and ask first: the device goes
  // there first (as for an access), so the lock is taken in causal order and a lock held for no
  // host time never moves another track's clock.
  const bool someone_may_wake = std::any_of(tracks_.begin(), tracks_.end(), [&](const auto& t) {
    return t.get() != &me && t->phase == Track::Phase::kWaiting && !t->woken_ps;
  });
  if (ordered && someone_may_wake && device_ps_ < request) {
    act_at(me, box, request, [] {});
    me.phase = Track::Phase::kHost;
  }
  if (ordered) {
    me.phase = Track::Phase::kLocking;
    me.wants = &lock;
    me.lock_request_ps = request;
  }
  const OnExit done([&] {
    if (ordered) {
      me.phase = Track::Phase::kHost;
      me.wants = nullptr;
    }
    box_changed_.notify_all();
  });
  while (lock.depth != 0 || (ordered && !(first_in_line(lock, me) && may_act(me, request)))) {
    box_changed_.notify_all();
    box_changed_.wait(box);
  }
  lock.depth = 1;
  lock.holder = self;
  lock.holder_track = &me;
  if (ordered) me.clock.wait_until(std::max(request, lock.released_ps));
}

void CoSimulation::unlock(unsigned id) {
  Track& me = my_track();
  {
    std::lock_guard<std::mutex> box(box_mutex_);
    HostLock& lock = host_lock(id);
    if (lock.depth == 0 || lock.holder != std::this_thread::get_id()) {
      throw std::logic_error("co-simulation: host lock " + std::to_string(id) + " is not held by this thread");
    }
    if (--lock.depth > 0) return;
    lock.holder = std::thread::id();
    lock.holder_track = nullptr;
    lock.released_ps = me.clock.now_ps();
  }
  box_changed_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Host accesses
// ---------------------------------------------------------------------------------------------

void CoSimulation::sync_device() {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  std::unique_lock<std::mutex> box(box_mutex_);
  HostCall call(me.clock);   // measured time moves the clock: under the box lock
  const OnExit done([&] { finish_call(me); });
  act_at(me, box, me.clock.now_ps(), [] {});
}

bool CoSimulation::step_while_away(const std::function<bool(uint64_t cap_ps)>& step) {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  std::unique_lock<std::mutex> box(box_mutex_);
  bool stepped = false;
  sim_.call([&] {
    // A waiting track wakes at its event: the device stops there for it.
    uint64_t cap = horizon(me);
    for (const auto& t : tracks_) {
      if (t->phase == Track::Phase::kWaiting && !t->woken_ps) cap = std::min({cap, t->next_event(), t->deadline_ps});
    }
    stepped = step(cap);
    device_ps_ = hw::now_ps();
  });
  box_changed_.notify_all();
  return stepped;
}

void CoSimulation::mmio_write32(HostPort& port, uint64_t device_address, uint32_t value) {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  std::unique_lock<std::mutex> box(box_mutex_);
  HostCall call(me.clock);   // measured time moves the clock: under the box lock
  const OnExit done([&] { finish_call(me); });
  const bool failed = act_at(me, box, me.clock.now_ps(), [&] {
    uint64_t ticket = port.issue(true, device_address, value, hw::now_ps());
    // Posted: the host does not wait, but a synchronous error is reported right away.
    const auto& done = port.completion(ticket);
    const bool error = done.done && done.status != tlm::TLM_OK_RESPONSE;
    port.forget(ticket);   // a write still in flight is dropped when its response arrives
    return error;
  });
  if (!failed) me.clock.charge_ns(costs_.mmio_write_ns);
  if (failed) throw std::runtime_error("MMIO write to " + hex(device_address) + " failed");
}

void CoSimulation::mmio_write_block(HostPort& port, uint64_t device_address, const void* data, uint64_t bytes) {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  if (bytes == 0) return;
  if (bytes - 1 > UINT64_MAX - device_address) {
    throw std::invalid_argument("MMIO block write to " + hex(device_address) + " of " + std::to_string(bytes) +
                                " bytes wraps around the address space");
  }
  const auto* source = static_cast<const unsigned char*>(data);
  std::unique_lock<std::mutex> box(box_mutex_);
  HostCall call(me.clock);   // measured time moves the clock: under the box lock
  const OnExit done([&] { finish_call(me); });
  const std::optional<uint64_t> failed_at = act_at(me, box, me.clock.now_ps(), [&]() -> std::optional<uint64_t> {
    const uint64_t at = hw::now_ps();
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
      tickets.emplace_back(port.issue_write(address, std::move(chunk), at), address);
      address += n;
      left -= n;
    }
    std::optional<uint64_t> first_failure;
    for (const auto& [ticket, chunk_address] : tickets) {
      const auto& done = port.completion(ticket);
      if (!first_failure && done.done && done.status != tlm::TLM_OK_RESPONSE) first_failure = chunk_address;
      port.forget(ticket);   // writes still in flight are dropped when their responses arrive
    }
    return first_failure;
  });
  if (!failed_at) me.clock.charge_ns(((bytes - 1) / kWriteCombiningBytes + 1) * costs_.mmio_write_ns);
  if (failed_at) {
    throw std::runtime_error("MMIO block write to " + hex(device_address) + " (" + std::to_string(bytes) +
                             " bytes) failed at " + hex(*failed_at));
  }
}

uint32_t CoSimulation::mmio_read32(HostPort& port, uint64_t device_address) {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  std::unique_lock<std::mutex> box(box_mutex_);
  HostCall call(me.clock);   // measured time moves the clock: under the box lock
  const OnExit done([&] { finish_call(me); });
  uint64_t ticket = 0;
  HostPort::Completion result;
  // The host waits for the data; a device that never answers ends the read with a completion
  // timeout, as a PCIe root port does.
  const ReadyCheck answered = [&]() -> std::optional<uint64_t> {
    const auto& answer = port.completion(ticket);
    return answer.done ? std::optional<uint64_t>(answer.at_ps) : std::nullopt;
  };
  const auto take = [&] {
    result = port.completion(ticket);
    port.forget(ticket);
  };
  bool woke = false;
  // Issue and wait in one hand-off to the simulation thread when nothing holds the device back.
  act_at(me, box, me.clock.now_ps(), [&] {
    ticket = port.issue(false, device_address, 0, hw::now_ps());
    begin_wait(me, answered, hw::now_ps() + kCompletionTimeoutPs);
    if (wait_step(me) == Step::kWoke) {
      take();
      woke = true;
    }
  });
  if (woke) {
    me.clock.wait_until(*me.woken_ps);
  } else {
    finish_wait(me, box, take);
  }
  me.clock.charge_ns(costs_.mmio_read_ns);
  if (!result.done) throw std::runtime_error("MMIO read from " + hex(device_address) + ": completion timeout");
  if (result.status != tlm::TLM_OK_RESPONSE) throw std::runtime_error("MMIO read from " + hex(device_address) + " failed");
  return result.value;
}

bool CoSimulation::await_interrupt(HostPort& port, uint64_t timeout_ps) {
  return interrupt_wait(port, timeout_ps, false).has_value();
}

std::optional<uint32_t> CoSimulation::wait_for_interrupt(HostPort& port, uint64_t timeout_ps, uint64_t* arrived_ps) {
  return interrupt_wait(port, timeout_ps, true, arrived_ps);
}

std::optional<uint32_t> CoSimulation::interrupt_wait(HostPort& port, uint64_t timeout_ps, bool take,
                                                     uint64_t* arrived_ps) {
  Track& me = my_track();
  std::lock_guard<std::recursive_mutex> calls(me.calls);
  std::unique_lock<std::mutex> box(box_mutex_);
  HostCall call(me.clock);   // measured time moves the clock: under the box lock
  const OnExit done([&] { finish_call(me); });
  const uint64_t now = me.clock.now_ps();
  // The vector of the interrupt due by host time `by` (one that arrived before the host started
  // waiting counts from now).
  const auto due_by = [&](uint64_t by) -> std::optional<uint32_t> {
    const HostPort::Interrupt* first = port.earliest_interrupt();
    if (first == nullptr || std::max(first->at_ps, now) > by) return std::nullopt;
    return first->vector;
  };
  std::optional<uint32_t> vector;
  if (timeout_ps == 0 && device_ps_ >= now) {
    // A poll with the device already there: what is pending is all there is, and the port's
    // interrupts change only while the device runs (under the box lock), so no hand-off is needed.
    vector = due_by(now);
  } else {
    const uint64_t deadline = timeout_ps > UINT64_MAX - now ? UINT64_MAX : now + timeout_ps;
    const ReadyCheck arrived = [&]() -> std::optional<uint64_t> {
      const HostPort::Interrupt* first = port.earliest_interrupt();
      return first != nullptr ? std::optional<uint64_t>(std::max(first->at_ps, now)) : std::nullopt;
    };
    begin_wait(me, arrived, deadline);
    finish_wait(me, box, [&] { vector = due_by(*me.woken_ps); });
  }
  // The box lock has been held since the interrupt was seen: it is still the earliest.
  if (vector && take) {
    const HostPort::Interrupt taken = port.take_earliest_interrupt();
    if (arrived_ps != nullptr) *arrived_ps = taken.at_ps;
    me.clock.charge_ns(costs_.irq_latency_ns);
  }
  return vector;
}

}  // namespace hpusim::cosim
