// HPU graphs (lazy mode): what the program records between capture_begin and capture_end is
// compiled into launches kept with the device addresses they use; replay submits them again,
// without recording, building, hashing or compiling anything. The storages the capture used stay
// allocated for as long as the graph lives (the static inputs and outputs among them), so replay
// reads whatever was copied into them. Random draws recorded in the capture take a fresh seed
// from their generator at every replay, as an uncaptured run would.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

#include <optional>
#include <vector>

#include "bridge/core/lazy.h"
#include "bridge/core/pending_graph.h"

namespace hpusim::bridge {

class HpuGraph {
 public:
  HpuGraph() = default;
  HpuGraph(const HpuGraph&) = delete;
  HpuGraph& operator=(const HpuGraph&) = delete;
  ~HpuGraph();

  // Starts recording into this graph (what was pending runs first). Throws c10::Error in eager
  // mode, during another capture, or on a graph already captured (reset() it first).
  void capture_begin(bool in_eager_mode = false);
  // Compiles what was recorded since capture_begin into this graph's launches (nothing runs).
  void capture_end();
  // Submits the captured launches on the current stream (what is pending runs first).
  void replay();
  // The same with other storages in place of some the capture used (CapturedLaunch::submit):
  // torch.compile's graphs run on each call's inputs and fresh outputs.
  void replay(const std::map<uintptr_t, uint64_t>& bases);
  // Abandons this graph's capture, if it is capturing (what it recorded is dropped).
  void capture_abort();
  // Drops the launches and the storages they hold.
  void reset();
  bool captured() const { return captured_; }
  size_t launches() const;

  // What the lazy layer gives the graph while it captures: launches and device steps
  // (collectives), run in the order captured.
  void add_launch(CapturedLaunch launch, std::vector<c10::Storage> storages);
  void add_step(Lazy::DeviceStep step, std::vector<c10::Storage> storages);
  void add_seed(const at::Tensor& seed, const at::Generator& generator);

 private:
  struct Seed {
    at::Tensor tensor;   // one int32 element on the card
    at::Generator generator;
  };
  struct Entry {
    std::optional<CapturedLaunch> launch;   // or else
    Lazy::DeviceStep step;
  };
  bool captured_ = false;
  std::vector<Entry> entries_;
  std::vector<c10::Storage> storages_;
  std::vector<Seed> seeds_;
};

}  // namespace hpusim::bridge
