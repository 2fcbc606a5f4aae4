#include "synapse/api/session.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "driver/device_file.h"
#include "synapse/hlthunk/hlthunk.h"

namespace hpusim::synapse::api {

Session& session() {
  static Session s;
  return s;
}

// Every holder also holds fallback_, so a thread that locked before the platform came up (during
// its boot) still excludes the ones that lock through the platform after it; those are ordered by
// the host lock first, so fallback_ is contended only then.
void HostLock::lock() {
  hpusim::platform::HostServices* host = hpusim::platform::host_services();
  if (host == nullptr) {
    fallback_.lock();
    on_fallback_ = true;
    return;
  }
  unsigned id = 0;
  {
    const std::lock_guard<std::mutex> setup(setup_);
    if (host_ != host) {   // the first use on this platform
      host_ = host;
      id_ = host->create_lock();
    }
    id = id_;
  }
  host->lock(id);
  fallback_.lock();
  on_fallback_ = false;
}

void HostLock::unlock() {
  const bool on_fallback = on_fallback_;
  fallback_.unlock();
  if (on_fallback) return;
  hpusim::platform::HostServices* host = nullptr;
  unsigned id = 0;
  {
    const std::lock_guard<std::mutex> setup(setup_);
    host = host_;
    id = id_;
  }
  host->unlock(id);
}

rt::Result Device::wait(uint64_t seq) {
  if (seq == 0) return rt::Result::success();
  if (fd < 0 || !runtime) return rt::Result::error(rt::Status::NoDeviceFound, "the device was released");
  const rt::Runtime& waiting = *runtime;
  mutex.unlock();
  rt::Runtime::WaitOutcome outcome;
  try {
    outcome = waiting.wait_cs(seq);
  } catch (...) {
    mutex.lock();
    throw;
  }
  mutex.lock();
  if (fd < 0 || !runtime) return rt::Result::error(rt::Status::NoDeviceFound, "the device was released while the host waited for it");
  return runtime->finish_wait(seq, outcome);
}

std::string Device::track_name(const char* base) const {
  std::string name = id == 0 ? std::string(base) : std::string(base) + " device" + std::to_string(id);
  // One track per host thread: slices of threads on their own clocks may overlap.
  hpusim::platform::HostServices* host = hpusim::platform::host_services();
  const std::string thread = host != nullptr ? host->host_thread_name() : "host";
  return thread == "host" ? name : name + " (" + thread + ")";
}

bool Session::any_acquired() const {
  return std::any_of(devices.begin(), devices.end(), [](const auto& d) { return d != nullptr; });
}

synStatus need_init(const char* function) {
  return fail(synObjectNotInitialized, std::string(function) + ": synInitialize has not been called");
}

synStatus find_device(Session& s, const char* function, synDeviceId id, std::shared_ptr<Device>* device) {
  if (!s.initialized) return need_init(function);
  if (id >= kMaxDevices || !s.devices[id]) {
    std::string acquired;
    for (unsigned i = 0; i < kMaxDevices; ++i) {
      if (s.devices[i]) acquired += (acquired.empty() ? "" : ", ") + std::to_string(i);
    }
    if (acquired.empty()) return fail(synNoDeviceFound, std::string(function) + ": no device is acquired");
    return fail(synInvalidArgument, std::string(function) + ": device " + std::to_string(id) +
                                         " is not acquired (acquired: " + acquired + ")");
  }
  *device = s.devices[id];
  return synSuccess;
}

std::shared_ptr<Device> owner_of(Session& s, uint64_t handle_key) {
  auto it = s.owners.find(handle_key);
  if (it == s.owners.end() || it->second >= kMaxDevices) return nullptr;
  return s.devices[it->second];
}

namespace {

// HPUSIM_CARDS: the cards of the box a program brings up (0: not set).
synStatus cards_from_environment(const char* function, unsigned* cards) {
  *cards = 0;
  const char* value = std::getenv("HPUSIM_CARDS");
  if (value == nullptr || *value == '\0') return synSuccess;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(value, &end, 10);
  if (errno != 0 || *end != '\0' || n < 1 || n > kMaxDevices || value[0] == '-' || value[0] == '+') {
    return fail(synInvalidArgument, std::string(function) + ": HPUSIM_CARDS='" + value +
                                         "': the number of cards in the box, 1 .. " + std::to_string(kMaxDevices));
  }
  *cards = static_cast<unsigned>(n);
  return synSuccess;
}

// HPUSIM_BOX: the box preset a program brings up (a built-in name or a file; empty: not set). The
// platform checks it and names what is wrong.
std::string box_from_environment() {
  const char* value = std::getenv("HPUSIM_BOX");
  return value != nullptr ? value : "";
}

// A whole number in 0 .. max from the environment variable `name` (`*out` untouched when unset).
bool integer_from_environment(const char* name, unsigned long max, unsigned long* out) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(value, &end, 10);
  if (errno != 0 || *end != '\0' || n > max || value[0] == '-' || value[0] == '+') return false;
  *out = n;
  return true;
}

// HPUSIM_DISTRIBUTED: "mpi" splits the box between the processes of an MPI run; "tcp" between
// processes that meet at HPUSIM_RENDEZVOUS (host:port), each knowing its RANK of WORLD_SIZE (as
// torchrun sets them), waiting HPUSIM_RENDEZVOUS_TIMEOUT seconds (300) for each other. Empty: not set.
synStatus distributed_from_environment(const char* function, hpusim::platform::BootRequest* request) {
  request->distributed = false;
  const char* value = std::getenv("HPUSIM_DISTRIBUTED");
  if (value == nullptr || *value == '\0') return synSuccess;
  const std::string how = value;
  if (how != "mpi" && how != "tcp") {
    return fail(synInvalidArgument, std::string(function) + ": HPUSIM_DISTRIBUTED='" + value +
                                         "': mpi (the box split between the processes of an MPI run), tcp (between "
                                         "processes meeting at HPUSIM_RENDEZVOUS) or unset");
  }
  request->distributed = true;
  if (how == "mpi") return synSuccess;
  const char* rendezvous = std::getenv("HPUSIM_RENDEZVOUS");
  unsigned long rank = 0, ranks = 0;
  if (rendezvous == nullptr || *rendezvous == '\0') {
    return fail(synInvalidArgument, std::string(function) + ": HPUSIM_DISTRIBUTED=tcp needs HPUSIM_RENDEZVOUS=host:port "
                                                             "(where rank 0 listens)");
  }
  if (!integer_from_environment("WORLD_SIZE", kMaxDevices, &ranks) || ranks < 1 ||
      !integer_from_environment("RANK", ranks - 1, &rank)) {
    const char* w = std::getenv("WORLD_SIZE");
    const char* r = std::getenv("RANK");
    return fail(synInvalidArgument, std::string(function) + ": HPUSIM_DISTRIBUTED=tcp needs this process's RANK of "
                                         "WORLD_SIZE processes (RANK='" + (r ? r : "") + "', WORLD_SIZE='" + (w ? w : "") +
                                         "'; at most " + std::to_string(kMaxDevices) + " processes)");
  }
  if (const char* timeout = std::getenv("HPUSIM_RENDEZVOUS_TIMEOUT"); timeout != nullptr && *timeout != '\0') {
    unsigned long seconds = 0;
    if (!integer_from_environment("HPUSIM_RENDEZVOUS_TIMEOUT", 86400, &seconds) || seconds == 0) {
      return fail(synInvalidArgument, std::string(function) + ": HPUSIM_RENDEZVOUS_TIMEOUT='" + timeout +
                                           "': seconds the ranks wait for each other at the rendezvous, 1 .. 86400");
    }
    request->rendezvous_timeout_s = static_cast<double>(seconds);
  }
  request->rendezvous = rendezvous;
  request->rank = static_cast<int>(rank);
  request->ranks = static_cast<int>(ranks);
  return synSuccess;
}

// HPUSIM_HOST_TIME: where host time comes from (empty: not set).
synStatus host_time_from_environment(const char* function, std::string* source) {
  source->clear();
  const char* value = std::getenv("HPUSIM_HOST_TIME");
  if (value == nullptr || *value == '\0') return synSuccess;
  if (std::string(value) != "modeled" && std::string(value) != "measured") {
    return fail(synInvalidArgument, std::string(function) + ": HPUSIM_HOST_TIME='" + value +
                                         "': the host clock's source, modeled (the preset's cost table) or measured "
                                         "(the host threads' CPU time)");
  }
  *source = value;
  return synSuccess;
}

// HPUSIM_TRACE_DETAIL: "packets" adds every QMAN packet and sync-object event to the trace.
synStatus trace_detail_from_environment(const char* function, bool* packets) {
  *packets = false;
  const char* value = std::getenv("HPUSIM_TRACE_DETAIL");
  if (value == nullptr || *value == '\0' || std::string(value) == "default") return synSuccess;
  if (std::string(value) != "packets") {
    return fail(synInvalidArgument, std::string(function) + ": HPUSIM_TRACE_DETAIL='" + value +
                                         "': the trace's detail, default (engines, host, launches) or packets "
                                         "(also every QMAN packet and sync-object event)");
  }
  *packets = true;
  return synSuccess;
}

}  // namespace

synStatus device_count(const char* function, unsigned* count) {
  unsigned asked = 0;
  if (const synStatus st = cards_from_environment(function, &asked); st != synSuccess) return st;
  if (hpusim::platform::HostServices* host = hpusim::platform::host_services()) {
    *count = host->cards();
  } else {
    *count = asked != 0 ? asked : 1;
  }
  return synSuccess;
}

synStatus acquire(const char* function, synDeviceId* id, const std::string& preset, const std::string& overrides) {
  return guard(function, [&] {
    std::shared_ptr<Device> device;
    hpusim::platform::HostServices* host = nullptr;
    {
      std::lock_guard<HostLock> lock(session().mutex);
      Session& s = session();
      if (!s.initialized) return need_init(function);
      if (!id) return fail(synInvalidArgument, std::string(function) + ": deviceId is NULL");
      hpusim::platform::BootRequest request;
      request.preset = preset;
      request.trace_path = s.trace_path;
      if (const synStatus st = cards_from_environment(function, &request.cards); st != synSuccess) return st;
      request.box = box_from_environment();
      if (const synStatus st = distributed_from_environment(function, &request); st != synSuccess) return st;
      if (const synStatus st = host_time_from_environment(function, &request.host_time); st != synSuccess) return st;
      if (const synStatus st = trace_detail_from_environment(function, &request.trace_packets); st != synSuccess) {
        return st;
      }
      std::stringstream list(overrides);
      for (std::string item; std::getline(list, item, ';');) {
        if (!item.empty()) request.overrides.push_back(item);
      }
      if (const std::string why = hpusim::platform::boot(request); !why.empty()) {
        return fail(synNoDeviceFound, std::string(function) + ": " + why);
      }
      host = hpusim::platform::host_services();
      const unsigned cards = host != nullptr ? std::min(host->cards(), kMaxDevices) : 1;
      synDeviceId free_id = 0;
      while (free_id < cards && s.devices[free_id]) ++free_id;
      if (free_id == cards) {
        return fail(synDeviceAlreadyAcquired, std::string(function) + ": every device of the box is acquired (" +
                                                  std::to_string(cards) + (cards == 1 ? " card)" : " cards)"));
      }
      device = std::make_shared<Device>(free_id);   // reserved; calls on it wait for its lock
      s.devices[free_id] = device;
    }
    std::lock_guard<HostLock> lock(device->mutex);
    const auto give_back = [&] {
      std::lock_guard<HostLock> session_lock(session().mutex);   // device, then session
      if (session().devices[device->id] == device) session().devices[device->id].reset();
    };
    const std::string path = "/dev/hl" + std::to_string(device->id);
    const int fd = hpusim::driver::hl_open(path.c_str());
    if (fd < 0) {
      give_back();
      return fail(fd == -EBUSY ? synDeviceAlreadyAcquired : synNoDeviceFound,
                  std::string(function) + ": " + path + " could not be opened (" + std::to_string(fd) + ")");
    }
    try {
      device->runtime = std::make_unique<rt::Runtime>(fd);
    } catch (const std::exception& e) {
      hpusim::driver::hl_close(fd);
      give_back();
      return fail(synNoDeviceFound, std::string(function) + ": " + e.what());
    }
    device->fd = fd;
    device->timeline = host != nullptr ? host->timeline() : nullptr;
    *id = device->id;
    return succeed();
  });
}

std::shared_ptr<Device> detach_device(Session& s, synDeviceId id) {
  std::shared_ptr<Device> device = std::move(s.devices[id]);
  for (auto it = s.owners.begin(); it != s.owners.end();) {
    it = it->second == id ? s.owners.erase(it) : std::next(it);
  }
  if (s.last_launch_device == id) s.last_launch_device.reset();
  return device;
}

void release_device(Device& d) {
  if (d.fd < 0) return;
  flush_spans(d, true);
  for (auto& [key, loaded] : d.loaded) d.runtime->unload(*loaded);
  d.loaded.clear();
  for (auto& [pointer, buffer] : d.host_buffers) {
    hpusim::hlthunk::memory_unmap(d.fd, buffer.device_va);
    if (buffer.owned) std::free(const_cast<void*>(pointer));
  }
  d.host_buffers.clear();
  d.streams.clear();
  d.events.clear();
  d.runtime.reset();
  hpusim::driver::hl_close(d.fd);
  d.fd = -1;
  if (d.timeline) {
    if (hpusim::platform::HostServices* host = hpusim::platform::host_services()) host->write_trace();
  }
  d.timeline = nullptr;
}

void charge(hpusim::platform::HostWork work, uint64_t count) {
  if (hpusim::platform::HostServices* host = hpusim::platform::host_services()) host->charge(work, count);
}

uint64_t host_span(Device& d, const std::string& name, uint64_t start_ps, bool with_flow,
                   std::vector<hpusim::traces::Arg> args) {
  if (!d.tracing()) return 0;
  const uint64_t end_ps = d.runtime->host_now_ps();
  const std::string track_name = d.track_name("api");   // before the timeline's lock: it takes the host clock's
  std::lock_guard<std::mutex> lock(d.timeline->mutex());
  auto& w = d.timeline->writer();
  // The flow the driver started for the CS this thread just submitted (the launch's).
  const uint64_t flow = with_flow ? hpusim::traces::Timeline::last_submitted_flow() : 0;
  const auto track = d.timeline->track(d.timeline->process("host: synapse"), track_name);
  w.complete_slice(track, start_ps / 1000, std::max(end_ps / 1000, start_ps / 1000 + 1), name, std::move(args),
                   flow ? std::vector<hpusim::traces::FlowId>{flow} : std::vector<hpusim::traces::FlowId>{});
  return flow;
}

void flush_spans(Device& d, bool wait_all) {
  if (!d.timeline) return;
  size_t next = 0;
  for (; next < d.pending_spans.size(); ++next) {
    const PendingSpan& p = d.pending_spans[next];
    if (wait_all) d.runtime->wait(p.seq);
    // What a wait already told, without an ioctl: tracing must not charge host time or handle
    // interrupts the untraced run would not (that moved later host work into a running launch).
    // Spans go out in submission order: a later one waits for the earlier ones.
    const std::optional<uint64_t> done = d.runtime->take_completion_ps(p.seq);
    if (!done) break;
    // A launch queued behind another starts when the device reaches it.
    const uint64_t start_ns = std::max(p.submit_ps / 1000, d.launch_span_end_ns);
    const uint64_t end_ns = std::max(*done / 1000, start_ns + 1);
    d.launch_span_end_ns = end_ns;
    const std::string track_name = d.track_name("launches");   // before the timeline's lock: it takes the host clock's
    std::lock_guard<std::mutex> lock(d.timeline->mutex());
    const auto track = d.timeline->track(d.timeline->process("device: recipes"), track_name);
    d.timeline->writer().complete_slice(track, start_ns, end_ns, p.name, {},
                                        p.flow ? std::vector<hpusim::traces::FlowId>{p.flow}
                                               : std::vector<hpusim::traces::FlowId>{});
  }
  d.pending_spans.erase(d.pending_spans.begin(), d.pending_spans.begin() + static_cast<std::ptrdiff_t>(next));
}

QueueId queue_of(synStreamType type) {
  switch (type) {
    case STREAM_TYPE_COPY_HOST_TO_DEVICE: return QueueId::DMA_0_1;
    case STREAM_TYPE_COPY_DEVICE_TO_HOST: return QueueId::DMA_1_0;
    case STREAM_TYPE_COPY_DEVICE_TO_DEVICE: return QueueId::DMA_0_2;
    case STREAM_TYPE_NETWORK_COLLECTIVE: return QueueId::DMA_1_1;   // collectives, beside the compute stream
    default: return QueueId::DMA_0_0;
  }
}

synStatus create_stream(synStreamHandle* stream, synDeviceId id, QueueId queue, uint32_t flags, const char* function) {
  uint64_t key = 0;
  const synStatus status = on_device(function, id, [&](Device& d) {
    if (!stream) return fail(synInvalidArgument, std::string(function) + ": stream is NULL");
    if (flags != 0) return fail(synInvalidArgument, std::string(function) + ": flags must be 0");
    key = new_handle_key();
    d.streams[key].queue = queue;
    return succeed();
  });
  if (status != synSuccess) return status;
  return locked(function, [&](Session& s) {
    s.owners[key] = id;
    *stream = handle_of<synStreamHandle>(key);
    return succeed();
  });
}

}  // namespace hpusim::synapse::api
