#include "synapse/api/session.h"

#include <algorithm>
#include <sstream>

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
const preset::HostCosts& costs(Session& s) { return s.device->preset().host(); }

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


}  // namespace hpusim::synapse::api
