// transcendentals.cpp — see transcendentals.hpp: the path chosen at run
// time, the scalar one, and the probe the drivers' fingerprints record.
#include "transcendentals.hpp"

#include <sleef.h>

#include <limits>
#include <umlos/sha256.hpp>  // hex

namespace cpu_driver {

namespace {

template <class T>
struct One {
  static constexpr int64_t width = 1;
  static T load(const T* p) { return *p; }
  static void store(T* p, T v) { *p = v; }
};

// The scalar path: det_math.hpp's functions one element at a time.
template <class T>
void scalar_values(Transcendental f, const T* x, T* y, int64_t n) {
  map_lanes<One<T>>([f](T v) { return transcendental(f, v); }, x, y, n);
}

}  // namespace

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
  // positive one): a NaN result is the default quiet NaN on every path, as
  // det_math.hpp's scalar functions give it.
  for (int64_t i = 0; i < n; ++i)
    if (y[i] != y[i]) y[i] = std::numeric_limits<T>::quiet_NaN();
}

std::string transcendental_probe() {
  std::string out = "sleef " + std::to_string(SLEEF_VERSION_MAJOR) + "." + std::to_string(SLEEF_VERSION_MINOR) + "." +
                    std::to_string(SLEEF_VERSION_PATCHLEVEL) + ":";
  auto hex = [&](const void* p, size_t bytes) { out += " " + umlos::sdk::hex(static_cast<const uint8_t*>(p), bytes); };
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
