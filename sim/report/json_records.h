// Writes benchmark and run results as a JSON array of flat objects (`--json FILE`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hpusim::report {

using JsonValue = std::variant<std::string, double, int64_t, uint64_t, bool>;

class JsonRecord {
 public:
  JsonRecord& add(std::string key, JsonValue value) {
    fields_.emplace_back(std::move(key), std::move(value));
    return *this;
  }
  const std::vector<std::pair<std::string, JsonValue>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, JsonValue>> fields_;
};

std::string json_escape(const std::string& text);
std::string to_json(const std::vector<JsonRecord>& records);
// Throws std::runtime_error naming the path if it cannot be written.
void write_json_records(const std::vector<JsonRecord>& records, const std::string& path);

}  // namespace hpusim::report
