#include "synapse/api/session.h"

#include <algorithm>
#include <cerrno>
#include <sstream>

#include "driver/device_file.h"
#include "synapse/hlthunk/hlthunk.h"

namespace hpusim::synapse::api {

Session& session() {
  static Session s;
  return s;
}

using hpusim::synapse::api::handle_of;
using hpusim::synapse::api::key_of;

synStatus need_init(const char* function) {
  return fail(synObjectNotInitialized, std::string(function) + ": synInitialize has not been called");
}

synStatus need_device(Session& s, const char* function, synDeviceId id) {
  if (!s.initialized) return need_init(function);
  if (!s.acquired()) return fail(synNoDeviceFound, std::string(function) + ": no device is acquired");
  if (id != 0) return fail(synInvalidArgument, std::string(function) + ": device " + std::to_string(id) + " does not exist (only 0)");
  return synSuccess;
}

synStatus acquire(Session& s, synDeviceId* id, const std::string& preset, const std::string& overrides) {
  if (!s.initialized) return need_init("synDeviceAcquire");
  if (!id) return fail(synInvalidArgument, "synDeviceAcquire: deviceId is NULL");
  if (s.acquired()) return fail(synDeviceAlreadyAcquired, "synDeviceAcquire: device 0 is already acquired");
  hpusim::platform::BootRequest request;
  request.preset = preset;
  request.trace_path = s.trace_path;
  std::stringstream list(overrides);
  for (std::string item; std::getline(list, item, ';');) {
    if (!item.empty()) request.overrides.push_back(item);
  }
  if (const std::string why = hpusim::platform::boot(request); !why.empty()) {
    return fail(synNoDeviceFound, "synDeviceAcquire: " + why);
  }
  const int fd = hpusim::driver::hl_open("/dev/hl0");
  if (fd < 0) {
    return fail(fd == -EBUSY ? synDeviceAlreadyAcquired : synNoDeviceFound,
                "synDeviceAcquire: /dev/hl0 could not be opened (" + std::to_string(fd) + ")");
  }
  try {
    s.runtime = std::make_unique<rt::Runtime>(fd);
  } catch (const std::exception& e) {
    hpusim::driver::hl_close(fd);
    return fail(synNoDeviceFound, std::string("synDeviceAcquire: ") + e.what());
  }
  s.fd = fd;
  hpusim::platform::HostServices* host = hpusim::platform::host_services();
  s.timeline = host != nullptr ? host->timeline() : nullptr;
  *id = 0;
  return succeed();
}

void release_device(Session& s) {
  flush_spans(s, true);
  for (auto& [key, r] : s.recipes) r.loaded.reset();
  for (auto& [key, loaded] : s.loaded) s.runtime->unload(*loaded);
  s.loaded.clear();
  for (auto& [pointer, buffer] : s.host_buffers) {
    hpusim::hlthunk::memory_unmap(s.fd, buffer.device_va);
    if (buffer.owned) std::free(const_cast<void*>(pointer));
  }
  s.host_buffers.clear();
  s.streams.clear();
  s.events.clear();
  s.runtime.reset();
  hpusim::driver::hl_close(s.fd);
  s.fd = -1;
  if (s.timeline) {
    if (hpusim::platform::HostServices* host = hpusim::platform::host_services()) host->write_trace();
  }
  s.timeline = nullptr;
}

void charge(Session&, hpusim::platform::HostWork work, uint64_t count) {
  if (hpusim::platform::HostServices* host = hpusim::platform::host_services()) host->charge(work, count);
}

// A slice on the "host: synapse" track from `start_ps` to now; returns the flow id it starts
// (0 without a timeline or when `with_flow` is false).
uint64_t host_span(Session& s, const std::string& name, uint64_t start_ps, bool with_flow) {
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
    // What a wait already told, without an ioctl: tracing must not charge host time or handle
    // interrupts the untraced run would not (that moved later host work into a running launch).
    const std::optional<uint64_t> done = s.runtime->take_completion_ps(p.seq);
    if (!done) {
      still.push_back(p);
      continue;
    }
    const uint64_t done_ps = *done;
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

synStatus stream_checks(Session& s, Stream*& stream, synStreamHandle handle, const char* function) {
  if (!s.initialized) return need_init(function);
  if (!s.acquired()) return fail(synNoDeviceFound, std::string(function) + ": no device is acquired");
  stream = find_stream(s, handle);
  if (!stream) return fail(synInvalidArgument, std::string(function) + (handle ? ": not a live stream handle" : ": stream is NULL"));
  return synSuccess;
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
    const uint64_t key = new_handle_key();
    s.streams[key].queue = queue;
    *stream = handle_of<synStreamHandle>(key);
    return succeed();
  });
}


}  // namespace hpusim::synapse::api
