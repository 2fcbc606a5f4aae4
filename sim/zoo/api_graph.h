// A thin C++ layer over the Synapse C API for the zoo's workloads: graphs, tensors in sections,
// nodes, device buffers per persistent tensor, and one launch. Every failed call throws ApiError
// with the API's status and message, so a workload reads as the sequence of calls it makes.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/zoo/workload.h"
#include "synapse_api.h"

namespace hpusim::zoo {

class ApiError : public std::runtime_error {
 public:
  ApiError(synStatus status, const std::string& what) : std::runtime_error(what), status_(status) {}
  synStatus status() const { return status_; }

 private:
  synStatus status_;
};

// Throws ApiError naming `call` when `status` is not synSuccess.
void check(synStatus status, const char* call);

// A graph under construction. Persistent tensors are named; tensors of one section share memory
// (an optimizer writes a parameter's new value at the parameter's own place).
class ApiGraph {
 public:
  ApiGraph();
  ~ApiGraph();
  ApiGraph(const ApiGraph&) = delete;
  ApiGraph& operator=(const ApiGraph&) = delete;

  // A workspace tensor (the compiler places it).
  synTensor temp(const std::string& name, synDataType type, std::vector<unsigned> shape);
  // A persistent tensor in its own section, or in `alias_of`'s section at its offset.
  synTensor persistent(const std::string& name, synDataType type, std::vector<unsigned> shape,
                       const std::string& alias_of = "");
  void node(const std::string& guid, const std::string& name, std::vector<synTensor> inputs,
            std::vector<synTensor> outputs, const void* params = nullptr, unsigned params_size = 0);
  void node(const std::string& guid, const std::string& name, std::vector<synTensor> inputs,
            std::vector<synTensor> outputs, const std::vector<float>& scalars);

  synRecipeHandle compile(const std::string& name);
  synGraphHandle handle() const { return graph_; }

  struct PersistentInfo {
    uint64_t bytes = 0;
    std::string owner;   // the tensor whose buffer it uses (itself when not an alias)
  };
  const std::map<std::string, PersistentInfo>& persistent_tensors() const { return persistent_; }

 private:
  synGraphHandle graph_ = nullptr;
  std::map<std::string, synSectionHandle> sections_;
  std::map<std::string, PersistentInfo> persistent_;
};

// Device buffers for a graph's persistent tensors (aliases share their owner's buffer), host
// transfers on one stream, and launches.
class DeviceTensors {
 public:
  DeviceTensors(synDeviceId device, const ApiGraph& graph);
  ~DeviceTensors();
  DeviceTensors(const DeviceTensors&) = delete;
  DeviceTensors& operator=(const DeviceTensors&) = delete;

  uint64_t address(const std::string& name) const;
  // Through a pinned (synHostMalloc, page-aligned) staging buffer per tensor, as a framework's
  // pinned memory: the same transfers, and so the same times, on every run. upload() returns
  // at once; download() waits.
  void upload(const std::string& name, const void* data, uint64_t bytes);
  void upload(const std::string& name, const std::vector<float>& values) {
    upload(name, values.data(), values.size() * sizeof(float));
  }
  void download(const std::string& name, void* data, uint64_t bytes);
  // The whole f32 tensor.
  std::vector<float> download_floats(const std::string& name);
  // The tensors `names` as they are on the device now (a workload's parameters()).
  template <class Names>
  std::vector<NamedTensor> download_all(const Names& names) {
    std::vector<NamedTensor> out;
    for (const auto& name : names) out.push_back({name, download_floats(name)});
    return out;
  }
  // A training step's end: launches `recipe`, destroys the handle, and reads back the one-element
  // persistent tensor "loss".
  float launch_for_loss(synRecipeHandle recipe);
  // Launches with every persistent tensor and a workspace of the recipe's size.
  void launch(synRecipeHandle recipe);
  void synchronize();

 private:
  synDeviceId device_;
  synStreamHandle stream_ = nullptr;
  std::map<std::string, uint64_t> buffers_;   // owners only
  std::map<std::string, std::string> owner_;
  std::map<std::string, uint64_t> bytes_;
  std::map<std::string, std::pair<void*, uint64_t>> staging_;   // name -> pinned buffer, bytes
  void* staging(const std::string& name, uint64_t bytes);
  uint64_t workspace_ = 0, workspace_bytes_ = 0;
};

}  // namespace hpusim::zoo
