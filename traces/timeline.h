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
#include <tuple>

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
  // The same, unless the address already has a label (a program a node shares with another,
  // named by the node whose own kernel it is).
  void label_kernel_if_unnamed(uint64_t address, const std::string& name) { kernel_labels_.emplace(address, name); }
  // The label, or "kernel @0x<address>".
  std::string kernel_label(uint64_t address) const;

  // ---- Command-submission flows: launch -> the card's command buffers -> the completion
  // interrupt -> the waiting host. Trace metadata only (no model reads it): the driver starts one
  // per CS and notes the queue entries of the CS's external jobs; the card's queues find it by the
  // entry they finished, the host's layers by the sequence number or as the last CS their thread
  // submitted. `card` is the card's label in a box ("" alone). Hold mutex().
  FlowId start_cs_flow(const std::string& card, uint64_t seq);
  FlowId cs_flow(const std::string& card, uint64_t seq) const;   // 0 if unknown
  void end_cs_flow(const std::string& card, uint64_t seq);
  // The queue entry (QMAN name, stream, PQ index after it, as the QMAN's CI after running it).
  void note_queue_entry(const std::string& card, const std::string& qman, unsigned stream, uint32_t index_after,
                        FlowId flow);
  FlowId take_queue_entry(const std::string& card, const std::string& qman, unsigned stream, uint32_t index_after);
  // The flow of the last CS the calling thread submitted (0 if none): the layers above the driver
  // start their launch slices with it.
  static FlowId last_submitted_flow();

 private:
  std::mutex mutex_;
  TraceWriter writer_;
  std::map<std::string, TrackId> processes_;
  std::map<std::pair<TrackId, std::string>, TrackId> tracks_;
  int32_t next_pid_ = 1;
  bool packets_ = false;
  std::map<uint64_t, std::string> kernel_labels_;
  // Bounded: a CS nobody waits for, or an entry nobody runs, is dropped after kMaxPendingFlows.
  static constexpr size_t kMaxPendingFlows = 4096;
  std::map<std::pair<std::string, uint64_t>, FlowId> cs_flows_;
  std::map<std::tuple<std::string, std::string, unsigned, uint32_t>, FlowId> queue_entries_;
};

}  // namespace hpusim::traces
