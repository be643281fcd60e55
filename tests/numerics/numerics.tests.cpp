// numerics.tests.cpp — the model operators' binary64 loops
// (modules/lib/numerics): the chunk-interleaved sum of squares against the
// canonical sum's definition, and every Adam and Box-Muller path the CPU
// has against the scalar formula, bit for bit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "numerics.hpp"
#include "umlos_philox.h"
#include "umlos_sum.h"

namespace opt = umlos::numerics;

namespace {

// Values over many binades with both signs, so that the order of the
// additions shows in the low bits of the sums.
std::vector<double> spread_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> exp(-30, 30);
  std::vector<double> x(n);
  for (double& v : x) v = std::ldexp(mant(rng), exp(rng));
  return x;
}

uint64_t bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

}  // namespace

TEST_CASE("the gradient's sum of squares equals the canonical sum of its squares for every length", "[numerics]") {
  bool order_shows = false;
  for (size_t n : {0, 1, 2, 255, 256, 257, 511, 1023, 1024, 1025, 1280, 2047, 4096, 5000, 26506}) {
    const std::vector<double> x = spread_values(n, 1000 + n);
    umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT;
    double left_fold = 0.0;
    for (double v : x) {
      umlos_canonical_sum_add(&s, v * v);
      left_fold += v * v;
    }
    INFO("n = " << n);
    CHECK(bits(opt::canonical_sum_of_squares(x.data(), x.size())) == bits(umlos_canonical_sum_result(&s)));
    order_shows = order_shows || bits(left_fold) != bits(umlos_canonical_sum_result(&s));
  }
  // The inputs are such that another order gives other bits: the
  // comparison above can fail.
  CHECK(order_shows);
}

TEST_CASE(
    "canonical_sum and chunk_sums, their chunks folded four, three or two at a time, give the canonical sum's bits",
    "[numerics]") {
  bool order_shows = false;
  for (size_t n : {0,   1,    2,    64,   255,  256,  257,  511,  512,  513,  767, 768,
                   769, 1023, 1024, 1025, 1280, 1792, 1793, 2047, 2304, 4096, 5000}) {
    const std::vector<double> x = spread_values(n, 2000 + n);
    umlos_canonical_sum s = UMLOS_CANONICAL_SUM_INIT;
    double left_fold = 0.0;
    for (double v : x) {
      umlos_canonical_sum_add(&s, v);
      left_fold += v;
    }
    INFO("n = " << n);
    const double* p = x.data();
    CHECK(bits(opt::canonical_sum(n, [p](size_t i) { return p[i]; })) == bits(umlos_canonical_sum_result(&s)));
    // Every chunk's fold from chunk_sums over any range of chunks.
    const size_t chunks = (n + UMLOS_SUM_CHUNK - 1) / UMLOS_SUM_CHUNK;
    std::vector<double> sums(chunks);
    for (size_t c0 = 0; c0 < chunks; ++c0) {
      opt::chunk_sums(
          n, c0, chunks, [p](size_t i) { return p[i]; }, sums.data());
      for (size_t c = c0; c < chunks; ++c) {
        umlos_canonical_sum one = UMLOS_CANONICAL_SUM_INIT;
        for (size_t i = c * UMLOS_SUM_CHUNK; i < std::min(n, (c + 1) * UMLOS_SUM_CHUNK); ++i)
          umlos_canonical_sum_add(&one, x[i]);
        CHECK(bits(sums[c - c0]) == bits(umlos_canonical_sum_result(&one)));
      }
    }
    order_shows = order_shows || bits(left_fold) != bits(umlos_canonical_sum_result(&s));
  }
  CHECK(order_shows);
}

TEST_CASE(
    "the Adam step gives the scalar formula's bits on every instruction-set path the CPU has, in place or into other "
    "arrays",
    "[numerics]") {
  const opt::AdamCoefficients a{0.9, 0.999, 1e-8, 1e-3, 0.01, 0.9 * 0.9 * 0.9, 0.999 * 0.999 * 0.999};
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double tiny = std::numeric_limits<double>::denorm_min();
  std::vector<opt::Isa> paths;
  for (opt::Isa isa : {opt::Isa::baseline, opt::Isa::avx2, opt::Isa::avx512}) {
    if (opt::isa_supported(isa))
      paths.push_back(isa);
    else
      WARN("this CPU has no " << opt::isa_name(isa) << " path: not compared");
  }
  for (size_t n : {1, 3, 7, 8, 9, 17, 100, 1001, 4099}) {
    std::vector<double> g = spread_values(n, 7 * n), m = spread_values(n, 7 * n + 1), v = spread_values(n, 7 * n + 2),
                        theta = spread_values(n, 7 * n + 3);
    for (double& x : v) x = std::fabs(x);
    // Special values in the lanes of every path.
    const double specials[] = {0.0, -0.0, tiny, -tiny, inf, -inf, nan, 1e300, -1e-300};
    for (size_t k = 0; k < n; k += 5) g[k] = specials[(k / 5) % 9];
    // The formula, one element at a time.
    std::vector<double> rm = m, rv = v, rt = theta;
    for (size_t k = 0; k < n; ++k) {
      rm[k] = a.b1 * rm[k] + (1.0 - a.b1) * g[k];
      rv[k] = a.b2 * rv[k] + (1.0 - a.b2) * (g[k] * g[k]);
      const double mhat = rm[k] / (1.0 - a.b1_pow), vhat = rv[k] / (1.0 - a.b2_pow);
      rt[k] -= a.lr * (mhat / (std::sqrt(vhat) + a.eps) + a.wd * rt[k]);
    }
    for (opt::Isa isa : paths) {
      std::vector<double> pm = m, pv = v, pt = theta;
      opt::adam_step(isa, n, g.data(), pm.data(), pv.data(), pt.data(), a);
      INFO(opt::isa_name(isa) << ", n = " << n);
      CHECK(std::memcmp(pm.data(), rm.data(), n * 8) == 0);
      CHECK(std::memcmp(pv.data(), rv.data(), n * 8) == 0);
      CHECK(std::memcmp(pt.data(), rt.data(), n * 8) == 0);
      // Read from one place and written to another: the same bits.
      std::vector<double> qm(n, -7.0), qv(n, -7.0), qt = theta;
      opt::adam_step_to(isa, n, g.data(), m.data(), v.data(), qm.data(), qv.data(), qt.data(), a);
      CHECK(std::memcmp(qm.data(), rm.data(), n * 8) == 0);
      CHECK(std::memcmp(qv.data(), rv.data(), n * 8) == 0);
      CHECK(std::memcmp(qt.data(), rt.data(), n * 8) == 0);
    }
  }
}

TEST_CASE("The Box-Muller draws give the scalar formula's bits on every instruction-set path the CPU has",
          "[numerics]") {
  // Uniforms across (0, 1) and at its edges, every quadrant of the angle
  // and both sides of each select in the deterministic log and cosine.
  std::vector<double> u1, u2;
  for (double u : {1e-300, 2.2250738585072014e-308, 0.25, 0.5, 0.70710678118654746, 0.70710678118654757, 0.75,
                   0.9999999999999999, 1.0}) {
    u1.push_back(u);
    u2.push_back(u < 1.0 ? u : 0.0);
  }
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int k = 0; k < 1013; ++k) {
    u1.push_back(1.0 - unit(rng));  // (0, 1]
    u2.push_back(unit(rng));        // [0, 1)
  }
  const size_t n = u1.size();
  std::vector<double> want(n);
  for (size_t k = 0; k < n; ++k) {
    double s = 0, c = 0;
    umlos_det_sincos_2pi(u2[k], &s, &c);
    want[k] = std::sqrt(-2.0 * umlos_det_log(u1[k])) * c;
  }
  for (opt::Isa isa : {opt::Isa::baseline, opt::Isa::avx2, opt::Isa::avx512}) {
    if (!opt::isa_supported(isa)) {
      WARN("this CPU has no " << opt::isa_name(isa) << " path: not compared");
      continue;
    }
    for (size_t len : {n, size_t(1), size_t(7), size_t(17)}) {
      std::vector<double> got(len);
      opt::box_muller(isa, len, u1.data(), u2.data(), got.data());
      INFO(opt::isa_name(isa) << ", n = " << len);
      CHECK(std::memcmp(got.data(), want.data(), len * 8) == 0);
    }
  }
}
