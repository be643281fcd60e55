// transcendentals.hpp — the reference driver's transcendentals over whole
// arrays: det_math.hpp's functions (SLEEF's deterministic ones, the same
// bits on every path) on the vector builds, AVX-512 and AVX, where the CPU
// has them. The vector paths take whole vectors of the array and a padded
// copy of its tail, so an element's bits depend on nothing but its value;
// they are also 4-5x faster than one call per element, which made
// softmax's exps half of its cost.
#pragma once

#include <cstdint>
#include <string>

#include "det_math.hpp"
#include "gemm.hpp"

namespace cpu_driver {

using umlos::numerics::Transcendental;
using umlos::numerics::transcendental;  // one value: SLEEF's scalar build

// y[i] = f(x[i]) for i in [0, n), on the `isa` path (the same bits on every
// path; a NaN result is the default quiet NaN); y may be x.
template <class T>
void transcendental_values(GemmIsa isa, Transcendental f, const T* x, T* y, int64_t n);

// What the drivers' fingerprints record of SLEEF: its version (of the
// headers the driver was built with) and the bits of each function, both
// dtypes, at a few arguments, computed by the library loaded now: a SLEEF
// that computes other bits gives another driver fingerprint.
std::string transcendental_probe();

// The vector paths, in files compiled for their instruction sets.
void transcendental_values_avx512(Transcendental f, const float* x, float* y, int64_t n);
void transcendental_values_avx512(Transcendental f, const double* x, double* y, int64_t n);
void transcendental_values_avx2(Transcendental f, const float* x, float* y, int64_t n);
void transcendental_values_avx2(Transcendental f, const double* x, double* y, int64_t n);

// The loop of one path over V: `width` lanes of T, load, store. The last
// partial vector is computed from a zero-padded copy.
template <class V, class T, class F>
void map_lanes(F f, const T* x, T* y, int64_t n) {
  int64_t i = 0;
  for (; i + V::width <= n; i += V::width) V::store(y + i, f(V::load(x + i)));
  if (i < n) {
    T in[V::width] = {}, out[V::width];
    for (int64_t k = i; k < n; ++k) in[k - i] = x[k];
    V::store(out, f(V::load(in)));
    for (int64_t k = i; k < n; ++k) y[k] = out[k - i];
  }
}

}  // namespace cpu_driver

// One vector path, in its own file: lanes structs for float (VF, WF lanes)
// and double (VD, WD lanes) over the named load and store intrinsics, and
// transcendental_values_NAME calling SLEEF's Sleef_cinz_<f><LF>_u10<SUFFIX>
// and Sleef_cinz_<f><LD>_u10<SUFFIX> (e.g. LF = f16, LD = d8, SUFFIX =
// avx512fnofma).
#define UMLOS_TRANSCENDENTAL_PATH(NAME, VF, WF, LOADF, STOREF, LF, VD, WD, LOADD, STORED, LD, SUFFIX)         \
  namespace {                                                                                                 \
  struct F32 {                                                                                                \
    static constexpr int64_t width = WF;                                                                      \
    static VF load(const float* p) { return LOADF(p); }                                                       \
    static void store(float* p, VF v) { STOREF(p, v); }                                                       \
  };                                                                                                          \
  struct F64 {                                                                                                \
    static constexpr int64_t width = WD;                                                                      \
    static VD load(const double* p) { return LOADD(p); }                                                      \
    static void store(double* p, VD v) { STORED(p, v); }                                                      \
  };                                                                                                          \
  /* decltype: SLEEF declares its functions const */                                                          \
  decltype(&Sleef_cinz_exp##LF##_u10##SUFFIX) pick_f32(Transcendental f) { UMLOS_SLEEF_PICK(f, LF, SUFFIX); } \
  decltype(&Sleef_cinz_exp##LD##_u10##SUFFIX) pick_f64(Transcendental f) { UMLOS_SLEEF_PICK(f, LD, SUFFIX); } \
  }                                                                                                           \
  void transcendental_values_##NAME(Transcendental f, const float* x, float* y, int64_t n) {                  \
    map_lanes<F32>(pick_f32(f), x, y, n);                                                                     \
  }                                                                                                           \
  void transcendental_values_##NAME(Transcendental f, const double* x, double* y, int64_t n) {                \
    map_lanes<F64>(pick_f64(f), x, y, n);                                                                     \
  }
