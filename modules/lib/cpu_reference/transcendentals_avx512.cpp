// transcendentals_avx512.cpp — transcendentals.hpp's AVX-512 path (compiled
// with -mavx512f; called only where the CPU has it): SLEEF's deterministic
// 16-lane float and 8-lane double functions without FMA.
#include <immintrin.h>
#include <sleef.h>

#include "transcendentals.hpp"

namespace cpu_driver {
namespace {

struct F32 {
  static constexpr int64_t width = 16;
  static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
};
struct F64 {
  static constexpr int64_t width = 8;
  static __m512d load(const double* p) { return _mm512_loadu_pd(p); }
  static void store(double* p, __m512d v) { _mm512_storeu_pd(p, v); }
};

using F32Fn = decltype(&Sleef_cinz_expf16_u10avx512fnofma);  // SLEEF declares its functions const
using F64Fn = decltype(&Sleef_cinz_expd8_u10avx512fnofma);
F32Fn pick_f32(Transcendental f){UMLOS_SLEEF_PICK(f, f16, avx512fnofma)} F64Fn pick_f64(Transcendental f) {
  UMLOS_SLEEF_PICK(f, d8, avx512fnofma)
}

}  // namespace

void transcendental_values_avx512(Transcendental f, const float* x, float* y, int64_t n) {
  map_lanes<F32>(pick_f32(f), x, y, n);
}
void transcendental_values_avx512(Transcendental f, const double* x, double* y, int64_t n) {
  map_lanes<F64>(pick_f64(f), x, y, n);
}

}  // namespace cpu_driver
