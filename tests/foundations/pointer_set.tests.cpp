// pointer_set.tests.cpp — the per-call handle set (kernel/runtime/
// pointer_set.hpp) against std::set on the same inserts and lookups.
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <vector>

#include "pointer_set.hpp"

TEST_CASE("The handle set holds exactly what std::set holds through growth, duplicates and clear", "[foundations]") {
  std::vector<long> storage(5000);
  std::mt19937_64 rng(42);
  umlos::PointerSet<long> set;
  std::set<const long*> want;
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 4000; ++k) {
      const long* p = &storage[rng() % storage.size()];
      CHECK(set.insert(p) == want.insert(p).second);
    }
    CHECK(set.size() == want.size());
    for (const long& x : storage) CHECK(set.count(&x) == want.count(&x));
    CHECK(set.count(nullptr) == 0);
    set.clear();
    want.clear();
    CHECK(set.size() == 0);
    CHECK(set.count(&storage[0]) == 0);
  }
}
