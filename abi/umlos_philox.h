/*
 * umlos_philox.h — Philox4x32-10 and the counter mapping of UML_OS draws.
 *
 * This header is the published definition of every random value UML_OS
 * produces, so that any driver (CPU, CUDA, a vendor's) can compute the values
 * of a draw on its own device, in parallel, bit-identically to the kernel.
 * Plain C; compiles as CUDA device code when UMLOS_PHILOX_QUALIFIER is
 * defined as `__host__ __device__` before inclusion. Build without FMA
 * contraction (-ffp-contract=off, nvcc -fmad=false): the transforms below use
 * only IEEE-754 correctly rounded operations (+ - * / sqrt), never libm, so
 * that their results are the same on every conforming device.
 *
 * Mapping (spec 004 0.B "single master stream with fixed sub-stream
 * offsets"): one Philox key (the run's master key) and a 128-bit counter
 *   ctr[0] = block index, low 32 bits
 *   ctr[1] = block index, high 32 bits
 *   ctr[2] = draw index d, low 32 bits
 *   ctr[3] = (stream << 28) | (d >> 32 & 0x0fffffff)
 * i.e. stream s owns the counter range starting at s * 2^124. Element i of
 * draw d uses block i/4 (U32, UNIFORM_F32) or block i/2 (UNIFORM_F64,
 * NORMAL_*): see umlos_draw_element_* below.
 */
#ifndef UMLOS_PHILOX_H_
#define UMLOS_PHILOX_H_

#include <stdint.h>

#ifndef UMLOS_PHILOX_QUALIFIER
#define UMLOS_PHILOX_QUALIFIER static inline
#endif

/* Correctly rounded square root (IEEE-754 requires it of every device).
 * CUDA builds define UMLOS_SQRT as sqrt. */
#ifndef UMLOS_SQRT
#define UMLOS_SQRT __builtin_sqrt
#endif

#define UMLOS_PHILOX_M0 0xD2511F53u
#define UMLOS_PHILOX_M1 0xCD9E8D57u
#define UMLOS_PHILOX_W0 0x9E3779B9u
#define UMLOS_PHILOX_W1 0xBB67AE85u

/* Philox4x32 with `rounds` rounds (10 for Philox4x32-10), exactly as
 * Random123's philox4x32_R: out = f(ctr, key). */
UMLOS_PHILOX_QUALIFIER void umlos_philox4x32(const uint32_t ctr[4], const uint32_t key[2], unsigned rounds,
                                             uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  unsigned r;
  for (r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += UMLOS_PHILOX_W0;
      k1 += UMLOS_PHILOX_W1;
    }
    {
      uint64_t p0 = (uint64_t)UMLOS_PHILOX_M0 * c0;
      uint64_t p1 = (uint64_t)UMLOS_PHILOX_M1 * c2;
      uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
      uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
      c0 = hi1 ^ c1 ^ k0;
      c1 = lo1;
      c2 = hi0 ^ c3 ^ k1;
      c3 = lo0;
    }
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The counter of block `block` of draw `draw_index` from `stream`. */
UMLOS_PHILOX_QUALIFIER void umlos_draw_counter(uint32_t stream, uint64_t draw_index, uint64_t block, uint32_t ctr[4]) {
  ctr[0] = (uint32_t)block;
  ctr[1] = (uint32_t)(block >> 32);
  ctr[2] = (uint32_t)draw_index;
  ctr[3] = (stream << 28) | ((uint32_t)(draw_index >> 32) & 0x0fffffffu);
}

UMLOS_PHILOX_QUALIFIER void umlos_draw_block(const uint32_t key[2], uint32_t stream, uint64_t draw_index,
                                             uint64_t block, uint32_t out[4]) {
  uint32_t ctr[4];
  umlos_draw_counter(stream, draw_index, block, ctr);
  umlos_philox4x32(ctr, key, 10u, out);
}

/* Two words -> uniform double strictly inside (0,1): the top 52 bits,
 * midpoint-shifted. (53 bits would round the largest value up to 1.0:
 * (2^53 - 0.5) is not a binary64 number.) */
UMLOS_PHILOX_QUALIFIER double umlos_u01_f64(uint32_t hi, uint32_t lo) {
  uint64_t bits = (((uint64_t)hi << 32) | lo) >> 12;
  return ((double)bits + 0.5) * (1.0 / 4503599627370496.0); /* 2^-52 */
}

/* One word -> uniform float strictly inside (0,1): the top 23 bits,
 * midpoint-shifted (24 bits would round the largest value up to 1.0f). */
UMLOS_PHILOX_QUALIFIER float umlos_u01_f32(uint32_t w) {
  return ((float)(w >> 9) + 0.5f) * (1.0f / 8388608.0f); /* 2^-23 */
}

/* Natural logarithm of x in (0, 1], from + - * / only (no libm), accurate
 * to a few ulp. x = 2^e * m with m in [sqrt(1/2), sqrt(2)); log(m) by the
 * atanh series in s = (m-1)/(m+1). */
UMLOS_PHILOX_QUALIFIER double umlos_det_log(double x) {
  union {
    double d;
    uint64_t u;
  } v;
  int e, big;
  double m, s, s2, poly;
  v.d = x;
  e = (int)((v.u >> 52) & 0x7ff) - 1023;
  v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull; /* [1,2) */
  m = v.d;
  /* Selects, not branches, here and in umlos_det_sincos_2pi: a loop of
   * draws then vectorises; the bits are the same. */
  big = m > 1.4142135623730951;
  m = big ? m * 0.5 : m;
  e = big ? e + 1 : e;
  s = (m - 1.0) / (m + 1.0);
  s2 = s * s;
  /* 2*(s + s^3/3 + ... + s^23/23), |s| <= 0.1716: truncation < 1e-18 */
  poly = 1.0 / 23.0;
  poly = poly * s2 + 1.0 / 21.0;
  poly = poly * s2 + 1.0 / 19.0;
  poly = poly * s2 + 1.0 / 17.0;
  poly = poly * s2 + 1.0 / 15.0;
  poly = poly * s2 + 1.0 / 13.0;
  poly = poly * s2 + 1.0 / 11.0;
  poly = poly * s2 + 1.0 / 9.0;
  poly = poly * s2 + 1.0 / 7.0;
  poly = poly * s2 + 1.0 / 5.0;
  poly = poly * s2 + 1.0 / 3.0;
  poly = poly * s2 + 1.0;
  /* ln2 split so that e*LN2_HI is exact for |e| < 2^11 */
  return (double)e * 6.93147180369123816490e-01 + ((double)e * 1.90821492927058770002e-10 + 2.0 * s * poly);
}

/* sin and cos of 2*pi*u for u in [0,1), from + - * / only. */
UMLOS_PHILOX_QUALIFIER void umlos_det_sincos_2pi(double u, double *out_sin, double *out_cos) {
  double t = u * 4.0;       /* quarter turns */
  int q = (int)t;           /* quadrant 0..3 */
  double r = t - (double)q; /* [0,1): fraction of the quadrant */
  int swap;
  double a, a2, sn, cs, s, c;
  swap = r > 0.5; /* use the complementary angle for accuracy */
  r = swap ? 1.0 - r : r;
  a = r * 1.57079632679489661923; /* [0, pi/4] */
  a2 = a * a;
  /* Taylor series to a^17 / a^18: truncation < 2e-17 on [0, pi/4] */
  sn = -1.0 / 355687428096000.0;        /* -1/17! */
  sn = sn * a2 + 1.0 / 1307674368000.0; /* 1/15! */
  sn = sn * a2 - 1.0 / 6227020800.0;    /* -1/13! */
  sn = sn * a2 + 1.0 / 39916800.0;      /* 1/11! */
  sn = sn * a2 - 1.0 / 362880.0;        /* -1/9! */
  sn = sn * a2 + 1.0 / 5040.0;          /* 1/7! */
  sn = sn * a2 - 1.0 / 120.0;           /* -1/5! */
  sn = sn * a2 + 1.0 / 6.0;             /* 1/3! */
  sn = a - a * a2 * sn;
  cs = 1.0 / 6402373705728000.0;         /* 1/18! */
  cs = cs * a2 - 1.0 / 20922789888000.0; /* -1/16! */
  cs = cs * a2 + 1.0 / 87178291200.0;    /* 1/14! */
  cs = cs * a2 - 1.0 / 479001600.0;      /* -1/12! */
  cs = cs * a2 + 1.0 / 3628800.0;        /* 1/10! */
  cs = cs * a2 - 1.0 / 40320.0;          /* -1/8! */
  cs = cs * a2 + 1.0 / 720.0;            /* 1/6! */
  cs = cs * a2 - 1.0 / 24.0;             /* -1/4! */
  cs = cs * a2 + 0.5;                    /* 1/2! */
  cs = 1.0 - a2 * cs;
  s = swap ? cs : sn;
  c = swap ? sn : cs;
  q &= 3;
  *out_sin = q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c;
  *out_cos = q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
}

/* ---- element i of a draw, for each distribution ---- */

UMLOS_PHILOX_QUALIFIER uint32_t umlos_draw_element_u32(const uint32_t key[2], uint32_t stream, uint64_t d, uint64_t i) {
  uint32_t w[4];
  umlos_draw_block(key, stream, d, i >> 2, w);
  return w[i & 3];
}

UMLOS_PHILOX_QUALIFIER float umlos_draw_element_uniform_f32(const uint32_t key[2], uint32_t stream, uint64_t d,
                                                            uint64_t i) {
  return umlos_u01_f32(umlos_draw_element_u32(key, stream, d, i));
}

UMLOS_PHILOX_QUALIFIER double umlos_draw_element_uniform_f64(const uint32_t key[2], uint32_t stream, uint64_t d,
                                                             uint64_t i) {
  uint32_t w[4];
  umlos_draw_block(key, stream, d, i >> 1, w);
  return (i & 1) ? umlos_u01_f64(w[2], w[3]) : umlos_u01_f64(w[0], w[1]);
}

/* Box-Muller on the two uniforms of block `block`: out[0] = r*cos is
 * element 2*block of the draw, out[1] = r*sin element 2*block+1. */
UMLOS_PHILOX_QUALIFIER void umlos_draw_block_normal_f64(const uint32_t key[2], uint32_t stream, uint64_t d,
                                                        uint64_t block, double out[2]) {
  uint32_t w[4];
  double u1, u2, r, s, c;
  umlos_draw_block(key, stream, d, block, w);
  u1 = umlos_u01_f64(w[0], w[1]);
  u2 = umlos_u01_f64(w[2], w[3]);
  r = -2.0 * umlos_det_log(u1);
  r = UMLOS_SQRT(r);
  umlos_det_sincos_2pi(u2, &s, &c);
  out[0] = r * c;
  out[1] = r * s;
}

UMLOS_PHILOX_QUALIFIER double umlos_draw_element_normal_f64(const uint32_t key[2], uint32_t stream, uint64_t d,
                                                            uint64_t i) {
  double pair[2];
  umlos_draw_block_normal_f64(key, stream, d, i >> 1, pair);
  return pair[i & 1];
}

UMLOS_PHILOX_QUALIFIER float umlos_draw_element_normal_f32(const uint32_t key[2], uint32_t stream, uint64_t d,
                                                           uint64_t i) {
  return (float)umlos_draw_element_normal_f64(key, stream, d, i);
}

#endif /* UMLOS_PHILOX_H_ */
