#include "bridge/core/lazy.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bridge/core/card.h"
#include "bridge/core/hpu_graph.h"
#include "bridge/core/metric_events.h"

namespace hpusim::bridge {
namespace {

// A non-negative integer environment variable; `fallback` when unset; a bad value is an error
// that names the variable.
uint64_t env_count(const char* name, uint64_t fallback, uint64_t max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  TORCH_CHECK(errno == 0 && *end == '\0' && text[0] != '-' && value <= max, name, "='", text,
              "': expected an integer 0 .. ", max);
  return value;
}

}  // namespace

Lazy& Lazy::get() {
  static Lazy* lazy = new Lazy();   // pending work may be flushed by tensors freed at exit
  return *lazy;
}

Lazy::Lazy() {
  eager_ = env_count("PT_HPU_LAZY_MODE", 1, 1) == 0;
  const uint64_t limit = env_count("PT_HPU_MAX_COMPOUND_OP_SIZE", 0, INT64_MAX);
  max_ops_ = limit;
}

void Lazy::keep(const c10::Storage& storage) {
  kept_.emplace(reinterpret_cast<uintptr_t>(storage.unsafeGetStorageImpl()), storage);
}

bool Lazy::pending_uses(const c10::StorageImpl* storage) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (kept_.count(reinterpret_cast<uintptr_t>(storage)) != 0) return true;
  for (const Deferred& d : deferred_) {
    for (const c10::Storage& s : d.storages) {
      if (s.unsafeGetStorageImpl() == storage) return true;
    }
  }
  return false;
}

void Lazy::record_step(DeviceStep step, std::vector<c10::Storage> storages) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  deferring_ = capturing_ == nullptr;
  try {
    flush("lazy collective");
  } catch (...) {
    deferring_ = false;
    throw;
  }
  deferring_ = false;
  if (capturing_ != nullptr) {
    capturing_->add_step(std::move(step), std::move(storages));
  } else {
    deferred_.push_back({std::nullopt, std::move(step), std::move(storages)});
  }
}

void Lazy::submit_deferred() {
  if (deferred_.empty()) return;
  std::vector<Deferred> steps;
  steps.swap(deferred_);   // released once submitted, whatever happens
  const synStreamHandle stream = Card::get().stream();
  for (Deferred& d : steps) {
    if (d.launch) {
      d.launch->submit(stream);
    } else {
      d.step(stream);
    }
  }
}

void Lazy::op_recorded(const char* name) {
  ++counters_.ops_recorded;
  ++pending_ops_;
  const char* op = std::strncmp(name, "aten::", 6) == 0 ? name + 6 : name;
  Card::get().host_work(HPUSIM_HOST_OP_RECORD, 1, (std::string("record ") + op).c_str());
  if (eager_) Card::get().host_work(HPUSIM_HOST_EAGER_OP, 1, "eager dispatch");
  if (region_depth_ != 0) return;
  if (eager_ || (max_ops_ != 0 && pending_ops_ >= max_ops_)) flush(eager_ ? "eager op" : "op limit");
}

void Lazy::flush(const char* why) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  const std::string reason = why;
  if (capturing_ != nullptr && reason != "mark_step" && reason != "capture end" && reason != "op limit" &&
      reason != "lazy collective") {
    refuse_in_capture(reason);
  }
  pending_ops_ = 0;
  const std::string span = reason == "mark_step" ? "mark_step" : "flush: " + reason;
  if (capturing_ == nullptr && !deferring_ && !deferred_.empty()) {
    // Recorded before what is pending: submitted first, inside this launch's span.
    Card& card = Card::get();
    const uint64_t start = card.host_now_ns();
    submit_deferred();
    if (graph_.empty()) {
      kept_.clear();
      card.trace_span(span.c_str(), start);
      return;
    }
    return launch_pending(why, span, start);
  }
  if (graph_.empty()) {
    kept_.clear();
    return;
  }
  launch_pending(why, span, Card::get().host_now_ns());
}

void Lazy::launch_pending(const char* why, const std::string& span, uint64_t span_start) {
  const std::string reason = why;
  std::map<uintptr_t, c10::Storage> kept;
  kept.swap(kept_);   // released after the launch, whatever happens
  Card& card = Card::get();
  card.host_work(HPUSIM_HOST_GRAPH_BUILD_PER_NODE, graph_.node_count(), "graph build");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uintptr_t> written = graph_.written_storages();
  LaunchReport report;
  try {
    CapturedLaunch captured;
    report = graph_.launch(card.id(), card.stream(), why, [&](uintptr_t storage) {
      const auto it = kept.find(storage);
      // Anything beyond our own reference: a tensor somewhere can still read it.
      return it == kept.end() || it->second.use_count() > 1;
    }, capturing_ != nullptr || deferring_ ? &captured : nullptr);
    std::vector<c10::Storage> storages;
    if (capturing_ != nullptr || deferring_) {
      for (auto& [key, storage] : kept) storages.push_back(storage);
    }
    if (capturing_ != nullptr) {
      capturing_->add_launch(std::move(captured), std::move(storages));
      ++counters_.captured_launches;
    } else if (deferring_) {
      deferred_.push_back({std::move(captured), nullptr, std::move(storages)});
    }
  } catch (const std::exception& e) {
    for (uintptr_t key : written) {
      const auto it = kept.find(key);
      if (it != kept.end()) lost_.emplace_back(c10::weak_intrusive_ptr<c10::StorageImpl>(it->second.getWeakStorageImpl()), e.what());
    }
    throw;
  }
  const auto wall_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
  char recipe[24];
  std::snprintf(recipe, sizeof recipe, "%016llx", static_cast<unsigned long long>(report.graph_hash));
  if (capturing_ == nullptr) ++counters_.graphs;   // a captured graph runs at its replays
  if (report.compiled) {
    ++counters_.misses_by_recipe[recipe];
    if (eager_ && reason != "compiled graph" && capturing_ == nullptr) {
      ++counters_.eager_compiles;
    } else {
      ++counters_.compiles;
      counters_.compile_wall_us += wall_us;
      counters_.compiled_recipes.emplace_back(recipe, wall_us);
      metric_event("graph_compilation", recipe, wall_us);
    }
  } else {
    ++counters_.cache_hits;
    ++counters_.hits_by_recipe[recipe];
  }
  card.trace_span(span.c_str(), span_start);
}

void Lazy::begin_capture(HpuGraph* graph, bool in_eager_mode) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  TORCH_CHECK(!eager_ || in_eager_mode, "HPU graphs need lazy mode (PT_HPU_LAZY_MODE=1)");
  TORCH_CHECK(capturing_ == nullptr, "HPUGraph.capture_begin: another graph is capturing");
  flush("capture begin");
  capturing_ = graph;
}

void Lazy::end_capture() {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  flush("capture end");
  capturing_ = nullptr;
}

void Lazy::abort_capture() {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  graph_.clear();
  kept_.clear();
  pending_ops_ = 0;
  capturing_ = nullptr;
}

void Lazy::refuse_in_capture(const std::string& what, const std::string& detail) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (capturing_ == nullptr) return;
  abort_capture();
  std::string action = what;
  if (what == "copy to host") action = "copying a tensor to the host";
  if (what == "item") action = ".item()";
  if (what == "synchronize") action = "torch.hpu.synchronize()";
  if (what == "host write") action = "a host write into a tensor the capture uses";
  TORCH_CHECK(false, action, " is not supported during hpu graph capturing", detail.empty() ? "" : " (" + detail + ")");
}

void Lazy::begin_region() {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (region_depth_++ == 0) flush("region begin");
}

void Lazy::end_region(bool launch) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  TORCH_CHECK(region_depth_ > 0, "end_region without begin_region");
  if (--region_depth_ == 0 && launch) flush("compiled graph");
}

void Lazy::count_replay(uint64_t launches) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  counters_.replayed_launches += launches;
}

void Lazy::check_value(const c10::StorageImpl* storage) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (lost_.empty()) return;
  lost_.erase(std::remove_if(lost_.begin(), lost_.end(), [](const auto& l) { return l.first.expired(); }), lost_.end());
  for (const auto& [weak, why] : lost_) {
    TORCH_CHECK(weak.lock().get() != storage, "this HPU tensor's value was lost: the graph that computes it failed (",
                why, ")");
  }
}

void Lazy::written_whole(const c10::StorageImpl* storage) {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  lost_.erase(std::remove_if(lost_.begin(), lost_.end(),
                             [&](const auto& l) { return l.first.expired() || l.first.lock().get() == storage; }),
              lost_.end());
}

GraphCounters Lazy::counters() {
  const std::lock_guard<std::recursive_mutex> lock(mutex_);
  return counters_;
}

}  // namespace hpusim::bridge
