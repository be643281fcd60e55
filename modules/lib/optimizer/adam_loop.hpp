// adam_loop.hpp — the Adam step's loop, included by each path's file
// (optimizer.hpp). Internal linkage: every file compiles its own copy for
// its instruction set, so no copy built for a wider set can stand in for
// another at link time.
#pragma once

#include <cmath>

#include "optimizer.hpp"

namespace umlos::optimizer {
namespace {

// No element depends on another, so the compiler vectorises the loop to the
// file's instruction set; see optimizer.hpp for why the bits do not change.
[[maybe_unused]] inline void adam_loop(size_t n, const double* __restrict g, double* __restrict m, double* __restrict v,
                                       double* __restrict theta, const AdamCoefficients& a) {
  const double c1 = 1.0 - a.b1, c2 = 1.0 - a.b2, d1 = 1.0 - a.b1_pow, d2 = 1.0 - a.b2_pow;
  for (size_t k = 0; k < n; ++k) {
    m[k] = a.b1 * m[k] + c1 * g[k];
    v[k] = a.b2 * v[k] + c2 * (g[k] * g[k]);
    const double mhat = m[k] / d1, vhat = v[k] / d2;
    theta[k] -= a.lr * (mhat / (__builtin_sqrt(vhat) + a.eps) + a.wd * theta[k]);
  }
}

}  // namespace
}  // namespace umlos::optimizer
