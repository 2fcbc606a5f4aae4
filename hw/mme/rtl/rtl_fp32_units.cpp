#include "hw/mme/rtl/rtl_fp32_units.h"

#include "verilated.h"
#include "Vfp32_units.h"

namespace hpusim::mme::rtl {

struct Fp32Units::Model {
  VerilatedContext context;
  Vfp32_units units{&context, "fp32_units"};

  void apply(uint32_t x, uint32_t y) {
    units.x = x;
    units.y = y;
    units.eval();
  }
};

Fp32Units::Fp32Units() : model_(std::make_unique<Model>()) {}

Fp32Units::~Fp32Units() { model_->units.final(); }

uint32_t Fp32Units::mul(uint32_t x, uint32_t y) {
  model_->apply(x, y);
  return model_->units.product;
}

uint32_t Fp32Units::add(uint32_t x, uint32_t y) {
  model_->apply(x, y);
  return model_->units.sum;
}

}  // namespace hpusim::mme::rtl
