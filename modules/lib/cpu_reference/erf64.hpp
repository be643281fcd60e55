// erf64.hpp — erf of a binary64 argument for GELU's float64 paths, in
// binary64 arithmetic only (no FMA: the same bits on every path).
//
// Why not SLEEF's erf: its deterministic builds (the "cinz" ones, 1.0 ulp)
// carry double-double arithmetic throughout and cost 9.2 ns an element on
// a Zen 4 core at eight lanes (AVX-512), against 1.2 ns for its exp; a
// GPT-2-small block's float64 GELU and its gradient took 8 ms of a 145 ms
// step in it. Here a vector costs the pieces its lanes fall in: 4.6 ns an
// element on x / sqrt 2, x from N(0, 1) (four pieces), about 1 where every
// lane is in the first (x from N(0, 0.2)). The range is cut where a plain
// binary64 evaluation stays within 1 ulp, and only erfc's tail needs an
// exp:
//   |x| < 0.625:          erf = |x| + |x| A(x^2)
//   0.625 <= |x| < 0.9:   erf = c0 + B0(|x| - 0.75)       c0 = erf(0.75) to 24 bits
//   0.9 <= |x| < 1.25:    erf = c1 + B1(|x| - 1.0625)     c1 = erf(1.0625) to 24 bits
//   1.25 <= |x| < 5.92:   erf = 1 - exp(-x^2) C(|x|)      C: erfcx on three pieces
//   |x| >= 5.92:          erf = 1 (erf rounds to 1 from 5.8636 on)
// with the sign of x; NaN gives x. The polynomials are Chebyshev-economised
// fits (mpmath's chebyfit at 60 digits) in a variable centred on their
// piece, so that Horner's binary64 steps do not cancel: A to erf(sqrt z) /
// sqrt z - 1, B0 and B1 to erf minus their constant (which is exact, so the
// polynomial carries all of the rest), C to erfcx(x) = erfc(x) exp(x^2) with
// a relative error under 2e-18. x^2 in the tail is exact as p + e (Dekker's
// product, with Veltkamp's split: no FMA), and exp(-x^2) = exp(-p) (1 - e)
// to far below an ulp; exp(-x^2) C then carries a few ulps of its own
// relative error, under 0.4 ulp of the result (erfc <= 0.077 there) before
// the last subtraction rounds. Against long double erfl on 4 million
// arguments (half uniform on [0, 6.5), a quarter on [0.5, 1.5), a quarter
// from 2^-999 to 1 by exponent; each negated at random): at most 0.76 ulp,
// 3.4 % not correctly rounded; SLEEF's erf on the same arguments 0.93 ulp,
// 3.1 %. tests/cpu_driver/gelu.tests.cpp measures it on every path.
//
// Determinism: every path (scalar, AVX2, AVX-512) runs this one template
// with the same binary64 operations in the same order, each rounded once
// (the build never contracts a multiply and an add), and SLEEF's "cinz"
// exp, the same bits at every width; a piece is evaluated only when a lane
// of the vector lies in it, and a lane's result never depends on the
// others'. The polynomials use erf32.hpp's Horner.
#pragma once

#include "erf32.hpp"

namespace cpu_driver::erf64 {

// Highest degree first.
// erf(sqrt z) / sqrt z - 1 on z in [0, 0.625^2]: degree 10, |error| 1.6e-20
inline constexpr double kA[11] = {0x1.aa0201134f701p-27,  -0x1.5acd80f5c2a98p-23, 0x1.b999f571297afp-20,
                                  -0x1.f4cf4327a57ccp-17, 0x1.f9a3125dd40a6p-14,  -0x1.c02db3a80bc53p-11,
                                  0x1.565bcd0d7eb2cp-8,   -0x1.b82ce31285d61p-6,  0x1.ce2f21a042b98p-4,
                                  -0x1.812746b0379e7p-2,  0x1.06eba8214db69p-3};

inline constexpr double kSplitA = 0x1.4000000000000p-1;  // 0.625

inline constexpr double kB0c = 0x1.6c1c980000000p-1;    // erf(0.75) to 24 bits
inline constexpr double kB0mid = 0x1.8000000000000p-1;  // 0.75
inline constexpr double kB0hi = 0x1.ccccccccccccdp-1;   // 0.9

// erf(0.75 + t) - kB0c on [0.625, 0.9]: degree 13, |error| 2.5e-21
inline constexpr double kB0[14] = {
    -0x1.2b2fb9e3c27c5p-14, -0x1.b893a52ce85d6p-14, 0x1.4708159e31e97p-11, 0x1.8616c691fbb57p-13, -0x1.041049ef70f82p-8,
    0x1.2db33507e7d46p-9,   0x1.2e0afafffdd1dp-6,   -0x1.b84779670e013p-6, -0x1.b42a1890c7237p-5, 0x1.349b5eaa14615p-3,
    0x1.b6e8591f66de5p-6,   -0x1.edc5644353c27p-2,  0x1.492e42d78d2c5p-1,  -0x1.4c5e341275d92p-26};

inline constexpr double kB1c = 0x1.bbef100000000p-1;    // erf(1.0625) to 24 bits
inline constexpr double kB1mid = 0x1.1000000000000p+0;  // 1.0625
inline constexpr double kB1hi = 0x1.4000000000000p+0;   // 1.25

// erf(1.0625 + t) - kB1c on [0.9, 1.25]: degree 14, |error| 2.0e-21
inline constexpr double kB1[15] = {0x1.1137b7d7e7718p-16,  0x1.303b9366a66f0p-15, -0x1.731752a867a50p-13,
                                   -0x1.dc7e6ae27b017p-15, 0x1.43c9eca2dbf84p-10, -0x1.23360cb4e5756p-10,
                                   -0x1.704ec5710bb50p-8,  0x1.9ad28c58cfcc1p-7,  0x1.5e22cfa134f6bp-7,
                                   -0x1.0f7c15f75f887p-4,  0x1.88e0f7b1841e3p-5,  0x1.3954778d6a0e2p-3,
                                   -0x1.8d03ac274201cp-2,  0x1.75a91a7f4d2edp-2,  -0x1.086777d32280dp-27};

inline constexpr double kC0mid = 0x1.c000000000000p+0;  // 1.75
inline constexpr double kC0hi = 0x1.2000000000000p+1;   // 2.25

// erfcx(1.75 + t) on [1.25, 2.25]: degree 16, relative error 6.4e-19
inline constexpr double kC0[17] = {0x1.2f915b7b8374ap-28,  -0x1.280adc2ceb53ap-26, 0x1.0667736f0225ep-24,
                                   -0x1.e80633478347cp-23, 0x1.bc142c0b1b4d5p-21,  -0x1.88ff447687df8p-19,
                                   0x1.5273eabb3cd34p-17,  -0x1.1b290a237efc3p-15, 0x1.cb4c6892d3de9p-14,
                                   -0x1.6838885f8c84cp-12, 0x1.106bd5c036207p-10,  -0x1.8bf716a8d0318p-9,
                                   0x1.13648a11ffeebp-7,   -0x1.6cb52fe489552p-6,  0x1.c8d0cef0f810dp-5,
                                   -0x1.0c3d538446447p-3,  0x1.23cfc2f1dc7e0p-2};

inline constexpr double kC1mid = 0x1.7000000000000p+1;  // 2.875
inline constexpr double kC1hi = 0x1.c000000000000p+1;   // 3.5

// erfcx(2.875 + t) on [2.25, 3.5]: degree 16, relative error 4.4e-19
inline constexpr double kC1[17] = {0x1.dc91db79567ccp-35,  -0x1.16ad77c945f1cp-32, 0x1.27cee1052f882p-30,
                                   -0x1.4d69f92451d0bp-28, 0x1.7205408fc3721p-26,  -0x1.91c3ee68de589p-24,
                                   0x1.ab8179b0923eep-22,  -0x1.bd5ea08ab148fp-20, 0x1.c5b48a1bf4e01p-18,
                                   -0x1.c35c653d96d76p-16, 0x1.b5d78b2da12d9p-14,  -0x1.9d6f22273e5cep-12,
                                   0x1.7b404aa4ded82p-10,  -0x1.512f92fca6e5ap-8,  0x1.21c23afa33c46p-6,
                                   -0x1.dfc0205709b2cp-5,  0x1.7d0a5e9dd5710p-3};

inline constexpr double kC2mid = 0x1.2c00000000000p+2;     // 4.6875
inline constexpr double kSaturate = 0x1.7ae147ae147aep+2;  // 5.92: erf rounds to 1 from 5.8636 on

// erfcx(4.6875 + t) on [3.5, 5.92]: degree 18, relative error 1.5e-18
inline constexpr double kC2[19] = {
    0x1.601f3b06f94d0p-48, -0x1.24a75781bcbc7p-45, 0x1.7735131878066p-43, -0x1.19153fd819428p-40,
    0x1.ac8152d196f7bp-38, -0x1.3e44537469eaap-35, 0x1.d2797dc380f1cp-33, -0x1.51eabb90d10b4p-30,
    0x1.e3775e3dbc37ap-28, -0x1.555ca477a58bcp-25, 0x1.db9331768b622p-23, -0x1.46a944ca3af87p-20,
    0x1.ba40c2d9d19b9p-18, -0x1.26dc75b47d161p-15, 0x1.83006c33dc62ap-13, -0x1.f396f130f4243p-11,
    0x1.3cea7815ecdddp-8,  -0x1.8acdd807fd07ep-6,  0x1.e277e0aabb532p-4};

// Whether a lane of |x| (NaN lanes count as outside) lies in [lo, hi).
template <class D>
bool any_in(typename D::V a, double lo, double hi) {
  return D::any(D::lt(a, D::set1(hi))) && !D::all(D::lt(a, D::set1(lo)));
}

// erfc(a) = exp(-a^2) erfcx(a) for 1.25 <= a < kSaturate (other lanes:
// any finite value, replaced by the caller).
template <class D>
typename D::V erfc_tail(typename D::V a) {
  using V = typename D::V;
  V r = D::set1(0.0);
  if (any_in<D>(a, kC1hi, kSaturate)) r = erf32::horner<D>(kC2, D::sub(a, D::set1(kC2mid)));
  if (any_in<D>(a, kC0hi, kC1hi))
    r = D::select(D::lt(a, D::set1(kC1hi)), erf32::horner<D>(kC1, D::sub(a, D::set1(kC1mid))), r);
  if (any_in<D>(a, kB1hi, kC0hi))
    r = D::select(D::lt(a, D::set1(kC0hi)), erf32::horner<D>(kC0, D::sub(a, D::set1(kC0mid))), r);
  // a^2 = p + e exactly: Veltkamp's split of a into 26-bit halves, then
  // Dekker's product (a < 6: nothing overflows).
  const V c = D::mul(D::set1(134217729.0), a);
  const V hi = D::sub(c, D::sub(c, a)), lo = D::sub(a, hi);
  const V p = D::mul(a, a);
  const V e = D::add(D::add(D::sub(D::mul(hi, hi), p), D::mul(D::mul(D::set1(2.0), hi), lo)), D::mul(lo, lo));
  return D::mul(D::exp(D::neg(p)), D::sub(r, D::mul(r, e)));
}

// erf(x) for a binary64 x; NaN gives x.
template <class D>
typename D::V erf_binary64(typename D::V x) {
  using V = typename D::V;
  const V a = D::abs(x);
  V r = D::set1(1.0);  // |x| >= kSaturate and infinities (NaN: replaced below)
  if (any_in<D>(a, kB1hi, kSaturate)) {
    const typename D::M tail = D::lt(a, D::set1(kSaturate));
    const V at = D::select(tail, a, D::set1(kB1hi));  // every lane finite and in range
    r = D::select(tail, D::sub(D::set1(1.0), erfc_tail<D>(at)), r);
  }
  if (any_in<D>(a, kB0hi, kB1hi))
    r = D::select(D::lt(a, D::set1(kB1hi)), D::add(D::set1(kB1c), erf32::horner<D>(kB1, D::sub(a, D::set1(kB1mid)))),
                  r);
  if (any_in<D>(a, kSplitA, kB0hi))
    r = D::select(D::lt(a, D::set1(kB0hi)), D::add(D::set1(kB0c), erf32::horner<D>(kB0, D::sub(a, D::set1(kB0mid)))),
                  r);
  if (D::any(D::lt(a, D::set1(kSplitA))))
    r = D::select(D::lt(a, D::set1(kSplitA)), D::add(a, D::mul(a, erf32::horner<D>(kA, D::mul(a, a)))), r);
  return D::select(D::not_nan(x), D::copysign(r, x), x);
}

}  // namespace cpu_driver::erf64
