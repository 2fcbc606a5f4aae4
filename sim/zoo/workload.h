// The model zoo: training steps written against the Synapse C API (sim/zoo/api_graph.h), one
// graph per step (forward, backward and the optimizer), compiled through the recipe cache and
// launched on the acquired device. Each workload starts from the same parameters and data as its
// C++ reference (synapse/zoo_reference), so results can be compared step by step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "synapse_api.h"

namespace hpusim::zoo {

struct NamedTensor {
  std::string name;
  std::vector<float> values;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  // Builds the step graph and uploads the initial parameters (seeded).
  virtual void setup(synDeviceId device, uint32_t seed) = 0;
  // One training step: compile (a cache hit after the first), inputs down, launch, loss up.
  // Returns the loss before the update.
  virtual float step(uint32_t step) = 0;
  // The trainable parameters as they are on the device now.
  virtual std::vector<NamedTensor> parameters() = 0;
};

// "mlp" (the others are listed by workload_names()); nullptr for an unknown name.
std::unique_ptr<Workload> make_workload(const std::string& name);
std::vector<std::string> workload_names();

// The MNIST-shaped input batch of step `step`: pixels in [0, 1), targets 0..classes-1 (seeded, the
// same on every machine).
void mlp_batch(uint32_t seed, uint32_t step, size_t batch, size_t inputs, size_t classes, std::vector<float>* x,
               std::vector<int32_t>* target);

}  // namespace hpusim::zoo
