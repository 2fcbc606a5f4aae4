// The binary32 multiplier and adder of the MME PEs (fp32_mul.sv, fp32_add.sv), verilated, one
// operation per call: for checking the units alone against a reference.
#pragma once

#include <cstdint>
#include <memory>

namespace hpusim::mme::rtl {

class Fp32Units {
 public:
  Fp32Units();
  ~Fp32Units();
  Fp32Units(const Fp32Units&) = delete;
  Fp32Units& operator=(const Fp32Units&) = delete;

  // Operands and results are binary32 bit patterns; NaN results are 0x7FC00000.
  uint32_t mul(uint32_t x, uint32_t y);
  uint32_t add(uint32_t x, uint32_t y);

 private:
  struct Model;
  std::unique_ptr<Model> model_;
};

}  // namespace hpusim::mme::rtl
