#include "bridge/core/generator.h"

#include <c10/core/TensorImpl.h>
#include <ATen/Utils.h>
#include <ATen/core/TensorBase.h>
#include <ATen/ops/empty.h>

#include <cstring>
#include <random>

namespace hpusim::bridge {

HpuGenerator::HpuGenerator(uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::HPU, 0), c10::DispatchKeySet(c10::DispatchKey::HPU)),
      seed_(seed) {}

void HpuGenerator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}
void HpuGenerator::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t HpuGenerator::get_offset() const { return offset_; }
uint64_t HpuGenerator::current_seed() const { return seed_; }

uint64_t HpuGenerator::seed() {
  const uint64_t s = c10::detail::getNonDeterministicRandom();
  set_current_seed(s);
  return s;
}

void HpuGenerator::set_state(const c10::TensorImpl& state) {
  TORCH_CHECK(state.numel() == 16 && state.dtype() == at::kByte && state.device().is_cpu(),
              "the HPU generator's state is a CPU ByteTensor of 16 bytes (seed, offset), got ", state.numel(),
              " elements of ", state.dtype());
  std::memcpy(&seed_, state.data(), 8);
  std::memcpy(&offset_, static_cast<const char*>(state.data()) + 8, 8);
}

c10::intrusive_ptr<c10::TensorImpl> HpuGenerator::get_state() const {
  at::Tensor state = at::empty({16}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(state.data_ptr(), &seed_, 8);
  std::memcpy(static_cast<char*>(state.data_ptr()) + 8, &offset_, 8);
  return state.getIntrusivePtr();
}

uint32_t HpuGenerator::next_kernel_seed() { return static_cast<uint32_t>(seed_ + offset_++); }

HpuGenerator* HpuGenerator::clone_impl() const {
  auto* copy = new HpuGenerator(seed_);
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& default_hpu_generator() {
  static const at::Generator generator = at::make_generator<HpuGenerator>(c10::default_rng_seed_val);
  return generator;
}

HpuGenerator* hpu_generator(const std::optional<at::Generator>& generator) {
  const at::Generator& g = generator && generator->defined() ? *generator : default_hpu_generator();
  TORCH_CHECK(g.device().type() == c10::DeviceType::HPU, "expected an 'hpu' generator, got one for ", g.device());
  return at::check_generator<HpuGenerator>(g);
}

}  // namespace hpusim::bridge
