#include "synapse/recipe_cache/recipe_key.h"

#include <cstdio>

namespace hpusim::synapse::recipe_cache {

namespace {

constexpr std::string_view kRecipeSuffix = ".recipe";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr size_t kIdDigits = 16;

std::optional<RecipeKey> parse_id(std::string_view digits) {
  if (digits.size() != kIdDigits) return std::nullopt;
  RecipeKey key = 0;
  for (char c : digits) {
    unsigned value;
    if (c >= '0' && c <= '9') value = c - '0';
    else if (c >= 'a' && c <= 'f') value = c - 'a' + 10;
    else return std::nullopt;   // upper case never comes from recipe_id
    key = key << 4 | value;
  }
  return key;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::string recipe_id(RecipeKey key) {
  char text[kIdDigits + 1];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(key));
  return text;
}

std::string recipe_file_name(RecipeKey key) { return recipe_id(key) + std::string(kRecipeSuffix); }

std::string temp_file_name(RecipeKey key, long pid) {
  return "." + recipe_id(key) + "." + std::to_string(pid) + std::string(kTempSuffix);
}

std::optional<RecipeKey> parse_recipe_file_name(std::string_view name) {
  if (name.size() != kIdDigits + kRecipeSuffix.size() || !ends_with(name, kRecipeSuffix)) return std::nullopt;
  return parse_id(name.substr(0, kIdDigits));
}

std::optional<RecipeKey> parse_temp_file_name(std::string_view name) {
  // "." id "." pid ".tmp"
  if (name.size() < 1 + kIdDigits + 1 + 1 + kTempSuffix.size() || name[0] != '.' || name[1 + kIdDigits] != '.' ||
      !ends_with(name, kTempSuffix))
    return std::nullopt;
  std::string_view pid = name.substr(2 + kIdDigits, name.size() - 2 - kIdDigits - kTempSuffix.size());
  for (char c : pid)
    if (c < '0' || c > '9') return std::nullopt;
  return parse_id(name.substr(1, kIdDigits));
}

}  // namespace hpusim::synapse::recipe_cache
