// numerics.hpp — the model operators' binary64 loops: the gradient's
// canonical sum of squares and the Adam step (Update_v1, docs/model.md
// "Update"), and the Box-Muller draws of Encode_v1's eps.
//
// Each is elementwise or chunk-independent, so a wider vector path computes
// exactly what the scalar loop does: they only add, subtract, multiply,
// divide, take square roots, convert and select, each correctly rounded in
// every lane and never fused (-ffp-contract=off, no FMA instructions); the
// sum of squares folds each 256-element chunk left to right on its own and
// then the chunk sums in ascending order (the canonical sum,
// abi/umlos_sum.h), interleaving independent chunks only to keep the adder
// busy. Results are bit-identical on every path; the tests run each path
// the CPU has.
#pragma once

#include <cstddef>

#include "umlos_sum.h"

namespace umlos::numerics {

enum class Isa : int { baseline = 0, avx2 = 1, avx512 = 2 };

const char* isa_name(Isa isa);
bool isa_supported(Isa isa);  // whether this CPU can run the path
Isa isa_best();               // the widest path this CPU supports

// The canonical sum (spec 004 0.E) of x[k] * x[k] for k in [0, n).
double canonical_sum_of_squares(const double* x, size_t n);

// x[k] * x[k] for k in [0, n) added to the canonical sum in progress s, in
// order: exactly umlos_canonical_sum_add of each square, so a sum over
// several arrays in turn is the sum over their concatenation.
void canonical_add_squares(umlos_canonical_sum& s, const double* x, size_t n);

// out[g] = the fold of whole chunk c + g, for g < G, the G folds
// interleaved (G independent chains of additions).
template <size_t G, class F>
void fold_whole_chunks(size_t c, const F& value, double* out) {
  constexpr size_t C = UMLOS_SUM_CHUNK;
  double s[G] = {};  // +0.0 each
  for (size_t i = 0; i < C; ++i)
    for (size_t g = 0; g < G; ++g) s[g] += value((c + g) * C + i);
  for (size_t g = 0; g < G; ++g) out[g] = s[g];
}

// sums[c - c0] = the left fold from +0.0, in ascending index order, of
// value(i) over the c-th UMLOS_SUM_CHUNK-value chunk of the n values, for c
// in [c0, c1) (the last chunk may be partial): the chunk sums the canonical
// sum then folds in ascending order. Four whole chunks at a time, their
// folds interleaved: four independent chains of additions instead of one,
// the adder's throughput instead of its latency per value (then three or
// two where fewer whole chunks are left); each chunk's additions are the
// same, in the same order.
template <class F>
void chunk_sums(size_t n, size_t c0, size_t c1, const F& value, double* sums) {
  constexpr size_t C = UMLOS_SUM_CHUNK;
  size_t c = c0;
  for (; c + 4 <= c1 && (c + 4) * C <= n; c += 4) fold_whole_chunks<4>(c, value, sums + (c - c0));
  if (c + 3 <= c1 && (c + 3) * C <= n) {  // three whole chunks left (a row of 768)
    fold_whole_chunks<3>(c, value, sums + (c - c0));
    c += 3;
  }
  if (c + 2 <= c1 && (c + 2) * C <= n) {
    fold_whole_chunks<2>(c, value, sums + (c - c0));
    c += 2;
  }
  for (; c < c1; ++c) {  // one chunk, perhaps the last, partial one
    double s = 0.0;
    const size_t end = (c + 1) * C < n ? (c + 1) * C : n;
    for (size_t i = c * C; i < end; ++i) s += value(i);
    sums[c - c0] = s;
  }
}

// The canonical sum of value(i) for i in [0, n): chunk_sums four chunks at a
// time, folded in ascending chunk order from +0.0. The same bits as
// umlos_canonical_sum_add of each value in turn.
template <class F>
double canonical_sum(size_t n, const F& value) {
  constexpr size_t C = UMLOS_SUM_CHUNK;
  const size_t chunks = (n + C - 1) / C;
  double total = 0.0;
  double sums[4];
  for (size_t c = 0; c < chunks; c += 4) {
    const size_t c1 = c + 4 < chunks ? c + 4 : chunks;
    chunk_sums(n, c, c1, value, sums);
    for (size_t k = 0; k < c1 - c; ++k) total += sums[k];
  }
  return total;
}

// sums[c] = the left fold from +0.0 of the squares of the c-th of `chunks`
// whole UMLOS_SUM_CHUNK-value chunks starting at x (chunk_sums of x[i]^2).
void chunk_sums_of_squares(const double* x, size_t chunks, double* sums);

struct AdamCoefficients {
  double b1, b2, eps, lr, wd, b1_pow, b2_pow;
};

// One Adam step over n elements, for each k in this order of operations:
//   m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) (g g)
//   theta -= lr (  (m / (1 - b1_pow)) / (sqrt(v / (1 - b2_pow)) + eps)
//                + wd theta )
void adam_step(Isa isa, size_t n, const double* g, double* m, double* v, double* theta, const AdamCoefficients& a);
// The same step with the moments read from m_in, v_in and written to m, v:
// the same bits as copying them there first and stepping in place. An
// input must not overlap an output.
void adam_step_to(Isa isa, size_t n, const double* g, const double* m_in, const double* v_in, double* m, double* v,
                  double* theta, const AdamCoefficients& a);

// eps[k] = sqrt(-2 log u1[k]) cos(2 pi u2[k]) with the deterministic log
// and cosine of abi/umlos_philox.h (Box-Muller, spec 004 V.B).
void box_muller(Isa isa, size_t n, const double* u1, const double* u2, double* eps);

// The paths, one per file compiled for its instruction set (internal).
void adam_step_avx2(size_t n, const double* g, double* m, double* v, double* theta, const AdamCoefficients& a);
void adam_step_avx512(size_t n, const double* g, double* m, double* v, double* theta, const AdamCoefficients& a);
void adam_step_to_avx2(size_t n, const double* g, const double* m_in, const double* v_in, double* m, double* v,
                       double* theta, const AdamCoefficients& a);
void adam_step_to_avx512(size_t n, const double* g, const double* m_in, const double* v_in, double* m, double* v,
                         double* theta, const AdamCoefficients& a);
void box_muller_avx2(size_t n, const double* u1, const double* u2, double* eps);
void box_muller_avx512(size_t n, const double* u1, const double* u2, double* eps);

}  // namespace umlos::numerics
