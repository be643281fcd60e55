// gelu_avx512.cpp — gelu.hpp's loops for AVX-512 (compiled with -mavx512f;
// called only where the CPU has it), on SLEEF's deterministic 16- and
// 8-lane erf and exp.
#include <immintrin.h>
#include <sleef.h>

#include "gelu.hpp"

namespace cpu_driver {
namespace {

UMLOS_GELU_OPS(F32, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_add_ps, _mm512_mul_ps,
               Sleef_cinz_erff16_u10avx512fnofma, Sleef_cinz_expf16_u10avx512fnofma)
UMLOS_GELU_OPS(F64, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_add_pd, _mm512_mul_pd,
               Sleef_cinz_erfd8_u10avx512fnofma, Sleef_cinz_expd8_u10avx512fnofma)

namespace f32 {
UMLOS_GELU_LOOPS(F32, float)
}
namespace f64 {
UMLOS_GELU_LOOPS(F64, double)
}

}  // namespace

void gelu_values_avx512(const float* x, float* y, int64_t n) { f32::gelu_values_loop(x, y, n); }
void gelu_values_avx512(const double* x, double* y, int64_t n) { f64::gelu_values_loop(x, y, n); }
void gelu_derivative_times_avx512(const float* x, const float* g, float* dx, int64_t n) {
  f32::gelu_derivative_loop(x, g, dx, n);
}
void gelu_derivative_times_avx512(const double* x, const double* g, double* dx, int64_t n) {
  f64::gelu_derivative_loop(x, g, dx, n);
}

}  // namespace cpu_driver
