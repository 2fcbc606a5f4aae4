// The work the bridge has recorded for the card and not launched yet, and the execution mode.
// Lazy mode (PT_HPU_LAZY_MODE=1, the default) accumulates lowered ops until a value is needed or
// mark_step(); eager mode (PT_HPU_LAZY_MODE=0) launches each op's graph as it is called, and
// PT_HPU_MAX_COMPOUND_OP_SIZE=N launches whenever N ops are pending. Every recorder holds the
// mutex: the autograd engine's device thread records into the same graph as the Python thread.
#pragma once

#include <c10/core/Storage.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bridge/core/pending_graph.h"

namespace hpusim::bridge {

class HpuGraph;

struct GraphCounters {
  uint64_t graphs = 0;        // graphs launched (not those an HPU graph captured)
  uint64_t compiles = 0;      // of them, compiled (a recipe-cache miss)
  uint64_t cache_hits = 0;
  uint64_t compile_wall_us = 0;   // host wall time of the compiling launches' compile step
  uint64_t ops_recorded = 0;
  uint64_t eager_compiles = 0;    // compiles of eager ops' graphs (not graph compilations)
  uint64_t captured_launches = 0;   // launches compiled into HPU graphs (not run at capture)
  uint64_t replayed_launches = 0;   // launches submitted again by HPU graph replays
  // By recipe (the graph's structural hash, hex): launches that hit and missed the recipe cache,
  // and each graph compilation's (recipe, host wall microseconds), in order.
  std::map<std::string, uint64_t> hits_by_recipe, misses_by_recipe;
  std::vector<std::pair<std::string, uint64_t>> compiled_recipes;
};

class Lazy {
 public:
  static Lazy& get();

  bool eager() const { return eager_; }
  std::recursive_mutex& mutex() { return mutex_; }
  PendingGraph& graph() { return graph_; }

  // A region of `storage` that the pending graph uses: kept alive until the launch.
  void keep(const c10::Storage& storage);
  // One op (`name`) recorded, its host cost charged; launches when the mode or the op limit says so.
  void op_recorded(const char* name);
  // Launches what is pending (nothing when nothing is); `why` names the trigger in the trace.
  void flush(const char* why);
  // Whether the pending graph uses `storage` (a host write into it must launch first).
  bool pending_uses(const c10::StorageImpl* storage);

  // A device step that is not a graph (a collective, with PT_HPU_ENABLE_LAZY_COLLECTIVES): it is
  // recorded after the pending ops, which are compiled now but not run; both run, in order, at
  // the next launch (mark_step, a value read back, ...). During an HPU graph capture both are
  // captured and run at every replay. `storages` stay allocated until the step has run.
  using DeviceStep = std::function<void(synStreamHandle)>;
  void record_step(DeviceStep step, std::vector<c10::Storage> storages);

  // HPU graph capture (hpu_graph.h): while `graph` captures, mark_step compiles what is pending
  // into the graph instead of running it; anything else that would run it (a copy to the host,
  // .item(), a synchronisation, a host write into a tensor the capture uses) and a CPU fallback
  // are refused: the capture is abandoned and c10::Error says "... is not supported during hpu
  // graph capturing".
  // in_eager_mode: a torch.compile graph's capture (inside a region), allowed in eager mode.
  void begin_capture(HpuGraph* graph, bool in_eager_mode = false);
  void end_capture();
  void abort_capture();
  HpuGraph* capturing() const { return capturing_; }
  // Throws the refusal for `what` (and abandons the capture) when a capture is on; `detail`
  // (the op of a fallback) follows the message in parentheses.
  void refuse_in_capture(const std::string& what, const std::string& detail = "");
  void count_replay(uint64_t launches);

  // A compiled region (torch.compile's graphs in eager mode): the ops recorded between
  // begin_region and end_region become one graph, launched by end_region and counted as a graph
  // compilation when compiled (eager ops' graphs are not).
  void begin_region();
  void end_region(bool launch = true);

  // A launch that failed leaves what it should have written undefined: reading such a storage
  // throws, naming the failure, until it is written whole again.
  void check_value(const c10::StorageImpl* storage);
  void written_whole(const c10::StorageImpl* storage);

  GraphCounters counters();

 private:
  std::vector<std::pair<c10::weak_intrusive_ptr<c10::StorageImpl>, std::string>> lost_;
  HpuGraph* capturing_ = nullptr;
  unsigned region_depth_ = 0;
  Lazy();

  // Compiled launches and device steps recorded before the pending graph, not run yet.
  struct Deferred {
    std::optional<CapturedLaunch> launch;
    DeviceStep step;
    std::vector<c10::Storage> storages;
  };
  void submit_deferred();
  // Compiles and launches (or captures, or defers) the pending graph; a slice `span` from span_start.
  void launch_pending(const char* why, const std::string& span, uint64_t span_start);

  std::recursive_mutex mutex_;
  std::vector<Deferred> deferred_;
  bool deferring_ = false;   // flush compiles what is pending into deferred_ instead of running it
  PendingGraph graph_;
  std::map<uintptr_t, c10::Storage> kept_;
  uint64_t pending_ops_ = 0;
  bool eager_ = false;
  uint64_t max_ops_ = 0;   // 0: no limit
  GraphCounters counters_;
};

}  // namespace hpusim::bridge
