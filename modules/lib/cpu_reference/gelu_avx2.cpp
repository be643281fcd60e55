// gelu_avx2.cpp — gelu.hpp's loops for the AVX2 path (compiled with -mavx2 -mfma;
// called only where the CPU has both): binary32 erf on erf32.hpp in two
// halves of four binary64 lanes, the rest on SLEEF's deterministic 8- and
// 4-lane erf and exp (AVX instructions).
#include <immintrin.h>
#include <sleef.h>

#include "erf32.hpp"
#include "erf64.hpp"
#include "gelu.hpp"

namespace cpu_driver {
namespace {

// erf32.hpp's binary64 operations on four lanes; a mask is a vector of
// all-ones or all-zeros lanes.
struct Avx2Binary64 {
  using V = __m256d;
  using M = __m256d;
  static V set1(double v) { return _mm256_set1_pd(v); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V abs(V a) { return _mm256_andnot_pd(sign(), a); }
  static V neg(V a) { return _mm256_xor_pd(a, sign()); }
  static M lt(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
  static V select(M m, V a, V b) { return _mm256_blendv_pd(b, a, m); }
  static bool all(M m) { return _mm256_movemask_pd(m) == 0xF; }
  static bool any(M m) { return _mm256_movemask_pd(m) != 0; }
  static M not_nan(V a) { return _mm256_cmp_pd(a, a, _CMP_ORD_Q); }
  static V exp(V a) { return Sleef_cinz_expd4_u10avx(a); }
  static V copysign(V a, V b) { return _mm256_or_pd(_mm256_andnot_pd(sign(), a), _mm256_and_pd(sign(), b)); }
  static V sign() { return _mm256_set1_pd(-0.0); }
};

__m256 erf_f32(__m256 x) {
  const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
  const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
  const __m128 rlo = _mm256_cvtpd_ps(erf32::erf_binary64<Avx2Binary64>(lo));
  const __m128 rhi = _mm256_cvtpd_ps(erf32::erf_binary64<Avx2Binary64>(hi));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(rlo), rhi, 1);
}

__m256d erf_f64(__m256d x) { return erf64::erf_binary64<Avx2Binary64>(x); }

UMLOS_GELU_OPS(F32, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_add_ps, _mm256_mul_ps,
               erf_f32, Sleef_cinz_expf8_u10avx)
UMLOS_GELU_OPS(F64, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_add_pd, _mm256_mul_pd,
               erf_f64, Sleef_cinz_expd4_u10avx)

namespace f32 {
UMLOS_GELU_LOOPS(F32, float)
UMLOS_ERF_LOOP(F32, float)
}  // namespace f32
namespace f64 {
UMLOS_GELU_LOOPS(F64, double)
UMLOS_ERF_LOOP(F64, double)
}  // namespace f64

}  // namespace

void erf_f32_values_avx2(const float* x, float* y, int64_t n) { f32::erf_values_loop(x, y, n); }
void erf_f64_values_avx2(const double* x, double* y, int64_t n) { f64::erf_values_loop(x, y, n); }
void gelu_values_avx2(const float* x, float* y, int64_t n) { f32::gelu_values_loop(x, y, n); }
void gelu_values_avx2(const double* x, double* y, int64_t n) { f64::gelu_values_loop(x, y, n); }
void gelu_derivative_times_avx2(const float* x, const float* g, float* dx, int64_t n) {
  f32::gelu_derivative_loop(x, g, dx, n);
}
void gelu_derivative_times_avx2(const double* x, const double* g, double* dx, int64_t n) {
  f64::gelu_derivative_loop(x, g, dx, n);
}

}  // namespace cpu_driver
