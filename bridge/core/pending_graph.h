// The graph the bridge is building for the card: regions of device storages read and written,
// temporaries, and Synapse nodes, in program order. launch() turns it into one Synapse graph
// through the C API (a section per storage, a persistent tensor per region access, workspace
// tensors for temporaries and for values nobody outside the graph can see any more), compiles it
// (the recipe cache first) and launches it. No libtorch here: the lowering (lowering.cpp) fills it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "synapse_api.h"

namespace hpusim::bridge {

// A dense run of bytes of one device storage, seen as a tensor of `type` and `shape` (Synapse
// order: dim 0 innermost; no dims: one element).
struct Region {
  uintptr_t storage = 0;   // the storage's identity
  uint64_t base = 0;       // its device address
  uint64_t offset = 0;     // bytes from base
  synDataType type = syn_type_single;
  std::vector<uint32_t> shape;
};

uint64_t element_bytes(synDataType type);
uint64_t region_bytes(synDataType type, const std::vector<uint32_t>& shape);

using ValueId = uint32_t;

struct PendingValue {
  enum Kind : uint8_t { kRead, kWrite, kTemp } kind = kTemp;
  Region region;          // kRead / kWrite: where; kTemp: type and shape only
  bool partial = false;   // kWrite: an in-place update of some of the region's elements
};

struct PendingNode {
  std::string guid;
  std::vector<ValueId> inputs, outputs;
  std::vector<uint8_t> params;   // synNodeCreate's user params
};

// What a launch did.
struct LaunchReport {
  uint32_t nodes = 0;
  bool compiled = false;   // a recipe-cache miss: the graph was compiled
  uint64_t graph_hash = 0;
};

// A compiled launch kept for replay (an HPU graph's): its recipe, the device address of every
// persistent tensor, and a workspace of its own. Replaying it builds, hashes and compiles nothing.
class CapturedLaunch {
 public:
  CapturedLaunch() = default;
  ~CapturedLaunch();
  CapturedLaunch(const CapturedLaunch&) = delete;
  CapturedLaunch& operator=(const CapturedLaunch&) = delete;
  CapturedLaunch(CapturedLaunch&& other) noexcept;

  // Submits it on `stream` (synLaunch). Throws SynapseError.
  void submit(synStreamHandle stream);
  // The same with other storages in place of some it was captured with: `bases` maps a captured
  // storage (its identity) to the device address the launch uses for it instead (offsets kept).
  void submit(synStreamHandle stream, const std::map<uintptr_t, uint64_t>& bases);

 private:
  friend class PendingGraph;
  synDeviceId device_ = 0;
  synRecipeHandle recipe_ = nullptr;
  std::vector<std::string> names_;
  std::vector<synLaunchTensorInfo> infos_;
  std::vector<std::pair<uintptr_t, uint64_t>> places_;   // per tensor: the captured storage, the offset
  uint64_t workspace_ = 0;
};

class PendingGraph {
 public:
  ValueId read(const Region& region) { return add({PendingValue::kRead, region}); }
  ValueId write(const Region& region) { return add({PendingValue::kWrite, region}); }
  // A write of some elements of `region` in place (the node reads the region too): the storage
  // stays in device memory (never workspace), so the elements it leaves keep their values.
  ValueId write_partial(const Region& region) { return add({PendingValue::kWrite, region, true}); }
  ValueId temp(synDataType type, std::vector<uint32_t> shape) {
    return add({PendingValue::kTemp, Region{0, 0, 0, type, std::move(shape)}});
  }
  void add_node(PendingNode node) { nodes_.push_back(std::move(node)); }
  // The storages the graph writes.
  std::vector<uintptr_t> written_storages() const;
  const PendingValue& value(ValueId id) const { return values_[id]; }

  bool empty() const { return nodes_.empty(); }
  size_t node_count() const { return nodes_.size(); }

  // A lowering that gives up drops what it added since mark().
  struct Mark {
    size_t values, nodes;
  };
  Mark mark() const { return {values_.size(), nodes_.size()}; }
  void rollback(Mark m);

  // Builds the Synapse graph, compiles it (recipe cache first) and launches it on `stream`;
  // `visible(storage)` says whether anything outside the graph still holds the storage (what
  // nobody can read any more becomes workspace). The graph is empty afterwards, also on a throw.
  // Throws SynapseError.
  // With `captured`, the compiled launch goes there (with a workspace of its own) instead of to
  // the stream.
  LaunchReport launch(synDeviceId device, synStreamHandle stream, const std::string& name,
                      const std::function<bool(uintptr_t)>& visible, CapturedLaunch* captured = nullptr);
  void clear();

 private:
  ValueId add(PendingValue v) {
    values_.push_back(std::move(v));
    return static_cast<ValueId>(values_.size() - 1);
  }

  std::vector<PendingValue> values_;
  std::vector<PendingNode> nodes_;
  uint64_t workspace_ = 0, workspace_bytes_ = 0;   // grown as graphs need it; stream order makes reuse safe
};

}  // namespace hpusim::bridge
