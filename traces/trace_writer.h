// TraceWriter: records spans, instants, counters and flows of one simulation in memory and writes
// them as a Perfetto protobuf trace or as Chrome Trace Event Format JSON.
//
// Time is simulated time in nanoseconds (uint64_t). Track ids are allocated from a counter in
// creation order, so a run that makes the same calls produces byte-identical files.
//
// Thread safety: none. A TraceWriter belongs to the (single) simulation thread; calling it from
// several threads at once needs external locking.
//
// Cost when disabled: a writer constructed with TraceWriter(false) (or TraceWriter::disabled())
// returns from every call after one branch and hands out kNoTrack / flow id 0. Models should still
// guard hot paths with `if (trace.enabled())` so they do not even build names and argument vectors.
//
// Errors: bad track ids and wrong track kinds throw std::invalid_argument; misuse of slice nesting
// (end without begin, end before begin, partially overlapping slices on one track) throws
// std::logic_error naming the track; an unwritable output throws std::runtime_error naming the path.
// A failed call records nothing.
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "traces/trace_types.h"

namespace hpusim::traces {

class TraceWriter {
 public:
  explicit TraceWriter(bool enabled = true) : enabled_(enabled) {}
  static TraceWriter disabled() { return TraceWriter(false); }

  // Recording events (enabled and not paused).
  bool enabled() const noexcept { return enabled_ && !paused_.load(std::memory_order_relaxed); }
  // While paused, tracks are still created (their ids stay valid) but events are dropped: a run
  // records only while it is profiled.
  void set_paused(bool paused) noexcept { paused_.store(paused, std::memory_order_relaxed); }

  // ---- Tracks. Descriptors are written in creation order, before every event. ----

  // A process. pid must be > 0 (0 is reserved for root-level tracks in the Chrome export) and
  // unique within the writer.
  TrackId process_track(std::int32_t pid, std::string name);
  // A thread of `process` (which must be a process track). tid must be in [1, 2^30) (larger values
  // are reserved for the synthetic tids of named tracks in the Chrome export) and unique within
  // the process.
  TrackId thread_track(TrackId process, std::int32_t tid, std::string name);
  // A slice track under any non-counter track, or at the root when parent == kNoTrack. Same-named
  // siblings stay separate (sibling_merge_behavior = NONE).
  TrackId named_track(TrackId parent, std::string name);
  // A counter track under any non-counter track or at the root; unit_name is free text ("B/s").
  TrackId counter_track(TrackId parent, std::string name, std::string unit_name = {});

  // ---- Slices (not on counter tracks). ----

  // Opens a slice. End closes the most recently opened slice on the same track (LIFO), so nested
  // begin/end pairs give nested slices. flow_ids: arrows that leave or pass through this slice;
  // terminating_flow_ids: arrows that end here (see new_flow_id()).
  void begin_slice(TrackId track, std::uint64_t ts_ns, std::string name,
                   std::vector<Arg> args = {}, std::vector<FlowId> flow_ids = {},
                   std::vector<FlowId> terminating_flow_ids = {});
  // Throws std::logic_error if no slice is open on `track`, or if ts_ns is before the start of the
  // open slice or before the end of a slice already closed inside it.
  void end_slice(TrackId track, std::uint64_t ts_ns);
  // A slice whose start and end are both known (begin + end in one call). Complete slices may be
  // recorded in any order, e.g. children before their parent; nesting is worked out when writing
  // from the intervals: a slice is inside another if its interval lies within the other's (same
  // start: the longer one encloses; identical intervals: the earlier recorded encloses); a slice
  // ending at T and one starting at T are siblings. A zero-length slice at T goes inside a slice
  // starting at T, else inside one ending at T only if it was recorded before that one ended.
  // Partially overlapping slices on one track make write_* throw std::logic_error.
  // Throws std::logic_error if end_ns < start_ns.
  void complete_slice(TrackId track, std::uint64_t start_ns, std::uint64_t end_ns,
                      std::string name, std::vector<Arg> args = {},
                      std::vector<FlowId> flow_ids = {},
                      std::vector<FlowId> terminating_flow_ids = {});

  // A zero-duration event (not on counter tracks).
  void instant(TrackId track, std::uint64_t ts_ns, std::string name, std::vector<Arg> args = {});

  // A sample on a counter track; the value holds until the next sample. value must be finite.
  void counter(TrackId track, std::uint64_t ts_ns, double value);

  // ---- Flows. ----
  // A fresh flow id (1, 2, 3, ...). To draw an arrow from slice A to slice B, put the id in A's
  // flow_ids and in B's terminating_flow_ids. For a chain A -> B -> C put it in the flow_ids of A
  // and B and in the terminating_flow_ids of C. Arrows follow the slices' start times. An id left
  // unterminated simply ends at its last slice.
  FlowId new_flow_id() { return enabled_ ? ++last_flow_id_ : 0; }

  // Drops every event recorded so far (slices still open too); tracks and flow ids stay.
  void clear_events();

  // ---- Introspection. ----
  std::size_t track_count() const { return tracks_.size(); }
  std::size_t slice_count() const { return slices_.size(); }
  std::size_t instant_count() const { return instants_.size(); }
  std::size_t counter_sample_count() const { return samples_.size(); }
  // Slices begun on `track` and not yet ended.
  std::size_t open_slice_count(TrackId track) const;

  // ---- Output. Both may be called any number of times; they do not change the writer. ----

  // Binary Perfetto trace (a perfetto.protos.Trace). All packets carry trusted_packet_sequence_id
  // 1; the first sets sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED. Track descriptors come first
  // in creation order, then every event sorted by timestamp (ties in recording order; a track's
  // slice begin/end order always nests properly). Slices still open are written without an end.
  // A disabled or empty writer writes a valid trace holding one empty packet.
  void write_perfetto(const std::string& path) const;
  void write_perfetto(std::ostream& out) const;

  // Chrome Trace Event Format: {"traceEvents":[...],"displayTimeUnit":"ns"}. "M" metadata names
  // processes and threads; named tracks become synthetic threads (tid 2^30 + uuid) of their
  // nearest process ancestor (pid 0 "global" for root-level tracks); slices are "B"/"E" pairs,
  // instants "i" (thread scope), counters "C" with args {"value": v}; a flow becomes "s" on its
  // first slice, "t" on middle ones and "f" (bp "e") on its last. ts is in microseconds with three
  // decimals (exact nanoseconds).
  void write_chrome_json(const std::string& path) const;
  void write_chrome_json(std::ostream& out) const;

 private:
  struct TrackRec {
    TrackId uuid = kNoTrack;
    TrackId parent = kNoTrack;
    TrackKind kind = TrackKind::kNamed;
    std::string name;
    std::int32_t pid = 0;  // own pid (process) or the nearest process ancestor's (0 if none)
    std::int32_t tid = 0;  // threads only
    std::string unit_name;
    std::vector<std::size_t> open;  // indices into slices_ of begun, not yet ended slices
  };
  struct SliceRec {
    TrackId track = kNoTrack;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    bool closed = false;
    std::uint64_t begin_seq = 0;
    std::uint64_t end_seq = 0;
    std::uint64_t min_end = 0;  // latest end of a slice closed inside this one while open
    std::string name;
    std::vector<Arg> args;
    std::vector<FlowId> flows;
    std::vector<FlowId> terminating_flows;
  };
  struct InstantRec {
    TrackId track = kNoTrack;
    std::uint64_t ts = 0;
    std::uint64_t seq = 0;
    std::string name;
    std::vector<Arg> args;
  };
  struct SampleRec {
    TrackId track = kNoTrack;
    std::uint64_t ts = 0;
    std::uint64_t seq = 0;
    double value = 0.0;
  };
  // One event of the written stream, in output order.
  struct OrderedEvent {
    enum Kind : std::uint8_t { kBegin, kEnd, kInstant, kCounter };
    Kind kind = kBegin;
    std::uint64_t ts = 0;
    std::uint64_t seq = 0;
    TrackId track = kNoTrack;
    std::size_t index = 0;  // into slices_, instants_ or samples_
  };

  TrackId add_track(TrackRec rec);
  TrackRec& track_for_event(TrackId track, const char* what);
  const TrackRec& track_ref(TrackId track) const { return tracks_[track - 1]; }
  void check_flows(const std::vector<FlowId>& ids, const char* what) const;
  std::vector<OrderedEvent> ordered_events() const;
  void emit_perfetto(std::ostream& out, const std::vector<OrderedEvent>& events) const;
  void emit_chrome_json(std::ostream& out, const std::vector<OrderedEvent>& events) const;

  bool enabled_;
  std::atomic<bool> paused_{false};   // read without the timeline's lock by hot paths
  std::uint64_t seq_ = 0;
  FlowId last_flow_id_ = 0;
  std::vector<TrackRec> tracks_;  // tracks_[uuid - 1]
  std::vector<SliceRec> slices_;
  std::vector<InstantRec> instants_;
  std::vector<SampleRec> samples_;
};

}  // namespace hpusim::traces
