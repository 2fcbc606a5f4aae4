// Central finite differences in double against a workload's analytic (f32) gradients.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "synapse/zoo_reference/params.h"

namespace hpusim::synapse::zoo_reference::test_support {

struct GradientTolerance {
  double step = 1e-6;    // the parameter's perturbation (absolute)
  double rtol = 1e-3;    // relative to the numeric gradient
  double atol = 1e-4;    // relative to the largest analytic gradient of the tensor
};

// For `samples` elements spread over each parameter tensor: numeric = (L(p + h) - L(p - h)) / 2h
// with the loss `loss_of(Params<double>)` evaluated in double, analytic = grads.
// |analytic - numeric| <= rtol |numeric| + atol max|analytic of the tensor| must hold, and at
// least one checked element per tensor must have a numeric gradient of at least 1e-3 times that
// maximum (so an all-zero gradient cannot pass). Tensors named in `zero_gradient` have a
// gradient that is 0 in exact arithmetic: there both gradients must be below 1e-6 times the
// largest analytic gradient of all tensors.
template <template <class> class Params, class LossFn>
void expect_gradients_match(const Params<float>& params, const Params<float>& grads, LossFn loss_of, size_t samples,
                            const std::vector<std::string>& zero_gradient = {}, const GradientTolerance& tol = {}) {
  const auto p = params.tensors();
  const auto g = grads.tensors();
  double largest_overall = 0;
  for (const std::vector<float>* t : g)
    for (float v : *t) largest_overall = std::max(largest_overall, std::fabs(static_cast<double>(v)));
  ASSERT_GT(largest_overall, 0.0) << "every analytic gradient is zero";
  for (size_t t = 0; t < p.size(); ++t) {
    const std::string name = Params<float>::kNames[t];
    const bool expect_zero = std::find(zero_gradient.begin(), zero_gradient.end(), name) != zero_gradient.end();
    const size_t size = p[t]->size();
    ASSERT_EQ(g[t]->size(), size) << name;
    double largest = 0;
    for (float v : *g[t]) largest = std::max(largest, std::fabs(static_cast<double>(v)));
    bool informative = false;
    for (size_t s = 0; s < std::min(samples, size); ++s) {
      const size_t i = (s * 7919 + 3) % size;
      Params<double> shifted = convert_params<double>(params);
      std::vector<double>& values = *shifted.tensors()[t];
      const double original = values[i];
      values[i] = original + tol.step;
      const double plus = loss_of(shifted);
      values[i] = original - tol.step;
      const double minus = loss_of(shifted);
      const double numeric = (plus - minus) / (2 * tol.step);
      const double analytic = (*g[t])[i];
      if (expect_zero) {
        EXPECT_LE(std::fabs(analytic), 1e-6 * largest_overall) << name << "[" << i << "]: analytic " << analytic;
        EXPECT_LE(std::fabs(numeric), 1e-6 * largest_overall) << name << "[" << i << "]: numeric " << numeric;
        continue;
      }
      EXPECT_LE(std::fabs(analytic - numeric), tol.rtol * std::fabs(numeric) + tol.atol * largest)
          << name << "[" << i << "]: analytic " << analytic << ", numeric " << numeric;
      informative = informative || std::fabs(numeric) >= 1e-3 * largest;
    }
    EXPECT_TRUE(expect_zero || informative) << name << ": every checked element has a negligible gradient";
  }
}

}  // namespace hpusim::synapse::zoo_reference::test_support
