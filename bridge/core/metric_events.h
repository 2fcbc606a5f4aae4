// The metric events the PT_HPU_METRICS_FILE dump's metric_change trigger writes one record for
// each: a graph compilation or a CPU fallback, in the order they happened. Kept only while
// enabled (the dump asks for them), so a process that never reads them keeps none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpusim::bridge {

struct MetricEvent {
  std::string metric;       // "graph_compilation" | "cpu_fallback"
  std::string detail;       // the recipe (hash, hex) | the op ("aten::digamma")
  uint64_t value = 0;       // the compilation's host wall microseconds | 1
  uint64_t timestamp_us = 0;   // wall clock, microseconds since the epoch
};

void enable_metric_events(bool enabled);
void metric_event(const char* metric, const std::string& detail, uint64_t value);
// The events since the last call, oldest first.
std::vector<MetricEvent> take_metric_events();

}  // namespace hpusim::bridge
