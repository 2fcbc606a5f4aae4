#include "traces/timeline.h"

#include <cstdio>

namespace hpusim::traces {

TrackId Timeline::process(const std::string& name) {
  auto it = processes_.find(name);
  if (it != processes_.end()) return it->second;
  TrackId id = writer_.process_track(next_pid_++, name);
  processes_.emplace(name, id);
  return id;
}

TrackId Timeline::track(TrackId process, const std::string& name) {
  auto key = std::make_pair(process, name);
  auto it = tracks_.find(key);
  if (it != tracks_.end()) return it->second;
  TrackId id = writer_.named_track(process, name);
  tracks_.emplace(key, id);
  return id;
}

TrackId Timeline::counter(TrackId process, const std::string& name, const std::string& unit) {
  auto key = std::make_pair(process, "#" + name);
  auto it = tracks_.find(key);
  if (it != tracks_.end()) return it->second;
  TrackId id = writer_.counter_track(process, name, unit);
  tracks_.emplace(key, id);
  return id;
}

std::string Timeline::kernel_label(uint64_t address) const {
  const auto it = kernel_labels_.find(address);
  if (it != kernel_labels_.end()) return it->second;
  char text[32];
  std::snprintf(text, sizeof text, "kernel @0x%llx", static_cast<unsigned long long>(address));
  return text;
}

namespace {
thread_local FlowId g_last_submitted = 0;
}  // namespace

FlowId Timeline::start_cs_flow(const std::string& card, uint64_t seq) {
  const FlowId flow = enabled() ? writer_.new_flow_id() : 0;
  g_last_submitted = flow;
  if (flow == 0) return 0;
  cs_flows_[{card, seq}] = flow;
  if (cs_flows_.size() > kMaxPendingFlows) cs_flows_.erase(cs_flows_.begin());
  return flow;
}

FlowId Timeline::cs_flow(const std::string& card, uint64_t seq) const {
  const auto it = cs_flows_.find({card, seq});
  return it == cs_flows_.end() ? 0 : it->second;
}

void Timeline::end_cs_flow(const std::string& card, uint64_t seq) { cs_flows_.erase({card, seq}); }

void Timeline::note_queue_entry(const std::string& card, const std::string& qman, unsigned stream, uint32_t index_after,
                                FlowId flow) {
  if (flow == 0) return;
  queue_entries_[{card, qman, stream, index_after}] = flow;
  if (queue_entries_.size() > kMaxPendingFlows) queue_entries_.erase(queue_entries_.begin());
}

FlowId Timeline::take_queue_entry(const std::string& card, const std::string& qman, unsigned stream,
                                  uint32_t index_after) {
  const auto it = queue_entries_.find({card, qman, stream, index_after});
  if (it == queue_entries_.end()) return 0;
  const FlowId flow = it->second;
  queue_entries_.erase(it);
  return flow;
}

FlowId Timeline::last_submitted_flow() { return g_last_submitted; }

}  // namespace hpusim::traces
