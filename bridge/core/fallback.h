// CPU fallback bookkeeping: how often each op ran on the CPU instead of the card, which ops may
// (PT_HPU_PLACE_ON_CPU), and its log (LOG_LEVEL_PT_FALLBACK), in the real stack's formats.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace c10 {
struct OperatorName;
}

namespace hpusim::bridge {

void count_fallback(const c10::OperatorName& op);
// op ("aten::digamma", "aten::add" for add.out, "aten::div.Tensor_mode") -> calls since the
// process started.
std::map<std::string, uint64_t> fallback_counts();

struct FallbackPolicy {
  bool restricted = false;         // PT_HPU_PLACE_ON_CPU set: only `allowed` may fall back
  std::set<std::string> allowed;   // "aten::digamma" ("none": empty)
  bool log_calls = false;          // LOG_LEVEL_PT_FALLBACK 0 or 1: "CPU fallback <op> : <args>" per call
  bool allows(const std::string& op) const { return !restricted || allowed.count(op) != 0; }
  // Throws c10::Error naming a bad LOG_LEVEL_PT_FALLBACK.
  static FallbackPolicy from_environment();
};
// The process's policy, read from the environment at the first fallback.
const FallbackPolicy& fallback_policy();
void log_fallback(const std::string& line);
// "Frequency of op and op name that were executed on CPU:" and a "<count>\t<op>" line per op,
// most frequent first; "" when nothing fell back.
std::string fallback_summary();

}  // namespace hpusim::bridge
