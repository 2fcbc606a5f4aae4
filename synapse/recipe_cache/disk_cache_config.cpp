#include "synapse/recipe_cache/disk_cache_config.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpusim::synapse::recipe_cache {

namespace {

constexpr const char* kFormat = "<dir>,<clear at start true|false>,<size MB>";
constexpr uint64_t kBytesPerMb = uint64_t{1} << 20;

std::string_view trim(std::string_view text) {
  const char* blanks = " \t";
  size_t first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  size_t last = text.find_last_not_of(blanks);
  return text.substr(first, last - first + 1);
}

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    fields.push_back(trim(text.substr(start, comma - start)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (c != b[i]) return false;
  }
  return true;
}

}  // namespace

DiskCacheConfig parse_disk_cache_config(std::string_view text) {
  auto fail = [&](const std::string& problem) {
    throw std::invalid_argument("recipe cache config '" + std::string(text) + "': " + problem);
  };
  std::vector<std::string_view> fields = split_fields(text);
  if (fields.size() != 3)
    fail("expected 3 comma-separated fields " + std::string(kFormat) + ", got " + std::to_string(fields.size()));

  DiskCacheConfig config;
  if (fields[0].empty()) fail("the directory (field 1) is empty");
  config.directory = std::string(fields[0]);

  if (equals_ignoring_case(fields[1], "true")) config.clear_at_start = true;
  else if (equals_ignoring_case(fields[1], "false")) config.clear_at_start = false;
  else fail("clear at start (field 2) must be true or false, got '" + std::string(fields[1]) + "'");

  std::string_view size = fields[2];
  auto bad_size = [&] { fail("size MB (field 3) must be a positive integer, got '" + std::string(size) + "'"); };
  if (size.empty()) bad_size();
  uint64_t megabytes = 0;
  for (char c : size) {
    if (c < '0' || c > '9') bad_size();
    unsigned digit = c - '0';
    if (megabytes > (UINT64_MAX / kBytesPerMb - digit) / 10)
      fail("size MB (field 3) '" + std::string(size) + "' is too large");
    megabytes = megabytes * 10 + digit;
  }
  if (megabytes == 0) bad_size();
  config.size_limit_bytes = megabytes * kBytesPerMb;
  return config;
}

std::optional<DiskCacheConfig> disk_cache_config_from_environment() {
  const char* value = std::getenv(kRecipeCacheConfigVariable);
  if (value == nullptr || *value == '\0') return std::nullopt;
  try {
    return parse_disk_cache_config(value);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(kRecipeCacheConfigVariable) + ": " + e.what());
  }
}

uint64_t disk_cache_budget_bytes(uint64_t size_limit_bytes) {
  // floor(limit * 99 / 100) without overflowing 64 bits.
  return size_limit_bytes / 100 * 99 + size_limit_bytes % 100 * 99 / 100;
}

}  // namespace hpusim::synapse::recipe_cache
