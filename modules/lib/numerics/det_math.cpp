// det_math.cpp — see det_math.hpp.
#include "det_math.hpp"

#include <sleef.h>

#include <limits>

namespace umlos::numerics {

namespace {

// decltype: SLEEF declares its functions const.
decltype(&Sleef_cinz_expf1_u10purec) scalar_f32(Transcendental f) { UMLOS_SLEEF_PICK(f, f1, purec); }
decltype(&Sleef_cinz_expd1_u10purec) scalar_f64(Transcendental f) { UMLOS_SLEEF_PICK(f, d1, purec); }

}  // namespace

float transcendental(Transcendental f, float x) {
  const float y = scalar_f32(f)(x);
  return y == y ? y : std::numeric_limits<float>::quiet_NaN();
}

double transcendental(Transcendental f, double x) {
  const double y = scalar_f64(f)(x);
  return y == y ? y : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace umlos::numerics
