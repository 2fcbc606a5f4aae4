// The C API's lifecycle, device, stream, event and memory entry points (the session:
// session.h).
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "synapse/api/session.h"
#include "synapse/hlthunk/hlthunk.h"
#include "synapse/recipe/recipe_file.h"
#include "synapse/recipe_cache/disk_cache_config.h"

namespace api = hpusim::synapse::api;
namespace compiler = hpusim::synapse::compiler;
namespace recipe = hpusim::synapse::recipe;
using namespace hpusim::synapse::api;   // the session and its helpers (session.h)

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
    s.released_launch_counters = {};
    return succeed();
  });
}

synStatus synDestroy(void) {
  std::vector<std::shared_ptr<Device>> devices;
  const synStatus status = locked("synDestroy", [&](Session& s) {
    if (!s.initialized) return need_init("synDestroy");
    for (synDeviceId id = 0; id < kMaxDevices; ++id) {
      if (s.devices[id]) devices.push_back(detach_device(s, id));
    }
    return succeed();
  });
  if (status != synSuccess) return status;
  for (const std::shared_ptr<Device>& d : devices) {   // waits for their work: no session lock
    guard("synDestroy", [&] {
      std::lock_guard<HostLock> lock(d->mutex);
      release_device(*d);
      return synSuccess;
    });
  }
  return locked("synDestroy", [&](Session& s) {
    s.recipes.clear();
    s.owners.clear();
    s.compiler.reset();   // flushes the cache's disk writes
    s.initialized = false;
    return succeed();
  });
}

synStatus synDeviceGetCount(uint32_t* count) {
  return locked("synDeviceGetCount", [&](Session& s) {
    if (!s.initialized) return need_init("synDeviceGetCount");
    if (!count) return fail(synInvalidArgument, "synDeviceGetCount: count is NULL");
    unsigned cards = 0;
    if (const synStatus st = device_count("synDeviceGetCount", &cards); st != synSuccess) return st;
    *count = cards;
    return succeed();
  });
}

namespace {

const char* type_name(synDeviceType type) {
  return type == synDeviceGaudi3 ? "synDeviceGaudi3" : type == synDeviceGaudi2 ? "synDeviceGaudi2" : "synDeviceGaudi";
}

// The card type of an acquired device (its HW_IP_INFO device ID).
std::optional<synDeviceType> type_of(synDeviceId id) {
  synDeviceInfo info{};
  if (synDeviceGetInfo(id, &info) != synSuccess) return std::nullopt;
  return info.deviceType;
}

synStatus acquire_any(const char* function, synDeviceId* deviceId) {
  const char* preset = std::getenv("HPUSIM_PRESET");
  const char* overrides = std::getenv("HPUSIM_SET");
  // No HPUSIM_PRESET: the platform's own card (its default when it is brought up here).
  return acquire(function, deviceId, preset ? preset : "", overrides ? overrides : "");
}

}  // namespace

synStatus synDeviceAcquireByDeviceType(synDeviceId* deviceId, synDeviceType deviceType) {
  if (deviceType != synDeviceGaudi && deviceType != synDeviceGaudi2 && deviceType != synDeviceGaudi3) {
    return fail(synDeviceTypeMismatch, "synDeviceAcquireByDeviceType: device type " +
                                           std::to_string(static_cast<int>(deviceType)) + " is not a Gaudi card type");
  }
  const auto mismatch = [&](synDeviceType card) {
    return fail(synDeviceTypeMismatch, std::string("synDeviceAcquireByDeviceType: the box's cards are ") +
                                           type_name(card) + ", not " + type_name(deviceType));
  };
  // The box's cards all come from one preset: an acquired one tells the type.
  std::optional<synDeviceId> acquired;
  locked("synDeviceAcquireByDeviceType", [&](Session& s) {
    for (size_t i = 0; i < s.devices.size(); ++i)
      if (s.devices[i]) acquired = static_cast<synDeviceId>(i);
    return succeed();
  });
  if (acquired) {
    if (const auto card = type_of(*acquired); card && *card != deviceType) return mismatch(*card);
  }
  if (const synStatus st = acquire_any("synDeviceAcquireByDeviceType", deviceId); st != synSuccess) return st;
  if (const auto card = type_of(*deviceId); card && *card != deviceType) {
    synDeviceRelease(*deviceId);
    return mismatch(*card);
  }
  return succeed();
}

synStatus synDeviceAcquire(synDeviceId* deviceId, const char* pciBus) {
  if (pciBus && *pciBus) return fail(synInvalidArgument, "synDeviceAcquire: pciBus must be NULL or empty");
  return acquire_any("synDeviceAcquire", deviceId);
}

synStatus hpusim_deviceAcquireWithPreset(synDeviceId* deviceId, const char* preset, const char* overrides) {
  if (!preset || !*preset) return fail(synInvalidArgument, "hpusim_deviceAcquireWithPreset: preset is NULL or empty");
  return acquire("hpusim_deviceAcquireWithPreset", deviceId, preset, overrides ? overrides : "");
}

synStatus synDeviceRelease(synDeviceId deviceId) {
  std::shared_ptr<Device> device;
  const synStatus status = locked("synDeviceRelease", [&](Session& s) {
    if (const synStatus st = find_device(s, "synDeviceRelease", deviceId, &device); st != synSuccess) return st;
    device = detach_device(s, deviceId);
    s.released_launch_counters.launches += device->launch_counters.launches;
    s.released_launch_counters.patches += device->launch_counters.patches;
    s.released_launch_counters.hostNanoseconds += device->launch_counters.hostNanoseconds;
    return succeed();
  });
  if (status != synSuccess) return status;
  return guard("synDeviceRelease", [&] {
    std::lock_guard<HostLock> lock(device->mutex);   // after the calls in flight on it
    release_device(*device);
    return succeed();
  });
}

synStatus synDeviceSynchronize(synDeviceId deviceId) {
  return on_device("synDeviceSynchronize", deviceId, [&](Device& d) {
    // What was submitted when the call came (the lock is let go while waiting).
    std::vector<uint64_t> seqs;
    for (const auto& [key, stream] : d.streams) seqs.push_back(stream.last_seq);
    seqs.push_back(d.last_launch_seq);
    for (const uint64_t seq : seqs) {
      if (const auto r = d.wait(seq); !r.ok()) return finish(r);
    }
    flush_spans(d, false);
    return succeed();
  });
}

synStatus synDeviceGetMemoryInfo(synDeviceId deviceId, uint64_t* free, uint64_t* total) {
  return on_device("synDeviceGetMemoryInfo", deviceId, [&](Device& d) {
    if (!free || !total) return fail(synInvalidArgument, "synDeviceGetMemoryInfo: free or total is NULL");
    *free = d.runtime->allocator().free_bytes();
    *total = d.runtime->allocator().size();
    return succeed();
  });
}

synStatus synDeviceGetInfo(synDeviceId deviceId, synDeviceInfo* info) {
  return on_device("synDeviceGetInfo", deviceId, [&](Device& d) {
    if (!info) return fail(synInvalidArgument, "synDeviceGetInfo: info is NULL");
    hpusim::uapi::hl_info_hw_ip_info hw{};
    if (hpusim::hlthunk::hw_ip_info(d.fd, &hw) != 0) return fail(synFail, "synDeviceGetInfo: the driver's HW_IP_INFO failed");
    *info = synDeviceInfo{};
    info->sramBaseAddress = hw.sram_base_address;
    info->dramBaseAddress = hw.dram_base_address;
    info->sramSize = hw.sram_size;
    info->dramSize = hw.dram_size;
    info->tpcEnabledMask = hw.tpc_enabled_mask;
    info->dramEnabled = hw.dram_enabled;
    info->deviceId = hw.device_id;
    info->deviceType = hw.device_id == hpusim::uapi::PCI_IDS_GAUDI3   ? synDeviceGaudi3
                       : hw.device_id == hpusim::uapi::PCI_IDS_GAUDI2 ? synDeviceGaudi2
                                                                       : synDeviceGaudi;
    return succeed();
  });
}

// ---- streams and events ----

synStatus synStreamCreate(synStreamHandle* stream, synDeviceId deviceId, synStreamType type, uint32_t flags) {
  if (type > STREAM_TYPE_NETWORK_COLLECTIVE) return fail(synInvalidArgument, "synStreamCreate: unknown stream type");
  return create_stream(stream, deviceId, queue_of(type), flags, "synStreamCreate");
}

synStatus synStreamCreateGeneric(synStreamHandle* stream, synDeviceId deviceId, uint32_t flags) {
  return create_stream(stream, deviceId, QueueId::DMA_0_0, flags, "synStreamCreateGeneric");
}

synStatus synStreamDestroy(synStreamHandle stream) {
  const synStatus status = on_stream("synStreamDestroy", stream, [&](Device& d, Stream& st) {
    d.wait(st.last_seq);
    d.streams.erase(key_of(stream));   // by key: `st` may be gone after the wait
    return succeed();
  });
  if (status != synSuccess) return status;
  return locked("synStreamDestroy", [&](Session& s) {
    s.owners.erase(key_of(stream));
    return succeed();
  });
}

// The event `handle` on device `d` (whose lock the caller holds), or a failure naming why not:
// not a live event, or one of another device.
static synStatus event_on(Device& d, synEventHandle handle, const char* function, Event** event) {
  auto it = d.events.find(key_of(handle));
  if (it != d.events.end()) {
    *event = &it->second;
    return synSuccess;
  }
  std::shared_ptr<Device> owner;
  {
    std::lock_guard<HostLock> lock(session().mutex);   // device, then session: never the reverse
    owner = owner_of(session(), key_of(handle));
  }
  if (owner) {
    return fail(synInvalidArgument, std::string(function) + ": the event is on device " + std::to_string(owner->id) +
                                         ", the stream on device " + std::to_string(d.id));
  }
  return fail(synInvalidArgument, std::string(function) + (handle ? ": not a live event handle" : ": event is NULL"));
}

synStatus synStreamWaitEvent(synStreamHandle stream, synEventHandle event, uint32_t flags) {
  return on_stream("synStreamWaitEvent", stream, [&](Device& d, Stream& st) {
    Event* ev = nullptr;
    if (const synStatus r = event_on(d, event, "synStreamWaitEvent", &ev); r != synSuccess) return r;
    if (flags != 0) return fail(synInvalidArgument, "synStreamWaitEvent: flags must be 0");
    // On the device: the stream's next submission arms a monitor on the event's point and fences
    // on it. The host goes on.
    if (ev->signal) {
      if (const auto r = d.runtime->wait_on_device(st.queue, *ev->signal); !r.ok()) return finish(r);
    }
    if (ev->seq != 0) st.waits.push_back(ev->seq);
    return succeed();
  });
}

synStatus synStreamSynchronize(synStreamHandle stream) {
  return on_stream("synStreamSynchronize", stream, [&](Device& d, Stream& st) {
    // The stream's work includes the events it waits for. The lock is let go while waiting, so
    // only values copied before are used (another thread may destroy the stream meanwhile).
    std::vector<uint64_t> seqs = st.waits;
    seqs.push_back(st.last_seq);
    const uint64_t key = key_of(stream);
    for (const uint64_t seq : seqs) {
      if (const auto r = d.wait(seq); !r.ok()) return finish(r);
    }
    if (auto it = d.streams.find(key); it != d.streams.end()) {
      std::vector<uint64_t>& waits = it->second.waits;
      waits.erase(waits.begin(), waits.begin() + static_cast<std::ptrdiff_t>(std::min(waits.size(), seqs.size() - 1)));
    }
    return succeed();
  });
}

synStatus synStreamQuery(synStreamHandle stream) {
  return on_stream("synStreamQuery", stream, [&](Device& d, Stream& st) {
    for (const uint64_t seq : st.waits) {
      if (!d.runtime->completed(seq)) return fail(synBusy, "synStreamQuery: the stream waits for an event");
    }
    st.waits.clear();
    return d.runtime->completed(st.last_seq) ? succeed() : fail(synBusy, "synStreamQuery: work in flight");
  });
}

synStatus synEventCreate(synEventHandle* event, synDeviceId deviceId, uint32_t flags) {
  uint64_t key = 0;
  const synStatus status = on_device("synEventCreate", deviceId, [&](Device& d) {
    if (!event) return fail(synInvalidArgument, "synEventCreate: event is NULL");
    if (flags & ~EVENT_COLLECT_TIME) return fail(synInvalidArgument, "synEventCreate: flags must be 0 or EVENT_COLLECT_TIME");
    key = new_handle_key();
    d.events[key].flags = flags;
    return succeed();
  });
  if (status != synSuccess) return status;
  return locked("synEventCreate", [&](Session& s) {
    s.owners[key] = deviceId;
    *event = handle_of<synEventHandle>(key);
    return succeed();
  });
}

synStatus synEventDestroy(synEventHandle event) {
  const synStatus status = on_event("synEventDestroy", event, [&](Device& d, Event&) {
    d.events.erase(key_of(event));
    return succeed();
  });
  if (status != synSuccess) return status;
  return locked("synEventDestroy", [&](Session& s) {
    s.owners.erase(key_of(event));
    return succeed();
  });
}

synStatus synEventRecord(synEventHandle event, synStreamHandle stream) {
  return on_stream("synEventRecord", stream, [&](Device& d, Stream& st) {
    Event* ev = nullptr;
    if (const synStatus r = event_on(d, event, "synEventRecord", &ev); r != synSuccess) return r;
    ev->recorded = true;
    ev->recorded_ps = d.runtime->host_now_ps();
    ev->signal.reset();
    const bool busy = !d.runtime->completed(st.last_seq);
    const bool owes_waits = d.runtime->has_device_waits(st.queue);
    if (busy || owes_waits) {
      // A signal on the stream's queue marks the point for streams that wait on the event: it
      // fires once the work recorded (and the waits the stream owes) are done.
      rt::Runtime::Signal signal;
      uint64_t signal_seq = 0;
      if (const auto r = d.runtime->signal(st.queue, &signal, &signal_seq); !r.ok()) return finish(r);
      ev->signal = signal;
      // Its time is the recorded work's completion (or, with only waits before it, the signal's).
      ev->seq = busy ? st.last_seq : signal_seq;
      st.last_seq = signal_seq;
      st.waits.clear();
      return succeed();
    }
    ev->seq = 0;
    if (st.last_seq != 0 && (ev->flags & EVENT_COLLECT_TIME)) ev->seq = st.last_seq;
    return succeed();
  });
}

synStatus synEventQuery(synEventHandle event) {
  return on_event("synEventQuery", event, [&](Device& d, Event& ev) {
    return d.runtime->completed(ev.seq) ? succeed() : fail(synBusy, "synEventQuery: not yet");
  });
}

synStatus synEventSynchronize(synEventHandle event) {
  return on_event("synEventSynchronize", event, [&](Device& d, Event& ev) { return finish(d.wait(ev.seq)); });
}

synStatus synEventElapsedTime(uint64_t* nanoseconds, synEventHandle eventStart, synEventHandle eventEnd) {
  return on_event("synEventElapsedTime", eventStart, [&](Device& d, Event& a) {
    auto other = d.events.find(key_of(eventEnd));
    if (other == d.events.end() || !nanoseconds) {
      return fail(synInvalidArgument, "synEventElapsedTime: bad event handle (both on one device) or NULL result");
    }
    Event& b = other->second;
    if (!(a.flags & EVENT_COLLECT_TIME) || !(b.flags & EVENT_COLLECT_TIME)) {
      return fail(synInvalidArgument, "synEventElapsedTime: both events need EVENT_COLLECT_TIME");
    }
    if (!a.recorded || !b.recorded) return fail(synObjectNotInitialized, "synEventElapsedTime: an event was never recorded");
    const auto time_of = [&](const Event& e, uint64_t* ps) -> hpusim::synapse::graph::Result {
      if (e.seq == 0) {
        *ps = e.recorded_ps;
        return hpusim::synapse::graph::Result::success();
      }
      return d.runtime->completion_time_ps(e.seq, ps);
    };
    uint64_t start = 0, end = 0;
    if (const auto r = time_of(a, &start); !r.ok()) return finish(r);
    if (const auto r = time_of(b, &end); !r.ok()) return finish(r);
    *nanoseconds = end > start ? (end - start) / 1000 : 0;
    return succeed();
  });
}

// ---- memory ----

synStatus synHostMalloc(synDeviceId deviceId, uint64_t size, uint32_t flags, void** buffer) {
  return on_device("synHostMalloc", deviceId, [&](Device& d) {
    if (!buffer || size == 0 || flags != 0) return fail(synInvalidArgument, "synHostMalloc: NULL buffer, size 0 or flags");
    void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    if (!p) return fail(synOutOfHostMemory, "synHostMalloc: " + std::to_string(size) + " bytes");
    HostBuffer b{size, 0, true};
    if (hpusim::hlthunk::host_memory_map(d.fd, p, size, &b.device_va) != 0) {
      std::free(p);
      return fail(synFailedToAllocateDeviceMemory, "synHostMalloc: the buffer could not be mapped for the device");
    }
    d.host_buffers[p] = b;
    *buffer = p;
    return succeed();
  });
}

synStatus synHostFree(synDeviceId deviceId, const void* buffer, uint32_t flags) {
  return on_device("synHostFree", deviceId, [&](Device& d) {
    auto it = d.host_buffers.find(buffer);
    if (it == d.host_buffers.end() || !it->second.owned || flags != 0) {
      return fail(synInvalidArgument, "synHostFree: not a buffer from synHostMalloc");
    }
    hpusim::hlthunk::memory_unmap(d.fd, it->second.device_va);
    std::free(const_cast<void*>(buffer));
    d.host_buffers.erase(it);
    return succeed();
  });
}

synStatus synHostMap(synDeviceId deviceId, uint64_t size, const void* buffer) {
  return on_device("synHostMap", deviceId, [&](Device& d) {
    if (!buffer || size == 0) return fail(synInvalidArgument, "synHostMap: NULL buffer or size 0");
    if (d.host_buffers.count(buffer)) return fail(synInvalidArgument, "synHostMap: buffer is already mapped");
    HostBuffer b{size, 0, false};
    if (hpusim::hlthunk::host_memory_map(d.fd, buffer, size, &b.device_va) != 0) {
      return fail(synFailedToMapCb, "synHostMap: the buffer could not be mapped for the device");
    }
    d.host_buffers[buffer] = b;
    return succeed();
  });
}

synStatus synHostUnmap(synDeviceId deviceId, const void* buffer) {
  return on_device("synHostUnmap", deviceId, [&](Device& d) {
    auto it = d.host_buffers.find(buffer);
    if (it == d.host_buffers.end() || it->second.owned) return fail(synInvalidArgument, "synHostUnmap: not a synHostMap buffer");
    hpusim::hlthunk::memory_unmap(d.fd, it->second.device_va);
    d.host_buffers.erase(it);
    return succeed();
  });
}

synStatus synDeviceMalloc(synDeviceId deviceId, uint64_t size, uint64_t reqAddr, uint32_t flags, uint64_t* buffer) {
  return on_device("synDeviceMalloc", deviceId, [&](Device& d) {
    if (!buffer) return fail(synInvalidArgument, "synDeviceMalloc: buffer is NULL");
    if (reqAddr != 0 || flags != 0) return fail(synUnsupported, "synDeviceMalloc: reqAddr and flags must be 0");
    return finish(d.runtime->device_malloc(size, buffer));
  });
}

synStatus synDeviceFree(synDeviceId deviceId, uint64_t buffer, uint32_t flags) {
  return on_device("synDeviceFree", deviceId, [&](Device& d) {
    if (flags != 0) return fail(synInvalidArgument, "synDeviceFree: flags must be 0");
    const auto r = d.runtime->device_free(buffer);
    return r.ok() ? succeed() : fail(synFailedToFreeDeviceMemory, "synDeviceFree: " + r.message);
  });
}

synStatus synMemCopyAsync(synStreamHandle stream, uint64_t src, uint64_t size, uint64_t dst, synDmaDir direction) {
  return on_stream("synMemCopyAsync", stream, [&](Device& d, Stream& stream_state) {
    Stream* st = &stream_state;
    uint64_t seq = 0;
    hpusim::synapse::graph::Result r;
    // Host memory mapped for the device already (synHostMalloc, synHostMap) is reached through that
    // mapping: no page-table writes or MMU invalidation while a launch runs. 0 when
    // [host, host + size) is not inside one.
    const auto mapped_va = [&](uint64_t host) -> uint64_t {
      auto it = d.host_buffers.upper_bound(reinterpret_cast<const void*>(static_cast<uintptr_t>(host)));
      if (it == d.host_buffers.begin()) return 0;
      --it;
      const uint64_t start = reinterpret_cast<uintptr_t>(it->first);
      if (host < start || size > it->second.bytes || host - start > it->second.bytes - size) return 0;
      return it->second.device_va + (host - start);
    };
    switch (direction) {
      case HOST_TO_DRAM:
        if (const uint64_t va = mapped_va(src)) {
          r = d.runtime->copy_mapped_to_device(va, dst, size, &seq, st->queue);
        } else {
          r = d.runtime->copy_to_device(reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), dst, size, &seq,
                                        st->queue);
        }
        break;
      case DRAM_TO_HOST:
        if (const uint64_t va = mapped_va(dst)) {
          r = d.runtime->copy_mapped_to_host(src, va, size, &seq, st->queue);
        } else {
          r = d.runtime->copy_to_host(src, reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), size, &seq, st->queue);
        }
        break;
      case DRAM_TO_DRAM:
        r = d.runtime->copy_on_device(src, dst, size, &seq, st->queue);
        break;
      default:
        return fail(synInvalidArgument, "synMemCopyAsync: unknown direction");
    }
    if (!r.ok()) return finish(r);
    st->last_seq = seq;
    st->waits.clear();   // the device orders this submission after them
    return succeed();
  });
}

// The memsets: a 32-bit pattern over numOfElements x element bytes.
static synStatus memset_pattern(const char* function, uint64_t deviceMem, uint32_t pattern, uint64_t bytes,
                         synStreamHandle stream) {
  return on_stream(function, stream, [&](Device& d, Stream& stream_state) {
    Stream* st = &stream_state;
    uint64_t seq = 0;
    if (const auto r = d.runtime->memset_device(deviceMem, pattern, bytes, &seq, st->queue); !r.ok()) {
      return fail(synInvalidArgument, std::string(function) + ": " + r.message);
    }
    st->last_seq = seq;
    st->waits.clear();   // the device orders this submission after them
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


}  // extern "C"
