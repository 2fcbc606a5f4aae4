// The simulated card as the bridge sees it: one Synapse device, acquired at first use through the
// Synapse C API (the preset from HPUSIM_PRESET / HPUSIM_SET, as for any C API program), a stream
// for the bridge's copies and launches, and Synapse failures turned into exceptions that name them. No libtorch
// here: the device's allocator, guard and ops (hpu_device.cpp, hpu_ops.cpp) build on it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "synapse_api.h"

namespace hpusim::bridge {

// A Synapse call that failed: the function, its status and the layer's message.
class SynapseError : public std::runtime_error {
 public:
  SynapseError(const std::string& what, synStatus status);
  synStatus status() const { return status_; }

 private:
  synStatus status_;
};

// Work for a card already released.
class CardReleased : public std::runtime_error {
 public:
  CardReleased();
};

// Device memory was exhausted: the request and what the card has.
class DeviceOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Card {
 public:
  // The process's card (device 0 of the box), acquired on first use. Throws SynapseError.
  static Card& get();
  // Whether get() has acquired the card.
  static bool acquired();
  // Whether a card can be acquired, without acquiring it (the box's card count).
  static uint32_t count();

  synDeviceId id() const { return id_; }
  // The stream the calling thread's copies and launches go to (so the device keeps their order):
  // its current stream (torch.hpu.stream / set_stream), the card's default stream unless set.
  synStreamHandle stream() const;
  synStreamHandle default_stream() const { return stream_; }
  // nullptr: the default stream again.
  static void set_current_stream(synStreamHandle stream);

  // torch.hpu.Stream and Event: Synapse streams and events of the card.
  synStreamHandle create_stream();
  void destroy_stream(synStreamHandle stream);
  void synchronize_stream(synStreamHandle stream);   // the wait counted as host waiting
  bool stream_done(synStreamHandle stream);
  void stream_wait_event(synStreamHandle stream, synEventHandle event);
  synEventHandle create_event(bool timing);
  void destroy_event(synEventHandle event);
  void record_event(synEventHandle event, synStreamHandle stream);
  void synchronize_event(synEventHandle event);
  bool event_done(synEventHandle event);
  // Milliseconds between two recorded events created with timing (their completion stamps).
  double elapsed_ms(synEventHandle start, synEventHandle end);
  // Device memory: an address of `bytes` bytes; DeviceOutOfMemory when the card has no room.
  uint64_t allocate(uint64_t bytes);
  void release(uint64_t address);
  // Copies through the card's DMA engines, synchronous for the host.
  void to_device(const void* host, uint64_t device, uint64_t bytes);
  void to_host(uint64_t device, void* host, uint64_t bytes);
  void on_device(uint64_t source, uint64_t destination, uint64_t bytes);
  // The same copy enqueued on `stream`, the host going on.
  void enqueue_on_device(synStreamHandle stream, uint64_t source, uint64_t destination, uint64_t bytes);
  void synchronize();
  // Host time (ns, the calling threads' modeled clocks) spent waiting for the card in the
  // bridge's synchronisations, and the card's busy time (hpusim_deviceBusyNs).
  uint64_t host_wait_ns() const { return wait_ns_.load(); }
  uint64_t device_busy_ns();
  // Host work of the bridge charged to this thread's (modeled) host clock, a slice `what` on the
  // timeline's "host: framework" track.
  void host_work(hpusim_HostWork work, uint64_t count, const char* what);
  // While one lives on a thread, its copies are a CPU fallback's (named so on the timeline).
  class FallbackScope {
   public:
    FallbackScope() { ++depth(); }
    ~FallbackScope() { --depth(); }
    FallbackScope(const FallbackScope&) = delete;
    FallbackScope& operator=(const FallbackScope&) = delete;
    static int& depth() {
      static thread_local int d = 0;
      return d;
    }
  };
  // A slice `name` on the timeline's framework track from host time `start_ns` to now.
  void trace_span(const char* name, uint64_t start_ns);
  uint64_t host_now_ns();
  // Releases the card (the timeline is written if HPUSIM_TRACE named a file); later calls fail.
  void close();
  // (free, total) bytes of device memory.
  std::pair<uint64_t, uint64_t> memory_info();

 private:
  Card();
  void check(synStatus status, const char* what);
  void wait_for_stream(const char* span);   // synStreamSynchronize, the wait counted
  // A Synapse call that waits for the card, its host time counted as waiting and a slice `span`
  // on the timeline's framework track.
  template <class Wait>
  void wait(Wait wait_call, const char* what, const char* span);
  // A query's answer: false while busy; other failures throw.
  bool done(synStatus query_status, const char* what);

  std::mutex mutex_;   // copies: one at a time
  synDeviceId id_ = 0;
  synStreamHandle stream_ = nullptr;
  bool closed_ = false;
  std::atomic<uint64_t> wait_ns_{0};
};

}  // namespace hpusim::bridge
