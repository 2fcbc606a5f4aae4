// "0x..." text of a number, lower-case, for error messages and logs.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hpusim {

inline std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace hpusim
