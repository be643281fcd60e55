// erf32.hpp — erf of a binary32 argument for GELU, computed in binary64 and
// rounded once to binary32 by the caller.
//
// Why not SLEEF's erff: its deterministic builds (the "cinz" ones, 1.0 ulp)
// carry double-float arithmetic and cost 3.3 ns an element on a Zen 4 core
// at sixteen lanes, against 0.4 ns for its expf; GELU's erf was then most
// of a GPT-2-small block's GELU (gelu and gelu_grad: 2.9 ms of an 81 ms
// step, PyTorch 0.9 ms). A binary32 argument has a 24-bit significand, so
// in binary64 its square is exact and two polynomials do the rest:
//   |x| < 2:        erf(x) = x A(x^2)                 A: 14 coefficients
//   2 <= |x| < 3.92: erf(x) = 1 - exp(-x^2) B(|x| - 2.96)   B: 12
//   |x| >= 3.92:    erf(x) = +-1 (erf(3.92) is within 2^-26 of 1)
// fitted as Chebyshev-economised series (mpmath's chebyfit, 50 digits) to
// erf(sqrt u)/sqrt u on u in [0, 4] (largest error 1.7e-13, relative) and to
// erfc(x) exp(x^2) on [2, 3.92] (7.3e-12, absolute; times exp(-x^2) <= e^-4
// in the result). With binary64 rounding in the Horner steps the result
// is within about 2e-13 of erf(x), so after the one rounding to binary32 it
// is erf(x) correctly rounded except where erf(x) lies within 2e-13 of the
// midpoint between two binary32 values: at most 0.5 ulp + 2^-19 ulp
// (tests/cpu_driver/gelu.tests.cpp measures it against long double).
//
// Determinism: every path (scalar, AVX2, AVX-512) runs this one template
// with the same binary64 operations in the same order, each rounded once
// (the build never contracts a multiply and an add), and SLEEF's "cinz"
// exp, which gives the same bits at every width; so an element's bits do
// not depend on the path, the vector width or its neighbours. A path may
// skip the second polynomial when no lane of a vector needs it: lanes
// below 2 never read it.
#pragma once

namespace cpu_driver::erf32 {

// Highest degree first.
inline constexpr double kA[14] = {-0x1.39702179cb72ap-40, 0x1.8ae17b4aae32ep-35,  -0x1.fdb7769b3f91ap-31,
                                  0x1.d010abd5a7dcep-27,  -0x1.56dbe4ba3e7f8p-23, 0x1.b787d1b3342e6p-20,
                                  -0x1.f45ac42a932d9p-17, 0x1.f99294247ceb4p-14,  -0x1.c02c224a3750bp-11,
                                  0x1.565bb44bae9afp-8,   -0x1.b82ce13ca3cf1p-6,  0x1.ce2f218e0651cp-4,
                                  -0x1.812746aff00cdp-2,  0x1.20dd750429882p+0};
inline constexpr double kB[12] = {-0x1.6e7e2a4c8911bp-24, 0x1.8e25ef218edb4p-22,  -0x1.688e32bf0da86p-20,
                                  0x1.74fe72b903685p-18,  -0x1.7d1a0bd31c89bp-16, 0x1.7834e5ece8225p-14,
                                  -0x1.69a7c212b8116p-12, 0x1.522482ea393a0p-10,  -0x1.32bc497b40d9ap-8,
                                  0x1.0d4095a8cd57cp-6,   -0x1.c8019b1e1f379p-5,  0x1.7319e6b6be240p-3};
inline constexpr double kSplit = 2.0;      // A below, B from here
inline constexpr double kMid = 2.96;       // B's variable is |x| - kMid
inline constexpr double kSaturate = 3.92;  // +-1 from here

// D: the binary64 operations of one path: V (a vector of binary64), M (a
// lane mask), set1, add, sub, mul, abs, neg, lt (a < b, false for NaN),
// select (m ? a : b per lane), all (every lane of m), not_nan, exp (SLEEF
// cinz), copysign (the magnitude of a with the sign of b).
template <class D, int N>
typename D::V horner(const double (&c)[N], typename D::V t) {
  typename D::V p = D::set1(c[0]);
  for (int i = 1; i < N; ++i) p = D::add(D::mul(p, t), D::set1(c[i]));
  return p;
}

// erf(x) for x a binary32 value widened to binary64; NaN gives x.
template <class D>
typename D::V erf_binary64(typename D::V x) {
  const typename D::V a = D::abs(x);
  const typename D::M small = D::lt(a, D::set1(kSplit));
  typename D::V r = D::mul(a, horner<D>(kA, D::mul(a, a)));
  if (!D::all(small)) {
    const typename D::M tail = D::lt(a, D::set1(kSaturate));
    const typename D::V ac = D::select(tail, a, D::set1(kSaturate));  // NaN: any finite value, replaced below
    const typename D::V e = D::exp(D::neg(D::mul(ac, ac)));
    const typename D::V b = D::sub(D::set1(1.0), D::mul(e, horner<D>(kB, D::sub(ac, D::set1(kMid)))));
    r = D::select(small, r, D::select(tail, b, D::set1(1.0)));
  }
  // r is 1 for an infinite |x|, and for NaN, which keeps its own bits.
  return D::select(D::not_nan(x), D::copysign(r, x), x);
}

}  // namespace cpu_driver::erf32
