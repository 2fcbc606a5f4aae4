#include "traces/trace_writer.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "perfetto_trace.pb.h"

namespace hpusim::traces {
namespace {

namespace pb = ::perfetto::protos;

// Every packet of an hpusim trace belongs to one sequence.
constexpr std::uint32_t kSequenceId = 1;
// Chrome export: named tracks become threads with these ids (thread tids must stay below).
constexpr std::int64_t kSyntheticTidBase = std::int64_t{1} << 30;
constexpr std::int32_t kGlobalPid = 0;

std::string track_label(const std::string& name, TrackId uuid) {
  return "'" + name + "' (uuid " + std::to_string(uuid) + ")";
}

// ---- Small formatting helpers for the JSON export. ----

void append_u64(std::string& out, std::uint64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void append_i64(std::string& out, std::int64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// Shortest text that reads back as the same double. Non-finite values have no JSON number form,
// so they are written as the strings "NaN", "Infinity" and "-Infinity".
void append_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char buf[40];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// Nanoseconds as microseconds with exactly three decimals: 1234567 -> 1234.567.
void append_ts_us(std::string& out, std::uint64_t ns) {
  append_u64(out, ns / 1000);
  const unsigned frac = static_cast<unsigned>(ns % 1000);
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + (frac / 10) % 10);
  out += static_cast<char>('0' + frac % 10);
}

bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = at(i);
  const std::size_t left = s.size() - i;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && is_cont(at(i + 1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !is_cont(at(i + 1)) || !is_cont(at(i + 2))) return 0;
    if (c == 0xE0 && at(i + 1) < 0xA0) return 0;  // overlong
    if (c == 0xED && at(i + 1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !is_cont(at(i + 1)) || !is_cont(at(i + 2)) || !is_cont(at(i + 3))) return 0;
    if (c == 0xF0 && at(i + 1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && at(i + 1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// A JSON string literal. Invalid UTF-8 bytes become U+FFFD so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\b': out += "\\b"; ++i; continue;
      case '\f': out += "\\f"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    out.append(s.data() + i, len);
    i += len;
  }
  out += '"';
}

bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// Perfetto's schema declares these fields as `string`, which must hold UTF-8: invalid bytes are
// replaced by U+FFFD, as in the JSON export.
const std::string& utf8(const std::string& s, std::string& scratch) {
  if (is_valid_utf8(s)) return s;
  scratch.clear();
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      scratch += "\xef\xbf\xbd";
      ++i;
    } else {
      scratch.append(s, i, len);
      i += len;
    }
  }
  return scratch;
}

void append_arg_value(std::string& out, const ArgValue& value) {
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          append_i64(out, v);
        } else if constexpr (std::is_same_v<T, std::uint64_t>) {
          append_u64(out, v);
        } else if constexpr (std::is_same_v<T, double>) {
          append_double(out, v);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else {
          append_json_string(out, v);
        }
      },
      value);
}

void append_args_object(std::string& out, const std::vector<Arg>& args) {
  out += '{';
  bool first = true;
  for (const Arg& a : args) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, a.name);
    out += ':';
    append_arg_value(out, a.value);
  }
  out += '}';
}

void write_varint(std::ostream& out, std::uint64_t v) {
  char buf[10];
  int n = 0;
  do {
    unsigned char byte = static_cast<unsigned char>(v & 0x7F);
    v >>= 7;
    if (v != 0) byte |= 0x80;
    buf[n++] = static_cast<char>(byte);
  } while (v != 0);
  out.write(buf, n);
}

void fill_annotations(pb::TrackEvent& ev, const std::vector<Arg>& args) {
  std::string scratch;
  for (const Arg& a : args) {
    pb::DebugAnnotation* d = ev.add_debug_annotations();
    d->set_name(utf8(a.name, scratch));
    std::visit(
        [d, &scratch](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::int64_t>) {
            d->set_int_value(v);
          } else if constexpr (std::is_same_v<T, std::uint64_t>) {
            d->set_uint_value(v);
          } else if constexpr (std::is_same_v<T, double>) {
            d->set_double_value(v);
          } else if constexpr (std::is_same_v<T, bool>) {
            d->set_bool_value(v);
          } else {
            d->set_string_value(utf8(v, scratch));
          }
        },
        a.value);
  }
}

// Opens `path`, lets `fill` write to it, then checks the stream; on failure removes the
// partial file and throws.
template <typename Fill>
void write_file(const std::string& path, const char* what, Fill fill) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    throw std::runtime_error(std::string("TraceWriter: cannot open '") + path + "' for writing " +
                             what + ": " + std::strerror(errno));
  }
  fill(file);
  file.flush();
  const bool ok = static_cast<bool>(file);
  file.close();
  if (!ok || file.fail()) {
    std::remove(path.c_str());
    throw std::runtime_error(std::string("TraceWriter: failed writing ") + what + " to '" + path +
                             "'");
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tracks

TrackId TraceWriter::add_track(TrackRec rec) {
  rec.uuid = static_cast<TrackId>(tracks_.size()) + 1;
  tracks_.push_back(std::move(rec));
  return tracks_.back().uuid;
}

TrackId TraceWriter::process_track(std::int32_t pid, std::string name) {
  if (!enabled_) return kNoTrack;
  if (pid <= 0) {
    throw std::invalid_argument("TraceWriter::process_track: pid must be > 0 (got " +
                                std::to_string(pid) + ") for process '" + name + "'");
  }
  for (const TrackRec& t : tracks_) {
    if (t.kind == TrackKind::kProcess && t.pid == pid) {
      throw std::invalid_argument("TraceWriter::process_track: pid " + std::to_string(pid) +
                                  " already belongs to process track " +
                                  track_label(t.name, t.uuid));
    }
  }
  TrackRec rec;
  rec.kind = TrackKind::kProcess;
  rec.name = std::move(name);
  rec.pid = pid;
  return add_track(std::move(rec));
}

TrackId TraceWriter::thread_track(TrackId process, std::int32_t tid, std::string name) {
  if (!enabled_) return kNoTrack;
  if (process == kNoTrack || process > tracks_.size() ||
      track_ref(process).kind != TrackKind::kProcess) {
    throw std::invalid_argument("TraceWriter::thread_track: parent " + std::to_string(process) +
                                " of thread '" + name + "' is not a process track");
  }
  if (tid <= 0 || tid >= kSyntheticTidBase) {
    throw std::invalid_argument("TraceWriter::thread_track: tid " + std::to_string(tid) +
                                " of thread '" + name + "' is outside [1, 2^30)");
  }
  const std::int32_t pid = track_ref(process).pid;
  for (const TrackRec& t : tracks_) {
    if (t.kind == TrackKind::kThread && t.pid == pid && t.tid == tid) {
      throw std::invalid_argument("TraceWriter::thread_track: tid " + std::to_string(tid) +
                                  " of pid " + std::to_string(pid) +
                                  " already belongs to thread track " +
                                  track_label(t.name, t.uuid));
    }
  }
  TrackRec rec;
  rec.kind = TrackKind::kThread;
  rec.parent = process;
  rec.name = std::move(name);
  rec.pid = pid;
  rec.tid = tid;
  return add_track(std::move(rec));
}

TrackId TraceWriter::named_track(TrackId parent, std::string name) {
  if (!enabled_) return kNoTrack;
  if (parent != kNoTrack &&
      (parent > tracks_.size() || track_ref(parent).kind == TrackKind::kCounter)) {
    throw std::invalid_argument("TraceWriter::named_track: parent " + std::to_string(parent) +
                                " of track '" + name + "' is not a process, thread or named track");
  }
  TrackRec rec;
  rec.kind = TrackKind::kNamed;
  rec.parent = parent;
  rec.name = std::move(name);
  rec.pid = parent == kNoTrack ? kGlobalPid : track_ref(parent).pid;
  return add_track(std::move(rec));
}

TrackId TraceWriter::counter_track(TrackId parent, std::string name, std::string unit_name) {
  if (!enabled_) return kNoTrack;
  if (parent != kNoTrack &&
      (parent > tracks_.size() || track_ref(parent).kind == TrackKind::kCounter)) {
    throw std::invalid_argument("TraceWriter::counter_track: parent " + std::to_string(parent) +
                                " of counter '" + name +
                                "' is not a process, thread or named track");
  }
  TrackRec rec;
  rec.kind = TrackKind::kCounter;
  rec.parent = parent;
  rec.name = std::move(name);
  rec.unit_name = std::move(unit_name);
  rec.pid = parent == kNoTrack ? kGlobalPid : track_ref(parent).pid;
  return add_track(std::move(rec));
}

void TraceWriter::clear_events() {
  slices_.clear();
  instants_.clear();
  samples_.clear();
  for (TrackRec& t : tracks_) t.open.clear();
}

std::size_t TraceWriter::open_slice_count(TrackId track) const {
  if (track == kNoTrack || track > tracks_.size()) return 0;
  return track_ref(track).open.size();
}

// ---------------------------------------------------------------------------------------------
// Events

TraceWriter::TrackRec& TraceWriter::track_for_event(TrackId track, const char* what) {
  if (track == kNoTrack || track > tracks_.size()) {
    throw std::invalid_argument(std::string("TraceWriter::") + what + ": unknown track id " +
                                std::to_string(track));
  }
  return tracks_[track - 1];
}

void TraceWriter::check_flows(const std::vector<FlowId>& ids, const char* what) const {
  for (FlowId id : ids) {
    if (id == 0) {
      throw std::invalid_argument(std::string("TraceWriter::") + what +
                                  ": flow id 0 is not valid (use new_flow_id())");
    }
  }
}

void TraceWriter::begin_slice(TrackId track, std::uint64_t ts_ns, std::string name,
                              std::vector<Arg> args, std::vector<FlowId> flow_ids,
                              std::vector<FlowId> terminating_flow_ids) {
  if (!enabled_ || paused_) return;
  TrackRec& t = track_for_event(track, "begin_slice");
  if (t.kind == TrackKind::kCounter) {
    throw std::invalid_argument("TraceWriter::begin_slice: " + track_label(t.name, t.uuid) +
                                " is a counter track");
  }
  check_flows(flow_ids, "begin_slice");
  check_flows(terminating_flow_ids, "begin_slice");
  if (!t.open.empty() && ts_ns < slices_[t.open.back()].start) {
    const SliceRec& parent = slices_[t.open.back()];
    throw std::logic_error("TraceWriter::begin_slice: slice '" + name + "' at " +
                           std::to_string(ts_ns) + " ns on track " + track_label(t.name, t.uuid) +
                           " starts before the open slice '" + parent.name + "' (" +
                           std::to_string(parent.start) + " ns)");
  }
  SliceRec s;
  s.track = track;
  s.start = ts_ns;
  s.min_end = ts_ns;
  s.begin_seq = ++seq_;
  s.name = std::move(name);
  s.args = std::move(args);
  s.flows = std::move(flow_ids);
  s.terminating_flows = std::move(terminating_flow_ids);
  t.open.push_back(slices_.size());
  slices_.push_back(std::move(s));
}

void TraceWriter::end_slice(TrackId track, std::uint64_t ts_ns) {
  if (!enabled_ || paused_) return;
  TrackRec& t = track_for_event(track, "end_slice");
  if (t.open.empty()) {
    throw std::logic_error("TraceWriter::end_slice: no open slice on track " +
                           track_label(t.name, t.uuid) + " at " + std::to_string(ts_ns) + " ns");
  }
  SliceRec& s = slices_[t.open.back()];
  if (ts_ns < s.min_end) {
    throw std::logic_error("TraceWriter::end_slice: end " + std::to_string(ts_ns) +
                           " ns of slice '" + s.name + "' on track " +
                           track_label(t.name, t.uuid) + " is before " +
                           (ts_ns < s.start ? "its start " : "the end of a nested slice ") +
                           std::to_string(ts_ns < s.start ? s.start : s.min_end) + " ns");
  }
  s.end = ts_ns;
  s.closed = true;
  s.end_seq = ++seq_;
  t.open.pop_back();
  if (!t.open.empty()) {
    SliceRec& parent = slices_[t.open.back()];
    parent.min_end = std::max(parent.min_end, ts_ns);
  }
}

void TraceWriter::complete_slice(TrackId track, std::uint64_t start_ns, std::uint64_t end_ns,
                                 std::string name, std::vector<Arg> args,
                                 std::vector<FlowId> flow_ids,
                                 std::vector<FlowId> terminating_flow_ids) {
  if (!enabled_ || paused_) return;
  TrackRec& t = track_for_event(track, "complete_slice");
  if (t.kind == TrackKind::kCounter) {
    throw std::invalid_argument("TraceWriter::complete_slice: " + track_label(t.name, t.uuid) +
                                " is a counter track");
  }
  if (end_ns < start_ns) {
    throw std::logic_error("TraceWriter::complete_slice: slice '" + name + "' on track " +
                           track_label(t.name, t.uuid) + " ends (" + std::to_string(end_ns) +
                           " ns) before it starts (" + std::to_string(start_ns) + " ns)");
  }
  check_flows(flow_ids, "complete_slice");
  check_flows(terminating_flow_ids, "complete_slice");
  SliceRec s;
  s.track = track;
  s.start = start_ns;
  s.end = end_ns;
  s.min_end = end_ns;
  s.closed = true;
  s.begin_seq = s.end_seq = ++seq_;
  s.name = std::move(name);
  s.args = std::move(args);
  s.flows = std::move(flow_ids);
  s.terminating_flows = std::move(terminating_flow_ids);
  slices_.push_back(std::move(s));
}

void TraceWriter::instant(TrackId track, std::uint64_t ts_ns, std::string name,
                          std::vector<Arg> args) {
  if (!enabled_ || paused_) return;
  TrackRec& t = track_for_event(track, "instant");
  if (t.kind == TrackKind::kCounter) {
    throw std::invalid_argument("TraceWriter::instant: " + track_label(t.name, t.uuid) +
                                " is a counter track");
  }
  InstantRec r;
  r.track = track;
  r.ts = ts_ns;
  r.seq = ++seq_;
  r.name = std::move(name);
  r.args = std::move(args);
  instants_.push_back(std::move(r));
}

void TraceWriter::counter(TrackId track, std::uint64_t ts_ns, double value) {
  if (!enabled_ || paused_) return;
  TrackRec& t = track_for_event(track, "counter");
  if (t.kind != TrackKind::kCounter) {
    throw std::invalid_argument("TraceWriter::counter: " + track_label(t.name, t.uuid) +
                                " is not a counter track");
  }
  if (!std::isfinite(value)) {
    throw std::invalid_argument("TraceWriter::counter: non-finite value on counter " +
                                track_label(t.name, t.uuid));
  }
  SampleRec r;
  r.track = track;
  r.ts = ts_ns;
  r.seq = ++seq_;
  r.value = value;
  samples_.push_back(r);
}

// ---------------------------------------------------------------------------------------------
// Ordering

// Builds the output stream: per track, slices are sorted into a properly nested begin/end
// sequence and merged with that track's instants or counter samples by (timestamp, recording
// order); the per-track sequences are then merged by (timestamp, recording order, track), always
// taking a track's events in their own order. The result is sorted by timestamp and identical for
// identical recordings.
std::vector<TraceWriter::OrderedEvent> TraceWriter::ordered_events() const {
  const std::size_t n = tracks_.size();
  std::vector<std::vector<std::size_t>> slices_by(n), instants_by(n), samples_by(n);
  for (std::size_t i = 0; i < slices_.size(); ++i) slices_by[slices_[i].track - 1].push_back(i);
  for (std::size_t i = 0; i < instants_.size(); ++i) {
    instants_by[instants_[i].track - 1].push_back(i);
  }
  for (std::size_t i = 0; i < samples_.size(); ++i) samples_by[samples_[i].track - 1].push_back(i);

  using Ev = OrderedEvent;
  std::vector<std::vector<Ev>> per_track(n);
  for (std::size_t t = 0; t < n; ++t) {
    std::vector<Ev>& out = per_track[t];
    const TrackId uuid = static_cast<TrackId>(t) + 1;

    if (tracks_[t].kind == TrackKind::kCounter) {
      std::vector<std::size_t>& ids = samples_by[t];  // recording order
      std::stable_sort(ids.begin(), ids.end(), [this](std::size_t a, std::size_t b) {
        return samples_[a].ts < samples_[b].ts;
      });
      out.reserve(ids.size());
      for (std::size_t i : ids) out.push_back(Ev{Ev::kCounter, samples_[i].ts, samples_[i].seq, uuid, i});
      continue;
    }

    // Slices: start ascending, then longer (enclosing) first, open ones longest; then recording
    // order.
    std::vector<std::size_t>& ids = slices_by[t];
    std::sort(ids.begin(), ids.end(), [this](std::size_t a, std::size_t b) {
      const SliceRec& x = slices_[a];
      const SliceRec& y = slices_[b];
      if (x.start != y.start) return x.start < y.start;
      if (x.closed != y.closed) return !x.closed;
      if (x.closed && x.end != y.end) return x.end > y.end;
      return x.begin_seq < y.begin_seq;
    });
    // Does `top` end before `s` begins (so s is not nested inside it)? A zero-length slice placed
    // exactly at the end of a longer one nests inside it only if it was recorded before the longer
    // one ended.
    const auto ends_before = [](const SliceRec& top, const SliceRec& s) {
      if (!top.closed) return false;
      if (top.end != s.start) return top.end < s.start;
      const bool s_zero = s.closed && s.end == s.start;
      const bool nest = s_zero && top.start < top.end && s.begin_seq < top.end_seq;
      return !nest;
    };
    std::vector<Ev> seq_slices;
    seq_slices.reserve(ids.size() * 2);
    std::vector<std::size_t> stack;
    for (std::size_t id : ids) {
      const SliceRec& s = slices_[id];
      while (!stack.empty() && ends_before(slices_[stack.back()], s)) {
        const SliceRec& top = slices_[stack.back()];
        seq_slices.push_back(Ev{Ev::kEnd, top.end, top.end_seq, uuid, stack.back()});
        stack.pop_back();
      }
      if (!stack.empty()) {
        const SliceRec& top = slices_[stack.back()];
        if (top.closed && (!s.closed || s.end > top.end)) {
          const auto range = [](const SliceRec& r) {
            return "[" + std::to_string(r.start) + ", " +
                   (r.closed ? std::to_string(r.end) : std::string("open")) + "] ns";
          };
          throw std::logic_error("TraceWriter: slices '" + top.name + "' " + range(top) +
                                 " and '" + s.name + "' " + range(s) + " on track " +
                                 track_label(tracks_[t].name, uuid) +
                                 " overlap partially; slices on one track must nest");
        }
      }
      seq_slices.push_back(Ev{Ev::kBegin, s.start, s.begin_seq, uuid, id});
      stack.push_back(id);
    }
    while (!stack.empty()) {
      const SliceRec& top = slices_[stack.back()];
      if (top.closed) seq_slices.push_back(Ev{Ev::kEnd, top.end, top.end_seq, uuid, stack.back()});
      stack.pop_back();
    }

    std::vector<std::size_t>& inst = instants_by[t];  // recording order
    std::stable_sort(inst.begin(), inst.end(), [this](std::size_t a, std::size_t b) {
      return instants_[a].ts < instants_[b].ts;
    });
    out.reserve(seq_slices.size() + inst.size());
    std::size_t a = 0;
    std::size_t b = 0;
    while (a < seq_slices.size() || b < inst.size()) {
      bool take_instant = false;
      if (a == seq_slices.size()) {
        take_instant = true;
      } else if (b < inst.size()) {
        const InstantRec& r = instants_[inst[b]];
        take_instant = r.ts < seq_slices[a].ts || (r.ts == seq_slices[a].ts && r.seq < seq_slices[a].seq);
      }
      if (take_instant) {
        const InstantRec& r = instants_[inst[b]];
        out.push_back(Ev{Ev::kInstant, r.ts, r.seq, uuid, inst[b]});
        ++b;
      } else {
        out.push_back(seq_slices[a++]);
      }
    }
  }

  // k-way merge of the per-track sequences.
  std::size_t total = 0;
  for (const auto& v : per_track) total += v.size();
  std::vector<Ev> result;
  result.reserve(total);
  std::vector<std::size_t> pos(n, 0);
  const auto later = [&](std::size_t x, std::size_t y) {  // priority_queue wants "less urgent"
    const Ev& ex = per_track[x][pos[x]];
    const Ev& ey = per_track[y][pos[y]];
    if (ex.ts != ey.ts) return ex.ts > ey.ts;
    if (ex.seq != ey.seq) return ex.seq > ey.seq;
    return x > y;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heads(later);
  for (std::size_t t = 0; t < n; ++t) {
    if (!per_track[t].empty()) heads.push(t);
  }
  while (!heads.empty()) {
    const std::size_t t = heads.top();
    heads.pop();
    result.push_back(per_track[t][pos[t]]);
    if (++pos[t] < per_track[t].size()) heads.push(t);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Perfetto output

void TraceWriter::emit_perfetto(std::ostream& out, const std::vector<OrderedEvent>& events) const {
  pb::TracePacket packet;
  std::string bytes;
  std::string scratch;
  bool first = true;
  const auto put = [&]() {
    if (first) {
      packet.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      first = false;
    }
    packet.set_trusted_packet_sequence_id(kSequenceId);
    bytes.clear();
    packet.SerializeToString(&bytes);
    out.put(static_cast<char>(0x0A));  // Trace.packet: field 1, length-delimited
    write_varint(out, bytes.size());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    packet.Clear();
  };

  for (const TrackRec& t : tracks_) {
    pb::TrackDescriptor* d = packet.mutable_track_descriptor();
    d->set_uuid(t.uuid);
    if (t.parent != kNoTrack) d->set_parent_uuid(t.parent);
    switch (t.kind) {
      case TrackKind::kProcess:
        d->mutable_process()->set_pid(t.pid);
        d->mutable_process()->set_process_name(utf8(t.name, scratch));
        break;
      case TrackKind::kThread:
        d->mutable_thread()->set_pid(t.pid);
        d->mutable_thread()->set_tid(t.tid);
        d->mutable_thread()->set_thread_name(utf8(t.name, scratch));
        break;
      case TrackKind::kNamed:
        d->set_name(utf8(t.name, scratch));
        d->set_sibling_merge_behavior(pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
        break;
      case TrackKind::kCounter:
        d->set_name(utf8(t.name, scratch));
        d->set_sibling_merge_behavior(pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
        if (t.unit_name.empty()) {
          d->mutable_counter();
        } else {
          d->mutable_counter()->set_unit_name(utf8(t.unit_name, scratch));
        }
        break;
    }
    put();
  }

  for (const OrderedEvent& e : events) {
    packet.set_timestamp(e.ts);
    pb::TrackEvent* ev = packet.mutable_track_event();
    ev->set_track_uuid(e.track);
    switch (e.kind) {
      case OrderedEvent::kBegin: {
        const SliceRec& s = slices_[e.index];
        ev->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
        ev->set_name(utf8(s.name, scratch));
        fill_annotations(*ev, s.args);
        for (FlowId id : s.flows) ev->add_flow_ids(id);
        for (FlowId id : s.terminating_flows) ev->add_terminating_flow_ids(id);
        break;
      }
      case OrderedEvent::kEnd:
        ev->set_type(pb::TrackEvent::TYPE_SLICE_END);
        break;
      case OrderedEvent::kInstant: {
        const InstantRec& r = instants_[e.index];
        ev->set_type(pb::TrackEvent::TYPE_INSTANT);
        ev->set_name(utf8(r.name, scratch));
        fill_annotations(*ev, r.args);
        break;
      }
      case OrderedEvent::kCounter:
        ev->set_type(pb::TrackEvent::TYPE_COUNTER);
        ev->set_double_counter_value(samples_[e.index].value);
        break;
    }
    put();
  }

  if (first) put();  // nothing recorded: still a valid, non-empty trace
}

void TraceWriter::write_perfetto(std::ostream& out) const {
  const std::vector<OrderedEvent> events = ordered_events();
  emit_perfetto(out, events);
  if (!out) throw std::runtime_error("TraceWriter: failed writing the Perfetto trace to a stream");
}

void TraceWriter::write_perfetto(const std::string& path) const {
  const std::vector<OrderedEvent> events = ordered_events();  // may throw before the file exists
  write_file(path, "the Perfetto trace",
             [&](std::ostream& out) { emit_perfetto(out, events); });
}

// ---------------------------------------------------------------------------------------------
// Chrome JSON output

void TraceWriter::emit_chrome_json(std::ostream& out,
                                   const std::vector<OrderedEvent>& events) const {
  // Chrome thread id of each track (index uuid-1); counters use only the pid.
  std::vector<std::int64_t> tid(tracks_.size(), 0);
  bool need_global = false;
  for (const TrackRec& t : tracks_) {
    switch (t.kind) {
      case TrackKind::kProcess: tid[t.uuid - 1] = t.pid; break;
      case TrackKind::kThread: tid[t.uuid - 1] = t.tid; break;
      case TrackKind::kNamed:
      case TrackKind::kCounter:
        tid[t.uuid - 1] = kSyntheticTidBase + static_cast<std::int64_t>(t.uuid);
        break;
    }
    if (t.kind != TrackKind::kProcess && t.kind != TrackKind::kThread && t.pid == kGlobalPid) {
      need_global = true;
    }
  }
  // Counter series names must be unique within a process.
  std::vector<std::string> counter_name(tracks_.size());
  {
    std::map<std::pair<std::int32_t, std::string>, int> used;
    for (const TrackRec& t : tracks_) {
      if (t.kind != TrackKind::kCounter) continue;
      if (used[{t.pid, t.name}]++ == 0) {
        counter_name[t.uuid - 1] = t.name;
      } else {
        counter_name[t.uuid - 1] = t.name + " #" + std::to_string(t.uuid);
      }
    }
  }
  // Flow id -> number of slices carrying it, to choose s / t / f.
  std::map<FlowId, std::size_t> flow_total;
  for (const OrderedEvent& e : events) {
    if (e.kind != OrderedEvent::kBegin) continue;
    for (FlowId id : slices_[e.index].flows) ++flow_total[id];
    for (FlowId id : slices_[e.index].terminating_flows) ++flow_total[id];
  }
  std::map<FlowId, std::size_t> flow_seen;

  std::string buf;
  buf.reserve(1 << 16);
  bool first = true;
  const auto open_event = [&](const char* ph) {
    buf += first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"";
    first = false;
    buf += ph;
    buf += '"';
  };
  const auto pid_tid = [&](std::int32_t pid, std::int64_t t) {
    buf += ",\"pid\":";
    append_i64(buf, pid);
    buf += ",\"tid\":";
    append_i64(buf, t);
  };
  const auto flush_if_big = [&]() {
    if (buf.size() >= (1u << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  };
  const auto metadata = [&](const char* what, std::int32_t pid, const std::int64_t* t,
                            const std::string* name, std::int64_t sort_index) {
    open_event("M");
    buf += ",\"pid\":";
    append_i64(buf, pid);
    if (t != nullptr) {
      buf += ",\"tid\":";
      append_i64(buf, *t);
    }
    buf += ",\"name\":\"";
    buf += what;
    buf += "\",\"args\":{";
    if (name != nullptr) {
      buf += "\"name\":";
      append_json_string(buf, *name);
    } else {
      buf += "\"sort_index\":";
      append_i64(buf, sort_index);
    }
    buf += "}}";
  };

  buf += "{\"traceEvents\":[";
  if (need_global) {
    const std::string global_name = "global";
    metadata("process_name", kGlobalPid, nullptr, &global_name, 0);
    metadata("process_sort_index", kGlobalPid, nullptr, nullptr, 0);
  }
  for (const TrackRec& t : tracks_) {
    const std::int64_t rank = static_cast<std::int64_t>(t.uuid);
    if (t.kind == TrackKind::kProcess) {
      metadata("process_name", t.pid, nullptr, &t.name, 0);
      metadata("process_sort_index", t.pid, nullptr, nullptr, rank);
    } else if (t.kind == TrackKind::kThread || t.kind == TrackKind::kNamed) {
      metadata("thread_name", t.pid, &tid[t.uuid - 1], &t.name, 0);
      metadata("thread_sort_index", t.pid, &tid[t.uuid - 1], nullptr, rank);
    }
  }

  for (const OrderedEvent& e : events) {
    const TrackRec& t = track_ref(e.track);
    const std::int64_t thread = tid[e.track - 1];
    switch (e.kind) {
      case OrderedEvent::kBegin: {
        const SliceRec& s = slices_[e.index];
        open_event("B");
        pid_tid(t.pid, thread);
        buf += ",\"ts\":";
        append_ts_us(buf, s.start);
        buf += ",\"name\":";
        append_json_string(buf, s.name);
        if (!s.args.empty()) {
          buf += ",\"args\":";
          append_args_object(buf, s.args);
        }
        buf += '}';
        const auto flow_event = [&](FlowId id) {
          const std::size_t count = flow_total[id];
          if (count < 2) return;  // an arrow needs two ends
          const std::size_t k = flow_seen[id]++;
          open_event(k == 0 ? "s" : (k + 1 == count ? "f" : "t"));
          pid_tid(t.pid, thread);
          buf += ",\"ts\":";
          append_ts_us(buf, s.start);
          buf += ",\"id\":";
          append_u64(buf, id);
          buf += ",\"cat\":\"flow\",\"name\":\"flow\"";
          if (k + 1 == count) buf += ",\"bp\":\"e\"";
          buf += '}';
        };
        for (FlowId id : s.flows) flow_event(id);
        for (FlowId id : s.terminating_flows) flow_event(id);
        break;
      }
      case OrderedEvent::kEnd:
        open_event("E");
        pid_tid(t.pid, thread);
        buf += ",\"ts\":";
        append_ts_us(buf, e.ts);
        buf += '}';
        break;
      case OrderedEvent::kInstant: {
        const InstantRec& r = instants_[e.index];
        open_event("i");
        pid_tid(t.pid, thread);
        buf += ",\"ts\":";
        append_ts_us(buf, r.ts);
        buf += ",\"s\":\"t\",\"name\":";
        append_json_string(buf, r.name);
        if (!r.args.empty()) {
          buf += ",\"args\":";
          append_args_object(buf, r.args);
        }
        buf += '}';
        break;
      }
      case OrderedEvent::kCounter:
        open_event("C");
        buf += ",\"pid\":";
        append_i64(buf, t.pid);
        buf += ",\"ts\":";
        append_ts_us(buf, e.ts);
        buf += ",\"name\":";
        append_json_string(buf, counter_name[e.track - 1]);
        buf += ",\"args\":{\"value\":";
        append_double(buf, samples_[e.index].value);
        buf += "}}";
        break;
    }
    flush_if_big();
  }
  buf += "\n],\"displayTimeUnit\":\"ns\"}\n";
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

void TraceWriter::write_chrome_json(std::ostream& out) const {
  const std::vector<OrderedEvent> events = ordered_events();
  emit_chrome_json(out, events);
  if (!out) throw std::runtime_error("TraceWriter: failed writing the Chrome JSON trace to a stream");
}

void TraceWriter::write_chrome_json(const std::string& path) const {
  const std::vector<OrderedEvent> events = ordered_events();
  write_file(path, "the Chrome JSON trace",
             [&](std::ostream& out) { emit_chrome_json(out, events); });
}

}  // namespace hpusim::traces
