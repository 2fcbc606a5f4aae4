// The HPU random generator: a seed and an offset (calls drawn since the seed was set). Each
// device draw takes the kernel seed low32(seed + offset) and advances the offset by one; the
// card's counter-based generator (the dropout kernel, synapse/tpc_kernels/README.md) turns it and
// each element's index into that element's draw. The state is 16 bytes: seed, offset.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <cstdint>
#include <mutex>

namespace hpusim::bridge {

class HpuGenerator final : public c10::GeneratorImpl {
 public:
  explicit HpuGenerator(uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::HPU; }

  // The kernel seed of the next device draw.
  uint32_t next_kernel_seed();

 private:
  HpuGenerator* clone_impl() const override;
  uint64_t seed_ = 0, offset_ = 0;
};

// The process's default HPU generator, and the one a call names (or the default).
const at::Generator& default_hpu_generator();
HpuGenerator* hpu_generator(const std::optional<at::Generator>& generator);

}  // namespace hpusim::bridge
