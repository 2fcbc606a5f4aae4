// hpusim._C: the few functions torch.hpu needs from the bridge's core, for Python. It loads the
// core library, which registers the HPU allocator, guard, hooks and kernels with torch.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bridge/core/card.h"
#include "bridge/core/fallback.h"
#include "bridge/core/generator.h"
#include "bridge/core/hpu_device.h"
#include "bridge/core/hpu_graph.h"
#include "bridge/core/lazy.h"
#include "bridge/core/lowering.h"
#include "bridge/core/metric_events.h"

namespace py = pybind11;
namespace bridge = hpusim::bridge;

namespace hpusim::bridge {
void add_distributed(py::module_& m);   // distributed.cpp
void release_hccl_communicators();      // process_group_hccl.h
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "hpusim's PyTorch bridge (the simulated card as torch's 'hpu' device)";
  bridge::add_distributed(m);
  py::register_exception<bridge::SynapseError>(m, "SynapseError", PyExc_RuntimeError);
  m.def("device_count", [] { return bridge::Card::count() > 0 ? 1 : 0; });
  m.def("init", [] { bridge::Card::get(); });
  m.def("device_acquired", &bridge::Card::acquired);
  m.def("synchronize", [] {
    py::gil_scoped_release release;
    bridge::flush_pending("synchronize");
    bridge::Card::get().synchronize();
  });
  m.def("mark_step", [](bool sync) {
    py::gil_scoped_release release;
    bridge::flush_pending("mark_step");
    if (sync) bridge::Card::get().synchronize();
  });
  m.def("manual_seed", [](uint64_t seed) {
    auto* g = bridge::hpu_generator(std::nullopt);
    const std::lock_guard<std::mutex> lock(g->mutex_);
    g->set_current_seed(seed);
  });
  m.def("initial_seed", [] { return bridge::hpu_generator(std::nullopt)->current_seed(); });
  m.def("rng_state", [] {
    auto* g = bridge::hpu_generator(std::nullopt);
    const std::lock_guard<std::mutex> lock(g->mutex_);
    return std::make_pair(g->current_seed(), g->get_offset());
  });
  m.def("set_rng_state", [](uint64_t seed, uint64_t offset) {
    auto* g = bridge::hpu_generator(std::nullopt);
    const std::lock_guard<std::mutex> lock(g->mutex_);
    g->set_current_seed(seed);
    g->set_offset(offset);
  });
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    if (!bridge::Card::acquired()) return;
    bridge::flush_pending("exit");
    bridge::release_hccl_communicators();
    bridge::Card::get().close();
  });
  m.def("host_time_ns", [] {
    uint64_t ns = 0;
    if (!bridge::Card::acquired() || hpusim_hostTimeNs(&ns) != synSuccess) return uint64_t{0};
    return ns;
  });
  m.def("trace_span", [](const std::string& name, uint64_t start_ns) {
    py::gil_scoped_release release;
    bridge::Card::get().trace_span(name.c_str(), start_ns);
  }, "a slice `name` on the timeline's framework track from host time start_ns to now");
  m.def("trace_set_recording", [](bool on) {
    py::gil_scoped_release release;
    bridge::Card::get();   // the platform is up
    int was = 0;
    const synStatus status = hpusim_traceSetRecording(on ? 1 : 0, &was);
    if (status != synSuccess) throw bridge::SynapseError("hpusim_traceSetRecording", status);
    return was != 0;
  }, "start or stop recording on the simulator's timeline; whether it recorded before");
  m.def("trace_write_chrome_json", [](const std::string& path) {
    py::gil_scoped_release release;
    bridge::Card::get();
    const synStatus status = hpusim_traceWriteChromeJson(path.c_str());
    if (status != synSuccess) throw bridge::SynapseError("hpusim_traceWriteChromeJson", status);
  }, "write what the simulator's timeline recorded so far as Chrome JSON");
  m.def("trace_discard", [] {
    py::gil_scoped_release release;
    bridge::Card::get();
    const synStatus status = hpusim_traceDiscard();
    if (status != synSuccess) throw bridge::SynapseError("hpusim_traceDiscard", status);
  }, "drop what the simulator's timeline recorded so far (its tracks stay)");
  m.def("device_busy_ns", [] {
    py::gil_scoped_release release;
    return bridge::Card::get().device_busy_ns();
  });
  m.def("host_wait_ns", [] { return bridge::Card::acquired() ? bridge::Card::get().host_wait_ns() : uint64_t{0}; });
  m.def("device_name", [] {
    synDeviceInfo info{};
    const synStatus status = synDeviceGetInfo(bridge::Card::get().id(), &info);
    if (status != synSuccess) throw bridge::SynapseError("synDeviceGetInfo", status);
    return std::string(info.deviceType == synDeviceGaudi3 ? "GAUDI3" : info.deviceType == synDeviceGaudi2 ? "GAUDI2" : "GAUDI");
  });
  // Streams and events by handle (an integer): what torch.hpu.Stream / Event hold. Work pending
  // in lazy mode is launched before anything that orders or waits on the device.
  using Handle = uintptr_t;
  const auto stream_of = [](Handle h) { return reinterpret_cast<synStreamHandle>(h); };
  const auto event_of = [](Handle h) { return reinterpret_cast<synEventHandle>(h); };
  m.def("stream_create", [] { return reinterpret_cast<Handle>(bridge::Card::get().create_stream()); });
  m.def("stream_destroy", [stream_of](Handle h) { bridge::Card::get().destroy_stream(stream_of(h)); });
  m.def("default_stream", [] { return reinterpret_cast<Handle>(bridge::Card::get().default_stream()); });
  m.def("current_stream", [] { return reinterpret_cast<Handle>(bridge::Card::get().stream()); });
  m.def("set_current_stream", [stream_of](Handle h) {
    py::gil_scoped_release release;
    bridge::flush_pending("stream switch");   // what was recorded goes to the stream it was recorded on
    bridge::Card::set_current_stream(h == 0 ? nullptr : stream_of(h));
  });
  m.def("stream_synchronize", [stream_of](Handle h) {
    py::gil_scoped_release release;
    bridge::flush_pending("stream synchronize");
    bridge::Card::get().synchronize_stream(stream_of(h));
  });
  m.def("stream_query", [stream_of](Handle h) {
    py::gil_scoped_release release;
    bridge::flush_pending("stream query");
    return bridge::Card::get().stream_done(stream_of(h));
  });
  m.def("stream_wait_event", [stream_of, event_of](Handle s, Handle e) {
    bridge::Card::get().stream_wait_event(stream_of(s), event_of(e));
  });
  m.def("event_create", [](bool timing) { return reinterpret_cast<Handle>(bridge::Card::get().create_event(timing)); });
  m.def("event_destroy", [event_of](Handle h) { bridge::Card::get().destroy_event(event_of(h)); });
  m.def("event_record", [stream_of, event_of](Handle e, Handle s) {
    py::gil_scoped_release release;
    bridge::flush_pending("event record");
    bridge::Card::get().record_event(event_of(e), stream_of(s));
  });
  m.def("event_synchronize", [event_of](Handle h) {
    py::gil_scoped_release release;
    bridge::Card::get().synchronize_event(event_of(h));
  });
  m.def("event_query", [event_of](Handle h) { return bridge::Card::get().event_done(event_of(h)); });
  m.def("event_elapsed_ms", [event_of](Handle a, Handle b) {
    py::gil_scoped_release release;
    return bridge::Card::get().elapsed_ms(event_of(a), event_of(b));
  });
  m.def("lazy_mode", [] { return !bridge::Lazy::get().eager(); });
  py::class_<bridge::HpuGraph>(m, "HpuGraph")
      .def(py::init<>())
      .def("capture_begin", [](bridge::HpuGraph& g, bool in_eager_mode) {
        py::gil_scoped_release release;
        g.capture_begin(in_eager_mode);
      }, py::arg("in_eager_mode") = false)
      .def("capture_end", [](bridge::HpuGraph& g) {
        py::gil_scoped_release release;
        g.capture_end();
      })
      .def("replay", [](bridge::HpuGraph& g) {
        py::gil_scoped_release release;
        g.replay();
      })
      .def("replay_with", [](bridge::HpuGraph& g, const std::map<uintptr_t, uint64_t>& bases) {
        py::gil_scoped_release release;
        g.replay(bases);
      })
      .def("reset", &bridge::HpuGraph::reset)
      .def("capture_abort", &bridge::HpuGraph::capture_abort)
      .def("captured", &bridge::HpuGraph::captured)
      .def("launches", &bridge::HpuGraph::launches);
  m.def("is_capturing", [] { return bridge::Lazy::get().capturing() != nullptr; });
  m.def("begin_region", [] {
    py::gil_scoped_release release;
    bridge::Lazy::get().begin_region();
  });
  m.def("end_region", [](bool launch) {
    py::gil_scoped_release release;
    bridge::Lazy::get().end_region(launch);
  }, py::arg("launch") = true);

  m.def("graph_counters", [] {
    const bridge::GraphCounters c = bridge::Lazy::get().counters();
    py::dict d;
    d["graphs"] = c.graphs;
    d["compiles"] = c.compiles;
    d["eager_compiles"] = c.eager_compiles;
    d["cache_hits"] = c.cache_hits;
    d["compile_wall_us"] = c.compile_wall_us;
    d["ops_recorded"] = c.ops_recorded;
    d["captured_launches"] = c.captured_launches;
    d["replayed_launches"] = c.replayed_launches;
    d["hits_by_recipe"] = c.hits_by_recipe;
    d["misses_by_recipe"] = c.misses_by_recipe;
    d["compiled_recipes"] = c.compiled_recipes;
    return d;
  });
  m.def("mem_get_info", [] { return bridge::Card::get().memory_info(); });
  // The real stack's keys (habana_frameworks.torch.hpu.memory_stats).
  m.def("memory_stats", [] {
    const bridge::MemoryStats s = bridge::memory_stats();
    const auto [free, total] = bridge::Card::get().memory_info();
    (void)free;
    py::dict d;
    d["Limit"] = total;
    d["InUse"] = s.allocated_bytes;
    d["MaxInUse"] = s.peak_allocated_bytes;
    d["NumAllocs"] = s.allocations;
    d["NumFrees"] = s.frees;
    d["ActiveAllocs"] = s.live_allocations;
    d["MaxAllocSize"] = s.largest_allocation;
    d["TotalSystemAllocs"] = s.total_allocations;
    d["TotalSystemFrees"] = s.total_frees;
    d["TotalActiveAllocs"] = s.live_allocations;
    return d;
  });
  m.def("reset_peak_memory_stats", &bridge::reset_peak_memory_stats);
  m.def("reset_accumulated_memory_stats", &bridge::reset_accumulated_memory_stats);
  m.def("fallback_counts", &bridge::fallback_counts);
  m.def("enable_metric_events", &bridge::enable_metric_events);
  m.def("take_metric_events", [] {
    py::list events;
    for (const bridge::MetricEvent& e : bridge::take_metric_events())
      events.append(py::make_tuple(e.metric, e.detail, e.value, e.timestamp_us));
    return events;
  });
  m.def("fallback_summary", &bridge::fallback_summary);
  m.def("fallback_logging", [] { return bridge::fallback_policy().log_calls; });
}
