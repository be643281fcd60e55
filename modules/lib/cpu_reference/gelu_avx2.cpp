// gelu_avx2.cpp — gelu.hpp's loops for the AVX2 path (compiled with -mavx2 -mfma;
// called only where the CPU has both), on SLEEF's deterministic 8- and
// 4-lane erf and exp (AVX instructions).
#include <immintrin.h>
#include <sleef.h>

#include "gelu.hpp"

namespace cpu_driver {
namespace {

UMLOS_GELU_OPS(F32, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_add_ps, _mm256_mul_ps,
               Sleef_cinz_erff8_u10avx, Sleef_cinz_expf8_u10avx)
UMLOS_GELU_OPS(F64, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_add_pd, _mm256_mul_pd,
               Sleef_cinz_erfd4_u10avx, Sleef_cinz_expd4_u10avx)

namespace f32 {
UMLOS_GELU_LOOPS(F32, float)
}
namespace f64 {
UMLOS_GELU_LOOPS(F64, double)
}

}  // namespace

void gelu_values_avx2(const float* x, float* y, int64_t n) { f32::gelu_values_loop(x, y, n); }
void gelu_values_avx2(const double* x, double* y, int64_t n) { f64::gelu_values_loop(x, y, n); }
void gelu_derivative_times_avx2(const float* x, const float* g, float* dx, int64_t n) {
  f32::gelu_derivative_loop(x, g, dx, n);
}
void gelu_derivative_times_avx2(const double* x, const double* g, double* dx, int64_t n) {
  f64::gelu_derivative_loop(x, g, dx, n);
}

}  // namespace cpu_driver
