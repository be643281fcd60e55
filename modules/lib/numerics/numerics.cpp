// numerics.cpp — see numerics.hpp: the path choice, the sum of squares
// and the baseline loops.
#include "numerics.hpp"

#include <algorithm>

#include "loops.hpp"
#include "umlos_sum.h"

namespace umlos::numerics {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
    default:
      return "baseline";
  }
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::avx2:
      return __builtin_cpu_supports("avx2");
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f");
    default:
      return true;
  }
}

Isa isa_best() {
  static const Isa best = isa_supported(Isa::avx512) ? Isa::avx512
                          : isa_supported(Isa::avx2) ? Isa::avx2
                                                     : Isa::baseline;
  return best;
}

void chunk_sums_of_squares(const double* x, size_t chunks, double* sums) {
  chunk_sums(
      chunks * UMLOS_SUM_CHUNK, 0, chunks, [x](size_t i) { return x[i] * x[i]; }, sums);
}

// The chunk s has open is finished value by value; the whole chunks after
// it go through chunk_sums_of_squares, their sums folded into the total in
// order; what is left opens the next chunk.
void canonical_add_squares(umlos_canonical_sum& s, const double* x, size_t n) {
  constexpr size_t C = UMLOS_SUM_CHUNK;
  size_t i = 0;
  for (; i < n && s.count > 0; ++i) umlos_canonical_sum_add(&s, x[i] * x[i]);
  double sums[64];
  while (n - i >= C) {
    const size_t chunks = std::min<size_t>((n - i) / C, 64);
    chunk_sums_of_squares(x + i, chunks, sums);
    for (size_t c = 0; c < chunks; ++c) s.total += sums[c];
    i += chunks * C;
  }
  for (; i < n; ++i) umlos_canonical_sum_add(&s, x[i] * x[i]);
}

double canonical_sum_of_squares(const double* x, size_t n) {
  umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT;
  canonical_add_squares(s, x, n);
  return umlos_canonical_sum_result(&s);
}

void adam_step(Isa isa, size_t n, const double* g, double* m, double* v, double* theta, const AdamCoefficients& a) {
  if (isa == Isa::avx512 && isa_supported(Isa::avx512)) return adam_step_avx512(n, g, m, v, theta, a);
  if (isa == Isa::avx2 && isa_supported(Isa::avx2)) return adam_step_avx2(n, g, m, v, theta, a);
  adam_loop(n, g, m, v, theta, a);
}

// __restrict as in paths_avx2.cpp and paths_avx512.cpp, so that the
// baseline loop vectorises for SSE2 too.
void adam_step_to(Isa isa, size_t n, const double* __restrict g, const double* __restrict m_in,
                  const double* __restrict v_in, double* __restrict m, double* __restrict v, double* __restrict theta,
                  const AdamCoefficients& a) {
  if (isa == Isa::avx512 && isa_supported(Isa::avx512)) return adam_step_to_avx512(n, g, m_in, v_in, m, v, theta, a);
  if (isa == Isa::avx2 && isa_supported(Isa::avx2)) return adam_step_to_avx2(n, g, m_in, v_in, m, v, theta, a);
  adam_loop_to(n, g, m_in, v_in, m, v, theta, a);
}

void box_muller(Isa isa, size_t n, const double* u1, const double* u2, double* eps) {
  if (isa == Isa::avx512 && isa_supported(Isa::avx512)) return box_muller_avx512(n, u1, u2, eps);
  if (isa == Isa::avx2 && isa_supported(Isa::avx2)) return box_muller_avx2(n, u1, u2, eps);
  box_muller_loop(n, u1, u2, eps);
}

}  // namespace umlos::numerics
