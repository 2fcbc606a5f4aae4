// Per-component statistics with units, written as JSON and as a flat text form that diffs well.
//
// A Registry owns every statistic of a run under a hierarchical dotted name
// ("hbm.ch3.activates"). Components register their statistics once, keep the returned reference
// and update it on the hot path with no lookup:
//
//   auto& acts = registry.counter("hbm.ch3.activates", "count", "ACT commands issued");
//   ...
//   acts.inc();
//
// Kinds:
//   Counter       uint64 event/byte counts (inc, add)
//   Scalar        a double that is set (or accumulated) by the model
//   Distribution  samples summarised as count, min, max, mean, p50, p99 (see Distribution)
//   Formula       a callback evaluated at dump time, e.g. utilisation = busy / elapsed
//
// Output is deterministic: statistics are written sorted by name, doubles with "%.6g" semantics
// (std::to_chars, C locale), so identical runs produce byte-identical files.
//
// Thread safety: none; all statistics are updated and written on the simulation thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace hpusim::stats {

enum class Kind { kCounter, kScalar, kDistribution, kFormula };

// "counter", "scalar", "distribution", "formula".
const char* kind_name(Kind kind);

// A block's name as one component of a statistic path: lower case, '_' for anything not a letter
// or digit ("DMA0_QM" -> "dma0_qm", "E_N" -> "e_n").
std::string path_component(std::string text);

// Formats a double the way every statistic output does: printf "%.6g" in the C locale, with
// -0 written as 0. Non-finite values give "nan", "inf" or "-inf" (JSON output writes null).
std::string format_double(double v);

// Common part of every statistic: its full name, unit and one-line description.
class Stat {
 public:
  virtual ~Stat() = default;
  Stat(const Stat&) = delete;
  Stat& operator=(const Stat&) = delete;

  const std::string& name() const { return name_; }
  const std::string& unit() const { return unit_; }
  const std::string& desc() const { return desc_; }
  virtual Kind kind() const = 0;
  // Zero the value (a no-op for formulas, which are derived from other state).
  virtual void reset() = 0;

 protected:
  Stat(std::string name, std::string unit, std::string desc)
      : name_(std::move(name)), unit_(std::move(unit)), desc_(std::move(desc)) {}

 private:
  std::string name_;
  std::string unit_;
  std::string desc_;
};

class Counter final : public Stat {
 public:
  Counter(std::string name, std::string unit, std::string desc)
      : Stat(std::move(name), std::move(unit), std::move(desc)) {}
  Kind kind() const override { return Kind::kCounter; }
  void reset() override { value_ = 0; }

  void inc() { ++value_; }
  void add(uint64_t n) { value_ += n; }
  Counter& operator++() { ++value_; return *this; }
  Counter& operator+=(uint64_t n) { value_ += n; return *this; }
  uint64_t value() const { return value_; }

 private:
  uint64_t value_ = 0;
};

class Scalar final : public Stat {
 public:
  Scalar(std::string name, std::string unit, std::string desc)
      : Stat(std::move(name), std::move(unit), std::move(desc)) {}
  Kind kind() const override { return Kind::kScalar; }
  void reset() override { value_ = 0.0; }

  void set(double v) { value_ = v; }
  void add(double v) { value_ += v; }
  Scalar& operator=(double v) { value_ = v; return *this; }
  double value() const { return value_; }

 private:
  double value_ = 0.0;
};

// A distribution of samples.
//
// count, min, max and mean are exact (the sum is kept in a double, so the mean of integer samples
// is exact while the sum stays below 2^53). Percentiles come from a fine log-linear histogram
// whose memory does not grow with the number of samples:
//   - each sample falls in a bucket holding every double with the same sign, exponent and top
//     kMantissaBits (8) mantissa bits, i.e. buckets are 2^-8 (0.39%) of their value wide;
//     0 shares its bucket only with subnormals below 2^-1014;
//   - each bucket keeps its sample count and the sum of its samples;
//   - percentile(p) uses the nearest-rank rule: the sample of rank ceil(p * count / 100) (at
//     least 1) in ascending order; it reports the mean of the samples in that sample's bucket.
//     So the result is exact whenever that bucket holds a single distinct value (always the case
//     for integers with |v| < 512), and otherwise within 0.39% of the exact nearest-rank sample.
//     percentile(0) is min and percentile(100) is max.
// With no samples, min, max, mean and every percentile are reported as 0.
// Samples must be finite: NaN or infinity throws std::invalid_argument naming the statistic.
class Distribution final : public Stat {
 public:
  static constexpr int kMantissaBits = 8;

  Distribution(std::string name, std::string unit, std::string desc)
      : Stat(std::move(name), std::move(unit), std::move(desc)) {}
  Kind kind() const override { return Kind::kDistribution; }
  void reset() override;

  // Record one sample of any arithmetic type (integers above 2^53 are rounded to a double).
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  void sample(T v) {
    record(static_cast<double>(v));
  }

  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  double min() const { return count_ ? min_ : 0.0; }
  double max() const { return count_ ? max_ : 0.0; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  // p in [0, 100]; outside throws std::invalid_argument.
  double percentile(double p) const;
  double p50() const { return percentile(50.0); }
  double p99() const { return percentile(99.0); }

 private:
  uint64_t count_ = 0;
  double sum_ = 0.0;
  double min_ = 0.0;
  double max_ = 0.0;
  struct Bucket {
    uint64_t count = 0;
    double sum = 0.0;
  };
  std::unordered_map<int64_t, Bucket> buckets_;  // bucket key (ordered like values) -> samples

  void record(double v);
};

// A statistic computed by a callback when the registry is written (or value() is called), from
// state the component already keeps. reset() leaves it alone; write the callback so it derives
// from values that are themselves reset (e.g. other registry statistics).
class Formula final : public Stat {
 public:
  Formula(std::string name, std::string unit, std::string desc, std::function<double()> fn)
      : Stat(std::move(name), std::move(unit), std::move(desc)), fn_(std::move(fn)) {}
  Kind kind() const override { return Kind::kFormula; }
  void reset() override {}

  double value() const { return fn_(); }

 private:
  std::function<double()> fn_;
};

class Registry;

// Registers statistics under a fixed name prefix: registry.scope("hbm.ch3").counter("activates",
// ...) registers "hbm.ch3.activates". Cheap to copy; holds a pointer to its registry, so do not
// use a Scope after its registry is moved or destroyed.
class Scope {
 public:
  Scope(Registry& registry, std::string prefix);

  Counter& counter(const std::string& name, const std::string& unit, const std::string& desc);
  Scalar& scalar(const std::string& name, const std::string& unit, const std::string& desc);
  Distribution& distribution(const std::string& name, const std::string& unit,
                             const std::string& desc);
  Formula& formula(const std::string& name, const std::string& unit, const std::string& desc,
                   std::function<double()> fn);
  Scope scope(const std::string& name) const;

  const std::string& prefix() const { return prefix_; }
  Registry& registry() const { return *registry_; }

 private:
  std::string full(const std::string& name) const;

  Registry* registry_;
  std::string prefix_;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  // Moving keeps every returned reference valid (statistics live on the heap).
  Registry(Registry&&) = default;
  Registry& operator=(Registry&&) = default;

  // Registration. Each returns a reference that stays valid for the registry's lifetime.
  // Throws std::invalid_argument (naming the statistic) when:
  //   - the name is not dot-separated segments of [a-z0-9_]+ (no empty segment);
  //   - the name is already registered;
  //   - the name is a group of an existing statistic or vice versa ("a.b" vs "a.b.c"), because
  //     a JSON node cannot be both a value and a group;
  //   - the unit is empty or contains whitespace or control characters
  //     (e.g. "count", "bytes", "ns", "cycles", "GB/s", "%");
  //   - the description contains a line break or other control character (it may be empty).
  // A rejected registration leaves the registry unchanged.
  Counter& counter(const std::string& name, const std::string& unit, const std::string& desc);
  Scalar& scalar(const std::string& name, const std::string& unit, const std::string& desc);
  Distribution& distribution(const std::string& name, const std::string& unit,
                             const std::string& desc);
  Formula& formula(const std::string& name, const std::string& unit, const std::string& desc,
                   std::function<double()> fn);

  Scope scope(const std::string& prefix) { return Scope(*this, prefix); }

  // Lookup by full name; nullptr when absent (or, for the typed forms, of another kind).
  const Stat* find(const std::string& name) const;
  Counter* find_counter(const std::string& name) const;
  Scalar* find_scalar(const std::string& name) const;
  Distribution* find_distribution(const std::string& name) const;
  Formula* find_formula(const std::string& name) const;

  std::size_t size() const { return stats_.size(); }
  // Every statistic's full name, sorted.
  std::vector<std::string> names() const;

  // Zero every counter, scalar and distribution (start of a measurement window).
  void reset();

  // Nested JSON object by name segments. Each leaf is an object:
  //   counter/scalar/formula: {"kind": ..., "value": ..., "unit": ..., "desc": ...}
  //   distribution: {"kind": "distribution", "count", "min", "max", "mean", "p50", "p99",
  //                  "unit", "desc"}
  // Keys in a fixed order, two-space indentation, non-finite doubles as null.
  void write_json(std::ostream& os) const;
  // One line per value, sorted by name: "<name> <value> <unit> # <desc>" (" # <desc>" omitted
  // when the description is empty). A distribution expands to <name>.count (unit "count"),
  // <name>.max, <name>.mean, <name>.min, <name>.p50 and <name>.p99.
  void write_text(std::ostream& os) const;
  // Write to a file; throw std::runtime_error naming the path when it cannot be written.
  void write_json_file(const std::string& path) const;
  void write_text_file(const std::string& path) const;

  // Throws std::invalid_argument naming the name if it is not a valid statistic name.
  static void validate_name(const std::string& name);

 private:
  template <typename T, typename... Args>
  T& add(const std::string& name, const std::string& unit, const std::string& desc,
         Args&&... args);

  std::map<std::string, std::unique_ptr<Stat>> stats_;
};

}  // namespace hpusim::stats
