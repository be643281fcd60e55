// gelu.tests.cpp — GELU and its gradient on SLEEF's deterministic erf and
// exp (modules/lib/cpu_reference/gelu.hpp): the same bits on every
// instruction-set path (scalar, AVX2, AVX-512) and thread count, tails of
// every length and special values included; and within a few ulps of erf
// and exp in long double.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu_driver_support.hpp"

using namespace cpu_driver_test;

namespace {

// Values over the range where erf and exp change (|x| up to 12), signed
// zeros, infinities, the smallest and largest of the dtype, and a NaN.
std::vector<double> gelu_inputs(int32_t dtype, size_t n, uint64_t seed) {
  return mixed_inputs(dtype, n, seed, -12, 12);
}

std::vector<uint8_t> run(umlos::Host& host, int32_t dtype, const std::vector<double>& x,
                         const std::vector<double>* dy) {
  const int64_t n = static_cast<int64_t>(x.size());
  auto tx = upload(host, dtype, {n}, x);
  auto out = empty(host, dtype, {n});
  if (dy) {
    auto tg = upload(host, dtype, {n}, *dy);
    host.dispatch("gelu_grad", {tx.get(), tg.get()}, {out.get()}, {});
  } else {
    host.dispatch("gelu", {tx.get()}, {out.get()}, {});
  }
  return raw_bytes(host, *out);
}

}  // namespace

TEST_CASE("gelu and gelu_grad give the same bits on every instruction-set path and with 1, 2 and 3 threads",
          "[cpu_driver][determinism]") {
  auto reference = make_host(1, 0, -1, "scalar");
  auto others = hosts_on_every_path();
  CHECK(others.size() >= 3);
  // Every tail length of both vector widths, and one long enough that
  // three threads each take a range.
  std::vector<size_t> lengths;
  for (size_t n = 1; n <= 33; ++n) lengths.push_back(n);
  lengths.push_back(100003);
  uint64_t seed = 40;
  for (size_t n : lengths) {
    for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
      const std::vector<double> x = gelu_inputs(dtype, n, ++seed), dy = gelu_inputs(dtype, n, seed + 1000);
      const auto fwd = run(*reference, dtype, x, nullptr), grad = run(*reference, dtype, x, &dy);
      for (auto& [name, host] : others) {
        INFO(n << " values, " << (dtype == UMLOS_DTYPE_F32 ? "f32, " : "f64, ") << name);
        CHECK(run(*host, dtype, x, nullptr) == fwd);
        CHECK(run(*host, dtype, x, &dy) == grad);
      }
    }
  }
}

TEST_CASE("gelu and gelu_grad are within a few ulps of the erf form computed in long double",
          "[cpu_driver][numerics]") {
  auto host = make_host(2);
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    const bool f32 = dtype == UMLOS_DTYPE_F32;
    const size_t n = 200000;
    std::vector<double> x = gelu_inputs(dtype, n, 7), dy(n, 1.0);
    const int64_t N = static_cast<int64_t>(n);
    auto tx = upload(*host, dtype, {N}, x), tg = upload(*host, dtype, {N}, dy);
    auto fy = empty(*host, dtype, {N}), fd = empty(*host, dtype, {N});
    host->dispatch("gelu", {tx.get()}, {fy.get()}, {});
    host->dispatch("gelu_grad", {tx.get(), tg.get()}, {fd.get()}, {});
    const std::vector<double> got = download(*host, *fy), gotd = download(*host, *fd);
    // A few roundings of the dtype around erf and exp of 1 ulp each: 8 ulps
    // of the result's magnitude, or of what the erf form cancels (1 + erf(t)
    // where erf(t) is near -1: its error is an ulp of 1, times 0.5 x).
    const double ulp = f32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
    double worst = 0, worst_d = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(x[i]) || std::fabs(x[i]) > 1e4) continue;
      const long double v = x[i], cdf = 0.5L * (1 + std::erf(v / std::sqrt(2.0L)));
      const long double pdf = std::exp(-0.5L * v * v) / std::sqrt(2 * 3.14159265358979323846264338327950288L);
      const long double want = v * cdf, want_d = cdf + v * pdf;
      const long double scale =
          std::max<long double>(std::max(std::fabs(want), 0.5L * std::fabs(v)), std::numeric_limits<float>::min());
      const long double scale_d = std::max<long double>(std::fabs(want_d), 1.0L);
      worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want) / scale / ulp));
      worst_d = std::max(worst_d, static_cast<double>(std::fabs(gotd[i] - want_d) / scale_d / ulp));
    }
    INFO((f32 ? "f32" : "f64") << ": worst " << worst << " ulp (gelu), " << worst_d << " ulp (gelu_grad)");
    CHECK(worst <= 8);
    CHECK(worst_d <= 8);
  }
}
