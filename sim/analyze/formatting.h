// Numbers as the reports print them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hpusim::analyze {

inline std::string decimals(double value, int places) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", places, value);
  return text;
}
inline std::string milliseconds(uint64_t ns) { return decimals(static_cast<double>(ns) / 1e6, 3); }
inline std::string percent(double fraction, int places = 0) { return decimals(100.0 * fraction, places) + "%"; }

}  // namespace hpusim::analyze
