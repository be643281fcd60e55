// gemm_avx2.cpp — gemm.hpp's micro-kernels for AVX2 with FMA (compiled with
// -mavx2 -mfma; called only where the CPU has both): 6 rows by two 256-bit
// vectors of columns, 12 accumulators in the 16 registers.
#include <immintrin.h>

#include "gemm.hpp"
#include "gemm_ukr.hpp"

namespace cpu_driver {
namespace {

struct Avx2F32 {
  using T = float;
  using V = __m256;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const T* p) { return _mm256_loadu_ps(p); }
  static V set1(T x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
};

struct Avx2F64 {
  using T = double;
  using V = __m256d;
  static constexpr int W = 4;
  static V zero() { return _mm256_setzero_pd(); }
  static V load(const T* p) { return _mm256_loadu_pd(p); }
  static V set1(T x) { return _mm256_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
};

}  // namespace

GemmKernel<float> gemm_kernel_avx2_f32() { return {6, 16, gemm_ukr<Avx2F32, 6, 2>}; }
GemmKernel<double> gemm_kernel_avx2_f64() { return {6, 8, gemm_ukr<Avx2F64, 6, 2>}; }

}  // namespace cpu_driver
