// gemm_avx512.cpp — gemm.hpp's micro-kernels for AVX-512 (compiled with
// -mavx512f; called only where the CPU has it): 12 rows by two 512-bit
// vectors of columns, 24 accumulators in registers; for narrow products
// (at most one vector of columns), 12 rows by one vector (a row-major A is
// read in place, 12 rows at once: no more than L1 has ways).
#include "avx512_intrinsics.hpp"
#include "gemm.hpp"
#include "gemm_ukr.hpp"

namespace cpu_driver {
namespace {

UMLOS_GEMM_OPS(Avx512F32, float, __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps,
               _mm512_add_ps, _mm512_storeu_ps, _mm512_max_ps)
UMLOS_GEMM_OPS(Avx512F64, double, __m512d, 8, _mm512_setzero_pd, _mm512_loadu_pd, _mm512_set1_pd, _mm512_fmadd_pd,
               _mm512_add_pd, _mm512_storeu_pd, _mm512_max_pd)

}  // namespace

GemmKernel<float> gemm_kernel_avx512_f32(bool narrow) {
  return narrow ? make_gemm_kernel<Avx512F32, 12, 1>() : make_gemm_kernel<Avx512F32, 12, 2>();
}
GemmKernel<double> gemm_kernel_avx512_f64(bool narrow) {
  return narrow ? make_gemm_kernel<Avx512F64, 12, 1>() : make_gemm_kernel<Avx512F64, 12, 2>();
}

}  // namespace cpu_driver
