// buffer_cache.hpp — cpu_driver's buffers: aligned host memory, zeroed, and
// the large ones kept for reuse when freed.
//
// A training step frees and allocates the same large buffers every step
// (activations, gradients, temporaries). Handed back to the C library, a
// large block is unmapped and the next allocation of it faults every page
// in again, zeroed by the operating system and then once more by us: on a
// GPT-2-block step that was a sixth of the time. The cache keeps freed
// blocks of at least kMinCached bytes, up to kMaxHeld bytes in all, and
// hands one back for a request of exactly its size and alignment, zeroed
// again. Which block a buffer gets never changes a result.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace cpu_driver {

class BufferCache {
 public:
  static constexpr uint64_t kMinCached = uint64_t(64) << 10;
  static constexpr uint64_t kMaxHeld = uint64_t(512) << 20;

  ~BufferCache();
  // `rounded` bytes aligned to `align` (a power of two, rounded a multiple
  // of it), every byte 0 unless `zero` is false (then whatever the block
  // held); nullptr when memory is exhausted.
  void* take(uint64_t rounded, uint64_t align, bool zero = true);
  // Gives a block from take() back: kept for reuse, or freed.
  void give(void* p, uint64_t rounded, uint64_t align);
  // Frees every kept block and keeps none from now on (the driver instance
  // is going away; buffers may still be freed after it).
  void close();
  uint64_t held() const;

 private:
  mutable std::mutex mu_;
  std::multimap<std::pair<uint64_t, uint64_t>, void*> free_;  // (bytes, alignment) -> blocks
  uint64_t held_ = 0;
  bool closed_ = false;
};

}  // namespace cpu_driver
