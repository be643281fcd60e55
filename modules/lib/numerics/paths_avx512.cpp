// paths_avx512.cpp — the loops of numerics.hpp compiled for AVX512; called
// only where the CPU has it.
#include "loops.hpp"

namespace umlos::numerics {

void adam_step_avx512(size_t n, const double* g, double* m, double* v, double* theta, const AdamCoefficients& a) {
  adam_loop(n, g, m, v, theta, a);
}

// __restrict here as in the loop: once inlined, the loop's own qualifiers
// were lost, and six arrays are more pairs than GCC versions a loop for.
void adam_step_to_avx512(size_t n, const double* __restrict g, const double* __restrict m_in,
                         const double* __restrict v_in, double* __restrict m, double* __restrict v,
                         double* __restrict theta, const AdamCoefficients& a) {
  adam_loop_to(n, g, m_in, v_in, m, v, theta, a);
}

void box_muller_avx512(size_t n, const double* u1, const double* u2, double* eps) { box_muller_loop(n, u1, u2, eps); }

}  // namespace umlos::numerics
