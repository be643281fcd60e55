// transcendentals_avx512.cpp — transcendentals.hpp's AVX-512 path (compiled
// with -mavx512f; called only where the CPU has it): SLEEF's deterministic
// 16-lane float and 8-lane double functions without FMA.
#include <immintrin.h>
#include <sleef.h>

#include "transcendentals.hpp"

namespace cpu_driver {

UMLOS_TRANSCENDENTAL_PATH(avx512, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, f16, __m512d, 8, _mm512_loadu_pd,
                          _mm512_storeu_pd, d8, avx512fnofma)

}  // namespace cpu_driver
