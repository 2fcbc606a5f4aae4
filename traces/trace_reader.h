// read_perfetto: decodes a Perfetto trace written by TraceWriter (or any trace restricted to the
// same schema subset: track descriptors plus SLICE_BEGIN/SLICE_END/INSTANT/COUNTER track events
// without interning) into a simple in-memory model for tests and the analyser.
//
// Events are processed in timestamp order (stable with respect to file order), as Perfetto's
// trace processor does. An END closes the most recent open slice on its track.
//
// Errors: an unreadable, empty, truncated or malformed file, an event on a track whose descriptor
// does not precede it, an END with no open slice, interned names or unsupported annotation values
// all throw std::runtime_error naming the file and, where it helps, the packet index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/trace_types.h"

namespace hpusim::traces {

struct TrackInfo {
  TrackId uuid = kNoTrack;
  TrackId parent = kNoTrack;
  TrackKind kind = TrackKind::kNamed;
  std::string name;
  std::int32_t pid = 0;   // process and thread tracks; others inherit the nearest process's pid
  std::int64_t tid = 0;   // thread tracks
  std::string unit_name;  // counter tracks
  bool merge_none = false;  // sibling_merge_behavior == NONE
};

struct SliceInfo {
  TrackId track = kNoTrack;
  std::string name;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;  // valid when closed
  bool closed = false;
  std::uint32_t depth = 0;   // 0 = outermost slice on its track
  std::vector<Arg> args;
  std::vector<FlowId> flow_ids;
  std::vector<FlowId> terminating_flow_ids;

  std::uint64_t duration_ns() const { return closed ? end_ns - start_ns : 0; }
};

struct InstantInfo {
  TrackId track = kNoTrack;
  std::string name;
  std::uint64_t ts_ns = 0;
  std::uint32_t depth = 0;  // number of slices open on the track at ts_ns
  std::vector<Arg> args;
};

struct CounterSample {
  TrackId track = kNoTrack;
  std::uint64_t ts_ns = 0;
  double value = 0.0;
};

struct FlowInfo {
  std::vector<std::size_t> slices;  // indices into TraceModel::slices, in timestamp order
  bool terminated = false;          // the last slice carries it in terminating_flow_ids
};

struct TraceModel {
  std::vector<TrackInfo> tracks;          // in descriptor order
  std::vector<SliceInfo> slices;          // in begin order
  std::vector<InstantInfo> instants;      // in timestamp order
  std::vector<CounterSample> counters;    // in timestamp order
  std::map<FlowId, FlowInfo> flows;
  std::size_t packet_count = 0;

  // nullptr if absent.
  const TrackInfo* track(TrackId uuid) const;
  // The first track (in descriptor order) with this name; nullptr if none.
  const TrackInfo* find_track(const std::string& name) const;
  // The first child of `parent` with this name (parent == kNoTrack: root-level tracks).
  const TrackInfo* find_track(const std::string& name, TrackId parent) const;
  std::vector<const TrackInfo*> find_tracks(const std::string& name) const;
  std::vector<const TrackInfo*> children(TrackId parent) const;

  std::vector<const SliceInfo*> slices_on(TrackId track) const;
  std::vector<const InstantInfo*> instants_on(TrackId track) const;
  std::vector<CounterSample> counters_on(TrackId track) const;
  // Slices linked by a flow id, in order (empty if unknown).
  std::vector<const SliceInfo*> flow_slices(FlowId id) const;

  std::unordered_map<TrackId, std::size_t> index;  // uuid -> position in tracks
};

TraceModel read_perfetto(const std::string& path);

// Same, from bytes in memory; `what` names the source in error messages.
TraceModel parse_perfetto(const std::string& bytes, const std::string& what = "<memory>");

}  // namespace hpusim::traces
