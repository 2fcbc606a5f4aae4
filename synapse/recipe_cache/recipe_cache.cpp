#include "synapse/recipe_cache/recipe_cache.h"

#include <utility>

namespace hpusim::synapse::recipe_cache {

RecipeCache::RecipeCache(std::optional<DiskCacheConfig> disk, RecipeCacheLogger logger) : log_(std::move(logger)) {
  if (!disk) return;
  disk_.emplace(*disk, counters_, log_);
  worker_.emplace([this](const std::string& what) {
    ++counters_.disk_errors;
    log_("Recipe cache disk error: " + what);
  });
}

RecipeCache::~RecipeCache() { flush(); }

std::shared_ptr<const std::string> RecipeCache::lookup(RecipeKey key) {
  if (std::shared_ptr<const std::string> recipe = find_in_memory(key)) {
    ++counters_.memory_hits;
    return recipe;
  }
  if (disk_) {
    if (std::optional<std::string> payload = disk_->load(key)) {
      auto recipe = std::make_shared<const std::string>(std::move(*payload));
      put_in_memory(key, recipe);
      return recipe;
    }
  }
  ++counters_.misses;
  return nullptr;
}

void RecipeCache::store(RecipeKey key, std::string recipe) {
  ++counters_.stores;
  auto shared = std::make_shared<const std::string>(std::move(recipe));
  put_in_memory(key, shared);
  if (worker_) worker_->post([this, key, shared] { disk_->save(key, *shared); });
}

void RecipeCache::flush() {
  if (worker_) worker_->flush();
}

std::shared_ptr<const std::string> RecipeCache::find_in_memory(RecipeKey key) {
  std::lock_guard<std::mutex> hold(memory_mutex_);
  auto it = memory_.find(key);
  return it == memory_.end() ? nullptr : it->second;
}

void RecipeCache::put_in_memory(RecipeKey key, std::shared_ptr<const std::string> recipe) {
  std::lock_guard<std::mutex> hold(memory_mutex_);
  memory_[key] = std::move(recipe);
}

}  // namespace hpusim::synapse::recipe_cache
