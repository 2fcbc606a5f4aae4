#include "synapse/graph/graph.h"


namespace hpusim::synapse::graph {

std::string shape_text(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

Result Graph::add_tensor(TensorDesc desc, TensorId* id) {
  if (desc.name.empty()) return Result::error(Status::InvalidArgument, "a tensor needs a name");
  const std::string label = "tensor '" + desc.name + "'";
  if (tensor_names_.count(desc.name)) return Result::error(Status::NameIsAlreadyUsed, label + ": the name is already used");
  if (desc.shape.size() > kMaxDims) {
    return Result::error(Status::InvalidTensorDimensions, label + ": " + std::to_string(desc.shape.size()) +
                                                              " dims, at most " + std::to_string(kMaxDims));
  }
  for (size_t d = 0; d < desc.shape.size(); ++d) {
    if (desc.shape[d] == 0 || desc.shape[d] > kMaxDimSize) {
      return Result::error(Status::InvalidTensorDimensions, label + ": dim " + std::to_string(d) + " has size " +
                                                                std::to_string(desc.shape[d]) + " (must be 1 .. 2^31-1)");
    }
  }
  const auto index = static_cast<uint32_t>(tensors_.size());
  tensor_names_.emplace(desc.name, index);
  tensors_.push_back(std::move(desc));
  if (id) *id = TensorId{index};
  return Result::success();
}

void Graph::drop_tensors_from(size_t count) {
  while (tensors_.size() > count) {
    tensor_names_.erase(tensors_.back().name);
    tensors_.pop_back();
  }
}

Result Graph::add_node(NodeDesc desc, NodeId* id) {
  if (desc.name.empty()) return Result::error(Status::InvalidArgument, "a node needs a name");
  const std::string label = "node '" + desc.name + "'";
  if (node_names_.count(desc.name)) return Result::error(Status::NameIsAlreadyUsed, label + ": the name is already used");
  if (desc.guid.empty()) return Result::error(Status::InvalidArgument, label + ": no GUID");
  const auto check_handles = [&](const std::vector<TensorId>& ids, const char* kind) -> std::optional<Result> {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i].index >= tensors_.size()) {
        const std::string handle = ids[i].index == UINT32_MAX ? "an unset handle" : "handle " + std::to_string(ids[i].index);
        return Result::error(Status::InvalidArgument, label + ": " + kind + " " + std::to_string(i) + " is " + handle +
                                                          ", not a tensor of this graph (it has " +
                                                          std::to_string(tensors_.size()) + ")");
      }
    }
    return std::nullopt;
  };
  if (auto r = check_handles(desc.inputs, "input")) return *r;
  if (auto r = check_handles(desc.outputs, "output")) return *r;
  for (size_t i = 0; i < desc.outputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (desc.outputs[i] == desc.outputs[j]) {
        return Result::error(Status::InvalidArgument, label + ": tensor '" + tensors_[desc.outputs[i].index].name +
                                                          "' is output " + std::to_string(j) + " and output " +
                                                          std::to_string(i));
      }
    }
  }
  const auto index = static_cast<uint32_t>(nodes_.size());
  node_names_.emplace(desc.name, index);
  nodes_.push_back(std::move(desc));
  if (id) *id = NodeId{index};
  return Result::success();
}

std::optional<TensorId> Graph::find_tensor(const std::string& name) const {
  auto it = tensor_names_.find(name);
  if (it == tensor_names_.end()) return std::nullopt;
  return TensorId{it->second};
}

std::optional<NodeId> Graph::find_node(const std::string& name) const {
  auto it = node_names_.find(name);
  if (it == node_names_.end()) return std::nullopt;
  return NodeId{it->second};
}

}  // namespace hpusim::synapse::graph
