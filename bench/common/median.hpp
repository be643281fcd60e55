// median.hpp — the median of a bench's timings (the upper middle one of an
// even count): what the bench programs report of repeated runs on a shared
// machine, where the mean follows a single disturbed run. Header-only.
#pragma once

#include <algorithm>
#include <vector>

namespace umlos_bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace umlos_bench
