// transcendentals.cpp — see transcendentals.hpp: the path chosen at run
// time, and the scalar one.
#include "transcendentals.hpp"

#include <sleef.h>

#include <limits>

namespace cpu_driver {

namespace {

using F32Fn = decltype(&Sleef_cinz_expf1_u10purec);  // SLEEF declares its functions const
using F64Fn = decltype(&Sleef_cinz_expd1_u10purec);

F32Fn scalar_f32(Transcendental f){UMLOS_SLEEF_PICK(f, f1, purec)} F64Fn scalar_f64(Transcendental f) {
  UMLOS_SLEEF_PICK(f, d1, purec)
}

template <class T>
struct One {
  static constexpr int64_t width = 1;
  static T load(const T* p) { return *p; }
  static void store(T* p, T v) { *p = v; }
};

void scalar_values(Transcendental f, const float* x, float* y, int64_t n) {
  map_lanes<One<float>>(scalar_f32(f), x, y, n);
}
void scalar_values(Transcendental f, const double* x, double* y, int64_t n) {
  map_lanes<One<double>>(scalar_f64(f), x, y, n);
}

}  // namespace

float transcendental(Transcendental f, float x) {
  const float y = scalar_f32(f)(x);
  return y == y ? y : std::numeric_limits<float>::quiet_NaN();
}
double transcendental(Transcendental f, double x) {
  const double y = scalar_f64(f)(x);
  return y == y ? y : std::numeric_limits<double>::quiet_NaN();
}

template <class T>
void transcendental_values(GemmIsa isa, Transcendental f, const T* x, T* y, int64_t n) {
  if (n <= 0) return;
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) {
    transcendental_values_avx512(f, x, y, n);
  } else if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) {
    transcendental_values_avx2(f, x, y, n);
  } else {
    scalar_values(f, x, y, n);
  }
  // The paths agree on every number but not on the bits of every NaN (the
  // AVX-512 build's log of a negative is a negative NaN, the others' a
  // positive one): a NaN result is the default quiet NaN on every path.
  for (int64_t i = 0; i < n; ++i)
    if (y[i] != y[i]) y[i] = std::numeric_limits<T>::quiet_NaN();
}

std::string transcendental_probe() {
  std::string out = "sleef " + std::to_string(SLEEF_VERSION_MAJOR) + "." + std::to_string(SLEEF_VERSION_MINOR) + "." +
                    std::to_string(SLEEF_VERSION_PATCHLEVEL) + ":";
  auto hex = [&](const void* p, size_t bytes) {
    static const char digits[] = "0123456789abcdef";
    const auto* b = static_cast<const unsigned char*>(p);
    out += ' ';
    for (size_t i = 0; i < bytes; ++i) {
      out += digits[b[i] >> 4];
      out += digits[b[i] & 15];
    }
  };
  for (Transcendental f : {Transcendental::exp, Transcendental::log, Transcendental::tanh, Transcendental::sin,
                           Transcendental::cos, Transcendental::log1p}) {
    for (double x : {0.3, 0.7, 1.9, 12.5, 101.25}) {
      const double d = transcendental(f, x);
      const float s = transcendental(f, static_cast<float>(x));
      hex(&d, sizeof d);
      hex(&s, sizeof s);
    }
  }
  return out;
}

template void transcendental_values<float>(GemmIsa, Transcendental, const float*, float*, int64_t);
template void transcendental_values<double>(GemmIsa, Transcendental, const double*, double*, int64_t);

}  // namespace cpu_driver
