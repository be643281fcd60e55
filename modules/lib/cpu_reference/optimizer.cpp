// optimizer.cpp — the optimiser step as a primitive (docs/primitives.md,
// "Optimiser"): Update_v1's Adam step where the tensors live, so a step
// reads and writes parameters and moments once in driver memory instead of
// copying all three out to the operator and back.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_reference.hpp"
#include "numerics.hpp"

namespace cpu_driver {

namespace {

// Elements per range of the pool and per pass through the local buffers
// (four binary64 arrays of this length stay in the L1 and L2 caches).
constexpr int64_t kAdamBlock = 2048;

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
  c.pool->parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<double> gb(kAdamBlock), mb(kAdamBlock), vb(kAdamBlock), tb(kAdamBlock);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t at = b * kAdamBlock, len = std::min(kAdamBlock, n - at);
      for (int64_t i = 0; i < len; ++i) {
        gb[i] = static_cast<double>(g[at + i]);
        tb[i] = static_cast<double>(theta[at + i]);
      }
      if (scale != 1.0)
        for (int64_t i = 0; i < len; ++i) gb[i] *= scale;
      // Copied first: outputs may be the inputs' own buffers.
      std::memcpy(mb.data(), m + at, static_cast<size_t>(len) * 8);
      std::memcpy(vb.data(), v + at, static_cast<size_t>(len) * 8);
      umlos::numerics::adam_step(isa, static_cast<size_t>(len), gb.data(), mb.data(), vb.data(), tb.data(), k);
      for (int64_t i = 0; i < len; ++i) theta_out[at + i] = static_cast<T>(tb[i]);
      std::memcpy(m_out + at, mb.data(), static_cast<size_t>(len) * 8);
      std::memcpy(v_out + at, vb.data(), static_cast<size_t>(len) * 8);
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

}  // namespace

void register_optimizers(std::vector<PrimitiveInfo>& out) {
  out.push_back({"adam", "theta,g,m,v", "theta,m,v", adam_entry});
}

}  // namespace cpu_driver
