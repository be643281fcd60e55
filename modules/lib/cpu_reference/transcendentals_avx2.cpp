// transcendentals_avx2.cpp — transcendentals.hpp's AVX2 path (compiled with
// -mavx2; called only where the CPU has AVX2): SLEEF's deterministic 8-lane
// float and 4-lane double functions without FMA (AVX instructions).
#include <immintrin.h>
#include <sleef.h>

#include "transcendentals.hpp"

namespace cpu_driver {

UMLOS_TRANSCENDENTAL_PATH(avx2, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, f8, __m256d, 4, _mm256_loadu_pd,
                          _mm256_storeu_pd, d4, avx)

}  // namespace cpu_driver
