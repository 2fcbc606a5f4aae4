#include "bridge/core/pending_graph.h"

#include <map>
#include <optional>

#include "bridge/core/card.h"

namespace hpusim::bridge {
namespace {

void check(synStatus status, const char* what) {
  if (status != synSuccess) throw SynapseError(what, status);
}

bool same_place(const Region& a, const Region& b) {
  return a.storage == b.storage && a.offset == b.offset && a.type == b.type && a.shape == b.shape;
}

bool overlaps(const Region& a, const Region& b) {
  if (a.storage != b.storage) return false;
  const uint64_t a_end = a.offset + region_bytes(a.type, a.shape), b_end = b.offset + region_bytes(b.type, b.shape);
  return a.offset < b_end && b.offset < a_end;
}

// One access of a node to a region, in program order (a node's reads before its writes).
struct Access {
  ValueId value;
  bool write;
};

// The Synapse graph being built, its sections (one per storage) and persistent tensors.
class SynapseGraph {
 public:
  SynapseGraph() { check(synGraphCreate(&graph_, synDeviceGaudi), "synGraphCreate"); }
  ~SynapseGraph() { synGraphDestroy(graph_); }
  SynapseGraph(const SynapseGraph&) = delete;
  SynapseGraph& operator=(const SynapseGraph&) = delete;

  synTensor persistent(const Region& r) {
    synSectionHandle& section = sections_[r.storage];
    if (section == nullptr) check(synSectionCreate(&section, 0, graph_), "synSectionCreate");
    const std::string name = "p" + std::to_string(launch_infos_.size());
    synTensor t = create(name, r.type, r.shape, section, r.offset);
    names_.push_back(name);
    launch_infos_.push_back({nullptr, r.base + r.offset, DATA_TENSOR, {0}, 0});
    places_.push_back({r.storage, r.offset});
    return t;
  }
  synTensor workspace(const Region& r) {
    return create("w" + std::to_string(workspace_count_++), r.type, r.shape, nullptr, 0);
  }
  void node(const PendingNode& n, const std::vector<synTensor>& in, const std::vector<synTensor>& out, size_t index) {
    const std::string name = "n" + std::to_string(index);
    check(synNodeCreate(graph_, in.data(), out.data(), static_cast<uint32_t>(in.size()), static_cast<uint32_t>(out.size()),
                        n.params.empty() ? nullptr : n.params.data(), static_cast<unsigned>(n.params.size()),
                        n.guid.c_str(), name.c_str(), nullptr, nullptr),
          "synNodeCreate");
  }
  synGraphHandle handle() const { return graph_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::pair<uintptr_t, uint64_t>>& places() const { return places_; }
  std::vector<synLaunchTensorInfo>& launch_infos() {
    for (size_t i = 0; i < names_.size(); ++i) launch_infos_[i].tensorName = names_[i].c_str();
    return launch_infos_;
  }

 private:
  synTensor create(const std::string& name, synDataType type, const std::vector<uint32_t>& shape,
                   synSectionHandle section, uint64_t offset) {
    synTensorDescriptor d{};
    d.m_dataType = type;
    d.m_dims = static_cast<unsigned>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) d.m_sizes[i] = shape[i];
    d.m_name = name.c_str();
    synTensor t = nullptr;
    check(synTensorCreate(&t, &d, section, offset), "synTensorCreate");
    return t;
  }

  synGraphHandle graph_ = nullptr;
  std::map<uintptr_t, synSectionHandle> sections_;
  std::vector<std::string> names_;
  std::vector<synLaunchTensorInfo> launch_infos_;
  std::vector<std::pair<uintptr_t, uint64_t>> places_;   // per persistent tensor: its storage and offset
  uint32_t workspace_count_ = 0;
};

}  // namespace

uint64_t element_bytes(synDataType type) {
  switch (type) {
    case syn_type_bf16:
    case syn_type_int16:
    case syn_type_uint16:
      return 2;
    case syn_type_int8:
    case syn_type_uint8:
      return 1;
    default:
      return 4;
  }
}

uint64_t region_bytes(synDataType type, const std::vector<uint32_t>& shape) {
  uint64_t n = element_bytes(type);
  for (uint32_t d : shape) n *= d;
  return n;
}

void PendingGraph::rollback(Mark m) {
  values_.resize(m.values);
  nodes_.resize(m.nodes);
}

std::vector<uintptr_t> PendingGraph::written_storages() const {
  std::vector<uintptr_t> storages;
  for (const PendingValue& v : values_)
    if (v.kind == PendingValue::kWrite) storages.push_back(v.region.storage);
  std::sort(storages.begin(), storages.end());
  storages.erase(std::unique(storages.begin(), storages.end()), storages.end());
  return storages;
}

void PendingGraph::clear() {
  values_.clear();
  nodes_.clear();
}

CapturedLaunch::~CapturedLaunch() {
  if (recipe_ != nullptr) synRecipeDestroy(recipe_);
  if (workspace_ != 0) synDeviceFree(device_, workspace_, 0);
}

CapturedLaunch::CapturedLaunch(CapturedLaunch&& other) noexcept
    : device_(other.device_), recipe_(other.recipe_), names_(std::move(other.names_)),
      infos_(std::move(other.infos_)), places_(std::move(other.places_)), workspace_(other.workspace_) {
  other.recipe_ = nullptr;
  other.workspace_ = 0;
  for (size_t i = 0; i < names_.size(); ++i) infos_[i].tensorName = names_[i].c_str();
}

void CapturedLaunch::submit(synStreamHandle stream) {
  check(synLaunch(stream, infos_.data(), static_cast<uint32_t>(infos_.size()), workspace_, recipe_, 0),
        "synLaunch (replay)");
}

void CapturedLaunch::submit(synStreamHandle stream, const std::map<uintptr_t, uint64_t>& bases) {
  std::vector<synLaunchTensorInfo> infos = infos_;
  for (size_t i = 0; i < infos.size(); ++i) {
    const auto it = bases.find(places_[i].first);
    if (it != bases.end()) infos[i].pTensorAddress = it->second + places_[i].second;
  }
  check(synLaunch(stream, infos.data(), static_cast<uint32_t>(infos.size()), workspace_, recipe_, 0),
        "synLaunch (compiled graph)");
}

LaunchReport PendingGraph::launch(synDeviceId device, synStreamHandle stream, const std::string& name,
                                  const std::function<bool(uintptr_t)>& visible, CapturedLaunch* captured) {
  struct ClearOnExit {
    PendingGraph* g;
    ~ClearOnExit() { g->clear(); }
  } clear_on_exit{this};
  LaunchReport report;
  report.nodes = static_cast<uint32_t>(nodes_.size());
  if (nodes_.empty()) return report;

  // Every region access in program order, per storage.
  std::map<uintptr_t, std::vector<Access>> accesses;
  for (const PendingNode& n : nodes_) {
    for (ValueId v : n.inputs)
      if (values_[v].kind == PendingValue::kRead) accesses[values_[v].region.storage].push_back({v, false});
    for (ValueId v : n.outputs)
      if (values_[v].kind == PendingValue::kWrite) accesses[values_[v].region.storage].push_back({v, true});
  }
  // What each region value becomes: a write nobody outside can see, read back only whole, is a
  // workspace tensor; a read of exactly what an earlier node wrote takes that node's tensor.
  std::vector<bool> to_workspace(values_.size(), false);
  std::vector<std::optional<ValueId>> same_as(values_.size());
  for (auto& [storage, list] : accesses) {
    bool hidden = !visible(storage);
    for (const Access& a : list) hidden = hidden && !values_[a.value].partial;
    for (size_t i = 0; i < list.size(); ++i) {
      const Region& r = values_[list[i].value].region;
      if (list[i].write) {
        bool whole_reads_only = hidden;
        for (size_t j = i + 1; j < list.size() && whole_reads_only; ++j) {
          const Region& later = values_[list[j].value].region;
          if (!overlaps(r, later)) continue;
          whole_reads_only = same_place(r, later);
          if (list[j].write) break;   // overwritten whole (not a part that a later read would miss)
        }
        to_workspace[list[i].value] = whole_reads_only;
        continue;
      }
      for (size_t j = i; j-- > 0;) {
        const Region& earlier = values_[list[j].value].region;
        if (!list[j].write || !overlaps(r, earlier)) continue;
        if (same_place(r, earlier)) same_as[list[i].value] = list[j].value;
        break;
      }
    }
  }

  SynapseGraph graph;
  std::vector<synTensor> tensors(values_.size(), nullptr);
  const auto tensor_of = [&](ValueId v) -> synTensor {
    if (same_as[v]) return tensors[*same_as[v]];
    if (tensors[v] == nullptr) {
      const PendingValue& value = values_[v];
      tensors[v] = value.kind == PendingValue::kTemp || to_workspace[v] ? graph.workspace(value.region)
                                                                         : graph.persistent(value.region);
    }
    return tensors[v];
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::vector<synTensor> in, out;
    for (ValueId v : nodes_[i].inputs) in.push_back(tensor_of(v));
    for (ValueId v : nodes_[i].outputs) out.push_back(tensor_of(v));
    graph.node(nodes_[i], in, out, i);
  }
  check(hpusim_graphStructuralHash(graph.handle(), &report.graph_hash), "hpusim_graphStructuralHash");

  hpusim_CompileCounters before{}, after{};
  check(hpusim_compileCounters(&before), "hpusim_compileCounters");
  synRecipeHandle recipe = nullptr;
  check(synGraphCompile(&recipe, graph.handle(), name.c_str(), nullptr), "synGraphCompile");
  struct RecipeGuard {
    synRecipeHandle r;
    ~RecipeGuard() {
      if (r != nullptr) synRecipeDestroy(r);
    }
  } recipe_guard{recipe};
  check(hpusim_compileCounters(&after), "hpusim_compileCounters");
  report.compiled = after.cacheMisses != before.cacheMisses;

  uint64_t workspace_bytes = 0;
  check(synWorkspaceGetSize(&workspace_bytes, recipe), "synWorkspaceGetSize");
  if (captured != nullptr) {
    captured->device_ = device;
    if (workspace_bytes != 0) {
      check(synDeviceMalloc(device, workspace_bytes, 0, 0, &captured->workspace_), "synDeviceMalloc (workspace)");
    }
    captured->names_ = graph.names();
    captured->places_ = graph.places();
    captured->infos_ = graph.launch_infos();
    for (size_t i = 0; i < captured->names_.size(); ++i) captured->infos_[i].tensorName = captured->names_[i].c_str();
    captured->recipe_ = recipe;
    recipe_guard.r = nullptr;   // the captured launch owns it now
    return report;
  }
  if (workspace_bytes > workspace_bytes_) {
    // The old workspace is free for the device once the launches before it are done, which the
    // stream's order guarantees for anything launched after this.
    if (workspace_ != 0) check(synDeviceFree(device, workspace_, 0), "synDeviceFree");
    workspace_ = 0;
    workspace_bytes_ = 0;
    check(synDeviceMalloc(device, workspace_bytes, 0, 0, &workspace_), "synDeviceMalloc (workspace)");
    workspace_bytes_ = workspace_bytes;
  }
  std::vector<synLaunchTensorInfo>& infos = graph.launch_infos();
  check(synLaunch(stream, infos.data(), static_cast<uint32_t>(infos.size()), workspace_, recipe, 0), "synLaunch");
  return report;
}

}  // namespace hpusim::bridge
