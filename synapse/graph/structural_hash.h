// The structural hash of a graph: the recipe cache's key (README.md says what it covers).
#pragma once

#include <cstdint>

#include "synapse/graph/graph.h"

namespace hpusim::synapse::graph {

// 64-bit FNV-1a over a fixed little-endian serialization of, per node in topological order
// (creation order when the graph has none): the GUID, the scalar parameters (their bits), the
// attributes (by name), and each input then output tensor: its number (tensors numbered by first
// appearance in that walk), and at its first appearance its dtype, shape and persistent flag;
// then the tensors no node touches, in creation order. Not hashed: any name, sections and
// offsets.
uint64_t structural_hash(const Graph& graph);

}  // namespace hpusim::synapse::graph
