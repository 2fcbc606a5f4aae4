#include "synapse/graph/structural_hash.h"

#include <cstring>
#include <map>
#include <string>

#include "synapse/graph/validate.h"

namespace hpusim::synapse::graph {
namespace {

class Hasher {
 public:
  void byte(uint8_t b) {
    hash_ ^= b;
    hash_ *= 1099511628211ull;
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    for (char c : s) byte(static_cast<uint8_t>(c));
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 14695981039346656037ull;
};

// Serialization tags, so that no two different structures share a byte stream.
enum Tag : uint8_t { kGraph = 0x47, kNode = 0x4E, kNewTensor = 0x54, kSeenTensor = 0x52, kLoose = 0x4C };

// Sections by first appearance, so that only which persistent tensors share memory, and where,
// counts (the waits the compiler derives from it), not the sections' numbers.
using SectionNumbers = std::map<uint32_t, uint32_t>;

void describe(Hasher& h, const TensorDesc& t, SectionNumbers& sections) {
  h.byte(static_cast<uint8_t>(t.dtype));
  h.byte(static_cast<uint8_t>(t.shape.size()));
  for (uint32_t d : t.shape) h.u32(d);
  h.byte(t.persistent ? 1 : 0);
  const bool in_section = t.persistent && t.section;
  h.byte(in_section ? 1 : 0);
  if (in_section) {
    const auto number = sections.emplace(t.section->id, static_cast<uint32_t>(sections.size())).first->second;
    h.u32(number);
    h.u64(t.section->offset);
  }
}

}  // namespace

uint64_t structural_hash(const Graph& graph) {
  Hasher h;
  h.byte(kGraph);
  h.u32(static_cast<uint32_t>(graph.node_count()));
  h.u32(static_cast<uint32_t>(graph.tensor_count()));
  std::vector<NodeId> order;
  if (auto topo = topological_order(graph)) {
    h.byte(1);
    order = std::move(*topo);
  } else {
    h.byte(0);
    for (uint32_t n = 0; n < graph.node_count(); ++n) order.push_back(NodeId{n});
  }
  std::vector<uint32_t> number(graph.tensor_count(), UINT32_MAX);
  SectionNumbers sections;
  uint32_t next = 0;
  const auto tensor = [&](TensorId id) {
    if (number[id.index] != UINT32_MAX) {
      h.byte(kSeenTensor);
      h.u32(number[id.index]);
      return;
    }
    number[id.index] = next++;
    h.byte(kNewTensor);
    describe(h, graph.tensor(id), sections);
  };
  for (NodeId id : order) {
    const NodeDesc& node = graph.node(id);
    h.byte(kNode);
    h.str(node.guid);
    h.u32(static_cast<uint32_t>(node.params.scalars.size()));
    for (float f : node.params.scalars) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      h.u32(bits);
    }
    h.u32(static_cast<uint32_t>(node.params.attributes.size()));
    for (const auto& [name, value] : node.params.attributes) {
      h.str(name);
      h.u64(static_cast<uint64_t>(value));
    }
    h.u32(static_cast<uint32_t>(node.inputs.size()));
    for (TensorId t : node.inputs) tensor(t);
    h.u32(static_cast<uint32_t>(node.outputs.size()));
    for (TensorId t : node.outputs) tensor(t);
  }
  for (uint32_t t = 0; t < graph.tensor_count(); ++t) {
    if (number[t] != UINT32_MAX) continue;
    h.byte(kLoose);
    describe(h, graph.tensor(TensorId{t}), sections);
  }
  return h.value();
}

}  // namespace hpusim::synapse::graph
