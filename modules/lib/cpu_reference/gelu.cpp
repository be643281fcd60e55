// gelu.cpp — see gelu.hpp: the path chosen at run time, and the scalar one
// (the same loops, one element at a time).
#include "gelu.hpp"

#include <sleef.h>

#include <cmath>

#include "erf32.hpp"
#include "erf64.hpp"

namespace cpu_driver {

namespace {

template <class T>
T load_one(const T* p) {
  return *p;
}
template <class T>
void store_one(T* p, T v) {
  *p = v;
}
template <class T>
T same(T v) {
  return v;
}
template <class T>
T add_one(T a, T b) {
  return a + b;
}
template <class T>
T mul_one(T a, T b) {
  return a * b;
}

// erf32.hpp's binary64 operations, one element at a time.
struct ScalarBinary64 {
  using V = double;
  using M = bool;
  static V set1(double v) { return v; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V abs(V a) { return std::fabs(a); }
  static V neg(V a) { return -a; }
  static M lt(V a, V b) { return a < b; }
  static V select(M m, V a, V b) { return m ? a : b; }
  static bool all(M m) { return m; }
  static bool any(M m) { return m; }
  static M not_nan(V a) { return !std::isnan(a); }
  static V exp(V a) { return Sleef_cinz_expd1_u10purec(a); }
  static V copysign(V a, V b) { return std::copysign(a, b); }
};

float erf_f32(float x) { return static_cast<float>(erf32::erf_binary64<ScalarBinary64>(x)); }
double erf_f64(double x) { return erf64::erf_binary64<ScalarBinary64>(x); }

UMLOS_GELU_OPS(F32, float, float, 1, load_one<float>, store_one<float>, same<float>, add_one<float>, mul_one<float>,
               erf_f32, Sleef_cinz_expf1_u10purec)
UMLOS_GELU_OPS(F64, double, double, 1, load_one<double>, store_one<double>, same<double>, add_one<double>,
               mul_one<double>, erf_f64, Sleef_cinz_expd1_u10purec)

namespace f32 {
UMLOS_GELU_LOOPS(F32, float)
UMLOS_ERF_LOOP(F32, float)
}  // namespace f32
namespace f64 {
UMLOS_GELU_LOOPS(F64, double)
UMLOS_ERF_LOOP(F64, double)
}  // namespace f64

void scalar_values(const float* x, float* y, int64_t n) { f32::gelu_values_loop(x, y, n); }
void scalar_values(const double* x, double* y, int64_t n) { f64::gelu_values_loop(x, y, n); }
void scalar_derivative(const float* x, const float* g, float* dx, int64_t n) { f32::gelu_derivative_loop(x, g, dx, n); }
void scalar_derivative(const double* x, const double* g, double* dx, int64_t n) {
  f64::gelu_derivative_loop(x, g, dx, n);
}

}  // namespace

template <class T>
void gelu_values(GemmIsa isa, const T* x, T* y, int64_t n) {
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) return gelu_values_avx512(x, y, n);
  if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) return gelu_values_avx2(x, y, n);
  scalar_values(x, y, n);
}

template <class T>
void gelu_derivative_times(GemmIsa isa, const T* x, const T* g, T* dx, int64_t n) {
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) return gelu_derivative_times_avx512(x, g, dx, n);
  if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) return gelu_derivative_times_avx2(x, g, dx, n);
  scalar_derivative(x, g, dx, n);
}

void erf_f32_values(GemmIsa isa, const float* x, float* y, int64_t n) {
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) return erf_f32_values_avx512(x, y, n);
  if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) return erf_f32_values_avx2(x, y, n);
  f32::erf_values_loop(x, y, n);
}

void erf_f64_values(GemmIsa isa, const double* x, double* y, int64_t n) {
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) return erf_f64_values_avx512(x, y, n);
  if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) return erf_f64_values_avx2(x, y, n);
  f64::erf_values_loop(x, y, n);
}

template void gelu_values<float>(GemmIsa, const float*, float*, int64_t);
template void gelu_values<double>(GemmIsa, const double*, double*, int64_t);
template void gelu_derivative_times<float>(GemmIsa, const float*, const float*, float*, int64_t);
template void gelu_derivative_times<double>(GemmIsa, const double*, const double*, double*, int64_t);

}  // namespace cpu_driver
