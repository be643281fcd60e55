// transcendentals_avx2.cpp — transcendentals.hpp's AVX2 path (compiled
// with -mavx2; called only where the CPU has AVX2): SLEEF's deterministic
// 8-lane float and 4-lane double functions without FMA (AVX instructions).
#include <immintrin.h>
#include <sleef.h>

#include "transcendentals.hpp"

namespace cpu_driver {
namespace {

struct F32 {
  static constexpr int64_t width = 8;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
};
struct F64 {
  static constexpr int64_t width = 4;
  static __m256d load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
};

using F32Fn = decltype(&Sleef_cinz_expf8_u10avx);  // SLEEF declares its functions const
using F64Fn = decltype(&Sleef_cinz_expd4_u10avx);
F32Fn pick_f32(Transcendental f){UMLOS_SLEEF_PICK(f, f8, avx)} F64Fn pick_f64(Transcendental f) {
  UMLOS_SLEEF_PICK(f, d4, avx)
}

}  // namespace

void transcendental_values_avx2(Transcendental f, const float* x, float* y, int64_t n) {
  map_lanes<F32>(pick_f32(f), x, y, n);
}
void transcendental_values_avx2(Transcendental f, const double* x, double* y, int64_t n) {
  map_lanes<F64>(pick_f64(f), x, y, n);
}

}  // namespace cpu_driver
