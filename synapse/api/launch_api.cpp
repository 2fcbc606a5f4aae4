// The C API's compile, launch, recipe and hpusim_ extension entry points (the session:
// session.h).
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "synapse/api/session.h"
#include "synapse/recipe/recipe_file.h"
#include "synapse/recipe_cache/disk_cache_config.h"

namespace api = hpusim::synapse::api;
namespace compiler = hpusim::synapse::compiler;
namespace recipe = hpusim::synapse::recipe;
using namespace hpusim::synapse::api;   // the session and its helpers (session.h)

extern "C" {

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
    if (!s.acquired()) return fail(synNoDeviceFound, "synGraphCompile: no device is acquired (recipes are for a card)");
    if (!recipeHandle) return fail(synInvalidArgument, "synGraphCompile: recipeHandle is NULL");
    std::shared_ptr<const recipe::Recipe> compiled;
    const uint64_t start_ps = s.runtime->host_now_ps();
    const uint64_t nodes = copy.node_count();
    charge(s, hpusim::platform::HostWork::kGraphHashPerNode, nodes);
    charge(s, hpusim::platform::HostWork::kRecipeLookup);
    bool hit = false;
    const auto r = s.compiler->compile(copy, s.runtime->target(), &compiled, &hit);
    if (!hit) charge(s, hpusim::platform::HostWork::kCompilePerNode, nodes);
    host_span(s, hit ? "recipe cache hit" : (r.ok() ? "compile" : "compile (failed)"), start_ps);
    if (!r.ok()) return finish(r);
    const uint64_t key = new_handle_key();
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
    charge(s, hpusim::platform::HostWork::kLaunch);
    charge(s, hpusim::platform::HostWork::kLaunchPerPatch, patches);
    // Launches run on the launch queue; from a stream of another queue, the launch follows that
    // stream's work and the events it waits for, on the device.
    if (st->queue != rt::Runtime::kLaunchQueue &&
        (!s.runtime->completed(st->last_seq) || s.runtime->has_device_waits(st->queue))) {
      rt::Runtime::Signal before;
      if (const auto l = s.runtime->signal(st->queue, &before, nullptr); !l.ok()) return finish(l);
      if (const auto l = s.runtime->wait_on_device(rt::Runtime::kLaunchQueue, before); !l.ok()) return finish(l);
    }
    uint64_t seq = 0;
    if (const auto l = s.runtime->launch(*r->loaded, addresses, pWorkspace, &seq); !l.ok()) return finish(l);
    ++s.launch_counters.launches;
    s.launch_counters.patches += patches;
    s.launch_counters.hostNanoseconds += (s.runtime->host_now_ps() - host_start_ps) / 1000;
    st->last_seq = seq;
    st->waits.clear();   // the device orders the launch after them
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
    const uint64_t key = new_handle_key();
    s.recipes[key].recipe = std::move(parsed);
    *recipeHandle = handle_of<synRecipeHandle>(key);
    return succeed();
  });
}

synStatus hpusim_hostTimeNs(uint64_t* nanoseconds) {
  return locked("hpusim_hostTimeNs", [&](Session& s) {
    if (!s.acquired()) return fail(synNoDeviceFound, "hpusim_hostTimeNs: no device is acquired");
    if (!nanoseconds) return fail(synInvalidArgument, "hpusim_hostTimeNs: NULL result");
    *nanoseconds = s.runtime->host_now_ps() / 1000;
    return succeed();
  });
}

synStatus hpusim_traceToFile(const char* path) {
  return locked("hpusim_traceToFile", [&](Session& s) {
    if (!s.initialized) return need_init("hpusim_traceToFile");
    if (s.acquired()) return fail(synBusy, "hpusim_traceToFile: call it before acquiring the device");
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
    if (!s.acquired()) return fail(synNoDeviceFound, "hpusim_lastLaunchWindowNs: no device is acquired");
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
    if (!s.acquired()) return fail(synNoDeviceFound, "hpusim_lastLaunchDeviceTime: no device is acquired");
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
