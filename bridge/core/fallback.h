// CPU fallback bookkeeping: how often each op ran on the CPU instead of the card.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace c10 {
struct OperatorName;
}

namespace hpusim::bridge {

void count_fallback(const c10::OperatorName& op);
// op ("aten::add.Tensor") -> calls since the process started.
std::map<std::string, uint64_t> fallback_counts();

}  // namespace hpusim::bridge
