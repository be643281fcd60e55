// buffer_cache.cpp — see buffer_cache.hpp.
#include "buffer_cache.hpp"

#include <cstdlib>
#include <cstring>
#include <iterator>

namespace cpu_driver {

BufferCache::~BufferCache() { close(); }

void* BufferCache::take(uint64_t rounded, uint64_t align, bool zero) {
  void* p = nullptr;
  if (rounded >= kMinCached) {
    std::lock_guard<std::mutex> lock(mu_);
    // The block freed last (a multimap keeps equal keys in insertion
    // order): its lines are the likeliest to be in the cache still.
    const auto range = free_.equal_range({rounded, align});
    if (range.first != range.second) {
      const auto it = std::prev(range.second);
      p = it->second;
      free_.erase(it);
      held_ -= rounded;
    }
  }
  if (!p) p = std::aligned_alloc(align, rounded);
  if (p && zero) std::memset(p, 0, rounded);
  return p;
}

void BufferCache::give(void* p, uint64_t rounded, uint64_t align) {
  if (!p) return;
  if (rounded >= kMinCached) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_ && held_ + rounded <= kMaxHeld) {
      free_.emplace(std::make_pair(rounded, align), p);
      held_ += rounded;
      return;
    }
  }
  std::free(p);
}

void BufferCache::close() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, p] : free_) std::free(p);
  free_.clear();
  held_ = 0;
  closed_ = true;
}

uint64_t BufferCache::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

}  // namespace cpu_driver
