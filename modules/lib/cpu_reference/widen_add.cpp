// widen_add.cpp — see widen_add.hpp: the path chosen at run time, and the
// scalar one.
#include "widen_add.hpp"

namespace cpu_driver {

namespace {

template <class S>
void add_widened_scalar(const S* x, double* acc, int64_t n) {
  for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<double>(x[j]);
}

template <class S>
auto path_for(GemmIsa isa) -> void (*)(const S*, double*, int64_t) {
  using F = void (*)(const S*, double*, int64_t);
  if (isa == GemmIsa::avx512 && gemm_isa_supported(isa)) return static_cast<F>(add_widened_avx512);
  if (isa != GemmIsa::scalar && gemm_isa_supported(GemmIsa::avx2)) return static_cast<F>(add_widened_avx2);
  return add_widened_scalar<S>;
}

}  // namespace

AddWidenedF32 add_widened_path(GemmIsa isa, const float*) { return path_for<float>(isa); }
AddWidenedF64 add_widened_path(GemmIsa isa, const double*) { return path_for<double>(isa); }

}  // namespace cpu_driver
