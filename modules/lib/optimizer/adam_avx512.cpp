// adam_avx512.cpp — the Adam step compiled for AVX512 (optimizer.hpp); called
// only where the CPU has it.
#include "adam_loop.hpp"

namespace umlos::optimizer {

void adam_step_avx512(size_t n, const double* g, double* m, double* v, double* theta, const AdamCoefficients& a) {
  adam_loop(n, g, m, v, theta, a);
}

}  // namespace umlos::optimizer
