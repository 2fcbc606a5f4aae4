// The graph model of the Synapse layer: tensors and nodes as synTensorCreate / synNodeCreate
// describe them, checked as they are added (names, handles, dims). Whole-graph checks, the
// topological order and the structural hash live in validate.h and structural_hash.h.
//
//   Graph g;
//   TensorId x, w, y;
//   g.add_tensor({"x", DType::F32, {256, 32}, true}, &x);        // [K, M], dim 0 innermost
//   g.add_tensor({"w", DType::F32, {128, 256}, true}, &w);       // [N, K]
//   g.add_tensor({"y", DType::F32, {128, 32}}, &y);              // [N, M]
//   Result r = g.add_node({"fc", "gemm", {x, w}, {y}});
//   if (!r.ok()) std::cerr << status_name(r.status) << ": " << r.message;
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arch/tpc/isa.h"
#include "synapse/graph/status.h"

namespace hpusim::synapse::graph {

using hpusim::tpc::DType;

inline constexpr unsigned kMaxDims = 5;                 // MAX_DIMENSIONS_NUM
inline constexpr uint32_t kMaxDimSize = 0x7FFFFFFFu;   // what the TPC glue accepts

// Handles: indices in creation order (tensors and nodes are never removed).
struct TensorId {
  uint32_t index = UINT32_MAX;
  bool operator==(const TensorId& o) const { return index == o.index; }
  bool operator!=(const TensorId& o) const { return index != o.index; }
};
struct NodeId {
  uint32_t index = UINT32_MAX;
  bool operator==(const NodeId& o) const { return index == o.index; }
  bool operator!=(const NodeId& o) const { return index != o.index; }
};

// Where a tensor lives: a memory section and an offset in it (synTensorCreate's section handle
// and sectionOffset). Kept for the compiler and the runtime; not checked; part of the structural
// hash for persistent tensors (structural_hash.h).
struct Section {
  uint32_t id = 0;
  uint64_t offset = 0;
};

struct TensorDesc {
  TensorDesc() = default;
  TensorDesc(std::string name_, DType dtype_, std::vector<uint32_t> shape_, bool persistent_ = false,
             std::optional<Section> section_ = std::nullopt)
      : name(std::move(name_)), dtype(dtype_), shape(std::move(shape_)), persistent(persistent_), section(section_) {}

  std::string name;
  DType dtype = DType::F32;
  std::vector<uint32_t> shape;   // dim 0 innermost (contiguous); 0..5 dims, 0 dims = one element
  bool persistent = false;       // user-visible memory: a graph input or output
  std::optional<Section> section;
};

struct NodeParams {
  std::vector<float> scalars;                  // TPC GUIDs: the kernel library's scalar params
  std::map<std::string, int64_t> attributes;   // MME GUIDs: transposes, conv stride/pad/dilation
};

struct NodeDesc {
  std::string name;
  std::string guid;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  NodeParams params;
};

class Graph {
 public:
  // Creation-time checks (nothing is added on an error):
  //   tensor: empty name (synInvalidArgument), a name already used by a tensor
  //   (synNameIsAlreadyUsed), more than 5 dims or a dim of size 0 or > 2^31-1
  //   (synInvalidTensorDimensions);
  //   node: empty name or GUID (synInvalidArgument), a name already used by a node
  //   (synNameIsAlreadyUsed), a handle that is not a tensor of this graph, one tensor twice among
  //   the outputs (synInvalidArgument).
  // Messages name the tensor or node ("tensor 'x': dim 1 has size 0 (must be 1 .. 2^31-1)").
  Result add_tensor(TensorDesc desc, TensorId* id = nullptr);
  Result add_node(NodeDesc desc, NodeId* id = nullptr);
  // Removes the tensors added after the graph had `count` of them, which no node may use yet: what
  // undoes the tensors a node brought with it when the node is refused.
  void drop_tensors_from(size_t count);

  size_t tensor_count() const { return tensors_.size(); }
  size_t node_count() const { return nodes_.size(); }
  const TensorDesc& tensor(TensorId id) const { return tensors_.at(id.index); }
  const NodeDesc& node(NodeId id) const { return nodes_.at(id.index); }
  std::optional<TensorId> find_tensor(const std::string& name) const;
  std::optional<NodeId> find_node(const std::string& name) const;

 private:
  std::vector<TensorDesc> tensors_;
  std::vector<NodeDesc> nodes_;
  std::unordered_map<std::string, uint32_t> tensor_names_;
  std::unordered_map<std::string, uint32_t> node_names_;
};

// "[256, 32]" (dim 0 first).
std::string shape_text(const std::vector<uint32_t>& shape);

}  // namespace hpusim::synapse::graph
