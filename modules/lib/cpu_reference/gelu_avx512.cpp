// gelu_avx512.cpp — gelu.hpp's loops for AVX-512 (compiled with -mavx512f;
// called only where the CPU has it): binary32 erf on erf32.hpp in two
// halves of eight binary64 lanes, the rest on SLEEF's deterministic 16- and
// 8-lane erf and exp.
#include <sleef.h>

#include "avx512_intrinsics.hpp"
#include "erf32.hpp"
#include "erf64.hpp"
#include "gelu.hpp"

namespace cpu_driver {
namespace {

// erf32.hpp's binary64 operations on eight lanes (AVX-512F only: the bit
// operations go through the integer forms, which need no AVX-512DQ).
struct Avx512Binary64 {
  using V = __m512d;
  using M = __mmask8;
  static V set1(double v) { return _mm512_set1_pd(v); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static V abs(V a) { return _mm512_abs_pd(a); }
  static V neg(V a) { return _mm512_castsi512_pd(_mm512_xor_epi64(_mm512_castpd_si512(a), sign())); }
  static M lt(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
  static V select(M m, V a, V b) { return _mm512_mask_blend_pd(m, b, a); }
  static bool all(M m) { return m == 0xFF; }
  static bool any(M m) { return m != 0; }
  static M not_nan(V a) { return _mm512_cmp_pd_mask(a, a, _CMP_ORD_Q); }
  static V exp(V a) { return Sleef_cinz_expd8_u10avx512fnofma(a); }
  static V copysign(V a, V b) {
    const __m512i magnitude = _mm512_andnot_epi64(sign(), _mm512_castpd_si512(a));
    return _mm512_castsi512_pd(_mm512_or_epi64(magnitude, _mm512_and_epi64(sign(), _mm512_castpd_si512(b))));
  }
  static __m512i sign() { return _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ULL)); }
};

__m512 erf_f32(__m512 x) {
  const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
  const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  const __m256 rlo = _mm512_cvtpd_ps(erf32::erf_binary64<Avx512Binary64>(lo));
  const __m256 rhi = _mm512_cvtpd_ps(erf32::erf_binary64<Avx512Binary64>(hi));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(rlo)), _mm256_castps_pd(rhi), 1));
}

__m512d erf_f64(__m512d x) { return erf64::erf_binary64<Avx512Binary64>(x); }

UMLOS_GELU_OPS(F32, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_add_ps, _mm512_mul_ps,
               erf_f32, Sleef_cinz_expf16_u10avx512fnofma)
UMLOS_GELU_OPS(F64, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_add_pd, _mm512_mul_pd,
               erf_f64, Sleef_cinz_expd8_u10avx512fnofma)

namespace f32 {
UMLOS_GELU_LOOPS(F32, float)
UMLOS_ERF_LOOP(F32, float)
}  // namespace f32
namespace f64 {
UMLOS_GELU_LOOPS(F64, double)
UMLOS_ERF_LOOP(F64, double)
}  // namespace f64

}  // namespace

void erf_f32_values_avx512(const float* x, float* y, int64_t n) { f32::erf_values_loop(x, y, n); }
void erf_f64_values_avx512(const double* x, double* y, int64_t n) { f64::erf_values_loop(x, y, n); }
void gelu_values_avx512(const float* x, float* y, int64_t n) { f32::gelu_values_loop(x, y, n); }
void gelu_values_avx512(const double* x, double* y, int64_t n) { f64::gelu_values_loop(x, y, n); }
void gelu_derivative_times_avx512(const float* x, const float* g, float* dx, int64_t n) {
  f32::gelu_derivative_loop(x, g, dx, n);
}
void gelu_derivative_times_avx512(const double* x, const double* g, double* dx, int64_t n) {
  f64::gelu_derivative_loop(x, g, dx, n);
}

}  // namespace cpu_driver
