// gelu.hpp — GELU and its derivative, vectorised: the one primitive whose
// cost was its transcendentals (erf, and exp for the derivative: a sixth of
// a GPT-2-small block's step outside its products, one element at a time
// through libm). SLEEF's deterministic functions without FMA (Debian
// libsleef-dev; the "cinz" variants, 1.0 ulp) give the same bits for an
// element whatever the vector width or instruction set, down to the scalar
// one that any x86-64 runs, so every path of this file (AVX-512, AVX, and
// scalar) gives the same bits (the variants with FMA, which no CPU without
// it can run, give others). erf is our own, the same operations on every
// path too: in f32 erf32.hpp's (binary64 polynomials on SLEEF's binary64
// exp, rounded once: f32 GELU 2.5x faster than on SLEEF's erff, and nearly
// always correctly rounded), in f64 erf64.hpp's (binary64 pieces within
// 1 ulp: f64 GELU and its gradient 8 -> 1.8 ms a GPT-2-small block step,
// against SLEEF's erf). The arithmetic around them is the same
// operations in the same order on every path: forward (0.5 x)(1 + erf(x c)), derivative
// g (0.5 (1 + erf(x c)) + x (exp((-0.5 x) x) k)), c = 1/sqrt 2 and
// k = 1/sqrt(2 pi) rounded to the dtype, each operation rounded once.
#pragma once

#include <cstdint>

#include "gemm.hpp"

namespace cpu_driver {

// y[i] = gelu(x[i]) for i in [0, n), on the `isa` path.
template <class T>
void gelu_values(GemmIsa isa, const T* x, T* y, int64_t n);
// dx[i] = g[i] gelu'(x[i]).
template <class T>
void gelu_derivative_times(GemmIsa isa, const T* x, const T* g, T* dx, int64_t n);

// erf of binary32 values exactly as GELU's f32 paths compute it
// (erf32.hpp), and of binary64 values as its f64 paths do (erf64.hpp), on
// the `isa` path: what the tests measure.
void erf_f32_values(GemmIsa isa, const float* x, float* y, int64_t n);
void erf_f64_values(GemmIsa isa, const double* x, double* y, int64_t n);

// The vector paths, in files compiled for their instruction sets.
void erf_f32_values_avx512(const float* x, float* y, int64_t n);
void erf_f32_values_avx2(const float* x, float* y, int64_t n);
void erf_f64_values_avx512(const double* x, double* y, int64_t n);
void erf_f64_values_avx2(const double* x, double* y, int64_t n);
void gelu_values_avx512(const float* x, float* y, int64_t n);
void gelu_values_avx512(const double* x, double* y, int64_t n);
void gelu_derivative_times_avx512(const float* x, const float* g, float* dx, int64_t n);
void gelu_derivative_times_avx512(const double* x, const double* g, double* dx, int64_t n);
void gelu_values_avx2(const float* x, float* y, int64_t n);
void gelu_values_avx2(const double* x, double* y, int64_t n);
void gelu_derivative_times_avx2(const float* x, const float* g, float* dx, int64_t n);
void gelu_derivative_times_avx2(const double* x, const double* g, double* dx, int64_t n);

// The constants in the dtype, as every path uses them.
template <class T>
constexpr T kGeluC = T(0.70710678118654752440);  // 1/sqrt(2)
template <class T>
constexpr T kGeluK = T(0.39894228040143267794);  // 1/sqrt(2 pi)

}  // namespace cpu_driver

// One vector path's operations: a struct NAME of `W` lanes of T in VEC.
#define UMLOS_GELU_OPS(NAME, T, VEC, W, LOAD, STORE, SET1, ADD, MUL, ERF, EXP) \
  struct NAME {                                                                \
    static constexpr int64_t width = W;                                        \
    static VEC load(const T* p) { return LOAD(p); }                            \
    static void store(T* p, VEC v) { STORE(p, v); }                            \
    static VEC set1(T v) { return SET1(v); }                                   \
    static VEC add(VEC a, VEC b) { return ADD(a, b); }                         \
    static VEC mul(VEC a, VEC b) { return MUL(a, b); }                         \
    static VEC erf(VEC v) { return ERF(v); }                                   \
    static VEC exp(VEC v) { return EXP(v); }                                   \
  };

// erf_f32_values' and erf_f64_values' loop for an ops struct V (as below)
// of element type T, whose erf is erf32's or erf64's.
#define UMLOS_ERF_LOOP(V, T)                                                          \
  void erf_values_loop(const T* x, T* y, int64_t n) {                                 \
    int64_t i = 0;                                                                    \
    for (; i + V::width <= n; i += V::width) V::store(y + i, V::erf(V::load(x + i))); \
    if (i < n) {                                                                      \
      T in[V::width] = {}, out[V::width];                                             \
      for (int64_t k = i; k < n; ++k) in[k - i] = x[k];                               \
      V::store(out, V::erf(V::load(in)));                                             \
      for (int64_t k = i; k < n; ++k) y[k] = out[k - i];                              \
    }                                                                                 \
  }

// The loops of one vector path, over an ops struct V with: type, width,
// load, store, set1, add, mul, erf, exp. The last partial vector is
// computed from a padded copy: an element's bits do not depend on its
// neighbours.
#define UMLOS_GELU_LOOPS(V, T)                                                             \
  void gelu_values_loop(const T* x, T* y, int64_t n) {                                     \
    const auto half = V::set1(T(0.5)), one = V::set1(T(1)), c = V::set1(kGeluC<T>);        \
    auto one_vector = [&](const T* in, T* out) {                                           \
      const auto v = V::load(in);                                                          \
      V::store(out, V::mul(V::mul(half, v), V::add(one, V::erf(V::mul(v, c)))));           \
    };                                                                                     \
    int64_t i = 0;                                                                         \
    for (; i + V::width <= n; i += V::width) one_vector(x + i, y + i);                     \
    if (i < n) {                                                                           \
      T in[V::width] = {}, out[V::width];                                                  \
      for (int64_t k = i; k < n; ++k) in[k - i] = x[k];                                    \
      one_vector(in, out);                                                                 \
      for (int64_t k = i; k < n; ++k) y[k] = out[k - i];                                   \
    }                                                                                      \
  }                                                                                        \
  void gelu_derivative_loop(const T* x, const T* g, T* dx, int64_t n) {                    \
    const auto half = V::set1(T(0.5)), minus_half = V::set1(T(-0.5)), one = V::set1(T(1)); \
    const auto c = V::set1(kGeluC<T>), k = V::set1(kGeluK<T>);                             \
    auto one_vector = [&](const T* in, const T* grad, T* out) {                            \
      const auto v = V::load(in);                                                          \
      const auto cdf = V::mul(half, V::add(one, V::erf(V::mul(v, c))));                    \
      const auto pdf = V::mul(V::exp(V::mul(V::mul(minus_half, v), v)), k);                \
      V::store(out, V::mul(V::load(grad), V::add(cdf, V::mul(v, pdf))));                   \
    };                                                                                     \
    int64_t i = 0;                                                                         \
    for (; i + V::width <= n; i += V::width) one_vector(x + i, g + i, dx + i);             \
    if (i < n) {                                                                           \
      T in[V::width] = {}, grad[V::width] = {}, out[V::width];                             \
      for (int64_t j = i; j < n; ++j) {                                                    \
        in[j - i] = x[j];                                                                  \
        grad[j - i] = g[j];                                                                \
      }                                                                                    \
      one_vector(in, grad, out);                                                           \
      for (int64_t j = i; j < n; ++j) dx[j] = out[j - i];                                  \
    }                                                                                      \
  }
