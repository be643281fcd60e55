// kernels.cu — the device code of cuda_driver, compiled by nvcc into one
// fatbin (sm_90 SASS + compute_90 PTX) that driver.cpp embeds and loads with
// cuModuleLoadData. Every kernel is extern "C" (stable names for
// cuModuleGetFunction) and takes plain parameters or the structs of plan.hpp.
//
// Determinism (docs/cuda_driver.md): built with --fmad=false (no FMA
// contraction), IEEE division and sqrt, no flush-to-zero; no atomics; every
// output element is computed by exactly one thread, in the order
// docs/primitives.md defines; canonical sums are folded chunk by chunk in
// ascending order (plan.hpp). Grid-stride loops make results independent of
// the grid size.
#include <stdint.h>

#define UMLOS_PHILOX_QUALIFIER __host__ __device__ static inline
#define UMLOS_SQRT sqrt
#include "plan.hpp"
#include "umlos_philox.h"

using namespace cuda_driver;

#define GRID_STRIDE(i, n) \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

// ---------------------------------------------------------------- memory

extern "C" __global__ void umlos_fill_u8(uint8_t* y, int64_t n, uint8_t v) { GRID_STRIDE(i, n) y[i] = v; }
extern "C" __global__ void umlos_fill_u32(uint32_t* y, int64_t n, uint32_t v) { GRID_STRIDE(i, n) y[i] = v; }
extern "C" __global__ void umlos_fill_u64(uint64_t* y, int64_t n, uint64_t v) { GRID_STRIDE(i, n) y[i] = v; }

// ---------------------------------------------------------------- RNG

// Element i of draw (key, stream, d): the published mapping, bit for bit.
// dist: umlos_distribution (1 U32, 2 UNIFORM_F32, 3 UNIFORM_F64, 4 NORMAL_F32,
// 5 NORMAL_F64; driver.cpp passes the ABI value through).
extern "C" __global__ void umlos_rng_fill(void* out, int64_t n, int32_t dist, uint32_t k0, uint32_t k1, uint32_t stream,
                                          uint64_t d, int32_t kind) {
  const uint32_t key[2] = {k0, k1};
  GRID_STRIDE(i, n) {
    uint64_t u = (uint64_t)i;
    switch (kind) {
      case 0:
        ((uint32_t*)out)[i] = umlos_draw_element_u32(key, stream, d, u);
        break;
      case 1:
        ((float*)out)[i] = umlos_draw_element_uniform_f32(key, stream, d, u);
        break;
      case 2:
        ((double*)out)[i] = umlos_draw_element_uniform_f64(key, stream, d, u);
        break;
      case 3:
        ((float*)out)[i] = umlos_draw_element_normal_f32(key, stream, d, u);
        break;
      default:
        ((double*)out)[i] = umlos_draw_element_normal_f64(key, stream, d, u);
        break;
    }
  }
  (void)dist;
}

// ---------------------------------------------------------------- elementwise

// op codes shared with driver.cpp (enum UnaryOp there).
enum { U_RELU, U_TANH, U_SIGMOID, U_EXP, U_LOG, U_SIN, U_COS, U_SQRT, U_CLAMP, U_GELU };

template <class T>
__device__ inline T d_exp(T x);
template <>
__device__ inline float d_exp(float x) {
  return expf(x);
}
template <>
__device__ inline double d_exp(double x) {
  return exp(x);
}
template <class T>
__device__ inline T d_tanh(T x);
template <>
__device__ inline float d_tanh(float x) {
  return tanhf(x);
}
template <>
__device__ inline double d_tanh(double x) {
  return tanh(x);
}
template <class T>
__device__ inline T d_log(T x);
template <>
__device__ inline float d_log(float x) {
  return logf(x);
}
template <>
__device__ inline double d_log(double x) {
  return log(x);
}
template <class T>
__device__ inline T d_sin(T x);
template <>
__device__ inline float d_sin(float x) {
  return sinf(x);
}
template <>
__device__ inline double d_sin(double x) {
  return sin(x);
}
template <class T>
__device__ inline T d_cos(T x);
template <>
__device__ inline float d_cos(float x) {
  return cosf(x);
}
template <>
__device__ inline double d_cos(double x) {
  return cos(x);
}
template <class T>
__device__ inline T d_sqrt(T x);
template <>
__device__ inline float d_sqrt(float x) {
  return sqrtf(x);
}  // IEEE (--prec-sqrt=true)
template <>
__device__ inline double d_sqrt(double x) {
  return sqrt(x);
}
template <class T>
__device__ inline T d_erf(T x);
template <>
__device__ inline float d_erf(float x) {
  return erff(x);
}
template <>
__device__ inline double d_erf(double x) {
  return erf(x);
}

template <class T>
__device__ inline T sigmoid_of(T x) {
  if (x >= T(0)) return T(1) / (T(1) + d_exp(-x));
  T e = d_exp(x);
  return e / (T(1) + e);
}

template <class T>
__device__ inline T unary_value(int op, T x, T lo, T hi) {
  switch (op) {
    case U_RELU:
      return x > T(0) ? x : T(0);
    case U_TANH:
      return d_tanh(x);
    case U_SIGMOID:
      return sigmoid_of(x);
    case U_EXP:
      return d_exp(x);
    case U_LOG:
      return d_log(x);
    case U_SIN:
      return d_sin(x);
    case U_COS:
      return d_cos(x);
    case U_SQRT:
      return d_sqrt(x);
    case U_CLAMP:
      return x < lo ? lo : (x > hi ? hi : x);
    default:
      return T(0.5) * x * (T(1) + d_erf(x * T(0.70710678118654752440)));
  }
}

template <class T>
__device__ inline T unary_grad_value(int op, T x, T g, T lo, T hi) {
  switch (op) {
    case U_RELU:
      return x > T(0) ? g : T(0);
    case U_TANH: {
      T t = d_tanh(x);
      return g * (T(1) - t * t);
    }
    case U_SIGMOID: {
      T s = sigmoid_of(x);
      return g * (s * (T(1) - s));
    }
    case U_EXP:
      return g * d_exp(x);
    case U_LOG:
      return g / x;
    case U_SIN:
      return g * d_cos(x);
    case U_COS:
      return -(g * d_sin(x));
    case U_SQRT:
      return g / (T(2) * d_sqrt(x));
    case U_CLAMP:
      return (x >= lo && x <= hi) ? g : T(0);
    default: {
      T cdf = T(0.5) * (T(1) + d_erf(x * T(0.70710678118654752440)));
      T pdf = d_exp(T(-0.5) * x * x) * T(0.39894228040143267794);
      return g * (cdf + x * pdf);
    }
  }
}

#define UNARY_KERNELS(T, SUF)                                                                                       \
  extern "C" __global__ void umlos_unary_##SUF(int op, const T* x, T* y, int64_t n, T lo, T hi) {                   \
    GRID_STRIDE(i, n) y[i] = unary_value<T>(op, x[i], lo, hi);                                                      \
  }                                                                                                                 \
  extern "C" __global__ void umlos_unary_grad_##SUF(int op, const T* x, const T* g, T* dx, int64_t n, T lo, T hi) { \
    GRID_STRIDE(i, n) dx[i] = unary_grad_value<T>(op, x[i], g[i], lo, hi);                                          \
  }
UNARY_KERNELS(float, f32)
UNARY_KERNELS(double, f64)

enum { B_ADD, B_SUB, B_MUL, B_DIV };

template <class T>
__device__ inline T binary_value(int op, T a, T b) {
  switch (op) {
    case B_ADD:
      return a + b;
    case B_SUB:
      return a - b;
    case B_MUL:
      return a * b;
    default:
      return a / b;
  }
}

#define BINARY_KERNELS(T, SUF)                                                                                \
  extern "C" __global__ void umlos_binary_##SUF(int op, const T* a, const T* b, T* y, BroadcastDesc d) {      \
    GRID_STRIDE(p, d.numel) {                                                                                 \
      int64_t ia, ib;                                                                                         \
      broadcast_offsets(d, p, &ia, &ib);                                                                      \
      y[p] = binary_value<T>(op, a[ia], b[ib]);                                                               \
    }                                                                                                         \
  }                                                                                                           \
  extern "C" __global__ void umlos_accumulate_##SUF(T* a, const T* b, int64_t n) {                            \
    GRID_STRIDE(i, n) a[i] = a[i] + b[i];                                                                     \
  }                                                                                                           \
  extern "C" __global__ void umlos_bias_add_##SUF(const T* x, const T* bias, T* y, int64_t n, int64_t cols) { \
    GRID_STRIDE(i, n) y[i] = x[i] + bias[i % cols];                                                           \
  }
BINARY_KERNELS(float, f32)
BINARY_KERNELS(double, f64)

// ---------------------------------------------------------------- sums

// Phase 1 of the canonical sum over [outer, len, inner]: partial[o*chunks + c]
// is the left fold from +0.0 of chunk c of output o's line. mode 0: x;
// mode 1: (x - center[o])^2 (the variance's second pass).
template <class T>
__device__ inline void chunk_sums(const T* x, double* partial, ReducePlan p, int mode, const double* center) {
  GRID_STRIDE(t, p.partials) {
    int64_t o = t / p.chunks, c = t % p.chunks;
    int64_t oo = o / p.inner, ii = o % p.inner;
    const T* line = x + oo * p.len * p.inner + ii;
    int64_t b, e;
    chunk_range(p.len, c, &b, &e);
    double s = 0.0;
    if (mode == 0) {
      for (int64_t l = b; l < e; ++l) s = s + (double)line[l * p.inner];
    } else {
      double m = center[o];
      for (int64_t l = b; l < e; ++l) {
        double dlt = (double)line[l * p.inner] - m;
        s = s + dlt * dlt;
      }
    }
    partial[t] = s;
  }
}

// Phase 2: out[o] = (fold of the chunk sums in ascending order) / divisor,
// rounded once to T (divisor 1 is exact: sum). `keep` (may be NULL) receives
// the unrounded binary64 value (the variance's mean).
template <class T>
__device__ inline void fold_chunks(const double* partial, T* out, double* keep, ReducePlan p, double divisor) {
  GRID_STRIDE(o, p.outputs) {
    double total = 0.0;
    for (int64_t c = 0; c < p.chunks; ++c) total = total + partial[o * p.chunks + c];
    double v = divisor == 1.0 ? total : total / divisor;
    if (out) out[o] = (T)v;
    if (keep) keep[o] = v;
  }
}

#define SUM_KERNELS(T, SUF)                                                                                     \
  extern "C" __global__ void umlos_chunk_sums_##SUF(const T* x, double* partial, ReducePlan p, int mode,        \
                                                    const double* center) {                                     \
    chunk_sums<T>(x, partial, p, mode, center);                                                                 \
  }                                                                                                             \
  extern "C" __global__ void umlos_fold_chunks_##SUF(const double* partial, T* out, double* keep, ReducePlan p, \
                                                     double divisor) {                                          \
    fold_chunks<T>(partial, out, keep, p, divisor);                                                             \
  }
SUM_KERNELS(float, f32)
SUM_KERNELS(double, f64)

// ---------------------------------------------------------------- softmax

// One thread per row, exactly the reference's row_max_sumexp + write loop.
template <class T>
__device__ inline void softmax_rows(const T* x, T* y, int64_t rows, int64_t n, int log_form) {
  GRID_STRIDE(r, rows) {
    const T* row = x + r * n;
    T* out = y + r * n;
    double m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) m = fmax(m, (double)row[j]);
    if (isinf(m)) m = m > 0 ? m : 0.0;
    double z = canonical_fold(n, [&](int64_t j) { return exp((double)row[j] - m); });
    double log_z = log(z);
    for (int64_t j = 0; j < n; ++j) {
      double t = (double)row[j] - m;
      out[j] = (T)(log_form ? t - log_z : exp(t) / z);
    }
  }
}

extern "C" __global__ void umlos_softmax_f32(const float* x, float* y, int64_t rows, int64_t n, int log_form) {
  softmax_rows<float>(x, y, rows, n, log_form);
}
extern "C" __global__ void umlos_softmax_f64(const double* x, double* y, int64_t rows, int64_t n, int log_form) {
  softmax_rows<double>(x, y, rows, n, log_form);
}

// ---------------------------------------------------------------- GEMM

// An output tile of (16 R) x (16 R) per block of 16x16 threads, an R x R
// register tile per thread (R = 4: plan.hpp; rows
// ty + 16r, columns tx + 16c: a warp reads one or two A values,
// broadcast, and 16 consecutive B values from shared memory, no bank
// conflict). The k loop runs in tiles of 16 in ascending order with fused
// multiply-adds in the tensor dtype; each output's chunk accumulator is
// folded into its total every 256 k (16 tiles): cpu_driver's matmul,
// element for element (plan.hpp's gemm_element is the host copy the tests
// compare). Register tiling changes how many outputs a thread owns, never
// the order of any output's operations.
__device__ inline float gemm_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double gemm_fma(double a, double b, double c) { return fma(a, b, c); }

template <class T>
__device__ inline T gemm_load_a(const T* a, const GemmDesc& g, int64_t bi, int64_t i, int64_t k) {
  if (i >= g.M || k >= g.K) return 0;
  if (g.k_inner >= g.K) return a[bi * g.a_b + i * g.a_i + k * g.a_ki];  // one k run: no 64-bit division
  return a[bi * g.a_b + i * g.a_i + (k / g.k_inner) * g.a_ko + (k % g.k_inner) * g.a_ki];
}

template <class T>
__device__ inline T gemm_load_b(const T* b, const GemmDesc& g, int64_t bi, int64_t k, int64_t j) {
  if (k >= g.K || j >= g.N) return 0;
  if (g.k_inner >= g.K) return b[bi * g.b_b + j * g.b_j + k * g.b_ki];
  return b[bi * g.b_b + j * g.b_j + (k / g.k_inner) * g.b_ko + (k % g.k_inner) * g.b_ki];
}

// R outputs per thread along each side: a block covers (16 R) x (16 R).
template <class T, int R>
__device__ inline void gemm_tile(const T* a, const T* b, T* c, GemmDesc g) {
  constexpr int kGemmRegs = R;
  constexpr int kGemmBlock = kGemmTile * R;
  // k-major tiles: As[kk][row], Bs[kk][col].
  __shared__ T As[kGemmTile][kGemmBlock + 1];
  __shared__ T Bs[kGemmTile][kGemmBlock + 1];
  const int64_t bi = blockIdx.z;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i0 = (int64_t)blockIdx.y * kGemmBlock, j0 = (int64_t)blockIdx.x * kGemmBlock;
  T total[kGemmRegs][kGemmRegs], chunk[kGemmRegs][kGemmRegs];
#pragma unroll
  for (int r = 0; r < kGemmRegs; ++r)
#pragma unroll
    for (int q = 0; q < kGemmRegs; ++q) total[r][q] = chunk[r][q] = 0;
  for (int64_t k0 = 0; k0 < g.K; k0 += kGemmTile) {
    // Each thread stages kGemmRegs elements of each operand: A rows
    // i0 + ty + 16r at column k0 + tx, B rows k0 + ty at columns j0 + tx + 16q.
#pragma unroll
    for (int r = 0; r < kGemmRegs; ++r) {
      As[tx][ty + kGemmTile * r] = gemm_load_a(a, g, bi, i0 + ty + kGemmTile * r, k0 + tx);
      Bs[ty][tx + kGemmTile * r] = gemm_load_b(b, g, bi, k0 + ty, j0 + tx + kGemmTile * r);
    }
    __syncthreads();
    const int kn = g.K - k0 < kGemmTile ? (int)(g.K - k0) : kGemmTile;
    for (int kk = 0; kk < kn; ++kk) {
      T av[kGemmRegs], bv[kGemmRegs];
#pragma unroll
      for (int r = 0; r < kGemmRegs; ++r) {
        av[r] = As[kk][ty + kGemmTile * r];
        bv[r] = Bs[kk][tx + kGemmTile * r];
      }
#pragma unroll
      for (int r = 0; r < kGemmRegs; ++r)
#pragma unroll
        for (int q = 0; q < kGemmRegs; ++q) chunk[r][q] = gemm_fma(av[r], bv[q], chunk[r][q]);
    }
    __syncthreads();
    const int64_t done = k0 + kn;
    if (done % kSumChunk == 0 || done == g.K) {
#pragma unroll
      for (int r = 0; r < kGemmRegs; ++r)
#pragma unroll
        for (int q = 0; q < kGemmRegs; ++q) {
          total[r][q] = total[r][q] + chunk[r][q];
          chunk[r][q] = 0;
        }
    }
  }
#pragma unroll
  for (int r = 0; r < kGemmRegs; ++r) {
    const int64_t i = i0 + ty + kGemmTile * r;
#pragma unroll
    for (int q = 0; q < kGemmRegs; ++q) {
      const int64_t j = j0 + tx + kGemmTile * q;
      if (i < g.M && j < g.N) c[bi * g.c_b + i * g.c_i + j * g.c_j] = total[r][q];
    }
  }
}

extern "C" __global__ void umlos_gemm_f32(const float* a, const float* b, float* c, GemmDesc g) {
  gemm_tile<float, kGemmRegsF32>(a, b, c, g);
}
extern "C" __global__ void umlos_gemm_f64(const double* a, const double* b, double* c, GemmDesc g) {
  gemm_tile<double, kGemmRegsF64>(a, b, c, g);
}
