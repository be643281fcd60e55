// edge_cases.tests.cpp — exact arithmetic of matmul and layer_norm,
// reshape's bytes, zero-size operands, NaN ordering in sort, and gradients
// of broadcast operands summed in canonical order.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "cpu_driver_support.hpp"
#include "error.hpp"

using namespace cpu_driver_test;

namespace {

// The canonical sum of docs/primitives.md, written out independently.
double canonical(const std::vector<double>& terms) {
  double total = 0.0;
  for (size_t c0 = 0; c0 < terms.size(); c0 += 256) {
    double chunk = 0.0;
    for (size_t i = c0; i < std::min(terms.size(), c0 + 256); ++i) chunk += terms[i];
    total += chunk;
  }
  return total;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<double> spread_values(Rand& rng, size_t n) {
  std::vector<double> v(n);
  for (double& x : v) x = rng.uniform(-1, 1) * std::ldexp(1.0, static_cast<int>(rng.next() % 30) - 15);
  return v;
}

// matmul's element (docs/primitives.md, "Matmul"), written out
// independently: 256-long chunks of fused multiply-adds in T, folded in
// order. With fused = false, a separate multiply and add: the sum the check
// must tell apart.
template <class T>
T chunked_dot(const std::vector<T>& a, const std::vector<T>& b, bool fused) {
  T total = 0;
  for (size_t c0 = 0; c0 < a.size(); c0 += 256) {
    T chunk = 0;
    for (size_t k = c0; k < std::min(a.size(), c0 + 256); ++k) {
      if (fused) {
        chunk = std::fma(a[k], b[k], chunk);
      } else {
        const T p = a[k] * b[k];
        chunk = chunk + p;
      }
    }
    total = total + chunk;
  }
  return total;
}

template <class T>
void check_matmul_elements(int32_t dtype, int64_t M, int64_t K, int64_t N) {
  auto host = make_host(4);
  Rand rng(77);
  std::vector<double> a = spread_values(rng, M * K), b = spread_values(rng, K * N);
  auto ta = upload(*host, dtype, {M, K}, a);
  auto tb = upload(*host, dtype, {K, N}, b);
  auto tc = empty(*host, dtype, {M, N});
  host->dispatch("matmul", {ta.get(), tb.get()}, {tc.get()});
  std::vector<double> c = download(*host, *tc);
  int mul_add_differs = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      std::vector<T> row, col;
      for (int64_t k = 0; k < K; ++k) {
        row.push_back(static_cast<T>(a[i * K + k]));
        col.push_back(static_cast<T>(b[k * N + j]));
      }
      INFO("c[" << i << "][" << j << "]");
      const T want = chunked_dot(row, col, true);
      CHECK(same_bits(c[i * N + j], static_cast<double>(want)));
      mul_add_differs += !same_bits(static_cast<double>(chunked_dot(row, col, false)), static_cast<double>(want));
    }
  CHECK(mul_add_differs > 0);  // FMA matters for these values: the check has teeth
}

// matmul_grad's two products against the same definition: dA = dC * B^T
// (B read transposed) and dB = A^T * dC (A read transposed).
template <class T>
void check_matmul_grad_elements(int32_t dtype, int64_t M, int64_t K, int64_t N) {
  auto host = make_host(2);
  Rand rng(91);
  std::vector<double> a = spread_values(rng, M * K), b = spread_values(rng, K * N), dc = spread_values(rng, M * N);
  auto ta = upload(*host, dtype, {M, K}, a);
  auto tb = upload(*host, dtype, {K, N}, b);
  auto tdc = upload(*host, dtype, {M, N}, dc);
  auto tda = empty(*host, dtype, {M, K});
  auto tdb = empty(*host, dtype, {K, N});
  host->dispatch("matmul_grad", {ta.get(), tb.get(), tdc.get()}, {tda.get(), tdb.get()});
  const std::vector<double> da = download(*host, *tda), db = download(*host, *tdb);
  // got[r * cols + c] against the chunked dot over i < inner of x(r, i) y(i, c).
  auto check = [](const char* what, int64_t rows, int64_t cols, int64_t inner, auto x, auto y,
                  const std::vector<double>& got) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        std::vector<T> row, col;
        for (int64_t i = 0; i < inner; ++i) {
          row.push_back(static_cast<T>(x(r, i)));
          col.push_back(static_cast<T>(y(i, c)));
        }
        INFO(what << "[" << r << "][" << c << "]");
        CHECK(same_bits(got[r * cols + c], static_cast<double>(chunked_dot(row, col, true))));
      }
  };
  check(
      "dA", M, K, N, [&](int64_t i, int64_t j) { return dc[i * N + j]; },
      [&](int64_t j, int64_t k) { return b[k * N + j]; }, da);
  check(
      "dB", K, N, M, [&](int64_t k, int64_t i) { return a[i * K + k]; },
      [&](int64_t i, int64_t j) { return dc[i * N + j]; }, db);
}

}  // namespace

TEST_CASE(
    "matmul_grad's products, through a transposed B and a transposed A, are 256-chunk sums of fused "
    "multiply-adds, bit for bit",
    "[cpu_driver][determinism]") {
  // dA = dC[30,700] * B^T: 200 columns in a dozen panels, each packed from
  // the transposed B by the tiles of the one before, over k chunks of 256,
  // 256 and 188; dB = A^T * dC: 200 rows, 700 columns, k = 30.
  check_matmul_grad_elements<double>(UMLOS_DTYPE_F64, 30, 200, 700);
  check_matmul_grad_elements<float>(UMLOS_DTYPE_F32, 30, 200, 700);
}

TEST_CASE("matmul elements are 256-chunk sums of fused multiply-adds in the tensor dtype, bit for bit",
          "[cpu_driver][determinism]") {
  // 5 x 7: edge tiles only. The rest: whole column panels over 1 to 11
  // leftover rows of the last row panel (12-row AVX-512 and 6-row AVX2
  // kernels), which have kernels of their own. 30 x 700 x 200: a dozen
  // column panels, each packed by the tiles of the one before (a k chunk of
  // 188 shared unevenly over 3 tiles), then a partial one.
  for (const auto& [M, K, N] : {std::array<int64_t, 3>{5, 1000, 7}, std::array<int64_t, 3>{13, 600, 64},
                                std::array<int64_t, 3>{20, 600, 64}, std::array<int64_t, 3>{23, 300, 64},
                                std::array<int64_t, 3>{64, 300, 64}, std::array<int64_t, 3>{30, 700, 200}}) {
    INFO("[" << M << "," << K << "] x [" << K << "," << N << "]");
    check_matmul_elements<double>(UMLOS_DTYPE_F64, M, K, N);
    check_matmul_elements<float>(UMLOS_DTYPE_F32, M, K, N);
  }
}

TEST_CASE(
    "layer_norm and layer_norm_grad follow the documented binary64 row arithmetic bit for bit, at 1, 2 and 3 threads",
    "[cpu_driver][determinism]") {
  // 70 rows of 300: more rows than one thread's share, so two and three
  // threads each take whole rows; the reference is docs/primitives.md's
  // definition written out: mean and variance as canonical sums, xhat, then
  // y = xhat gamma + beta; g = dy gamma, dx = rstd ((g - mean g) - xhat
  // mean(g xhat)), dgamma and dbeta canonical over the rows.
  const int64_t rows = 70, d = 300;
  const double eps = 1e-5;
  Rand rng(515);
  const std::vector<double> x = spread_values(rng, rows * d), gamma = spread_values(rng, d),
                            beta = spread_values(rng, d), dy = spread_values(rng, rows * d);
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    auto in_dtype = [&](double v) { return dtype == UMLOS_DTYPE_F32 ? static_cast<double>(static_cast<float>(v)) : v; };
    std::vector<double> want_y(rows * d), want_dx(rows * d), want_dgamma(d), want_dbeta(d);
    std::vector<std::vector<double>> g_xhat(d), dys(d);
    for (int64_t i = 0; i < rows; ++i) {
      std::vector<double> xr(d), dev(d);
      for (int64_t k = 0; k < d; ++k) xr[k] = in_dtype(x[i * d + k]);
      const double m = canonical(xr) / static_cast<double>(d);
      for (int64_t k = 0; k < d; ++k) dev[k] = (xr[k] - m) * (xr[k] - m);
      const double rstd = 1.0 / std::sqrt(canonical(dev) / static_cast<double>(d) + eps);
      std::vector<double> xhat(d), g(d), gx(d);
      for (int64_t k = 0; k < d; ++k) {
        xhat[k] = (xr[k] - m) * rstd;
        want_y[i * d + k] = in_dtype(xhat[k] * in_dtype(gamma[k]) + in_dtype(beta[k]));
        const double dyk = in_dtype(dy[i * d + k]);
        g[k] = dyk * in_dtype(gamma[k]);
        gx[k] = g[k] * xhat[k];
        g_xhat[k].push_back(dyk * xhat[k]);
        dys[k].push_back(dyk);
      }
      const double mg = canonical(g) / static_cast<double>(d), mgx = canonical(gx) / static_cast<double>(d);
      for (int64_t k = 0; k < d; ++k) want_dx[i * d + k] = in_dtype(rstd * ((g[k] - mg) - xhat[k] * mgx));
    }
    for (int64_t k = 0; k < d; ++k) {
      want_dgamma[k] = in_dtype(canonical(g_xhat[k]));
      want_dbeta[k] = in_dtype(canonical(dys[k]));
    }
    for (int threads : {1, 2, 3}) {
      auto host = make_host(threads);
      auto tx = upload(*host, dtype, {rows, d}, x);
      auto tg = upload(*host, dtype, {d}, gamma);
      auto tb = upload(*host, dtype, {d}, beta);
      auto tdy = upload(*host, dtype, {rows, d}, dy);
      auto ty = empty(*host, dtype, {rows, d});
      auto tdx = empty(*host, dtype, {rows, d});
      auto tdgamma = empty(*host, dtype, {d});
      auto tdbeta = empty(*host, dtype, {d});
      host->dispatch("layer_norm", {tx.get(), tg.get(), tb.get()}, {ty.get()}, {float_attr("eps", eps)});
      host->dispatch("layer_norm_grad", {tx.get(), tg.get(), tb.get(), tdy.get()},
                     {tdx.get(), tdgamma.get(), tdbeta.get()}, {float_attr("eps", eps)});
      const std::vector<double> y = download(*host, *ty), dx = download(*host, *tdx),
                                dgamma = download(*host, *tdgamma), dbeta = download(*host, *tdbeta);
      int wrong = 0;
      for (int64_t i = 0; i < rows * d; ++i) wrong += !same_bits(y[i], want_y[i]) + !same_bits(dx[i], want_dx[i]);
      for (int64_t k = 0; k < d; ++k)
        wrong += !same_bits(dgamma[k], want_dgamma[k]) + !same_bits(dbeta[k], want_dbeta[k]);
      INFO((dtype == UMLOS_DTYPE_F32 ? "f32, " : "f64, ") << threads << " threads");
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("reshape and reshape_grad move every byte, whatever the thread count", "[cpu_driver]") {
  // 1.2 MB: several of the pieces the threads copy, and a last short one.
  const int64_t n = 300007;
  Rand rng(616);
  const std::vector<double> x = spread_values(rng, n);
  auto reference = make_host(1);
  const std::vector<uint8_t> want = raw_bytes(*reference, *upload(*reference, UMLOS_DTYPE_F32, {n}, x));
  for (int threads : {1, 2, 3}) {
    INFO(threads << " threads");
    auto host = make_host(threads);
    auto t = upload(*host, UMLOS_DTYPE_F32, {n}, x);
    auto y = empty(*host, UMLOS_DTYPE_F32, {n, 1});
    host->dispatch("reshape", {t.get()}, {y.get()});
    CHECK(raw_bytes(*host, *y) == want);
    auto dx = empty(*host, UMLOS_DTYPE_F32, {n});
    host->dispatch("reshape_grad", {t.get(), y.get()}, {dx.get()});
    CHECK(raw_bytes(*host, *dx) == want);
  }
}

TEST_CASE("a broadcast operand's gradient is the canonical sum over the broadcast axis", "[cpu_driver][determinism]") {
  auto host = make_host(2);
  Rand rng(5);
  const int64_t R = 700, D = 3;
  std::vector<double> x = spread_values(rng, R * D), bias = spread_values(rng, D), dy = spread_values(rng, R * D);
  auto tx = upload(*host, UMLOS_DTYPE_F64, {R, D}, x);
  auto tbias = upload(*host, UMLOS_DTYPE_F64, {D}, bias);
  auto tdy = upload(*host, UMLOS_DTYPE_F64, {R, D}, dy);
  auto dx = empty(*host, UMLOS_DTYPE_F64, {R, D});
  auto dbias = empty(*host, UMLOS_DTYPE_F64, {D});
  host->dispatch("bias_add_grad", {tx.get(), tbias.get(), tdy.get()}, {dx.get(), dbias.get()});
  std::vector<double> got = download(*host, *dbias);
  for (int64_t j = 0; j < D; ++j) {
    std::vector<double> column;
    for (int64_t r = 0; r < R; ++r) column.push_back(dy[r * D + j]);
    CHECK(same_bits(got[j], canonical(column)));
  }
  CHECK(download(*host, *dx) == dy);
}

TEST_CASE("zero-size operands give empty or zero results, never garbage", "[cpu_driver]") {
  auto host = make_host(2);
  // [2,0] x [0,3]: an empty inner dimension makes every element an empty sum, +0.0.
  auto a = empty(*host, UMLOS_DTYPE_F64, {2, 0});
  auto b = empty(*host, UMLOS_DTYPE_F64, {0, 3});
  auto c = empty(*host, UMLOS_DTYPE_F64, {2, 3});
  host->dispatch("fill", {}, {c.get()}, {float_attr("value", 7.0)});
  host->dispatch("matmul", {a.get(), b.get()}, {c.get()});
  CHECK(download(*host, *c) == std::vector<double>(6, 0.0));
  // [0,3] x [3,2] -> [0,2]
  auto a0 = empty(*host, UMLOS_DTYPE_F32, {0, 3});
  auto b0 = empty(*host, UMLOS_DTYPE_F32, {3, 2});
  auto c0 = empty(*host, UMLOS_DTYPE_F32, {0, 2});
  host->dispatch("matmul", {a0.get(), b0.get()}, {c0.get()});
  // Sum of nothing is +0.0; the mean of nothing is refused.
  auto none = empty(*host, UMLOS_DTYPE_F64, {0});
  auto s = empty(*host, UMLOS_DTYPE_F64, {});
  host->dispatch("fill", {}, {s.get()}, {float_attr("value", 7.0)});
  host->dispatch("sum", {none.get()}, {s.get()});
  CHECK(download(*host, *s)[0] == 0.0);
  try {
    host->dispatch("mean", {none.get()}, {s.get()});
    FAIL("mean of an empty tensor was accepted");
  } catch (const umlos::Failure& f) {
    CHECK(f.code() == UMLOS_SHAPE_MISMATCH);
  }
}

TEST_CASE("sort puts NaNs last in both directions and keeps ties in their original order", "[cpu_driver]") {
  auto host = make_host(1);
  const double nan = std::nan("");
  auto x = upload(*host, UMLOS_DTYPE_F64, {6}, {3, nan, 1, 2, 1, -4});
  auto y = empty(*host, UMLOS_DTYPE_F64, {6});
  auto idx = empty(*host, UMLOS_DTYPE_I64, {6});
  host->dispatch("sort", {x.get()}, {y.get(), idx.get()});
  std::vector<double> ys = download(*host, *y);
  CHECK(std::vector<double>(ys.begin(), ys.end() - 1) == std::vector<double>{-4, 1, 1, 2, 3});
  CHECK(std::isnan(ys.back()));
  CHECK(download(*host, *idx) == std::vector<double>{5, 2, 4, 3, 0, 1});
  host->dispatch("sort", {x.get()}, {y.get(), idx.get()}, {int_attr("descending", 1)});
  ys = download(*host, *y);
  CHECK(std::vector<double>(ys.begin(), ys.end() - 1) == std::vector<double>{3, 2, 1, 1, -4});
  CHECK(std::isnan(ys.back()));
  CHECK(download(*host, *idx) == std::vector<double>{0, 3, 2, 4, 5, 1});
}

TEST_CASE("softmax and cross_entropy stay finite for logits of magnitude 1e4", "[cpu_driver]") {
  auto host = make_host(1);
  auto logits = upload(*host, UMLOS_DTYPE_F32, {2, 3}, {1e4, -1e4, 0, 5e3, 5e3, -5e3});
  auto labels = upload(*host, UMLOS_DTYPE_I32, {2}, {1, 0});
  auto loss = empty(*host, UMLOS_DTYPE_F32, {});
  host->dispatch("cross_entropy", {logits.get(), labels.get()}, {loss.get()});
  // row 0: lse = 1e4, loss = 2e4; row 1: lse = 5e3 + log 2, loss = log 2
  CHECK(download(*host, *loss)[0] == Approx((2e4 + std::log(2.0)) / 2).epsilon(1e-7));
  auto p = empty(*host, UMLOS_DTYPE_F32, {2, 3});
  host->dispatch("softmax", {logits.get()}, {p.get()});
  std::vector<double> pv = download(*host, *p);
  for (double v : pv) CHECK(std::isfinite(v));
  CHECK(pv[3] == Approx(0.5));
}

TEST_CASE(
    "sort gives the stable comparison order on lines full of ties, signed zeros, NaNs of both signs, infinities and "
    "subnormals, along every axis, in both directions",
    "[cpu_driver]") {
  // The definition (docs/primitives.md): NaNs last in both directions, ties
  // (-0 == +0) in their original order, as a stable sort by comparison.
  auto reference = [](const std::vector<double>& line, bool descending) {
    std::vector<int64_t> perm(line.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) {
      const double a = line[i], b = line[j];
      const bool na = std::isnan(a), nb = std::isnan(b);
      if (na || nb) return !na && nb;
      return descending ? a > b : a < b;
    });
    return perm;
  };
  const double pool_of_values[] = {0.0,          -0.0,          1.0,    -1.0,    1.5,  -1.5,  INFINITY, -INFINITY,
                                   std::nan(""), -std::nan(""), 1e-310, -1e-310, 3e38, -3e38, 2.0,      0.25};
  Rand rng(77);
  for (int32_t dtype : {UMLOS_DTYPE_F32, UMLOS_DTYPE_F64}) {
    const int64_t rows = 5, len = 300;
    std::vector<double> x(static_cast<size_t>(rows * len));
    for (double& v : x) {
      v = pool_of_values[rng.next() % 16];
      if (dtype == UMLOS_DTYPE_F32 && std::isfinite(v) && std::fabs(v) < 1e-300) v = v > 0 ? 1e-40 : -1e-40;
      if (dtype == UMLOS_DTYPE_F32 && std::isfinite(v)) v = static_cast<float>(v);
    }
    for (int threads : {1, 3}) {
      auto host = make_host(threads);
      auto t = upload(*host, dtype, {rows, len}, x);
      for (int axis : {1, 0}) {
        for (int descending : {0, 1}) {
          INFO((dtype == UMLOS_DTYPE_F32 ? "f32" : "f64")
               << ", axis " << axis << ", descending " << descending << ", " << threads << " threads");
          auto y = empty(*host, dtype, {rows, len});
          auto idx = empty(*host, UMLOS_DTYPE_I64, {rows, len});
          host->dispatch("sort", {t.get()}, {y.get(), idx.get()},
                         {int_attr("axis", axis), int_attr("descending", descending)});
          const std::vector<double> got = download(*host, *idx);
          const int64_t lines = axis == 1 ? rows : len, n = axis == 1 ? len : rows;
          bool same = true;
          for (int64_t l = 0; l < lines && same; ++l) {
            std::vector<double> line;
            for (int64_t k = 0; k < n; ++k) line.push_back(axis == 1 ? x[l * len + k] : x[k * len + l]);
            const std::vector<int64_t> want = reference(line, descending != 0);
            for (int64_t k = 0; k < n; ++k) {
              const double g = axis == 1 ? got[l * len + k] : got[k * len + l];
              if (g != static_cast<double>(want[k])) {
                same = false;
                INFO("line " << l << ", position " << k << ": index " << g << ", expected " << want[k]);
                CHECK(g == static_cast<double>(want[k]));
                break;
              }
            }
          }
          CHECK(same);
        }
      }
    }
  }
}
