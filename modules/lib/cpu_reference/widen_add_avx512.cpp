// widen_add_avx512.cpp — widen_add.hpp's AVX-512 path (compiled with
// -mavx512f; called only where the CPU has it): eight values an instruction.
#include "avx512_intrinsics.hpp"
#include "widen_add.hpp"

namespace cpu_driver {

namespace {
__m512d load_widened(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
}  // namespace

UMLOS_WIDEN_ADD_LOOPS(avx512, 8, load_widened, _mm512_loadu_pd, _mm512_add_pd, _mm512_storeu_pd)

}  // namespace cpu_driver
