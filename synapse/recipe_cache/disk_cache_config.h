// The disk cache's configuration, PT_HPU_RECIPE_CACHE_CONFIG=<dir>,<clear at start>,<size MB>:
//
//   PT_HPU_RECIPE_CACHE_CONFIG=recipe_cache/,true,1024
//
// keeps recipes in recipe_cache/, removes the recipes already there when the cache is created,
// and keeps the directory's recipe files under 1024 MB (1024 * 2^20 bytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace hpusim::synapse::recipe_cache {

inline constexpr const char* kRecipeCacheConfigVariable = "PT_HPU_RECIPE_CACHE_CONFIG";

struct DiskCacheConfig {
  std::filesystem::path directory;
  bool clear_at_start = false;
  uint64_t size_limit_bytes = 0;
};

// Parses "<dir>,<true|false>,<size MB>" (spaces around a field are ignored, true / false in any
// case). Throws std::invalid_argument naming the text and the bad field: a missing or extra
// field, an empty directory, a flag that is not true or false, a size that is not a positive
// integer number of MB (or does not fit 64 bits in bytes).
DiskCacheConfig parse_disk_cache_config(std::string_view text);

// The configuration in PT_HPU_RECIPE_CACHE_CONFIG; nullopt when it is unset or empty (no disk
// cache). Throws std::invalid_argument, naming the variable, when it does not parse.
std::optional<DiskCacheConfig> disk_cache_config_from_environment();

// The most the directory's recipe files may hold: 0.99 x the limit, rounded down.
uint64_t disk_cache_budget_bytes(uint64_t size_limit_bytes);

}  // namespace hpusim::synapse::recipe_cache
