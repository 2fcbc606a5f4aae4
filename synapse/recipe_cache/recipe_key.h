// Recipe keys and the names of the cache directory's files.
//
// A recipe's key is the 64-bit structural hash of its graph, computed by the caller; its id is
// the key as 16 lower-case hex digits. In the cache directory a recipe lives in "<id>.recipe";
// while it is written it lives in ".<id>.<pid>.tmp", which is never taken for a recipe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hpusim::synapse::recipe_cache {

using RecipeKey = uint64_t;

std::string recipe_id(RecipeKey key);                 // "00000000deadbeef"
std::string recipe_file_name(RecipeKey key);          // "00000000deadbeef.recipe"
std::string temp_file_name(RecipeKey key, long pid);  // ".00000000deadbeef.1234.tmp"

// The key of a recipe file name, or nullopt for any other name (temporary files included).
std::optional<RecipeKey> parse_recipe_file_name(std::string_view name);
// The key of a temporary file name, or nullopt for any other name.
std::optional<RecipeKey> parse_temp_file_name(std::string_view name);

inline constexpr const char* kEvictionLockFileName = "eviction.lock";

}  // namespace hpusim::synapse::recipe_cache
