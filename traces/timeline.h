// The one timeline every layer writes: a TraceWriter behind a mutex, because host layers may run
// on several threads while the device models run on the simulation thread. Tracks are created on
// first use and found by name.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "traces/trace_writer.h"

namespace hpusim::traces {

class Timeline {
 public:
  explicit Timeline(bool enabled = true) : writer_(enabled) {}

  bool enabled() const { return writer_.enabled(); }
  std::mutex& mutex() { return mutex_; }
  // The writer; hold mutex() while using it.
  TraceWriter& writer() { return writer_; }

  // A process track, created once per name (pid allocated in creation order).
  TrackId process(const std::string& name);
  // A named slice track under `process`, created once per name.
  TrackId track(TrackId process, const std::string& name);
  TrackId counter(TrackId process, const std::string& name, const std::string& unit);

 private:
  std::mutex mutex_;
  TraceWriter writer_;
  std::map<std::string, TrackId> processes_;
  std::map<std::pair<TrackId, std::string>, TrackId> tracks_;
  int32_t next_pid_ = 1;
};

}  // namespace hpusim::traces
