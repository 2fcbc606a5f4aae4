// Types shared by the trace writer and the trace reader.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace hpusim::traces {

// A track uuid. The writer allocates them from a counter (1, 2, 3, ... in creation order), so the
// same sequence of calls always gives the same ids. 0 means "no track" (a root-level parent, or
// what a disabled writer hands out).
using TrackId = std::uint64_t;
inline constexpr TrackId kNoTrack = 0;

// A flow id links slices with arrows. 0 is never a valid flow id.
using FlowId = std::uint64_t;

using ArgValue = std::variant<std::int64_t, std::uint64_t, double, bool, std::string>;

// One named value attached to a slice or instant (a Perfetto debug annotation, a Chrome "args"
// entry). The constructors pick the alternative from the C++ type: any signed integer becomes
// int64_t, any unsigned integer uint64_t, floating point double, bool bool, text std::string.
struct Arg {
  std::string name;
  ArgValue value;

  Arg() = default;
  Arg(std::string n, ArgValue v) : name(std::move(n)), value(std::move(v)) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Arg(std::string n, T v) : name(std::move(n)) {
    if constexpr (std::is_signed_v<T>) {
      value = static_cast<std::int64_t>(v);
    } else {
      value = static_cast<std::uint64_t>(v);
    }
  }
  Arg(std::string n, double v) : name(std::move(n)), value(v) {}
  Arg(std::string n, bool v) : name(std::move(n)), value(v) {}
  Arg(std::string n, const char* v) : name(std::move(n)), value(std::string(v)) {}
  Arg(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}

  bool operator==(const Arg& other) const {
    return name == other.name && value == other.value;
  }
  bool operator!=(const Arg& other) const { return !(*this == other); }
};

enum class TrackKind { kProcess, kThread, kNamed, kCounter };

inline const char* to_string(TrackKind kind) {
  switch (kind) {
    case TrackKind::kProcess: return "process";
    case TrackKind::kThread: return "thread";
    case TrackKind::kNamed: return "named";
    case TrackKind::kCounter: return "counter";
  }
  return "unknown";
}

}  // namespace hpusim::traces
