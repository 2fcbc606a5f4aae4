#include "sim/stats/stats.h"

#include "sim/report/json_records.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace hpusim::stats {

namespace {

constexpr int kKeyShift = 52 - Distribution::kMantissaBits;

uint64_t double_bits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

// Bucket key of a finite sample: monotonic in the value, equal for values that share sign,
// exponent and the top kMantissaBits mantissa bits.
int64_t bucket_key(double v) {
  if (v >= 0.0) return static_cast<int64_t>(double_bits(v + 0.0) >> kKeyShift);  // -0 -> +0
  return -static_cast<int64_t>(double_bits(-v) >> kKeyShift) - 1;
}

std::string quote(const std::string& s) { return "\"" + report::json_escape(s) + "\""; }

std::string json_number(double v) { return std::isfinite(v) ? format_double(v) : "null"; }

bool valid_unit(const std::string& unit) {
  if (unit.empty()) return false;
  for (unsigned char c : unit) {
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

bool valid_desc(const std::string& desc) {
  for (unsigned char c : desc) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

std::vector<std::string> split_name(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    throw std::runtime_error("stats: cannot open '" + path + "' for writing: " +
                             std::strerror(errno));
  }
  f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  f.close();
  if (!f) throw std::runtime_error("stats: failed writing '" + path + "'");
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kCounter: return "counter";
    case Kind::kScalar: return "scalar";
    case Kind::kDistribution: return "distribution";
    case Kind::kFormula: return "formula";
  }
  return "unknown";
}

std::string path_component(std::string text) {
  for (char& c : text) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0.0) return "0";  // also -0
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  return std::string(buf, res.ptr);
}

// ---------------------------------------------------------------------------------------------
// Distribution

void Distribution::reset() {
  count_ = 0;
  sum_ = 0.0;
  min_ = 0.0;
  max_ = 0.0;
  buckets_.clear();
}

void Distribution::record(double v) {
  if (!std::isfinite(v)) {
    throw std::invalid_argument("stats: non-finite sample " + format_double(v) +
                                " for distribution '" + name() + "'");
  }
  if (count_ == 0) {
    min_ = max_ = v;
  } else {
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
  }
  ++count_;
  sum_ += v;
  Bucket& b = buckets_[bucket_key(v)];
  ++b.count;
  b.sum += v;
}

double Distribution::percentile(double p) const {
  if (!(p >= 0.0 && p <= 100.0)) {
    throw std::invalid_argument("stats: percentile " + format_double(p) +
                                " outside [0, 100] for distribution '" + name() + "'");
  }
  if (count_ == 0) return 0.0;
  if (p == 0.0) return min_;
  if (p == 100.0) return max_;
  // Nearest rank: the smallest rank r with r >= p * n / 100.
  double exact = std::ceil(p * static_cast<double>(count_) / 100.0);
  uint64_t rank = exact < 1.0 ? 1 : static_cast<uint64_t>(exact);
  if (rank > count_) rank = count_;

  std::vector<std::pair<int64_t, const Bucket*>> sorted;
  sorted.reserve(buckets_.size());
  for (const auto& [key, bucket] : buckets_) sorted.emplace_back(key, &bucket);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  uint64_t seen = 0;
  for (const auto& [key, bucket] : sorted) {
    seen += bucket->count;
    if (seen >= rank) {
      double v = bucket->sum / static_cast<double>(bucket->count);
      return std::clamp(v, min_, max_);
    }
  }
  return max_;  // not reached: the buckets hold count_ samples
}

// ---------------------------------------------------------------------------------------------
// Scope

Scope::Scope(Registry& registry, std::string prefix)
    : registry_(&registry), prefix_(std::move(prefix)) {
  if (!prefix_.empty()) Registry::validate_name(prefix_);
}

std::string Scope::full(const std::string& name) const {
  return prefix_.empty() ? name : prefix_ + "." + name;
}

Counter& Scope::counter(const std::string& name, const std::string& unit,
                        const std::string& desc) {
  return registry_->counter(full(name), unit, desc);
}

Scalar& Scope::scalar(const std::string& name, const std::string& unit, const std::string& desc) {
  return registry_->scalar(full(name), unit, desc);
}

Distribution& Scope::distribution(const std::string& name, const std::string& unit,
                                  const std::string& desc) {
  return registry_->distribution(full(name), unit, desc);
}

Formula& Scope::formula(const std::string& name, const std::string& unit, const std::string& desc,
                        std::function<double()> fn) {
  return registry_->formula(full(name), unit, desc, std::move(fn));
}

Scope Scope::scope(const std::string& name) const { return Scope(*registry_, full(name)); }

// ---------------------------------------------------------------------------------------------
// Registry: registration and lookup

void Registry::validate_name(const std::string& name) {
  bool ok = !name.empty();
  bool segment_empty = true;
  for (char c : name) {
    if (c == '.') {
      if (segment_empty) ok = false;
      segment_empty = true;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') {
      segment_empty = false;
    } else {
      ok = false;
    }
  }
  if (segment_empty) ok = false;
  if (!ok) {
    throw std::invalid_argument("stats: invalid statistic name " + quote(name) +
                                ": expected dot-separated segments of [a-z0-9_]+");
  }
}

template <typename T, typename... Args>
T& Registry::add(const std::string& name, const std::string& unit, const std::string& desc,
                 Args&&... args) {
  validate_name(name);
  if (stats_.count(name) != 0) {
    throw std::invalid_argument("stats: duplicate statistic name '" + name + "'");
  }
  // A name may not be both a value and a group of other values.
  for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    std::string group = name.substr(0, dot);
    if (stats_.count(group) != 0) {
      throw std::invalid_argument("stats: statistic name '" + name +
                                  "' would nest under existing statistic '" + group + "'");
    }
  }
  std::string as_group = name + ".";
  auto it = stats_.lower_bound(as_group);
  if (it != stats_.end() && it->first.compare(0, as_group.size(), as_group) == 0) {
    throw std::invalid_argument("stats: statistic name '" + name +
                                "' is already a group containing '" + it->first + "'");
  }
  if (!valid_unit(unit)) {
    throw std::invalid_argument("stats: statistic '" + name + "' has invalid unit " + quote(unit) +
                                ": must be non-empty without whitespace");
  }
  if (!valid_desc(desc)) {
    throw std::invalid_argument("stats: statistic '" + name +
                                "' has a description that is not a single line");
  }
  auto stat = std::make_unique<T>(name, unit, desc, std::forward<Args>(args)...);
  T& ref = *stat;
  stats_.emplace(name, std::move(stat));
  return ref;
}

Counter& Registry::counter(const std::string& name, const std::string& unit,
                           const std::string& desc) {
  return add<Counter>(name, unit, desc);
}

Scalar& Registry::scalar(const std::string& name, const std::string& unit,
                         const std::string& desc) {
  return add<Scalar>(name, unit, desc);
}

Distribution& Registry::distribution(const std::string& name, const std::string& unit,
                                     const std::string& desc) {
  return add<Distribution>(name, unit, desc);
}

Formula& Registry::formula(const std::string& name, const std::string& unit,
                           const std::string& desc, std::function<double()> fn) {
  if (!fn) throw std::invalid_argument("stats: formula '" + name + "' has no callback");
  return add<Formula>(name, unit, desc, std::move(fn));
}

const Stat* Registry::find(const std::string& name) const {
  auto it = stats_.find(name);
  return it == stats_.end() ? nullptr : it->second.get();
}

Counter* Registry::find_counter(const std::string& name) const {
  auto it = stats_.find(name);
  return it == stats_.end() ? nullptr : dynamic_cast<Counter*>(it->second.get());
}

Scalar* Registry::find_scalar(const std::string& name) const {
  auto it = stats_.find(name);
  return it == stats_.end() ? nullptr : dynamic_cast<Scalar*>(it->second.get());
}

Distribution* Registry::find_distribution(const std::string& name) const {
  auto it = stats_.find(name);
  return it == stats_.end() ? nullptr : dynamic_cast<Distribution*>(it->second.get());
}

Formula* Registry::find_formula(const std::string& name) const {
  auto it = stats_.find(name);
  return it == stats_.end() ? nullptr : dynamic_cast<Formula*>(it->second.get());
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  out.reserve(stats_.size());
  for (const auto& entry : stats_) out.push_back(entry.first);
  return out;
}

void Registry::reset() {
  for (auto& entry : stats_) entry.second->reset();
}

// ---------------------------------------------------------------------------------------------
// Registry: output
//
// '.' sorts before every character allowed in a segment, so the std::map order of full names is
// also a depth-first walk of the name tree with siblings in segment order: the JSON writer
// streams the tree while walking the map, and text lines come out sorted by full name.

void Registry::write_json(std::ostream& os) const {
  std::ostringstream out;
  std::vector<std::string> open;     // groups currently open, outermost first
  std::vector<bool> has_child{false};  // per depth (0 = root): a member was already written
  auto indent = [&](std::size_t depth) { out << std::string(2 * depth, ' '); };
  auto begin_member = [&](std::size_t depth) {  // depth of the object receiving a member
    out << (has_child[depth] ? ",\n" : "\n");
    has_child[depth] = true;
    indent(depth + 1);
  };

  out << "{";
  for (const auto& [name, stat] : stats_) {
    std::vector<std::string> parts = split_name(name);
    std::size_t groups = parts.size() - 1;
    std::size_t common = 0;
    while (common < open.size() && common < groups && open[common] == parts[common]) ++common;
    while (open.size() > common) {
      out << "\n";
      indent(open.size());
      out << "}";
      open.pop_back();
      has_child.pop_back();
    }
    while (open.size() < groups) {
      begin_member(open.size());
      out << quote(parts[open.size()]) << ": {";
      open.push_back(parts[open.size()]);
      has_child.push_back(false);
    }
    begin_member(open.size());
    out << quote(parts.back()) << ": {\"kind\": \"" << kind_name(stat->kind()) << "\", ";
    switch (stat->kind()) {
      case Kind::kCounter:
        out << "\"value\": " << static_cast<const Counter&>(*stat).value();
        break;
      case Kind::kScalar:
        out << "\"value\": " << json_number(static_cast<const Scalar&>(*stat).value());
        break;
      case Kind::kFormula:
        out << "\"value\": " << json_number(static_cast<const Formula&>(*stat).value());
        break;
      case Kind::kDistribution: {
        const auto& d = static_cast<const Distribution&>(*stat);
        out << "\"count\": " << d.count() << ", \"min\": " << json_number(d.min())
            << ", \"max\": " << json_number(d.max()) << ", \"mean\": " << json_number(d.mean())
            << ", \"p50\": " << json_number(d.p50()) << ", \"p99\": " << json_number(d.p99());
        break;
      }
    }
    out << ", \"unit\": " << quote(stat->unit()) << ", \"desc\": " << quote(stat->desc()) << "}";
  }
  while (!open.empty()) {
    out << "\n";
    indent(open.size());
    out << "}";
    open.pop_back();
  }
  out << (stats_.empty() ? "}\n" : "\n}\n");
  os << out.str();
}

void Registry::write_text(std::ostream& os) const {
  std::ostringstream out;
  auto line = [&](const std::string& name, const std::string& value, const std::string& unit,
                  const std::string& desc) {
    out << name << ' ' << value << ' ' << unit;
    if (!desc.empty()) out << " # " << desc;
    out << '\n';
  };
  for (const auto& [name, stat] : stats_) {
    switch (stat->kind()) {
      case Kind::kCounter:
        line(name, std::to_string(static_cast<const Counter&>(*stat).value()), stat->unit(),
             stat->desc());
        break;
      case Kind::kScalar:
        line(name, format_double(static_cast<const Scalar&>(*stat).value()), stat->unit(),
             stat->desc());
        break;
      case Kind::kFormula:
        line(name, format_double(static_cast<const Formula&>(*stat).value()), stat->unit(),
             stat->desc());
        break;
      case Kind::kDistribution: {
        // Suffixes in sorted order, so the whole file stays sorted by name.
        const auto& d = static_cast<const Distribution&>(*stat);
        auto sub = [&](const char* field) {
          return stat->desc().empty() ? std::string()
                                      : stat->desc() + " (" + field + ")";
        };
        line(name + ".count", std::to_string(d.count()), "count", sub("count"));
        line(name + ".max", format_double(d.max()), stat->unit(), sub("max"));
        line(name + ".mean", format_double(d.mean()), stat->unit(), sub("mean"));
        line(name + ".min", format_double(d.min()), stat->unit(), sub("min"));
        line(name + ".p50", format_double(d.p50()), stat->unit(), sub("p50"));
        line(name + ".p99", format_double(d.p99()), stat->unit(), sub("p99"));
        break;
      }
    }
  }
  os << out.str();
}

void Registry::write_json_file(const std::string& path) const {
  std::ostringstream out;
  write_json(out);
  write_file(path, out.str());
}

void Registry::write_text_file(const std::string& path) const {
  std::ostringstream out;
  write_text(out);
  write_file(path, out.str());
}

}  // namespace hpusim::stats
