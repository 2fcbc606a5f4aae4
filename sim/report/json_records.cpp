#include "sim/report/json_records.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace hpusim::report {

std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out;
}

namespace {

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::general, 10);
  return std::string(buffer, result.ptr);
}

std::string value_text(const JsonValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return "\"" + json_escape(*s) + "\"";
  if (const auto* d = std::get_if<double>(&value)) return number(*d);
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* u = std::get_if<uint64_t>(&value)) return std::to_string(*u);
  return std::get<bool>(value) ? "true" : "false";
}

}  // namespace

std::string to_json(const std::vector<JsonRecord>& records) {
  std::string out = "[\n";
  for (size_t r = 0; r < records.size(); ++r) {
    out += "  {";
    const auto& fields = records[r].fields();
    for (size_t f = 0; f < fields.size(); ++f) {
      out += (f ? ", " : "") + ("\"" + json_escape(fields[f].first) + "\": ") + value_text(fields[f].second);
    }
    out += r + 1 < records.size() ? "},\n" : "}\n";
  }
  out += "]\n";
  return out;
}

void write_json_records(const std::vector<JsonRecord>& records, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("cannot write JSON results to '" + path + "'");
  file << to_json(records);
  if (!file.flush()) throw std::runtime_error("cannot write JSON results to '" + path + "'");
}

}  // namespace hpusim::report
