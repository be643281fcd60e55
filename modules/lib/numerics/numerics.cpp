// numerics.cpp — see numerics.hpp: the path choice, the sum of squares
// and the baseline loops.
#include "numerics.hpp"

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

// Four chunks at a time, each its own left fold from +0.0 (four independent
// chains of additions instead of one), then their sums into the total in
// ascending chunk order: the canonical sum's bits, about four times sooner.
double canonical_sum_of_squares(const double* x, size_t n) {
  constexpr size_t C = UMLOS_SUM_CHUNK;
  const size_t chunks = n / C;
  double total = 0.0;
  size_t c = 0;
  for (; c + 4 <= chunks; c += 4) {
    const double *x0 = x + c * C, *x1 = x0 + C, *x2 = x1 + C, *x3 = x2 + C;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (size_t i = 0; i < C; ++i) {
      s0 += x0[i] * x0[i];
      s1 += x1[i] * x1[i];
      s2 += x2[i] * x2[i];
      s3 += x3[i] * x3[i];
    }
    total += s0;
    total += s1;
    total += s2;
    total += s3;
  }
  for (; c < chunks; ++c) {
    double s = 0.0;
    for (size_t i = c * C; i < (c + 1) * C; ++i) s += x[i] * x[i];
    total += s;
  }
  // The last, partial chunk counts only when it holds a value.
  if (chunks * C < n) {
    double s = 0.0;
    for (size_t i = chunks * C; i < n; ++i) s += x[i] * x[i];
    total += s;
  }
  return total;
}

void adam_step(Isa isa, size_t n, const double* g, double* m, double* v, double* theta, const AdamCoefficients& a) {
  if (isa == Isa::avx512 && isa_supported(Isa::avx512)) return adam_step_avx512(n, g, m, v, theta, a);
  if (isa == Isa::avx2 && isa_supported(Isa::avx2)) return adam_step_avx2(n, g, m, v, theta, a);
  adam_loop(n, g, m, v, theta, a);
}

void box_muller(Isa isa, size_t n, const double* u1, const double* u2, double* eps) {
  if (isa == Isa::avx512 && isa_supported(Isa::avx512)) return box_muller_avx512(n, u1, u2, eps);
  if (isa == Isa::avx2 && isa_supported(Isa::avx2)) return box_muller_avx2(n, u1, u2, eps);
  box_muller_loop(n, u1, u2, eps);
}

}  // namespace umlos::numerics
