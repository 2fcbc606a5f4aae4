#include "sim/zoo/api_graph.h"

#include <cstring>

namespace hpusim::zoo {

void check(synStatus status, const char* call) {
  if (status != synSuccess) {
    throw ApiError(status, std::string(call) + " failed (synStatus " + std::to_string(status) +
                               "): " + hpusim_lastErrorMessage());
  }
}

namespace {
uint64_t type_bytes(synDataType type) {
  switch (type) {
    case syn_type_bf16:
    case syn_type_int16:
    case syn_type_uint16: return 2;
    case syn_type_int8:
    case syn_type_uint8: return 1;
    default: return 4;
  }
}
synTensorDescriptor descriptor(const std::string& name, synDataType type, const std::vector<unsigned>& shape) {
  synTensorDescriptor d{};
  d.m_dataType = type;
  d.m_dims = static_cast<unsigned>(shape.size());
  for (size_t i = 0; i < shape.size() && i < SYN_MAX_TENSOR_DIM; ++i) d.m_sizes[i] = shape[i];
  d.m_name = name.c_str();
  return d;
}
}  // namespace

ApiGraph::ApiGraph() { check(synGraphCreate(&graph_, synDeviceGaudi), "synGraphCreate"); }

ApiGraph::~ApiGraph() {
  for (auto& [name, section] : sections_) synSectionDestroy(section);
  synGraphDestroy(graph_);
}

synTensor ApiGraph::temp(const std::string& name, synDataType type, std::vector<unsigned> shape) {
  const synTensorDescriptor d = descriptor(name, type, shape);
  synTensor t = nullptr;
  check(synTensorCreate(&t, &d, nullptr, 0), "synTensorCreate");
  return t;
}

synTensor ApiGraph::persistent(const std::string& name, synDataType type, std::vector<unsigned> shape,
                               const std::string& alias_of) {
  uint64_t bytes = type_bytes(type);
  for (unsigned s : shape) bytes *= s;
  const std::string owner = alias_of.empty() ? name : persistent_.at(alias_of).owner;
  if (alias_of.empty()) {
    synSectionHandle section = nullptr;
    check(synSectionCreate(&section, 0, graph_), "synSectionCreate");
    sections_[name] = section;
  }
  const synTensorDescriptor d = descriptor(name, type, shape);
  synTensor t = nullptr;
  check(synTensorCreate(&t, &d, sections_.at(owner), 0), "synTensorCreate");
  persistent_[name] = {bytes, owner};
  return t;
}

void ApiGraph::node(const std::string& guid, const std::string& name, std::vector<synTensor> inputs,
                    std::vector<synTensor> outputs, const void* params, unsigned params_size) {
  check(synNodeCreate(graph_, inputs.data(), outputs.data(), static_cast<uint32_t>(inputs.size()),
                      static_cast<uint32_t>(outputs.size()), params, params_size, guid.c_str(), name.c_str(), nullptr,
                      nullptr),
        "synNodeCreate");
}

void ApiGraph::node(const std::string& guid, const std::string& name, std::vector<synTensor> inputs,
                    std::vector<synTensor> outputs, const std::vector<float>& scalars) {
  node(guid, name, std::move(inputs), std::move(outputs), scalars.empty() ? nullptr : scalars.data(),
       static_cast<unsigned>(scalars.size() * sizeof(float)));
}

synRecipeHandle ApiGraph::compile(const std::string& name) {
  synRecipeHandle recipe = nullptr;
  check(synGraphCompile(&recipe, graph_, name.c_str(), nullptr), "synGraphCompile");
  return recipe;
}

DeviceTensors::DeviceTensors(synDeviceId device, const ApiGraph& graph) : device_(device) {
  check(synStreamCreateGeneric(&stream_, device_, 0), "synStreamCreateGeneric");
  for (const auto& [name, info] : graph.persistent_tensors()) {
    owner_[name] = info.owner;
    bytes_[name] = info.bytes;
    if (info.owner == name) {
      uint64_t address = 0;
      check(synDeviceMalloc(device_, info.bytes, 0, 0, &address), "synDeviceMalloc");
      buffers_[name] = address;
    }
  }
}

DeviceTensors::~DeviceTensors() {
  synStreamSynchronize(stream_);
  for (const auto& [name, address] : buffers_) synDeviceFree(device_, address, 0);
  for (const auto& [name, pinned] : staging_) synHostFree(device_, pinned.first, 0);
  if (workspace_) synDeviceFree(device_, workspace_, 0);
  synStreamDestroy(stream_);
}

uint64_t DeviceTensors::address(const std::string& name) const { return buffers_.at(owner_.at(name)); }

void* DeviceTensors::staging(const std::string& name, uint64_t bytes) {
  auto& [buffer, size] = staging_[name];
  if (size < bytes) {
    if (buffer) {
      synchronize();   // the old buffer may still be read by a copy
      check(synHostFree(device_, buffer, 0), "synHostFree");
    }
    check(synHostMalloc(device_, bytes, 0, &buffer), "synHostMalloc");
    size = bytes;
  }
  return buffer;
}

void DeviceTensors::upload(const std::string& name, const void* data, uint64_t bytes) {
  void* pinned = staging(name, bytes);
  std::memcpy(pinned, data, bytes);
  check(synMemCopyAsync(stream_, reinterpret_cast<uint64_t>(pinned), bytes, address(name), HOST_TO_DRAM),
        "synMemCopyAsync");
}

void DeviceTensors::download(const std::string& name, void* data, uint64_t bytes) {
  void* pinned = staging(name + " (down)", bytes);
  check(synMemCopyAsync(stream_, address(name), bytes, reinterpret_cast<uint64_t>(pinned), DRAM_TO_HOST),
        "synMemCopyAsync");
  synchronize();
  std::memcpy(data, pinned, bytes);
}

void DeviceTensors::launch(synRecipeHandle recipe) {
  uint64_t bytes = 0;
  check(synWorkspaceGetSize(&bytes, recipe), "synWorkspaceGetSize");
  if (bytes > workspace_bytes_) {
    if (workspace_) check(synDeviceFree(device_, workspace_, 0), "synDeviceFree");
    check(synDeviceMalloc(device_, bytes, 0, 0, &workspace_), "synDeviceMalloc");
    workspace_bytes_ = bytes;
  }
  std::vector<synLaunchTensorInfo> infos;
  for (const auto& [name, owner] : owner_) {
    synLaunchTensorInfo info{};
    info.tensorName = name.c_str();
    info.pTensorAddress = address(name);
    info.tensorType = DATA_TENSOR;
    infos.push_back(info);
  }
  check(synLaunch(stream_, infos.data(), static_cast<uint32_t>(infos.size()), workspace_, recipe, 0), "synLaunch");
}

std::vector<float> DeviceTensors::download_floats(const std::string& name) {
  std::vector<float> values(bytes_.at(name) / sizeof(float));
  download(name, values.data(), values.size() * sizeof(float));
  return values;
}

float DeviceTensors::launch_for_loss(synRecipeHandle recipe) {
  launch(recipe);
  float loss = 0;
  download("loss", &loss, sizeof loss);
  check(synRecipeDestroy(recipe), "synRecipeDestroy");
  return loss;
}

void DeviceTensors::synchronize() { check(synStreamSynchronize(stream_), "synStreamSynchronize"); }

}  // namespace hpusim::zoo
