// loops.hpp — the loops of numerics.hpp, included by each path's file.
// Internal linkage: every file compiles its own copy for its instruction
// set, so no copy built for a wider set can stand in for another at link
// time.
#pragma once

#include <cmath>

#include "numerics.hpp"
#include "umlos_philox.h"

namespace umlos::numerics {
namespace {

// One element of the Adam step, in numerics.hpp's order of operations:
// m_in, v_in the moments before, m, v after. d1, d2: 1 - b1_pow, 1 - b2_pow.
inline void adam_element(double g, double m_in, double v_in, double& m, double& v, double& theta,
                         const AdamCoefficients& a, double d1, double d2) {
  m = a.b1 * m_in + (1.0 - a.b1) * g;
  v = a.b2 * v_in + (1.0 - a.b2) * (g * g);
  const double mhat = m / d1, vhat = v / d2;
  theta -= a.lr * (mhat / (__builtin_sqrt(vhat) + a.eps) + a.wd * theta);
}

// No element depends on another, so the compiler vectorises the loops to
// the file's instruction set; see numerics.hpp for why the bits do not
// change. The loops vectorise only where the pointers are known not to
// alias: the callers' own parameters are __restrict too (see
// paths_avx512.cpp).
[[maybe_unused]] inline void adam_loop(size_t n, const double* __restrict g, double* __restrict m, double* __restrict v,
                                       double* __restrict theta, const AdamCoefficients& a) {
  const double d1 = 1.0 - a.b1_pow, d2 = 1.0 - a.b2_pow;
  for (size_t k = 0; k < n; ++k) adam_element(g[k], m[k], v[k], m[k], v[k], theta[k], a, d1, d2);
}

// adam_loop with the moments read from m_in, v_in and written to m, v.
[[maybe_unused]] inline void adam_loop_to(size_t n, const double* __restrict g, const double* __restrict m_in,
                                          const double* __restrict v_in, double* __restrict m, double* __restrict v,
                                          double* __restrict theta, const AdamCoefficients& a) {
  const double d1 = 1.0 - a.b1_pow, d2 = 1.0 - a.b2_pow;
  for (size_t k = 0; k < n; ++k) adam_element(g[k], m_in[k], v_in[k], m[k], v[k], theta[k], a, d1, d2);
}

// The deterministic log and sine/cosine are written with selects, not
// branches, so this loop vectorises too.
[[maybe_unused]] inline void box_muller_loop(size_t n, const double* __restrict u1, const double* __restrict u2,
                                             double* __restrict eps) {
  for (size_t k = 0; k < n; ++k) {
    double s = 0, c = 0;
    umlos_det_sincos_2pi(u2[k], &s, &c);
    eps[k] = __builtin_sqrt(-2.0 * umlos_det_log(u1[k])) * c;
  }
}

}  // namespace
}  // namespace umlos::numerics
