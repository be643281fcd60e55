// widen_add_avx2.cpp — widen_add.hpp's AVX2 path (compiled with -mavx2;
// called only where the CPU has it): four values an instruction.
#include <immintrin.h>

#include "widen_add.hpp"

namespace cpu_driver {

namespace {
__m256d load_widened(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
}  // namespace

UMLOS_WIDEN_ADD_LOOPS(avx2, 4, load_widened, _mm256_loadu_pd, _mm256_add_pd, _mm256_storeu_pd)

}  // namespace cpu_driver
