#include "bridge/core/metric_events.h"

#include <atomic>
#include <chrono>
#include <mutex>

namespace hpusim::bridge {
namespace {

std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
std::vector<MetricEvent> g_events;

}  // namespace

void enable_metric_events(bool enabled) { g_enabled = enabled; }

void metric_event(const char* metric, const std::string& detail, uint64_t value) {
  if (!g_enabled) return;
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_events.push_back({metric, detail, value, static_cast<uint64_t>(now.count())});
}

std::vector<MetricEvent> take_metric_events() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<MetricEvent> events;
  events.swap(g_events);
  return events;
}

}  // namespace hpusim::bridge
