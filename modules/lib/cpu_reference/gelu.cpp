// gelu.cpp — see gelu.hpp: the path chosen at run time, and the scalar one.
#include "gelu.hpp"

#include <sleef.h>

namespace cpu_driver {

namespace {

float erf_of(float v) { return Sleef_cinz_erff1_u10purec(v); }
double erf_of(double v) { return Sleef_cinz_erfd1_u10purec(v); }
float exp_of(float v) { return Sleef_cinz_expf1_u10purec(v); }
double exp_of(double v) { return Sleef_cinz_expd1_u10purec(v); }

}  // namespace

template <class T>
void gelu_values(GemmIsa isa, const T* x, T* y, int64_t n) {
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) return gelu_values_avx512(x, y, n);
  if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) return gelu_values_avx2(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = (T(0.5) * x[i]) * (T(1) + erf_of(x[i] * kGeluC<T>));
}

template <class T>
void gelu_derivative_times(GemmIsa isa, const T* x, const T* g, T* dx, int64_t n) {
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) return gelu_derivative_times_avx512(x, g, dx, n);
  if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) return gelu_derivative_times_avx2(x, g, dx, n);
  for (int64_t i = 0; i < n; ++i) {
    const T cdf = T(0.5) * (T(1) + erf_of(x[i] * kGeluC<T>));
    const T pdf = exp_of((T(-0.5) * x[i]) * x[i]) * kGeluK<T>;
    dx[i] = g[i] * (cdf + x[i] * pdf);
  }
}

template void gelu_values<float>(GemmIsa, const float*, float*, int64_t);
template void gelu_values<double>(GemmIsa, const double*, double*, int64_t);
template void gelu_derivative_times<float>(GemmIsa, const float*, const float*, float*, int64_t);
template void gelu_derivative_times<double>(GemmIsa, const double*, const double*, double*, int64_t);

}  // namespace cpu_driver
