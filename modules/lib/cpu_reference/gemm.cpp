// gemm.cpp — gemm.hpp: choosing the path, packing operands into the
// micro-kernels' panels, cache blocking and the split over threads. The
// scalar micro-kernel lives here; the vector ones are in gemm_avx2.cpp and
// gemm_avx512.cpp.
//
// Blocking (GotoBLAS/BLIS): for each block of NC columns, for each 256-long
// chunk of k (the canonical sum's chunk, so each chunk's partial sum is
// complete before it is added to C), B's block is packed into NR-column
// panels; for each block of MC rows, A's block is packed into MR-row panels;
// then every MR x NR tile of the block is one micro-kernel call. The B panel
// of a tile column stays in L1 while the A panels stream from L2. Short
// products (all rows in one A block) take B one panel at a time, each
// packed by the micro-kernels of the panel before (short_product_chunk).
//
// Threads own disjoint sets of whole output elements (ranges of column
// panels, or of row panels when C is taller than wide); every element's
// chunks are still added in ascending order, so the split never changes a
// bit.
#include "gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_reference.hpp"
#include "gemm_ukr.hpp"

namespace cpu_driver {

namespace {

template <class TT>
struct ScalarOps {
  using T = TT;
  using V = TT;
  static constexpr int W = 1;
  static V zero() { return T(0); }
  static V load(const T* p) { return *p; }
  static V set1(T x) { return x; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V add(V a, V b) { return a + b; }
  static void store(T* p, V v) { *p = v; }
  static V relu(V v) { return v > T(0) ? v : T(0); }
};

template <class T>
GemmKernel<T> scalar_kernel() {
  return make_gemm_kernel<ScalarOps<T>, 4, 8>();
}

GemmKernel<float> kernel_for(GemmIsa isa, float*, bool narrow) {
  if (isa == GemmIsa::avx512) return gemm_kernel_avx512_f32(narrow);
  if (isa == GemmIsa::avx2) return gemm_kernel_avx2_f32(narrow);
  return scalar_kernel<float>();
}

GemmKernel<double> kernel_for(GemmIsa isa, double*, bool narrow) {
  if (isa == GemmIsa::avx512) return gemm_kernel_avx512_f64(narrow);
  if (isa == GemmIsa::avx2) return gemm_kernel_avx2_f64(narrow);
  return scalar_kernel<double>();
}

// The kernel for an N-column product: one vector wide when N fits in one
// vector (the wide kernel would compute padding columns), else the widest.
template <class T>
GemmKernel<T> kernel_for_columns(GemmIsa isa, int64_t N) {
  const GemmKernel<T> narrow = kernel_for(isa, static_cast<T*>(nullptr), true);
  return N <= narrow.nr ? narrow : kernel_for(isa, static_cast<T*>(nullptr), false);
}

// Products of at most this many column panels read A in place (when one of
// its strides is 1) instead of packing it: packing costs one pass over A
// per block of columns, which only pays back over many column panels.
constexpr int64_t kDirectAMaxPanels = 4;
// So do products whose A has at most this many bytes between the runs a
// tile reads (rows of a row-major A, k of a column-major one), however many
// panels: a tile's 12 runs then fall in distinct sets of a 32 KiB 8-way L1
// (a 4 KiB stride would put them all in one), and packing only cost time.
// The MLP step's products (f32, K 64 and 256), one thread, Zen 4: 89-107
// GFLOP/s packed, 96-108 in place; f32 with K 768 (3 KiB) and f64 with K
// 256 (2 KiB) ran 1-5 % slower in place, K 3072 up to 18 %.
constexpr int64_t kDirectAMaxStrideBytes = 1024;

constexpr int64_t kKc = kSumChunk;  // k block = the canonical chunk

// Rows of A per L2 block and columns of B per L3 block: about 290 KB and
// 3 MB of packed data whatever the dtype.
template <class T>
int64_t block_rows(int mr) {
  return std::max<int64_t>(mr, (294912 / (kKc * int64_t(sizeof(T)))) / mr * mr);
}
template <class T>
int64_t block_cols(int nr) {
  return std::max<int64_t>(nr, (3145728 / (kKc * int64_t(sizeof(T)))) / nr * nr);
}

// a[p][k][r] for rows [i0, i0+mc) of A and k in [k0, k0+kc), zero rows past M.
template <class T>
void pack_a(GemmMatrix<const T> A, int64_t M, int64_t i0, int64_t mc, int64_t k0, int64_t kc, int mr, T* out) {
  if (A.rs == 1 && A.cs != 1) {
    // A transposed (a weight gradient's X^T): a panel's mr rows are
    // consecutive in memory for each k, so copy them as one run per k
    // instead of walking each row down a column (one cache line per k).
    for (int64_t p = 0; p < mc; p += mr) {
      T* panel = out + p * kc;
      const int64_t rows = std::max<int64_t>(0, std::min<int64_t>(mr, std::min(mc - p, M - (i0 + p))));
      for (int64_t k = 0; k < kc; ++k) {
        T* dst = panel + k * mr;
        if (rows > 0) std::memcpy(dst, A.p + (i0 + p) + (k0 + k) * A.cs, sizeof(T) * static_cast<size_t>(rows));
        for (int64_t r = rows; r < mr; ++r) dst[r] = T(0);
      }
    }
    return;
  }
  for (int64_t p = 0; p < mc; p += mr) {
    T* panel = out + p * kc;
    for (int r = 0; r < mr; ++r) {
      const int64_t i = i0 + p + r;
      if (i >= M || p + r >= mc) {
        for (int64_t k = 0; k < kc; ++k) panel[k * mr + r] = T(0);
        continue;
      }
      const T* row = A.p + i * A.rs + k0 * A.cs;
      if (A.cs == 1 && i + 2 < M) {
        // Rows are copied one after another, each a short run that the
        // hardware prefetchers pick up too late: fetch the row after next
        // while this one is copied.
        const T* ahead = row + 2 * A.rs;
        constexpr int64_t kLine = 64 / int64_t(sizeof(T));
        for (int64_t k0l = 0; k0l < kc; k0l += kLine) {
          __builtin_prefetch(ahead + k0l, 0, 3);
          const int64_t k1 = std::min(kc, k0l + kLine);
          for (int64_t k = k0l; k < k1; ++k) panel[k * mr + r] = row[k];
        }
        continue;
      }
      for (int64_t k = 0; k < kc; ++k) panel[k * mr + r] = row[k * A.cs];
    }
  }
}

// One panel, b[k][c] for k in [k0, k0+kc) and columns [j, j+cols) of a
// transposed B (a column's k consecutive in memory, as W in X * W^T), zero
// in columns [cols, nr). Walking k one cache line at a time and the
// columns within it reads each line of B whole once: columns a large power
// of two apart share an L1 set, so reading one element of every column per
// k (the row-wise order) missed L1 on nearly every element.
template <class T>
void pack_b_panel_transposed(GemmMatrix<const T> B, int64_t k0, int64_t kc, int64_t j, int64_t cols, int nr, T* panel) {
  constexpr int64_t kLine = 64 / int64_t(sizeof(T));
  for (int64_t kb = 0; kb < kc; kb += kLine) {
    const int64_t kn = std::min(kLine, kc - kb);
    for (int64_t c = 0; c < cols; ++c) {
      const T* src = B.p + (k0 + kb) + (j + c) * B.cs;
      for (int64_t k = 0; k < kn; ++k) panel[(kb + k) * nr + c] = src[k];
    }
    for (int64_t k = 0; k < kn; ++k)
      for (int64_t c = cols; c < nr; ++c) panel[(kb + k) * nr + c] = T(0);
  }
}

// b[q][k][c] for k in [k0, k0+kc) and columns [j0, j0+nc) of B, zero past N.
template <class T>
void pack_b(GemmMatrix<const T> B, int64_t N, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, T* out) {
  for (int64_t q = 0; q < nc; q += nr) {
    T* panel = out + q * kc;
    const int64_t cols = std::min<int64_t>(nr, std::min(nc - q, N - (j0 + q)));
    if (B.rs == 1 && B.cs != 1) {
      pack_b_panel_transposed(B, k0, kc, j0 + q, cols, nr, panel);
      continue;
    }
    // A partial panel (a classifier's 10 columns of 16) is zeroed whole
    // once: zeroing each row's few padding elements called memset per row.
    if (cols < nr) std::memset(panel, 0, sizeof(T) * static_cast<size_t>(kc * nr));
    for (int64_t k = 0; k < kc; ++k) {
      const T* src = B.p + (k0 + k) * B.rs + (j0 + q) * B.cs;
      T* dst = panel + k * nr;
      if (B.cs == 1) {
        std::memcpy(dst, src, sizeof(T) * static_cast<size_t>(cols));
        // The rows of the next panel but one: a stride the hardware
        // prefetchers do not follow across pages.
        if (j0 + q + 3 * nr <= N) {
          __builtin_prefetch(src + 2 * nr, 0, 2);
          __builtin_prefetch(src + 2 * nr + 64 / sizeof(T), 0, 2);
        }
      } else {
        for (int64_t c = 0; c < cols; ++c) dst[c] = src[c * B.cs];
      }
    }
  }
}

// Where a micro-kernel reads the rows of A starting at row p of a block
// (relative to the block's first row): a packed block, or A itself.
template <class T>
struct APanels {
  const T* base;  // row 0 of the block at the block's first k
  int64_t row_step, lda;
  int layout;  // GemmKernel::rows' first index
  const T* at(int64_t p) const { return base + p * row_step; }
};

template <class T>
APanels<T> packed_panels(const T* apack, int64_t kc, int mr) {
  return {apack, kc, mr, 0};
}

template <class T>
APanels<T> direct_panels(GemmMatrix<const T> A, int64_t i0, int64_t k0) {
  const T* base = A.p + i0 * A.rs + k0 * A.cs;
  if (A.cs == 1) return {base, A.rs, A.rs, 2};
  return {base, 1, A.cs, 1};
}

// The next B panel, packed by the micro-kernels of the current one (their
// side job, GemmPanelCopy): `src` (row stride ld) copied to `dst`, a share
// of its kc rows per tile, while `prefetch`, the panel two after it, is
// fetched, so that its rows are in cache by the time the tiles of the panel
// after next copy it. Null src: no side job.
template <class T>
struct NextPanel {
  const T* src = nullptr;
  const T* prefetch = nullptr;
  T* dst = nullptr;
  int64_t ld = 0;
  int transposed = 0;  // GemmPanelCopy::transposed
};

// How many tiles (micro-kernel calls) one column panel of the block of rows
// [i0, i0+mc) takes, rows past M left out.
inline int64_t block_tiles(int64_t M, int64_t i0, int64_t mc, int mr) { return (std::min(mc, M - i0) + mr - 1) / mr; }

// Whether the tiles of a block can gather a transposed panel within their k:
// each tile's share of its kc rows takes NR jobs per 8 rows, one per k.
inline bool transposed_side_job_fits(int64_t kc, int64_t tiles, int nr) {
  const int64_t share = (kc + tiles - 1) / tiles;
  return (share + 7) / 8 * nr <= kc;
}

// The side job of the tile starting at row p of a block of `tiles` tiles,
// or null when its share is empty. Counts the rows it gives out in *given.
template <class T>
const GemmPanelCopy<T>* side_job(const NextPanel<T>& next, int64_t p, int mr, int nr, int64_t kc, int64_t tiles,
                                 GemmPanelCopy<T>* job, int64_t* given) {
  if (next.src == nullptr) return nullptr;
  const int64_t share = (kc + tiles - 1) / tiles, k0 = (p / mr) * share, n = std::min(share, kc - k0);
  if (n <= 0) return nullptr;
  const int64_t k_step = next.transposed ? 1 : next.ld;
  *job = {next.src + k0 * k_step, next.prefetch ? next.prefetch + k0 * k_step : nullptr, next.dst + k0 * nr, next.ld, n,
          next.transposed};
  *given += n;
  return job;
}

// The tile buffer of a partial or strided tile: C's rows [i, i+rows) and
// columns [j, j+cols) into tile (row stride nr), padding columns zero.
template <class T>
void fill_tile(GemmMatrix<T> C, int64_t i, int64_t j, int64_t rows, int64_t cols, int nr, T* tile) {
  for (int64_t r = 0; r < rows; ++r) {
    T* dst = tile + r * nr;
    const T* src = C.p + (i + r) * C.rs + j * C.cs;
    if (C.cs == 1) {
      for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
    } else {
      for (int64_t c = 0; c < cols; ++c) dst[c] = src[c * C.cs];
    }
    for (int64_t c = cols; c < nr; ++c) dst[c] = T(0);
  }
}

// The tile buffer's first `cols` columns back into C.
template <class T>
void store_tile(const T* tile, int64_t rows, int64_t cols, int nr, int64_t i, int64_t j, GemmMatrix<T> C) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* src = tile + r * nr;
    T* dst = C.p + (i + r) * C.rs + j * C.cs;
    if (C.cs == 1) {
      for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
    } else {
      for (int64_t c = 0; c < cols; ++c) dst[c * C.cs] = src[c];
    }
  }
}

// The epilogue over C's rows [i, i+rows) and columns [j, j+cols) (C's rows
// contiguous: gemm() takes an epilogue only then), in loops the compiler
// vectorises.
template <class T>
void apply_epilogue(const GemmEpilogue<T>& e, GemmMatrix<T> C, int64_t i, int64_t j, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    T* c = C.p + (i + r) * C.rs + j;
    const T* bias = e.bias + j;
    for (int64_t k = 0; k < cols; ++k) c[k] = c[k] + bias[k];
    if (e.y == nullptr) continue;
    T* y = e.y + (i + r) * e.ldy + j;
    for (int64_t k = 0; k < cols; ++k) y[k] = c[k] > T(0) ? c[k] : T(0);
  }
}

// One block: every tile of rows [i0, i0+mc) x columns [j0, j0+nc). With
// `next` (only for a block one panel wide), its tiles also pack the next
// panel; returns how many of its kc rows they copied.
// `epi`: the epilogue, given on the last k chunk only, applied to each tile
// as soon as it is written.
template <class T>
int64_t macro_block(const GemmKernel<T>& kr, int64_t M, int64_t N, int64_t i0, int64_t mc, int64_t j0, int64_t nc,
                    int64_t kc, bool first, const APanels<T>& a, const T* b, GemmMatrix<T> C, const NextPanel<T>& next,
                    const GemmEpilogue<T>* epi) {
  const int mr = kr.mr, nr = kr.nr;
  T tile[kGemmMaxMr * 64];  // mr * nr <= 12 * 32
  const int64_t tiles = block_tiles(M, i0, mc, mr);
  int64_t copied = 0;
  for (int64_t q = 0; q < nc; q += nr) {
    const int64_t j = j0 + q, cols = std::min<int64_t>(nr, N - j);
    if (cols <= 0) break;
    for (int64_t p = 0; p < mc; p += mr) {
      const int64_t i = i0 + p, rows = std::min<int64_t>(mr, std::min(mc - p, M - i));
      if (rows <= 0) break;
      const typename GemmKernel<T>::Ukr ukr = kr.rows[a.layout][rows - 1];
      const T* bp = b + q * kc;
      GemmPanelCopy<T> slot;
      const GemmPanelCopy<T>* job = q == 0 ? side_job(next, p, mr, nr, kc, tiles, &slot, &copied) : nullptr;
      if (cols == nr && C.cs == 1) {
        T* ct = C.p + i * C.rs + j;
        // The tile is read (after the first k chunk) and written only after
        // its last k: fetching its lines for writing now hides the misses
        // (C is swept once per k chunk) behind the multiply-adds.
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < nr; c += 64 / int64_t(sizeof(T))) __builtin_prefetch(ct + r * C.rs + c, 1, 3);
        // The epilogue in the kernel's registers: applied after the store,
        // it reread each line the kernel had just written in wide stores.
        GemmEpilogue<T> tile_epi;
        if (epi) tile_epi = {epi->bias + j, epi->y ? epi->y + i * epi->ldy + j : nullptr, epi->ldy};
        if (epi && epi->y)  // y's lines too, as C's above
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < nr; c += 64 / int64_t(sizeof(T)))
              __builtin_prefetch(tile_epi.y + r * epi->ldy + c, 1, 3);
        ukr(kc, a.at(p), a.lda, bp, ct, C.rs, first, job, epi ? &tile_epi : nullptr);
        continue;
      }
      // A tile narrower than the kernel (the 10 classes of a classifier)
      // or a strided C goes through `tile`. The kernel writes all of it
      // (0 + acc on the first chunk, so nothing to fill then), and only the
      // tile's own columns are copied back; with a contiguous C each row is
      // a plain run the compiler vectorises (an element-wise loop with the
      // stride took as long as the tile's multiply-adds on [256,64]x[64,10]).
      if (!first) fill_tile(C, i, j, rows, cols, nr, tile);
      ukr(kc, a.at(p), a.lda, bp, tile, nr, first, job, nullptr);
      store_tile(tile, rows, cols, nr, i, j, C);
      if (epi) apply_epilogue(*epi, C, i, j, rows, cols);
    }
  }
  return copied;
}

// One k chunk of a short product (all rows in one block) over the column
// panels of [jc, jc+nc): each panel's tiles read it from one of two buffers
// while packing the next panel into the other (NextPanel). A panel is
// packed here instead when no tile packed it: the first, one after a
// partial panel, or a B with neither rows nor columns contiguous.
template <class T>
void short_product_chunk(const GemmKernel<T>& kr, int64_t Mp, int64_t Np, GemmMatrix<const T> B, int64_t r0, int64_t mc,
                         int64_t jc, int64_t nc, int64_t pc, int64_t kc, bool first, const APanels<T>& a, T* buffers,
                         GemmMatrix<T> C, const GemmEpilogue<T>* epi) {
  const int nr = kr.nr;
  T* cur = buffers;
  T* other = buffers + nr * kKc;
  bool packed = false;
  for (int64_t q = 0; q < nc && jc + q < Np; q += nr) {
    if (!packed) pack_b(B, Np, pc, kc, jc + q, int64_t(nr), nr, cur);
    NextPanel<T> next;
    const bool next_whole = q + nr < nc && jc + q + 2 * nr <= Np;
    if (next_whole && B.cs == 1) {
      next.src = B.p + pc * B.rs + (jc + q + nr);
      next.dst = other;
      next.ld = B.rs;
      if (q + 3 * nr < nc && jc + q + 4 * nr <= Np) next.prefetch = next.src + 2 * nr;
    } else if (next_whole && B.rs == 1 && transposed_side_job_fits(kc, block_tiles(Mp, r0, mc, kr.mr), nr)) {
      // A transposed B: each column's k run is consecutive, but the runs
      // of a panel's columns are read a few lines at a time, too many
      // streams at once for the hardware prefetchers.
      next.src = B.p + pc + (jc + q + nr) * B.cs;
      next.dst = other;
      next.ld = B.cs;
      next.transposed = 1;
      if (q + 3 * nr < nc && jc + q + 4 * nr <= Np) next.prefetch = next.src + 2 * nr * B.cs;
    }
    const int64_t copied = macro_block(kr, Mp, Np, r0, mc, jc + q, int64_t(nr), kc, first, a, cur, C, next, epi);
    // Every row or none: a panel the tiles did not fill whole is packed again.
    packed = next.src != nullptr && copied == kc;
    std::swap(cur, other);
  }
}

// The whole product restricted to rows [r0, r1) and columns [c0, c1) of C.
// When those rows fit one A block (a short product, as in training steps),
// each B panel is packed just before the tiles that use it, so the packed
// panel is still in L1 when the micro-kernel reads it; otherwise B's block
// is packed once and reused by every block of rows.
template <class T>
void gemm_part(const GemmKernel<T>& kr, int64_t M, int64_t N, int64_t K, GemmMatrix<const T> A, GemmMatrix<const T> B,
               GemmMatrix<T> C, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const GemmEpilogue<T>* epi) {
  const int64_t MC = block_rows<T>(kr.mr), NC = block_cols<T>(kr.nr);
  const int mr = kr.mr, nr = kr.nr;
  const bool one_row_block = r1 - r0 <= MC;
  const bool direct_a =
      (A.rs == 1 || A.cs == 1) && ((c1 - c0 + nr - 1) / nr <= kDirectAMaxPanels ||
                                   (A.cs == 1 ? A.rs : A.cs) * int64_t(sizeof(T)) <= kDirectAMaxStrideBytes);
  // Per-thread packing buffers that only grow: resizing one down and up
  // again between a short and a tall product zero-filled up to 3 MB each
  // time. Only the packed part is ever read.
  thread_local std::vector<T> apack, bpack;
  auto at_least = [](std::vector<T>& v, int64_t n) {
    if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  };
  if (!direct_a) at_least(apack, MC * kKc);
  at_least(bpack, (one_row_block ? 2 * nr : NC) * kKc);
  const int64_t Mp = std::min(M, r1), Np = std::min(N, c1);
  auto round_up = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
  for (int64_t jc = c0; jc < c1; jc += NC) {
    const int64_t nc = round_up(std::min(NC, c1 - jc), nr);
    for (int64_t pc = 0; pc < K; pc += kKc) {
      const int64_t kc = std::min(kKc, K - pc);
      const bool first = pc == 0;
      const GemmEpilogue<T>* last = pc + kc == K ? epi : nullptr;
      if (one_row_block) {
        const int64_t mc = round_up(r1 - r0, mr);
        if (!direct_a) pack_a(A, M, r0, mc, pc, kc, mr, apack.data());
        const APanels<T> a = direct_a ? direct_panels(A, r0, pc) : packed_panels(apack.data(), kc, mr);
        short_product_chunk(kr, Mp, Np, B, r0, mc, jc, nc, pc, kc, first, a, bpack.data(), C, last);
        continue;
      }
      pack_b(B, N, pc, kc, jc, nc, nr, bpack.data());
      for (int64_t ic = r0; ic < r1; ic += MC) {
        const int64_t mc = round_up(std::min(MC, r1 - ic), mr);
        if (!direct_a) pack_a(A, M, ic, mc, pc, kc, mr, apack.data());
        const APanels<T> a = direct_a ? direct_panels(A, ic, pc) : packed_panels(apack.data(), kc, mr);
        macro_block(kr, Mp, Np, ic, mc, jc, nc, kc, first, a, bpack.data(), C, NextPanel<T>{}, last);
      }
    }
  }
}

}  // namespace

const char* gemm_isa_name(GemmIsa isa) {
  static const char* const names[] = {"scalar", "avx2", "avx512"};  // GemmIsa's values, in order
  const int i = static_cast<int>(isa);
  return i >= 0 && i < 3 ? names[i] : "scalar";
}

bool gemm_isa_parse(const char* name, GemmIsa* out) {
  for (GemmIsa isa : {GemmIsa::scalar, GemmIsa::avx2, GemmIsa::avx512})
    if (std::strcmp(name, gemm_isa_name(isa)) == 0) {
      *out = isa;
      return true;
    }
  return false;
}

bool gemm_isa_supported(GemmIsa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // The files are compiled with -mfma as well (VEX FMA on the edges).
  if (isa == GemmIsa::avx512) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  if (isa == GemmIsa::avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return isa == GemmIsa::scalar;
}

GemmIsa gemm_isa_best() {
  if (gemm_isa_supported(GemmIsa::avx512)) return GemmIsa::avx512;
  if (gemm_isa_supported(GemmIsa::avx2)) return GemmIsa::avx2;
  return GemmIsa::scalar;
}

template <class T>
void gemm(ThreadPool& pool, GemmIsa isa, int64_t M, int64_t N, int64_t K, GemmMatrix<const T> A, GemmMatrix<const T> B,
          GemmMatrix<T> C, const GemmEpilogue<T>* epi) {
  if (M <= 0 || N <= 0) return;
  if (epi != nullptr && C.cs != 1) fail(UMLOS_INTERNAL, "gemm: an epilogue needs C's rows contiguous");
  if (!gemm_isa_supported(isa)) isa = GemmIsa::scalar;  // callers check; never run an instruction the CPU lacks
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C.p[i * C.rs + j * C.cs] = T(0);
    if (epi) apply_epilogue(*epi, C, 0, 0, M, N);
    return;
  }
  const GemmKernel<T> kr = kernel_for_columns<T>(isa, N);
  const int64_t col_panels = (N + kr.nr - 1) / kr.nr, row_panels = (M + kr.mr - 1) / kr.mr;
  // Enough multiply-adds per range that a split pays for the wake-up:
  // about 10 us of work at least, since waking a pool thread costs
  // several microseconds, more than splitting a small product saves.
  const int64_t min_fmas = int64_t(1) << 20;
  if (col_panels >= row_panels) {
    const int64_t per_panel = std::max<int64_t>(1, M * K * kr.nr);
    pool.parallel_for(col_panels, std::max<int64_t>(1, min_fmas / per_panel), [&](int64_t q0, int64_t q1) {
      gemm_part(kr, M, N, K, A, B, C, 0, M, q0 * kr.nr, std::min(N, q1 * kr.nr), epi);
    });
  } else {
    const int64_t per_panel = std::max<int64_t>(1, N * K * kr.mr);
    pool.parallel_for(row_panels, std::max<int64_t>(1, min_fmas / per_panel), [&](int64_t p0, int64_t p1) {
      gemm_part(kr, M, N, K, A, B, C, p0 * kr.mr, std::min(M, p1 * kr.mr), 0, N, epi);
    });
  }
}

template void gemm<float>(ThreadPool&, GemmIsa, int64_t, int64_t, int64_t, GemmMatrix<const float>,
                          GemmMatrix<const float>, GemmMatrix<float>, const GemmEpilogue<float>*);
template void gemm<double>(ThreadPool&, GemmIsa, int64_t, int64_t, int64_t, GemmMatrix<const double>,
                           GemmMatrix<const double>, GemmMatrix<double>, const GemmEpilogue<double>*);

}  // namespace cpu_driver
