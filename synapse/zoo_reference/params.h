// What the workloads' parameter structs share. A parameter struct P<T> lists its tensors with
// tensors() (const and non-const, in a fixed order) and their names in kNames; optimizer states
// and gradients reuse the same struct.
#pragma once

#include <cstddef>
#include <vector>

namespace hpusim::synapse::zoo_reference {

// The same parameters in another element type (the double copy of the gradient checks).
template <class To, template <class> class Params, class From>
Params<To> convert_params(const Params<From>& from) {
  Params<To> to;
  const auto src = from.tensors();
  auto dst = to.tensors();
  for (size_t i = 0; i < src.size(); ++i) dst[i]->assign(src[i]->begin(), src[i]->end());
  return to;
}

// Zero-filled tensors of the sizes `like` has (gradients, optimizer states).
template <template <class> class Params>
Params<float> zeros_like(const Params<float>& like) {
  Params<float> out;
  const auto src = like.tensors();
  auto dst = out.tensors();
  for (size_t i = 0; i < src.size(); ++i) dst[i]->assign(src[i]->size(), 0.0f);
  return out;
}

}  // namespace hpusim::synapse::zoo_reference
