// det_math.hpp — the one choice of exp, log, tanh, sin, cos and log1p for
// every computation of UML_OS that must give the same bits on every CPU
// (docs/primitives.md, "Transcendentals"): SLEEF's deterministic functions
// without FMA (Debian libsleef-dev; the "cinz" variants, at most 1.0 ulp),
// whose builds for every vector width and instruction set, the scalar one
// included, give the same bits for an element. The C library's do not
// promise it: glibc picks among builds of exp, log and others by CPU
// feature when it loads (an FMA build where the CPU has FMA). SLEEF's FMA
// variants ("finz") are not used for the same reason: no CPU without FMA
// runs them. A NaN result is the default quiet NaN (SLEEF's builds differ
// in the bits of some NaNs: the AVX-512 log of a negative is a negative NaN).
//
// Users: cpu_driver's primitives (their vector paths pick SLEEF's vector
// builds with UMLOS_SLEEF_PICK) and the symbolic module's host evaluator.
#pragma once

namespace umlos::numerics {

enum class Transcendental { exp, log, tanh, sin, cos, log1p };

// f(x) by SLEEF's scalar (purec) build.
float transcendental(Transcendental f, float x);
double transcendental(Transcendental f, double x);

}  // namespace umlos::numerics

// SLEEF's function of one build for `f` (a umlos::numerics::Transcendental):
// Sleef_cinz_<f><LANES>_u10<SUFFIX>, e.g. LANES d8, SUFFIX avx512fnofma.
// The body of a function returning that function's address.
#define UMLOS_SLEEF_PICK(f, LANES, SUFFIX)          \
  switch (f) {                                      \
    case ::umlos::numerics::Transcendental::exp:    \
      return Sleef_cinz_exp##LANES##_u10##SUFFIX;   \
    case ::umlos::numerics::Transcendental::log:    \
      return Sleef_cinz_log##LANES##_u10##SUFFIX;   \
    case ::umlos::numerics::Transcendental::tanh:   \
      return Sleef_cinz_tanh##LANES##_u10##SUFFIX;  \
    case ::umlos::numerics::Transcendental::sin:    \
      return Sleef_cinz_sin##LANES##_u10##SUFFIX;   \
    case ::umlos::numerics::Transcendental::cos:    \
      return Sleef_cinz_cos##LANES##_u10##SUFFIX;   \
    case ::umlos::numerics::Transcendental::log1p:  \
      return Sleef_cinz_log1p##LANES##_u10##SUFFIX; \
  }                                                 \
  return Sleef_cinz_exp##LANES##_u10##SUFFIX
