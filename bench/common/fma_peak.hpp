// fma_peak.hpp — the FMA peak of one core, measured: a register-resident
// loop of independent fused multiply-adds (2 flops each) on full vectors,
// per instruction set and dtype. The yardstick of the matmul and executor
// benches. Header-only, shared by the bench programs.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

namespace umlos_bench {

// passes x N independent FMAs on full vectors: enough accumulators to
// cover the FMA latency on two ports (8 at a latency of 4), and few enough
// to stay in registers: AVX2 names 16 vector registers, so 24 accumulators
// spilled to the stack and halved the measured peak; AVX-512 names 32.
// Returns a lane of their sum so the loop stays alive.
#define UMLOS_FMA_LOOP(name, isa, V, set1, fma, add, Elem, N)                                                          \
  inline __attribute__((target(isa))) double name(long passes) {                                                       \
    V acc[N];                                                                                                          \
    volatile double seed = 0.9999999;                                                                                  \
    const V m = set1(static_cast<Elem>(seed)), a = set1(static_cast<Elem>(1e-9 * seed));                               \
    for (int k = 0; k < N; ++k) acc[k] = set1(static_cast<Elem>(k));                                                   \
    for (long p = 0; p < passes; ++p) _Pragma("GCC unroll 24") for (int k = 0; k < N; ++k) acc[k] = fma(acc[k], m, a); \
    V s = acc[0];                                                                                                      \
    for (int k = 1; k < N; ++k) s = add(s, acc[k]);                                                                    \
    Elem out[sizeof(V) / sizeof(Elem)];                                                                                \
    std::memcpy(out, &s, sizeof s);                                                                                    \
    return static_cast<double>(out[0]);                                                                                \
  }
UMLOS_FMA_LOOP(loop512s, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, float, 24)
UMLOS_FMA_LOOP(loop512d, "avx512f", __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, double, 24)
UMLOS_FMA_LOOP(loop256s, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, float, 12)
UMLOS_FMA_LOOP(loop256d, "avx2,fma", __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, double, 12)
#undef UMLOS_FMA_LOOP

// Best of `repeats`, GFLOP/s of one core for (path "avx512" or "avx2", dtype).
inline double fma_peak(const std::string& isa, bool f32, int repeats) {
  const long passes = 10'000'000;
  const int lanes = (isa == "avx512" ? 64 : 32) / (f32 ? 4 : 8);
  const int chains = isa == "avx512" ? 24 : 12;
  double (*loop)(long) = isa == "avx512" ? (f32 ? loop512s : loop512d) : (f32 ? loop256s : loop256d);
  double best = 0, sink = 0;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    sink += loop(passes);
    best = std::max(best, 2.0 * chains * lanes * passes /
                              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9);
  }
  if (sink == 42.0) std::puts("");  // keeps the loops alive
  return best;
}

}  // namespace umlos_bench
