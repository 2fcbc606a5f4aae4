// The co-simulation loop: one timeline for host and device.
//
// Host code calls in from any thread; all SystemC work runs on the simulation thread. Each host
// access is stamped with host time; the device is first advanced to that time, then the access is
// delivered. When the host waits (for an interrupt or a read), the device runs until the awaited
// event, and host time jumps to it (plus the interrupt latency for interrupts). The device never
// runs ahead of the host except while the host waits.
//
// Host time has one track per host thread that asks for one (add_track + bind_thread); threads
// that do not share the default track. Bound tracks are kept in step conservatively: the device
// is never advanced past the time of a bound track that is running host code, and accesses of
// different tracks at the same time go in track order, so with modeled host time the result does
// not depend on how the threads were scheduled.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "sim/cosim/device_runner.h"
#include "sim/cosim/host_clock.h"
#include "sim/cosim/host_port.h"
#include "sim/cosim/sim_thread.h"

namespace hpusim::cosim {

// The host's costs the loop charges itself (the preset's host table: mmio_write_ns, mmio_read_ns,
// irq_latency_ns; the platform fills them in).
struct HostCostsNs {
  uint64_t mmio_write_ns = 0;      // per posted write; block writes pay it per 64 bytes
  uint64_t mmio_read_ns = 0;       // host-side cost on top of the modelled round trip
  uint64_t irq_latency_ns = 0;
};

class CoSimulation {
 public:
  CoSimulation(HostTimeSource source, const HostCostsNs& costs);
  ~CoSimulation();

  // Runs `work` on the simulation thread (elaboration, model queries).
  template <typename Work>
  auto on_sim_thread(Work&& work) {
    return sim_.call(std::forward<Work>(work));
  }

  // Connects a card's host port (one per card, in card order); call after elaboration. The
  // accessors without a port use the first one.
  void attach(HostPort& port);

  // --- host tracks ---
  static constexpr unsigned kDefaultTrack = 0;
  // A new track named `name` ("card 1 workload"), starting at the calling thread's host time or
  // at `start_ps`, whichever is later; returns its id. From now on it holds the device back at
  // its time until a thread bound to it moves on or lets it go (unbind_thread): reserve the
  // tracks of threads that are to run together before any of them starts.
  unsigned add_track(const std::string& name, uint64_t start_ps = 0);
  // Binds the calling thread to track `id` until unbind_thread (or the thread binds another).
  // A track holds the device back while its thread runs host code: a bound thread must unbind
  // before it blocks on anything but the simulator (joining a thread, a lock another bound
  // thread holds). Throws std::invalid_argument for an unknown id or a track another thread
  // holds.
  void bind_thread(unsigned id);
  // Lets the calling thread's track go: it no longer holds the device back.
  void unbind_thread();
  unsigned current_track();
  const std::string& track_name(unsigned id);
  uint64_t track_now_ps(unsigned id);

  // --- host locks ---
  // Locks host threads take in host-time order: a request at host time t is granted once no other
  // track may still act before t, to the earliest request (ties in track order), at t or when the
  // holder lets go, whichever is later (the waiter's clock moves there). Which thread gets a lock
  // therefore never depends on how the threads were scheduled, and a track waiting for a lock
  // holds the device back no more than the lock's holder does (not at all while the holder waits
  // for the device). Recursive for the thread holding it. Threads on the default track take a
  // free lock without ordering. unlock by a thread that does not hold it throws std::logic_error.
  unsigned create_lock();
  void lock(unsigned id);
  void unlock(unsigned id);

  HostTimeSource time_source() const { return source_; }
  // The calling thread's host time.
  uint64_t host_now_ps();
  uint64_t device_now_ps();

  // Host work charged to the calling thread's modeled clock.
  void charge_ns(uint64_t ns);
  // The calling thread was blocked (on other host threads) until `ps` of host time.
  void host_wait_until(uint64_t ps);

  // MMIO through a card's PCIe link. A write is posted; a read blocks until its data returns.
  // Both throw std::runtime_error if the device answers with an error response.
  void mmio_write32(HostPort& port, uint64_t device_address, uint32_t value);
  uint32_t mmio_read32(HostPort& port, uint64_t device_address);
  void mmio_write32(uint64_t device_address, uint32_t value) { mmio_write32(first_port(), device_address, value); }
  uint32_t mmio_read32(uint64_t device_address) { return mmio_read32(first_port(), device_address); }

  // A block of posted writes (memcpy_toio through a BAR): `bytes` bytes from `data` to
  // [device_address, device_address + bytes). They leave as writes of at most kBlockWriteBytes,
  // cut at kBlockWriteBytes-aligned addresses (the first and last may be shorter), all reaching
  // the link at the current host time in one hand-off to the simulation thread; the data is
  // copied, so the caller's buffer may go away on return. The host pays mmio_write_ns per
  // 64 bytes, rounded up (write-combining: the CPU streams the block in 64-byte lines, each
  // costing about one posted write). Zero bytes do nothing. If any write is answered with an
  // error at once, throws std::runtime_error naming the block and the failing address (the other
  // writes still go out, and the host is not charged, as in mmio_write32).
  static constexpr uint64_t kBlockWriteBytes = 128;
  static constexpr uint64_t kWriteCombiningBytes = 64;
  void mmio_write_block(HostPort& port, uint64_t device_address, const void* data, uint64_t bytes);
  void mmio_write_block(uint64_t device_address, const void* data, uint64_t bytes) {
    mmio_write_block(first_port(), device_address, data, bytes);
  }

  // Blocks until an MSI of the card behind `port` reaches the host or `timeout_ps` of host time
  // passes; returns the vector.
  // `arrived_ps` (may be null) gets when the MSI taken reached the host, on the device's clock.
  std::optional<uint32_t> wait_for_interrupt(HostPort& port, uint64_t timeout_ps, uint64_t* arrived_ps = nullptr);
  std::optional<uint32_t> wait_for_interrupt(uint64_t timeout_ps) { return wait_for_interrupt(first_port(), timeout_ps); }

  // Blocks until an MSI of the card behind `port` is waiting to be taken, or `timeout_ps` of host
  // time passes; true if one is. It takes nothing: every thread waiting on the port wakes, and
  // whoever takes it (wait_for_interrupt) pays the interrupt latency.
  bool await_interrupt(HostPort& port, uint64_t timeout_ps);
  bool await_interrupt(uint64_t timeout_ps) { return await_interrupt(first_port(), timeout_ps); }

  // Lets the device run until host time (no-op if it is already there).
  void sync_device();

  // The calling thread's host is away (in a collective call of its program, sim/distributed):
  // `step` runs on the simulation thread with the latest time the device may reach for the other
  // tracks (UINT64_MAX: no limit), and moves it no further than that. Returns what `step` did.
  bool step_while_away(const std::function<bool(uint64_t cap_ps)>& step);

  // From now on the device moves forward through `runner` (nullptr: sc_start itself); it must
  // outlive its use. Call on the simulation thread or while no host thread uses the loop.
  void set_device_runner(DeviceRunner* runner) { runner_ = runner; }

 private:
  struct Track;
  struct HostLock;
  // What a waiting track waits for, checked on the simulation thread: the host time it resumes
  // at once it has happened.
  using ReadyCheck = std::function<std::optional<uint64_t>()>;

  HostPort& first_port();
  Track& my_track();
  // The device at `at` on behalf of `me`, when no other track may still act before it; then
  // `act` runs on the simulation thread. Returns with the box lock held.
  template <typename Act>
  auto act_at(Track& me, std::unique_lock<std::mutex>& box, uint64_t at, Act&& act);
  // `me` waits from now on until `ready` says its event happened or the device reaches
  // `deadline_ps`. wait_step (simulation thread) runs the device for it as far as the other
  // tracks allow; finish_wait sleeps and steps until it woke, runs `on_woken` on the simulation
  // thread in the step that woke it, and returns the time `me` resumes at.
  enum class Step { kWoke, kOtherWoke, kHeldBack };
  void begin_wait(Track& me, const ReadyCheck& ready, uint64_t deadline_ps);
  Step wait_step(Track& me);
  uint64_t finish_wait(Track& me, std::unique_lock<std::mutex>& box, const std::function<void()>& on_woken);
  // The earliest time another track may still act at (UINT64_MAX: none), and whether `me` may
  // act at `at` before it (ties go to the lower track id).
  uint64_t horizon(const Track& me) const;
  bool may_act(const Track& me, uint64_t at) const;
  // The earliest time track `t` may still act at as `me` sees it, if it holds the device back at
  // all (a track waiting for a lock `me` holds does not hold `me` back).
  std::optional<uint64_t> holds_back_at(const Track& t, const Track& me, size_t depth = 0) const;
  HostLock& host_lock(unsigned id);
  bool first_in_line(const HostLock& lock, const Track& me) const;
  // Simulation thread: advances the device towards `target`, pausing when a port has news; a
  // waiting track whose event happened is marked woken. Returns false if a track woke.
  bool advance(uint64_t target);
  // Simulation thread only: towards `ps`; it may stop short (DeviceRunner), advance() looks again.
  void advance_device_to(uint64_t ps);
  void finish_call(Track& me);
  // wait_for_interrupt (take) and await_interrupt (look only).
  std::optional<uint32_t> interrupt_wait(HostPort& port, uint64_t timeout_ps, bool take, uint64_t* arrived_ps = nullptr);

  SimThread sim_;
  HostTimeSource source_;
  HostCostsNs costs_;
  std::vector<HostPort*> ports_;
  std::mutex box_mutex_;                 // track phases, the device's progress
  std::condition_variable box_changed_;
  std::vector<std::unique_ptr<Track>> tracks_;   // [0]: the default track
  std::vector<std::unique_ptr<HostLock>> locks_;   // under the box mutex
  uint64_t device_ps_ = 0;   // the device's time after its last run (under the box mutex)
  DeviceRunner* runner_ = nullptr;
};

}  // namespace hpusim::cosim
