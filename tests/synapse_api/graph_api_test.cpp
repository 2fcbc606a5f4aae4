// The Synapse C API over the graph model: the MLP graph built and validated through it, every
// error path's status and message, the structural hash against the model's, and the C client.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "synapse/graph/structural_hash.h"
#include "synapse_api.h"
#include "tests/synapse_graph/graph_spec.h"

extern "C" synStatus c_client_relu_graph(uint64_t* hash);
extern "C" int c_client_null_graph_is_refused(void);

namespace {

namespace model = hpusim::synapse::graph;

synTensorDescriptor descriptor(const char* name, std::vector<unsigned> sizes, synDataType dtype = syn_type_single) {
  synTensorDescriptor d{};
  d.m_dataType = dtype;
  d.m_dims = static_cast<unsigned>(sizes.size());
  for (size_t i = 0; i < sizes.size() && i < SYN_MAX_TENSOR_DIM; ++i) d.m_sizes[i] = sizes[i];
  d.m_name = name;
  return d;
}

std::string last_error() { return hpusim_lastErrorMessage(); }

// The MLP of tests/synapse_graph (graph_spec.h's mlp_spec) through the C API. Persistent tensors
// live in sections; a test changes one thing through the hooks before building.
class SynapseApiMlp : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(synGraphCreate(&graph, synDeviceGaudi), synSuccess);
    ASSERT_EQ(synSectionCreate(&inputs, 0, graph), synSuccess);
    ASSERT_EQ(synSectionCreate(&weights, 0, graph), synSuccess);
    ASSERT_EQ(synSectionCreate(&outputs, 0, graph), synSuccess);
    sizes = {{"x", {256, 32}}, {"w1", {128, 256}}, {"b1", {128}},     {"h", {128, 32}},     {"hb", {128, 32}},
             {"r", {128, 32}}, {"w2", {10, 128}},  {"logits", {10, 32}}, {"probs", {10, 32}}};
    section = {{"x", inputs}, {"w1", weights}, {"b1", weights}, {"w2", weights}, {"probs", outputs}};
    guid = {{"fc1", "gemm"}, {"bias1", "add_fwd_f32"}, {"relu1", "relu_fwd_f32"}, {"fc2", "gemm"},
            {"softmax", "softmax_fwd_f32"}};
  }
  void TearDown() override {
    if (graph) synGraphDestroy(graph);
  }

  // Creates every tensor and node, expecting each call to succeed.
  void build() {
    for (const char* name : {"x", "w1", "b1", "h", "hb", "r", "w2", "logits", "probs"}) {
      const synTensorDescriptor d = descriptor(name, sizes[name]);
      const auto s = section.find(name);
      const auto o = offset.find(name);
      ASSERT_EQ(synTensorCreate(&tensor[name], &d, s == section.end() ? nullptr : s->second,
                                s == section.end() || o == offset.end() ? 0 : o->second),
                synSuccess)
          << last_error();
    }
    node("fc1", {"x", "w1"}, {"h"});
    node("bias1", {"h", "b1"}, {"hb"});
    node("relu1", {"hb"}, {"r"});
    node("fc2", {"r", "w2"}, {"logits"});
    node("softmax", {"logits"}, {"probs"});
  }

  void node(const char* name, std::vector<const char*> in, std::vector<const char*> out) {
    std::vector<synTensor> ins, outs;
    for (const char* t : in) ins.push_back(tensor[t]);
    for (const char* t : out) outs.push_back(tensor[t]);
    const auto p = params.find(name);
    const void* user_params = p == params.end() ? nullptr : p->second.data();
    const unsigned size = p == params.end() ? 0 : static_cast<unsigned>(p->second.size());
    ASSERT_EQ(synNodeCreate(graph, ins.data(), outs.data(), static_cast<uint32_t>(ins.size()),
                            static_cast<uint32_t>(outs.size()), user_params, size, guid[name].c_str(), name, nullptr,
                            nullptr),
              synSuccess)
        << last_error();
  }

  template <class T>
  void set_params(const char* node, const T& value) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
    params[node].assign(bytes, bytes + sizeof value);
  }

  uint64_t hash() {
    uint64_t h = 0;
    EXPECT_EQ(hpusim_graphStructuralHash(graph, &h), synSuccess) << last_error();
    return h;
  }

  synGraphHandle graph = nullptr;
  synSectionHandle inputs = nullptr, weights = nullptr, outputs = nullptr;
  std::map<std::string, std::vector<unsigned>> sizes;
  std::map<std::string, synSectionHandle> section;
  // Where the weights sit in their section, as in the model's MLP spec (the hash counts it).
  std::map<std::string, uint64_t> offset{{"b1", 131072}, {"w2", 131584}};
  std::map<std::string, std::string> guid;
  std::map<std::string, std::vector<unsigned char>> params;
  std::map<std::string, synTensor> tensor;
};

TEST_F(SynapseApiMlp, BuildsAndValidates) {
  build();
  EXPECT_EQ(hpusim_graphValidate(graph), synSuccess) << last_error();
  EXPECT_EQ(last_error(), "");
}

TEST_F(SynapseApiMlp, StructuralHashEqualsTheModels) {
  build();
  EXPECT_EQ(hash(), model::structural_hash(model::testing::build(model::testing::mlp_spec())));
}

TEST_F(SynapseApiMlp, GemmParamsBecomeTransposeAttributes) {
  sizes["w2"] = {128, 10};   // [K, N]: transposed B
  set_params("fc2", hpusim_GemmParams{0, 1});
  build();
  EXPECT_EQ(hpusim_graphValidate(graph), synSuccess) << last_error();

  model::testing::GraphSpec spec = model::testing::mlp_spec();
  spec.tensor("w2").shape = {128, 10};
  spec.node("fc2").params.attributes = {{"transpose_a", 0}, {"transpose_b", 1}};
  EXPECT_EQ(hash(), model::structural_hash(model::testing::build(spec)));
}

TEST_F(SynapseApiMlp, UnknownGuidIsUnsupported) {
  guid["relu1"] = "relu_fwd_f64";
  build();
  EXPECT_EQ(hpusim_graphValidate(graph), synUnsupported);
  EXPECT_EQ(last_error(),
            "node 'relu1': unknown GUID 'relu_fwd_f64' (neither a TPC kernel of the library, nor memcpy, nor an MME GUID: gemm, "
            "batch_gemm, spatial_convolution, dedx, dedw)");
}

TEST_F(SynapseApiMlp, ShapeMismatchNamesNodeAndTensor) {
  sizes["b1"] = {64};
  build();
  EXPECT_EQ(hpusim_graphValidate(graph), synInvalidArgument);
  EXPECT_EQ(last_error(),
            "node 'bias1': tensor 'b1': add_fwd_f32: input 1 (B): dim 0 has size 64, which does not broadcast to the "
            "output's 128 (shapes [64] and [128, 32]; a dim must be equal or 1)");
}

TEST_F(SynapseApiMlp, TensorWithoutSectionIsDangling) {
  section.erase("w2");
  build();
  EXPECT_EQ(hpusim_graphValidate(graph), synInvalidArgument);
  EXPECT_EQ(last_error(),
            "node 'fc2': input 1, tensor 'w2', is never written: no node produces it and it is not persistent");
}

TEST_F(SynapseApiMlp, TpcParamsAreScalars) {
  set_params("relu1", 0.5f);
  build();
  EXPECT_EQ(hpusim_graphValidate(graph), synInvalidArgument);
  EXPECT_EQ(last_error(), "node 'relu1': relu_fwd_f32 takes 0 scalar parameters, got 1");
}

TEST_F(SynapseApiMlp, DestroyedGraphHandleIsRefused) {
  build();
  synGraphHandle destroyed = graph;
  ASSERT_EQ(synGraphDestroy(graph), synSuccess);
  graph = nullptr;
  uint64_t h;
  EXPECT_EQ(hpusim_graphValidate(destroyed), synInvalidArgument);
  EXPECT_EQ(last_error(), "hpusim_graphValidate: not a live graph handle");
  EXPECT_EQ(hpusim_graphStructuralHash(destroyed, &h), synInvalidArgument);
  EXPECT_EQ(synGraphDestroy(destroyed), synInvalidArgument);
  EXPECT_EQ(last_error(), "synGraphDestroy: not a live graph handle");
  synTensor in = tensor["r"], out = tensor["logits"];
  EXPECT_EQ(synNodeCreate(destroyed, &in, &out, 1, 1, nullptr, 0, "relu_fwd_f32", "late", nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: not a live graph handle");
  // Its tensors and sections ended with it.
  EXPECT_EQ(synTensorDestroy(in), synInvalidArgument);
  EXPECT_EQ(last_error(), "synTensorDestroy: not a live tensor handle");
  EXPECT_EQ(synSectionDestroy(weights), synInvalidArgument);
  // A new graph never gets the old handle back.
  synGraphHandle fresh;
  ASSERT_EQ(synGraphCreate(&fresh, synDeviceGaudi), synSuccess);
  EXPECT_NE(fresh, destroyed);
  EXPECT_EQ(synGraphDestroy(fresh), synSuccess);
}

TEST_F(SynapseApiMlp, FailedNodeAddsNothing) {
  build();
  const uint64_t before = hash();
  // A new workspace tensor named like an existing one: the node fails and the tensor stays out.
  const synTensorDescriptor d = descriptor("r", {128, 32});
  synTensor twin;
  ASSERT_EQ(synTensorCreate(&twin, &d, nullptr, 0), synSuccess);
  synTensor in = tensor["hb"];
  EXPECT_EQ(synNodeCreate(graph, &in, &twin, 1, 1, nullptr, 0, "relu_fwd_f32", "relu2", nullptr, nullptr),
            synNameIsAlreadyUsed);
  EXPECT_EQ(last_error(), "tensor 'r': the name is already used");
  EXPECT_EQ(hash(), before);
  // A name used twice among the nodes.
  synTensor x = tensor["x"];
  EXPECT_EQ(synNodeCreate(graph, &in, &x, 1, 1, nullptr, 0, "relu_fwd_f32", "relu1", nullptr, nullptr),
            synNameIsAlreadyUsed);
  EXPECT_EQ(last_error(), "node 'relu1': the name is already used");
  EXPECT_EQ(hash(), before);
}

class SynapseApiErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(synGraphCreate(&graph, synDeviceGaudi), synSuccess);
    ASSERT_EQ(synSectionCreate(&section, 0, graph), synSuccess);
    const synTensorDescriptor dx = descriptor("x", {8, 4});
    const synTensorDescriptor dy = descriptor("y", {8, 4});
    ASSERT_EQ(synTensorCreate(&x, &dx, section, 0), synSuccess);
    ASSERT_EQ(synTensorCreate(&y, &dy, section, 0), synSuccess);
  }
  void TearDown() override { synGraphDestroy(graph); }

  synStatus relu(const char* name, const void* params = nullptr, unsigned size = 0, const char** layouts = nullptr) {
    return synNodeCreate(graph, &x, &y, 1, 1, params, size, "relu_fwd_f32", name, layouts, nullptr);
  }

  synGraphHandle graph = nullptr;
  synSectionHandle section = nullptr;
  synTensor x = nullptr, y = nullptr;
};

TEST_F(SynapseApiErrors, GraphCreateChecksPointerAndDeviceType) {
  synGraphHandle g;
  EXPECT_EQ(synGraphCreate(nullptr, synDeviceGaudi), synInvalidArgument);
  EXPECT_EQ(last_error(), "synGraphCreate: graph is NULL");
  EXPECT_EQ(synGraphCreate(&g, static_cast<synDeviceType>(3)), synInvalidArgument);
  EXPECT_EQ(last_error(), "synGraphCreate: device type 3 (synDeviceGaudi = 2, synDeviceGaudi2 = 4 or synDeviceGaudi3 = 5)");
  EXPECT_EQ(synGraphCreate(&g, static_cast<synDeviceType>(99)), synInvalidArgument);
  EXPECT_EQ(synGraphDestroy(nullptr), synInvalidArgument);
  EXPECT_EQ(last_error(), "synGraphDestroy: graph is NULL");
}

TEST_F(SynapseApiErrors, HandlesOfAnotherKindAreRefused) {
  EXPECT_EQ(hpusim_graphValidate(reinterpret_cast<synGraphHandle>(x)), synInvalidArgument);
  EXPECT_EQ(synTensorDestroy(reinterpret_cast<synTensor>(graph)), synInvalidArgument);
  EXPECT_EQ(synSectionDestroy(reinterpret_cast<synSectionHandle>(x)), synInvalidArgument);
  synTensor garbage = reinterpret_cast<synTensor>(uintptr_t{0xdeadbeef});
  EXPECT_EQ(synNodeCreate(graph, &garbage, &y, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': input 0 is not a live tensor handle");
}

TEST_F(SynapseApiErrors, TensorCreateChecksPointersAndDescriptor) {
  synTensor t;
  synTensorDescriptor d = descriptor("t", {8, 4});
  EXPECT_EQ(synTensorCreate(nullptr, &d, nullptr, 0), synInvalidArgument);
  EXPECT_EQ(last_error(), "synTensorCreate: tensor is NULL");
  EXPECT_EQ(synTensorCreate(&t, nullptr, nullptr, 0), synInvalidArgument);
  EXPECT_EQ(last_error(), "synTensorCreate: descriptor is NULL");
  d.m_name = nullptr;
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synInvalidArgument);
  EXPECT_EQ(last_error(), "synTensorCreate: m_name is NULL");
  d = descriptor("", {8});
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synInvalidArgument);
  EXPECT_EQ(last_error(), "a tensor needs a name");
  d = descriptor("t", {8}, syn_type_na);
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synInvalidArgument);
  EXPECT_EQ(last_error(), "synTensorCreate: tensor 't': data type 0 is not one hpusim supports");
  d.m_dataType = static_cast<synDataType>(3);
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synInvalidArgument);
  d = descriptor("t", {8});
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 16), synInvalidArgument);
  EXPECT_EQ(last_error(), "synTensorCreate: a section offset without a section");
  EXPECT_EQ(synTensorCreate(&t, &d, reinterpret_cast<synSectionHandle>(graph), 0), synInvalidArgument);
  EXPECT_EQ(last_error(), "synTensorCreate: not a live section handle");
}

TEST_F(SynapseApiErrors, TensorDims) {
  synTensor t;
  synTensorDescriptor d = descriptor("big", {2, 2, 2, 2, 2});
  d.m_dims = 6;
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synInvalidTensorDimensions);
  EXPECT_EQ(last_error(), "tensor 'big': 6 dims, at most 5");
  d.m_dims = 0xFFFFFFFFu;
  EXPECT_EQ(synTensorCreate(&t, &d, section, 0), synInvalidTensorDimensions);
  d = descriptor("empty", {4, 0});
  EXPECT_EQ(synTensorCreate(&t, &d, section, 0), synInvalidTensorDimensions);
  EXPECT_EQ(last_error(), "tensor 'empty': dim 1 has size 0 (must be 1 .. 2^31-1)");
  d = descriptor("scalar", {});
  EXPECT_EQ(synTensorCreate(&t, &d, section, 0), synSuccess);
  d = descriptor("five", {1, 2, 3, 4, 5});
  EXPECT_EQ(synTensorCreate(&t, &d, section, 0), synSuccess);
}

TEST_F(SynapseApiErrors, UnsupportedDescriptorFields) {
  synTensor t;
  float data = 1;
  synTensorDescriptor d = descriptor("t", {8, 4});
  d.m_ptr = &data;
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synUnsupported);
  EXPECT_EQ(last_error(), "synTensorCreate: tensor 't': constant tensors (m_ptr) are not supported");
  d = descriptor("t", {8, 4});
  d.m_strides[0] = 4;
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synUnsupported);
  d = descriptor("t", {8, 4});
  d.m_minSizes[0] = 2;
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synUnsupported);
  d.m_minSizes[0] = 8;   // equal to the size: static
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synSuccess);
  d = descriptor("u", {8, 4});
  d.m_tensorType = static_cast<synTensorType>(1);
  EXPECT_EQ(synTensorCreate(&t, &d, nullptr, 0), synUnsupported);
}

TEST_F(SynapseApiErrors, TensorNameUsedTwiceInASection) {
  synTensor t;
  const synTensorDescriptor d = descriptor("x", {8});
  EXPECT_EQ(synTensorCreate(&t, &d, section, 0), synNameIsAlreadyUsed);
  EXPECT_EQ(last_error(), "tensor 'x': the name is already used");
}

TEST_F(SynapseApiErrors, NodeCreateChecksPointers) {
  EXPECT_EQ(synNodeCreate(nullptr, &x, &y, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: graph is NULL");
  EXPECT_EQ(synNodeCreate(graph, &x, &y, 1, 1, nullptr, 0, "relu_fwd_f32", nullptr, nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: name is NULL");
  EXPECT_EQ(synNodeCreate(graph, &x, &y, 1, 1, nullptr, 0, nullptr, "relu", nullptr, nullptr), synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': guid is NULL");
  EXPECT_EQ(synNodeCreate(graph, nullptr, &y, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': inputs is NULL");
  EXPECT_EQ(synNodeCreate(graph, &x, nullptr, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr),
            synInvalidArgument);
  synTensor none = nullptr;
  EXPECT_EQ(synNodeCreate(graph, &x, &none, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': output 0 is NULL");
  EXPECT_EQ(synNodeCreate(graph, &x, &y, 1, 1, nullptr, 0, "", "relu", nullptr, nullptr), synInvalidArgument);
  EXPECT_EQ(last_error(), "node 'relu': no GUID");
  uint64_t h;
  EXPECT_EQ(hpusim_graphStructuralHash(graph, nullptr), synInvalidArgument);
  EXPECT_EQ(last_error(), "hpusim_graphStructuralHash: hash is NULL");
  EXPECT_EQ(hpusim_graphStructuralHash(nullptr, &h), synInvalidArgument);
  EXPECT_EQ(hpusim_graphValidate(nullptr), synInvalidArgument);
  EXPECT_EQ(synNodeCreateWithId(graph, &x, &y, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreateWithId: nodeId is NULL");
  EXPECT_EQ(hpusim_graphValidate(graph), synSuccess);   // nothing was added
}

TEST_F(SynapseApiErrors, NodeParamsAndLayouts) {
  const float scale = 2;
  EXPECT_EQ(relu("relu", &scale, 0), synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': userParams and paramsSize disagree (NULL needs 0, 0 needs NULL)");
  EXPECT_EQ(relu("relu", nullptr, 4), synInvalidArgument);
  EXPECT_EQ(relu("relu", &scale, 3), synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': relu_fwd_f32 takes floats, but paramsSize 3 is not a multiple of 4");
  const char* layouts[] = {"WHCN"};
  EXPECT_EQ(relu("relu", nullptr, 0, layouts), synUnsupported);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': layouts are not supported");
  const char* empty_layouts[] = {""};
  EXPECT_EQ(relu("relu", nullptr, 0, empty_layouts), synSuccess);

  const hpusim_GemmParams gemm{0, 0};
  EXPECT_EQ(synNodeCreate(graph, &x, &y, 1, 1, &gemm, 1, "gemm", "fc", nullptr, nullptr), synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'fc': gemm takes hpusim_GemmParams (2 bytes), got 1 bytes");
}

TEST_F(SynapseApiErrors, TensorOfAnotherGraphIsRefused) {
  synGraphHandle other;
  ASSERT_EQ(synGraphCreate(&other, synDeviceGaudi), synSuccess);
  EXPECT_EQ(synNodeCreate(other, &x, &y, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(last_error(), "synNodeCreate: node 'relu': input 0, tensor 'x', belongs to another graph");
  // A workspace tensor belongs to the graph of its first node.
  const synTensorDescriptor d = descriptor("ws", {8, 4});
  synTensor ws;
  ASSERT_EQ(synTensorCreate(&ws, &d, nullptr, 0), synSuccess);
  ASSERT_EQ(synNodeCreate(graph, &x, &ws, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr), synSuccess);
  EXPECT_EQ(synNodeCreate(other, &ws, &ws, 1, 1, nullptr, 0, "relu_fwd_f32", "relu", nullptr, nullptr),
            synInvalidArgument);
  EXPECT_EQ(synGraphDestroy(other), synSuccess);
}

TEST_F(SynapseApiErrors, NodeIdsCountFromZero) {
  synNodeId first = 99, second = 99;
  ASSERT_EQ(synNodeCreateWithId(graph, &x, &y, 1, 1, nullptr, 0, "relu_fwd_f32", "a", &first, nullptr, nullptr),
            synSuccess);
  const synTensorDescriptor d = descriptor("z", {8, 4});
  synTensor z;
  ASSERT_EQ(synTensorCreate(&z, &d, nullptr, 0), synSuccess);
  ASSERT_EQ(synNodeCreateWithId(graph, &y, &z, 1, 1, nullptr, 0, "relu_fwd_f32", "b", &second, nullptr, nullptr),
            synSuccess);
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(second, 1u);
  EXPECT_EQ(hpusim_graphValidate(graph), synSuccess) << last_error();
}

TEST(SynapseApiConvolution, ParamsBecomeAttributes) {
  synGraphHandle graph;
  synSectionHandle section;
  ASSERT_EQ(synGraphCreate(&graph, synDeviceGaudi), synSuccess);
  ASSERT_EQ(synSectionCreate(&section, 0, graph), synSuccess);
  const synTensorDescriptor dx = descriptor("x", {4, 8, 8, 1});   // [C, W, H, N]
  const synTensorDescriptor dw = descriptor("w", {2, 4, 3, 3});   // [K, C, S, R]
  const synTensorDescriptor dy = descriptor("y", {2, 8, 8, 1});   // [K, Q, P, N] with pad 1
  synTensor in[2], out;
  ASSERT_EQ(synTensorCreate(&in[0], &dx, section, 0), synSuccess);
  ASSERT_EQ(synTensorCreate(&in[1], &dw, section, 1024), synSuccess);
  ASSERT_EQ(synTensorCreate(&out, &dy, section, 4096), synSuccess);
  const hpusim_ConvolutionParams padded{1, 1, 1, 1, 1, 1};
  ASSERT_EQ(synNodeCreate(graph, in, &out, 2, 1, &padded, sizeof padded, "spatial_convolution", "conv", nullptr,
                          nullptr),
            synSuccess);
  EXPECT_EQ(hpusim_graphValidate(graph), synSuccess) << last_error();
  const synTensorDescriptor dy0 = descriptor("y0", {2, 8, 8, 1});
  synTensor out0;
  ASSERT_EQ(synTensorCreate(&out0, &dy0, section, 8192), synSuccess);
  const hpusim_ConvolutionParams zeroed{};
  ASSERT_EQ(synNodeCreate(graph, in, &out0, 2, 1, &zeroed, sizeof zeroed, "spatial_convolution", "conv0", nullptr,
                          nullptr),
            synSuccess);
  EXPECT_EQ(hpusim_graphValidate(graph), synInvalidArgument);
  EXPECT_EQ(last_error(), "node 'conv0': spatial_convolution: attribute dil_h is 0, must be 1 .. 65535");
  EXPECT_EQ(synGraphDestroy(graph), synSuccess);
}

TEST(SynapseApiC, ClientBuildsValidatesAndHashes) {
  uint64_t hash = 0;
  ASSERT_EQ(c_client_relu_graph(&hash), synSuccess) << last_error();
  model::Graph g;
  model::TensorId x, y;
  // The client puts both in one section at offset 0: y is written over x.
  g.add_tensor({"x", model::DType::F32, {8, 4}, true, model::Section{1, 0}}, &x);
  g.add_tensor({"y", model::DType::F32, {8, 4}, true, model::Section{1, 0}}, &y);
  g.add_node({"relu", "relu_fwd_f32", {x}, {y}, {}});
  EXPECT_EQ(hash, model::structural_hash(g));
  EXPECT_EQ(c_client_null_graph_is_refused(), 1);
}

}  // namespace
