// widen_add.hpp — acc[j] += binary64(x[j]) over a run, on the instruction
// set's widest vectors: the inner step of column sums (sum_leading_rows:
// bias and broadcast gradients), which compiled for the baseline x86-64
// converted two values an instruction. Each element is one exact widening
// and one binary64 addition whatever the path, so every path gives the same
// bits; only how many elements an instruction takes differs.
#pragma once

#include <cstdint>

#include "gemm.hpp"

namespace cpu_driver {

// acc[j] = acc[j] + double(x[j]) for j in [0, n): the function of the
// `isa` path (the scalar loop where the CPU lacks it), chosen once for a
// whole sum (its rows are often short).
using AddWidenedF32 = void (*)(const float* x, double* acc, int64_t n);
using AddWidenedF64 = void (*)(const double* x, double* acc, int64_t n);
AddWidenedF32 add_widened_path(GemmIsa isa, const float*);
AddWidenedF64 add_widened_path(GemmIsa isa, const double*);

// The vector paths, in files compiled for their instruction sets.
void add_widened_avx512(const float* x, double* acc, int64_t n);
void add_widened_avx512(const double* x, double* acc, int64_t n);
void add_widened_avx2(const float* x, double* acc, int64_t n);
void add_widened_avx2(const double* x, double* acc, int64_t n);

}  // namespace cpu_driver

// The loops of one vector path: LOADW(p) loads W floats widened to
// binary64, LOADD(p) W doubles, ADD and STORE on W doubles; the tail one
// element at a time (the same operation).
#define UMLOS_WIDEN_ADD_LOOPS(SUFFIX, W, LOADW, LOADD, ADD, STORE)                    \
  void add_widened_##SUFFIX(const float* x, double* acc, int64_t n) {                 \
    int64_t j = 0;                                                                    \
    for (; j + (W) <= n; j += (W)) STORE(acc + j, ADD(LOADD(acc + j), LOADW(x + j))); \
    for (; j < n; ++j) acc[j] += static_cast<double>(x[j]);                           \
  }                                                                                   \
  void add_widened_##SUFFIX(const double* x, double* acc, int64_t n) {                \
    int64_t j = 0;                                                                    \
    for (; j + (W) <= n; j += (W)) STORE(acc + j, ADD(LOADD(acc + j), LOADD(x + j))); \
    for (; j < n; ++j) acc[j] += x[j];                                                \
  }
