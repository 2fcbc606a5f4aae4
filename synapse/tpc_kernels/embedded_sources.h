// The kernel sources (kernels/*.s, *.inc) compiled into the library by embed_kernels.cmake.
#pragma once

#include <string>
#include <vector>

namespace hpusim::synapse::tpc_kernels {

struct EmbeddedSource {
  const char* name;   // file name, e.g. "eltwise_binary.s"
  const char* text;
};

const std::vector<EmbeddedSource>& embedded_sources();

}  // namespace hpusim::synapse::tpc_kernels
