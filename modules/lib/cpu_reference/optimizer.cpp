// optimizer.cpp — the optimiser's primitives (docs/primitives.md,
// "Optimiser"): the gradient norm's canonical sum of squares and Update_v1's
// Adam step where the tensors live, so a step reads the gradients and reads
// and writes parameters and moments in driver memory instead of copying
// them out to the operator and back.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu_reference.hpp"
#include "numerics.hpp"

namespace cpu_driver {

namespace {

// Elements per pass through the local buffers (the binary64 arrays of this
// length stay in the L1 and L2 caches).
constexpr int64_t kAdamBlock = 2048;
// Blocks per range of the pool at least: 32K elements, about 50 us of
// work, more than waking a pool thread costs. With one block a range, a
// [64, 128] weight (four blocks) was split in two, 13 us of work against
// a wake of about 28 us: the digits step ran slower at two threads than at
// one. (The split never changes a result: every element is independent.)
constexpr int64_t kAdamGrainBlocks = 16;

// Whether n binary64 values at a and at b share any byte.
bool overlaps(const double* a, size_t n, const double* b) { return a < b + n && b < a + n; }

// adam: theta, g (the parameter's dtype), m, v (binary64, theta's shape)
// -> theta', m', v'. Per element, exactly Update_v1's host loop: g widened
// to binary64 and multiplied by grad_scale unless that is 1, theta
// widened, umlos::numerics::adam_step (each operation rounded on its own,
// the same bits on every instruction-set path), theta' rounded once to its
// dtype. Elementwise, so the ranges of the pool change nothing.
template <class T>
void adam(Call& c) {
  const umlos::numerics::AdamCoefficients k{c.attr_float("beta1", 0.9),
                                            c.attr_float("beta2", 0.999),
                                            c.attr_float("eps", 1e-8),
                                            c.attr_float("lr", 1e-3),
                                            c.attr_float("weight_decay", 0.0),
                                            c.attr_float("beta1_pow", c.attr_float("beta1", 0.9)),
                                            c.attr_float("beta2_pow", c.attr_float("beta2", 0.999))};
  const double scale = c.attr_float("grad_scale", 1.0);
  const T* theta = c.in[0].as<T>();
  const T* g = c.in[1].as<T>();
  const double* m = c.in[2].as<double>();
  const double* v = c.in[3].as<double>();
  T* theta_out = c.out[0].as<T>();
  double* m_out = c.out[1].as<double>();
  double* v_out = c.out[2].as<double>();
  const umlos::numerics::Isa isa = umlos::numerics::isa_best();
  const int64_t n = c.in[0].numel, blocks = (n + kAdamBlock - 1) / kAdamBlock;
  c.pool->parallel_for(blocks, kAdamGrainBlocks, [&](int64_t b0, int64_t b1) {
    std::vector<double> gb(kAdamBlock), tb(kAdamBlock);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t at = b * kAdamBlock, len = std::min(kAdamBlock, n - at);
      for (int64_t i = 0; i < len; ++i) {
        gb[i] = static_cast<double>(g[at + i]);
        tb[i] = static_cast<double>(theta[at + i]);
      }
      if (scale != 1.0)
        for (int64_t i = 0; i < len; ++i) gb[i] *= scale;
      // The moments are written where the outputs lie: in place when the
      // outputs are the inputs' buffers, read from the inputs when apart,
      // and through a copy in any other layout.
      const size_t count = static_cast<size_t>(len);
      const double *mi = m + at, *vi = v + at;
      double *mo = m_out + at, *vo = v_out + at;
      if (mo == mi && vo == vi) {
        umlos::numerics::adam_step(isa, count, gb.data(), mo, vo, tb.data(), k);
      } else if (!overlaps(mi, count, mo) && !overlaps(vi, count, vo) && !overlaps(mi, count, vo) &&
                 !overlaps(vi, count, mo)) {
        umlos::numerics::adam_step_to(isa, count, gb.data(), mi, vi, mo, vo, tb.data(), k);
      } else {
        std::memmove(mo, mi, count * 8);
        std::memmove(vo, vi, count * 8);
        umlos::numerics::adam_step(isa, count, gb.data(), mo, vo, tb.data(), k);
      }
      for (int64_t i = 0; i < len; ++i) theta_out[at + i] = static_cast<T>(tb[i]);
    }
  });
}

void adam_entry(Call& c) {
  c.expect_counts(4, 3);
  with_float_dtype(c, {1}, {0}, [&](auto tag) {
    using T = decltype(tag);
    const std::vector<int64_t>& dims = c.in[0].dims;
    c.expect_in_shape(1, dims);
    for (size_t i : {size_t(2), size_t(3)}) {
      c.expect_in_dtype(i, UMLOS_DTYPE_F64);
      c.expect_in_shape(i, dims);
    }
    c.expect_out_shape(0, dims);
    for (size_t i : {size_t(1), size_t(2)}) {
      c.expect_out_dtype(i, UMLOS_DTYPE_F64);
      c.expect_out_shape(i, dims);
    }
    adam<T>(c);
  });
}

// Canonical-sum chunks per pass of the sum of squares: their binary64
// values stay in the L1 and L2 caches.
constexpr int64_t kSquaresChunks = 64;
// Passes per range of the pool at least: 128K elements, tens of
// microseconds of work, more than waking a pool thread costs.
constexpr int64_t kSquaresGrainPasses = 8;

// The canonical sum in progress, as the F64[3] operand carries it (total,
// open chunk, values in the open chunk). Refuses a state that no sequence
// of additions reaches.
umlos_canonical_sum read_sum_state(const Call& c) {
  const double* s = c.in[1].as<double>();
  const double count = s[2];
  if (!(count >= 0 && count < UMLOS_SUM_CHUNK) || count != static_cast<double>(static_cast<int64_t>(count)) ||
      (count == 0 && s[1] != 0.0)) {
    fail(UMLOS_INVALID_ARGUMENT, c.primitive + ": input 's' is not a canonical sum in progress: count " +
                                     std::to_string(count) + " (expected an integer in [0, " +
                                     std::to_string(UMLOS_SUM_CHUNK) + ")), open chunk " + std::to_string(s[1]) +
                                     " (expected 0 when count is 0)");
  }
  return {s[0], s[1], static_cast<int64_t>(count)};
}

// sum_squares: x (float), s (F64[3]) -> s' (F64[3]): s continued by the
// square of every element of x, widened to binary64 and multiplied by
// `scale` unless that is 1, in flat order. The open chunk is finished
// first; the whole chunks after it are folded over the pool, a fixed range
// of chunks each, and their sums folded into the total in ascending order;
// the rest opens the next chunk. The bits are those of adding the squares
// one by one (abi/umlos_sum.h), at every thread count.
template <class T>
void sum_squares(Call& c) {
  const double scale = c.attr_float("scale", 1.0);
  umlos_canonical_sum s = read_sum_state(c);
  const T* x = c.in[0].as<T>();
  const int64_t n = c.in[0].numel;
  // x[at, at + len) as binary64, scaled: x itself where nothing changes.
  auto widened = [&](int64_t at, int64_t len, std::vector<double>& buf) -> const double* {
    if constexpr (std::is_same_v<T, double>)
      if (scale == 1.0) return x + at;
    buf.resize(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) buf[i] = static_cast<double>(x[at + i]);
    if (scale != 1.0)
      for (int64_t i = 0; i < len; ++i) buf[i] *= scale;
    return buf.data();
  };
  std::vector<double> buf;
  const int64_t head = s.count > 0 ? std::min<int64_t>(n, UMLOS_SUM_CHUNK - s.count) : 0;
  umlos::numerics::canonical_add_squares(s, widened(0, head, buf), static_cast<size_t>(head));
  const int64_t chunks = (n - head) / UMLOS_SUM_CHUNK;
  std::vector<double> sums(static_cast<size_t>(chunks));
  c.pool->parallel_for(
      (chunks + kSquaresChunks - 1) / kSquaresChunks, kSquaresGrainPasses, [&](int64_t b0, int64_t b1) {
        std::vector<double> local;
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t c0 = b * kSquaresChunks, cn = std::min(kSquaresChunks, chunks - c0);
          umlos::numerics::chunk_sums_of_squares(widened(head + c0 * UMLOS_SUM_CHUNK, cn * UMLOS_SUM_CHUNK, local),
                                                 static_cast<size_t>(cn), sums.data() + c0);
        }
      });
  for (double partial : sums) s.total += partial;
  const int64_t rest = head + chunks * UMLOS_SUM_CHUNK;
  umlos::numerics::canonical_add_squares(s, widened(rest, n - rest, buf), static_cast<size_t>(n - rest));
  double* out = c.out[0].as<double>();
  out[0] = s.total;
  out[1] = s.chunk;
  out[2] = static_cast<double>(s.count);
}

void sum_squares_entry(Call& c) {
  c.expect_counts(2, 1);
  c.expect_in_dtype(1, UMLOS_DTYPE_F64);
  c.expect_in_shape(1, {3});
  c.expect_out_dtype(0, UMLOS_DTYPE_F64);
  c.expect_out_shape(0, {3});
  with_float_dtype(c, {}, {}, [&](auto tag) { sum_squares<decltype(tag)>(c); });
}

}  // namespace

void register_optimizers(std::vector<PrimitiveInfo>& out) {
  out.push_back({"adam", "theta,g,m,v", "theta,m,v", adam_entry});
  out.push_back({"sum_squares", "x,s", "s", sum_squares_entry});
}

}  // namespace cpu_driver
