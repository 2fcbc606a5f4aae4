#include "traces/chrome_json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace hpusim::traces {
namespace {

using nlohmann::json;

std::uint64_t to_ns(const json& microseconds, const std::string& what) {
  if (!microseconds.is_number()) throw std::runtime_error(what + ": \"ts\"/\"dur\" is not a number");
  const double us = microseconds.get<double>();
  if (!std::isfinite(us) || us < 0) throw std::runtime_error(what + ": negative or non-finite time");
  return static_cast<std::uint64_t>(std::llround(us * 1000.0));
}

Arg to_arg(const std::string& name, const json& value) {
  if (value.is_boolean()) return Arg(name, value.get<bool>());
  if (value.is_number_unsigned()) return Arg(name, value.get<std::uint64_t>());
  if (value.is_number_integer()) return Arg(name, value.get<std::int64_t>());
  if (value.is_number_float()) return Arg(name, value.get<double>());
  if (value.is_string()) return Arg(name, value.get<std::string>());
  return Arg(name, value.dump());
}

std::vector<Arg> args_of(const json& event) {
  std::vector<Arg> out;
  const auto it = event.find("args");
  if (it == event.end() || !it->is_object()) return out;
  for (const auto& [key, value] : it->items()) out.push_back(to_arg(key, value));
  return out;
}

// Chrome's pid/tid may be numbers or strings (torch.profiler writes strings for device rows).
std::string id_text(const json& event, const char* key) {
  const auto it = event.find(key);
  if (it == event.end()) return "0";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

class Builder {
 public:
  explicit Builder(std::string what) : what_(std::move(what)) {}

  TrackId process(const std::string& pid) {
    const auto it = processes_.find(pid);
    if (it != processes_.end()) return it->second;
    TrackInfo t;
    t.uuid = next_uuid_++;
    t.kind = TrackKind::kProcess;
    t.name = pid;
    t.pid = numeric(pid);
    processes_.emplace(pid, add(t));
    return t.uuid;
  }
  TrackId thread(const std::string& pid, const std::string& tid) {
    const auto key = std::make_pair(pid, tid);
    const auto it = threads_.find(key);
    if (it != threads_.end()) return it->second;
    TrackInfo t;
    t.uuid = next_uuid_++;
    t.parent = process(pid);
    t.kind = TrackKind::kThread;
    t.name = tid;
    t.pid = numeric(pid);
    t.tid = numeric(tid);
    threads_.emplace(key, add(t));
    return t.uuid;
  }
  TrackId counter(const std::string& pid, const std::string& name) {
    const auto key = std::make_pair(pid, name);
    const auto it = counter_tracks_.find(key);
    if (it != counter_tracks_.end()) return it->second;
    TrackInfo t;
    t.uuid = next_uuid_++;
    t.parent = process(pid);
    t.kind = TrackKind::kCounter;
    t.name = name;
    t.pid = numeric(pid);
    counter_tracks_.emplace(key, add(t));
    return t.uuid;
  }
  void rename(TrackId uuid, const std::string& name) { model_.tracks[model_.index.at(uuid)].name = name; }

  void begin(TrackId track, std::uint64_t ts, std::string name, std::vector<Arg> args, std::size_t event) {
    open_[track].push_back(model_.slices.size());
    SliceInfo s;
    s.track = track;
    s.name = std::move(name);
    s.start_ns = ts;
    s.args = std::move(args);
    model_.slices.push_back(std::move(s));
    (void)event;
  }
  void end(TrackId track, std::uint64_t ts, std::size_t event) {
    auto& stack = open_[track];
    if (stack.empty()) throw std::runtime_error(what_ + ": event #" + std::to_string(event) + ": \"E\" with no open slice");
    SliceInfo& s = model_.slices[stack.back()];
    stack.pop_back();
    s.end_ns = std::max(ts, s.start_ns);
    s.closed = true;
  }
  void complete(TrackId track, std::uint64_t ts, std::uint64_t dur, std::string name, std::vector<Arg> args) {
    SliceInfo s;
    s.track = track;
    s.name = std::move(name);
    s.start_ns = ts;
    s.end_ns = ts + dur;
    s.closed = true;
    s.args = std::move(args);
    model_.slices.push_back(std::move(s));
  }
  void instant(TrackId track, std::uint64_t ts, std::string name, std::vector<Arg> args) {
    InstantInfo i;
    i.track = track;
    i.name = std::move(name);
    i.ts_ns = ts;
    i.args = std::move(args);
    model_.instants.push_back(std::move(i));
  }
  void sample(TrackId track, std::uint64_t ts, double value) { model_.counters.push_back({track, ts, value}); }

  TraceModel finish() {
    // Depths per track from the intervals: a slice is inside every earlier-starting one that
    // has not ended before it starts.
    std::map<TrackId, std::vector<std::size_t>> by_track;
    for (std::size_t i = 0; i < model_.slices.size(); ++i) by_track[model_.slices[i].track].push_back(i);
    for (auto& [track, indices] : by_track) {
      std::stable_sort(indices.begin(), indices.end(), [&](std::size_t a, std::size_t b) {
        const SliceInfo& x = model_.slices[a];
        const SliceInfo& y = model_.slices[b];
        return std::make_tuple(x.start_ns, -static_cast<std::int64_t>(x.end_ns)) <
               std::make_tuple(y.start_ns, -static_cast<std::int64_t>(y.end_ns));
      });
      std::vector<std::uint64_t> ends;
      for (std::size_t i : indices) {
        SliceInfo& s = model_.slices[i];
        while (!ends.empty() && ends.back() <= s.start_ns) ends.pop_back();
        s.depth = static_cast<std::uint32_t>(ends.size());
        ends.push_back(s.closed ? s.end_ns : UINT64_MAX);
      }
    }
    std::stable_sort(model_.instants.begin(), model_.instants.end(),
                     [](const InstantInfo& a, const InstantInfo& b) { return a.ts_ns < b.ts_ns; });
    std::stable_sort(model_.counters.begin(), model_.counters.end(),
                     [](const CounterSample& a, const CounterSample& b) { return a.ts_ns < b.ts_ns; });
    return std::move(model_);
  }

 private:
  static std::int64_t numeric(const std::string& id) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(id, &used);
      return used == id.size() ? v : 0;
    } catch (const std::exception&) {
      return 0;
    }
  }
  TrackId add(const TrackInfo& t) {
    model_.index.emplace(t.uuid, model_.tracks.size());
    model_.tracks.push_back(t);
    return t.uuid;
  }

  std::string what_;
  TraceModel model_;
  TrackId next_uuid_ = 1;
  std::map<std::string, TrackId> processes_;
  std::map<std::pair<std::string, std::string>, TrackId> threads_;
  std::map<std::pair<std::string, std::string>, TrackId> counter_tracks_;
  std::map<TrackId, std::vector<std::size_t>> open_;
};

}  // namespace

TraceModel parse_chrome_json(const std::string& text, const std::string& what) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(what + ": not JSON (" + e.what() + ")");
  }
  const json* events = nullptr;
  if (doc.is_array()) {
    events = &doc;
  } else if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
    events = &doc["traceEvents"];
  } else {
    throw std::runtime_error(what + ": not a Chrome trace (neither an event array nor an object with \"traceEvents\")");
  }
  Builder b(what);
  std::size_t n = 0;
  for (const json& e : *events) {
    const std::string where = what + ": event #" + std::to_string(n);
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
      throw std::runtime_error(where + ": not an event object with a \"ph\"");
    }
    const std::string ph = e["ph"].get<std::string>();
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const std::string pid = id_text(e, "pid");
    const std::string tid = id_text(e, "tid");
    if (ph == "M") {
      const json args = e.value("args", json::object());
      if (name == "process_name" && args.contains("name") && args["name"].is_string()) {
        b.rename(b.process(pid), args["name"].get<std::string>());
      } else if (name == "thread_name" && args.contains("name") && args["name"].is_string()) {
        b.rename(b.thread(pid, tid), args["name"].get<std::string>());
      }
    } else if (ph == "X") {
      b.complete(b.thread(pid, tid), to_ns(e.value("ts", json(0)), where), to_ns(e.value("dur", json(0)), where), name,
                 args_of(e));
    } else if (ph == "B") {
      b.begin(b.thread(pid, tid), to_ns(e.value("ts", json(0)), where), name, args_of(e), n);
    } else if (ph == "E") {
      b.end(b.thread(pid, tid), to_ns(e.value("ts", json(0)), where), n);
    } else if (ph == "i" || ph == "I") {
      b.instant(b.thread(pid, tid), to_ns(e.value("ts", json(0)), where), name, args_of(e));
    } else if (ph == "C") {
      const std::uint64_t ts = to_ns(e.value("ts", json(0)), where);
      const json args = e.value("args", json::object());
      for (const auto& [key, value] : args.items()) {
        if (!value.is_number()) continue;
        b.sample(b.counter(pid, key == "value" ? name : name + " " + key), ts, value.get<double>());
      }
    }
    // Flow ("s", "t", "f"), async and object events carry nothing the analyser reads.
    ++n;
  }
  return b.finish();
}

TraceModel read_chrome_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open trace '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parse_chrome_json(text.str(), path);
}

TraceModel read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open trace '" + path + "'");
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  if (!in) throw std::runtime_error(path + ": the trace is empty");
  in.close();
  return (c == '{' || c == '[') ? read_chrome_json(path) : read_perfetto(path);
}

}  // namespace hpusim::traces
