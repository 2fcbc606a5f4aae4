// Sets of time intervals [start, end) in ns: what the analyser measures busy and idle time with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hpusim::analyze {

struct Interval {
  uint64_t start = 0, end = 0;
};

// Sorted, disjoint intervals covering the same time as `in`.
inline std::vector<Interval> merged(std::vector<Interval> in) {
  std::sort(in.begin(), in.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& i : in) {
    if (i.end <= i.start) continue;
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// Time of the merged set `set` inside [from, to).
inline uint64_t covered(const std::vector<Interval>& set, uint64_t from, uint64_t to) {
  uint64_t total = 0;
  for (const Interval& i : set) {
    const uint64_t s = std::max(i.start, from), e = std::min(i.end, to);
    if (e > s) total += e - s;
  }
  return total;
}

// Time inside [from, to) covered by neither merged set.
inline uint64_t uncovered_by_either(const std::vector<Interval>& a, const std::vector<Interval>& b, uint64_t from,
                                    uint64_t to) {
  std::vector<Interval> both = a;
  both.insert(both.end(), b.begin(), b.end());
  const uint64_t span = to > from ? to - from : 0;
  return span - covered(merged(std::move(both)), from, to);
}

}  // namespace hpusim::analyze
