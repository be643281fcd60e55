// gemm.hpp — the matrix product of the matmul primitive, in the tensor's own
// dtype (float32 or float64) with fused multiply-adds.
//
// Every output element is computed the same way on every path (docs/
// primitives.md, "Matmul"):
//   total = +0.0
//   for each 256-long chunk of k, in ascending order:
//     acc = +0.0; for k in the chunk, ascending: acc = fma(a[i,k], b[k,j], acc)
//     total = total + acc
// all in the dtype of the tensors. The chunk is the canonical sum's chunk
// (umlos_sum.h) and doubles as the cache block over k. Paths (scalar, AVX2,
// AVX-512) differ only in how many elements they compute at once and which
// instructions they use, and threads only in which elements they own, so
// results are bit-identical across instruction sets and thread counts. The
// scalar path uses std::fma: correctly rounded on any CPU, FMA or not.
#pragma once

#include <cstdint>

namespace cpu_driver {

class ThreadPool;

enum class GemmIsa : int { scalar = 0, avx2 = 1, avx512 = 2 };

const char* gemm_isa_name(GemmIsa isa);
// Parses "scalar", "avx2", "avx512"; false for anything else.
bool gemm_isa_parse(const char* name, GemmIsa* out);
// Whether this CPU can run the path.
bool gemm_isa_supported(GemmIsa isa);
// The widest path this CPU supports.
GemmIsa gemm_isa_best();

// A matrix operand: element (r, c) is at p[r * rs + c * cs].
template <class T>
struct GemmMatrix {
  T* p;
  int64_t rs, cs;
};

// What gemm() does to each tile of C after its last k chunk, while the
// tile is in L1 (the matmul_bias_act primitive): c = c + bias[j] in the
// dtype, and with `y` also y[i * ldy + j] = c > 0 ? c : 0 (relu). The same
// bits as a bias_add and a relu over the finished product.
template <class T>
struct GemmEpilogue {
  const T* bias = nullptr;
  T* y = nullptr;
  int64_t ldy = 0;
};

// C[M,N] = A[M,K] * B[K,N] as described above; C may be strided (a
// transposed output) and is written exactly once per element; `epi`
// (optional; C's rows contiguous) is applied to every element once its sum
// is complete.
template <class T>
void gemm(ThreadPool& pool, GemmIsa isa, int64_t M, int64_t N, int64_t K, GemmMatrix<const T> A, GemmMatrix<const T> B,
          GemmMatrix<T> C, const GemmEpilogue<T>* epi = nullptr);

// ---------------------------------------------------------------- kernels
// Micro-kernels, one per (path, dtype), each in a file compiled for its
// instruction set. A kernel computes the first R (1..MR) rows of one
// MR x NR tile of C over kc (<= 256) k: b is the packed B panel
// (b[k * NR + c]), c the tile (row stride ldc); with first != 0 the tile
// becomes 0 + acc, otherwise c + acc (elementwise, in the dtype). A is read
// through a and lda in one of three layouts: rows[0][R - 1] takes A's
// element (r, k) at a[k * MR + r] (a packed panel; lda unused),
// rows[1][R - 1] at a[k * lda + r] (a column-major A in place),
// rows[2][R - 1] at a[r * lda + k] (a row-major A in place). No padded rows
// are computed, and each element's arithmetic is the same whatever the
// layout, R or tile. A non-null `copy` gives the kernel a side job.
inline constexpr int kGemmMaxMr = 16;

// A kernel's epilogue (`epi`, or null): GemmEpilogue for the tile, its
// bias pointer at the tile's first column and y at its first element
// (row stride ldy), applied to the sums in registers as they are stored;
// given on the last k chunk of a tile whose columns are all C's.
//
// A kernel's side job: packing part of the next B panel while its
// multiply-adds run, so that the copy's cache misses overlap arithmetic
// instead of stalling between tiles (B's rows are a whole row apart, which
// the hardware prefetchers do not follow across pages; a transposed B is
// a gather). The kernel copies `rows` rows of NR elements: with
// transposed == 0, dst[k * NR + c] = src[k * ld + c], then prefetches the
// same rows of `prefetch` (if not null), a later panel; with transposed != 0
// (a column's k consecutive), dst[k * NR + c] = src[k + c * ld], runs of up
// to 8 k of one column at a time.
template <class T>
struct GemmPanelCopy {
  const T* src;
  const T* prefetch;
  T* dst;
  int64_t ld, rows;
  int transposed;
};

template <class T>
struct GemmKernel {
  using Ukr = void (*)(int64_t kc, const T* a, int64_t lda, const T* b, T* c, int64_t ldc, int first,
                       const GemmPanelCopy<T>* copy, const GemmEpilogue<T>* epi);
  int mr, nr;
  Ukr rows[3][kGemmMaxMr];
};

// `narrow`: the kernel one vector wide (for products of at most that many
// columns), else the widest.
GemmKernel<float> gemm_kernel_avx512_f32(bool narrow);
GemmKernel<double> gemm_kernel_avx512_f64(bool narrow);
GemmKernel<float> gemm_kernel_avx2_f32(bool narrow);
GemmKernel<double> gemm_kernel_avx2_f64(bool narrow);

}  // namespace cpu_driver
