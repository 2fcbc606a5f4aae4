// The C API's session: one per process. It holds the caching compiler, the recipe handles and
// the devices of the box (0 .. N-1); each acquired device holds its descriptor, runtime, streams,
// events, loaded recipes and host buffers. Locks: the session's mutex guards its tables and is
// never held while a device is waited for; each device's lock serialises the calls on that device
// but is let go while the host waits for the device (Device::wait), so threads driving different
// devices never wait for each other, and threads on one device only for each other's host work. The
// helpers here are shared by device_api.cpp (lifecycle, devices, streams, events, memory) and
// launch_api.cpp (compile, launch, recipes, extensions).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sim/platform/host_services.h"
#include "synapse/api/api_support.h"
#include "synapse/compiler/caching_compiler.h"
#include "synapse/runtime/runtime.h"
#include "synapse_api.h"
#include "traces/timeline.h"

namespace hpusim::synapse::api {

namespace rt = hpusim::synapse::runtime;
using hpusim::regs::QueueId;

// The most cards a box holds (sim/platform's kMaxCards).
inline constexpr unsigned kMaxDevices = 16;

struct Stream {
  QueueId queue = QueueId::DMA_0_0;
  uint64_t last_seq = 0;
  // Events the stream waits for (synStreamWaitEvent): the device orders the stream's next
  // submission after them; their submissions are kept for synStreamQuery and synchronize.
  std::vector<uint64_t> waits;
};
struct Event {
  uint32_t flags = 0;
  bool recorded = false;
  uint64_t seq = 0;              // 0: recorded on an idle stream
  uint64_t recorded_ps = 0;      // host time of the record (the time of an idle-stream event)
  std::optional<rt::Runtime::Signal> signal;   // the device-side point streams wait on
};
struct HostBuffer {
  uint64_t bytes = 0;
  uint64_t device_va = 0;
  bool owned = false;            // synHostMalloc'd (freed by synHostFree)
};

// A launch whose device span is not on the timeline yet (its completion time is not known).
struct PendingSpan {
  uint64_t seq = 0;
  uint64_t submit_ps = 0;
  uint64_t flow = 0;
  std::string name;
};

// The session's and each device's lock (BasicLockable): a host lock of the running platform,
// granted in host-time order, so which thread goes first never depends on the OS's scheduling;
// a plain mutex while the process has no platform (before the first acquire, after it is gone).
class HostLock {
 public:
  void lock();
  void unlock();

 private:
  std::mutex setup_;                                 // host_ and id_
  hpusim::platform::HostServices* host_ = nullptr;   // the platform id_ is a lock of
  unsigned id_ = 0;
  std::mutex fallback_;        // held by every holder (see lock())
  bool on_fallback_ = false;   // how the holder locked it
};

// One acquired device. Everything here is used under `mutex`.
struct Device {
  explicit Device(synDeviceId device_id) : id(device_id) {}
  HostLock mutex;
  const synDeviceId id;
  int fd = -1;                                       // -1 once released
  std::unique_ptr<rt::Runtime> runtime;
  hpusim::traces::Timeline* timeline = nullptr;      // the platform's, when the run is traced
  std::vector<PendingSpan> pending_spans;
  uint64_t launch_span_end_ns = 0;   // where the last launch span written ends
  std::map<uint64_t, Stream> streams;
  std::map<uint64_t, Event> events;
  // Recipes stay loaded (program image on the device, command buffers mapped) while the device
  // is acquired, by graph hash and target: a recompile that hits the cache launches at once.
  std::map<std::pair<uint64_t, std::string>, std::shared_ptr<rt::LoadedRecipe>> loaded;
  bool tracing() const { return timeline != nullptr && timeline->enabled(); }
  // The name a framework last compiled each graph hash under (synGraphCompile's recipeName), for
  // the timeline's launch slices.
  std::map<uint64_t, std::string> graph_names;
  std::map<const void*, HostBuffer> host_buffers;
  uint64_t last_launch_seq = 0;
  hpusim_LaunchCounters launch_counters{};
  // Waits for submission `seq` with the lock let go (the caller holds it once): other threads use
  // the device meanwhile. synNoDeviceFound if the device was released while it waited.
  rt::Result wait(uint64_t seq);
  // Its slices on the timeline: "host: synapse" / "api" and "device: recipes" / "launches" for
  // device 0, with " device<i>" after the track name for the others.
  std::string track_name(const char* base) const;
};

struct Session {
  HostLock mutex;                                    // the tables below, never held while waiting
  std::string trace_path;                            // hpusim_traceToFile
  bool initialized = false;
  std::unique_ptr<compiler::CachingCompiler> compiler;
  std::map<uint64_t, std::shared_ptr<const recipe::Recipe>> recipes;
  std::array<std::shared_ptr<Device>, kMaxDevices> devices;   // the acquired ones
  // The device each stream and event handle lives on.
  std::map<uint64_t, synDeviceId> owners;
  // The device of the last launch (hpusim_lastLaunch*), if any.
  std::optional<synDeviceId> last_launch_device;
  // Launch counters of devices released since synInitialize (hpusim_launchCounters sums them
  // with the acquired devices').
  hpusim_LaunchCounters released_launch_counters{};
  bool any_acquired() const;
};

Session& session();

// Runs body(Session&) under the session lock.
template <class Body>
synStatus locked(const char* function, Body body) {
  return guard(function, [&] {
    std::lock_guard<HostLock> lock(session().mutex);
    return body(session());
  });
}

synStatus need_init(const char* function);
// The acquired device `id`, looked up under the session lock (which the caller holds); a
// failure status (naming `function`) when the session is not initialized or `id` is not acquired.
synStatus find_device(Session& s, const char* function, synDeviceId id, std::shared_ptr<Device>* device);

// Runs body(Device&) under device `id`'s lock, not the session's.
template <class Body>
synStatus on_device(const char* function, synDeviceId id, Body body) {
  return guard(function, [&] {
    std::shared_ptr<Device> device;
    {
      std::lock_guard<HostLock> lock(session().mutex);
      if (const synStatus st = find_device(session(), function, id, &device); st != synSuccess) return st;
    }
    std::lock_guard<HostLock> lock(device->mutex);
    if (device->fd < 0) return fail(synNoDeviceFound, std::string(function) + ": device " + std::to_string(id) + " was released");
    return body(*device);
  });
}

// The device a stream or event handle lives on (under the session lock, which the caller holds);
// nullptr if the handle is not a live one of that kind.
std::shared_ptr<Device> owner_of(Session& s, uint64_t handle_key);

// Runs body(Device&, Object&) under the lock of the device a stream or event handle lives on;
// `kind` ("stream", "event") names it in the error for a handle that is not a live one.
template <class Handle, class Object, class Body>
synStatus on_handle(const char* function, Handle handle, std::map<uint64_t, Object> Device::*table, const char* kind,
                    Body body) {
  return guard(function, [&] {
    std::shared_ptr<Device> device;
    {
      std::lock_guard<HostLock> lock(session().mutex);
      if (!session().initialized) return need_init(function);
      device = owner_of(session(), key_of(handle));
    }
    if (device) {
      std::lock_guard<HostLock> lock(device->mutex);
      auto it = ((*device).*table).find(key_of(handle));
      if (device->fd >= 0 && it != ((*device).*table).end()) return body(*device, it->second);
    }
    return fail(synInvalidArgument, std::string(function) + (handle ? ": not a live " : ": ") + kind +
                                         (handle ? " handle" : " is NULL"));
  });
}
template <class Body>
synStatus on_stream(const char* function, synStreamHandle handle, Body body) {
  return on_handle(function, handle, &Device::streams, "stream", body);
}
template <class Body>
synStatus on_event(const char* function, synEventHandle handle, Body body) {
  return on_handle(function, handle, &Device::events, "event", body);
}

// The number of cards: the running platform's, else what HPUSIM_CARDS asks for (1 when unset).
// A bad HPUSIM_CARDS is an error naming it.
synStatus device_count(const char* function, unsigned* count);
// Acquires the first device of the box not acquired yet (bringing the platform up for
// preset / overrides / HPUSIM_CARDS first). Opening it waits for the driver: without the
// session lock.
synStatus acquire(const char* function, synDeviceId* id, const std::string& preset, const std::string& overrides);
// Takes device `id` out of the session (the caller holds the session lock) and returns it for
// release_device, which the caller runs under the device's lock only.
std::shared_ptr<Device> detach_device(Session& s, synDeviceId id);
void release_device(Device& d);
// Host work charged to the calling thread's host clock (the platform models its cost).
void charge(hpusim::platform::HostWork work, uint64_t count = 1);
// A slice on the device's "host: synapse" track from `start_ps` to now. With `with_flow`, the slice
// starts the flow the driver made for the CS this thread submitted last (the launch's); returns it
// (0 without a timeline or when `with_flow` is false).
uint64_t host_span(Device& d, const std::string& name, uint64_t start_ps, bool with_flow = false,
                   std::vector<hpusim::traces::Arg> args = {});
// Puts the device spans of completed launches on the timeline (the submission's return, its
// doorbells rung, to the completion MSI), each on the flow from its host launch slice to the
// completion.
void flush_spans(Device& d, bool wait_all);
QueueId queue_of(synStreamType type);
synStatus create_stream(synStreamHandle* stream, synDeviceId id, QueueId queue, uint32_t flags, const char* function);

}  // namespace hpusim::synapse::api
