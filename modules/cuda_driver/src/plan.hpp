// plan.hpp — pure host/device planning shared by driver.cpp and kernels.cu:
// the parameter blocks the kernels take (plain structs passed by value), the
// launch geometry, broadcasting strides and the chunk plan of the canonical
// sum. No CUDA calls: tests/cuda_driver runs it on machines without a GPU.
//
// Determinism rule kept by everything here: the geometry (grid, block, how
// many threads share work) only decides WHICH thread computes an output
// element or a 256-element chunk sum, never the order of any operation inside
// it. Chunk sums are folded by one thread per output, in ascending chunk
// order. So results do not depend on the geometry, or on the GPU model's SM
// count, only on the arithmetic (docs/cuda_driver.md).
#pragma once

#include <cmath>

#include <stdint.h>

#ifdef __CUDACC__
#define UMLOS_HD __host__ __device__
#define UMLOS_SUM_QUALIFIER __host__ __device__ static inline
#else
#define UMLOS_HD
#endif

#include "umlos_sum.h"  // the canonical sum (spec 004 0.E), on host and device

namespace cuda_driver {

constexpr int kMaxRank = 8;                     // UMLOS_MAX_RANK
constexpr int64_t kSumChunk = UMLOS_SUM_CHUNK;  // the canonical sum's chunk (spec 004 0.E)
constexpr unsigned kBlock = 256;                // threads per block of the 1-D kernels
constexpr int64_t kMaxGrid = 65535;             // 1-D grids are capped; kernels loop (grid-stride)
constexpr int kGemmTile =
    16;  // GEMM k tile and threads per block side (divides kSumChunk: chunk ends fall on tile ends)
// GEMM outputs per thread along each side (64x64 outputs per block). 8 for
// f32 (128x128 per block, 226 registers, one block per SM) measured slower
// on the H100: 18.0 TFLOP/s at 4096^3 against 19.1, 10.1 against 16.4 at 1024.
constexpr int kGemmRegsF32 = 4;
constexpr int kGemmRegsF64 = 4;

// ---------------------------------------------------------------- geometry

struct Launch {
  unsigned grid = 1, block = 1;
};

// A grid-stride 1-D launch over n independent items (n may be 0: one block
// that does nothing, so a launch never has a zero dimension).
inline Launch launch_1d(int64_t n, unsigned block = kBlock) {
  Launch l;
  l.block = block;
  int64_t blocks = (n + block - 1) / block;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxGrid) blocks = kMaxGrid;
  l.grid = static_cast<unsigned>(blocks);
  return l;
}

// ---------------------------------------------------------------- sums

// x viewed as [outer, len, inner] around a reduced axis: outer*inner outputs,
// each the canonical sum of len values at stride `inner`. Phase 1: one thread
// per (output, chunk) computes the chunk's left fold; phase 2: one thread per
// output folds its chunk sums in ascending order.
struct ReducePlan {
  int64_t outer = 1, len = 0, inner = 1;
  int64_t chunks = 0;    // ceil(len / 256)
  int64_t outputs = 1;   // outer * inner
  int64_t partials = 0;  // outputs * chunks: doubles of scratch
};

inline ReducePlan plan_reduce(int64_t outer, int64_t len, int64_t inner) {
  ReducePlan p;
  p.outer = outer;
  p.len = len;
  p.inner = inner;
  p.chunks = (len + kSumChunk - 1) / kSumChunk;
  p.outputs = outer * inner;
  p.partials = p.outputs * p.chunks;
  return p;
}

// [begin, end) of chunk c of a line of `len` values.
UMLOS_HD inline void chunk_range(int64_t len, int64_t c, int64_t* begin, int64_t* end) {
  *begin = c * kSumChunk;
  *end = *begin + kSumChunk < len ? *begin + kSumChunk : len;
}

// The canonical sum as one thread computes it, for any value function
// (abi/umlos_sum.h); the host tests compare it with a direct sequential fold.
template <class F>
UMLOS_HD inline double canonical_fold(int64_t len, F value) {
  umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT;
  for (int64_t i = 0; i < len; ++i) umlos_canonical_sum_add(&s, value(i));
  return umlos_canonical_sum_result(&s);
}

// ---------------------------------------------------------------- broadcast

// Output dims and per-operand strides in the output's index space (0 on a
// broadcast axis), right-aligned numpy rules; rank <= kMaxRank.
struct BroadcastDesc {
  int32_t rank = 0;
  int64_t numel = 1;
  int64_t out_dims[kMaxRank] = {0};
  int64_t stride_a[kMaxRank] = {0};
  int64_t stride_b[kMaxRank] = {0};
};

// false when the shapes do not broadcast.
inline bool plan_broadcast(const int64_t* a, int ra, const int64_t* b, int rb, BroadcastDesc* out) {
  int rank = ra > rb ? ra : rb;
  if (rank > kMaxRank) return false;
  int64_t pa[kMaxRank], pb[kMaxRank];
  for (int i = 0; i < rank; ++i) {
    pa[i] = i < rank - ra ? 1 : a[i - (rank - ra)];
    pb[i] = i < rank - rb ? 1 : b[i - (rank - rb)];
  }
  BroadcastDesc d;
  d.rank = rank;
  for (int i = 0; i < rank; ++i) {
    if (pa[i] != pb[i] && pa[i] != 1 && pb[i] != 1) return false;
    d.out_dims[i] = pa[i] == 1 ? pb[i] : pa[i];
  }
  int64_t sa = 1, sb = 1;
  for (int k = rank - 1; k >= 0; --k) {
    d.stride_a[k] = pa[k] == 1 ? 0 : sa;
    d.stride_b[k] = pb[k] == 1 ? 0 : sb;
    sa *= pa[k];
    sb *= pb[k];
  }
  d.numel = 1;
  for (int i = 0; i < rank; ++i) d.numel *= d.out_dims[i];
  *out = d;
  return true;
}

// Flat offsets of operands a and b for output flat index p.
UMLOS_HD inline void broadcast_offsets(const BroadcastDesc& d, int64_t p, int64_t* ia, int64_t* ib) {
  int64_t oa = 0, ob = 0;
  for (int k = d.rank - 1; k >= 0; --k) {
    int64_t ext = d.out_dims[k];
    int64_t idx = ext ? p % ext : 0;
    p = ext ? p / ext : 0;
    oa += idx * d.stride_a[k];
    ob += idx * d.stride_b[k];
  }
  *ia = oa;
  *ib = ob;
}

// ---------------------------------------------------------------- GEMM

// c(bi, i, j) = canonical_sum_k A(bi, i, k) * B(bi, k, j), all in binary64,
// rounded once. Operands are addressed through strides so that one kernel
// serves matmul forward and both gradients with any transposes:
//   A(bi,i,k) = a[bi*a_b + i*a_i + (k / k_inner)*a_ko + (k % k_inner)*a_ki]
//   B(bi,k,j) = b[bi*b_b + j*b_j + (k / k_inner)*b_ko + (k % k_inner)*b_ki]
//   c(bi,i,j) = c[bi*c_b + i*c_i + j*c_j]
// (k_inner splits the reduction index into (batch, row) for the gradient of
// a shared b, whose sum runs over every batch's rows in ascending order).
struct GemmDesc {
  int64_t batch = 1, M = 0, N = 0, K = 0, k_inner = 1;
  int64_t a_b = 0, a_i = 0, a_ko = 0, a_ki = 0;
  int64_t b_b = 0, b_j = 0, b_ko = 0, b_ki = 0;
  int64_t c_b = 0, c_i = 0, c_j = 0;
};

struct Launch3 {
  unsigned gx = 1, gy = 1, gz = 1, bx = kGemmTile, by = kGemmTile;
};

inline Launch3 launch_gemm(const GemmDesc& g, bool f32) {
  Launch3 l;
  const int64_t block = kGemmTile * (f32 ? kGemmRegsF32 : kGemmRegsF64);
  int64_t gx = (g.N + block - 1) / block, gy = (g.M + block - 1) / block;
  l.gx = static_cast<unsigned>(gx < 1 ? 1 : gx);
  l.gy = static_cast<unsigned>(gy < 1 ? 1 : gy);
  l.gz = static_cast<unsigned>(g.batch < 1 ? 1 : g.batch);
  return l;
}

// The three products of matmul (docs/primitives.md), for a = [.., M, K]
// ([.., K, M] when ta), b = [K, N] ([N, K] when tb) or with a's batch dims
// (shared_b false), dc = [.., M, N].
struct MatmulDims {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool ta = false, tb = false, shared_b = false;
};

// c = op(a) op(b): A = op(a), B = op(b), reduction over K.
inline GemmDesc gemm_forward_desc(const MatmulDims& s) {
  GemmDesc g;
  g.batch = s.batch;
  g.M = s.M;
  g.N = s.N;
  g.K = s.K;
  g.k_inner = s.K > 0 ? s.K : 1;
  g.a_b = s.M * s.K;
  g.a_i = s.ta ? 1 : s.K;
  g.a_ki = s.ta ? s.M : 1;
  g.a_ko = 0;
  g.b_b = s.shared_b ? 0 : s.K * s.N;
  g.b_j = s.tb ? s.K : 1;
  g.b_ki = s.tb ? 1 : s.N;
  g.b_ko = 0;
  g.c_b = s.M * s.N;
  g.c_i = s.N;
  g.c_j = 1;
  return g;
}

// da: D(bi, m, k) = sum_n dc(bi, m, n) * op(b)(k, n), stored transposed back
// when ta. GEMM operands: A = dc, B = b.
inline GemmDesc gemm_grad_a_desc(const MatmulDims& s) {
  const int64_t M = s.M, N = s.N, K = s.K;
  GemmDesc g;
  g.batch = s.batch;
  g.M = M;
  g.N = K;
  g.K = N;
  g.k_inner = N > 0 ? N : 1;
  g.a_b = M * N;
  g.a_i = N;
  g.a_ki = 1;
  g.a_ko = 0;
  // op(b)(k, n) = tb ? b[n*K + k] : b[k*N + n]
  g.b_b = s.shared_b ? 0 : K * N;
  g.b_j = s.tb ? 1 : N;
  g.b_ki = s.tb ? K : 1;
  g.b_ko = 0;
  g.c_b = M * K;
  g.c_i = s.ta ? 1 : K;
  g.c_j = s.ta ? M : 1;
  return g;
}

// db: E(k, n) = sum_r op(a)(r, k) * dc(r, n), r over the batch's M rows, or,
// for a shared b, over (batch, row) in ascending order (k_inner = M); stored
// transposed back when tb. GEMM operands: A = a, B = dc.
inline GemmDesc gemm_grad_b_desc(const MatmulDims& s) {
  const int64_t M = s.M, N = s.N, K = s.K;
  GemmDesc g;
  g.batch = s.shared_b ? 1 : s.batch;
  g.M = K;
  g.N = N;
  g.K = s.shared_b ? s.batch * M : M;
  g.k_inner = M > 0 ? M : 1;
  // op(a)(bi, m, k) = ta ? a[bi*M*K + k*M + m] : a[bi*M*K + m*K + k]
  g.a_b = M * K;
  g.a_i = s.ta ? M : 1;
  g.a_ko = M * K;
  g.a_ki = s.ta ? 1 : K;
  g.b_b = M * N;
  g.b_j = 1;
  g.b_ko = M * N;
  g.b_ki = N;
  g.c_b = K * N;
  g.c_i = s.tb ? 1 : N;
  g.c_j = s.tb ? K : 1;
  return g;
}

// One output element exactly as umlos_gemm_* computes it, and as
// cpu_driver's matmul does (16-wide k tiles in ascending order, fused
// multiply-adds in the tensor dtype, the chunk folded into the total every
// 256 k): the host tests run this against cpu_driver's matmul, bit for bit.
template <class T>
inline T gemm_element(const GemmDesc& g, const T* a, const T* b, int64_t bi, int64_t i, int64_t j) {
  T total = 0, chunk = 0;
  for (int64_t k0 = 0; k0 < g.K; k0 += kGemmTile) {
    int64_t kn = g.K - k0 < kGemmTile ? g.K - k0 : kGemmTile;
    for (int64_t kk = 0; kk < kn; ++kk) {
      int64_t k = k0 + kk;
      T av = a[bi * g.a_b + i * g.a_i + (k / g.k_inner) * g.a_ko + (k % g.k_inner) * g.a_ki];
      T bv = b[bi * g.b_b + j * g.b_j + (k / g.k_inner) * g.b_ko + (k % g.k_inner) * g.b_ki];
      chunk = std::fma(av, bv, chunk);
    }
    int64_t done = k0 + kn;
    if (done % kSumChunk == 0 || done == g.K) {
      total = total + chunk;
      chunk = 0;
    }
  }
  return total;
}

// Where element (bi, i, j) of the product is stored.
inline int64_t gemm_out_offset(const GemmDesc& g, int64_t bi, int64_t i, int64_t j) {
  return bi * g.c_b + i * g.c_i + j * g.c_j;
}

}  // namespace cuda_driver
