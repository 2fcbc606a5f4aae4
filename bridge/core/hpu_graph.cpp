#include "bridge/core/hpu_graph.h"

#include <c10/util/Exception.h>

#include <mutex>

#include "bridge/core/card.h"
#include "bridge/core/generator.h"
#include "bridge/core/lazy.h"

namespace hpusim::bridge {

HpuGraph::~HpuGraph() {
  if (Lazy::get().capturing() == this) Lazy::get().abort_capture();
}

void HpuGraph::capture_begin(bool in_eager_mode) {
  TORCH_CHECK(!captured_, "HPUGraph.capture_begin: this graph is captured already (reset() it first)");
  Lazy::get().begin_capture(this, in_eager_mode);
}

void HpuGraph::capture_end() {
  Lazy& lazy = Lazy::get();
  TORCH_CHECK(lazy.capturing() == this, "HPUGraph.capture_end: this graph is not capturing");
  lazy.end_capture();
  captured_ = true;
}

void HpuGraph::replay() { replay({}); }

void HpuGraph::replay(const std::map<uintptr_t, uint64_t>& bases) {
  TORCH_CHECK(captured_, "HPUGraph.replay: nothing captured (capture_begin / capture_end first)");
  Lazy& lazy = Lazy::get();
  const std::lock_guard<std::recursive_mutex> lock(lazy.mutex());
  TORCH_CHECK(lazy.capturing() == nullptr, "HPUGraph.replay: not supported during hpu graph capturing");
  lazy.flush("replay");
  Card& card = Card::get();
  const uint64_t span_start = card.host_now_ns();
  card.host_work(HPUSIM_HOST_GRAPH_REPLAY, 1, "graph replay");
  for (Seed& s : seeds_) {
    HpuGenerator* generator = hpu_generator(s.generator);
    uint32_t seed = 0;
    {
      const std::lock_guard<std::mutex> generator_lock(generator->mutex_);
      seed = generator->next_kernel_seed();
    }
    card.to_device(&seed, reinterpret_cast<uintptr_t>(s.tensor.data_ptr()), sizeof seed);
  }
  for (Entry& entry : entries_) {
    if (!entry.launch) {
      TORCH_CHECK(bases.empty(), "a compiled graph cannot hold a collective");
      entry.step(card.stream());
    } else if (bases.empty()) {
      entry.launch->submit(card.stream());
    } else {
      entry.launch->submit(card.stream(), bases);
    }
  }
  lazy.count_replay(launches());
  card.trace_span(bases.empty() ? "hpu graph replay" : "compiled graph call", span_start);
}

void HpuGraph::capture_abort() {
  if (Lazy::get().capturing() == this) Lazy::get().abort_capture();
}

void HpuGraph::reset() {
  TORCH_CHECK(Lazy::get().capturing() != this, "HPUGraph.reset: the graph is capturing");
  entries_.clear();
  storages_.clear();
  seeds_.clear();
  captured_ = false;
}

size_t HpuGraph::launches() const {
  size_t n = 0;
  for (const Entry& e : entries_) n += e.launch ? 1 : 0;
  return n;
}

void HpuGraph::add_launch(CapturedLaunch launch, std::vector<c10::Storage> storages) {
  entries_.push_back({std::move(launch), nullptr});
  for (c10::Storage& s : storages) storages_.push_back(std::move(s));
}

void HpuGraph::add_step(Lazy::DeviceStep step, std::vector<c10::Storage> storages) {
  entries_.push_back({std::nullopt, std::move(step)});
  for (c10::Storage& s : storages) storages_.push_back(std::move(s));
}

void HpuGraph::add_seed(const at::Tensor& seed, const at::Generator& generator) {
  seeds_.push_back({seed, generator});
}

}  // namespace hpusim::bridge
