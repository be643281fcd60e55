// gemm_ukr.hpp — the register-blocked micro-kernel of gemm.hpp, written once
// over a small table of vector operations (Ops) that each instruction-set
// file supplies. Included only by those files, each compiled for its own
// instruction set; everything here has internal linkage so that no
// instruction-set-specific code can be picked by the linker for another
// file. No std:: templates here for the same reason.
#pragma once

#include <cstdint>

#include "gemm.hpp"

namespace cpu_driver {
namespace {

// The unrolling of the loops over k: a speed choice only (each k runs the
// same step, so the bits are the same unrolled or not). Sanitizer builds
// define UMLOS_GEMM_NO_UNROLL: instrumenting the unrolled tiles of every
// kernel took clang minutes per file, most of the sanitizer build.
#define UMLOS_GEMM_PRAGMA(x) _Pragma(#x)
#if defined(UMLOS_GEMM_NO_UNROLL)
#define UMLOS_GEMM_UNROLL_K(n) UMLOS_GEMM_PRAGMA(GCC unroll 1)
#else
#define UMLOS_GEMM_UNROLL_K(n) UMLOS_GEMM_PRAGMA(GCC unroll n)
#endif

// Ops: T (element), V (vector register), W (elements per vector), zero(),
// load(p), set1(x), fma(a, b, c) = a*b+c rounded once, add(a, b), store(p, v),
// relu(v) = v > 0 ? v : 0 per element. UMLOS_GEMM_OPS writes one from the
// intrinsics of an instruction set; its max(v, 0) is x86's MAXPS/MAXPD,
// which returns the second operand (+0) where v is NaN or a zero of either
// sign: the same values as the comparison.
#define UMLOS_GEMM_OPS(Name, Elem, Vec, Width, setzero, loadu, set1_, fmadd, add_, storeu, max_) \
  struct Name {                                                                                  \
    using T = Elem;                                                                              \
    using V = Vec;                                                                               \
    static constexpr int W = Width;                                                              \
    static V zero() { return setzero(); }                                                        \
    static V load(const T* p) { return loadu(p); }                                               \
    static V set1(T x) { return set1_(x); }                                                      \
    static V fma(V a, V b, V c) { return fmadd(a, b, c); }                                       \
    static V add(V a, V b) { return add_(a, b); }                                                \
    static void store(T* p, V v) { storeu(p, v); }                                               \
    static V relu(V v) { return max_(v, setzero()); }                                            \
  };
// One k of the tile: acc[r][v] = fma(A(r, k), B(k, v), acc[r][v]).
template <class Ops, int MR, int NV, int Layout, int AS>
__attribute__((always_inline)) inline void gemm_ukr_step(int64_t k, const typename Ops::T* a, int64_t lda,
                                                         const typename Ops::T* b, typename Ops::V (&acc)[MR][NV]) {
  using V = typename Ops::V;
  constexpr int W = Ops::W, NR = NV * Ops::W;
  V bv[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) bv[v] = Ops::load(b + k * NR + v * W);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    const V ar = Ops::set1(Layout == 0 ? a[k * AS + r] : Layout == 1 ? a[k * lda + r] : a[r * lda + k]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = Ops::fma(ar, bv[v], acc[r][v]);
  }
}

// The side job of GemmPanelCopy, run during the first k of a tile: copy
// its rows while the multiply-adds go on, then prefetch one row every 8 k
// (few misses in flight at once, so none is dropped). Returns the first k
// not yet computed. Touches no accumulator but through gemm_ukr_step, so the
// tile's arithmetic is unchanged.
template <class Ops, int MR, int NV, int Layout, int AS>
__attribute__((always_inline)) inline int64_t gemm_ukr_with_copy(int64_t kc, const typename Ops::T* a, int64_t lda,
                                                                 const typename Ops::T* b,
                                                                 const GemmPanelCopy<typename Ops::T>& copy,
                                                                 typename Ops::V (&acc)[MR][NV]) {
  constexpr int W = Ops::W, NR = NV * Ops::W;
  constexpr int kLine = 64 / int(sizeof(typename Ops::T));
  const int64_t n = copy.rows < kc ? copy.rows : kc;
  int64_t k = 0;
  if (copy.transposed) {
    // Job j: column j % NR, k from 8 * (j / NR), up to 8 of them; the jobs
    // left when the tile's k run out are done after its last k.
    const int64_t jobs = (n + 7) / 8 * NR;
    auto run = [&](int64_t j) {
      const int64_t c = j % NR, k0 = j / NR * 8, k1 = k0 + 8 < n ? k0 + 8 : n;
      if (copy.prefetch != nullptr) __builtin_prefetch(copy.prefetch + k0 + c * copy.ld, 0, 3);
      for (int64_t kk = k0; kk < k1; ++kk) copy.dst[kk * NR + c] = copy.src[kk + c * copy.ld];
    };
    int64_t j = 0;
    for (; j < jobs && k < kc; ++j, ++k) {
      run(j);
      gemm_ukr_step<Ops, MR, NV, Layout, AS>(k, a, lda, b, acc);
    }
    for (; j < jobs; ++j) run(j);
    return k;
  }
  for (; k < n; ++k) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) Ops::store(copy.dst + k * NR + v * W, Ops::load(copy.src + k * copy.ld + v * W));
    gemm_ukr_step<Ops, MR, NV, Layout, AS>(k, a, lda, b, acc);
  }
  if (copy.prefetch == nullptr) return k;
  for (int64_t r = 0; k + 8 <= kc && r < copy.rows; k += 8, ++r) {
#pragma GCC unroll 4
    for (int l = 0; l < NR; l += kLine) __builtin_prefetch(copy.prefetch + r * copy.ld + l, 0, 3);
    UMLOS_GEMM_UNROLL_K(8)
    for (int kk = 0; kk < 8; ++kk) gemm_ukr_step<Ops, MR, NV, Layout, AS>(k + kk, a, lda, b, acc);
  }
  return k;
}

// MR rows of C. A's element (r, k) is, by Layout (GemmKernel::rows' first
// index): 0, a[k * AS + r] (a packed panel AS rows wide; lda unused, so the
// offsets are constants); 1, a[k * lda + r] (a column-major A read in
// place); 2, a[r * lda + k] (a row-major A read in place). Either way each
// output is the same fma chain over k in ascending order.
// With `copy`, the tile also does GemmPanelCopy's side job; with `epi`
// (the tile's own: bias at its first column, y at its first element), the
// sums get their epilogue in registers before they are stored.
template <class Ops, int MR, int NV, int Layout, int AS>
void gemm_ukr(int64_t kc, const typename Ops::T* a, int64_t lda, const typename Ops::T* b, typename Ops::T* c,
              int64_t ldc, int first, const GemmPanelCopy<typename Ops::T>* copy,
              const GemmEpilogue<typename Ops::T>* epi) {
  using V = typename Ops::V;
  constexpr int W = Ops::W;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = Ops::zero();
  int64_t k = copy != nullptr ? gemm_ukr_with_copy<Ops, MR, NV, Layout, AS>(kc, a, lda, b, *copy, acc) : 0;
  UMLOS_GEMM_UNROLL_K(4)
  for (; k < kc; ++k) gemm_ukr_step<Ops, MR, NV, Layout, AS>(k, a, lda, b, acc);
  // Two store loops rather than one with the epilogue's steps behind
  // tests: this loop ends every product, and in the merged one GCC
  // commuted an addition on the AVX2 float64 kernel, which gave a NaN sum
  // the other sign than the three primitives give (IEEE 754 leaves a NaN's
  // sign open; the values are the same).
  if (epi != nullptr) {
    V bias[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bias[v] = Ops::load(epi->bias + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        typename Ops::T* p = c + r * ldc + v * W;
        const V old = first ? Ops::zero() : Ops::load(p);
        const V z = Ops::add(Ops::add(old, acc[r][v]), bias[v]);
        Ops::store(p, z);
        if (epi->y != nullptr) Ops::store(epi->y + r * epi->ldy + v * W, Ops::relu(z));
      }
    return;
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      typename Ops::T* p = c + r * ldc + v * W;
      const V old = first ? Ops::zero() : Ops::load(p);
      Ops::store(p, Ops::add(old, acc[r][v]));
    }
}

// rows[R - 1] = the kernel of the first R rows, for R = Rows .. 1.
template <class Ops, int NV, int Layout, int AS, int Rows>
struct GemmRowKernels {
  static void fill(typename GemmKernel<typename Ops::T>::Ukr* rows) {
    rows[Rows - 1] = gemm_ukr<Ops, Rows, NV, Layout, AS>;
    GemmRowKernels<Ops, NV, Layout, AS, Rows - 1>::fill(rows);
  }
};
template <class Ops, int NV, int Layout, int AS>
struct GemmRowKernels<Ops, NV, Layout, AS, 0> {
  static void fill(typename GemmKernel<typename Ops::T>::Ukr*) {}
};

// The MR x (NV vectors) kernel and its row remainders, for each layout of A.
template <class Ops, int MR, int NV>
GemmKernel<typename Ops::T> make_gemm_kernel() {
  static_assert(MR <= kGemmMaxMr, "GemmKernel::rows holds kGemmMaxMr kernels");
  GemmKernel<typename Ops::T> k{MR, NV * Ops::W, {}};
  GemmRowKernels<Ops, NV, 0, MR, MR>::fill(k.rows[0]);
  GemmRowKernels<Ops, NV, 1, MR, MR>::fill(k.rows[1]);
  GemmRowKernels<Ops, NV, 2, MR, MR>::fill(k.rows[2]);
  return k;
}

}  // namespace
}  // namespace cpu_driver
