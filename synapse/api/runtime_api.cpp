// The C API's lifecycle, device, stream, event, memory, compile, launch and recipe entry points
// over the runtime (synapse/runtime) and the caching compiler. One session per process, under one
// mutex; handles are numbers from one counter, never reused.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "driver/device.h"
#include "traces/timeline.h"
#include "synapse/api/api_support.h"
#include "synapse/compiler/caching_compiler.h"
#include "synapse/recipe/recipe_file.h"
#include "synapse/recipe_cache/disk_cache_config.h"
#include "synapse/runtime/runtime.h"
#include "synapse_api.h"

namespace {

namespace api = hpusim::synapse::api;
namespace rt = hpusim::synapse::runtime;
namespace compiler = hpusim::synapse::compiler;
namespace recipe = hpusim::synapse::recipe;
using api::fail;
using api::finish;
using api::succeed;
using hpusim::regs::QueueId;

struct Stream {
  QueueId queue = QueueId::DMA_0_0;
  uint64_t last_seq = 0;
  std::vector<uint64_t> waits;   // event submissions later work on this stream must follow
};
struct Event {
  uint32_t flags = 0;
  bool recorded = false;
  uint64_t seq = 0;              // 0: recorded on an idle stream
  uint64_t recorded_ps = 0;      // host time of the record (the time of an idle-stream event)
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
  hpusim::cosim::HostTimeSource host_time = hpusim::cosim::HostTimeSource::kModeled;
  std::unique_ptr<hpusim::traces::Timeline> timeline;
  std::vector<PendingSpan> pending_spans;
  bool initialized = false;
  uint64_t next_handle = 1;
  std::unique_ptr<hpusim::driver::HlDevice> device;
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

Session& session() {
  static Session s;
  return s;
}

using hpusim::synapse::api::handle_of;
using hpusim::synapse::api::key_of;

// Runs the body under the session lock.
template <class Body>
synStatus locked(const char* function, Body body) {
  return api::guard(function, [&] {
    std::lock_guard<std::mutex> lock(session().mutex);
    return body(session());
  });
}

synStatus need_init(const char* function) {
  return fail(synObjectNotInitialized, std::string(function) + ": synInitialize has not been called");
}

synStatus need_device(Session& s, const char* function, synDeviceId id) {
  if (!s.initialized) return need_init(function);
  if (!s.device) return fail(synNoDeviceFound, std::string(function) + ": no device is acquired");
  if (id != 0) return fail(synInvalidArgument, std::string(function) + ": device " + std::to_string(id) + " does not exist (only 0)");
  return synSuccess;
}

synStatus acquire(Session& s, synDeviceId* id, const std::string& preset, const std::string& overrides) {
  if (!s.initialized) return need_init("synDeviceAcquire");
  if (!id) return fail(synInvalidArgument, "synDeviceAcquire: deviceId is NULL");
  if (s.device) return fail(synDeviceAlreadyAcquired, "synDeviceAcquire: device 0 is already acquired");
  hpusim::driver::HlDeviceOptions options;
  options.preset = preset;
  options.time_source = s.host_time;
  // A launch may run for tens of ms of device time (a BERT layer step: ~30 ms); the driver's
  // default TDR of 20 ms suits its own tests, not whole training steps. 10 s of host time.
  options.cs_timeout_us = 10'000'000;
  if (!s.trace_path.empty()) {
    s.timeline = std::make_unique<hpusim::traces::Timeline>();
    options.timeline = s.timeline.get();
  }
  std::stringstream list(overrides);
  for (std::string item; std::getline(list, item, ';');) {
    if (!item.empty()) options.overrides.push_back(item);
  }
  try {
    s.device = std::make_unique<hpusim::driver::HlDevice>(options);
    s.runtime = std::make_unique<rt::Runtime>(*s.device);
  } catch (const std::exception& e) {
    s.runtime.reset();
    s.device.reset();
    return fail(synNoDeviceFound, std::string("synDeviceAcquire: the card could not be built: ") + e.what());
  }
  *id = 0;
  return succeed();
}

void flush_spans(Session& s, bool wait_all);

void release_device(Session& s) {
  flush_spans(s, true);
  for (auto& [key, r] : s.recipes) r.loaded.reset();
  for (auto& [key, loaded] : s.loaded) s.runtime->unload(*loaded);
  s.loaded.clear();
  for (auto& [pointer, buffer] : s.host_buffers) {
    s.device->unmap_host(buffer.device_va);
    if (buffer.owned) std::free(const_cast<void*>(pointer));
  }
  s.host_buffers.clear();
  s.streams.clear();
  s.events.clear();
  s.runtime.reset();
  s.device.reset();
  if (s.timeline) {
    std::lock_guard<std::mutex> lock(s.timeline->mutex());
    const bool json = s.trace_path.size() > 5 && s.trace_path.compare(s.trace_path.size() - 5, 5, ".json") == 0;
    if (json) {
      s.timeline->writer().write_chrome_json(s.trace_path);
    } else {
      s.timeline->writer().write_perfetto(s.trace_path);
    }
  }
  s.timeline.reset();
}

// Host work charged to the modeled host clock (the preset's host cost table).
void charge(Session& s, uint64_t ns) {
  if (ns != 0) s.device->cosim().charge_ns(ns);
}
const hpusim::preset::HostCosts& costs(Session& s) { return s.device->preset().host(); }

// A slice on the "host: synapse" track from `start_ps` to now; returns the flow id it starts
// (0 without a timeline or when `with_flow` is false).
uint64_t host_span(Session& s, const std::string& name, uint64_t start_ps, bool with_flow = false) {
  if (!s.timeline) return 0;
  const uint64_t end_ps = s.runtime->host_now_ps();
  std::lock_guard<std::mutex> lock(s.timeline->mutex());
  auto& w = s.timeline->writer();
  const uint64_t flow = with_flow ? w.new_flow_id() : 0;
  const auto track = s.timeline->track(s.timeline->process("host: synapse"), "api");
  w.complete_slice(track, start_ps / 1000, std::max(end_ps / 1000, start_ps / 1000 + 1), name, {},
                   flow ? std::vector<hpusim::traces::FlowId>{flow} : std::vector<hpusim::traces::FlowId>{});
  return flow;
}

// Puts the device spans of completed launches on the timeline (submission to completion), each
// ending the flow from its host launch slice.
void flush_spans(Session& s, bool wait_all) {
  if (!s.timeline) return;
  std::vector<PendingSpan> still;
  for (const PendingSpan& p : s.pending_spans) {
    if (wait_all) s.runtime->wait(p.seq);
    uint64_t done_ps = 0;
    if (!s.runtime->completed(p.seq) || !s.runtime->completion_time_ps(p.seq, &done_ps).ok()) {
      still.push_back(p);
      continue;
    }
    std::lock_guard<std::mutex> lock(s.timeline->mutex());
    const auto track = s.timeline->track(s.timeline->process("device: recipes"), "launches");
    s.timeline->writer().complete_slice(track, p.submit_ps / 1000, std::max(done_ps / 1000, p.submit_ps / 1000 + 1),
                                        p.name, {}, {}, {p.flow});
  }
  s.pending_spans = std::move(still);
}

Stream* find_stream(Session& s, synStreamHandle h) {
  auto it = s.streams.find(key_of(h));
  return it == s.streams.end() ? nullptr : &it->second;
}
Event* find_event(Session& s, synEventHandle h) {
  auto it = s.events.find(key_of(h));
  return it == s.events.end() ? nullptr : &it->second;
}
RecipeObject* find_recipe(Session& s, synRecipeHandle h) {
  auto it = s.recipes.find(key_of(h));
  return it == s.recipes.end() ? nullptr : &it->second;
}

// The waits a stream owes before its next submission (synStreamWaitEvent).
synStatus settle_waits(Session& s, Stream& stream, const char* function) {
  for (uint64_t seq : stream.waits) {
    if (const auto r = s.runtime->wait(seq); !r.ok()) return fail(synFail, std::string(function) + ": " + r.message);
  }
  stream.waits.clear();
  return synSuccess;
}

synStatus stream_checks(Session& s, Stream*& stream, synStreamHandle handle, const char* function) {
  if (!s.initialized) return need_init(function);
  if (!s.device) return fail(synNoDeviceFound, std::string(function) + ": no device is acquired");
  stream = find_stream(s, handle);
  if (!stream) return fail(synInvalidArgument, std::string(function) + (handle ? ": not a live stream handle" : ": stream is NULL"));
  return settle_waits(s, *stream, function);
}

QueueId queue_of(synStreamType type) {
  switch (type) {
    case STREAM_TYPE_COPY_HOST_TO_DEVICE: return QueueId::DMA_0_1;
    case STREAM_TYPE_COPY_DEVICE_TO_HOST: return QueueId::DMA_1_0;
    case STREAM_TYPE_COPY_DEVICE_TO_DEVICE: return QueueId::DMA_0_2;
    default: return QueueId::DMA_0_0;
  }
}

synStatus create_stream(synStreamHandle* stream, synDeviceId id, QueueId queue, uint32_t flags, const char* function) {
  return locked(function, [&](Session& s) {
    if (const synStatus st = need_device(s, function, id); st != synSuccess) return st;
    if (!stream) return fail(synInvalidArgument, std::string(function) + ": stream is NULL");
    if (flags != 0) return fail(synInvalidArgument, std::string(function) + ": flags must be 0");
    const uint64_t key = s.next_handle++;
    s.streams[key].queue = queue;
    *stream = handle_of<synStreamHandle>(key);
    return succeed();
  });
}

}  // namespace

extern "C" {

synStatus synInitialize(void) {
  return locked("synInitialize", [&](Session& s) {
    if (s.initialized) return fail(synObjectAlreadyInitialized, "synInitialize: already initialized");
    std::optional<hpusim::synapse::recipe_cache::DiskCacheConfig> disk;
    try {
      disk = hpusim::synapse::recipe_cache::disk_cache_config_from_environment();
    } catch (const std::exception& e) {
      return fail(synInvalidArgument, std::string("synInitialize: PT_HPU_RECIPE_CACHE_CONFIG: ") + e.what());
    }
    try {
      s.compiler = std::make_unique<compiler::CachingCompiler>(
          std::make_unique<hpusim::synapse::recipe_cache::RecipeCache>(disk));
    } catch (const std::exception& e) {
      return fail(synFail, std::string("synInitialize: the recipe cache could not be set up: ") + e.what());
    }
    s.initialized = true;
    s.launch_counters = {};
    s.host_time = hpusim::cosim::HostTimeSource::kModeled;
    return succeed();
  });
}

synStatus synDestroy(void) {
  return locked("synDestroy", [&](Session& s) {
    if (!s.initialized) return need_init("synDestroy");
    if (s.device) release_device(s);
    s.recipes.clear();
    s.compiler.reset();   // flushes the cache's disk writes
    s.initialized = false;
    return succeed();
  });
}

synStatus synDeviceGetCount(uint32_t* count) {
  return locked("synDeviceGetCount", [&](Session& s) {
    if (!s.initialized) return need_init("synDeviceGetCount");
    if (!count) return fail(synInvalidArgument, "synDeviceGetCount: count is NULL");
    *count = 1;
    return succeed();
  });
}

synStatus synDeviceAcquireByDeviceType(synDeviceId* deviceId, synDeviceType deviceType) {
  return locked("synDeviceAcquireByDeviceType", [&](Session& s) {
    if (deviceType != synDeviceGaudi) {
      return fail(synDeviceTypeMismatch, "synDeviceAcquireByDeviceType: the simulated card is a Gaudi (synDeviceGaudi)");
    }
    const char* preset = std::getenv("HPUSIM_PRESET");
    const char* overrides = std::getenv("HPUSIM_SET");
    return acquire(s, deviceId, preset && *preset ? preset : hpusim::preset::kDefaultPreset, overrides ? overrides : "");
  });
}

synStatus synDeviceAcquire(synDeviceId* deviceId, const char* pciBus) {
  if (pciBus && *pciBus) return fail(synInvalidArgument, "synDeviceAcquire: pciBus must be NULL or empty");
  return synDeviceAcquireByDeviceType(deviceId, synDeviceGaudi);
}

synStatus hpusim_deviceAcquireWithPreset(synDeviceId* deviceId, const char* preset, const char* overrides) {
  return locked("hpusim_deviceAcquireWithPreset", [&](Session& s) {
    if (!preset || !*preset) return fail(synInvalidArgument, "hpusim_deviceAcquireWithPreset: preset is NULL or empty");
    return acquire(s, deviceId, preset, overrides ? overrides : "");
  });
}

synStatus synDeviceRelease(synDeviceId deviceId) {
  return locked("synDeviceRelease", [&](Session& s) {
    if (const synStatus st = need_device(s, "synDeviceRelease", deviceId); st != synSuccess) return st;
    release_device(s);
    return succeed();
  });
}

synStatus synDeviceSynchronize(synDeviceId deviceId) {
  return locked("synDeviceSynchronize", [&](Session& s) {
    if (const synStatus st = need_device(s, "synDeviceSynchronize", deviceId); st != synSuccess) return st;
    for (auto& [key, stream] : s.streams) {
      if (const auto r = s.runtime->wait(stream.last_seq); !r.ok()) return finish(r);
    }
    if (const auto r = s.runtime->wait(s.last_launch_seq); !r.ok()) return finish(r);
    flush_spans(s, false);
    return succeed();
  });
}

synStatus synDeviceGetMemoryInfo(synDeviceId deviceId, uint64_t* free, uint64_t* total) {
  return locked("synDeviceGetMemoryInfo", [&](Session& s) {
    if (const synStatus st = need_device(s, "synDeviceGetMemoryInfo", deviceId); st != synSuccess) return st;
    if (!free || !total) return fail(synInvalidArgument, "synDeviceGetMemoryInfo: free or total is NULL");
    *free = s.runtime->allocator().free_bytes();
    *total = s.runtime->allocator().size();
    return succeed();
  });
}

synStatus synDeviceGetInfo(synDeviceId deviceId, synDeviceInfo* info) {
  return locked("synDeviceGetInfo", [&](Session& s) {
    if (const synStatus st = need_device(s, "synDeviceGetInfo", deviceId); st != synSuccess) return st;
    if (!info) return fail(synInvalidArgument, "synDeviceGetInfo: info is NULL");
    hpusim::driver::uapi::hl_info_hw_ip_info hw{};
    hpusim::driver::uapi::hl_info_args args{};
    args.return_pointer = reinterpret_cast<uintptr_t>(&hw);
    args.return_size = sizeof hw;
    args.op = hpusim::driver::uapi::HL_INFO_HW_IP_INFO;
    if (s.device->info(args) != 0) return fail(synFail, "synDeviceGetInfo: the driver's HW_IP_INFO failed");
    *info = synDeviceInfo{};
    info->sramBaseAddress = hw.sram_base_address;
    info->dramBaseAddress = hw.dram_base_address;
    info->sramSize = hw.sram_size;
    info->dramSize = hw.dram_size;
    info->tpcEnabledMask = hw.tpc_enabled_mask;
    info->dramEnabled = hw.dram_enabled;
    info->deviceId = hw.device_id;
    info->deviceType = synDeviceGaudi;
    return succeed();
  });
}

// ---- streams and events ----

synStatus synStreamCreate(synStreamHandle* stream, synDeviceId deviceId, synStreamType type, uint32_t flags) {
  if (type > STREAM_TYPE_NETWORK_COLLECTIVE) return fail(synInvalidArgument, "synStreamCreate: unknown stream type");
  if (type == STREAM_TYPE_NETWORK_COLLECTIVE) return fail(synUnsupported, "synStreamCreate: no collective streams (no NIC model yet)");
  return create_stream(stream, deviceId, queue_of(type), flags, "synStreamCreate");
}

synStatus synStreamCreateGeneric(synStreamHandle* stream, synDeviceId deviceId, uint32_t flags) {
  return create_stream(stream, deviceId, QueueId::DMA_0_0, flags, "synStreamCreateGeneric");
}

synStatus synStreamDestroy(synStreamHandle stream) {
  return locked("synStreamDestroy", [&](Session& s) {
    Stream* st = find_stream(s, stream);
    if (!st) return fail(synInvalidArgument, "synStreamDestroy: not a live stream handle");
    s.runtime->wait(st->last_seq);
    s.streams.erase(key_of(stream));
    return succeed();
  });
}

synStatus synStreamWaitEvent(synStreamHandle stream, synEventHandle event, uint32_t flags) {
  return locked("synStreamWaitEvent", [&](Session& s) {
    Stream* st = find_stream(s, stream);
    Event* ev = find_event(s, event);
    if (!st || !ev) return fail(synInvalidArgument, "synStreamWaitEvent: not a live stream or event handle");
    if (flags != 0) return fail(synInvalidArgument, "synStreamWaitEvent: flags must be 0");
    if (ev->seq != 0) st->waits.push_back(ev->seq);
    return succeed();
  });
}

synStatus synStreamSynchronize(synStreamHandle stream) {
  return locked("synStreamSynchronize", [&](Session& s) {
    Stream* st = nullptr;
    if (const synStatus r = stream_checks(s, st, stream, "synStreamSynchronize"); r != synSuccess) return r;
    return finish(s.runtime->wait(st->last_seq));
  });
}

synStatus synStreamQuery(synStreamHandle stream) {
  return locked("synStreamQuery", [&](Session& s) {
    Stream* st = find_stream(s, stream);
    if (!st) return fail(synInvalidArgument, "synStreamQuery: not a live stream handle");
    for (uint64_t seq : st->waits) {
      if (!s.runtime->completed(seq)) return fail(synBusy, "synStreamQuery: the stream waits for an event");
    }
    return s.runtime->completed(st->last_seq) ? succeed() : fail(synBusy, "synStreamQuery: work in flight");
  });
}

synStatus synEventCreate(synEventHandle* event, synDeviceId deviceId, uint32_t flags) {
  return locked("synEventCreate", [&](Session& s) {
    if (const synStatus st = need_device(s, "synEventCreate", deviceId); st != synSuccess) return st;
    if (!event) return fail(synInvalidArgument, "synEventCreate: event is NULL");
    if (flags & ~EVENT_COLLECT_TIME) return fail(synInvalidArgument, "synEventCreate: flags must be 0 or EVENT_COLLECT_TIME");
    const uint64_t key = s.next_handle++;
    s.events[key].flags = flags;
    *event = handle_of<synEventHandle>(key);
    return succeed();
  });
}

synStatus synEventDestroy(synEventHandle event) {
  return locked("synEventDestroy", [&](Session& s) {
    if (!s.events.erase(key_of(event))) return fail(synInvalidArgument, "synEventDestroy: not a live event handle");
    return succeed();
  });
}

synStatus synEventRecord(synEventHandle event, synStreamHandle stream) {
  return locked("synEventRecord", [&](Session& s) {
    Stream* st = nullptr;
    if (const synStatus r = stream_checks(s, st, stream, "synEventRecord"); r != synSuccess) return r;
    Event* ev = find_event(s, event);
    if (!ev) return fail(synInvalidArgument, "synEventRecord: not a live event handle");
    ev->recorded = true;
    ev->seq = s.runtime->completed(st->last_seq) ? 0 : st->last_seq;
    ev->recorded_ps = s.runtime->host_now_ps();
    if (ev->seq == 0 && st->last_seq != 0 && (ev->flags & EVENT_COLLECT_TIME)) ev->seq = st->last_seq;
    return succeed();
  });
}

synStatus synEventQuery(synEventHandle event) {
  return locked("synEventQuery", [&](Session& s) {
    Event* ev = find_event(s, event);
    if (!ev) return fail(synInvalidArgument, "synEventQuery: not a live event handle");
    return s.runtime->completed(ev->seq) ? succeed() : fail(synBusy, "synEventQuery: not yet");
  });
}

synStatus synEventSynchronize(synEventHandle event) {
  return locked("synEventSynchronize", [&](Session& s) {
    Event* ev = find_event(s, event);
    if (!ev) return fail(synInvalidArgument, "synEventSynchronize: not a live event handle");
    return finish(s.runtime->wait(ev->seq));
  });
}

synStatus synEventElapsedTime(uint64_t* nanoseconds, synEventHandle eventStart, synEventHandle eventEnd) {
  return locked("synEventElapsedTime", [&](Session& s) {
    Event* a = find_event(s, eventStart);
    Event* b = find_event(s, eventEnd);
    if (!a || !b || !nanoseconds) return fail(synInvalidArgument, "synEventElapsedTime: bad event handle or NULL result");
    if (!(a->flags & EVENT_COLLECT_TIME) || !(b->flags & EVENT_COLLECT_TIME)) {
      return fail(synInvalidArgument, "synEventElapsedTime: both events need EVENT_COLLECT_TIME");
    }
    if (!a->recorded || !b->recorded) return fail(synObjectNotInitialized, "synEventElapsedTime: an event was never recorded");
    const auto time_of = [&](const Event& e, uint64_t* ps) -> hpusim::synapse::graph::Result {
      if (e.seq == 0) {
        *ps = e.recorded_ps;
        return hpusim::synapse::graph::Result::success();
      }
      return s.runtime->completion_time_ps(e.seq, ps);
    };
    uint64_t start = 0, end = 0;
    if (const auto r = time_of(*a, &start); !r.ok()) return finish(r);
    if (const auto r = time_of(*b, &end); !r.ok()) return finish(r);
    *nanoseconds = end > start ? (end - start) / 1000 : 0;
    return succeed();
  });
}

// ---- memory ----

synStatus synHostMalloc(synDeviceId deviceId, uint64_t size, uint32_t flags, void** buffer) {
  return locked("synHostMalloc", [&](Session& s) {
    if (const synStatus st = need_device(s, "synHostMalloc", deviceId); st != synSuccess) return st;
    if (!buffer || size == 0 || flags != 0) return fail(synInvalidArgument, "synHostMalloc: NULL buffer, size 0 or flags");
    void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!p) return fail(synOutOfHostMemory, "synHostMalloc: " + std::to_string(size) + " bytes");
    HostBuffer b{size, 0, true};
    if (s.device->map_host(p, size, &b.device_va) != 0) {
      std::free(p);
      return fail(synFailedToAllocateDeviceMemory, "synHostMalloc: the buffer could not be mapped for the device");
    }
    s.host_buffers[p] = b;
    *buffer = p;
    return succeed();
  });
}

synStatus synHostFree(synDeviceId deviceId, const void* buffer, uint32_t flags) {
  return locked("synHostFree", [&](Session& s) {
    if (const synStatus st = need_device(s, "synHostFree", deviceId); st != synSuccess) return st;
    auto it = s.host_buffers.find(buffer);
    if (it == s.host_buffers.end() || !it->second.owned || flags != 0) {
      return fail(synInvalidArgument, "synHostFree: not a buffer from synHostMalloc");
    }
    s.device->unmap_host(it->second.device_va);
    std::free(const_cast<void*>(buffer));
    s.host_buffers.erase(it);
    return succeed();
  });
}

synStatus synHostMap(synDeviceId deviceId, uint64_t size, const void* buffer) {
  return locked("synHostMap", [&](Session& s) {
    if (const synStatus st = need_device(s, "synHostMap", deviceId); st != synSuccess) return st;
    if (!buffer || size == 0) return fail(synInvalidArgument, "synHostMap: NULL buffer or size 0");
    if (s.host_buffers.count(buffer)) return fail(synInvalidArgument, "synHostMap: buffer is already mapped");
    HostBuffer b{size, 0, false};
    if (s.device->map_host(buffer, size, &b.device_va) != 0) {
      return fail(synFailedToMapCb, "synHostMap: the buffer could not be mapped for the device");
    }
    s.host_buffers[buffer] = b;
    return succeed();
  });
}

synStatus synHostUnmap(synDeviceId deviceId, const void* buffer) {
  return locked("synHostUnmap", [&](Session& s) {
    if (const synStatus st = need_device(s, "synHostUnmap", deviceId); st != synSuccess) return st;
    auto it = s.host_buffers.find(buffer);
    if (it == s.host_buffers.end() || it->second.owned) return fail(synInvalidArgument, "synHostUnmap: not a synHostMap buffer");
    s.device->unmap_host(it->second.device_va);
    s.host_buffers.erase(it);
    return succeed();
  });
}

synStatus synDeviceMalloc(synDeviceId deviceId, uint64_t size, uint64_t reqAddr, uint32_t flags, uint64_t* buffer) {
  return locked("synDeviceMalloc", [&](Session& s) {
    if (const synStatus st = need_device(s, "synDeviceMalloc", deviceId); st != synSuccess) return st;
    if (!buffer) return fail(synInvalidArgument, "synDeviceMalloc: buffer is NULL");
    if (reqAddr != 0 || flags != 0) return fail(synUnsupported, "synDeviceMalloc: reqAddr and flags must be 0");
    return finish(s.runtime->device_malloc(size, buffer));
  });
}

synStatus synDeviceFree(synDeviceId deviceId, uint64_t buffer, uint32_t flags) {
  return locked("synDeviceFree", [&](Session& s) {
    if (const synStatus st = need_device(s, "synDeviceFree", deviceId); st != synSuccess) return st;
    if (flags != 0) return fail(synInvalidArgument, "synDeviceFree: flags must be 0");
    const auto r = s.runtime->device_free(buffer);
    return r.ok() ? succeed() : fail(synFailedToFreeDeviceMemory, "synDeviceFree: " + r.message);
  });
}

synStatus synMemCopyAsync(synStreamHandle stream, uint64_t src, uint64_t size, uint64_t dst, synDmaDir direction) {
  return locked("synMemCopyAsync", [&](Session& s) {
    Stream* st = nullptr;
    if (const synStatus r = stream_checks(s, st, stream, "synMemCopyAsync"); r != synSuccess) return r;
    uint64_t seq = 0;
    hpusim::synapse::graph::Result r;
    switch (direction) {
      case HOST_TO_DRAM:
        r = s.runtime->copy_to_device(reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), dst, size, &seq, st->queue);
        break;
      case DRAM_TO_HOST:
        r = s.runtime->copy_to_host(src, reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), size, &seq, st->queue);
        break;
      case DRAM_TO_DRAM:
        r = s.runtime->copy_on_device(src, dst, size, &seq, st->queue);
        break;
      default:
        return fail(synInvalidArgument, "synMemCopyAsync: unknown direction");
    }
    if (!r.ok()) return finish(r);
    st->last_seq = seq;
    return succeed();
  });
}

// The memsets: a 32-bit pattern over numOfElements x element bytes.
static synStatus memset_pattern(const char* function, uint64_t deviceMem, uint32_t pattern, uint64_t bytes,
                         synStreamHandle stream) {
  return locked(function, [&](Session& s) {
    Stream* st = nullptr;
    if (const synStatus r = stream_checks(s, st, stream, function); r != synSuccess) return r;
    uint64_t seq = 0;
    if (const auto r = s.runtime->memset_device(deviceMem, pattern, bytes, &seq, st->queue); !r.ok()) {
      return fail(synInvalidArgument, std::string(function) + ": " + r.message);
    }
    st->last_seq = seq;
    return succeed();
  });
}

synStatus synMemsetD8Async(uint64_t deviceMem, unsigned char value, uint64_t numOfElements, synStreamHandle stream) {
  return memset_pattern("synMemsetD8Async", deviceMem, 0x01010101u * value, numOfElements, stream);
}

synStatus synMemsetD16Async(uint64_t deviceMem, uint16_t value, uint64_t numOfElements, synStreamHandle stream) {
  return memset_pattern("synMemsetD16Async", deviceMem, 0x00010001u * value, numOfElements * 2, stream);
}

synStatus synMemsetD32Async(uint64_t deviceMem, uint32_t value, uint64_t numOfElements, synStreamHandle stream) {
  return memset_pattern("synMemsetD32Async", deviceMem, value, numOfElements * 4, stream);
}

// ---- compile, launch, recipes ----

synStatus synGraphCompile(synRecipeHandle* recipeHandle, synGraphHandle graph, const char* recipeName,
                          const char* buildLog) {
  (void)recipeName;
  (void)buildLog;
  hpusim::synapse::graph::Graph copy;
  if (!api::copy_graph(graph, &copy)) {
    return fail(synInvalidArgument, graph ? "synGraphCompile: not a live graph handle" : "synGraphCompile: graph is NULL");
  }
  return locked("synGraphCompile", [&](Session& s) {
    if (!s.initialized) return need_init("synGraphCompile");
    if (!s.device) return fail(synNoDeviceFound, "synGraphCompile: no device is acquired (recipes are for a card)");
    if (!recipeHandle) return fail(synInvalidArgument, "synGraphCompile: recipeHandle is NULL");
    std::shared_ptr<const recipe::Recipe> compiled;
    const uint64_t start_ps = s.runtime->host_now_ps();
    const uint64_t nodes = copy.node_count();
    charge(s, nodes * costs(s).graph_hash_per_node_ns() + costs(s).recipe_lookup_ns());
    bool hit = false;
    const auto r = s.compiler->compile(copy, s.runtime->target(), &compiled, &hit);
    if (!hit) charge(s, nodes * costs(s).compile_per_node_ns());
    host_span(s, hit ? "recipe cache hit" : (r.ok() ? "compile" : "compile (failed)"), start_ps);
    if (!r.ok()) return finish(r);
    const uint64_t key = s.next_handle++;
    s.recipes[key].recipe = std::move(compiled);
    *recipeHandle = handle_of<synRecipeHandle>(key);
    return succeed();
  });
}

synStatus synWorkspaceGetSize(uint64_t* size, synRecipeHandle recipeHandle) {
  return locked("synWorkspaceGetSize", [&](Session& s) {
    RecipeObject* r = find_recipe(s, recipeHandle);
    if (!r || !size) return fail(synInvalidArgument, "synWorkspaceGetSize: not a live recipe handle, or size is NULL");
    *size = r->recipe->workspace_bytes();
    return succeed();
  });
}

synStatus synLaunch(synStreamHandle stream, const synLaunchTensorInfo* infos, uint32_t count, uint64_t pWorkspace,
                    synRecipeHandle recipeHandle, uint32_t flags) {
  return locked("synLaunch", [&](Session& s) {
    Stream* st = nullptr;
    if (const synStatus r = stream_checks(s, st, stream, "synLaunch"); r != synSuccess) return r;
    RecipeObject* r = find_recipe(s, recipeHandle);
    if (!r) return fail(synInvalidArgument, "synLaunch: not a live recipe handle");
    if (flags != 0) return fail(synInvalidArgument, "synLaunch: flags must be 0");
    if (count > 0 && !infos) return fail(synInvalidArgument, "synLaunch: launchTensorsInfo is NULL");
    const recipe::Recipe& rec = *r->recipe;
    std::vector<uint64_t> addresses(rec.persistent_size(), 0);
    for (uint32_t i = 0; i < count; ++i) {
      if (!infos[i].tensorName) return fail(synInvalidArgument, "synLaunch: tensor info " + std::to_string(i) + " has no name");
      int found = -1;
      for (int p = 0; p < rec.persistent_size(); ++p) {
        if (rec.persistent(p).name() == infos[i].tensorName) found = p;
      }
      if (found < 0) {
        return fail(synInvalidArgument, std::string("synLaunch: the recipe has no persistent tensor '") +
                                             infos[i].tensorName + "'");
      }
      addresses[found] = infos[i].pTensorAddress;
    }
    for (int p = 0; p < rec.persistent_size(); ++p) {
      if (addresses[p] == 0) {
        return fail(synInvalidArgument, "synLaunch: no address for persistent tensor '" + rec.persistent(p).name() + "'");
      }
    }
    const uint64_t start_ps = s.runtime->host_now_ps();
    if (!r->loaded) {
      std::shared_ptr<rt::LoadedRecipe>& shared = s.loaded[{rec.graph_hash(), rec.target()}];
      if (!shared) {
        if (const auto l = s.runtime->load(rec, &shared); !l.ok()) {
          s.loaded.erase({rec.graph_hash(), rec.target()});
          return finish(l);
        }
      }
      r->loaded = shared;
    }
    const uint64_t host_start_ps = s.runtime->host_now_ps();   // the launch itself (a first launch loads, above)
    uint64_t patches = 0;
    for (const auto& job : rec.jobs()) patches += static_cast<uint64_t>(job.patches_size());
    charge(s, costs(s).launch_ns() + patches * costs(s).launch_per_patch_ns());
    uint64_t seq = 0;
    if (const auto l = s.runtime->launch(*r->loaded, addresses, pWorkspace, &seq); !l.ok()) return finish(l);
    ++s.launch_counters.launches;
    s.launch_counters.patches += patches;
    s.launch_counters.hostNanoseconds += (s.runtime->host_now_ps() - host_start_ps) / 1000;
    st->last_seq = seq;
    s.last_launch_seq = seq;
    flush_spans(s, false);
    const std::string name = "launch " + std::to_string(r->loaded->launches());
    const uint64_t flow = host_span(s, name, start_ps, true);
    if (s.timeline) s.pending_spans.push_back({seq, s.runtime->submit_time_ps(seq), flow, name});
    return succeed();
  });
}

synStatus synRecipeDestroy(synRecipeHandle recipeHandle) {
  return locked("synRecipeDestroy", [&](Session& s) {
    RecipeObject* r = find_recipe(s, recipeHandle);
    if (!r) return fail(synInvalidArgument, "synRecipeDestroy: not a live recipe handle");
    s.recipes.erase(key_of(recipeHandle));   // its loaded form stays for the next launch of the graph
    return succeed();
  });
}

synStatus synRecipeSerialize(synRecipeHandle recipeHandle, const char* fileName) {
  return locked("synRecipeSerialize", [&](Session& s) {
    RecipeObject* r = find_recipe(s, recipeHandle);
    if (!r || !fileName) return fail(synInvalidArgument, "synRecipeSerialize: not a live recipe handle, or fileName is NULL");
    const std::vector<uint8_t> bytes = recipe::serialize(*r->recipe);
    std::ofstream out(fileName, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) return fail(synFail, std::string("synRecipeSerialize: could not write '") + fileName + "'");
    return succeed();
  });
}

synStatus synRecipeDeSerialize(synRecipeHandle* recipeHandle, const char* fileName) {
  return locked("synRecipeDeSerialize", [&](Session& s) {
    if (!s.initialized) return need_init("synRecipeDeSerialize");
    if (!recipeHandle || !fileName) return fail(synInvalidArgument, "synRecipeDeSerialize: NULL argument");
    std::ifstream in(fileName, std::ios::binary);
    if (!in) return fail(synInvalidArgument, std::string("synRecipeDeSerialize: cannot open '") + fileName + "'");
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto parsed = std::make_shared<recipe::Recipe>();
    std::string error;
    if (!recipe::deserialize(bytes.data(), bytes.size(), parsed.get(), &error)) {
      return fail(synInvalidArgument, "synRecipeDeSerialize: '" + std::string(fileName) + "': " + error);
    }
    const uint64_t key = s.next_handle++;
    s.recipes[key].recipe = std::move(parsed);
    *recipeHandle = handle_of<synRecipeHandle>(key);
    return succeed();
  });
}

synStatus hpusim_hostTimeNs(uint64_t* nanoseconds) {
  return locked("hpusim_hostTimeNs", [&](Session& s) {
    if (!s.device) return fail(synNoDeviceFound, "hpusim_hostTimeNs: no device is acquired");
    if (!nanoseconds) return fail(synInvalidArgument, "hpusim_hostTimeNs: NULL result");
    *nanoseconds = s.runtime->host_now_ps() / 1000;
    return succeed();
  });
}

synStatus hpusim_setHostTimeSource(const char* source) {
  return locked("hpusim_setHostTimeSource", [&](Session& s) {
    if (!s.initialized) return need_init("hpusim_setHostTimeSource");
    if (s.device) return fail(synBusy, "hpusim_setHostTimeSource: call it before acquiring the device");
    try {
      s.host_time = hpusim::cosim::parse_host_time_source(source ? source : "");
    } catch (const std::exception& e) {
      return fail(synInvalidArgument, std::string("hpusim_setHostTimeSource: ") + e.what());
    }
    return succeed();
  });
}

synStatus hpusim_traceToFile(const char* path) {
  return locked("hpusim_traceToFile", [&](Session& s) {
    if (!s.initialized) return need_init("hpusim_traceToFile");
    if (s.device) return fail(synBusy, "hpusim_traceToFile: call it before acquiring the device");
    s.trace_path = path ? path : "";
    return succeed();
  });
}

synStatus hpusim_launchCounters(hpusim_LaunchCounters* counters) {
  return locked("hpusim_launchCounters", [&](Session& s) {
    if (!s.initialized) return need_init("hpusim_launchCounters");
    if (!counters) return fail(synInvalidArgument, "hpusim_launchCounters: counters is NULL");
    *counters = s.launch_counters;
    if (s.runtime) counters->prepareNanoseconds = s.runtime->launch_prepare_ns();
    return succeed();
  });
}

synStatus hpusim_compileCounters(hpusim_CompileCounters* counters) {
  return locked("hpusim_compileCounters", [&](Session& s) {
    if (!s.initialized) return need_init("hpusim_compileCounters");
    if (!counters) return fail(synInvalidArgument, "hpusim_compileCounters: counters is NULL");
    const compiler::CompileCounters c = s.compiler->counters();
    *counters = hpusim_CompileCounters{c.compiles, c.cache_hits, c.cache_misses, c.corrupt, c.compile_ns, c.compiled_nodes};
    return succeed();
  });
}

synStatus hpusim_lastLaunchWindowNs(uint64_t* submitted, uint64_t* completed) {
  return locked("hpusim_lastLaunchWindowNs", [&](Session& s) {
    if (!s.device) return fail(synNoDeviceFound, "hpusim_lastLaunchWindowNs: no device is acquired");
    if (!submitted || !completed) return fail(synInvalidArgument, "hpusim_lastLaunchWindowNs: NULL result");
    if (s.last_launch_seq == 0) return fail(synObjectNotInitialized, "hpusim_lastLaunchWindowNs: nothing launched yet");
    if (const auto r = s.runtime->wait(s.last_launch_seq); !r.ok()) return finish(r);
    uint64_t done = 0;
    if (const auto r = s.runtime->completion_time_ps(s.last_launch_seq, &done); !r.ok()) return finish(r);
    *submitted = s.runtime->submit_time_ps(s.last_launch_seq) / 1000;
    *completed = done / 1000;
    return succeed();
  });
}

synStatus hpusim_lastLaunchDeviceTime(uint64_t* nanoseconds) {
  return locked("hpusim_lastLaunchDeviceTime", [&](Session& s) {
    if (!s.device) return fail(synNoDeviceFound, "hpusim_lastLaunchDeviceTime: no device is acquired");
    if (!nanoseconds) return fail(synInvalidArgument, "hpusim_lastLaunchDeviceTime: NULL result");
    if (s.last_launch_seq == 0) return fail(synObjectNotInitialized, "hpusim_lastLaunchDeviceTime: nothing launched yet");
    if (const auto r = s.runtime->wait(s.last_launch_seq); !r.ok()) return finish(r);
    uint64_t done = 0;
    if (const auto r = s.runtime->completion_time_ps(s.last_launch_seq, &done); !r.ok()) return finish(r);
    const uint64_t start = s.runtime->submit_time_ps(s.last_launch_seq);
    *nanoseconds = done > start ? (done - start) / 1000 : 0;
    return succeed();
  });
}

}  // extern "C"

hpusim::driver::HlDevice* hpusim::synapse::api::acquired_device() {
  std::lock_guard<std::mutex> lock(session().mutex);
  return session().device.get();
}
