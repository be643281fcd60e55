/*
 * umlos_sum.h — the canonical sum (spec 004 0.E): the one summation order of
 * every binary64 reduction in UML_OS, on every device.
 *
 * Values in ascending index order are cut into chunks of UMLOS_SUM_CHUNK
 * (256); each chunk is a left fold in binary64 starting from +0.0; the
 * result is a left fold of the chunk sums, in ascending chunk order,
 * starting from +0.0. Chunks are independent, so a parallel implementation
 * may fold them concurrently and then fold their sums in order; the bits
 * are those of this sequential definition.
 *
 * Plain C; compiles as CUDA device code when UMLOS_SUM_QUALIFIER is defined
 * as `__host__ __device__ static inline` before inclusion. Build without FMA
 * contraction (-ffp-contract=off, nvcc -fmad=false) and never with
 * fast-math: only correctly rounded additions happen here.
 */
#ifndef UMLOS_SUM_H_
#define UMLOS_SUM_H_

#include <stdint.h>

#ifndef UMLOS_SUM_QUALIFIER
#define UMLOS_SUM_QUALIFIER static inline
#endif

#define UMLOS_SUM_CHUNK 256

/* A canonical sum in progress: values are added one by one, in order. */
typedef struct umlos_canonical_sum {
  double total;  /* left fold of the complete chunks */
  double chunk;  /* left fold of the current chunk */
  int64_t count; /* values in the current chunk, < UMLOS_SUM_CHUNK */
} umlos_canonical_sum;

#define UMLOS_CANONICAL_SUM_INIT \
  { 0.0, 0.0, 0 }

/* Adds the next value (index order). */
UMLOS_SUM_QUALIFIER void umlos_canonical_sum_add(umlos_canonical_sum *s, double x) {
  s->chunk += x;
  if (++s->count == UMLOS_SUM_CHUNK) {
    s->total += s->chunk;
    s->chunk = 0.0;
    s->count = 0;
  }
}

/* The sum of every value added so far (+0.0 for none). The last, partial
 * chunk is folded in only when it holds a value. */
UMLOS_SUM_QUALIFIER double umlos_canonical_sum_result(const umlos_canonical_sum *s) {
  return s->count ? s->total + s->chunk : s->total;
}

#endif /* UMLOS_SUM_H_ */
