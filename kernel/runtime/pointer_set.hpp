// pointer_set.hpp — a set of pointers for the per-call handle checks
// (call_context.hpp): open addressing with linear probing in one array, so
// an insert allocates nothing once the array has grown, and clear() keeps
// the array for the next call. Every service call of an operator looks its
// handles up here; std::unordered_set allocated a node per insert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace umlos {

template <class T>
class PointerSet {
 public:
  // Adds p (not null); false when it was there already.
  bool insert(const T* p) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const T** at = find_slot(slots_, p);
    if (*at == p) return false;
    *at = p;
    ++size_;
    return true;
  }
  size_t count(const T* p) const {
    if (size_ == 0 || p == nullptr) return 0;
    return *find_slot(slots_, p) == p ? 1 : 0;
  }
  size_t size() const { return size_; }
  void clear() {
    if (size_ == 0) return;
    for (const T*& s : slots_) s = nullptr;
    size_ = 0;
  }

 private:
  // The slot holding p, or the empty slot where it would go. Capacity is a
  // power of two and at most half full, so the probe ends.
  template <class Slots>
  static auto find_slot(Slots& slots, const T* p) -> decltype(slots.data()) {
    const size_t mask = slots.size() - 1;
    size_t i = hash(p) & mask;
    while (slots[i] != nullptr && slots[i] != p) i = (i + 1) & mask;
    return slots.data() + i;
  }
  static size_t hash(const T* p) {
    // Fibonacci hashing of the address; the low bits are alignment.
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 32);
  }
  void grow() {
    std::vector<const T*> bigger(slots_.empty() ? 64 : 2 * slots_.size(), nullptr);
    for (const T* s : slots_)
      if (s) *find_slot(bigger, s) = s;
    slots_.swap(bigger);
  }

  std::vector<const T*> slots_;
  size_t size_ = 0;
};

}  // namespace umlos
