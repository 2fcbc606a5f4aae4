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

}  // namespace hpusim::traces
