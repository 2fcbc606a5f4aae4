#include "traces/trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "perfetto_trace.pb.h"

namespace hpusim::traces {
namespace {

namespace pb = ::perfetto::protos;

[[noreturn]] void fail(const std::string& what, const std::string& msg) {
  throw std::runtime_error("read_perfetto: '" + what + "': " + msg);
}

// Reads a base-128 varint at bytes[off]; false if it runs past the end or over 10 bytes.
bool read_varint(const std::string& bytes, std::size_t& off, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (off >= bytes.size()) return false;
    const auto b = static_cast<unsigned char>(bytes[off++]);
    value |= static_cast<std::uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

std::string packet_ref(std::size_t index) { return "packet #" + std::to_string(index); }

Arg decode_annotation(const pb::DebugAnnotation& d, const std::string& what, std::size_t packet) {
  if (d.name_field_case() != pb::DebugAnnotation::kName) {
    fail(what, packet_ref(packet) + ": debug annotation without an inline name "
                                    "(interned names are not supported)");
  }
  switch (d.value_case()) {
    case pb::DebugAnnotation::kBoolValue: return Arg(d.name(), d.bool_value());
    case pb::DebugAnnotation::kUintValue: return Arg(d.name(), ArgValue(d.uint_value()));
    case pb::DebugAnnotation::kIntValue: return Arg(d.name(), ArgValue(d.int_value()));
    case pb::DebugAnnotation::kDoubleValue: return Arg(d.name(), d.double_value());
    case pb::DebugAnnotation::kStringValue: return Arg(d.name(), d.string_value());
    case pb::DebugAnnotation::kPointerValue: return Arg(d.name(), ArgValue(d.pointer_value()));
    case pb::DebugAnnotation::kLegacyJsonValue: return Arg(d.name(), d.legacy_json_value());
    default: break;
  }
  fail(what, packet_ref(packet) + ": debug annotation '" + d.name() +
                 "' has no scalar value (nested annotations are not supported)");
}

std::vector<Arg> decode_annotations(const pb::TrackEvent& ev, const std::string& what,
                                    std::size_t packet) {
  std::vector<Arg> args;
  args.reserve(static_cast<std::size_t>(ev.debug_annotations_size()));
  for (const pb::DebugAnnotation& d : ev.debug_annotations()) {
    args.push_back(decode_annotation(d, what, packet));
  }
  return args;
}

std::string event_name(const pb::TrackEvent& ev, const std::string& what, std::size_t packet) {
  if (ev.name_field_case() == pb::TrackEvent::kNameIid) {
    fail(what, packet_ref(packet) + ": interned event names are not supported");
  }
  return ev.name();
}

TrackInfo decode_descriptor(const pb::TrackDescriptor& d, const std::string& what,
                            std::size_t packet) {
  if (!d.has_uuid() || d.uuid() == kNoTrack) {
    fail(what, packet_ref(packet) + ": track descriptor without a uuid");
  }
  TrackInfo t;
  t.uuid = d.uuid();
  t.parent = d.has_parent_uuid() ? d.parent_uuid() : kNoTrack;
  t.merge_none = d.sibling_merge_behavior() == pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE;
  const std::string plain_name = d.has_name() ? d.name() : (d.has_static_name() ? d.static_name() : "");
  if (d.has_process()) {
    t.kind = TrackKind::kProcess;
    t.pid = d.process().pid();
    t.name = d.process().has_process_name() ? d.process().process_name() : plain_name;
  } else if (d.has_thread()) {
    t.kind = TrackKind::kThread;
    t.pid = d.thread().pid();
    t.tid = d.thread().tid();
    t.name = d.thread().has_thread_name() ? d.thread().thread_name() : plain_name;
  } else if (d.has_counter()) {
    t.kind = TrackKind::kCounter;
    t.name = plain_name;
    t.unit_name = d.counter().unit_name();
  } else {
    t.kind = TrackKind::kNamed;
    t.name = plain_name;
  }
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TraceModel queries

const TrackInfo* TraceModel::track(TrackId uuid) const {
  auto it = index.find(uuid);
  return it == index.end() ? nullptr : &tracks[it->second];
}

const TrackInfo* TraceModel::find_track(const std::string& name) const {
  for (const TrackInfo& t : tracks) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const TrackInfo* TraceModel::find_track(const std::string& name, TrackId parent) const {
  for (const TrackInfo& t : tracks) {
    if (t.name == name && t.parent == parent) return &t;
  }
  return nullptr;
}

std::vector<const TrackInfo*> TraceModel::find_tracks(const std::string& name) const {
  std::vector<const TrackInfo*> out;
  for (const TrackInfo& t : tracks) {
    if (t.name == name) out.push_back(&t);
  }
  return out;
}

std::vector<const TrackInfo*> TraceModel::children(TrackId parent) const {
  std::vector<const TrackInfo*> out;
  for (const TrackInfo& t : tracks) {
    if (t.parent == parent) out.push_back(&t);
  }
  return out;
}

std::vector<const SliceInfo*> TraceModel::slices_on(TrackId track_id) const {
  std::vector<const SliceInfo*> out;
  for (const SliceInfo& s : slices) {
    if (s.track == track_id) out.push_back(&s);
  }
  return out;
}

std::vector<const InstantInfo*> TraceModel::instants_on(TrackId track_id) const {
  std::vector<const InstantInfo*> out;
  for (const InstantInfo& i : instants) {
    if (i.track == track_id) out.push_back(&i);
  }
  return out;
}

std::vector<CounterSample> TraceModel::counters_on(TrackId track_id) const {
  std::vector<CounterSample> out;
  for (const CounterSample& c : counters) {
    if (c.track == track_id) out.push_back(c);
  }
  return out;
}

std::vector<const SliceInfo*> TraceModel::flow_slices(FlowId id) const {
  std::vector<const SliceInfo*> out;
  auto it = flows.find(id);
  if (it == flows.end()) return out;
  for (std::size_t i : it->second.slices) out.push_back(&slices[i]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Decoding

TraceModel parse_perfetto(const std::string& bytes, const std::string& what) {
  if (bytes.empty()) fail(what, "the file is empty, not a Perfetto trace");

  // 1. Split the Trace into packets. Only field 1 (packet, length-delimited) exists at this level,
  //    so anything else means the bytes are not a trace.
  std::vector<pb::TracePacket> packets;
  std::size_t off = 0;
  while (off < bytes.size()) {
    const std::size_t start = off;
    std::uint64_t tag = 0;
    if (!read_varint(bytes, off, tag)) {
      fail(what, "truncated or corrupt field tag at byte offset " + std::to_string(start));
    }
    if (tag != 0x0A) {
      fail(what, "unexpected top-level field " + std::to_string(tag >> 3) + " (wire type " +
                     std::to_string(tag & 7) + ") at byte offset " + std::to_string(start) +
                     "; not a Perfetto trace");
    }
    std::uint64_t len = 0;
    if (!read_varint(bytes, off, len)) {
      fail(what, "truncated length of " + packet_ref(packets.size()) + " at byte offset " +
                     std::to_string(start));
    }
    if (len > bytes.size() - off) {
      fail(what, "truncated: " + packet_ref(packets.size()) + " at byte offset " +
                     std::to_string(start) + " declares " + std::to_string(len) +
                     " bytes but only " + std::to_string(bytes.size() - off) + " remain");
    }
    if (len > static_cast<std::uint64_t>(INT_MAX)) {
      fail(what, packet_ref(packets.size()) + " is too large (" + std::to_string(len) + " bytes)");
    }
    pb::TracePacket packet;
    if (!packet.ParseFromArray(bytes.data() + off, static_cast<int>(len))) {
      fail(what, packet_ref(packets.size()) + " at byte offset " + std::to_string(start) +
                     " is not a valid TracePacket");
    }
    off += static_cast<std::size_t>(len);
    packets.push_back(std::move(packet));
  }

  TraceModel model;
  model.packet_count = packets.size();

  // 2. Track descriptors, in file order. declared_at[uuid] = packet index of the descriptor.
  std::unordered_map<TrackId, std::size_t> declared_at;
  std::vector<std::string> descriptor_bytes;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    if (!packets[i].has_track_descriptor()) continue;
    const pb::TrackDescriptor& d = packets[i].track_descriptor();
    TrackInfo t = decode_descriptor(d, what, i);
    std::string serialized = d.SerializeAsString();
    auto it = model.index.find(t.uuid);
    if (it != model.index.end()) {
      if (descriptor_bytes[it->second] != serialized) {
        fail(what, packet_ref(i) + ": track uuid " + std::to_string(t.uuid) +
                       " is described twice, differently");
      }
      continue;  // an identical re-emission
    }
    model.index.emplace(t.uuid, model.tracks.size());
    declared_at.emplace(t.uuid, i);
    model.tracks.push_back(std::move(t));
    descriptor_bytes.push_back(std::move(serialized));
  }
  // Parents must exist; named and counter tracks inherit the pid of their nearest process.
  for (TrackInfo& t : model.tracks) {
    if (t.parent != kNoTrack && model.index.count(t.parent) == 0) {
      fail(what, "track '" + t.name + "' (uuid " + std::to_string(t.uuid) +
                     ") has an undeclared parent uuid " + std::to_string(t.parent));
    }
    if (t.kind == TrackKind::kNamed || t.kind == TrackKind::kCounter) {
      TrackId p = t.parent;
      std::size_t hops = 0;
      while (p != kNoTrack) {
        if (++hops > model.tracks.size()) {
          fail(what, "track '" + t.name + "' (uuid " + std::to_string(t.uuid) +
                         ") has a cyclic parent chain");
        }
        const TrackInfo& parent = model.tracks[model.index.at(p)];
        if (parent.kind == TrackKind::kProcess || parent.kind == TrackKind::kThread) {
          t.pid = parent.pid;
          break;
        }
        p = parent.parent;
      }
    }
  }

  // 3. Track events, in timestamp order (stable in file order).
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    if (!packets[i].has_track_event()) continue;
    const pb::TracePacket& p = packets[i];
    if (!p.has_timestamp()) fail(what, packet_ref(i) + ": track event without a timestamp");
    const pb::TrackEvent& ev = p.track_event();
    if (!ev.has_track_uuid()) {
      fail(what, packet_ref(i) + ": track event without track_uuid (default tracks are not "
                                 "supported)");
    }
    auto decl = declared_at.find(ev.track_uuid());
    if (decl == declared_at.end()) {
      fail(what, packet_ref(i) + ": track event on undeclared track uuid " +
                     std::to_string(ev.track_uuid()));
    }
    if (decl->second > i) {
      fail(what, packet_ref(i) + ": track event on track uuid " +
                     std::to_string(ev.track_uuid()) + " precedes its descriptor (" +
                     packet_ref(decl->second) + ")");
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&packets](std::size_t a, std::size_t b) {
    return packets[a].timestamp() < packets[b].timestamp();
  });

  std::unordered_map<TrackId, std::vector<std::size_t>> open;  // track -> open slice indices
  for (std::size_t i : order) {
    const pb::TracePacket& p = packets[i];
    const pb::TrackEvent& ev = p.track_event();
    const std::uint64_t ts = p.timestamp();
    const TrackInfo& track = model.tracks[model.index.at(ev.track_uuid())];
    const std::string where = packet_ref(i) + " (track '" + track.name + "', uuid " +
                              std::to_string(track.uuid) + ", " + std::to_string(ts) + " ns)";
    const bool is_counter_track = track.kind == TrackKind::kCounter;
    if (ev.type() != pb::TrackEvent::TYPE_SLICE_BEGIN &&
        (ev.flow_ids_size() > 0 || ev.terminating_flow_ids_size() > 0)) {
      fail(what, where + ": flow ids are only supported on SLICE_BEGIN events");
    }
    std::vector<std::size_t>& stack = open[track.uuid];
    switch (ev.type()) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN: {
        if (is_counter_track) fail(what, where + ": slice on a counter track");
        SliceInfo s;
        s.track = track.uuid;
        s.name = event_name(ev, what, i);
        s.start_ns = ts;
        s.depth = static_cast<std::uint32_t>(stack.size());
        s.args = decode_annotations(ev, what, i);
        s.flow_ids.assign(ev.flow_ids().begin(), ev.flow_ids().end());
        s.terminating_flow_ids.assign(ev.terminating_flow_ids().begin(),
                                      ev.terminating_flow_ids().end());
        const std::size_t idx = model.slices.size();
        for (FlowId id : s.flow_ids) model.flows[id].slices.push_back(idx);
        for (FlowId id : s.terminating_flow_ids) {
          FlowInfo& f = model.flows[id];
          f.slices.push_back(idx);
          f.terminated = true;
        }
        stack.push_back(idx);
        model.slices.push_back(std::move(s));
        break;
      }
      case pb::TrackEvent::TYPE_SLICE_END: {
        if (stack.empty()) fail(what, where + ": SLICE_END with no open slice on the track");
        SliceInfo& s = model.slices[stack.back()];
        s.end_ns = ts;
        s.closed = true;
        stack.pop_back();
        break;
      }
      case pb::TrackEvent::TYPE_INSTANT: {
        if (is_counter_track) fail(what, where + ": instant on a counter track");
        InstantInfo inst;
        inst.track = track.uuid;
        inst.name = event_name(ev, what, i);
        inst.ts_ns = ts;
        inst.depth = static_cast<std::uint32_t>(stack.size());
        inst.args = decode_annotations(ev, what, i);
        model.instants.push_back(std::move(inst));
        break;
      }
      case pb::TrackEvent::TYPE_COUNTER: {
        if (!is_counter_track) fail(what, where + ": counter value on a non-counter track");
        CounterSample c;
        c.track = track.uuid;
        c.ts_ns = ts;
        if (ev.has_double_counter_value()) {
          c.value = ev.double_counter_value();
        } else if (ev.has_counter_value()) {
          c.value = static_cast<double>(ev.counter_value());
        } else {
          fail(what, where + ": counter event without a value");
        }
        model.counters.push_back(c);
        break;
      }
      default:
        fail(what, where + ": unsupported track event type " + std::to_string(ev.type()));
    }
  }
  return model;
}

TraceModel read_perfetto(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw std::runtime_error("read_perfetto: cannot open '" + path + "': " +
                             std::strerror(errno));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) throw std::runtime_error("read_perfetto: error reading '" + path + "'");
  return parse_perfetto(contents.str(), path);
}

}  // namespace hpusim::traces
