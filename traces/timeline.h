// The one timeline every layer writes: a TraceWriter behind a mutex, because host layers may run
// on several threads while the device models run on the simulation thread. Tracks are created on
// first use and found by name. What a trace holds beyond the default (packet-level command
// submission) is chosen per run; kernel labels let the device's tracks name the kernels the host
// loaded.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "traces/trace_writer.h"

namespace hpusim::traces {

class Timeline {
 public:
  explicit Timeline(bool enabled = true) : writer_(enabled) {}

  // Recording now: a platform without a trace file keeps its timeline paused until a profiler
  // asks for events (set_recording).
  bool enabled() const { return writer_.enabled(); }
  void set_recording(bool on) { writer_.set_paused(!on); }
  std::mutex& mutex() { return mutex_; }
  // The writer; hold mutex() while using it.
  TraceWriter& writer() { return writer_; }

  // A process track, created once per name (pid allocated in creation order).
  TrackId process(const std::string& name);
  // A named slice track under `process`, created once per name.
  TrackId track(TrackId process, const std::string& name);
  TrackId counter(TrackId process, const std::string& name, const std::string& unit);

  // Packet-level events (each QMAN packet, sync-object updates, monitor firings): off by default,
  // they are most of a trace's events (--trace-detail packets / HPUSIM_TRACE_DETAIL=packets).
  void set_packets(bool on) { packets_ = on; }
  bool packets() const { return enabled() && packets_; }

  // The name of the TPC program whose first bundle is at device address `address` (the host
  // labels the programs it loads; a later label of the same address replaces it). Hold mutex().
  void label_kernel(uint64_t address, const std::string& name) { kernel_labels_[address] = name; }
  // The label, or "kernel @0x<address>".
  std::string kernel_label(uint64_t address) const;

 private:
  std::mutex mutex_;
  TraceWriter writer_;
  std::map<std::string, TrackId> processes_;
  std::map<std::pair<TrackId, std::string>, TrackId> tracks_;
  int32_t next_pid_ = 1;
  bool packets_ = false;
  std::map<uint64_t, std::string> kernel_labels_;
};

}  // namespace hpusim::traces
