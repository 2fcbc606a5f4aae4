// The C API's graph, section, tensor and node entry points over the graph model. Handles are
// numbers from one counter (never reused, so a destroyed or mistyped handle is always caught),
// looked up in one registry under one mutex.
#include "synapse_api.h"

#include "synapse/api/api_support.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "synapse/graph/graph.h"
#include "synapse/graph/mme_nodes.h"
#include "synapse/graph/status.h"
#include "synapse/graph/structural_hash.h"
#include "synapse/graph/validate.h"

namespace {

namespace model = hpusim::synapse::graph;
using model::Status;

#define HPUSIM_SAME_STATUS(name) \
  static_assert(static_cast<int>(syn##name) == static_cast<int>(Status::name), "synStatus differs: " #name)
HPUSIM_SAME_STATUS(Success);
HPUSIM_SAME_STATUS(InvalidArgument);
HPUSIM_SAME_STATUS(CbFull);
HPUSIM_SAME_STATUS(OutOfHostMemory);
HPUSIM_SAME_STATUS(OutOfDeviceMemory);
HPUSIM_SAME_STATUS(ObjectAlreadyInitialized);
HPUSIM_SAME_STATUS(ObjectNotInitialized);
HPUSIM_SAME_STATUS(CommandSubmissionFailure);
HPUSIM_SAME_STATUS(NoDeviceFound);
HPUSIM_SAME_STATUS(DeviceTypeMismatch);
HPUSIM_SAME_STATUS(FailedToInitializeCb);
HPUSIM_SAME_STATUS(FailedToFreeCb);
HPUSIM_SAME_STATUS(FailedToMapCb);
HPUSIM_SAME_STATUS(FailedToUnmapCb);
HPUSIM_SAME_STATUS(FailedToAllocateDeviceMemory);
HPUSIM_SAME_STATUS(FailedToFreeDeviceMemory);
HPUSIM_SAME_STATUS(FailedNotEnoughDevicesFound);
HPUSIM_SAME_STATUS(DeviceReset);
HPUSIM_SAME_STATUS(Unsupported);
HPUSIM_SAME_STATUS(WrongParamsFile);
HPUSIM_SAME_STATUS(DeviceAlreadyAcquired);
HPUSIM_SAME_STATUS(NameIsAlreadyUsed);
HPUSIM_SAME_STATUS(Busy);
HPUSIM_SAME_STATUS(AllResourcesTaken);
HPUSIM_SAME_STATUS(Unavailable);
HPUSIM_SAME_STATUS(InvalidTensorDimensions);
HPUSIM_SAME_STATUS(Fail);
#undef HPUSIM_SAME_STATUS

struct GraphState {
  model::Graph graph;
  uint32_t next_section_id = 1;
};
struct SectionState {
  uint64_t graph;
  uint32_t id;
};
struct TensorState {
  model::TensorDesc desc;
  uint64_t graph = 0;   // 0: not in a graph yet, joins the graph of the first node using it
  model::TensorId id;
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<uint64_t, GraphState> graphs;
  std::unordered_map<uint64_t, SectionState> sections;
  std::unordered_map<uint64_t, TensorState> tensors;
};

Registry& registry() {
  static Registry r;
  return r;
}

using hpusim::synapse::api::fail;
using hpusim::synapse::api::finish;
using hpusim::synapse::api::succeed;

using hpusim::synapse::api::handle_of;
using hpusim::synapse::api::key_of;
using hpusim::synapse::api::new_handle_key;

// Runs an entry point's body under the registry lock; no exception crosses the C boundary.
template <class Body>
synStatus guarded(const char* function, Body body) {
  return hpusim::synapse::api::guard(function, [&] {
    std::lock_guard<std::mutex> lock(registry().mutex);
    return body(registry());
  });
}

GraphState* find_graph(Registry& reg, synGraphHandle graph) {
  auto it = reg.graphs.find(key_of(graph));
  return it == reg.graphs.end() ? nullptr : &it->second;
}

synStatus bad_graph(const char* function, synGraphHandle graph) {
  return fail(synInvalidArgument, std::string(function) + (graph ? ": not a live graph handle" : ": graph is NULL"));
}

bool dtype_of(synDataType type, model::DType* dtype) {
  switch (type) {
    case syn_type_fixed: *dtype = model::DType::I8; return true;
    case syn_type_bf16: *dtype = model::DType::BF16; return true;
    case syn_type_single: *dtype = model::DType::F32; return true;
    case syn_type_int16: *dtype = model::DType::I16; return true;
    case syn_type_int32: *dtype = model::DType::I32; return true;
    case syn_type_uint8: *dtype = model::DType::U8; return true;
    case syn_type_uint16: *dtype = model::DType::U16; return true;
    case syn_type_uint32: *dtype = model::DType::U32; return true;
    default: return false;
  }
}

// The descriptor as the model's TensorDesc; the checks the model does not make itself.
synStatus tensor_desc_of(const synTensorDescriptor& d, model::TensorDesc* desc) {
  if (!d.m_name) return fail(synInvalidArgument, "synTensorCreate: m_name is NULL");
  const std::string label = "synTensorCreate: tensor '" + std::string(d.m_name) + "': ";
  if (d.m_dims > SYN_MAX_TENSOR_DIM)
    return fail(synInvalidTensorDimensions, "tensor '" + std::string(d.m_name) + "': " + std::to_string(d.m_dims) +
                                                " dims, at most " + std::to_string(SYN_MAX_TENSOR_DIM));
  if (!dtype_of(d.m_dataType, &desc->dtype))
    return fail(synInvalidArgument, label + "data type " + std::to_string(static_cast<long long>(d.m_dataType)) +
                                        " is not one hpusim supports");
  if (d.m_tensorType != DATA_TENSOR)
    return fail(synUnsupported, label + "tensor type " + std::to_string(static_cast<long long>(d.m_tensorType)) +
                                    " (only DATA_TENSOR is supported)");
  if (d.m_ptr) return fail(synUnsupported, label + "constant tensors (m_ptr) are not supported");
  for (unsigned i = 0; i < SYN_MAX_TENSOR_DIM; ++i) {
    if (d.m_strides[i]) return fail(synUnsupported, label + "strides are not supported (tensors are dense)");
    const bool dynamic = d.m_minSizes[i] && (i >= d.m_dims || d.m_minSizes[i] != d.m_sizes[i]);
    if (dynamic) return fail(synUnsupported, label + "dynamic shapes (m_minSizes) are not supported");
  }
  desc->name = d.m_name;
  desc->shape.assign(d.m_sizes, d.m_sizes + d.m_dims);
  return synSuccess;
}

bool layouts_empty(const char** layouts, uint32_t count) {
  if (!layouts) return true;
  for (uint32_t i = 0; i < count; ++i)
    if (layouts[i] && layouts[i][0]) return false;
  return true;
}

// The user params as the model's NodeParams (README.md: the layout per GUID).
synStatus node_params_of(const std::string& label, const std::string& guid, const void* user_params,
                         unsigned size, model::NodeParams* params) {
  if (!user_params != (size == 0))
    return fail(synInvalidArgument, label + "userParams and paramsSize disagree (NULL needs 0, 0 needs NULL)");
  if (!user_params) return synSuccess;
  const bool gemm = guid == "gemm" || guid == "batch_gemm";
  if (gemm || model::is_mme_guid(guid)) {
    const size_t expected = gemm ? sizeof(hpusim_GemmParams) : sizeof(hpusim_ConvolutionParams);
    if (size != expected)
      return fail(synInvalidArgument, label + guid + " takes " +
                                          (gemm ? "hpusim_GemmParams" : "hpusim_ConvolutionParams") + " (" +
                                          std::to_string(expected) + " bytes), got " + std::to_string(size) + " bytes");
    if (gemm) {
      hpusim_GemmParams p;
      std::memcpy(&p, user_params, sizeof p);
      params->attributes = {{"transpose_a", p.transpose_a}, {"transpose_b", p.transpose_b}};
    } else {
      hpusim_ConvolutionParams p;
      std::memcpy(&p, user_params, sizeof p);
      params->attributes = {{"stride_h", p.stride_h}, {"stride_w", p.stride_w}, {"pad_h", p.pad_h},
                            {"pad_w", p.pad_w},       {"dil_h", p.dil_h},       {"dil_w", p.dil_w}};
    }
    return synSuccess;
  }
  if (size % sizeof(float))
    return fail(synInvalidArgument, label + guid + " takes floats, but paramsSize " + std::to_string(size) +
                                        " is not a multiple of " + std::to_string(sizeof(float)));
  params->scalars.resize(size / sizeof(float));
  std::memcpy(params->scalars.data(), user_params, size);
  return synSuccess;
}

synStatus create_node(synGraphHandle graph, const synTensor* inputs, const synTensor* outputs, uint32_t num_inputs,
                      uint32_t num_outputs, const void* user_params, unsigned params_size, const char* guid,
                      const char* name, synNodeId* node_id, const char** input_layouts, const char** output_layouts) {
  return guarded("synNodeCreate", [&](Registry& reg) {
    GraphState* state = find_graph(reg, graph);
    if (!state) return bad_graph("synNodeCreate", graph);
    if (!name) return fail(synInvalidArgument, "synNodeCreate: name is NULL");
    const std::string label = "synNodeCreate: node '" + std::string(name) + "': ";
    if (!guid) return fail(synInvalidArgument, label + "guid is NULL");
    if (num_inputs && !inputs) return fail(synInvalidArgument, label + "inputs is NULL");
    if (num_outputs && !outputs) return fail(synInvalidArgument, label + "outputs is NULL");
    if (!layouts_empty(input_layouts, num_inputs) || !layouts_empty(output_layouts, num_outputs))
      return fail(synUnsupported, label + "layouts are not supported");

    model::NodeDesc desc{name, guid, {}, {}, {}};
    if (synStatus s = node_params_of(label, desc.guid, user_params, params_size, &desc.params); s != synSuccess)
      return s;

    // Tensors new to this graph join it with the node, or not at all: they are added to the graph
    // and dropped again if the node is refused (no copy of the graph: building it stays linear).
    std::vector<uint64_t> joining;
    model::Graph& target = state->graph;
    const size_t tensors_before = target.tensor_count();
    const uint64_t graph_key = key_of(graph);
    auto resolve = [&](const synTensor* list, uint32_t count, const char* kind, std::vector<model::TensorId>* ids) {
      for (uint32_t i = 0; i < count; ++i) {
        const std::string which = label + kind + " " + std::to_string(i);
        auto it = reg.tensors.find(key_of(list[i]));
        if (it == reg.tensors.end())
          return fail(synInvalidArgument, which + (list[i] ? " is not a live tensor handle" : " is NULL"));
        TensorState& t = it->second;
        if (t.graph && t.graph != graph_key)
          return fail(synInvalidArgument, which + ", tensor '" + t.desc.name + "', belongs to another graph");
        if (!t.graph && std::find(joining.begin(), joining.end(), it->first) == joining.end()) {
          const model::Result r = target.add_tensor(t.desc, &t.id);
          if (!r.ok()) return finish(r);
          joining.push_back(it->first);
        }
        ids->push_back(t.id);
      }
      return synSuccess;
    };
    model::NodeId id;
    synStatus status = resolve(inputs, num_inputs, "input", &desc.inputs);
    if (status == synSuccess) status = resolve(outputs, num_outputs, "output", &desc.outputs);
    if (status == synSuccess) {
      if (const model::Result r = target.add_node(std::move(desc), &id); !r.ok()) status = finish(r);
    }
    if (status != synSuccess) {
      target.drop_tensors_from(tensors_before);
      return status;
    }
    for (uint64_t k : joining) reg.tensors.at(k).graph = graph_key;
    if (node_id) *node_id = id.index;
    return succeed();
  });
}

}  // namespace

extern "C" {

synStatus synGraphCreate(synGraphHandle* graph, synDeviceType deviceType) {
  return guarded("synGraphCreate", [&](Registry& reg) {
    if (!graph) return fail(synInvalidArgument, "synGraphCreate: graph is NULL");
    if (deviceType != synDeviceGaudi && deviceType != synDeviceGaudi2 && deviceType != synDeviceGaudi3)
      return fail(synInvalidArgument, "synGraphCreate: device type " + std::to_string(static_cast<long long>(deviceType)) +
                                          " (synDeviceGaudi = 2, synDeviceGaudi2 = 4 or synDeviceGaudi3 = 5)");
    const uint64_t key = new_handle_key();
    reg.graphs.emplace(key, GraphState{});
    *graph = handle_of<synGraphHandle>(key);
    return succeed();
  });
}

synStatus synGraphDestroy(synGraphHandle graph) {
  return guarded("synGraphDestroy", [&](Registry& reg) {
    if (!find_graph(reg, graph)) return bad_graph("synGraphDestroy", graph);
    const uint64_t key = key_of(graph);
    reg.graphs.erase(key);
    for (auto it = reg.sections.begin(); it != reg.sections.end();)
      it = it->second.graph == key ? reg.sections.erase(it) : std::next(it);
    for (auto it = reg.tensors.begin(); it != reg.tensors.end();)
      it = it->second.graph == key ? reg.tensors.erase(it) : std::next(it);
    return succeed();
  });
}

synStatus synSectionCreate(synSectionHandle* section, uint64_t sectionDescriptor, synGraphHandle graph) {
  return guarded("synSectionCreate", [&](Registry& reg) {
    GraphState* state = find_graph(reg, graph);
    if (!state) return bad_graph("synSectionCreate", graph);
    if (!section) return fail(synInvalidArgument, "synSectionCreate: section is NULL");
    if (sectionDescriptor) return fail(synInvalidArgument, "synSectionCreate: sectionDescriptor must be 0");
    const uint64_t key = new_handle_key();
    reg.sections.emplace(key, SectionState{key_of(graph), state->next_section_id++});
    *section = handle_of<synSectionHandle>(key);
    return succeed();
  });
}

synStatus synSectionDestroy(synSectionHandle section) {
  return guarded("synSectionDestroy", [&](Registry& reg) {
    if (!reg.sections.erase(key_of(section)))
      return fail(synInvalidArgument,
                  section ? "synSectionDestroy: not a live section handle" : "synSectionDestroy: section is NULL");
    return succeed();
  });
}

synStatus synTensorCreate(synTensor* tensor, const synTensorDescriptor* descriptor, synSectionHandle section,
                          uint64_t sectionOffset) {
  return guarded("synTensorCreate", [&](Registry& reg) {
    if (!tensor) return fail(synInvalidArgument, "synTensorCreate: tensor is NULL");
    if (!descriptor) return fail(synInvalidArgument, "synTensorCreate: descriptor is NULL");
    TensorState t;
    if (synStatus s = tensor_desc_of(*descriptor, &t.desc); s != synSuccess) return s;
    if (section) {
      auto it = reg.sections.find(key_of(section));
      if (it == reg.sections.end()) return fail(synInvalidArgument, "synTensorCreate: not a live section handle");
      t.desc.persistent = true;
      t.desc.section = model::Section{it->second.id, sectionOffset};
      t.graph = it->second.graph;
      if (const model::Result r = reg.graphs.at(t.graph).graph.add_tensor(t.desc, &t.id); !r.ok()) return finish(r);
    } else {
      if (sectionOffset) return fail(synInvalidArgument, "synTensorCreate: a section offset without a section");
      // The model's own checks now (its messages), its name check when the tensor joins a graph.
      model::Graph scratch;
      if (const model::Result r = scratch.add_tensor(t.desc); !r.ok()) return finish(r);
    }
    const uint64_t key = new_handle_key();
    reg.tensors.emplace(key, std::move(t));
    *tensor = handle_of<synTensor>(key);
    return succeed();
  });
}

synStatus synTensorDestroy(synTensor tensor) {
  return guarded("synTensorDestroy", [&](Registry& reg) {
    if (!reg.tensors.erase(key_of(tensor)))
      return fail(synInvalidArgument,
                  tensor ? "synTensorDestroy: not a live tensor handle" : "synTensorDestroy: tensor is NULL");
    return succeed();
  });
}

synStatus synNodeCreate(synGraphHandle graph, const synTensor* inputs, const synTensor* outputs, uint32_t numInputs,
                        uint32_t numOutputs, const void* userParams, unsigned paramsSize, const char* guid,
                        const char* name, const char** inputLayouts, const char** outputLayouts) {
  return create_node(graph, inputs, outputs, numInputs, numOutputs, userParams, paramsSize, guid, name, nullptr,
                     inputLayouts, outputLayouts);
}

synStatus synNodeCreateWithId(synGraphHandle graph, const synTensor* inputs, const synTensor* outputs,
                              uint32_t numInputs, uint32_t numOutputs, const void* userParams, unsigned paramsSize,
                              const char* guid, const char* name, synNodeId* nodeId, const char** inputLayouts,
                              const char** outputLayouts) {
  if (!nodeId) return fail(synInvalidArgument, "synNodeCreateWithId: nodeId is NULL");
  return create_node(graph, inputs, outputs, numInputs, numOutputs, userParams, paramsSize, guid, name, nodeId,
                     inputLayouts, outputLayouts);
}

synStatus hpusim_graphValidate(synGraphHandle graph) {
  return guarded("hpusim_graphValidate", [&](Registry& reg) {
    GraphState* state = find_graph(reg, graph);
    if (!state) return bad_graph("hpusim_graphValidate", graph);
    return finish(model::validate(state->graph));
  });
}

synStatus hpusim_graphStructuralHash(synGraphHandle graph, uint64_t* hash) {
  return guarded("hpusim_graphStructuralHash", [&](Registry& reg) {
    GraphState* state = find_graph(reg, graph);
    if (!state) return bad_graph("hpusim_graphStructuralHash", graph);
    if (!hash) return fail(synInvalidArgument, "hpusim_graphStructuralHash: hash is NULL");
    *hash = model::structural_hash(state->graph);
    return succeed();
  });
}

const char* hpusim_lastErrorMessage(void) { return hpusim::synapse::api::last_error().c_str(); }

}  // extern "C"

namespace hpusim::synapse::api {

thread_local std::string t_last_error;

synStatus fail(synStatus status, std::string message) {
  t_last_error = std::move(message);
  return status;
}
synStatus finish(const graph::Result& r) {
  t_last_error = r.message;
  return static_cast<synStatus>(r.status);
}
synStatus succeed() {
  t_last_error.clear();
  return synSuccess;
}
const std::string& last_error() { return t_last_error; }

bool copy_graph(synGraphHandle handle, graph::Graph* out) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  const GraphState* state = find_graph(registry(), handle);
  if (!state) return false;
  *out = state->graph;
  return true;
}

}  // namespace hpusim::synapse::api
