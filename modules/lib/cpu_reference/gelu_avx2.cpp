// gelu_avx2.cpp — gelu.hpp's loops for the AVX2 path (compiled with -mavx2 -mfma;
// called only where the CPU has both), on SLEEF's deterministic 8- and
// 4-lane erf and exp (AVX instructions).
#include <immintrin.h>
#include <sleef.h>

#include "gelu.hpp"

namespace cpu_driver {
namespace {

struct F32 {
  static constexpr int64_t width = 8;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  static __m256 set1(float v) { return _mm256_set1_ps(v); }
  static __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
  static __m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
  static __m256 erf(__m256 v) { return Sleef_cinz_erff8_u10avx(v); }
  static __m256 exp(__m256 v) { return Sleef_cinz_expf8_u10avx(v); }
};
struct F64 {
  static constexpr int64_t width = 4;
  static __m256d load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
  static __m256d set1(double v) { return _mm256_set1_pd(v); }
  static __m256d add(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
  static __m256d mul(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
  static __m256d erf(__m256d v) { return Sleef_cinz_erfd4_u10avx(v); }
  static __m256d exp(__m256d v) { return Sleef_cinz_expd4_u10avx(v); }
};

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
