// The C API's session: one per process, under one mutex, holding the acquired device, the
// runtime, the caching compiler and every stream, event, recipe and host buffer handle, and the
// helpers the entry points share (device_api.cpp: lifecycle, devices, streams, events, memory;
// launch_api.cpp: compile, launch, recipes, extensions).
#pragma once

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
struct RecipeObject {
  std::shared_ptr<const recipe::Recipe> recipe;
  std::shared_ptr<rt::LoadedRecipe> loaded;   // on the first launch
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

struct Session {
  std::mutex mutex;
  std::string trace_path;                            // hpusim_traceToFile
  hpusim::traces::Timeline* timeline = nullptr;      // the platform's, when the run is traced
  std::vector<PendingSpan> pending_spans;
  bool initialized = false;
  int fd = -1;                                       // the device file, while a device is acquired
  bool acquired() const { return fd >= 0; }
  std::unique_ptr<rt::Runtime> runtime;
  std::unique_ptr<compiler::CachingCompiler> compiler;
  std::map<uint64_t, Stream> streams;
  std::map<uint64_t, Event> events;
  std::map<uint64_t, RecipeObject> recipes;
  // Recipes stay loaded (program image on the device, command buffers mapped) while the device
  // is acquired, by graph hash and target: a recompile that hits the cache launches at once.
  std::map<std::pair<uint64_t, std::string>, std::shared_ptr<rt::LoadedRecipe>> loaded;
  std::map<const void*, HostBuffer> host_buffers;
  uint64_t last_launch_seq = 0;
  hpusim_LaunchCounters launch_counters{};
};


Session& session();

// Runs the body under the session lock.
template <class Body>
synStatus locked(const char* function, Body body) {
  return guard(function, [&] {
    std::lock_guard<std::mutex> lock(session().mutex);
    return body(session());
  });
}

synStatus need_init(const char* function);
synStatus need_device(Session& s, const char* function, synDeviceId id);
synStatus acquire(Session& s, synDeviceId* id, const std::string& preset, const std::string& overrides);
void release_device(Session& s);
// Host work charged to the host clock (the platform models its cost).
void charge(Session& s, hpusim::platform::HostWork work, uint64_t count = 1);
// A slice on the "host: synapse" track from `start_ps` to now; returns the flow id it starts
// (0 without a timeline or when `with_flow` is false).
uint64_t host_span(Session& s, const std::string& name, uint64_t start_ps, bool with_flow = false);
// Puts the device spans of completed launches on the timeline (submission to completion), each
// ending the flow from its host launch slice.
void flush_spans(Session& s, bool wait_all);
Stream* find_stream(Session& s, synStreamHandle h);
Event* find_event(Session& s, synEventHandle h);
RecipeObject* find_recipe(Session& s, synRecipeHandle h);
// Checks the handle and settles the waits the stream owes before its next submission.
synStatus stream_checks(Session& s, Stream*& stream, synStreamHandle handle, const char* function);
QueueId queue_of(synStreamType type);
synStatus create_stream(synStreamHandle* stream, synDeviceId id, QueueId queue, uint32_t flags, const char* function);

}  // namespace hpusim::synapse::api
