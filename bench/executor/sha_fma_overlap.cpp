// sha_fma_overlap.cpp — whether execution_fp's SHA-256 lanes can run in
// the shadow of a product's multiply-adds on one core.
//
// The executor bench's floor adds the two: the hashed bytes at the four
// lanes' rate plus the products' flops at the FMA peak. That is a bound only
// if one core cannot do both at once: the SHA extensions' instructions and
// the FMAs might issue to different pipes. This program times, on one core,
//   A. four SHA-256 lanes (umlos::hashing::sha256_advance, the leaf hashing
//      of execution_fp) over four 128 KiB messages, one block per call;
//   B. register-resident FMAs (AVX-512 float32, 24 accumulators, as in
//      bench/common/fma_peak.hpp), in pieces of about a block's time;
//   C. the same work with A's blocks and B's pieces alternating, so that
//      both are in flight in the out-of-order window at once;
// and prints C against A + B (no overlap) and max(A, B) (full overlap).
//
// Usage: umlos_bench_sha_fma_overlap [rounds=3]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../modules/lib/hashing/sha256_lanes.hpp"

namespace {

using umlos::hashing::Sha256State;

constexpr size_t kMessage = 128 * 1024;  // one execution_fp leaf of binary64 values
constexpr size_t kBlocks = kMessage / 64;
constexpr int kAccumulators = 24;

struct Fmas {
  __m512 acc[kAccumulators];
};

// `passes` x 24 independent FMAs on the accumulators in place.
__attribute__((target("avx512f"), always_inline)) inline void fma_piece(Fmas& f, int passes) {
  const __m512 m = _mm512_set1_ps(0.9999999f), a = _mm512_set1_ps(1e-9f);
  for (int p = 0; p < passes; ++p)
#pragma GCC unroll 24
    for (int k = 0; k < kAccumulators; ++k) f.acc[k] = _mm512_fmadd_ps(f.acc[k], m, a);
}

__attribute__((target("avx512f"))) void fma_init(Fmas& f) {
  for (int k = 0; k < kAccumulators; ++k) f.acc[k] = _mm512_set1_ps(static_cast<float>(k));
}

__attribute__((target("avx512f"))) float fma_sink(const Fmas& f) {
  __m512 s = f.acc[0];
  for (int k = 1; k < kAccumulators; ++k) s = _mm512_add_ps(s, f.acc[k]);
  float out[16];
  std::memcpy(out, &s, sizeof s);
  return out[0];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `calls` iterations of: hash (one block of each lane) if `hash`, then
// an FMA piece of `passes` if `fma`. Returns seconds.
__attribute__((target("avx512f"))) double run(const std::vector<uint8_t>& data, size_t calls, bool hash, bool fma,
                                              int passes, Fmas& f, Sha256State (&st)[4]) {
  Sha256State* sp[4] = {&st[0], &st[1], &st[2], &st[3]};
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t c = 0; c < calls; ++c) {
    const size_t b = c % kBlocks;
    if (hash) {
      const uint8_t* msg[4];
      for (int i = 0; i < 4; ++i) msg[i] = data.data() + i * kMessage + 64 * b;
      umlos::hashing::sha256_advance(sp, msg, 4, 1);
    }
    if (fma) fma_piece(f, passes);
  }
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !umlos::hashing::Sha256Lanes<4>::available()) {
    std::printf("needs AVX-512F and the SHA extensions; this CPU lacks one: nothing measured\n");
    return 0;
  }
  std::vector<uint8_t> data(4 * kMessage);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  Fmas f;
  fma_init(f);
  Sha256State st[4];
  for (auto& s : st) s = umlos::hashing::sha256_initial_state();
  const size_t calls = 200000;
  // An FMA piece about as long as one call of four blocks: 24 FMAs take 12
  // cycles at two a cycle, a four-lane block about 250.
  const int passes = 20;
  std::printf(
      "| round | A: SHA-256, 4 lanes (s) | GB/s | B: FMAs (s) | GFLOP/s | C: both, alternating (s) | A + B | "
      "max(A, B) | overlap: (A + B - C) / min(A, B) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int r = 0; r < rounds; ++r) {
    const double a = run(data, calls, true, false, passes, f, st);
    const double b = run(data, calls, false, true, passes, f, st);
    const double c = run(data, calls, true, true, passes, f, st);
    std::printf("| %d | %.4f | %.2f | %.4f | %.1f | %.4f | %.4f | %.4f | %.0f %% |\n", r + 1, a,
                4.0 * 64 * calls / a / 1e9, b, 2.0 * 16 * kAccumulators * passes * calls / b / 1e9, c, a + b,
                std::max(a, b), 100 * (a + b - c) / std::min(a, b));
  }
  if (fma_sink(f) == 42.0f && st[0].h[0] == 42) std::puts("");  // keeps both alive
  return 0;
}
