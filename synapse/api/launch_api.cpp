// The C API's compile, launch, recipe and hpusim_ extension entry points (the session:
// session.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
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

namespace {

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

// The graph's nodes in order with their constants ("add_f32(0.5) relu_fwd_f32 ..."), shortened:
// what a trace reader compares to see what changed between two compiles of a graph.
std::string signature(const hpusim::synapse::graph::Graph& graph) {
  constexpr size_t kMaxChars = 4000;
  std::string out;
  for (size_t i = 0; i < graph.node_count() && out.size() < kMaxChars; ++i) {
    const auto& node = graph.node(hpusim::synapse::graph::NodeId{static_cast<uint32_t>(i)});
    if (!out.empty()) out += ' ';
    out += node.guid;
    if (!node.params.scalars.empty() || !node.params.attributes.empty()) {
      out += '(';
      bool first = true;
      char number[32];
      for (float v : node.params.scalars) {
        std::snprintf(number, sizeof number, "%s%.9g", first ? "" : ",", static_cast<double>(v));
        out += number;
        first = false;
      }
      for (const auto& [key, value] : node.params.attributes) {
        out += (first ? "" : ",") + key + "=" + std::to_string(value);
        first = false;
      }
      out += ')';
    }
  }
  if (out.size() >= kMaxChars) out += " ...";
  return out;
}

// Runs body(Device&) on the device of the last launch, under its lock.
template <class Body>
synStatus on_last_launch(const char* function, Body body) {
  std::optional<synDeviceId> id;
  const synStatus status = locked(function, [&](Session& s) {
    if (!s.any_acquired()) return fail(synNoDeviceFound, std::string(function) + ": no device is acquired");
    id = s.last_launch_device;
    if (!id) return fail(synObjectNotInitialized, std::string(function) + ": nothing launched yet");
    return succeed();
  });
  if (status != synSuccess) return status;
  return on_device(function, *id, body);
}

}  // namespace

extern "C" {

// ---- compile, launch, recipes ----

synStatus synGraphCompile(synRecipeHandle* recipeHandle, synGraphHandle graph, const char* recipeName,
                          const char* buildLog) {
  (void)buildLog;
  const std::string name = recipeName != nullptr ? recipeName : "";
  hpusim::synapse::graph::Graph copy;
  if (!api::copy_graph(graph, &copy)) {
    return fail(synInvalidArgument, graph ? "synGraphCompile: not a live graph handle" : "synGraphCompile: graph is NULL");
  }
  // Compiled for the first acquired device's target (every card of a box is built from one preset);
  // the time goes on that device's track.
  std::shared_ptr<Device> device;
  const synStatus found = locked("synGraphCompile", [&](Session& s) {
    if (!s.initialized) return need_init("synGraphCompile");
    for (const auto& d : s.devices) {
      if (d) {
        device = d;
        break;
      }
    }
    if (!device) return fail(synNoDeviceFound, "synGraphCompile: no device is acquired (recipes are for a card)");
    if (!recipeHandle) return fail(synInvalidArgument, "synGraphCompile: recipeHandle is NULL");
    return succeed();
  });
  if (found != synSuccess) return found;
  return on_device("synGraphCompile", device->id, [&](Device& d) {
    std::shared_ptr<const recipe::Recipe> compiled;
    const uint64_t start_ps = d.runtime->host_now_ps();
    const uint64_t nodes = copy.node_count();
    charge(hpusim::platform::HostWork::kGraphHashPerNode, nodes);
    charge(hpusim::platform::HostWork::kRecipeLookup);
    bool hit = false;
    hpusim::synapse::graph::Result r;
    {
      std::lock_guard<HostLock> lock(session().mutex);   // device, then session
      if (!session().compiler) return need_init("synGraphCompile");
      r = session().compiler->compile(copy, d.runtime->target(), &compiled, &hit);
      if (r.ok()) {
        const uint64_t key = new_handle_key();
        session().recipes[key] = compiled;
        *recipeHandle = handle_of<synRecipeHandle>(key);
      }
    }
    if (!hit) charge(hpusim::platform::HostWork::kCompilePerNode, nodes);
    if (r.ok() && !name.empty()) d.graph_names[compiled->graph_hash()] = name;
    if (d.tracing()) {
      std::vector<hpusim::traces::Arg> args{{"graph", name}, {"nodes", nodes}, {"nodes and constants", signature(copy)}};
      if (r.ok()) args.push_back({"hash", hex(compiled->graph_hash())});
      host_span(d, hit ? "recipe cache hit" : (r.ok() ? "compile" : "compile (failed)"), start_ps, false,
                std::move(args));
    }
    if (!r.ok()) return finish(r);
    return succeed();
  });
}

// The recipe behind a live handle, or nullptr.
static std::shared_ptr<const recipe::Recipe> recipe_of(synRecipeHandle handle) {
  std::lock_guard<HostLock> lock(session().mutex);
  auto it = session().recipes.find(key_of(handle));
  return it == session().recipes.end() ? nullptr : it->second;
}

synStatus synWorkspaceGetSize(uint64_t* size, synRecipeHandle recipeHandle) {
  return guard("synWorkspaceGetSize", [&] {
    const auto recipe = recipe_of(recipeHandle);
    if (!recipe || !size) return fail(synInvalidArgument, "synWorkspaceGetSize: not a live recipe handle, or size is NULL");
    *size = recipe->workspace_bytes();
    return succeed();
  });
}

synStatus synLaunch(synStreamHandle stream, const synLaunchTensorInfo* infos, uint32_t count, uint64_t pWorkspace,
                    synRecipeHandle recipeHandle, uint32_t flags) {
  const std::shared_ptr<const recipe::Recipe> recipe = recipe_of(recipeHandle);
  return on_stream("synLaunch", stream, [&](Device& d, Stream& stream_state) {
    Stream* st = &stream_state;
    if (!recipe) return fail(synInvalidArgument, "synLaunch: not a live recipe handle");
    if (flags != 0) return fail(synInvalidArgument, "synLaunch: flags must be 0");
    if (count > 0 && !infos) return fail(synInvalidArgument, "synLaunch: launchTensorsInfo is NULL");
    const recipe::Recipe& rec = *recipe;
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
    const uint64_t start_ps = d.runtime->host_now_ps();
    std::shared_ptr<rt::LoadedRecipe>& loaded = d.loaded[{rec.graph_hash(), rec.target()}];
    if (!loaded) {
      if (const auto l = d.runtime->load(rec, &loaded); !l.ok()) {
        d.loaded.erase({rec.graph_hash(), rec.target()});
        return finish(l);
      }
      if (d.timeline) {   // the device's TPC tracks name each kernel by the node that runs it
        std::lock_guard<std::mutex> lock(d.timeline->mutex());
        for (const recipe::NodeRecord& node : rec.nodes())
          if (node.engine() == "tpc") d.timeline->label_kernel(loaded->program_address() + node.program_offset(), node.guid());
        // A node's other kernels (parts of several launches) where no node's own kernel is there.
        for (const recipe::NodeRecord& node : rec.nodes())
          for (uint64_t offset : node.part_program_offsets())
            d.timeline->label_kernel_if_unnamed(loaded->program_address() + offset, node.guid());
      }
    }
    const uint64_t host_start_ps = d.runtime->host_now_ps();   // the launch itself (a first launch loads, above)
    uint64_t patches = 0;
    // The tensor and program addresses; the sync-object relocations are one base added to each
    // field as the command buffers are prepared, not charged per patch.
    for (const auto& job : rec.jobs()) {
      for (const auto& patch : job.patches()) {
        const bool sync = patch.section() == recipe::SECTION_SYNC_OBJECTS || patch.section() == recipe::SECTION_SYNC_GROUPS;
        if (!sync) ++patches;
      }
    }
    charge(hpusim::platform::HostWork::kLaunch);
    charge(hpusim::platform::HostWork::kLaunchPerPatch, patches);
    // Launches run on the launch queue; from a stream of another queue, the launch follows that
    // stream's work and the events it waits for, on the device.
    if (st->queue != rt::Runtime::kLaunchQueue &&
        (!d.runtime->completed(st->last_seq) || d.runtime->has_device_waits(st->queue))) {
      rt::Runtime::Signal before;
      if (const auto l = d.runtime->signal(st->queue, &before, nullptr); !l.ok()) return finish(l);
      if (const auto l = d.runtime->wait_on_device(rt::Runtime::kLaunchQueue, before); !l.ok()) return finish(l);
    }
    uint64_t seq = 0;
    if (const auto l = d.runtime->launch(*loaded, addresses, pWorkspace, &seq); !l.ok()) return finish(l);
    ++d.launch_counters.launches;
    d.launch_counters.patches += patches;
    d.launch_counters.hostNanoseconds += (d.runtime->host_now_ps() - host_start_ps) / 1000;
    st->last_seq = seq;
    st->waits.clear();   // the device orders the launch after them
    d.last_launch_seq = seq;
    {
      std::lock_guard<HostLock> lock(session().mutex);   // device, then session
      session().last_launch_device = d.id;
    }
    flush_spans(d, false);
    const auto named = d.graph_names.find(rec.graph_hash());
    const std::string name = "launch " + (named != d.graph_names.end() ? named->second : hex(rec.graph_hash()));
    const uint64_t flow = host_span(d, name, start_ps, true);
    if (d.tracing()) d.pending_spans.push_back({seq, d.runtime->submit_time_ps(seq), flow, name});
    return succeed();
  });
}

synStatus synRecipeDestroy(synRecipeHandle recipeHandle) {
  return locked("synRecipeDestroy", [&](Session& s) {
    if (!s.recipes.erase(key_of(recipeHandle))) return fail(synInvalidArgument, "synRecipeDestroy: not a live recipe handle");
    return succeed();   // its loaded form stays on each device for the next launch of the graph
  });
}

synStatus synRecipeSerialize(synRecipeHandle recipeHandle, const char* fileName) {
  return guard("synRecipeSerialize", [&] {
    const auto recipe = recipe_of(recipeHandle);
    if (!recipe || !fileName) return fail(synInvalidArgument, "synRecipeSerialize: not a live recipe handle, or fileName is NULL");
    const std::vector<uint8_t> bytes = recipe::serialize(*recipe);
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
    const uint64_t key = new_handle_key();
    s.recipes[key] = std::move(parsed);
    *recipeHandle = handle_of<synRecipeHandle>(key);
    return succeed();
  });
}

synStatus hpusim_hostTimeNs(uint64_t* nanoseconds) {
  return locked("hpusim_hostTimeNs", [&](Session& s) {
    if (!s.any_acquired()) return fail(synNoDeviceFound, "hpusim_hostTimeNs: no device is acquired");
    if (!nanoseconds) return fail(synInvalidArgument, "hpusim_hostTimeNs: NULL result");
    hpusim::platform::HostServices* host = hpusim::platform::host_services();
    if (!host) return fail(synNoDeviceFound, "hpusim_hostTimeNs: no platform");
    *nanoseconds = host->host_now_ps() / 1000;   // the calling thread's host clock
    return succeed();
  });
}

synStatus hpusim_hostWork(synDeviceId deviceId, hpusim_HostWork work, uint64_t count, const char* what) {
  return on_device("hpusim_hostWork", deviceId, [&](Device& d) {
    using hpusim::platform::HostWork;
    HostWork kind;
    switch (work) {
      case HPUSIM_HOST_OP_RECORD: kind = HostWork::kOpRecord; break;
      case HPUSIM_HOST_EAGER_OP: kind = HostWork::kEagerOp; break;
      case HPUSIM_HOST_GRAPH_BUILD_PER_NODE: kind = HostWork::kGraphBuildPerNode; break;
      case HPUSIM_HOST_CPU_FALLBACK_OP: kind = HostWork::kCpuFallbackOp; break;
      case HPUSIM_HOST_GRAPH_REPLAY: kind = HostWork::kGraphReplay; break;
      default:
        return fail(synInvalidArgument, "hpusim_hostWork: unknown host work " + std::to_string(static_cast<int>(work)));
    }
    const uint64_t start_ps = d.runtime->host_now_ps();
    charge(kind, count);
    if (d.tracing()) {
      const uint64_t end_ps = d.runtime->host_now_ps();
      const std::string track_name = d.track_name("ops");   // before the timeline's lock: it takes the host clock's
      std::lock_guard<std::mutex> lock(d.timeline->mutex());
      const auto track = d.timeline->track(d.timeline->process("host: framework"), track_name);
      d.timeline->writer().complete_slice(track, start_ps / 1000, std::max(end_ps / 1000, start_ps / 1000 + 1),
                                          what && *what ? what : "host work", {}, {});
    }
    return succeed();
  });
}

synStatus hpusim_traceSpan(synDeviceId deviceId, const char* name, uint64_t startNanoseconds) {
  if (name == nullptr || *name == '\0') return fail(synInvalidArgument, "hpusim_traceSpan: name is NULL or empty");
  return on_device("hpusim_traceSpan", deviceId, [&](Device& d) {
    if (!d.tracing()) return succeed();
    const uint64_t end_ns = d.runtime->host_now_ps() / 1000;
    if (startNanoseconds > end_ns) {
      return fail(synInvalidArgument, "hpusim_traceSpan: start " + std::to_string(startNanoseconds) +
                                          " ns is after the host time now (" + std::to_string(end_ns) + " ns)");
    }
    const std::string track_name = d.track_name("ops");   // before the timeline's lock: it takes the host clock's
    std::lock_guard<std::mutex> lock(d.timeline->mutex());
    const auto track = d.timeline->track(d.timeline->process("host: framework"), track_name);
    d.timeline->writer().complete_slice(track, startNanoseconds, std::max(end_ns, startNanoseconds + 1), name, {}, {});
    return succeed();
  });
}

synStatus hpusim_deviceBusyNs(synDeviceId deviceId, uint64_t* busyNanoseconds) {
  if (!busyNanoseconds) return fail(synInvalidArgument, "hpusim_deviceBusyNs: NULL result");
  return on_device("hpusim_deviceBusyNs", deviceId, [&](Device& d) {
    hpusim::uapi::hl_info_hpusim_device_busy busy{};
    if (hpusim::hlthunk::device_busy(d.fd, &busy) != 0) return fail(synFail, "hpusim_deviceBusyNs: the driver's INFO failed");
    *busyNanoseconds = busy.busy_ns;
    return succeed();
  });
}

synStatus hpusim_traceToFile(const char* path) {
  return locked("hpusim_traceToFile", [&](Session& s) {
    if (!s.initialized) return need_init("hpusim_traceToFile");
    if (s.any_acquired()) return fail(synBusy, "hpusim_traceToFile: call it before acquiring a device");
    s.trace_path = path ? path : "";
    return succeed();
  });
}

synStatus hpusim_traceSetRecording(int on, int* wasRecording) {
  return guard("hpusim_traceSetRecording", [&] {
    hpusim::platform::HostServices* host = hpusim::platform::host_services();
    hpusim::traces::Timeline* timeline = host != nullptr ? host->timeline() : nullptr;
    if (timeline == nullptr) return fail(synNoDeviceFound, "hpusim_traceSetRecording: no platform (acquire a device first)");
    std::lock_guard<std::mutex> lock(timeline->mutex());
    if (wasRecording) *wasRecording = timeline->enabled() ? 1 : 0;
    timeline->set_recording(on != 0);
    return succeed();
  });
}

synStatus hpusim_traceWriteChromeJson(const char* path) {
  return guard("hpusim_traceWriteChromeJson", [&] {
    if (path == nullptr || *path == '\0') return fail(synInvalidArgument, "hpusim_traceWriteChromeJson: path is NULL or empty");
    hpusim::platform::HostServices* host = hpusim::platform::host_services();
    hpusim::traces::Timeline* timeline = host != nullptr ? host->timeline() : nullptr;
    if (timeline == nullptr) return fail(synNoDeviceFound, "hpusim_traceWriteChromeJson: no platform (acquire a device first)");
    std::lock_guard<std::mutex> lock(timeline->mutex());
    try {
      timeline->writer().write_chrome_json(path);
    } catch (const std::exception& e) {
      return fail(synFail, std::string("hpusim_traceWriteChromeJson: ") + e.what());
    }
    return succeed();
  });
}

synStatus hpusim_traceDiscard(void) {
  return guard("hpusim_traceDiscard", [&] {
    hpusim::platform::HostServices* host = hpusim::platform::host_services();
    hpusim::traces::Timeline* timeline = host != nullptr ? host->timeline() : nullptr;
    if (timeline == nullptr) return fail(synNoDeviceFound, "hpusim_traceDiscard: no platform (acquire a device first)");
    std::lock_guard<std::mutex> lock(timeline->mutex());
    timeline->writer().clear_events();
    return succeed();
  });
}

synStatus hpusim_launchCounters(hpusim_LaunchCounters* counters) {
  std::vector<std::shared_ptr<Device>> devices;
  const synStatus status = locked("hpusim_launchCounters", [&](Session& s) {
    if (!s.initialized) return need_init("hpusim_launchCounters");
    if (!counters) return fail(synInvalidArgument, "hpusim_launchCounters: counters is NULL");
    *counters = s.released_launch_counters;
    for (const auto& d : s.devices) {
      if (d) devices.push_back(d);
    }
    return succeed();
  });
  if (status != synSuccess) return status;
  return guard("hpusim_launchCounters", [&] {
    for (const auto& d : devices) {
      std::lock_guard<HostLock> lock(d->mutex);
      counters->launches += d->launch_counters.launches;
      counters->patches += d->launch_counters.patches;
      counters->hostNanoseconds += d->launch_counters.hostNanoseconds;
      if (d->runtime) counters->prepareNanoseconds += d->runtime->launch_prepare_ns();
    }
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
  if (!submitted || !completed) return fail(synInvalidArgument, "hpusim_lastLaunchWindowNs: NULL result");
  return on_last_launch("hpusim_lastLaunchWindowNs", [&](Device& d) {
    const uint64_t seq = d.last_launch_seq;   // the lock is let go while waiting
    if (const auto r = d.wait(seq); !r.ok()) return finish(r);
    uint64_t done = 0;
    if (const auto r = d.runtime->completion_time_ps(seq, &done); !r.ok()) return finish(r);
    *submitted = d.runtime->submit_time_ps(seq) / 1000;
    *completed = done / 1000;
    return succeed();
  });
}

synStatus hpusim_lastLaunchDeviceTime(uint64_t* nanoseconds) {
  if (!nanoseconds) return fail(synInvalidArgument, "hpusim_lastLaunchDeviceTime: NULL result");
  return on_last_launch("hpusim_lastLaunchDeviceTime", [&](Device& d) {
    const uint64_t seq = d.last_launch_seq;   // the lock is let go while waiting
    if (const auto r = d.wait(seq); !r.ok()) return finish(r);
    uint64_t done = 0;
    if (const auto r = d.runtime->completion_time_ps(seq, &done); !r.ok()) return finish(r);
    const uint64_t start = d.runtime->submit_time_ps(seq);
    *nanoseconds = done > start ? (done - start) / 1000 : 0;
    return succeed();
  });
}

}  // extern "C"
