// gelu_avx512.cpp — gelu.hpp's loops for AVX-512 (compiled with -mavx512f;
// called only where the CPU has it), on SLEEF's deterministic 16- and
// 8-lane erf and exp.
#include <immintrin.h>
#include <sleef.h>

#include "gelu.hpp"

namespace cpu_driver {
namespace {

struct F32 {
  static constexpr int64_t width = 16;
  static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  static __m512 set1(float v) { return _mm512_set1_ps(v); }
  static __m512 add(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
  static __m512 mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
  static __m512 erf(__m512 v) { return Sleef_cinz_erff16_u10avx512fnofma(v); }
  static __m512 exp(__m512 v) { return Sleef_cinz_expf16_u10avx512fnofma(v); }
};
struct F64 {
  static constexpr int64_t width = 8;
  static __m512d load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
  static __m512d set1(double v) { return _mm512_set1_pd(v); }
  static __m512d add(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
  static __m512d mul(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
  static __m512d erf(__m512d v) { return Sleef_cinz_erfd8_u10avx512fnofma(v); }
  static __m512d exp(__m512d v) { return Sleef_cinz_expd8_u10avx512fnofma(v); }
};

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
