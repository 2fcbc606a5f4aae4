// The zoo's BERT encoder layer (sim/zoo/bert_layer_workload.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/zoo/workload.h"
#include "synapse/zoo_reference/bert_layer.h"

namespace hpusim::zoo {

// Throws std::invalid_argument when hidden is not a multiple of heads.
std::unique_ptr<Workload> make_bert_layer_workload(const synapse::zoo_reference::BertLayerConfig& config);

// The layer's input x of step `step`, [batch, seq, hidden] (graph shape {hidden, seq, batch}):
// values in [-1, 1) with 24-bit fractions (seeded, the same on every machine).
std::vector<float> bert_layer_batch(uint32_t seed, uint32_t step,
                                    const synapse::zoo_reference::BertLayerConfig& config);

}  // namespace hpusim::zoo
