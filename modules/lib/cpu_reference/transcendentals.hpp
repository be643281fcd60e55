// transcendentals.hpp — exp, log, tanh, sin, cos and log1p for every
// primitive of the reference driver (docs/primitives.md,
// "Transcendentals"): SLEEF's deterministic functions without FMA (Debian
// libsleef-dev; the "cinz" variants, 1.0 ulp), which give the same bits for
// an element whatever the vector width or instruction set, down to the
// scalar build that any x86-64 runs. The C library's functions do not:
// glibc picks among builds of exp, log and others by CPU feature when it
// loads (an FMA build where the CPU has FMA), and those builds may round
// differently in the hardest cases, so the same driver build could give
// other bits on a CPU without FMA. SLEEF's FMA variants ("finz") are not
// used for the same reason: no CPU without FMA can run them.
//
// The vector paths (AVX-512, AVX) take whole vectors of the array and a
// padded copy of its tail, so an element's bits depend on nothing but its
// value; they are also 4-5x faster than one libm call per element, which
// made softmax's exps half of its cost.
#pragma once

#include <cstdint>
#include <string>

#include "gemm.hpp"

namespace cpu_driver {

enum class Transcendental { exp, log, tanh, sin, cos, log1p };

// y[i] = f(x[i]) for i in [0, n), on the `isa` path (the same bits on every
// path; a NaN result is the default quiet NaN); y may be x.
template <class T>
void transcendental_values(GemmIsa isa, Transcendental f, const T* x, T* y, int64_t n);

// f(x) for one value: the scalar path, the same bits as the vector ones.
float transcendental(Transcendental f, float x);
double transcendental(Transcendental f, double x);

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

// The functions of one path: SLEEF's name for each is
// Sleef_cinz_<f><lanes>_u10<suffix>, e.g. Sleef_cinz_expd8_u10avx512fnofma.
#define UMLOS_SLEEF_PICK(f, LANES, SUFFIX)          \
  switch (f) {                                      \
    case Transcendental::exp:                       \
      return Sleef_cinz_exp##LANES##_u10##SUFFIX;   \
    case Transcendental::log:                       \
      return Sleef_cinz_log##LANES##_u10##SUFFIX;   \
    case Transcendental::tanh:                      \
      return Sleef_cinz_tanh##LANES##_u10##SUFFIX;  \
    case Transcendental::sin:                       \
      return Sleef_cinz_sin##LANES##_u10##SUFFIX;   \
    case Transcendental::cos:                       \
      return Sleef_cinz_cos##LANES##_u10##SUFFIX;   \
    case Transcendental::log1p:                     \
      return Sleef_cinz_log1p##LANES##_u10##SUFFIX; \
  }                                                 \
  return Sleef_cinz_exp##LANES##_u10##SUFFIX;

// One vector path, in its own file: lanes structs for float (VF, WF lanes)
// and double (VD, WD lanes) over the named load and store intrinsics, and
// transcendental_values_NAME calling SLEEF's Sleef_cinz_<f><LF>_u10<SUFFIX>
// and Sleef_cinz_<f><LD>_u10<SUFFIX> (e.g. LF = f16, LD = d8, SUFFIX =
// avx512fnofma).
#define UMLOS_TRANSCENDENTAL_PATH(NAME, VF, WF, LOADF, STOREF, LF, VD, WD, LOADD, STORED, LD, SUFFIX)        \
  namespace {                                                                                                \
  struct F32 {                                                                                               \
    static constexpr int64_t width = WF;                                                                     \
    static VF load(const float* p) { return LOADF(p); }                                                      \
    static void store(float* p, VF v) { STOREF(p, v); }                                                      \
  };                                                                                                         \
  struct F64 {                                                                                               \
    static constexpr int64_t width = WD;                                                                     \
    static VD load(const double* p) { return LOADD(p); }                                                     \
    static void store(double* p, VD v) { STORED(p, v); }                                                     \
  };                                                                                                         \
  /* decltype: SLEEF declares its functions const */                                                         \
  decltype(&Sleef_cinz_exp##LF##_u10##SUFFIX) pick_f32(Transcendental f) { UMLOS_SLEEF_PICK(f, LF, SUFFIX) } \
  decltype(&Sleef_cinz_exp##LD##_u10##SUFFIX) pick_f64(Transcendental f) { UMLOS_SLEEF_PICK(f, LD, SUFFIX) } \
  }                                                                                                          \
  void transcendental_values_##NAME(Transcendental f, const float* x, float* y, int64_t n) {                 \
    map_lanes<F32>(pick_f32(f), x, y, n);                                                                    \
  }                                                                                                          \
  void transcendental_values_##NAME(Transcendental f, const double* x, double* y, int64_t n) {               \
    map_lanes<F64>(pick_f64(f), x, y, n);                                                                    \
  }
