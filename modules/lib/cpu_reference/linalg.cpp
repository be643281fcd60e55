// linalg.cpp — matmul (batched, with transposes), cosine_similarity,
// row_normalize, covariance and layer_norm, forward and gradient.
//
// matmul runs in the tensors' dtype through gemm.hpp (fused multiply-adds,
// the canonical chunking of k). The others compute norms and statistics,
// which stay binary64 (docs/primitives.md, "Precision"), through the binary64
// kernel below. Its operands are packed into binary64
// row-major copies (transposes resolved while packing), and every output
// element is the canonical sum over k of a[i,k]*b[k,j] (256-long k chunks
// folded in ascending order, then the chunk sums in ascending order), rounded
// once to the output dtype. Threads take contiguous ranges of output rows;
// the column tile ("block") only changes which columns are in cache together,
// never the order of any sum, so neither changes results.
#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu_reference.hpp"
#include "gemm.hpp"

namespace cpu_driver {
namespace {

constexpr int64_t kTileRows = 4;  // rows of C computed together
constexpr int64_t kTileCols = 8;  // columns of C computed together (one B panel)

// acc[r][c] = sum over k in [0, kn) of a[r][k] * panel[k][c], a left fold from
// +0.0 in ascending k: one 256-long chunk of the canonical sum, for a 4x8 tile
// of C. Written with explicit vector intrinsics so that the order of every
// operation is the one written here: each accumulator lane sees exactly
// acc = acc + (a * b) (two roundings, never an FMA) for k = 0, 1, ... in
// order, so the SSE2 and AVX2 versions give bit-identical results.
#if defined(__x86_64__)
void tile_chunk_baseline(const double* const a[kTileRows], const double* panel, int64_t kn,
                         double acc[kTileRows][kTileCols]) {
  // SSE2 has 16 registers: two passes of 4 columns (8 accumulators each).
  for (int half = 0; half < 2; ++half) {
    __m128d c00 = _mm_setzero_pd(), c01 = _mm_setzero_pd(), c10 = _mm_setzero_pd(), c11 = _mm_setzero_pd();
    __m128d c20 = _mm_setzero_pd(), c21 = _mm_setzero_pd(), c30 = _mm_setzero_pd(), c31 = _mm_setzero_pd();
    const double* b = panel + half * 4;
    for (int64_t k = 0; k < kn; ++k, b += kTileCols) {
      __m128d b0 = _mm_loadu_pd(b), b1 = _mm_loadu_pd(b + 2);
      __m128d x0 = _mm_set1_pd(a[0][k]), x1 = _mm_set1_pd(a[1][k]);
      __m128d x2 = _mm_set1_pd(a[2][k]), x3 = _mm_set1_pd(a[3][k]);
      c00 = _mm_add_pd(c00, _mm_mul_pd(x0, b0));
      c01 = _mm_add_pd(c01, _mm_mul_pd(x0, b1));
      c10 = _mm_add_pd(c10, _mm_mul_pd(x1, b0));
      c11 = _mm_add_pd(c11, _mm_mul_pd(x1, b1));
      c20 = _mm_add_pd(c20, _mm_mul_pd(x2, b0));
      c21 = _mm_add_pd(c21, _mm_mul_pd(x2, b1));
      c30 = _mm_add_pd(c30, _mm_mul_pd(x3, b0));
      c31 = _mm_add_pd(c31, _mm_mul_pd(x3, b1));
    }
    double* o0 = acc[0] + half * 4;
    double* o1 = acc[1] + half * 4;
    double* o2 = acc[2] + half * 4;
    double* o3 = acc[3] + half * 4;
    _mm_storeu_pd(o0, c00);
    _mm_storeu_pd(o0 + 2, c01);
    _mm_storeu_pd(o1, c10);
    _mm_storeu_pd(o1 + 2, c11);
    _mm_storeu_pd(o2, c20);
    _mm_storeu_pd(o2 + 2, c21);
    _mm_storeu_pd(o3, c30);
    _mm_storeu_pd(o3 + 2, c31);
  }
}

__attribute__((target("avx2"))) void tile_chunk_avx2(const double* const a[kTileRows], const double* panel, int64_t kn,
                                                     double acc[kTileRows][kTileCols]) {
  __m256d c00 = _mm256_setzero_pd(), c01 = _mm256_setzero_pd(), c10 = _mm256_setzero_pd(), c11 = _mm256_setzero_pd();
  __m256d c20 = _mm256_setzero_pd(), c21 = _mm256_setzero_pd(), c30 = _mm256_setzero_pd(), c31 = _mm256_setzero_pd();
  const double* b = panel;
  for (int64_t k = 0; k < kn; ++k, b += kTileCols) {
    __m256d b0 = _mm256_loadu_pd(b), b1 = _mm256_loadu_pd(b + 4);
    __m256d x0 = _mm256_broadcast_sd(a[0] + k), x1 = _mm256_broadcast_sd(a[1] + k);
    __m256d x2 = _mm256_broadcast_sd(a[2] + k), x3 = _mm256_broadcast_sd(a[3] + k);
    c00 = _mm256_add_pd(c00, _mm256_mul_pd(x0, b0));
    c01 = _mm256_add_pd(c01, _mm256_mul_pd(x0, b1));
    c10 = _mm256_add_pd(c10, _mm256_mul_pd(x1, b0));
    c11 = _mm256_add_pd(c11, _mm256_mul_pd(x1, b1));
    c20 = _mm256_add_pd(c20, _mm256_mul_pd(x2, b0));
    c21 = _mm256_add_pd(c21, _mm256_mul_pd(x2, b1));
    c30 = _mm256_add_pd(c30, _mm256_mul_pd(x3, b0));
    c31 = _mm256_add_pd(c31, _mm256_mul_pd(x3, b1));
  }
  _mm256_storeu_pd(acc[0], c00);
  _mm256_storeu_pd(acc[0] + 4, c01);
  _mm256_storeu_pd(acc[1], c10);
  _mm256_storeu_pd(acc[1] + 4, c11);
  _mm256_storeu_pd(acc[2], c20);
  _mm256_storeu_pd(acc[2] + 4, c21);
  _mm256_storeu_pd(acc[3], c30);
  _mm256_storeu_pd(acc[3] + 4, c31);
}
#else
void tile_chunk_baseline(const double* const a[kTileRows], const double* panel, int64_t kn,
                         double acc[kTileRows][kTileCols]) {
  double c[kTileRows][kTileCols] = {};
  for (int64_t k = 0; k < kn; ++k)
    for (int r = 0; r < kTileRows; ++r)
      for (int j = 0; j < kTileCols; ++j) c[r][j] = c[r][j] + a[r][k] * panel[k * kTileCols + j];
  for (int r = 0; r < kTileRows; ++r)
    for (int j = 0; j < kTileCols; ++j) acc[r][j] = c[r][j];
}
#endif

using TileChunkFn = void (*)(const double* const[kTileRows], const double*, int64_t, double[kTileRows][kTileCols]);

TileChunkFn pick_tile_chunk(bool allow_simd) {
#if defined(__x86_64__)
  __builtin_cpu_init();  // idempotent; makes the check safe however early it runs
  if (allow_simd && __builtin_cpu_supports("avx2")) return tile_chunk_avx2;
#endif
  (void)allow_simd;
  return tile_chunk_baseline;
}

// C[M,N] = A[M,K] * B[K,N], all binary64 row-major, canonical sums over k.
// B is repacked into panels of kTileCols columns ([panel][k][col], zero
// padded) so the kernel reads it contiguously. Threads own contiguous ranges
// of 4-row groups; `block` columns of panels are swept per pass over a
// thread's rows (cache blocking only: no sum changes order).
void gemm_core(ThreadPool& pool, int64_t M, int64_t N, int64_t K, const double* A, const double* B, double* C,
               int64_t block, bool allow_simd) {
  if (M == 0 || N == 0) return;
  const TileChunkFn tile_chunk = pick_tile_chunk(allow_simd);
  int64_t panels = (N + kTileCols - 1) / kTileCols;
  std::vector<double> packed(static_cast<size_t>(panels * K * kTileCols), 0.0);
  pool.parallel_for(panels, 4, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < kTileCols && p * kTileCols + c < N; ++c)
          packed[(p * K + k) * kTileCols + c] = B[k * N + p * kTileCols + c];
  });
  const std::vector<double> zero_row(static_cast<size_t>(K), 0.0);  // stands in for rows past M
  int64_t row_groups = (M + kTileRows - 1) / kTileRows;
  int64_t panels_per_pass = std::max<int64_t>(1, block / kTileCols);
  // Enough work per range that a split pays for the wake-up.
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, N * K * kTileRows));
  pool.parallel_for(row_groups, grain, [&](int64_t g0, int64_t g1) {
    double acc[kTileRows][kTileCols];
    for (int64_t pb = 0; pb < panels; pb += panels_per_pass) {
      int64_t pend = std::min(panels, pb + panels_per_pass);
      for (int64_t g = g0; g < g1; ++g) {
        int64_t i0 = g * kTileRows, rows = std::min(kTileRows, M - i0);
        for (int64_t p = pb; p < pend; ++p) {
          int64_t j0 = p * kTileCols, cols = std::min(kTileCols, N - j0);
          double total[kTileRows][kTileCols] = {};
          for (int64_t kc = 0; kc < K; kc += kSumChunk) {
            int64_t kn = std::min(kSumChunk, K - kc);
            const double* a[kTileRows];
            for (int64_t r = 0; r < kTileRows; ++r) a[r] = (r < rows ? A + (i0 + r) * K : zero_row.data()) + kc;
            tile_chunk(a, packed.data() + (p * K + kc) * kTileCols, kn, acc);
            for (int64_t r = 0; r < kTileRows; ++r)
              for (int64_t c = 0; c < kTileCols; ++c) total[r][c] += acc[r][c];
          }
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) C[(i0 + r) * N + j0 + c] = total[r][c];
        }
      }
    }
  });
}

// dst = src[rows, cols] (or its transpose, [cols, rows]) converted to D:
// widening to binary64 before a product, rounding back to the tensor's type
// after it.
template <class S, class D>
void convert(ThreadPool& pool, const S* src, int64_t rows, int64_t cols, bool transpose, D* dst) {
  if (!transpose) {
    pool.parallel_for(rows * cols, 1 << 16, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) dst[i] = static_cast<D>(src[i]);
    });
    return;
  }
  pool.parallel_for(cols, std::max<int64_t>(16, row_grain(rows)), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t r = 0; r < rows; ++r) dst[c * rows + r] = static_cast<D>(src[r * cols + c]);
  });
}

// ---------------------------------------------------------------- matmul

// op(A)[M,K] of a stored [M,K], or [K,M] when transposed; op(B)[K,N] alike.
template <class T>
GemmMatrix<const T> op_matrix(const T* p, bool transposed, int64_t rows, int64_t cols) {
  return transposed ? GemmMatrix<const T>{p, 1, rows} : GemmMatrix<const T>{p, cols, 1};
}
template <class T>
GemmMatrix<T> out_matrix(T* p, bool transposed, int64_t rows, int64_t cols) {
  return transposed ? GemmMatrix<T>{p, 1, rows} : GemmMatrix<T>{p, cols, 1};
}
template <class T>
GemmMatrix<const T> transposed(GemmMatrix<const T> m) {
  return {m.p, m.cs, m.rs};
}

// With `bias` (matmul_bias_act), the product's epilogue: the bias added
// along its last axis, and with `y` the relu of that into y.
template <class T>
void matmul_forward(Call& c, const T* bias = nullptr, T* y = nullptr) {
  MatmulShape s = matmul_shape(c);
  c.expect_out_shape(0, s.out_dims);
  const T* pa = c.in[0].as<T>();
  const T* pb = c.in[1].as<T>();
  T* pc = c.out[0].as<T>();
  // Shared b with an untransposed a is one product with batch*M rows.
  int64_t batches = s.batch, M = s.M;
  if (s.shared_b && !s.ta) {
    M *= batches;
    batches = 1;
  }
  for (int64_t bi = 0; bi < batches; ++bi) {
    const T* b = pb + (s.shared_b ? 0 : bi * s.K * s.N);
    const GemmEpilogue<T> epi{bias, y ? y + bi * M * s.N : nullptr, s.N};
    gemm<T>(*c.pool, c.isa, M, s.N, s.K, op_matrix(pa + bi * M * s.K, s.ta, M, s.K), op_matrix(b, s.tb, s.K, s.N),
            GemmMatrix<T>{pc + bi * M * s.N, s.N, 1}, bias ? &epi : nullptr);
  }
}

template <class T>
void matmul_grad(Call& c) {
  MatmulShape s = matmul_shape(c);
  c.expect_in_shape(2, s.out_dims);
  c.expect_out_shape(0, c.in[0].dims);
  c.expect_out_shape(1, c.in[1].dims);
  const T* pa = c.in[0].as<T>();
  const T* pb = c.in[1].as<T>();
  const T* pg = c.in[2].as<T>();
  T* pda = c.out[0].as<T>();
  T* pdb = c.out[1].as<T>();
  const int64_t M = s.M, N = s.N, K = s.K;
  const bool want_da = c.wants(0), want_db = c.wants(1);
  // da: d op(A) = dC * op(B)^T, per batch.
  for (int64_t bi = 0; bi < s.batch && want_da; ++bi) {
    const T* b = pb + (s.shared_b ? 0 : bi * K * N);
    gemm<T>(*c.pool, c.isa, M, K, N, GemmMatrix<const T>{pg + bi * M * N, N, 1}, transposed(op_matrix(b, s.tb, K, N)),
            out_matrix(pda + bi * M * K, s.ta, M, K));
  }
  // db: d op(B) = op(A)^T * dC. With a shared b the reduction runs over every
  // batch's rows in ascending (batch, row) order: one product of length
  // batch*M, whose op(A)^T is [K, batch*M].
  if (!want_db) return;
  if (!s.shared_b) {
    for (int64_t bi = 0; bi < s.batch; ++bi)
      gemm<T>(*c.pool, c.isa, K, N, M, transposed(op_matrix(pa + bi * M * K, s.ta, M, K)),
              GemmMatrix<const T>{pg + bi * M * N, N, 1}, out_matrix(pdb + bi * K * N, s.tb, K, N));
    return;
  }
  const int64_t rows = s.batch * M;
  std::vector<T> untransposed;  // op(A) of every batch, [batch*M, K], when a is stored transposed
  const T* a_rows = pa;
  if (s.ta) {
    untransposed.resize(static_cast<size_t>(rows * K));
    for (int64_t bi = 0; bi < s.batch; ++bi)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t m = 0; m < M; ++m) untransposed[(bi * M + m) * K + k] = pa[bi * M * K + k * M + m];
    a_rows = untransposed.data();
  }
  gemm<T>(*c.pool, c.isa, K, N, rows, GemmMatrix<const T>{a_rows, 1, K}, GemmMatrix<const T>{pg, N, 1},
          out_matrix(pdb, s.tb, K, N));
}

void matmul_fwd_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { matmul_forward<decltype(t)>(c); });
}

// matmul_bias_act (docs/primitives.md, "Epilogues"): z = matmul(a, b) +
// bias along z's last axis, and with act "relu" also y = relu(z): each
// element of the product rounded to the dtype, then the bias added, then
// relu, as the three primitives dispatched one after another give, in one
// dispatch, the epilogue applied to each tile of the product as the GEMM
// finishes it (GemmEpilogue).
template <class T>
void matmul_bias_act(Call& c, bool relu) {
  const MatmulShape s = matmul_shape(c);
  c.expect_in_shape(2, {s.N});
  if (relu) c.expect_out_shape(1, s.out_dims);
  matmul_forward<T>(c, c.in[2].as<T>(), relu ? c.out[1].as<T>() : nullptr);
}

void matmul_bias_act_entry(Call& c) {
  const std::string act = c.attr_string("act", "none");
  if (act != "none" && act != "relu")
    fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": attribute 'act' is '" + act + "', expected none or relu");
  const bool relu = act == "relu";
  c.expect_counts(3, relu ? 2 : 1);
  if (relu)
    with_float_dtype(c, {1, 2}, {0, 1}, [&](auto t) { matmul_bias_act<decltype(t)>(c, true); });
  else
    with_float_dtype(c, {1, 2}, {0}, [&](auto t) { matmul_bias_act<decltype(t)>(c, false); });
}

void matmul_grad_entry(Call& c) {
  c.expect_counts(3, 2);
  with_float_dtype(c, {1, 2}, {0, 1}, [&](auto t) { matmul_grad<decltype(t)>(c); });
}

// ---------------------------------------------------------------- row helpers

template <class T>
std::vector<double> widen(ThreadPool& pool, const Operand& o) {
  std::vector<double> v(static_cast<size_t>(o.numel));
  convert(pool, o.as<T>(), 1, o.numel, false, v.data());
  return v;
}

// Canonical L2 norm of each row of x[rows, d].
std::vector<double> row_norms(ThreadPool& pool, const double* x, int64_t rows, int64_t d) {
  std::vector<double> n(static_cast<size_t>(rows));
  pool.parallel_for(rows, row_grain(d), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      CanonicalSum acc;
      for (int64_t k = 0; k < d; ++k) acc.add(x[i * d + k] * x[i * d + k]);
      n[i] = std::sqrt(acc.result());
    }
  });
  return n;
}

std::vector<double> transposed(ThreadPool& pool, const double* x, int64_t rows, int64_t cols) {
  std::vector<double> t(static_cast<size_t>(rows * cols));
  convert(pool, x, rows, cols, true, t.data());
  return t;
}

// ---------------------------------------------------------------- cosine_similarity

void check_rows_pair(const Call& c) {
  const Operand &a = c.in[0], &b = c.in[1];
  if (a.rank() != 2) c.shape_error(c.in_name(0) + ": expected rank 2 [n, d], got " + shape_string(a.dims));
  if (b.rank() != 2) c.shape_error(c.in_name(1) + ": expected rank 2 [m, d], got " + shape_string(b.dims));
  if (a.dims[1] != b.dims[1])
    c.shape_error(c.in_name(1) + ": expected " + std::to_string(a.dims[1]) + " columns (as " + c.in_name(0) +
                  "), got " + std::to_string(b.dims[1]));
}

struct CosineParts {
  int64_t n, m, d;
  std::vector<double> A, B, na, nb, S;  // S = dot / (max(na,eps) max(nb,eps))
};

template <class T>
CosineParts cosine_parts(Call& c, double eps) {
  CosineParts p;
  p.n = c.in[0].dims[0];
  p.m = c.in[1].dims[0];
  p.d = c.in[0].dims[1];
  p.A = widen<T>(*c.pool, c.in[0]);
  p.B = widen<T>(*c.pool, c.in[1]);
  p.na = row_norms(*c.pool, p.A.data(), p.n, p.d);
  p.nb = row_norms(*c.pool, p.B.data(), p.m, p.d);
  std::vector<double> Bt = transposed(*c.pool, p.B.data(), p.m, p.d);
  p.S.assign(static_cast<size_t>(p.n * p.m), 0.0);
  gemm_core(*c.pool, p.n, p.m, p.d, p.A.data(), Bt.data(), p.S.data(), c.block, c.simd);
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.m; ++j) p.S[i * p.m + j] /= std::max(p.na[i], eps) * std::max(p.nb[j], eps);
  return p;
}

double eps_attr(const Call& c, double dflt) {
  double eps = c.attr_float("eps", dflt);
  if (!(eps > 0))
    fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": attribute 'eps' must be > 0, got " + std::to_string(eps));
  return eps;
}

template <class T>
void cosine_forward(Call& c) {
  check_rows_pair(c);
  c.expect_out_shape(0, {c.in[0].dims[0], c.in[1].dims[0]});
  CosineParts p = cosine_parts<T>(c, eps_attr(c, 1e-8));
  convert(*c.pool, p.S.data(), p.n, p.m, false, c.out[0].as<T>());
}

template <class T>
void cosine_grad(Call& c) {
  check_rows_pair(c);
  c.expect_in_shape(2, {c.in[0].dims[0], c.in[1].dims[0]});
  c.expect_out_shape(0, c.in[0].dims);
  c.expect_out_shape(1, c.in[1].dims);
  double eps = eps_attr(c, 1e-8);
  CosineParts p = cosine_parts<T>(c, eps);
  std::vector<double> G = widen<T>(*c.pool, c.in[2]);
  // W = dS / (ca cb); dA = W B - a * rowsum(dS*S)/|a|^2 (when |a| > eps).
  std::vector<double> W(static_cast<size_t>(p.n * p.m));
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.m; ++j)
      W[i * p.m + j] = G[i * p.m + j] / (std::max(p.na[i], eps) * std::max(p.nb[j], eps));
  std::vector<double> dA(static_cast<size_t>(p.n * p.d)), dB(static_cast<size_t>(p.m * p.d));
  gemm_core(*c.pool, p.n, p.d, p.m, W.data(), p.B.data(), dA.data(), c.block, c.simd);
  std::vector<double> Wt = transposed(*c.pool, W.data(), p.n, p.m);
  gemm_core(*c.pool, p.m, p.d, p.n, Wt.data(), p.A.data(), dB.data(), c.block, c.simd);
  for (int64_t i = 0; i < p.n; ++i) {
    if (!(p.na[i] > eps)) continue;  // below eps the norm is the constant eps
    CanonicalSum acc;
    for (int64_t j = 0; j < p.m; ++j) acc.add(G[i * p.m + j] * p.S[i * p.m + j]);
    double f = acc.result() / (p.na[i] * p.na[i]);
    for (int64_t k = 0; k < p.d; ++k) dA[i * p.d + k] -= p.A[i * p.d + k] * f;
  }
  for (int64_t j = 0; j < p.m; ++j) {
    if (!(p.nb[j] > eps)) continue;
    CanonicalSum acc;
    for (int64_t i = 0; i < p.n; ++i) acc.add(G[i * p.m + j] * p.S[i * p.m + j]);
    double f = acc.result() / (p.nb[j] * p.nb[j]);
    for (int64_t k = 0; k < p.d; ++k) dB[j * p.d + k] -= p.B[j * p.d + k] * f;
  }
  convert(*c.pool, dA.data(), p.n, p.d, false, c.out[0].as<T>());
  convert(*c.pool, dB.data(), p.m, p.d, false, c.out[1].as<T>());
}

// ---------------------------------------------------------------- row_normalize

int64_t last_dim_or_fail(const Call& c, const Operand& x) {
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": expected rank >= 1, got a scalar");
  return x.dims.back();
}

template <class T>
void row_normalize_forward(Call& c) {
  const Operand& x = c.in[0];
  int64_t d = last_dim_or_fail(c, x);
  c.expect_out_shape(0, x.dims);
  double eps = eps_attr(c, 1e-12);
  int64_t rows = d ? x.numel / d : 0;
  std::vector<double> X = widen<T>(*c.pool, x);
  std::vector<double> n = row_norms(*c.pool, X.data(), rows, d);
  T* py = c.out[0].as<T>();
  c.pool->parallel_for(rows, row_grain(d), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      double denom = std::max(n[i], eps);
      for (int64_t k = 0; k < d; ++k) py[i * d + k] = static_cast<T>(X[i * d + k] / denom);
    }
  });
}

template <class T>
void row_normalize_grad(Call& c) {
  const Operand& x = c.in[0];
  int64_t d = last_dim_or_fail(c, x);
  c.expect_in_shape(1, x.dims);
  c.expect_out_shape(0, x.dims);
  double eps = eps_attr(c, 1e-12);
  int64_t rows = d ? x.numel / d : 0;
  std::vector<double> X = widen<T>(*c.pool, x);
  std::vector<double> G = widen<T>(*c.pool, c.in[1]);
  std::vector<double> n = row_norms(*c.pool, X.data(), rows, d);
  T* pdx = c.out[0].as<T>();
  c.pool->parallel_for(rows, row_grain(d), [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      if (!(n[i] > eps)) {  // y = x / eps: a constant scale
        for (int64_t k = 0; k < d; ++k) pdx[i * d + k] = static_cast<T>(G[i * d + k] / eps);
        continue;
      }
      CanonicalSum acc;  // <y, dy>
      for (int64_t k = 0; k < d; ++k) acc.add((X[i * d + k] / n[i]) * G[i * d + k]);
      double dot = acc.result();
      for (int64_t k = 0; k < d; ++k)
        pdx[i * d + k] = static_cast<T>((G[i * d + k] - (X[i * d + k] / n[i]) * dot) / n[i]);
    }
  });
}

// ---------------------------------------------------------------- covariance

struct Centered {
  int64_t n, d;
  double denom;
  std::vector<double> Xc;  // [n, d], columns centred on their canonical mean
};

template <class T>
Centered centered(Call& c) {
  const Operand& x = c.in[0];
  if (x.rank() != 2) c.shape_error(c.in_name(0) + ": expected rank 2 [samples, features], got " + shape_string(x.dims));
  Centered r;
  r.n = x.dims[0];
  r.d = x.dims[1];
  int64_t corr = c.attr_int("correction", 1);
  if (corr < 0)
    fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": attribute 'correction' must be >= 0, got " + std::to_string(corr));
  if (r.n - corr <= 0)
    c.shape_error(c.in_name(0) + ": " + std::to_string(r.n) + " samples must exceed correction " +
                  std::to_string(corr));
  r.denom = static_cast<double>(r.n - corr);
  r.Xc = widen<T>(*c.pool, x);
  std::vector<double> mean(static_cast<size_t>(r.d));
  reduce_to_shape(*c.pool, c.isa, x.dims, r.Xc.data(), {r.d},
                  [&](int64_t j, double s) { mean[j] = s / static_cast<double>(r.n); });
  for (int64_t i = 0; i < r.n; ++i)
    for (int64_t j = 0; j < r.d; ++j) r.Xc[i * r.d + j] -= mean[j];
  return r;
}

template <class T>
void covariance_forward(Call& c) {
  Centered r = centered<T>(c);
  c.expect_out_shape(0, {r.d, r.d});
  std::vector<double> Xt = transposed(*c.pool, r.Xc.data(), r.n, r.d);
  std::vector<double> C(static_cast<size_t>(r.d * r.d));
  gemm_core(*c.pool, r.d, r.d, r.n, Xt.data(), r.Xc.data(), C.data(), c.block, c.simd);
  for (double& v : C) v /= r.denom;
  convert(*c.pool, C.data(), r.d, r.d, false, c.out[0].as<T>());
}

template <class T>
void covariance_grad(Call& c) {
  Centered r = centered<T>(c);
  c.expect_in_shape(1, {r.d, r.d});
  c.expect_out_shape(0, c.in[0].dims);
  std::vector<double> G = widen<T>(*c.pool, c.in[1]);
  // dX = Xc (G + G^T) / denom. The mean's own gradient term is
  // 1 * colmean(Xc (G+G^T)), which is zero because Xc's columns sum to zero.
  std::vector<double> H(static_cast<size_t>(r.d * r.d));
  for (int64_t i = 0; i < r.d; ++i)
    for (int64_t j = 0; j < r.d; ++j) H[i * r.d + j] = G[i * r.d + j] + G[j * r.d + i];
  std::vector<double> D(static_cast<size_t>(r.n * r.d));
  gemm_core(*c.pool, r.n, r.d, r.d, r.Xc.data(), H.data(), D.data(), c.block, c.simd);
  for (double& v : D) v /= r.denom;
  convert(*c.pool, D.data(), r.n, r.d, false, c.out[0].as<T>());
}

// ---------------------------------------------------------------- layer_norm

void check_layer_norm(const Call& c) {
  const Operand& x = c.in[0];
  if (x.rank() < 1) c.shape_error(c.in_name(0) + ": expected rank >= 1, got a scalar");
  c.expect_in_shape(1, {x.dims.back()});
  c.expect_in_shape(2, {x.dims.back()});
}

// One row's mean and 1/sqrt(var + eps) (population variance), both
// canonical, from its binary64 values.
struct RowMoments {
  double mean, rstd;
};
// (Its chunks' folds interleaved by numerics::canonical_sum: a row of 768
// is three independent chains of additions, not one.)
RowMoments row_moments(const double* x, int64_t d, double eps) {
  const size_t n = static_cast<size_t>(d);
  const double m = umlos::numerics::canonical_sum(n, [x](size_t k) { return x[k]; }) / static_cast<double>(d);
  const double ss = umlos::numerics::canonical_sum(n, [x, m](size_t k) {
    const double t = x[k] - m;
    return t * t;
  });
  return {m, 1.0 / std::sqrt(ss / static_cast<double>(d) + eps)};
}

// Each row is read, normalised and written by one thread in one pass (its
// binary64 copy in a per-thread buffer): with one pass per phase (widen,
// moments, normalise), each a separate split of the rows, a row widened by
// one thread was often read by the other, a cache-to-cache transfer per
// line on two cores. Every element's operations are the ones of docs/
// primitives.md in the same order. (The gradient's column sums of dgamma
// and dbeta still read every row on each thread.)
template <class T>
void layer_norm_forward(Call& c) {
  check_layer_norm(c);
  const Operand& x = c.in[0];
  c.expect_out_shape(0, x.dims);
  double eps = eps_attr(c, 1e-5);
  int64_t d = x.dims.back(), rows = d ? x.numel / d : 0;
  const T* px = x.as<T>();
  const T* gamma = c.in[1].as<T>();
  const T* beta = c.in[2].as<T>();
  T* py = c.out[0].as<T>();
  c.pool->parallel_for(rows, row_grain(d), [&](int64_t s, int64_t e) {
    std::vector<double> xr(static_cast<size_t>(d));
    for (int64_t i = s; i < e; ++i) {
      for (int64_t k = 0; k < d; ++k) xr[k] = static_cast<double>(px[i * d + k]);
      const RowMoments mo = row_moments(xr.data(), d, eps);
      for (int64_t k = 0; k < d; ++k) {
        double xhat = (xr[k] - mo.mean) * mo.rstd;
        py[i * d + k] = static_cast<T>(xhat * static_cast<double>(gamma[k]) + static_cast<double>(beta[k]));
      }
    }
  });
}

template <class T>
void layer_norm_grad(Call& c) {
  check_layer_norm(c);
  const Operand& x = c.in[0];
  c.expect_in_shape(3, x.dims);
  c.expect_out_shape(0, x.dims);
  c.expect_out_shape(1, c.in[1].dims);
  c.expect_out_shape(2, c.in[2].dims);
  double eps = eps_attr(c, 1e-5);
  int64_t d = x.dims.back(), rows = d ? x.numel / d : 0;
  const T* px = x.as<T>();
  const T* pg = c.in[3].as<T>();
  const T* gamma = c.in[1].as<T>();
  T* pdx = c.out[0].as<T>();
  // dy in binary64 and dy * xhat, whole, for the column sums of dbeta and
  // dgamma after the rows are done.
  std::vector<double> G(static_cast<size_t>(rows * d)), g_xhat(static_cast<size_t>(rows * d));
  c.pool->parallel_for(rows, row_grain(d), [&](int64_t s, int64_t e) {
    std::vector<double> xr(static_cast<size_t>(d)), xhat(static_cast<size_t>(d)), g(static_cast<size_t>(d));
    for (int64_t i = s; i < e; ++i) {
      for (int64_t k = 0; k < d; ++k) xr[k] = static_cast<double>(px[i * d + k]);
      const RowMoments mo = row_moments(xr.data(), d, eps);
      double* Gi = G.data() + i * d;
      for (int64_t k = 0; k < d; ++k) Gi[k] = static_cast<double>(pg[i * d + k]);
      for (int64_t k = 0; k < d; ++k) {
        xhat[k] = (xr[k] - mo.mean) * mo.rstd;
        g[k] = Gi[k] * static_cast<double>(gamma[k]);
        g_xhat[i * d + k] = Gi[k] * xhat[k];
      }
      const double* pgk = g.data();
      const double* pxh = xhat.data();
      const size_t n = static_cast<size_t>(d);
      const double mg = umlos::numerics::canonical_sum(n, [pgk](size_t k) { return pgk[k]; }) / static_cast<double>(d);
      const double mgx =
          umlos::numerics::canonical_sum(n, [pgk, pxh](size_t k) { return pgk[k] * pxh[k]; }) / static_cast<double>(d);
      for (int64_t k = 0; k < d; ++k) pdx[i * d + k] = static_cast<T>(mo.rstd * ((g[k] - mg) - xhat[k] * mgx));
    }
  });
  T* pdgamma = c.out[1].as<T>();
  T* pdbeta = c.out[2].as<T>();
  std::vector<int64_t> flat{rows, d};
  reduce_to_shape(*c.pool, c.isa, flat, g_xhat.data(), {d},
                  [&](int64_t j, double v) { pdgamma[j] = static_cast<T>(v); });
  reduce_to_shape(*c.pool, c.isa, flat, G.data(), {d}, [&](int64_t j, double v) { pdbeta[j] = static_cast<T>(v); });
}

// ---------------------------------------------------------------- entries

void cosine_fwd_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { cosine_forward<decltype(t)>(c); });
}
void cosine_grad_entry(Call& c) {
  c.expect_counts(3, 2);
  with_float_dtype(c, {1, 2}, {0, 1}, [&](auto t) { cosine_grad<decltype(t)>(c); });
}
void rownorm_fwd_entry(Call& c) {
  c.expect_counts(1, 1);
  with_float_dtype(c, {}, {0}, [&](auto t) { row_normalize_forward<decltype(t)>(c); });
}
void rownorm_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { row_normalize_grad<decltype(t)>(c); });
}
void cov_fwd_entry(Call& c) {
  c.expect_counts(1, 1);
  with_float_dtype(c, {}, {0}, [&](auto t) { covariance_forward<decltype(t)>(c); });
}
void cov_grad_entry(Call& c) {
  c.expect_counts(2, 1);
  with_float_dtype(c, {1}, {0}, [&](auto t) { covariance_grad<decltype(t)>(c); });
}
void ln_fwd_entry(Call& c) {
  c.expect_counts(3, 1);
  with_float_dtype(c, {1, 2}, {0}, [&](auto t) { layer_norm_forward<decltype(t)>(c); });
}
void ln_grad_entry(Call& c) {
  c.expect_counts(4, 3);
  with_float_dtype(c, {1, 2, 3}, {0, 1, 2}, [&](auto t) { layer_norm_grad<decltype(t)>(c); });
}

}  // namespace

void register_linalg(std::vector<PrimitiveInfo>& out) {
  out.push_back({"matmul", "a,b", "c", matmul_fwd_entry});
  out.push_back({"matmul_grad", "a,b,dc", "da,db", matmul_grad_entry});
  out.push_back({"matmul_bias_act", "a,b,bias", "z,y", matmul_bias_act_entry});
  out.push_back({"cosine_similarity", "a,b", "s", cosine_fwd_entry});
  out.push_back({"cosine_similarity_grad", "a,b,ds", "da,db", cosine_grad_entry});
  out.push_back({"row_normalize", "x", "y", rownorm_fwd_entry});
  out.push_back({"row_normalize_grad", "x,dy", "dx", rownorm_grad_entry});
  out.push_back({"covariance", "x", "c", cov_fwd_entry});
  out.push_back({"covariance_grad", "x,dc", "dx", cov_grad_entry});
  out.push_back({"layer_norm", "x,gamma,beta", "y", ln_fwd_entry});
  out.push_back({"layer_norm_grad", "x,gamma,beta,dy", "dx,dgamma,dbeta", ln_grad_entry});
}

// Shared with modules/cuda_driver (cpu_reference.hpp).
MatmulShape matmul_shape(const Call& c) {
  const Operand &a = c.in[0], &b = c.in[1];
  MatmulShape s;
  s.ta = c.attr_int("trans_a", 0) != 0;
  s.tb = c.attr_int("trans_b", 0) != 0;
  if (a.rank() < 2) c.shape_error(c.in_name(0) + ": expected rank >= 2, got " + shape_string(a.dims));
  if (b.rank() < 2) c.shape_error(c.in_name(1) + ": expected rank >= 2, got " + shape_string(b.dims));
  int ra = a.rank(), rb = b.rank();
  int64_t a_rows = a.dims[ra - 2], a_cols = a.dims[ra - 1];
  int64_t b_rows = b.dims[rb - 2], b_cols = b.dims[rb - 1];
  s.M = s.ta ? a_cols : a_rows;
  s.K = s.ta ? a_rows : a_cols;
  int64_t kb = s.tb ? b_cols : b_rows;
  s.N = s.tb ? b_rows : b_cols;
  if (kb != s.K)
    c.shape_error("inner dimensions differ: " + c.in_name(0) + " " + shape_string(a.dims) +
                  (s.ta ? " (transposed)" : "") + " gives K = " + std::to_string(s.K) + ", " + c.in_name(1) + " " +
                  shape_string(b.dims) + (s.tb ? " (transposed)" : "") + " gives K = " + std::to_string(kb));
  std::vector<int64_t> batch_dims(a.dims.begin(), a.dims.end() - 2);
  if (rb == 2) {
    s.shared_b = true;
  } else {
    std::vector<int64_t> b_batch(b.dims.begin(), b.dims.end() - 2);
    if (b_batch != batch_dims)
      c.shape_error(c.in_name(1) + ": batch dimensions " + shape_string(b_batch) + " differ from " + c.in_name(0) +
                    "'s " + shape_string(batch_dims) + " (b must be rank 2 or have a's batch dimensions)");
  }
  s.batch = dims_product(batch_dims, 0, batch_dims.size());
  s.out_dims = batch_dims;
  s.out_dims.push_back(s.M);
  s.out_dims.push_back(s.N);
  return s;
}

}  // namespace cpu_driver
