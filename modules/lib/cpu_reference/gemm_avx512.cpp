// gemm_avx512.cpp — gemm.hpp's micro-kernels for AVX-512 (compiled with
// -mavx512f; called only where the CPU has it): 12 rows by two 512-bit
// vectors of columns, 24 accumulators in registers.
#include <immintrin.h>

#include "gemm.hpp"
#include "gemm_ukr.hpp"

namespace cpu_driver {
namespace {

struct Avx512F32 {
  using T = float;
  using V = __m512;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const T* p) { return _mm512_loadu_ps(p); }
  static V set1(T x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static void store(T* p, V v) { _mm512_storeu_ps(p, v); }
};

struct Avx512F64 {
  using T = double;
  using V = __m512d;
  static constexpr int W = 8;
  static V zero() { return _mm512_setzero_pd(); }
  static V load(const T* p) { return _mm512_loadu_pd(p); }
  static V set1(T x) { return _mm512_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  static void store(T* p, V v) { _mm512_storeu_pd(p, v); }
};

}  // namespace

GemmKernel<float> gemm_kernel_avx512_f32() { return {12, 32, gemm_ukr<Avx512F32, 12, 2>}; }
GemmKernel<double> gemm_kernel_avx512_f64() { return {12, 16, gemm_ukr<Avx512F64, 12, 2>}; }

}  // namespace cpu_driver
