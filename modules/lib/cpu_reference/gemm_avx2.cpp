// gemm_avx2.cpp — gemm.hpp's micro-kernels for AVX2 with FMA (compiled with
// -mavx2 -mfma; called only where the CPU has both): 6 rows by two 256-bit
// vectors of columns, 12 accumulators in the 16 registers; for narrow
// products, 8 rows by one vector (rows read in place stay within the L1
// ways).
#include <immintrin.h>

#include "gemm.hpp"
#include "gemm_ukr.hpp"

namespace cpu_driver {
namespace {

UMLOS_GEMM_OPS(Avx2F32, float, __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps,
               _mm256_add_ps, _mm256_storeu_ps, _mm256_max_ps)
UMLOS_GEMM_OPS(Avx2F64, double, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_set1_pd, _mm256_fmadd_pd,
               _mm256_add_pd, _mm256_storeu_pd, _mm256_max_pd)

}  // namespace

GemmKernel<float> gemm_kernel_avx2_f32(bool narrow) {
  return narrow ? make_gemm_kernel<Avx2F32, 8, 1>() : make_gemm_kernel<Avx2F32, 6, 2>();
}
GemmKernel<double> gemm_kernel_avx2_f64(bool narrow) {
  return narrow ? make_gemm_kernel<Avx2F64, 8, 1>() : make_gemm_kernel<Avx2F64, 6, 2>();
}

}  // namespace cpu_driver
