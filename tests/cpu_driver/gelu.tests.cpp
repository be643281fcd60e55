// gelu.tests.cpp — GELU and its gradient (modules/lib/cpu_reference/gelu.hpp:
// binary32 erf from erf32.hpp, the rest on SLEEF's deterministic erf and
// exp): the same bits on every instruction-set path (scalar, AVX2, AVX-512)
// and thread count, tails of every length and special values included;
// within a few ulps of erf and exp in long double; and the binary32 erf
// itself correctly rounded but for arguments whose erf lies within a
// hair of a rounding midpoint.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu_driver_support.hpp"
#include "gelu.hpp"

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

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The binary32 ulp of a value of magnitude m (subnormal spacing below the
// smallest normal).
long double ulp_f32(long double m) {
  if (m < std::numeric_limits<float>::min()) return std::ldexp(1.0L, -149);
  int e = 0;
  std::frexp(m, &e);  // m = f 2^e, f in [0.5, 1)
  return std::ldexp(1.0L, e - 24);
}

// The vector paths this CPU has (a warning for each it lacks).
std::vector<cpu_driver::GemmIsa> vector_paths() {
  std::vector<cpu_driver::GemmIsa> paths;
  for (cpu_driver::GemmIsa isa : {cpu_driver::GemmIsa::avx2, cpu_driver::GemmIsa::avx512}) {
    if (cpu_driver::gemm_isa_supported(isa))
      paths.push_back(isa);
    else
      WARN("this CPU has no " << cpu_driver::gemm_isa_name(isa) << " path: not compared");
  }
  return paths;
}

// erf of `pos` and then of each negated (*x, in that order) on the scalar
// path, returned; each vector path's results compared with it byte for
// byte, *mismatches counting the paths that differ.
template <class T>
std::vector<T> erf_on_every_path(void (*erf_values)(cpu_driver::GemmIsa, const T*, T*, int64_t),
                                 const std::vector<cpu_driver::GemmIsa>& paths, const std::vector<T>& pos,
                                 std::vector<T>* x, uint64_t* mismatches) {
  *x = pos;
  for (T v : pos) x->push_back(-v);
  const int64_t n = static_cast<int64_t>(x->size());
  std::vector<T> want(x->size()), got(x->size());
  erf_values(cpu_driver::GemmIsa::scalar, x->data(), want.data(), n);
  for (cpu_driver::GemmIsa isa : paths) {
    erf_values(isa, x->data(), got.data(), n);
    if (std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) != 0) ++*mismatches;
  }
  return want;
}

// erf of the infinities and NaN on every path this CPU has: +-1 and NaN.
template <class T>
void check_erf_specials(void (*erf_values)(cpu_driver::GemmIsa, const T*, T*, int64_t)) {
  const T special[4] = {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::quiet_NaN()};
  for (cpu_driver::GemmIsa isa :
       {cpu_driver::GemmIsa::scalar, cpu_driver::GemmIsa::avx2, cpu_driver::GemmIsa::avx512}) {
    if (!cpu_driver::gemm_isa_supported(isa)) continue;
    T out[4];
    erf_values(isa, special, out, 4);
    INFO(cpu_driver::gemm_isa_name(isa));
    CHECK(out[0] == T(1));
    CHECK(out[1] == T(-1));
    CHECK(std::isnan(out[2]));
    CHECK(std::isnan(out[3]));
  }
}

}  // namespace

TEST_CASE("GELU's binary32 erf is erf correctly rounded to within 2^-16 ulp, with the same bits on every path",
          "[cpu_driver][numerics][determinism]") {
  // Every 61st binary32 from +0 to 4.5 (past the 3.92 where erf rounds to
  // 1), every value within 64 of the polynomials' seams at 2 and 3.92,
  // the subnormals' ends and the largest finite value, and each of them
  // negated; UMLOS_ERF32_EXHAUSTIVE=1 takes every binary32 below 4.5
  // instead (about 1.1e9 values, in blocks: a few minutes).
  const bool exhaustive = std::getenv("UMLOS_ERF32_EXHAUSTIVE") != nullptr;
  const uint32_t top = 0x40900000u;  // 4.5f
  const std::vector<cpu_driver::GemmIsa> paths = vector_paths();
  double worst = 0;
  float worst_x = 0;
  uint64_t misrounded = 0, checked = 0, path_mismatches = 0;
  // One block of positive arguments: the scalar path's values against
  // long double, the others' against the scalar path's, and erf(-x).
  auto check_block = [&](const std::vector<float>& pos) {
    std::vector<float> x;
    const std::vector<float> want = erf_on_every_path(cpu_driver::erf_f32_values, paths, pos, &x, &path_mismatches);
    for (size_t i = 0; i < pos.size(); ++i) {
      const long double exact = std::erf(static_cast<long double>(x[i]));
      const double err = static_cast<double>(std::fabs(want[i] - exact) / ulp_f32(std::fabs(exact)));
      if (err > worst) {
        worst = err;
        worst_x = x[i];
      }
      if (want[i] != static_cast<float>(exact)) ++misrounded;
      // erf is odd, and so is this one, bit for bit.
      const float neg = want[i + pos.size()];
      if (!(neg == -want[i] && std::signbit(neg) != std::signbit(want[i])))
        FAIL_CHECK("erf(-" << x[i] << ") = " << neg);
    }
    checked += pos.size();
  };
  std::vector<float> block;
  for (uint64_t b = 0; b < top; b += exhaustive ? 1 : 61) {
    block.push_back(from_bits(static_cast<uint32_t>(b)));
    if (block.size() == (1u << 20)) {
      check_block(block);
      block.clear();
    }
  }
  for (float seam : {2.0f, 3.92f})
    for (int k = -64; k <= 64; ++k) {
      uint32_t b;
      std::memcpy(&b, &seam, sizeof b);
      block.push_back(from_bits(b + k));
    }
  for (uint32_t b : {0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu}) block.push_back(from_bits(b));
  check_block(block);

  INFO(checked << " finite arguments: worst " << worst << " ulp at " << worst_x << ", " << misrounded
               << " not correctly rounded");
  CHECK(path_mismatches == 0);
  CHECK(worst <= 0.5 + std::ldexp(1.0, -16));
  CHECK(misrounded * 1000 <= checked);
  WARN("binary32 erf: worst " << worst << " ulp at " << worst_x << ", " << misrounded << " of " << checked
                              << " not correctly rounded; " << paths.size() << " vector paths compared");

  check_erf_specials<float>(cpu_driver::erf_f32_values);
}

namespace {

// The binary64 ulp of a value of magnitude m (below 1; erf's range), the
// subnormal spacing below the smallest normal.
long double ulp_f64(long double m) {
  if (m < std::numeric_limits<double>::min()) return std::ldexp(1.0L, -1074);
  int e = 0;
  std::frexp(m, &e);
  return std::ldexp(1.0L, e - 53);
}

}  // namespace

TEST_CASE("GELU's binary64 erf is within 1 ulp of erf, odd, and gives the same bits on every path",
          "[cpu_driver][numerics][determinism]") {
  // 2 million arguments: uniform on [0, 6.5) (every piece and the
  // saturation), dense around the pieces' seams (0.625, 0.9, 1.25, 2.25,
  // 3.5, 5.92) and down to the subnormals, each also negated; the
  // reference is long double erfl (64-bit significand).
  const std::vector<cpu_driver::GemmIsa> paths = vector_paths();
  Rand rng(2026);
  std::vector<double> pos;
  for (int i = 0; i < 1500000; ++i) pos.push_back(rng.uniform(0, 6.5));
  for (double seam : {0.625, 0.9, 1.25, 2.25, 3.5, 5.92})
    for (int k = -2000; k <= 2000; ++k) pos.push_back(std::nextafter(seam, k < 0 ? 0.0 : 10.0) + k * 0x1p-40);
  for (int e = -1074; e < 0; ++e) pos.push_back(std::ldexp(1.0 + rng.uniform(0, 1), e));
  for (double v : {0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308}) pos.push_back(v);
  std::vector<double> x;
  uint64_t path_mismatches = 0;
  const std::vector<double> want = erf_on_every_path(cpu_driver::erf_f64_values, paths, pos, &x, &path_mismatches);
  CHECK(path_mismatches == 0);
  double worst = 0, worst_x = 0;
  uint64_t misrounded = 0;
  for (size_t i = 0; i < pos.size(); ++i) {
    const long double exact = erfl(static_cast<long double>(x[i]));
    const double err = static_cast<double>(std::fabs(want[i] - exact) / ulp_f64(std::fabs(exact)));
    if (err > worst) {
      worst = err;
      worst_x = x[i];
    }
    if (want[i] != static_cast<double>(exact)) ++misrounded;
    const double neg = want[i + pos.size()];
    if (!(neg == -want[i] && std::signbit(neg) != std::signbit(want[i]))) FAIL_CHECK("erf(-" << x[i] << ") = " << neg);
  }
  INFO(pos.size() << " arguments: worst " << worst << " ulp at " << worst_x << ", " << misrounded
                  << " not correctly rounded");
  CHECK(worst <= 1.0);
  CHECK(misrounded * 20 <= pos.size());
  WARN("binary64 erf: worst " << worst << " ulp at " << std::hexfloat << worst_x << std::defaultfloat << ", "
                              << misrounded << " of " << pos.size() << " not correctly rounded; " << paths.size()
                              << " vector paths compared");
  check_erf_specials<double>(cpu_driver::erf_f64_values);
}
